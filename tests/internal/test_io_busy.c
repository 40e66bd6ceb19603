/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* I/O while every worker is busy (sched/worker.c, BUSY LOOKS and DEFERRED
 * YIELDS): one CPU-bound job per worker, pinned to that worker's CPU,
 * works a few milliseconds between yields, so that no worker ever runs
 * out of work; beside them socketpair pairs ping-pong, each message
 * carrying its writer's clock and the busy jobs' step count.  Every
 * round trip must complete, and no wake-up may wait more than a few dozen
 * of the busy jobs' steps.  Before the busy looks, a wake-up waited ~61
 * steps of the busy job (the job that yielded ran ahead of what the I/O
 * thread woke): these tests then took several seconds.
 *
 * The bounds count steps, not milliseconds: on a loaded machine (CI
 * beside other builds, ten runnable threads a CPU) a worker thread waits
 * for a CPU for tens of milliseconds at a time, and a wake-up's wall time
 * grows with every such wait while the busy job on that worker makes no
 * step either; the count of steps the busy jobs made meanwhile is what
 * the scheduler decides.  A step is HOG_NS of wall time, so on an idle
 * machine the step bounds are also time bounds; a loose wall-time bound
 * stays, for a wake-up that is lost. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt/rt.h"        /* white box: which worker runs a step; who took the events */
#include "white_box.h"

#define MS 1000000LL
#define HOG_NS (2 * MS)         /* a busy job's step */
#define PAIRS 4
#define TRIPS 20
/* no wake-up waits more busy steps (per busy job) than STEPS_ONE; all the
 * round trips take fewer than STEPS_ALL.  Expected: a few steps per
 * wake-up, a few dozen in all.  No wake-up waits BOUND_LOST of wall time,
 * however loaded the machine: such a wake-up was lost and found late by
 * something else */
#define STEPS_ONE 30
#define STEPS_ALL 500
#define BOUND_LOST (20000 * MS)

struct hog {
    coro_t co;
    atomic_int *stop;
    atomic_long *steps;         /* every busy job's steps, counted together */
    atomic_int started;
};

