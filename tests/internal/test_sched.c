/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The multi-threaded scheduler: affinity, priorities, stealing, parking,
 * shutdown, across worker counts 1, 2, 4, 8 (marl's fixture). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"     /* white-box: struct alignment, the drive word */

#ifndef CORO__DRIVE_WMASK
# define CORO__DRIVE_WMASK 0xfffeu  /* so that this file builds on older trees */
#endif

static coro_sched_t *mt_sched(int workers)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    int rc = coro_sched_create(&s, &c);
    cr_assert_eq(rc, 0, "create(%d): %s", workers, coro_strerror(rc));
    return s;
}

/* the CPUs this process may use */
static int usable_cpus(int *out, int max)
{
    cpu_set_t set;
    int n = 0;

    sched_getaffinity(0, sizeof set, &set);
    for (int i = 0; i < CPU_SETSIZE && n < max; i++)
        if (CPU_ISSET(i, &set))
            out[n++] = i;
    return n;
}

static void all_pinned_or_skip(coro_sched_t *s)
{
    coro_sched_stats_t *st = malloc(sizeof *st);
    coro_sched_stats(s, st);
    for (int i = 0; i < st->workers; i++)
        if (!wstat(s, i).pinned) {
            free(st);
            cr_skip_test("worker %d could not be pinned here: affinity cannot be checked", i);
        }
    free(st);
}

/* wait (generously) until *p >= v; false on timeout */
static bool wait_for(volatile long *p, long v, int ms)
{
    for (int i = 0; i < ms * 10; i++) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) >= v)
            return true;
        usleep(100);
    }
    return false;
}

/* ---- a million jobs with random masks and priorities -------------------------- */

struct mjob {
    coro_t co;
    coro_cpuset_t *mask;
    unsigned char ran;
    unsigned char wrong_cpu;
};

static int mjob_body(coro_t *co)
{
    struct mjob *j = CORO_SELF(co, struct mjob);
    CORO_BEGIN(co);
    __atomic_add_fetch(&j->ran, 1, __ATOMIC_RELAXED);
    if (!coro_cpuset_has(j->mask, sched_getcpu()))
        j->wrong_cpu = 1;
    CORO_YIELD(co);
    if (!coro_cpuset_has(j->mask, sched_getcpu()))
        j->wrong_cpu = 1;
    CORO_END(co);
}

static void million_jobs(int workers)
{
    enum { N = 1000000, NMASKS = 16 };
    int cpus[CORO_MAX_CPUS], ncpu = usable_cpus(cpus, CORO_MAX_CPUS);
    coro_sched_t *s = mt_sched(workers);
    struct mjob *jobs = calloc(N, sizeof *jobs);
    coro_cpuset_t masks[NMASKS], any;
    unsigned seed = 12345;
    int nwc = workers < ncpu ? workers : ncpu;     /* CPUs that have a worker */

    cr_assert_not_null(jobs);
    /* random subsets of the usable CPUs that hold at least one worker's
     * CPU, some with CPUs that do not exist here (the scheduler cuts them) */
    for (int m = 0; m < NMASKS; m++) {
        coro_cpuset_zero(&masks[m]);
        while (coro_cpuset_count(&masks[m]) == 0)
            for (int c = 0; c < nwc; c++)
                if (rand_r(&seed) & 1)
                    coro_cpuset_add(&masks[m], cpus[c]);
        for (int c = nwc; c < ncpu; c++)
            if (rand_r(&seed) & 1)
                coro_cpuset_add(&masks[m], cpus[c]);
        if (m & 1)
            coro_cpuset_add(&masks[m], 1000);
    }
    coro_cpuset_zero(&any);
    for (int c = 0; c < ncpu; c++)
        coro_cpuset_add(&any, cpus[c]);
    for (int i = 0; i < N; i++) {
        int m = rand_r(&seed) % (NMASKS + 1);
        coro_spawn_opts_t o = { .priority = rand_r(&seed) % 3 - 1 };
        if (m < NMASKS)
            o.affinity = &masks[m];
        jobs[i].mask = m < NMASKS ? &masks[m] : &any;
        int rc = coro_spawn(s, &jobs[i].co, mjob_body, &o);
        cr_assert_eq(rc, 0, "spawn %d: %s", i, coro_strerror(rc));
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(join_r(&jobs[i].co), 0);
    all_pinned_or_skip(s);
    coro_sched_destroy(s);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(jobs[i].ran, 1, "job %d ran %d times", i, jobs[i].ran);
        cr_assert_eq(jobs[i].wrong_cpu, 0, "job %d ran outside its mask", i);
    }
    free(jobs);
}

