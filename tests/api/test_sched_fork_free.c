/* SPDX-License-Identifier: MIT */
/* A parent whose children live in its own frame may be freed as soon as a
 * blocked coro_join on it returned (docs/guide.md, "Frame lifetimes"): a
 * child's finisher is done with the child's frame before it wakes the
 * parent, with CORO_FORK_JOIN and with coro_done, on the parent's
 * scheduler and on another one (tests/fork_free.h; under ASan a late
 * touch fails the test, tests/stress/fork_free.c runs it under TSan). */
#include <criterion/criterion.h>
#include "fork_free.h"

enum { ROUNDS = 3000 };

static coro_sched_t *sched(int workers)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

static void rounds(bool use_fork, bool other)
{
    coro_sched_t *s = sched(2), *b = other ? sched(1) : s;
    for (int i = 0; i < ROUNDS; i++) {
        intptr_t r = ff_round(s, b, use_fork);
        cr_assert_eq(r, FF_KIDS, "round %d: %ld", i, (long)r);
    }
    if (other)
        cr_assert_eq(coro_sched_destroy(b), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_fork_free, a_fork_joined_parent_is_freed_right_after_its_join, .timeout = 120)
{
    rounds(true, false);
}

Test(sched_fork_free, a_parent_awaiting_coro_done_is_freed_right_after_its_join, .timeout = 120)
{
    rounds(false, false);
}

Test(sched_fork_free, children_on_another_scheduler_leave_the_freed_parent_alone, .timeout = 120)
{
    rounds(true, true);
    rounds(false, true);
}

Test(sched_fork_free, a_parent_whose_child_cannot_spawn_fails_and_is_freed, .timeout = 30)
{
    /* the error path: the children's scheduler is shut down, the spawn
     * fails, the parent returns -1 and its frame still goes at once */
    coro_sched_t *s = sched(1), *b = sched(1);
    cr_assert_eq(coro_sched_shutdown(b, CORO_DRAIN), 0);
    cr_assert_eq(ff_round(s, b, true), -1);
    cr_assert_eq(ff_round(s, b, false), -1);
    cr_assert_eq(coro_sched_destroy(b), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
