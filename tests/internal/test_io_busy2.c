/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Every worker busy, continued (tests/test_io_busy.c has the wake-ups
 * themselves): where the jobs that a busy worker queued run.  One
 * CPU-bound job per worker, pinned to that worker's CPU, yields every few
 * milliseconds, so that no worker is ever idle - the only state in which
 * a worker used to look at the others' queues.  Jobs queued on one of
 * them (a busy look at epoll takes every event there is and queues what
 * it wakes on the worker that looked) must not wait there for that
 * worker's own CPU-bound job while the other busy worker yields
 * (sched/worker.c, DEFERRED YIELDS: a worker steals before its yielder
 * runs again). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdatomic.h>

#include "rt/rt.h"        /* white box: which worker runs a step */
#include "white_box.h"

#define MS 1000000LL
#define HOG_NS (5 * MS)         /* a busy job's step */
#define WORK_NS (3 * MS)        /* a queued job's step */
#define NJOBS 8

static atomic_int hog_stop;

struct hog {
    coro_t co;
    atomic_int started;
};

static void spin(int64_t ns)
{
    int64_t t0 = coro_now();
    while (coro_now() - t0 < ns)
        ;
}

static int hog_fn(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    atomic_store(&h->started, 1);
    while (!atomic_load(&hog_stop)) {
        spin(HOG_NS);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct work {
    coro_t co;
    int worker;     /* the worker that ran it */
};

/* A job that runs on worker 0 keeps it busy until one has run on worker
 * 1 (or until release_by, 5 s after the jobs were queued): whether worker
 * 1 takes them does not hang on how soon its thread gets a CPU while
 * worker 0 gets through them, which under load (the machine's other
 * processes) failed this test twice.  If worker 1 never takes one, the
 * first job holds worker 0 until release_by, and all of them ran there. */
static atomic_int ran_on1;
static int64_t release_by;

static int work_fn(coro_t *co)
{
    struct work *x = CORO_SELF(co, struct work);
    CORO_BEGIN(co);
    spin(WORK_NS);
    x->worker = coro__tls_worker ? coro__tls_worker->idx : -1;
    if (x->worker == 1)
        atomic_store(&ran_on1, 1);
    else
        while (!atomic_load(&ran_on1) && coro_now() < release_by)
            ;
    CORO_END(co);
}

struct spawner {
    coro_t co;
    coro_sched_t *s;
    struct work *jobs;
};

/* pinned to worker 0: the jobs it spawns (any CPU) queue on worker 0 */
static int spawner_fn(coro_t *co)
{
    struct spawner *p = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (int i = 0; i < NJOBS; i++)
        if (coro_spawn(p->s, &p->jobs[i].co, work_fn, NULL) != 0)
            CORO_RETURN(co, -1);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static int first_cpu(const coro_cpuset_t *set)
{
    for (int c = 0; c < CORO_MAX_CPUS; c++)
        if (coro_cpuset_has(set, c))
            return c;
    return -1;
}

Test(io_busy2, jobs_queued_on_one_busy_worker_are_taken_by_another_busy_worker_at_its_yield,
     .timeout = 30)
{
    coro_sched_t *s = mk(2);
    static struct hog hogs[2];
    static struct work jobs[NJOBS];
    static struct spawner sp;
    coro_cpuset_t cpu[2];

    for (int i = 0; i < 2; i++) {
        coro_worker_stats_t ws;
        cr_assert_eq(coro_sched_worker_stats(s, i, &ws), 0);
        coro_cpuset_zero(&cpu[i]);
        coro_cpuset_add(&cpu[i], ws.cpu);
    }
    atomic_store(&hog_stop, 0);
    for (int i = 0; i < 2; i++) {
        coro_spawn_opts_t o = { .affinity = &cpu[i] };
        atomic_store(&hogs[i].started, 0);
        cr_assert_eq(coro_spawn(s, &hogs[i].co, hog_fn, &o), 0);
    }
    int64_t end = coro_now() + 20000 * MS;
    for (int i = 0; i < 2; i++)
        while (!atomic_load(&hogs[i].started)) {
            cr_assert_lt(coro_now(), end, "a busy job never started");
            sched_yield();
        }
    for (int i = 0; i < NJOBS; i++)
        jobs[i].worker = -1;
    atomic_store(&ran_on1, 0);
    release_by = coro_now() + 5000 * MS;
    sp = (struct spawner){ .s = s, .jobs = jobs };
    coro_spawn_opts_t o = { .affinity = &cpu[0] };
    cr_assert_eq(coro_spawn(s, &sp.co, spawner_fn, &o), 0);
    cr_assert_eq(join_r(&sp.co), 0);
    int on1 = 0;
    for (int i = 0; i < NJOBS; i++) {
        cr_assert_eq(join_r(&jobs[i].co), 0);
        on1 += jobs[i].worker == 1;
    }
    atomic_store(&hog_stop, 1);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(join_r(&hogs[i].co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    /* on one CPU (taskset) both workers serve the same mask: both busy
     * jobs may sit on one worker, and the other, idle, steals as always */
    if (coro_cpuset_has(&cpu[0], first_cpu(&cpu[1])))
        return;
    cr_assert_gt(on1, 0, "all %d jobs queued on worker 0 ran there while worker 1 yielded", NJOBS);
}
