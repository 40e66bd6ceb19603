/* SPDX-License-Identifier: MIT */
/* A wake that races coro_sched_destroy: every call that can end the wait
 * of the last job a destroy drains - from a plain thread, or a worker of
 * another scheduler - is done with the scheduler before destroy frees it
 * (coro_sched_destroy(3)).  Each test repeats the race (tests/destroy_race.h);
 * under ASan (make check-asan) a touch of the freed scheduler fails it.
 * tests/stress/destroy_wake.c runs the same rounds under TSan. */
#define _GNU_SOURCE     /* pipe2 (destroy_race.h) */
#include <criterion/criterion.h>
#include "destroy_race.h"

/* enough rounds that the old window (the waker inside the scheduler after
 * the job ran) was hit in most runs under ASan; each round is a create, a
 * thread and a destroy */
enum { ROUNDS = 1000 };

static void rounds(enum dr_kind kind, int workers, int n)
{
    for (int i = 0; i < n; i++) {
        int rc = dr_round(kind, workers);
        cr_assert_eq(rc, 0, "%s, %d workers, round %d: %s", dr_names[kind], workers, i,
                     coro_strerror(rc));
    }
}

#define RACE_TEST(name, kind)                                                      \
    Test(sched_destroy_race, name, .timeout = 120)                                       \
    {                                                                              \
        rounds(kind, 0, ROUNDS);                                                   \
        rounds(kind, 1, ROUNDS / 4);                                               \
    }

RACE_TEST(an_event_set_from_a_thread_leaves_before_destroy_frees, DR_EVENT)
RACE_TEST(a_sem_release_from_a_thread_leaves_before_destroy_frees, DR_SEM)
RACE_TEST(a_chan_try_send_from_a_thread_leaves_before_destroy_frees, DR_CHAN_TRY)
RACE_TEST(a_chan_send_blocking_leaves_before_destroy_frees, DR_CHAN_BLOCKING)
RACE_TEST(a_chan_close_from_a_thread_leaves_before_destroy_frees, DR_CHAN_CLOSE)
RACE_TEST(a_mutex_unlock_from_a_thread_leaves_before_destroy_frees, DR_MUTEX)
RACE_TEST(a_waitgroup_done_from_a_thread_leaves_before_destroy_frees, DR_WAITGROUP)
RACE_TEST(a_cancel_from_a_thread_leaves_before_destroy_frees, DR_CANCEL)
RACE_TEST(a_group_cancel_from_a_thread_leaves_before_destroy_frees, DR_GROUP_CANCEL)
RACE_TEST(a_close_from_a_thread_leaves_before_destroy_frees, DR_CLOSE)
RACE_TEST(a_thread_in_coro_join_leaves_before_destroy_frees, DR_JOIN)
RACE_TEST(a_thread_in_coro_join_timeout_leaves_before_destroy_frees, DR_JOIN_TIMEOUT)
RACE_TEST(another_schedulers_worker_ending_a_coro_done_leaves_before_destroy_frees, DR_DONE_CROSS)
RACE_TEST(another_schedulers_fork_child_leaves_before_destroy_frees, DR_FORK_CROSS)

Test(sched_destroy_race, every_call_of_a_round_succeeds_without_a_race, .timeout = 30)
{
    /* the error path beside the races: a round with nobody racing reports
     * a spawn that fails (destroyed first) as an error, not a hang */
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(coro_sched_destroy(NULL), -EINVAL);
}