Test(sched, a_million_jobs_with_random_masks_run_once_inside_their_masks_1_worker, .timeout = 120)
{
    million_jobs(1);
}
Test(sched, a_million_jobs_with_random_masks_run_once_inside_their_masks_2_workers, .timeout = 120)
{
    million_jobs(2);
}
Test(sched, a_million_jobs_with_random_masks_run_once_inside_their_masks_4_workers, .timeout = 120)
{
    million_jobs(4);
}
Test(sched, a_million_jobs_with_random_masks_run_once_inside_their_masks_8_workers, .timeout = 120)
{
    million_jobs(8);
}

/* ---- spawning from inside jobs (spawn_many_local) ------------------------------ */

struct counter_job {
    coro_t co;
    long *left;
};

static int dec_body(coro_t *co)
{
    struct counter_job *j = CORO_SELF(co, struct counter_job);
    CORO_BEGIN(co);
    __atomic_sub_fetch(j->left, 1, __ATOMIC_ACQ_REL);
    CORO_END(co);
}

struct spawner {
    coro_t co;
    coro_sched_t *s;
    struct counter_job *kids;
    int n, i;
    long left;
};

static int spawner_body(coro_t *co)
{
    struct spawner *p = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    cr_assert_eq(coro_sched_current(), p->s);
    for (p->i = 0; p->i < p->n; p->i++) {
        p->kids[p->i].left = &p->left;
        int rc__ = coro_spawn(p->s, &p->kids[p->i].co, dec_body, NULL);
        cr_assert_eq(rc__, 0, "kid %d: %d", p->i, rc__);
    }
    for (p->i = 0; p->i < p->n; p->i++)
        CORO_AWAIT(co, coro_done(&p->kids[p->i].co));
    CORO_RETURN(co, p->left);
    CORO_END(co);
}

Test(sched, jobs_spawned_inside_jobs_all_run_across_worker_counts, .timeout = 60)
{
    static const int counts[] = { 1, 2, 4, 8 };
    for (size_t k = 0; k < 4; k++) {
        coro_sched_t *s = mt_sched(counts[k]);
        struct spawner p = { .s = s, .n = 10000, .left = 10000 };
        p.kids = calloc(p.n, sizeof *p.kids);
        cr_assert_null(coro_sched_current());
        for (int round = 0; round < 10; round++) {
            p.left = p.n;
            cr_assert_eq(block_on_r(s, &p.co, spawner_body, NULL), 0);
        }
        coro_sched_destroy(s);
        free(p.kids);
    }
}

/* ---- priorities ----------------------------------------------------------------- */

struct blocker {
    coro_t co;
    volatile long started, release;
    coro_t *spawn_child;        /* optional: spawned before blocking */
    coro_fn child_fn;
    int on_cpu;
};

static int blocker_body(coro_t *co)
{
    struct blocker *b = CORO_SELF(co, struct blocker);
    CORO_BEGIN(co);
    if (b->spawn_child)
        coro_spawn(coro_sched_current(), b->spawn_child, b->child_fn, NULL);
    b->on_cpu = sched_getcpu();
    __atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&b->release, __ATOMIC_ACQUIRE))
        usleep(50);             /* a job that never awaits keeps its worker */
    CORO_END(co);
}

struct ordered {
    coro_t co;
    long *seq;
    long at;
    int cpu;
};

static int ordered_body(coro_t *co)
{
    struct ordered *o = CORO_SELF(co, struct ordered);
    CORO_BEGIN(co);
    o->at = __atomic_fetch_add(o->seq, 1, __ATOMIC_ACQ_REL);
    o->cpu = sched_getcpu();
    CORO_END(co);
}

Test(sched, high_runs_before_the_normal_jobs_queued_ahead_of_it, .timeout = 30)
{
    coro_sched_t *s = mt_sched(1);
    struct blocker b = { 0 };
    struct ordered normal[100], high = { 0 };
    long seq = 0;
    coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };

    memset(normal, 0, sizeof normal);
    cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
    cr_assert(wait_for(&b.started, 1, 10000));
    for (int i = 0; i < 100; i++) {
        normal[i].seq = &seq;
        cr_assert_eq(coro_spawn(s, &normal[i].co, ordered_body, NULL), 0);
    }
    high.seq = &seq;
    cr_assert_eq(coro_spawn(s, &high.co, ordered_body, &hi), 0);
    __atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
    join_r(&high.co);
    for (int i = 0; i < 100; i++)
        join_r(&normal[i].co);
    cr_assert_eq(high.at, 0, "HIGH ran as number %ld", high.at);
    for (int i = 1; i < 100; i++)
        cr_assert_lt(normal[i - 1].at, normal[i].at, "NORMAL jobs keep their order");
    coro_sched_destroy(s);
}

