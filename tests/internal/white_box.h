/* SPDX-License-Identifier: MIT */
/* The fixture of the white-box tests: tests/fixture.h, and waiting (20 s
 * bound, never a sleep) until a job is suspended in an await, read from
 * the job's private state word (lib/rt/rt.h), or parked in the parking
 * lot under a key: no public call tells either. */
#ifndef COROKIT_TESTS_WHITE_BOX_H
#define COROKIT_TESTS_WHITE_BOX_H

#include "fixture.h"
#include "rt/rt.h"
#include <sched.h>
#include <unistd.h>

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

/* Wait (10 s bound) until job co is linked in the parking lot under key:
 * it then waits, and a set, send or close on key finds it.  White-box (the
 * frame's wait_obj, read under the key's bucket lock, where the lot writes
 * it): no sleep orders a wait before its wake-up. */
static inline bool parked_on(coro_t *co, const void *key)
{
    for (int i = 0; i < 100000; i++) {
        coro__parklot_bucket_t *b = coro__parklot_lock(key);
        bool p = co->wait_obj == key;
        coro__parklot_unlock(b);
        if (p)
            return true;
        usleep(100);
    }
    return false;
}

/* the keys the lot uses (lib/sync/select.c sel_key, lib/sync/chan.c send_key) */
#define SEL_KEY(sel) ((const char *)(sel) + 1)
#define SEND_KEY(ch) ((const char *)(ch) + 2)

#endif
