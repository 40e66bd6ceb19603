/* SPDX-License-Identifier: MIT */
/* the clock: CLOCK_MONOTONIC, or a virtual scheduler's clock on the thread
 * that drives it; coro_now and the deadline of a relative timeout. */
#include <time.h>

#include "base/base.h"

__thread const int64_t *coro__tls_vclock;

int64_t coro__now(void)
{
    /* one thread-local load and a branch laid out as not taken: a
     * virtual clock is for tests */
    const int64_t *v = coro__tls_vclock;
    if (CORO__UNLIKELY(v != NULL))
        return __atomic_load_n(v, __ATOMIC_RELAXED);     /* written by its driver only */
    return coro__mono_now();
}

int64_t coro_now(void)
{
    return coro__now();
}

int64_t coro__deadline(int64_t timeout)
{
    if (timeout < 0)
        return -1;      /* no clock read for CORO_FOREVER */
    return coro__deadline_after(coro__now(), timeout);
}