struct flood {
    coro_t co;
    coro_sched_t *s;
    struct flood *pool;
    long *next, n, *high_done;
};

static int flood_body(coro_t *co)
{
    struct flood *f = CORO_SELF(co, struct flood);
    CORO_BEGIN(co);
    __atomic_add_fetch(f->high_done, 1, __ATOMIC_RELAXED);
    /* each HIGH job starts the next two while the pool lasts: a flood */
    for (int k = 0; k < 2; k++) {
        long i = __atomic_fetch_add(f->next, 1, __ATOMIC_RELAXED);
        if (i < f->n) {
            struct flood *nf = &f->pool[i];
            *nf = (struct flood){ .s = f->s, .pool = f->pool, .next = f->next, .n = f->n,
                                  .high_done = f->high_done };
            coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };
            coro_spawn(f->s, &nf->co, flood_body, &hi);
        }
    }
    CORO_END(co);
}

struct low_job {
    coro_t co;
    long *high_done, seen;
};

static int low_body(coro_t *co)
{
    struct low_job *l = CORO_SELF(co, struct low_job);
    CORO_BEGIN(co);
    l->seen = __atomic_load_n(l->high_done, __ATOMIC_RELAXED);
    CORO_END(co);
}

Test(sched, normal_and_low_jobs_still_run_under_a_flood_of_high, .timeout = 60)
{
    enum { POOL = 200000 };
    coro_sched_t *s = mt_sched(1);
    struct flood *pool = calloc(POOL, sizeof *pool);
    struct low_job normal[50], low[50];
    long next = 1, high_done = 0;
    struct blocker b = { 0 };
    coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH }, lo = { .priority = CORO_PRIO_LOW };

    memset(normal, 0, sizeof normal);
    memset(low, 0, sizeof low);
    cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
    cr_assert(wait_for(&b.started, 1, 10000));
    for (int i = 0; i < 50; i++) {
        normal[i].high_done = low[i].high_done = &high_done;
        cr_assert_eq(coro_spawn(s, &normal[i].co, low_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &low[i].co, low_body, &lo), 0);
    }
    pool[0] = (struct flood){ .s = s, .pool = pool, .next = &next, .n = POOL,
                              .high_done = &high_done };
    cr_assert_eq(coro_spawn(s, &pool[0].co, flood_body, &hi), 0);
    __atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
    /* not shutdown: that would close spawning, the flood's own included */
    cr_assert(wait_for(&high_done, POOL, 50000), "the flood stopped at %ld", high_done);
    for (int i = 0; i < 50; i++) {
        join_r(&normal[i].co);
        join_r(&low[i].co);
    }
    for (int i = 0; i < 50; i++) {
        /* documented bound: NORMAL >= 1 pick in 33, LOW >= 1 in 129; the
         * i-th job of a level waits for about (i+1) bounds; allow twice */
        cr_assert_lt(normal[i].seen, (i + 1) * 33 * 2 + 100, "NORMAL %d waited for %ld HIGH jobs",
                     i, normal[i].seen);
        cr_assert_lt(low[i].seen, (i + 1) * 129 * 2 + 100, "LOW %d waited for %ld HIGH jobs", i,
                     low[i].seen);
    }
    coro_sched_destroy(s);
    free(pool);
}

/* ---- affinity under a blocked worker ---------------------------------------------- */

Test(sched, a_job_pinned_to_a_blocked_cpu_waits_while_an_any_cpu_job_is_stolen, .timeout = 60)
{
    int cpus[CORO_MAX_CPUS];
    if (usable_cpus(cpus, CORO_MAX_CPUS) < 2)
        cr_skip_test("needs 2 CPUs, this machine lets us use 1");
    coro_sched_t *s = mt_sched(2);
    all_pinned_or_skip(s);
    int busy = cpus[1];
    coro_cpuset_t only_busy;
    coro_cpuset_zero(&only_busy);
    coro_cpuset_add(&only_busy, busy);
    coro_spawn_opts_t pin = { .affinity = &only_busy };
    long seq = 0;
    struct ordered lifo_child = { .seq = &seq }, pinned = { .seq = &seq }, any = { .seq = &seq };
    struct blocker b = { .spawn_child = &lifo_child.co, .child_fn = ordered_body };

    /* the blocker spawns an any-CPU child into its own LIFO slot, then
     * keeps its worker */
    cr_assert_eq(coro_spawn(s, &b.co, blocker_body, &pin), 0);
    cr_assert(wait_for(&b.started, 1, 10000));
    cr_assert_eq(b.on_cpu, busy);
    cr_assert_eq(coro_spawn(s, &pinned.co, ordered_body, &pin), 0);
    cr_assert_eq(coro_spawn(s, &any.co, ordered_body, NULL), 0);
    cr_assert_eq(join_r(&any.co), 0);
    cr_assert_eq(join_r(&lifo_child.co), 0, "the child in the blocked worker's LIFO slot was stolen");
    cr_assert_neq(any.cpu, busy);
    cr_assert_neq(lifo_child.cpu, busy);
    sleep_ms(100);
    cr_assert_eq(__atomic_load_n(&seq, __ATOMIC_ACQUIRE), 2, "the pinned job ran elsewhere");
    __atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
    cr_assert_eq(join_r(&pinned.co), 0);
    cr_assert_eq(pinned.cpu, busy);
    coro_sched_stats_t *st = malloc(sizeof *st);
    coro_sched_stats(s, st);
    uint64_t steals = st->steals;
    cr_assert_gt(steals, 0);
    free(st);
    coro_sched_destroy(s);
}

