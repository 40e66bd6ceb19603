/* SPDX-License-Identifier: MIT */
/* The ends of time: a sleep without end (coro_sleep(CORO_FOREVER),
 * coro_sleep_until(CORO_NO_DEADLINE)) is no timer that can make a job
 * ready - coro_sched_run returns while it sleeps, and a cancel or the
 * job's .deadline still ends it - and a virtual clock advanced to
 * INT64_MAX ends exactly there (coro_sched_run(3), coro_sched_advance(3)). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <stdint.h>

struct nap {
    coro_t co;
    int64_t until;      /* coro_sleep_until's deadline; 0 = coro_sleep(CORO_FOREVER) */
    bool by_until;
    intptr_t rc;
    bool done;
};

static int nap_body(coro_t *co)
{
    struct nap *n = CORO_SELF(co, struct nap);
    CORO_BEGIN(co);
    if (n->by_until)
        CORO_AWAIT(co, coro_sleep_until(n->until));
    else
        CORO_AWAIT(co, coro_sleep(CORO_FOREVER));
    n->rc = CORO_RESULT(co);
    n->done = true;
    CORO_END(co);
}

static coro_sched_t *mk0(bool vtime)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = 0;
    c.virtual_time = vtime;
    return mk_config(&c);
}

/* a hang here is the bug: the test's timeout fails it */
static void run_returns_while_a_job_sleeps_forever(bool by_until)
{
    coro_sched_t *s = mk0(false);
    struct nap n = { .by_until = by_until, .until = CORO_NO_DEADLINE };

    cr_assert_eq(coro_spawn(s, &n.co, nap_body, NULL), 0);
    cr_assert_geq(coro_sched_run(s), 1);
    cr_assert_not(n.done, "a sleep without end ended by itself");
    /* still cancellable: the cancel makes it ready, the next run ends it */
    cr_assert_eq(coro_cancel(&n.co), 0);
    cr_assert_geq(coro_sched_run(s), 1);
    cr_assert(n.done);
    cr_assert_eq(n.rc, -ECANCELED);
    cr_assert_eq(join_r(&n.co), 0);
    fin(s);
}

Test(io_time_ends, run_returns_while_a_job_sleeps_with_coro_forever, .timeout = 20)
{
    run_returns_while_a_job_sleeps_forever(false);
}

Test(io_time_ends, run_returns_while_a_job_sleeps_until_no_deadline, .timeout = 20)
{
    run_returns_while_a_job_sleeps_forever(true);
}

Test(io_time_ends, a_sleep_without_end_still_ends_at_the_jobs_deadline, .timeout = 20)
{
    coro_sched_t *s = mk0(false);
    struct nap n = { 0 };
    coro_spawn_opts_t o = { .deadline = coro_now() + 20 * 1000000LL };

    cr_assert_eq(coro_spawn(s, &n.co, nap_body, &o), 0);
    /* the deadline's timer is one that fires: run waits for it */
    cr_assert_geq(coro_sched_run(s), 2);
    cr_assert(n.done);
    cr_assert_eq(n.rc, -ETIMEDOUT);
    fin(s);
}

Test(io_time_ends, an_advance_to_exactly_int64_max_ends_there, .timeout = 20)
{
    coro_sched_t *s = mk0(true);
    struct nap forever = { 0 };
    struct nap last = { .by_until = true, .until = INT64_MAX - 1 };

    cr_assert_eq(coro_spawn(s, &forever.co, nap_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &last.co, nap_body, NULL), 0);
    int64_t t0 = coro_sched_now(s);
    cr_assert_eq(coro_sched_advance(s, INT64_MAX - t0), 0);
    cr_assert_eq(coro_sched_now(s), INT64_MAX, "the clock stayed at %lld", (long long)coro_sched_now(s));
    cr_assert(last.done, "the timer at INT64_MAX - 1 did not fire");
    cr_assert_eq(last.rc, 0);
    cr_assert_not(forever.done, "a sleep without end fired at the end of time");
    /* nothing can run again: the forever sleeper is found by a cancel */
    cr_assert_eq(coro_cancel(&forever.co), 0);
    cr_assert_geq(coro_sched_run(s), 1);
    cr_assert_eq(forever.rc, -ECANCELED);
    fin(s);
}

Test(io_time_ends, an_advance_past_int64_max_stops_the_clock_at_int64_max, .timeout = 20)
{
    coro_sched_t *s = mk0(true);

    cr_assert_eq(coro_sched_advance(s, 1000), 0);
    cr_assert_eq(coro_sched_advance(s, INT64_MAX), 0);
    cr_assert_eq(coro_sched_now(s), INT64_MAX);
    cr_assert_eq(coro_sched_advance(s, INT64_MAX), 0, "a clock at its end moves no further");
    cr_assert_eq(coro_sched_now(s), INT64_MAX);
    fin(s);
}

Test(io_time_ends, a_virtual_run_returns_while_a_job_sleeps_forever, .timeout = 20)
{
    coro_sched_t *s = mk0(true);
    struct nap n = { 0 };
    int64_t t0 = coro_sched_now(s);

    cr_assert_eq(coro_spawn(s, &n.co, nap_body, NULL), 0);
    cr_assert_geq(coro_sched_run(s), 1);
    cr_assert_not(n.done);
    cr_assert_eq(coro_sched_now(s), t0, "the clock jumped for a sleep without end");
    cr_assert_eq(coro_cancel(&n.co), 0);
    fin(s);
}
