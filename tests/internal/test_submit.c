/* SPDX-License-Identifier: MIT */
/* Where spawned jobs go (lib/sched/worker.c, lib/sched/frame.c): a plain
 * thread's submission ring - one per thread and scheduler, handed to the
 * next thread when its thread exits, spilling into the inboxes when full -
 * and a chain of spawns, which stays on its worker. */
#include "rt/rt.h"
#include "white_box.h"

#include <corokit/sync.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cnt_job {
    coro_t co;
    atomic_long *n;
};

static int count_body(coro_t *co)
{
    struct cnt_job *j = CORO_SELF(co, struct cnt_job);
    CORO_BEGIN(co);
    atomic_fetch_add_explicit(j->n, 1, memory_order_relaxed);
    CORO_END(co);
}

/* n fire-and-forget jobs in pool frames, spawned from the calling thread */
static void spawn_counted(coro_sched_t *s, atomic_long *n, long count)
{
    for (long i = 0; i < count; i++) {
        struct cnt_job *j = coro_frame_alloc(s, sizeof *j);
        cr_assert_not_null(j);
        j->n = n;
        cr_assert_eq(coro_spawn(s, &j->co, count_body, NULL), 0);
    }
}

struct spawner_arg {
    coro_sched_t *s;
    atomic_long *n;
    long count;
};

static void *spawner_main(void *arg)
{
    struct spawner_arg *a = arg;
    spawn_counted(a->s, a->n, a->count);
    return NULL;        /* exits at once: its ring may still hold jobs */
}

/* a job that keeps its worker until released (it never awaits) */
struct blocker {
    coro_t co;
    atomic_int started, release;
};

static int blocker_body(coro_t *co)
{
    struct blocker *b = CORO_SELF(co, struct blocker);
    CORO_BEGIN(co);
    atomic_store(&b->started, 1);
    while (!atomic_load(&b->release))
        usleep(50);
    CORO_END(co);
}

static void wait_started(struct blocker *b)
{
    int64_t end = coro_now() + 20000000000LL;
    while (!atomic_load(&b->started)) {
        cr_assert_lt(coro_now(), end, "the blocker never started");
        sched_yield();
    }
}

static int count_rings(coro_sched_t *s)
{
    int n = 0;
    /* acquire: as the workers read the list */
    for (struct coro__subring *x = __atomic_load_n(&s->subrings, __ATOMIC_ACQUIRE); x; x = x->next)
        n++;
    return n;
}

