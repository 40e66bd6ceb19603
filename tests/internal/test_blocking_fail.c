/* SPDX-License-Identifier: MIT */
/* The blocking pool when threads cannot be started (the
 * coro__blocking_spawn_hook test hook stands in for pthread_create): every
 * call ends - with fn's result, fn run once, or with -EAGAIN, fn never run
 * - whichever thread start fails; and a blocking-pool thread of s cannot
 * shut s down or destroy it (-EDEADLK). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/rt.h"     /* white-box: the spawn hook, the pool's queue */

static coro_sched_t *mk_pool(int workers, uint32_t threads)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = workers;
    c.pin = false;
    c.blocking_threads = threads;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

/* ---- a hook that fails chosen calls ------------------------------------------------ */

static uint64_t fail_bits;      /* bit i: the i-th start (from 0) fails */
static bool fail_after;         /* and every start from the 64th on */
static unsigned starts;         /* atomic: starts tried */

static int chosen_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    unsigned i = __atomic_fetch_add(&starts, 1, __ATOMIC_RELAXED);
    if (i < 64 ? (fail_bits >> i) & 1 : fail_after)
        return EAGAIN;
    return pthread_create(t, a, fn, arg);
}

struct call { coro_t co; intptr_t r; int ran; /* atomic */ };

static intptr_t slow(void *arg)
{
    struct call *c = arg;
    __atomic_add_fetch(&c->ran, 1, __ATOMIC_RELAXED);
    usleep(200);        /* blocks a little: calls overlap and queue */
    return 42;
}

static int call_body(coro_t *co)
{
    struct call *c = CORO_SELF(co, struct call);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(slow, c));
    c->r = CORO_RESULT(co);
    CORO_END(co);
}

/* N calls at once; every one must end within a bound (a hang fails the
 * test here, not at Criterion's timeout) with fn's result or -EAGAIN */
static void burst(int workers, uint32_t threads, int n, uint64_t bits, bool after)
{
    coro_sched_t *s = mk_pool(workers, threads);
    struct call *c = calloc((size_t)n, sizeof *c);
    fail_bits = bits;
    fail_after = after;
    starts = 0;
    coro__blocking_spawn_hook = chosen_create;
    for (int i = 0; i < n; i++)
        cr_assert_eq(coro_spawn(s, &c[i].co, call_body, NULL), 0);
    for (int i = 0; i < n; i++) {
        intptr_t r;
        int rc = coro_join_timeout(&c[i].co, &r, 10 * 1000000000LL);
        cr_assert_eq(rc, 0, "workers %d threads %u bits %#llx%s: call %d never ended", workers,
                     threads, (unsigned long long)bits, after ? "+" : "", i);
        if (c[i].r == 42)
            cr_assert_eq(c[i].ran, 1, "call %d: fn ran %d times", i, c[i].ran);
        else
            cr_assert(c[i].r == -EAGAIN && c[i].ran == 0, "call %d: result %ld, fn ran %d times",
                      i, (long)c[i].r, c[i].ran);
    }
    coro__blocking_spawn_hook = pthread_create;
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(c);
}

Test(blocking_fail, every_call_ends_whichever_single_thread_start_fails, .timeout = 120)
{
    static const int workers[] = { 0, 1, 2 };
    for (size_t wi = 0; wi < 3; wi++)
        for (int k = 0; k < 10; k++)
            burst(workers[wi], 4, 12, 1ull << k, false);
}

Test(blocking_fail, every_call_ends_when_thread_starts_fail_from_some_point_on, .timeout = 120)
{
    static const int workers[] = { 0, 1, 2 };
    for (size_t wi = 0; wi < 3; wi++)
        for (int k = 0; k < 10; k++)
            burst(workers[wi], 4, 12, ~0ull << k, true);
}

Test(blocking_fail, twenty_calls_at_once_with_no_thread_startable_all_get_eagain, .timeout = 120)
{
    for (int round = 0; round < 10; round++) {
        burst(2, 0, 20, ~0ull, true);
        burst(4, 0, 20, ~0ull, true);
    }
}

/* ---- the start that fails while another call queues behind it ------------------------- */

static coro_sched_t *race_s;
static int in_hook;     /* atomic */

/* the first start waits until a second call has queued behind the thread
 * it was to start, then fails: the window in which an arm finds a thread
 * counted (starting) and queues, made wide */
static int fail_after_queue(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    (void)t; (void)a; (void)fn; (void)arg;
    if (__atomic_fetch_add(&in_hook, 1, __ATOMIC_ACQ_REL) == 0) {
        int64_t end = coro_now() + 10 * 1000000000LL;
        while (!coro__blocking_queued(race_s) && coro_now() < end)
            sched_yield();
    }
    return EAGAIN;
}

Test(blocking_fail, a_call_queued_behind_a_start_that_fails_gets_eagain_not_a_hang, .timeout = 60)
{
    struct call a = { .r = 1 }, b = { .r = 1 };
    intptr_t r;
    race_s = mk_pool(2, 0);
    in_hook = 0;
    coro__blocking_spawn_hook = fail_after_queue;
    cr_assert_eq(coro_spawn(race_s, &a.co, call_body, NULL), 0);
    while (!__atomic_load_n(&in_hook, __ATOMIC_ACQUIRE))
        sched_yield();
    /* a's worker is inside the start: b arms on the other worker */
    cr_assert_eq(coro_spawn(race_s, &b.co, call_body, NULL), 0);
    cr_assert_eq(coro_join_timeout(&a.co, &r, 20 * 1000000000LL), 0);
    cr_assert_eq(coro_join_timeout(&b.co, &r, 20 * 1000000000LL), 0, "the queued call hung");
    cr_assert_eq(a.r, -EAGAIN);
    cr_assert_eq(b.r, -EAGAIN);
    cr_assert_eq(a.ran + b.ran, 0);
    coro__blocking_spawn_hook = pthread_create;
    cr_assert_eq(coro_sched_destroy(race_s), 0);
}

/* ---- a pool thread cannot end its own scheduler ------------------------------------------ */

struct selfend { coro_t co; coro_sched_t *s; int rc[4]; intptr_t r; };

static intptr_t end_own_sched(void *arg)
{
    struct selfend *j = arg;
    j->rc[0] = coro_sched_shutdown(j->s, CORO_DRAIN);
    j->rc[1] = coro_sched_shutdown(j->s, CORO_CANCEL);
    j->rc[2] = coro_sched_shutdown_timeout(j->s, 0);
    j->rc[3] = coro_sched_destroy(j->s);
    return 9;
}

static int selfend_body(coro_t *co)
{
    struct selfend *j = CORO_SELF(co, struct selfend);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(end_own_sched, j));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

Test(blocking_fail, a_pool_thread_that_shuts_down_or_destroys_its_scheduler_gets_edeadlk,
     .timeout = 30)
{
    static const int workers[] = { 0, 1, 2 };
    for (size_t wi = 0; wi < 3; wi++) {
        struct selfend j = { .r = 1 };
        j.s = mk_pool(workers[wi], 2);
        cr_assert_eq(block_on_r(j.s, &j.co, selfend_body, NULL), 0);
        cr_assert_eq(j.r, 9);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(j.rc[i], -EDEADLK, "workers %d call %d: %d", workers[wi], i, j.rc[i]);
        /* and s is whole: it still runs jobs, then shuts down */
        cr_assert_eq(block_on_r(j.s, &j.co, selfend_body, NULL), 0);
        cr_assert_eq(coro_sched_destroy(j.s), 0);
    }
}
