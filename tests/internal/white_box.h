/* SPDX-License-Identifier: MIT */
/* The fixture of the white-box tests: tests/fixture.h, and waiting (20 s
 * bound, never a sleep) until a job is suspended in an await, read from
 * the job's private state word (lib/rt/rt.h): no public call tells it. */
#ifndef COROKIT_TESTS_WHITE_BOX_H
#define COROKIT_TESTS_WHITE_BOX_H

#include "fixture.h"
#include "rt/rt.h"
#include <sched.h>

static inline bool suspended(coro_t *co)
{
    /* acquire: the job's state word, as its worker left it */
    return (__atomic_load_n(&co->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_SUSPENDED;
}

/* bounded (20 s): until co is suspended in an await */
static inline void wait_suspended(coro_t *co)
{
    int64_t end = coro_now() + 20000000000LL;
    while (!suspended(co)) {
        cr_assert_lt(coro_now(), end, "the job never suspended");
        sched_yield();
    }
}

#endif