/* ---- coro_reschedule ------------------------------------------------------------------ */

struct hopper {
    coro_t co;
    int cpus[2];
    int seen[4];
    intptr_t bad_empty, bad_prio, ok;
};

static int hopper_body(coro_t *co)
{
    struct hopper *h = CORO_SELF(co, struct hopper);
    coro_cpuset_t set;
    CORO_BEGIN(co);
    coro_cpuset_zero(&set);
    coro_cpuset_add(&set, h->cpus[1]);
    CORO_AWAIT(co, coro_reschedule(&set, CORO_PRIO_HIGH));      /* mask on the C stack */
    h->ok = CORO_RESULT(co);
    h->seen[0] = sched_getcpu();
    CORO_YIELD(co);
    h->seen[1] = sched_getcpu();
    coro_cpuset_zero(&set);
    coro_cpuset_add(&set, h->cpus[0]);
    CORO_AWAIT(co, coro_reschedule(&set, CORO_PRIO_LOW));
    h->seen[2] = sched_getcpu();
    coro_cpuset_zero(&set);
    CORO_AWAIT(co, coro_reschedule(&set, CORO_PRIO_NORMAL));
    h->bad_empty = CORO_RESULT(co);
    CORO_AWAIT(co, coro_reschedule(NULL, 5));
    h->bad_prio = CORO_RESULT(co);
    h->seen[3] = sched_getcpu();
    CORO_END(co);
}

Test(sched, reschedule_moves_a_job_to_the_cpus_of_its_new_mask, .timeout = 30)
{
    int cpus[CORO_MAX_CPUS];
    if (usable_cpus(cpus, CORO_MAX_CPUS) < 2)
        cr_skip_test("needs 2 CPUs, this machine lets us use 1");
    coro_sched_t *s = mt_sched(CORO_WORKERS_AUTO);
    all_pinned_or_skip(s);
    for (int round = 0; round < 50; round++) {
        struct hopper h = { .cpus = { cpus[0], cpus[1] } };
        cr_assert_eq(block_on_r(s, &h.co, hopper_body, NULL), 0);
        cr_assert_eq(h.ok, 0);
        cr_assert_eq(h.seen[0], cpus[1]);
        cr_assert_eq(h.seen[1], cpus[1], "the new mask sticks across a yield");
        cr_assert_eq(h.seen[2], cpus[0]);
        cr_assert_eq(h.seen[3], cpus[0]);
        cr_assert_eq(h.bad_empty, -EINVAL);
        cr_assert_eq(h.bad_prio, -EINVAL);
    }
    coro_await_t a = coro_reschedule(NULL, 0);     /* outside a job */
    cr_assert_null(a.ops);
    cr_assert_eq(a.arg[0].i, -EINVAL);
    coro_sched_destroy(s);
}

/* ---- no lost wake-up ---------------------------------------------------------------- */

Test(sched, submissions_to_parked_workers_always_complete, .timeout = 120)
{
    static const int counts[] = { 1, 2, 4, 8 };
    for (size_t k = 0; k < 4; k++) {
        coro_sched_t *s = mt_sched(counts[k]);
        long seq = 0;
        for (int round = 0; round < 25000; round++) {
            struct ordered o = { .seq = &seq };
            cr_assert_eq(block_on_r(s, &o.co, ordered_body, NULL), 0);
            if (round % 2500 == 0) {
                /* until every worker is idle, going to park (its bit in
                 * s->idle; 10 s bound) - was a sleep of 2 ms */
                for (int t = 0, all = 0; !all && t < 100000; t++) {
                    all = 1;
                    for (int i = 0; i < s->nworkers; i++)
                        all = all && (__atomic_load_n(&s->idle[i / 64], __ATOMIC_ACQUIRE) >>
                                      (i % 64) & 1);
                    if (!all)
                        usleep(100);
                }
            }
        }
        cr_assert_eq(seq, 25000);
        coro_sched_stats_t *st = malloc(sizeof *st);
        coro_sched_stats(s, st);
        uint64_t parks = st->parks;
        cr_assert_gt(parks, 0, "the workers never parked: the test proves nothing");
        free(st);
        coro_sched_destroy(s);
    }
}

