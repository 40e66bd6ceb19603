/* SPDX-License-Identifier: MIT */
/* What several white-box test files share: a scheduler without pinning,
 * waiting (20 s bound, never a sleep) until a job is suspended in an
 * await, and a plain thread that joins a job.  Include after rt/rt.h. */
#ifndef COROKIT_TESTS_UTIL_H
#define COROKIT_TESTS_UTIL_H

#include <criterion/criterion.h>
#include <corokit.h>
#include "join_r.h"
#include <pthread.h>
#include <sched.h>

static inline coro_sched_t *mk(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = workers;
    c.pin = false;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

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

struct joiner { pthread_t t; coro_t *co; intptr_t res; };

static inline void *join_main(void *arg)
{
    struct joiner *j = arg;
    j->res = join_r(j->co);
    return NULL;
}

static inline void join_start(struct joiner *j, coro_t *co)
{
    j->co = co;
    cr_assert_eq(pthread_create(&j->t, NULL, join_main, j), 0);
}

static inline intptr_t join_end(struct joiner *j)
{
    pthread_join(j->t, NULL);
    return j->res;
}

#endif
