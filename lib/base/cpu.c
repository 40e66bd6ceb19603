/* SPDX-License-Identifier: MIT */
/* what the CPU offers, read once with CPUID: prefetchw. */
#if defined(__x86_64__) && defined(__GNUC__)
# include <cpuid.h>
#endif

#include "base/base.h"

bool coro__has_prefetchw;

void coro__cpu_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    /* CPUID 0x80000001: ECX bit 8 = PRFCHW (3DNowPrefetch) */
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
        /* relaxed: every create stores the same bit (coro__prefetch_w) */
        __atomic_store_n(&coro__has_prefetchw, (c >> 8) & 1, __ATOMIC_RELAXED);
#endif
}