/* ---- shutdown --------------------------------------------------------------------------- */

struct spawn_thread {
    coro_sched_t *s;
    struct ordered *frames;
    int n, ok, refused, other;
    long *seq;
};

static void *spawn_loop(void *arg)
{
    struct spawn_thread *t = arg;
    for (int i = 0; i < t->n; i++) {
        t->frames[i].seq = t->seq;
        int rc = coro_spawn(t->s, &t->frames[i].co, ordered_body, NULL);
        if (rc == 0)
            t->ok++;
        else if (rc == -ESHUTDOWN)
            t->refused++;
        else
            t->other++;
        if (rc == -ESHUTDOWN && t->refused > 100)
            break;
    }
    return NULL;
}

static void shutdown_race(int workers, int mode)
{
    enum { T = 4, N = 200000 };
    coro_sched_t *s = mt_sched(workers);
    struct spawn_thread th[T];
    pthread_t tid[T];
    long seq = 0;

    for (int i = 0; i < T; i++) {
        th[i] = (struct spawn_thread){ .s = s, .n = N, .seq = &seq };
        th[i].frames = calloc(N, sizeof(struct ordered));
        pthread_create(&tid[i], NULL, spawn_loop, &th[i]);
    }
    /* shut down while they spawn: once some spawned job ran (was: a 5 ms
     * sleep) */
    cr_assert(wait_for(&seq, 1, 10000), "no spawn ran");
    cr_assert_eq(coro_sched_shutdown(s, mode), 0);
    long at_shutdown = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
    long ok = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(tid[i], NULL);
        cr_assert_eq(th[i].other, 0);
        ok += th[i].ok;
        for (int k = 0; k < N; k++) {
            uint32_t st = th[i].frames[k].co.state & 7;
            /* ran (DONE) or refused (untouched), never anything between */
            cr_assert(st == 4 || st == 0, "frame state %u", st);
            cr_assert_eq(st == 4, th[i].frames[k].at >= 0 && th[i].frames[k].co.fn != NULL);
        }
        free(th[i].frames);
    }
    cr_assert_eq(at_shutdown, ok, "every accepted spawn ran before shutdown returned");
    cr_assert_eq(seq, ok);
    coro_sched_destroy(s);
}

Test(sched, shutdown_while_4_threads_spawn_runs_or_refuses_every_spawn, .timeout = 120)
{
    shutdown_race(1, CORO_DRAIN);
    shutdown_race(2, CORO_DRAIN);
    shutdown_race(4, CORO_CANCEL);
    shutdown_race(8, CORO_CANCEL);
}

struct cwaiter {
    coro_t co;
    coro_t *target;
    intptr_t got;
    int resumed;
};

static int cwait_body(coro_t *co)
{
    struct cwaiter *w = CORO_SELF(co, struct cwaiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done(w->target));
    w->got = CORO_RESULT(co);
    w->resumed++;
    CORO_AWAIT(co, coro_done(w->target));      /* after cancel: at once */
    if (CORO_RESULT(co) != -ECANCELED)
        w->got = 1;
    CORO_END(co);
}

static int never_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

Test(sched, cancel_resumes_10000_suspended_jobs_once_with_ecanceled, .timeout = 60)
{
    enum { N = 10000 };
    static const int counts[] = { 1, 2, 4, 8 };
    for (size_t k = 0; k < 4; k++) {
        coro_sched_t *s = mt_sched(counts[k]), *idle;
        coro_sched_config_t c = { .workers = 0 };
        cr_assert_eq(coro_sched_create(&idle, &c), 0);
        coro_t gate = { 0 };
        struct cwaiter *w = calloc(N, sizeof *w);
        cr_assert_eq(coro_spawn(idle, &gate, never_body, NULL), 0);
        for (int i = 0; i < N; i++) {
            w[i].target = &gate;
            cr_assert_eq(coro_spawn(s, &w[i].co, cwait_body, NULL), 0);
        }
        /* every waiter suspended in coro_done (was: a 20 ms sleep; one that
         * had not would get -ECANCELED at its await all the same) */
        for (int i = 0, t = 0; i < N && t < 100000; t++) {
            if ((__atomic_load_n(&w[i].co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) ==
                CORO__S_SUSPENDED)
                i++;
            else
                usleep(100);
        }
        cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(w[i].got, -ECANCELED, "job %d got %ld", i, (long)w[i].got);
            cr_assert_eq(w[i].resumed, 1);
        }
        coro_sched_destroy(s);
        coro_sched_destroy(idle);
        free(w);
    }
}

