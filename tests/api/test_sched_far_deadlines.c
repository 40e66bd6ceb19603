/* SPDX-License-Identifier: MIT */
/* Deadlines and timeouts at the far end of the clock (INT64_MAX - 1) in
 * every timed call, beside a job's .deadline as far: each wait still ends
 * the way it would with a near one, and no sum of a deadline and a slack
 * overflows (the UBSan build, make check-asan, aborts on one: the I/O
 * thread's look at the workers' timers, the pool threads' keep-alive, the
 * drive and the sleeps). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#define FAR (INT64_MAX - 1)
#define MS 1000000LL

struct far {
    coro_t co;
    coro_event_t ev, back;
    coro_sem_t sem;
    coro_mutex_t mu;
    coro_chan_t ch;
    void *slot[2];
    int pipe[2];
    int sleeping;           /* the last await is about to start */
    intptr_t rc[10];
};

struct helper {
    coro_t co;
    struct far *f;
};

static intptr_t pool_call(void *arg)
{
    return (intptr_t)arg;
}

/* ends each of far_body's waits, a little later (coverage, not order:
 * a wait that finds its event already there completes at once) */
static int helper_body(coro_t *co)
{
    struct helper *h = CORO_SELF(co, struct helper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(MS));
    coro_event_set(&h->f->ev);
    CORO_AWAIT(co, coro_sleep(MS));
    coro_sem_release(&h->f->sem, 1);
    CORO_AWAIT(co, coro_sleep(MS));
    cr_assert_eq(coro_chan_try_send(&h->f->ch, h), 0);
    CORO_AWAIT(co, coro_sleep(MS));
    cr_assert_eq(write(h->f->pipe[1], "x", 1), 1);
    CORO_END(co);
}

static struct helper helper;

static int far_body(coro_t *co)
{
    struct far *f = CORO_SELF(co, struct far);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(MS));
    f->rc[0] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_event_wait(&f->ev, FAR));
    f->rc[1] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_sem_acquire(&f->sem, FAR));
    f->rc[2] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_mutex_lock(&f->mu, FAR));
    f->rc[3] = CORO_RESULT(co);
    coro_mutex_unlock(&f->mu);
    {
        static void *got;
        CORO_AWAIT(co, coro_chan_recv(&f->ch, &got, FAR));
        f->rc[4] = CORO_RESULT(co);
    }
    CORO_AWAIT(co, coro_readable(f->pipe[0], FAR));
    f->rc[5] = CORO_RESULT(co);
    {
        static intptr_t hr;
        CORO_AWAIT(co, coro_done_timeout(&helper.co, &hr, FAR));
        f->rc[6] = CORO_RESULT(co);
    }
    CORO_AWAIT(co, coro_blocking(pool_call, (void *)7));
    f->rc[7] = CORO_RESULT(co);
    coro_event_set(&f->back);
    __atomic_store_n(&f->sleeping, 1, __ATOMIC_RELEASE);
    /* ended by the test's cancel (a cancel before it starts ends it too) */
    CORO_AWAIT(co, coro_sleep_until(FAR));
    f->rc[8] = CORO_RESULT(co);
    CORO_END(co);
}

static void far_run(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.blocking_keepalive_ns = FAR;      /* the pool threads' keep-alive */
    coro_sched_t *s = mk_config(&c);
    static struct far f;
    coro_spawn_opts_t o = { .deadline = FAR };

    f = (struct far){ .sleeping = 0 };
    cr_assert_eq(coro_event_init(&f.ev), 0);
    cr_assert_eq(coro_event_init(&f.back), 0);
    cr_assert_eq(coro_sem_init(&f.sem, 0), 0);
    cr_assert_eq(coro_mutex_init(&f.mu), 0);
    cr_assert_eq(coro_chan_init(&f.ch, f.slot, 2), 0);
    cr_assert_eq(pipe(f.pipe), 0);
    helper = (struct helper){ .f = &f };
    cr_assert_eq(coro_spawn(s, &helper.co, helper_body, &o), 0);
    cr_assert_eq(coro_spawn(s, &f.co, far_body, &o), 0);
    if (workers > 0) {
        /* a plain thread's timed calls, far too */
        cr_assert_eq(coro_event_wait_blocking(&f.back, FAR), 0);
        while (!__atomic_load_n(&f.sleeping, __ATOMIC_ACQUIRE))
            usleep(100);    /* to let time pass, bounded by the test's timeout */
        cr_assert_eq(coro_cancel(&f.co), 0);
        intptr_t r = -1;
        cr_assert_eq(coro_join_timeout(&f.co, &r, FAR), 0);
    } else {
        /* drive it (a timed join runs the jobs) until it sleeps its last
         * sleep, whose timer at INT64_MAX - 1 is one that fires: run would
         * wait for it */
        int64_t end = coro_now() + 30000000000LL;
        intptr_t r0 = -1;
        while (!__atomic_load_n(&f.sleeping, __ATOMIC_ACQUIRE)) {
            cr_assert_eq(coro_join_timeout(&f.co, &r0, MS), -ETIMEDOUT);
            cr_assert_lt(coro_now(), end, "the job never reached its last sleep");
        }
        cr_assert_eq(coro_cancel(&f.co), 0);
        intptr_t r = -1;
        cr_assert_eq(coro_join_timeout(&f.co, &r, FAR), 0);
    }
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f.rc[i], 0, "workers %d: await %d gave %s", workers, i,
                     coro_strerror((int)f.rc[i]));
    cr_assert_eq(f.rc[6], 0);
    cr_assert_eq(f.rc[7], 7);
    cr_assert_eq(f.rc[8], -ECANCELED);
    cr_assert_eq(coro_sched_shutdown_timeout(s, FAR), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    close(f.pipe[0]);
    close(f.pipe[1]);
    coro_chan_destroy(&f.ch);
    coro_sem_destroy(&f.sem);
    coro_mutex_destroy(&f.mu);
    coro_event_destroy(&f.ev);
    coro_event_destroy(&f.back);
}

Test(sched_far_deadlines, every_timed_wait_at_int64_max_minus_1_ends_as_a_near_one_on_2_workers,
     .timeout = 60)
{
    far_run(2);
}

Test(sched_far_deadlines, every_timed_wait_at_int64_max_minus_1_ends_as_a_near_one_without_workers,
     .timeout = 60)
{
    far_run(0);
}

/* a group's far deadline beside a group wait as far */
struct member {
    coro_t co;
};

static int member_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(2 * MS));
    CORO_END(co);
}

Test(sched_far_deadlines, a_group_wait_at_int64_max_minus_1_ends_when_its_members_do, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    coro_group_t g;
    static struct member m[4];
    cr_assert_eq(coro_group_init(&g), 0);
    coro_spawn_opts_t o = { .group = &g, .deadline = FAR };
    for (int i = 0; i < 4; i++)
        cr_assert_eq(coro_spawn(s, &m[i].co, member_body, &o), 0);
    cr_assert_eq(coro_group_wait_blocking(&g, FAR), 0);
    cr_assert_eq(coro_group_destroy(&g), 0);
    fin(s);
}