Test(submit, jobs_from_threads_that_exit_at_once_all_run_and_their_rings_are_reused,
     .timeout = 120)
{
    for (int workers = 0; workers <= 2; workers++) {
        coro_sched_t *s = mk(workers);
        atomic_long n = 0;
        const int rounds = 4, threads = 4;
        const long per = 5000;

        if (workers == 0) {
            /* single-threaded: a thread drives while the others submit */
            spawn_counted(s, &n, 1);
        }
        for (int r = 0; r < rounds; r++) {
            pthread_t t[4];
            struct spawner_arg a = { s, &n, per };
            for (int i = 0; i < threads; i++)
                cr_assert_eq(pthread_create(&t[i], NULL, spawner_main, &a), 0);
            for (int i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
            if (workers == 0)
                cr_assert_geq(coro_sched_run(s), 0);
        }
        /* exited threads' rings went to the next threads: never more rings
         * than threads alive at once (16 without the hand-over), plus the
         * main thread's */
        cr_assert_leq(count_rings(s), threads + 1, "workers %d: %d rings", workers,
                      count_rings(s));
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        cr_assert_eq(atomic_load(&n), (long)rounds * threads * per + (workers == 0),
                     "workers %d: %ld jobs ran", workers, atomic_load(&n));
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* a job that logs its number (one worker: no race) */
struct ord_job {
    coro_t co;
    long id;
    long *log;
    atomic_long *n;
};

static int ord_body(coro_t *co)
{
    struct ord_job *j = CORO_SELF(co, struct ord_job);
    CORO_BEGIN(co);
    j->log[atomic_fetch_add_explicit(j->n, 1, memory_order_relaxed)] = j->id;
    CORO_END(co);
}

/* A burst past the ring's size: the thread moves the ring's older half to
 * the global queue with one CAS and one lock (before: one inbox lock per
 * job past the ring).  Every job runs once, in the order it was spawned
 * (one worker: the global queue is looked at before the rings).  The
 * first version of the move pushed each job that fitted twice: every job
 * ran twice. */
Test(submit, a_full_ring_moves_its_older_half_to_the_global_queue_and_keeps_order,
     .timeout = 60)
{
    coro_sched_t *s = mk(1);
    struct blocker b = { 0 };
    atomic_long n = 0;
    const long count = 3 * CORO__XQ_SIZE + 7;
    long *log = calloc((size_t)count + 64, sizeof *log);
    cr_assert_not_null(log);

    cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
    wait_started(&b);
    for (long i = 0; i < count; i++) {
        struct ord_job *j = coro_frame_alloc(s, sizeof *j);
        cr_assert_not_null(j);
        j->id = i;
        j->log = log;
        j->n = &n;
        cr_assert_eq(coro_spawn(s, &j->co, ord_body, NULL), 0);
    }
    coro_sched_stats_t st;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    cr_assert_eq(st.global_depth, (uint64_t)count, "global_depth %lu",
                 (unsigned long)st.global_depth);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_geq(coro_sched_dump(s, f), CORO__XQ_SIZE / 2);
    fclose(f);
    cr_assert_not_null(strstr(buf, "submission ring"), "%s", buf);
    free(buf);
    atomic_store(&b.release, 1);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(atomic_load(&n), count, "%ld runs of %ld jobs", atomic_load(&n), count);
    for (long i = 0; i < count; i++)
        cr_assert_eq(log[i], i, "job %ld ran %ldth", log[i], i);
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(log);
}

Test(submit, jobs_left_in_the_ring_of_a_thread_that_exited_still_run, .timeout = 60)
{
    coro_sched_t *s = mk(1);
    struct blocker b = { 0 };
    atomic_long n = 0;
    struct spawner_arg a = { s, &n, 500 };
    pthread_t t;

    cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
    wait_started(&b);
    cr_assert_eq(pthread_create(&t, NULL, spawner_main, &a), 0);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&n), 0, "the only worker is blocked");
    atomic_store(&b.release, 1);
    /* bounded: the worker runs them without any other submission */
    int64_t end = coro_now() + 20000000000LL;
    while (atomic_load(&n) < 500) {
        cr_assert_lt(coro_now(), end, "%ld of 500 ran", atomic_load(&n));
        sched_yield();
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- a chain of spawns ------------------------------------------------------ */

struct link {
    coro_t co;
    long left;
    coro_event_t *done;
};

static int link_body(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    if (l->left == 0) {
        coro_event_set(l->done);
    } else {
        struct link *next = coro_frame_alloc(coro_sched_current(), sizeof *next);
        cr_assert_not_null(next);
        next->left = l->left - 1;
        next->done = l->done;
        cr_assert_eq(coro_spawn(coro_sched_current(), &next->co, link_body, NULL), 0);
    }
    CORO_END(co);
}

/* the chain's first job: starts it, then waits for its end */
struct chain {
    coro_t co;
    long len;
    coro_event_t done;
};

static int chain_body(coro_t *co)
{
    struct chain *c = CORO_SELF(co, struct chain);
    CORO_BEGIN(co);
    {
        struct link *first = coro_frame_alloc(coro_sched_current(), sizeof *first);
        cr_assert_not_null(first);
        first->left = c->len;
        first->done = &c->done;
        cr_assert_eq(coro_spawn(coro_sched_current(), &first->co, link_body, NULL), 0);
    }
    CORO_AWAIT(co, coro_event_wait(&c->done, CORO_FOREVER));
    CORO_END(co);
}

static uint64_t moves(coro_sched_t *s)
{
    uint64_t m = 0;
    for (int i = 0; i < 2; i++) {
        coro_worker_stats_t w;
        cr_assert_eq(coro_sched_worker_stats(s, i, &w), 0);
        m += w.steals + w.wakeups;
    }
    return m;
}

/* Each job spawns the next and ends: the next waits in its worker's LIFO
 * slot, and that worker runs it.  Before the fix one job in four went
 * through a failed search for work, after which its worker, the last
 * searcher to find work, woke the parked one: hundreds of wake-ups per
 * 20,000 jobs, and with a thief taking the slot at once, thousands of
 * moves of the chain between the CPUs. */
Test(submit, a_chain_of_spawns_stays_on_its_worker, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    static struct chain c;

    for (int round = 0; round < 5; round++) {
        uint64_t m0 = moves(s);
        c.len = 20000;
        coro_event_init(&c.done);
        cr_assert_geq(block_on_r(s, &c.co, chain_body, NULL), 0);
        coro_event_destroy(&c.done);
        uint64_t m = moves(s) - m0;
        /* a steal needs the chain's worker off its CPU for 5 us with the
         * other awake and looking; a wake-up, a job queued elsewhere (the
         * first job's and the waiter's wake-ups are among them) */
        cr_assert_lt(m, 50, "round %d: %lu steals and wake-ups in a chain of %ld", round,
                     (unsigned long)m, c.len);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- the jobs one step spawns run in the order it spawned them ------------- */

enum { BURST = 200 };   /* under the local ring's 256: nothing overflows */

struct seq_job {
    coro_t co;
    int id;
    int *log, *n;
};

static int seq_body(coro_t *co)
{
    struct seq_job *j = CORO_SELF(co, struct seq_job);
    CORO_BEGIN(co);
    j->log[(*j->n)++] = j->id;      /* one worker: no race */
    CORO_END(co);
}

struct burst {
    coro_t co;
    int log[BURST], n;
};

static int burst_body(coro_t *co)
{
    struct burst *b = CORO_SELF(co, struct burst);
    CORO_BEGIN(co);
    for (int i = 0; i < BURST; i++) {
        struct seq_job *j = coro_frame_alloc(coro_sched_current(), sizeof *j);
        cr_assert_not_null(j);
        j->id = i;
        j->log = b->log;
        j->n = &b->n;
        cr_assert_eq(coro_spawn(coro_sched_current(), &j->co, seq_body, NULL), 0);
    }
    CORO_END(co);
}

/* A step's first job goes to the LIFO slot, its later ones to the ring
 * behind it.  Before, every spawn took the slot and pushed the one before
 * into the ring: the last job ran first (199, 0, 1, ..., 198), and a burst
 * paid one locked exchange per job. */
Test(submit, the_jobs_one_step_spawns_run_in_the_order_it_spawned_them)
{
    coro_sched_t *s = mk(1);
    for (int round = 0; round < 3; round++) {
        static struct burst b;
        memset(&b, 0, sizeof b);
        cr_assert_geq(block_on_r(s, &b.co, burst_body, NULL), 0);
        /* block_on returns when the spawner ends; its jobs may still run */
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0, "drain");
        cr_assert_eq(b.n, BURST, "round %d: %d of %d jobs ran", round, b.n, BURST);
        for (int i = 0; i < BURST; i++)
            cr_assert_eq(b.log[i], i, "round %d: job %d ran %dth", round, b.log[i], i);
        cr_assert_eq(coro_sched_destroy(s), 0);
        s = mk(1);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- a burst from a plain thread gets a worker per job ---------------------- */

static atomic_int burst_started, burst_release;

static int spin_body(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_fetch_add(&burst_started, 1);
    while (!atomic_load(&burst_release))
        sched_yield();      /* keeps its worker (never awaits) */
    CORO_END(co);
}

static atomic_int warm_go, warm_in;

/* ends when the test starts its burst: its worker searches meanwhile */
static int warm_body(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_store(&warm_in, 1);
    while (!atomic_load(&warm_go))
        ;
    CORO_END(co);
}

static void wait_running(void)
{
    int64_t end = coro_now() + 20000000000LL;
    while (!atomic_load(&warm_in)) {
        cr_assert_lt(coro_now(), end, "the job never ran");
        sched_yield();
    }
}

/* As many jobs as workers, each keeping its worker, spawned at once from a
 * plain thread right after a worker finished a job (it is still searching
 * when they come): every job must get a worker.  The notifies of the
 * burst see the searcher and wake nobody; the searcher takes half of the
 * ring and wakes one worker, which took one job and woke nobody: two
 * jobs waited behind the spinning ones for good, two workers parked. */
Test(submit, a_burst_from_a_plain_thread_gets_a_worker_per_job, .timeout = 120)
{
    for (int workers = 2; workers <= 4; workers += 2) {
        coro_sched_t *s = mk(workers);
        coro_t *jobs = calloc((size_t)workers, sizeof *jobs);
        cr_assert_not_null(jobs);
        for (int round = 0; round < 200; round++) {
            coro_t warm = { 0 };
            atomic_store(&burst_started, 0);
            atomic_store(&burst_release, 0);
            atomic_store(&warm_go, 0);
            atomic_store(&warm_in, 0);
            memset(jobs, 0, (size_t)workers * sizeof *jobs);
            /* a job that ends as the burst comes: its worker searches */
            cr_assert_eq(coro_spawn(s, &warm, warm_body, NULL), 0);
            wait_running();
            atomic_store(&warm_go, 1);
            for (int i = 0; i < workers; i++)
                cr_assert_eq(coro_spawn(s, &jobs[i], spin_body, NULL), 0);
            int64_t end = coro_now() + 20000000000LL;
            while (atomic_load(&burst_started) < workers) {
                cr_assert_lt(coro_now(), end, "workers %d, round %d: %d of %d jobs started",
                             workers, round, atomic_load(&burst_started), workers);
                sched_yield();
            }
            atomic_store(&burst_release, 1);
            cr_assert_eq(join_r(&warm), 0);
            for (int i = 0; i < workers; i++)
                cr_assert_eq(join_r(&jobs[i]), 0);
        }
        free(jobs);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- spawns meet parked workers (sched/worker.c PARKING) ----------------- */

static uint64_t sum_stat(coro_sched_t *s, int workers, bool wakeups)
{
    uint64_t n = 0;
    for (int i = 0; i < workers; i++) {
        coro_worker_stats_t ws;
        cr_assert_eq(coro_sched_worker_stats(s, i, &ws), 0);
        n += wakeups ? ws.wakeups : ws.parks;
    }
    return n;
}

/* rounds of 1-8 jobs from this thread, each round spawned once a worker
 * parked again after the last: every push races a worker's park */
static void bursts_meet_parks(coro_sched_t *s, int workers, int rounds)
{
    atomic_long n = 0;
    long want = 0;
    for (int round = 0; round < rounds; round++) {
        uint64_t parks = sum_stat(s, workers, false);
        long k = 1 + round % 8;
        spawn_counted(s, &n, k);
        want += k;
        int64_t end = coro_now() + 20000000000LL;
        while (atomic_load(&n) < want) {
            cr_assert_lt(coro_now(), end, "round %d: %ld of %ld jobs ran (use_membarrier %d)", round,
                         atomic_load(&n), want, s->use_membarrier);
            sched_yield();
        }
        /* the worker that ran them parks again before the next round */
        while (sum_stat(s, workers, false) == parks) {
            cr_assert_lt(coro_now(), end, "round %d: no worker parked", round);
            sched_yield();
        }
    }
}

/* what coro_sched_create should pick: membarrier's fast path when the
 * kernel offers it and the environment does not turn it off */
static bool kernel_has_membarrier(void)
{
#ifdef SYS_membarrier
    long q = syscall(SYS_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0);
    return q > 0 && (q & 8 /* PRIVATE_EXPEDITED */) && (q & 16 /* REGISTER_ */);
#else
    return false;
#endif
}

Test(submit, spawns_from_a_plain_thread_that_meet_parking_workers_all_run_in_both_fence_modes,
     .timeout = 240)
{
    for (int off = 0; off <= 1; off++) {
        if (off)
            setenv("COROKIT_MEMBARRIER", "0", 1);
        else
            unsetenv("COROKIT_MEMBARRIER");
        for (int workers = 1; workers <= 3; workers += 2) {
            coro_sched_t *s = mk(workers);
            cr_assert_eq(s->use_membarrier, !off && kernel_has_membarrier(),
                         "COROKIT_MEMBARRIER=%s: use_membarrier %d", off ? "0" : "(unset)", s->use_membarrier);
            bursts_meet_parks(s, workers, 400);
            cr_assert_eq(coro_sched_destroy(s), 0);
        }
    }
    /* a single-threaded scheduler keeps the fence */
    unsetenv("COROKIT_MEMBARRIER");
    coro_sched_t *st = mk(0);
    cr_assert_not(st->use_membarrier);
    cr_assert_eq(coro_sched_destroy(st), 0);
}

Test(submit, a_failed_membarrier_parks_with_a_timeout_and_loses_no_job, .timeout = 120)
{
    unsetenv("COROKIT_MEMBARRIER");
    if (!kernel_has_membarrier())
        cr_skip_test("no membarrier(2) here: the fence path is the only one");
    coro_sched_t *s = mk(2);
    cr_assert(s->use_membarrier);
    coro__membarrier_fail = true;
    bursts_meet_parks(s, 2, 200);
    /* idle now: a parked worker whose membarrier failed wakes on its own
     * (every CORO__LIFO_PARK_NS, 1 ms) and parks again; with the call
     * working it sleeps until someone wakes it */
    uint64_t w0 = sum_stat(s, 2, true);
    int64_t end = coro_now() + 20000000000LL;
    while (sum_stat(s, 2, true) < w0 + 5) {
        cr_assert_lt(coro_now(), end, "the parked workers never woke on their own");
        usleep(1000);
    }
    coro__membarrier_fail = false;
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* bits set in the map of rings that may hold work (sched/worker.c RINGS) */
static int listed_rings(coro_sched_t *s)
{
    int n = 0;
    for (int k = 0; k < CORO__XQ_WORDS; k++)
        n += __builtin_popcountll(__atomic_load_n(&s->subring_bits[k], __ATOMIC_SEQ_CST));
    return n;
}

struct many_arg {
    coro_sched_t *s;
    atomic_long *n;
    pthread_barrier_t *go, *stay;
};

static void *many_main(void *arg)
{
    struct many_arg *a = arg;
    pthread_barrier_wait(a->go);
    spawn_counted(a->s, a->n, 40);
    pthread_barrier_wait(a->stay);      /* alive until the check is done */
    return NULL;
}

Test(submit, rings_of_many_live_threads_leave_the_map_once_drained_in_both_fence_modes,
     .timeout = 240)
{
    enum { THREADS = 150 };     /* three words of the map */
    for (int off = 0; off <= 1; off++) {
        if (off)
            setenv("COROKIT_MEMBARRIER", "0", 1);
        else
            unsetenv("COROKIT_MEMBARRIER");
        coro_sched_t *s = mk(2);
        atomic_long n = 0;
        pthread_t t[THREADS];
        pthread_barrier_t go, stay;
        struct many_arg a = { s, &n, &go, &stay };
        pthread_barrier_init(&go, NULL, THREADS);
        pthread_barrier_init(&stay, NULL, THREADS + 1);
        for (int i = 0; i < THREADS; i++)
            cr_assert_eq(pthread_create(&t[i], NULL, many_main, &a), 0);
        int64_t end = coro_now() + 60000000000LL;
        while (atomic_load(&n) < (long)THREADS * 40) {
            cr_assert_lt(coro_now(), end, "%ld of %d jobs ran (use_membarrier %d)", atomic_load(&n),
                         THREADS * 40, s->use_membarrier);
            usleep(1000);
        }
        /* idle now: the workers park (with membarrier: the parks take the
         * empty rings off) and no ring stays on the map while its thread
         * lives on without spawning */
        while (listed_rings(s) != 0) {
            cr_assert_lt(coro_now(), end, "%d rings still on the map (use_membarrier %d)",
                         listed_rings(s), s->use_membarrier);
            usleep(1000);
        }
        pthread_barrier_wait(&stay);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        pthread_barrier_destroy(&stay);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
    unsetenv("COROKIT_MEMBARRIER");
}

struct prio_job {
    coro_t co;
    atomic_long *n;
    coro_sched_t *s;
    int depth;
};

/* spawns two children of the other priorities while depth lasts */
static int prio_body(coro_t *co)
{
    struct prio_job *j = CORO_SELF(co, struct prio_job);
    CORO_BEGIN(co);
    atomic_fetch_add_explicit(j->n, 1, memory_order_relaxed);
    for (int k = 0; k < 2 && j->depth > 0; k++) {
        struct prio_job *c = coro_frame_alloc(j->s, sizeof *c);
        cr_assert_not_null(c);
        *c = (struct prio_job){ .n = j->n, .s = j->s, .depth = j->depth - 1 };
        coro_spawn_opts_t o = { .priority = k ? CORO_PRIO_LOW : CORO_PRIO_HIGH };
        cr_assert_eq(coro_spawn(j->s, &c->co, prio_body, &o), 0);
    }
    if (j->depth % 3 == 0)
        CORO_YIELD(co);
    CORO_END(co);
}

/* the counts of HIGH and LOW jobs (sched/worker.c PRIORITIES) */
static uint64_t prio_counts(coro_sched_t *s)
{
    uint64_t n = __atomic_load_n(&coro__affinity_get(s, 0)->nprio, __ATOMIC_SEQ_CST);
    for (int i = 0; i < s->nslots; i++)
        n += __atomic_load_n(&s->w[i]->nprio, __ATOMIC_SEQ_CST);
    return n;
}

Test(submit, the_counts_of_high_and_low_jobs_return_to_zero_once_all_ran, .timeout = 120)
{
    for (int workers = 0; workers <= 4; workers += 2) {
        coro_sched_t *s = mk(workers);
        atomic_long n = 0;
        long want = 0;
        for (int r = 0; r < 8; r++) {
            for (int p = -1; p <= 1; p++) {
                struct prio_job *j = coro_frame_alloc(s, sizeof *j);
                cr_assert_not_null(j);
                *j = (struct prio_job){ .n = &n, .s = s, .depth = 9 };
                coro_spawn_opts_t o = { .priority = p };
                cr_assert_eq(coro_spawn(s, &j->co, prio_body, &o), 0);
                want += (1 << 10) - 1;
            }
            if (workers == 0)
                cr_assert_geq(coro_sched_run(s), 0);
        }
        int64_t end = coro_now() + 60000000000LL;
        while (atomic_load(&n) < want) {
            cr_assert_lt(coro_now(), end, "workers %d: %ld of %ld ran", workers,
                         atomic_load(&n), want);
            usleep(1000);
        }
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        cr_assert_eq(prio_counts(s), 0, "workers %d: counts %lu", workers,
                     (unsigned long)prio_counts(s));
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(submit, membarrier_is_used_up_to_8_workers_only, .timeout = 60)
{
    unsetenv("COROKIT_MEMBARRIER");
    if (sysconf(_SC_NPROCESSORS_ONLN) > CORO__MEMBARRIER_MAX_CPUS)
        cr_skip_test("more than %d online CPUs: never membarrier", CORO__MEMBARRIER_MAX_CPUS);
    coro_sched_t *s = mk(CORO__MEMBARRIER_MAX_WORKERS);
    cr_assert_eq(s->use_membarrier, kernel_has_membarrier());
    bursts_meet_parks(s, CORO__MEMBARRIER_MAX_WORKERS, 50);
    cr_assert_eq(coro_sched_destroy(s), 0);
    s = mk(CORO__MEMBARRIER_MAX_WORKERS + 1);
    cr_assert_not(s->use_membarrier, "%d workers: the full fence", CORO__MEMBARRIER_MAX_WORKERS + 1);
    bursts_meet_parks(s, CORO__MEMBARRIER_MAX_WORKERS + 1, 50);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