/* ---- bad input ------------------------------------------------------------------------------ */

Test(sched, bad_masks_and_priorities_are_refused_and_create_no_job, .timeout = 30)
{
    coro_sched_t *s = mt_sched(2);
    coro_cpuset_t empty, nowhere;
    coro_t co = { 0 };

    coro_cpuset_zero(&empty);
    coro_cpuset_zero(&nowhere);
    coro_cpuset_add(&nowhere, CORO_MAX_CPUS - 1);
    coro_spawn_opts_t o1 = { .affinity = &empty }, o2 = { .affinity = &nowhere },
                      o3 = { .priority = 2 }, o4 = { .priority = -2 };
    cr_assert_eq(coro_spawn(s, &co, never_body, &o1), -EINVAL);
    cr_assert_eq(coro_spawn(s, &co, never_body, &o2), -EINVAL);
    cr_assert_eq(coro_spawn(s, &co, never_body, &o3), -EINVAL);
    cr_assert_eq(coro_spawn(s, &co, never_body, &o4), -EINVAL);
    cr_assert_eq(coro_cpuset_add(&nowhere, CORO_MAX_CPUS), -EINVAL);
    cr_assert_eq(co.state, 0);
    cr_assert_eq(join_r(&co), -EINVAL);
    coro_sched_stats_t *st = malloc(sizeof *st);
    coro_sched_stats(s, st);
    cr_assert_eq(st->live_jobs, 0);
    cr_assert_eq(st->workers, 2);
    free(st);
    cr_assert_eq(coro_sched_run(s), -EINVAL, "coro_sched_run is for single-threaded mode");
    coro_sched_destroy(s);
}

Test(sched, more_workers_than_cpus_share_them_round_robin, .timeout = 30)
{
    int cpus[CORO_MAX_CPUS], n = usable_cpus(cpus, CORO_MAX_CPUS);
    coro_sched_t *s = mt_sched(16);
    coro_sched_stats_t *st = malloc(sizeof *st);

    cr_assert_eq(coro_sched_workers(s), 16);
    coro_sched_stats(s, st);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(wstat(s, i).cpu, cpus[i % n]);
    free(st);
    coro_sched_destroy(s);
}

/* ---- coro_call: two jobs call one idle child frame at once ----------------------------- */

struct shared_child {
    coro_t co;
    int inside;                 /* atomic: bodies running it now */
    int overlap;                /* atomic: a second body ran at once */
    long runs;                  /* atomic */
    int k;
};

struct caller {
    coro_t co;
    struct shared_child *child;
    intptr_t got;
};

static int shared_child_body(coro_t *co)
{
    struct shared_child *c = CORO_SELF(co, struct shared_child);
    CORO_BEGIN(co);
    if (__atomic_add_fetch(&c->inside, 1, __ATOMIC_ACQ_REL) > 1)
        __atomic_store_n(&c->overlap, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->runs, 1, __ATOMIC_RELAXED);
    for (c->k = 0; c->k < 3; c->k++)
        CORO_YIELD(co);
    __atomic_sub_fetch(&c->inside, 1, __ATOMIC_ACQ_REL);
    CORO_RETURN(co, 7);
    CORO_END(co);
}

static int caller_body(coro_t *co)
{
    struct caller *c = CORO_SELF(co, struct caller);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_call(&c->child->co, shared_child_body));
    c->got = CORO_RESULT(co);
    CORO_END(co);
}

static void call_race(int workers, int callers, int rounds)
{
    coro_sched_t *s = mt_sched(workers);
    struct caller cl[8];
    struct shared_child child;
    long ran = 0, busy = 0;

    memset(&child, 0, sizeof child);
    for (int r = 0; r < rounds; r++) {
        memset(cl, 0, sizeof cl);
        for (int i = 0; i < callers; i++) {
            cl[i].child = &child;
            cr_assert_eq(coro_spawn(s, &cl[i].co, caller_body, NULL), 0);
        }
        for (int i = 0; i < callers; i++) {
            cr_assert_eq(join_r(&cl[i].co), 0);
            if (cl[i].got == 7)
                ran++;
            else if (cl[i].got == -EBUSY)
                busy++;
            else
                cr_assert_fail("round %d caller %d got %ld", r, i, (long)cl[i].got);
        }
        cr_assert_eq(child.overlap, 0, "%d workers, round %d: two jobs ran one child frame at once",
                     workers, r);
    }
    cr_assert_eq(ran, child.runs, "%d workers: %ld calls returned the result, the body ran %ld times",
                 workers, ran, child.runs);
    cr_assert_eq(ran + busy, (long)callers * rounds);
    cr_log_info("%d workers: %ld ran, %ld -EBUSY", workers, ran, busy);
    coro_sched_destroy(s);
}

