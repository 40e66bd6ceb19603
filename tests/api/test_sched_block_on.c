/* SPDX-License-Identifier: MIT */
/* coro_block_on's root job keeps every promise a spawned job has: it runs
 * only on a CPU its mask allows; a cancel from another thread and its
 * .deadline end its await; a coro_block_on inside a job is refused
 * (-EDEADLK).  0, 1 and 2 workers (with none, the caller drives the
 * scheduler: the job runs there). */
#define _GNU_SOURCE   /* sched_getaffinity */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "fixture.h"

static const int counts[] = { 0, 1, 2 };
#define NCOUNTS (sizeof counts / sizeof counts[0])

struct where {
    coro_t co;
    pthread_t thread;
    coro_sched_t *sched;
    int cpu;
};

static int where_fn(coro_t *co)
{
    struct where *w = CORO_SELF(co, struct where);
    CORO_BEGIN(co);
    w->thread = pthread_self();
    w->sched = coro_sched_current();
    w->cpu = sched_getcpu();
    CORO_RETURN(co, 5);
    CORO_END(co);
}

Test(sched_block_on, the_root_job_runs_only_where_its_mask_allows, .timeout = 20)
{
    cpu_set_t os;
    cr_assert_eq(sched_getaffinity(0, sizeof os, &os), 0);
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
        if (CPU_ISSET(i, &os))
            first = i;
    coro_cpuset_t one;
    coro_cpuset_zero(&one);
    coro_cpuset_add(&one, first);
    for (size_t k = 0; k < NCOUNTS; k++) {
        /* pinned workers: a job of mask {first} can only run on its CPU */
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        c.workers = counts[k];
        coro_sched_t *s = mk_config(&c);
        for (int r = 0; r < 50; r++) {
            static struct where w __attribute__((aligned(64)));
            intptr_t res = -1;
            if (counts[k] == 0) {
                /* without workers the caller drives: the job runs there */
                cr_assert_eq(coro_block_on(s, &w.co, where_fn, NULL, &res), 0);
                cr_assert(pthread_equal(w.thread, pthread_self()));
            } else {
                coro_spawn_opts_t o = { .affinity = &one };
                cr_assert_eq(coro_block_on(s, &w.co, where_fn, &o, &res), 0);
                cr_assert_eq(w.cpu, first, "%d workers: ran on CPU %d", counts[k], w.cpu);
            }
            cr_assert_eq(res, 5);
            cr_assert_eq(w.sched, s, "%d workers", counts[k]);
        }
        fin(s);
    }
}

struct waiter {
    coro_t co;
    coro_event_t *started, *never;
};

static int waiter_fn(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    coro_event_set(w->started);
    CORO_AWAIT(co, coro_event_wait(w->never, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));   /* -ECANCELED or -ETIMEDOUT */
    CORO_END(co);
}

struct canceller {
    pthread_t t;
    struct waiter *w;
};

static void *cancel_main(void *arg)
{
    struct canceller *c = arg;
    cr_assert_eq(coro_event_wait_blocking(c->w->started, CORO_FOREVER), 0);
    cr_assert_eq(coro_cancel(&c->w->co), 0);
    return NULL;
}

Test(sched_block_on, a_cancel_from_another_thread_ends_the_root_jobs_await, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t started, never;
        cr_assert_eq(coro_event_init(&started), 0);
        cr_assert_eq(coro_event_init(&never), 0);
        static struct waiter w __attribute__((aligned(64)));
        w.started = &started;
        w.never = &never;
        struct canceller c = { .w = &w };
        cr_assert_eq(pthread_create(&c.t, NULL, cancel_main, &c), 0);
        intptr_t res = 0;
        cr_assert_eq(coro_block_on(s, &w.co, waiter_fn, NULL, &res), 0);
        pthread_join(c.t, NULL);
        cr_assert_eq(res, -ECANCELED, "%d workers: %s", counts[k], coro_strerror((int)res));
        cr_assert_eq(coro_event_destroy(&started), 0);
        cr_assert_eq(coro_event_destroy(&never), 0);
        fin(s);
    }
}

Test(sched_block_on, the_root_jobs_deadline_ends_its_await_with_etimedout, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t started, never;
        cr_assert_eq(coro_event_init(&started), 0);
        cr_assert_eq(coro_event_init(&never), 0);
        static struct waiter w __attribute__((aligned(64)));
        w.started = &started;
        w.never = &never;
        coro_spawn_opts_t o = { .deadline = coro_now() + 20000000 };    /* 20 ms */
        intptr_t res = 0;
        cr_assert_eq(coro_block_on(s, &w.co, waiter_fn, &o, &res), 0);
        cr_assert_eq(res, -ETIMEDOUT, "%d workers: %s", counts[k], coro_strerror((int)res));
        cr_assert_geq(coro_now(), o.deadline);
        cr_assert_eq(coro_event_destroy(&started), 0);
        cr_assert_eq(coro_event_destroy(&never), 0);
        fin(s);
    }
}

struct nest {
    coro_t co;
    coro_t inner;
};

static int nest_fn(coro_t *co)
{
    struct nest *n = CORO_SELF(co, struct nest);
    CORO_BEGIN(co);
    intptr_t r = 0;
    int rc = coro_block_on(coro_sched_current(), &n->inner, where_fn, NULL, &r);
    CORO_RETURN(co, rc);
    CORO_END(co);
}

Test(sched_block_on, a_block_on_inside_a_job_is_refused_with_edeadlk, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        static struct nest n __attribute__((aligned(64)));
        intptr_t res = 0;
        cr_assert_eq(coro_block_on(s, &n.co, nest_fn, NULL, &res), 0);
        cr_assert_eq(res, -EDEADLK, "%d workers: %s", counts[k], coro_strerror((int)res));
        fin(s);
    }
}