static int hog_fn(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    atomic_store(&h->started, 1);
    while (!atomic_load(h->stop)) {
        {
            int64_t t0 = coro_now();
            while (coro_now() - t0 < HOG_NS)
                ;
        }
        atomic_fetch_add(h->steps, 1);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

/* what a message carries: when it was written, and how many busy steps
 * had been made then */
struct msg {
    int64_t stamp;
    long steps;
};

struct end {
    coro_t co;
    int fd, first, i;
    size_t got;
    struct msg m;
    atomic_long *steps;
    int nhogs;
    int64_t max_lat;
    long max_steps;             /* per busy job */
    const coro_cpuset_t *mask;  /* NULL: any */
    int outside;                /* steps run on a worker outside mask */
};

static void check_cpu(struct end *x)
{
    struct coro__worker *w = coro__tls_worker;
    if (x->mask && w && w->cpu >= 0 && !coro_cpuset_has(x->mask, w->cpu))
        x->outside++;
}

static int end_fn(coro_t *co)
{
    struct end *x = CORO_SELF(co, struct end);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < TRIPS; x->i++) {
        if (x->first) {
            x->m = (struct msg){ coro_now(), atomic_load(x->steps) };
            CORO_AWAIT(co, coro_write(x->fd, &x->m, sizeof x->m, CORO_FOREVER));
            check_cpu(x);
            if (CORO_RESULT(co) != (intptr_t)sizeof x->m)
                CORO_RETURN(co, -1);
        }
        for (x->got = 0; x->got < sizeof x->m;) {
            CORO_AWAIT(co, coro_read(x->fd, (char *)&x->m + x->got, sizeof x->m - x->got,
                                     CORO_FOREVER));
            check_cpu(x);
            if (CORO_RESULT(co) <= 0)
                CORO_RETURN(co, -2);
            x->got += (size_t)CORO_RESULT(co);
        }
        if (coro_now() - x->m.stamp > x->max_lat)
            x->max_lat = coro_now() - x->m.stamp;
        if ((atomic_load(x->steps) - x->m.steps) / x->nhogs > x->max_steps)
            x->max_steps = (atomic_load(x->steps) - x->m.steps) / x->nhogs;
        if (!x->first) {
            x->m = (struct msg){ coro_now(), atomic_load(x->steps) };
            CORO_AWAIT(co, coro_write(x->fd, &x->m, sizeof x->m, CORO_FOREVER));
            check_cpu(x);
            if (CORO_RESULT(co) != (intptr_t)sizeof x->m)
                CORO_RETURN(co, -1);
        }
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct run {
    coro_sched_t *s;
    int workers;
    struct hog hogs[2];
    int nhogs;
    atomic_int stop;
    atomic_long steps;          /* the busy jobs' steps */
    struct end ends[2 * PAIRS];
    int fds[2 * PAIRS];
    coro_cpuset_t cpu[2];       /* each worker's CPU */
    int64_t elapsed, max_lat;
    long all_steps, max_steps;  /* per busy job */
};

/* start the busy jobs: one per worker, pinned to its CPU (single-threaded:
 * one, any CPU), and wait until each has run */
static void hogs_start(struct run *r)
{
    int n = r->workers > 0 ? r->workers : 1;
    atomic_store(&r->stop, 0);
    r->nhogs = n;
    for (int i = 0; i < n; i++) {
        coro_spawn_opts_t o = { .affinity = r->workers > 0 ? &r->cpu[i] : NULL };
        r->hogs[i].stop = &r->stop;
        r->hogs[i].steps = &r->steps;
        atomic_store(&r->hogs[i].started, 0);
        cr_assert_eq(coro_spawn(r->s, &r->hogs[i].co, hog_fn, &o), 0);
    }
    if (r->workers == 0)
        return;     /* single-threaded: they run when the joins drive */
    int64_t end = coro_now() + 20000 * MS;
    for (int i = 0; i < n; i++)
        while (!atomic_load(&r->hogs[i].started)) {
            cr_assert_lt(coro_now(), end, "a busy job never started");
            sched_yield();
        }
}

static void setup(struct run *r, int workers)
{
    memset(r, 0, sizeof *r);
    r->workers = workers;
    r->s = mk(workers);
    for (int i = 0; i < workers && i < 2; i++) {
        coro_worker_stats_t ws;
        cr_assert_eq(coro_sched_worker_stats(r->s, i, &ws), 0);
        coro_cpuset_zero(&r->cpu[i]);
        coro_cpuset_add(&r->cpu[i], ws.cpu);
    }
    for (int p = 0; p < PAIRS; p++) {
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                                &r->fds[2 * p]), 0);
        r->ends[2 * p] = (struct end){ .fd = r->fds[2 * p], .first = 1 };
        r->ends[2 * p + 1] = (struct end){ .fd = r->fds[2 * p + 1], .first = 0 };
    }
}

/* the pairs beside the busy jobs: every round trip completes in time */
static void pairs_run(struct run *r)
{
    int64_t t0 = coro_now();
    long steps0 = atomic_load(&r->steps);
    for (int i = 0; i < 2 * PAIRS; i++) {
        coro_spawn_opts_t o = { .affinity = r->ends[i].mask };
        r->ends[i].steps = &r->steps;
        r->ends[i].nhogs = r->nhogs;
        cr_assert_eq(coro_spawn(r->s, &r->ends[i].co, end_fn, &o), 0);
    }
    for (int i = 0; i < 2 * PAIRS; i++)
        cr_assert_eq(join_r(&r->ends[i].co), 0, "end %d failed", i);
    r->elapsed = coro_now() - t0;
    r->all_steps = (atomic_load(&r->steps) - steps0) / r->nhogs;
    for (int i = 0; i < 2 * PAIRS; i++) {
        if (r->ends[i].max_lat > r->max_lat)
            r->max_lat = r->ends[i].max_lat;
        if (r->ends[i].max_steps > r->max_steps)
            r->max_steps = r->ends[i].max_steps;
    }
    cr_assert_lt(r->max_steps, STEPS_ONE,
                 "a wake-up waited %ld steps of each busy job (%lld ms)", r->max_steps,
                 (long long)(r->max_lat / MS));
    cr_assert_lt(r->all_steps, STEPS_ALL, "%d round trips took %ld steps of each busy job (%lld ms)",
                 PAIRS * TRIPS, r->all_steps, (long long)(r->elapsed / MS));
    cr_assert_lt(r->max_lat, BOUND_LOST, "a wake-up waited %lld ms: lost", (long long)(r->max_lat / MS));
}

static void teardown(struct run *r)
{
    atomic_store(&r->stop, 1);
    for (int i = 0; i < r->nhogs; i++)
        cr_assert_eq(join_r(&r->hogs[i].co), 0);
    cr_assert_eq(coro_sched_destroy(r->s), 0);
    for (int i = 0; i < 2 * PAIRS; i++)
        close(r->fds[i]);
}

static int first_cpu(const coro_cpuset_t *set)
{
    for (int c = 0; c < CORO_MAX_CPUS; c++)
        if (coro_cpuset_has(set, c))
            return c;
    return -1;
}

static void busy_io(int workers)
{
    static struct run r;
    setup(&r, workers);
    hogs_start(&r);
    pairs_run(&r);
    teardown(&r);
}

Test(io_busy, io_wake_ups_reach_jobs_while_the_only_worker_runs_a_yielding_job, .timeout = 60)
{
    busy_io(1);
}

Test(io_busy, io_wake_ups_reach_jobs_while_both_workers_run_pinned_yielding_jobs, .timeout = 60)
{
    busy_io(2);
}

Test(io_busy, io_wake_ups_reach_jobs_while_a_single_threaded_driver_runs_a_yielding_job,
     .timeout = 60)
{
    busy_io(0);
}

/* no worker looks (the hook): the I/O thread is the guarantee, and what
 * it wakes runs after the busy jobs' current steps, not dozens later */
Test(io_busy, the_io_thread_wakes_jobs_in_time_when_busy_workers_do_not_look, .timeout = 60)
{
    static struct run r;
    coro__busy_look_off = true;
    setup(&r, 2);
    hogs_start(&r);
    pairs_run(&r);
    /* workers that share a CPU (taskset to one) serve the same mask: both
     * busy jobs may sit on one worker, and the other, idle, takes the
     * readiness itself */
    if (!coro_cpuset_has(&r.cpu[0], first_cpu(&r.cpu[1])))
        cr_assert_gt(coro__io_woken_by(coro__sched_io(r.s), true), 0,
                     "the I/O thread took no event");
    teardown(&r);
}

/* jobs woken by a busy worker's look run only where their masks allow:
 * each pair's first end on worker 0's CPU, the other on worker 1's */
Test(io_busy, jobs_woken_by_a_busy_workers_look_run_only_inside_their_masks, .timeout = 60)
{
    static struct run r;
    setup(&r, 2);
    coro_worker_stats_t w0, w1;
    cr_assert_eq(coro_sched_worker_stats(r.s, 0, &w0), 0);
    cr_assert_eq(coro_sched_worker_stats(r.s, 1, &w1), 0);
    if (w0.cpu == w1.cpu) {
        teardown(&r);
        cr_skip_test("the two workers share a CPU (taskset to one CPU): masks cannot tell them apart");
    }
    for (int p = 0; p < PAIRS; p++) {
        r.ends[2 * p].mask = &r.cpu[0];
        r.ends[2 * p + 1].mask = &r.cpu[1];
    }
    hogs_start(&r);
    pairs_run(&r);
    for (int i = 0; i < 2 * PAIRS; i++)
        cr_assert_eq(r.ends[i].outside, 0, "end %d ran %d steps outside its mask", i,
                     r.ends[i].outside);
    cr_assert_gt(coro__io_woken_by(coro__sched_io(r.s), false), 0,
                 "no worker took an event: the busy look never ran");
    teardown(&r);
}

/* ---- DUE TIMERS: a busy worker fires the timers that are due itself ---- */

/* With the I/O thread firing no timers (the test hook), a sleep and an
 * event's timed wait beside a job that only yields still end: the one
 * worker, never idle, fires them at its yields.  Before DUE TIMERS both
 * waited for the I/O thread, which on a machine whose CPUs all run busy
 * workers waits for a CPU (on one CPU a 1 ms sleep woke ~4-10 ms late). */
struct yielder {
    coro_t co;
    atomic_int *stop;
    long yields;
};

static int yielder_fn(coro_t *co)
{
    struct yielder *y = CORO_SELF(co, struct yielder);
    CORO_BEGIN(co);
    while (!atomic_load(y->stop)) {
        y->yields++;
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct timed {
    coro_t co;
    atomic_int *stop;
    coro_event_t *ev;
    intptr_t slept, waited;
};

static int timed_fn(coro_t *co)
{
    struct timed *t = CORO_SELF(co, struct timed);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(MS));
    t->slept = CORO_RESULT(co);
    CORO_AWAIT(co, coro_event_wait(t->ev, MS));     /* the lot's heap */
    t->waited = CORO_RESULT(co);
    atomic_store(t->stop, 1);
    CORO_END(co);
}

Test(io_busy, a_busy_worker_fires_due_timers_when_the_io_thread_does_not, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    atomic_int stop = 0;
    coro_event_t ev;
    struct yielder y = { .stop = &stop };
    struct timed t = { .stop = &stop, .ev = &ev, .slept = 1, .waited = 1 };

    cr_assert_eq(coro_event_init(&ev), 0);
    coro__io_thread_timers_off = true;
    cr_assert_eq(coro_spawn(s, &y.co, yielder_fn, NULL), 0);
    cr_assert_eq(coro_spawn(s, &t.co, timed_fn, NULL), 0);
    cr_assert_eq(join_r(&t.co), 0);
    cr_assert_eq(join_r(&y.co), 0);
    coro__io_thread_timers_off = false;
    cr_assert_eq(t.slept, 0);
    cr_assert_eq(t.waited, -ETIMEDOUT);
    cr_assert_gt(y.yields, 0, "the yielder never ran beside the waits");
    coro_sched_destroy(s);
    coro_event_destroy(&ev);
}