Test(sched, two_jobs_calling_one_idle_child_frame_one_runs_it_the_other_gets_ebusy, .timeout = 20)
{
    call_race(0, 2, 200);
    call_race(1, 2, 200);
    call_race(2, 2, 3000);
    call_race(4, 4, 3000);
}

/* ---- single-threaded mode: two threads in coro_join at once --------------------------- */

struct evjob {
    coro_t co;
    coro_event_t *wait, *set;
    int64_t sleep;
    intptr_t ret;
};

static int evjob_body(coro_t *co)
{
    struct evjob *e = CORO_SELF(co, struct evjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(e->wait, CORO_FOREVER));
    if (e->set)
        coro_event_set(e->set);
    if (e->sleep) {
        CORO_AWAIT(co, coro_sleep(e->sleep));
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
    }
    CORO_RETURN(co, e->ret);
    CORO_END(co);
}

struct st_join2 {
    coro_sched_t *s;
    struct evjob *b;
    coro_event_t *go;
    intptr_t got;
};

static bool spin_until(uint32_t *word, uint32_t mask, int ms)
{
    for (int i = 0; i < ms * 10; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) & mask)
            return true;
        usleep(100);
    }
    return false;
}

static void *joiner_b(void *arg)
{
    struct st_join2 *t = arg;
    /* join B only while the main thread drives (bit 0 of the drive word) */
    spin_until(&t->s->w[0]->started_st, 1, 10000);
    t->got = join_r(&t->b->co);
    return NULL;
}

static void *setter(void *arg)
{
    struct st_join2 *t = arg;
    /* once the joiner of B waits for the drive (it registered); bounded,
     * so that the old code, which has no registration, gets there too */
    spin_until(&t->s->w[0]->started_st, CORO__DRIVE_WMASK, 1000);
    coro_event_set(t->go);
    return NULL;
}

Test(sched, single_threaded_a_second_joiner_runs_its_job_after_the_driver_returns, .timeout = 15)
{
    for (int round = 0; round < 20; round++) {
        coro_sched_config_t c = { .workers = 0 };
        coro_sched_t *s;
        coro_event_t go, a_done;
        struct evjob a = { .wait = &go, .set = &a_done, .ret = 1 };
        struct evjob b = { .wait = &a_done, .sleep = 2000000, .ret = 2 };
        struct st_join2 t = { .b = &b, .go = &go };
        pthread_t tb, ts;

        cr_assert_eq(coro_sched_create(&s, &c), 0);
        coro_event_init(&go);
        coro_event_init(&a_done);
        t.s = s;
        cr_assert_eq(coro_spawn(s, &a.co, evjob_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &b.co, evjob_body, NULL), 0);
        cr_assert_eq(pthread_create(&tb, NULL, joiner_b, &t), 0);
        cr_assert_eq(pthread_create(&ts, NULL, setter, &t), 0);
        /* this thread drives until A is done; B still sleeps then: the
         * thread joining B must get it run (its timer included) */
        cr_assert_eq(join_r(&a.co), 1);
        pthread_join(tb, NULL);
        pthread_join(ts, NULL);
        cr_assert_eq(t.got, 2, "round %d: B's joiner got %ld", round, (long)t.got);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&go);
        coro_event_destroy(&a_done);
    }
}

/* ---- a job that yields forever must not starve timers ---------------------------------- */

struct yielder {
    coro_t co;
    int *stop;
    long n;
};

