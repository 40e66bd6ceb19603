/* SPDX-License-Identifier: MIT */
/* What the rwlock tests share: a job that takes a read hold or the write
 * lock, says when it got it, holds it until an event is set, and lets go;
 * and the steps that wait (bounded, never a sleep) until such a job has
 * parked or got its lock, on 0 workers (the test thread runs the
 * scheduler: coro_sched_run) as on several. */
#ifndef COROKIT_TESTS_LOCKJOB_H
#define COROKIT_TESTS_LOCKJOB_H

#include "white_box.h"

#define MS (1000000ll)
#define PENDING 1       /* lk.got before the lock await completed */

enum { RD, WR };

struct lk {
    coro_t co;
    coro_rwlock_t *rw;
    int kind;               /* RD, WR */
    int64_t timeout;        /* 0 here: CORO_FOREVER */
    coro_event_t *hold;     /* NULL: let go at once */
    intptr_t got;           /* PENDING, then the lock await's result */
    int *order, *no, id;    /* optional: the order the lock was got in */
};

static int lk_body(coro_t *co)
{
    struct lk *f = CORO_SELF(co, struct lk);
    CORO_BEGIN(co);
    if (f->kind == WR)
        CORO_AWAIT(co, coro_rwlock_write_lock(f->rw, f->timeout));
    else
        CORO_AWAIT(co, coro_rwlock_read_lock(f->rw, f->timeout));
    if (CORO_RESULT(co) == 0 && f->order)
        f->order[__atomic_fetch_add(f->no, 1, __ATOMIC_RELAXED)] = f->id;
    __atomic_store_n(&f->got, CORO_RESULT(co), __ATOMIC_RELEASE);
    if (CORO_RESULT(co) != 0)
        CORO_RETURN(co, CORO_RESULT(co));
    if (f->hold)
        CORO_AWAIT(co, coro_event_wait(f->hold, CORO_FOREVER));
    else
        CORO_RESULT(co) = 0;
    {
        /* a cancelled holder lets go too, then says why it stopped */
        int rc = f->kind == WR ? coro_rwlock_write_unlock(f->rw) : coro_rwlock_read_unlock(f->rw);
        CORO_RETURN(co, CORO_RESULT(co) ? CORO_RESULT(co) : rc);
    }
    CORO_END(co);
}

static inline void lk_spawn(coro_sched_t *s, struct lk *j, coro_rwlock_t *rw, int kind,
                            coro_event_t *hold)
{
    j->rw = rw;
    j->kind = kind;
    j->hold = hold;
    if (!j->timeout)
        j->timeout = CORO_FOREVER;
    j->got = PENDING;
    cr_assert_eq(coro_spawn(s, &j->co, lk_body, NULL), 0);
}

/* on 0 workers nothing runs unless the test thread runs it */
static inline void settle(coro_sched_t *s)
{
    if (coro_sched_workers(s) == 0)
        coro_sched_run(s);
}

/* j waits for rw: readers on rw, writers on rw + 2 */
static inline void lk_parked(coro_sched_t *s, struct lk *j)
{
    settle(s);
    const void *key = j->kind == WR ? (const char *)j->rw + 2 : (const void *)j->rw;
    cr_assert(parked_on(&j->co, key), "job %d never queued", j->id);
}

/* bounded: until j's lock await completed; its result */
static inline intptr_t lk_got(coro_sched_t *s, struct lk *j)
{
    int64_t end = coro_now() + 20000000000LL;
    settle(s);
    while (__atomic_load_n(&j->got, __ATOMIC_ACQUIRE) == PENDING) {
        cr_assert_lt(coro_now(), end, "job %d never got its lock", j->id);
        sched_yield();
        settle(s);
    }
    return __atomic_load_n(&j->got, __ATOMIC_ACQUIRE);
}

/* still waiting (a look after the scheduler ran what it could) */
static inline bool lk_pending(coro_sched_t *s, struct lk *j)
{
    settle(s);
    return __atomic_load_n(&j->got, __ATOMIC_ACQUIRE) == PENDING;
}

#endif
