/* SPDX-License-Identifier: MIT */
/* Ending a virtual scheduler whose jobs can never run again: a CORO_DRAIN
 * shutdown cancels them and says so (-ETIMEDOUT, coro_sched_shutdown(3)),
 * and coro_sched_destroy frees the scheduler and returns 0, so that no
 * caller takes its answer for "not destroyed" (coro_sched_destroy(3)).
 * The leak check of the sanitizer builds sees a scheduler left behind. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>

struct stuck {
    coro_t co;
    coro_event_t *ev;
    intptr_t rc;
};

/* waits on an event that only a job could set, and no job will */
static int stuck_body(coro_t *co)
{
    struct stuck *j = CORO_SELF(co, struct stuck);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
    j->rc = CORO_RESULT(co);
    CORO_END(co);
}

static coro_sched_t *deadlocked(coro_event_t *ev, struct stuck *j)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = 0;
    c.virtual_time = true;
    coro_sched_t *s = mk_config(&c);
    cr_assert_eq(coro_event_init(ev), 0);
    j->ev = ev;
    j->rc = 1;
    cr_assert_eq(coro_spawn(s, &j->co, stuck_body, NULL), 0);
    cr_assert_geq(coro_sched_run(s), 1);
    cr_assert_eq(j->rc, 1, "the job should still wait");
    return s;
}

Test(sched_vtime_deadlock_end, destroy_frees_a_deadlocked_virtual_scheduler_and_returns_0, .timeout = 20)
{
    coro_event_t ev;
    struct stuck j = { 0 };
    coro_sched_t *s = deadlocked(&ev, &j);

    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(j.rc, -ECANCELED, "the stuck job was not cancelled");
    coro_event_destroy(&ev);
}

Test(sched_vtime_deadlock_end, a_drain_of_a_deadlocked_virtual_scheduler_cancels_and_says_etimedout,
     .timeout = 20)
{
    coro_event_t ev;
    struct stuck j = { 0 };
    coro_sched_t *s = deadlocked(&ev, &j);

    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), -ETIMEDOUT);
    cr_assert_eq(j.rc, -ECANCELED);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0, "a later call: shut down already");
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
}

Test(sched_vtime_deadlock_end, a_cancel_shutdown_of_a_deadlocked_virtual_scheduler_returns_0,
     .timeout = 20)
{
    coro_event_t ev;
    struct stuck j = { 0 };
    coro_sched_t *s = deadlocked(&ev, &j);

    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(j.rc, -ECANCELED);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
}