static int yielder_body(coro_t *co)
{
    struct yielder *y = CORO_SELF(co, struct yielder);
    CORO_BEGIN(co);
    while (!__atomic_load_n(y->stop, __ATOMIC_ACQUIRE)) {
        y->n++;
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct sleeper {
    coro_t co;
    int *stop;
    intptr_t got;
};

static int sleeper_body(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(10000000));       /* 10 ms */
    z->got = CORO_RESULT(co);
    __atomic_store_n(z->stop, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

Test(sched, a_job_that_keeps_yielding_does_not_starve_a_10ms_sleep, .timeout = 20)
{
    static const int wk[] = { 0, 1, 2, 4 };
    for (unsigned k = 0; k < 4; k++) {
        coro_sched_t *s;
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        int stop = 0;
        struct yielder y = { .stop = &stop };
        struct sleeper z = { .stop = &stop, .got = -1 };

        c.workers = wk[k];
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        cr_assert_eq(coro_spawn(s, &y.co, yielder_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &z.co, sleeper_body, NULL), 0);
        cr_assert_eq(join_r(&y.co), 0);
        cr_assert_eq(join_r(&z.co), 0);
        cr_assert_eq(z.got, 0);
        cr_log_info("%d workers: %ld yields while the sleep ran", wk[k], y.n);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- on_exit runs as part of the job: blocking calls get -EDEADLK ---------------------- */

static coro_t exit_done_job;
static coro_event_t exit_never;
static intptr_t exit_rc_join, exit_rc_wait, exit_rc_block, exit_rc_run;

static void exit_hook(coro_t *co)
{
    (void)co;
    exit_rc_join = join_r(&exit_done_job);
    exit_rc_wait = coro_event_wait_blocking(&exit_never, 0);
    exit_rc_block = block_on_r(coro_sched_current() ? coro_sched_current() : co->sched,
                                  &exit_done_job, never_body, NULL);
    exit_rc_run = coro_sched_run(co->sched);
}

Test(sched, blocking_calls_in_an_on_exit_hook_get_edeadlk, .timeout = 30)
{
    static const int wk[] = { 0, 1, 2, 4 };
    for (unsigned k = 0; k < 4; k++) {
        coro_sched_t *s;
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_t job = { 0 };
        coro_spawn_opts_t o = { .on_exit = exit_hook };

        c.workers = wk[k];
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        memset(&exit_done_job, 0, sizeof exit_done_job);
        coro_event_init(&exit_never);
        exit_rc_join = exit_rc_wait = exit_rc_block = exit_rc_run = 1;
        cr_assert_eq(block_on_r(s, &exit_done_job, never_body, NULL), 0);  /* DONE */
        cr_assert_eq(coro_spawn(s, &job, never_body, &o), 0);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);      /* on_exit has run */
        cr_assert_eq(exit_rc_join, -EDEADLK, "%d workers: coro_join in on_exit: %s", wk[k],
                     coro_err_name((int)exit_rc_join));
        cr_assert_eq(exit_rc_wait, -EDEADLK, "%d workers: a blocking wait in on_exit: %s", wk[k],
                     coro_err_name((int)exit_rc_wait));
        cr_assert_eq(exit_rc_block, -EDEADLK, "%d workers: coro_block_on in on_exit: %s", wk[k],
                     coro_err_name((int)exit_rc_block));
        cr_assert_eq(exit_rc_run, wk[k] ? -EINVAL : -EDEADLK,
                     "%d workers: coro_sched_run in on_exit: %s", wk[k],
                     coro_err_name((int)exit_rc_run));
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&exit_never);
    }
}

/* ---- the scheduler and worker structs are 64-byte aligned ------------------------------ */

/* an allocator that returns blocks 16 bytes past a 64-byte boundary, the
 * worst a malloc may do, and counts what is live */
static long odd_live;

static void *odd_malloc(void *ctx, size_t n)
{
    (void)ctx;
    char *raw = malloc(n + 128);
    if (!raw)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + 64 + 63) & ~(uintptr_t)63) + 16;
    memcpy(p - 16, &raw, sizeof raw);
    /* relaxed: a counter; called from several threads at once */
    __atomic_add_fetch(&odd_live, 1, __ATOMIC_RELAXED);
    return p;
}

static void odd_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    char *raw;
    (void)n;
    memcpy(&raw, (char *)p - 16, sizeof raw);
    __atomic_sub_fetch(&odd_live, 1, __ATOMIC_RELAXED);
    free(raw);
}

Test(sched, scheduler_and_worker_structs_are_64_byte_aligned_with_any_allocator, .timeout = 30)
{
    static const int wk[] = { 0, 1, 2, 4 };
    coro_alloc_t odd = { .alloc = odd_malloc, .free = odd_free };

    for (int a = 0; a < 2; a++) {
        for (unsigned k = 0; k < 4; k++) {
            coro_sched_t *s;
            coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
            coro_t job = { 0 };

            c.workers = wk[k];
            c.alloc = a ? &odd : NULL;
            odd_live = 0;
            cr_assert_eq(coro_sched_create(&s, &c), 0);
            cr_assert_eq((uintptr_t)s % 64, 0, "%s, %d workers: scheduler at %p",
                         a ? "odd allocator" : "malloc", wk[k], (void *)s);
            for (int i = 0; i < (wk[k] ? wk[k] : 1); i++)
                cr_assert_eq((uintptr_t)s->w[i] % 64, 0, "%s, %d workers: worker %d at %p",
                             a ? "odd allocator" : "malloc", wk[k], i, (void *)s->w[i]);
            cr_assert_eq(block_on_r(s, &job, never_body, NULL), 0);
            cr_assert_eq(coro_sched_destroy(s), 0);
            cr_assert_eq(odd_live, 0, "%ld blocks leaked", odd_live);
        }
    }
}
