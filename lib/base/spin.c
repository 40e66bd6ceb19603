/* SPDX-License-Identifier: MIT */
/* the contended side of coro__spin_lock (base/base.h) */
#include "base/base.h"

void coro__spin_lock_slow(uint32_t *l)
{
    /* acquire: pairs with coro__spin_unlock's release */
    for (unsigned i = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); i++) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++i > CORO__SPIN_PAUSES)
                sched_yield();  /* the holder may be pre-empted or in a system call */
            else
                coro__cpu_relax();
        }
    }
}
