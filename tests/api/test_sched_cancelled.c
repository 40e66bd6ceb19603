/* SPDX-License-Identifier: MIT */
/* coro_cancelled: a loop that only computes and yields (CORO_YIELD is not
 * a cancellation point) stops when its job is cancelled, by asking. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <sched.h>

struct cruncher {
    coro_t co;
    long rounds;
    int started;
};

static int cruncher_body(coro_t *co)
{
    struct cruncher *c = CORO_SELF(co, struct cruncher);
    CORO_BEGIN(co);
    __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
    while (!coro_cancelled()) {
        c->rounds++;
        CORO_YIELD(co);
    }
    CORO_RETURN(co, 42);
    CORO_END(co);
}

Test(sched_cancelled, a_yielding_loop_stops_when_its_job_is_cancelled, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct cruncher cr = { 0 };

    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_not(coro_cancelled(), "a plain thread runs no job");
    cr_assert_eq(coro_spawn(s, &cr.co, cruncher_body, NULL), 0);
    while (!__atomic_load_n(&cr.started, __ATOMIC_ACQUIRE))
        sched_yield();
    cr_assert_eq(coro_cancel(&cr.co), 0);
    cr_assert_eq(join_r(&cr.co), 42);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_cancelled, shutdown_with_cancel_reaches_a_yielding_loop, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct cruncher cr = { 0 };

    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_spawn(s, &cr.co, cruncher_body, NULL), 0);
    while (!__atomic_load_n(&cr.started, __ATOMIC_ACQUIRE))
        sched_yield();
    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(join_r(&cr.co), 42);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
