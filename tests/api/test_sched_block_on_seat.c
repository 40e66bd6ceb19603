/* SPDX-License-Identifier: MIT */
/* The caller's seat: a plain thread in coro_block_on runs the root job,
 * and the "any CPU" jobs it queues, itself (sched/seat.c), while every
 * promise of test_sched_block_on.c holds - a root with a mask runs only where
 * its mask allows, jobs queued on the caller are stolen by idle workers
 * while it runs a long step, a job that suspends there and is woken after
 * the call returned still runs, one thread at a time holds the seat,
 * cancel, deadline and shutdown as for any job.  0, 1 and 2 workers
 * (with none the caller drives the scheduler, as before). */
#define _GNU_SOURCE   /* sched_getaffinity */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"

static const int counts[] = { 0, 1, 2 };
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* The seat takes a job only when every CPU the caller may run on has a
 * worker (a job's mask is cut to the workers' CPUs).  With fewer workers
 * than the test's CPUs, the test thread - and the workers it starts,
 * unpinned, which inherit its mask - keeps to the first n CPUs while the
 * scheduler lives: mk_fit, then fin_fit */
static cpu_set_t saved_cpus;

static void fit_caller(int n)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof saved_cpus, &saved_cpus), 0);
    CPU_ZERO(&set);
    for (int i = 0, k = 0; i < CPU_SETSIZE && k < (n > 0 ? n : CPU_SETSIZE); i++)
        if (CPU_ISSET(i, &saved_cpus)) {
            CPU_SET(i, &set);
            k++;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0);
}

static coro_sched_t *mk_fit(int n)
{
    fit_caller(n);
    return mk(n);
}

static void fin_fit(coro_sched_t *s)
{
    fin(s);
    cr_assert_eq(sched_setaffinity(0, sizeof saved_cpus, &saved_cpus), 0);
}

/* the steps the caller's seat ran: in coro_sched_stats' totals, in no
 * worker's counters (the seat has no index: the workers' stay 0 ..
 * workers - 1).  Read while nothing runs, so the sum is exact. */
static uint64_t seat_runs(coro_sched_t *s)
{
    coro_sched_stats_t st;
    coro_worker_stats_t w;
    uint64_t workers_ran = 0;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    for (int i = 0; i < st.workers; i++) {
        cr_assert_eq(coro_sched_worker_stats(s, i, &w), 0);
        workers_ran += w.jobs_run;
    }
    cr_assert_eq(coro_sched_worker_stats(s, st.workers, &w), -ERANGE);
    cr_assert_geq(st.jobs_run, workers_ran);
    return st.jobs_run - workers_ran;
}

/* ---- a chain runs on the calling thread ----------------------------------- */

#define CHAIN 200

struct link {
    coro_t co;
    int n;
    pthread_t *where;       /* each link's thread, by n */
    coro_event_t *end;
};

static struct link links[CHAIN];

static int link_fn(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    l->where[l->n] = pthread_self();
    if (l->n + 1 < CHAIN) {
        struct link *k = &links[l->n + 1];
        k->n = l->n + 1;
        k->where = l->where;
        k->end = l->end;
        cr_assert_eq(coro_spawn(coro_sched_current(), &k->co, link_fn, NULL), 0);
    } else {
        coro_event_set(l->end);
    }
    CORO_END(co);
}

/* Jobs that hold every worker in one step until told to go (bounded):
 * while they run, no worker is idle, so none steals from the seat.  An
 * idle worker may take a job from the seat's LIFO slot when the caller
 * is pre-empted (steal.c, steal_lifo): right, but timing, which a test
 * of where jobs run must rule out. */
static atomic_int hogs_in, hogs_go;
static coro_t hogs[8];

static int hog_fn(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_fetch_add(&hogs_in, 1);
    for (int64_t end = coro_now() + 20000000000LL; !atomic_load(&hogs_go) && coro_now() < end;)
        sched_yield();
    CORO_END(co);
}

static void hold_workers(coro_sched_t *s, int n)
{
    atomic_store(&hogs_in, 0);
    atomic_store(&hogs_go, 0);
    for (int i = 0; i < n; i++)
        cr_assert_eq(coro_spawn(s, &hogs[i], hog_fn, NULL), 0);
    for (int64_t end = coro_now() + 20000000000LL; atomic_load(&hogs_in) < n;) {
        cr_assert_lt(coro_now(), end, "the %d hogs never ran at once", n);
        sched_yield();
    }
}

static void free_workers(int n)
{
    intptr_t r;
    atomic_store(&hogs_go, 1);
    for (int i = 0; i < n; i++)
        cr_assert_eq(coro_join(&hogs[i], &r), 0);
}

struct chainer {
    coro_t co;
    pthread_t where[CHAIN];
    pthread_t self;
    coro_event_t end;
};

static int chainer_fn(coro_t *co)
{
    struct chainer *c = CORO_SELF(co, struct chainer);
    CORO_BEGIN(co);
    c->self = pthread_self();
    links[0].n = 0;
    links[0].where = c->where;
    links[0].end = &c->end;
    cr_assert_eq(coro_spawn(coro_sched_current(), &links[0].co, link_fn, NULL), 0);
    CORO_AWAIT(co, coro_event_wait(&c->end, CORO_FOREVER));
    CORO_RETURN(co, 7);
    CORO_END(co);
}

Test(sched_block_on_seat, a_chain_of_spawns_runs_on_the_calling_thread, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_fit(counts[k]);
        static struct chainer c;
        hold_workers(s, counts[k]);
        for (int r = 0; r < 20; r++) {
            memset(links, 0, sizeof links);
            cr_assert_eq(coro_event_init(&c.end), 0);
            uint64_t before = seat_runs(s);
            cr_assert_eq(block_on_r(s, &c.co, chainer_fn, NULL), 7);
            cr_assert_eq(coro_event_destroy(&c.end), 0);
            cr_assert(pthread_equal(c.self, pthread_self()), "%d workers: the root ran elsewhere",
                      counts[k]);
            for (int i = 0; i < CHAIN; i++)
                cr_assert(pthread_equal(c.where[i], pthread_self()),
                          "%d workers: link %d ran elsewhere", counts[k], i);
            if (counts[k] > 0)
                cr_assert_geq(seat_runs(s) - before, CHAIN + 1, "%d workers", counts[k]);
        }
        free_workers(counts[k]);
        fin_fit(s);
    }
}

/* ---- a root with a mask runs on the workers -------------------------------- */

struct where {
    coro_t co;
    pthread_t thread;
};

static int where_fn(coro_t *co)
{
    struct where *w = CORO_SELF(co, struct where);
    CORO_BEGIN(co);
    w->thread = pthread_self();
    CORO_RETURN(co, 5);
    CORO_END(co);
}

Test(sched_block_on_seat, a_root_with_a_mask_does_not_run_on_the_caller, .timeout = 20)
{
    cpu_set_t os;
    cr_assert_eq(sched_getaffinity(0, sizeof os, &os), 0);
    coro_cpuset_t mine;
    coro_cpuset_zero(&mine);
    for (int i = 0; i < CPU_SETSIZE && i < CORO_MAX_CPUS; i++)
        if (CPU_ISSET(i, &os))
            coro_cpuset_add(&mine, i);
    for (int workers = 1; workers <= 2; workers++) {
        coro_sched_t *s = mk_fit(workers);
        /* every CPU: the mask holds every worker, and still the caller,
         * which no mask names, does not take the job */
        coro_spawn_opts_t o = { .affinity = &mine };
        static struct where w;
        uint64_t before = seat_runs(s);
        for (int r = 0; r < 20; r++) {
            cr_assert_eq(block_on_r(s, &w.co, where_fn, &o), 5);
            cr_assert(!pthread_equal(w.thread, pthread_self()), "%d workers", workers);
        }
        cr_assert_eq(seat_runs(s), before, "%d workers", workers);
        fin_fit(s);
    }
}

/* ---- jobs queued on the caller are stolen during its long step ------------ */

struct kid {
    coro_t co;
    atomic_int *ran;
    pthread_t thread;
};

static int kid_fn(coro_t *co)
{
    struct kid *k = CORO_SELF(co, struct kid);
    CORO_BEGIN(co);
    k->thread = pthread_self();
    atomic_fetch_add(k->ran, 1);
    CORO_END(co);
}

struct long_root {
    coro_t co;
    struct kid kids[3];
    atomic_int ran;
    int seen;               /* kids that ran during the root's one step */
};

static int long_root_fn(coro_t *co)
{
    struct long_root *r = CORO_SELF(co, struct long_root);
    CORO_BEGIN(co);
    for (int i = 0; i < 3; i++) {
        r->kids[i].ran = &r->ran;
        /* the first goes to the caller's LIFO slot, the others to its ring */
        cr_assert_eq(coro_spawn(coro_sched_current(), &r->kids[i].co, kid_fn, NULL), 0);
    }
    /* one long step: the kids can only run elsewhere meanwhile */
    int64_t end = now_ns() + 5000000000LL;
    while (atomic_load(&r->ran) < 3 && now_ns() < end)
        sched_yield();
    r->seen = atomic_load(&r->ran);
    CORO_END(co);
}

Test(sched_block_on_seat, jobs_queued_on_the_caller_are_stolen_while_it_runs_a_long_step, .timeout = 30)
{
    for (int workers = 1; workers <= 2; workers++) {
        coro_sched_t *s = mk_fit(workers);
        static struct long_root r;
        memset(&r, 0, sizeof r);
        cr_assert_eq(block_on_r(s, &r.co, long_root_fn, NULL), 0);
        cr_assert_eq(r.seen, 3, "%d workers: %d of 3 kids ran during the step", workers, r.seen);
        for (int i = 0; i < 3; i++)
            cr_assert(!pthread_equal(r.kids[i].thread, pthread_self()), "%d workers: kid %d",
                      workers, i);
        coro_sched_stats_t st;
        cr_assert_eq(coro_sched_stats(s, &st), 0);
        cr_assert_geq(st.stolen, 3, "%d workers", workers);
        fin_fit(s);
    }
}

/* ---- a job that suspends on the caller runs after the call returned ------- */

struct sleeper {
    coro_t co;
    coro_event_t *ev;
    pthread_t first, second;
};

static int sleeper_fn(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    z->first = pthread_self();
    if (z->ev)
        CORO_AWAIT(co, coro_event_wait(z->ev, CORO_FOREVER));
    else
        CORO_AWAIT(co, coro_sleep(20 * 1000000LL));    /* a timer begun there */
    if (CORO_RESULT(co) != 0)
        CORO_RETURN(co, CORO_RESULT(co));
    z->second = pthread_self();
    CORO_RETURN(co, 11);
    CORO_END(co);
}

struct starter {
    coro_t co;
    struct sleeper *z;
};

static int starter_fn(coro_t *co)
{
    struct starter *st = CORO_SELF(co, struct starter);
    CORO_BEGIN(co);
    cr_assert_eq(coro_spawn(coro_sched_current(), &st->z->co, sleeper_fn, NULL), 0);
    /* let it run its first step here, up to its await, before we end */
    CORO_YIELD(co);
    CORO_RETURN(co, 1);
    CORO_END(co);
}

Test(sched_block_on_seat, a_job_suspended_on_the_caller_runs_after_the_call_returned, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        for (int timed = 0; timed <= 1; timed++) {
            coro_sched_t *s = mk_fit(counts[k]);
            coro_event_t ev;
            cr_assert_eq(coro_event_init(&ev), 0);
            static struct sleeper z;
            static struct starter st;
            memset(&z, 0, sizeof z);
            z.ev = timed ? NULL : &ev;
            st.z = &z;
            cr_assert_eq(block_on_r(s, &st.co, starter_fn, NULL), 1);
            if (!timed)
                coro_event_set(&ev);    /* from a plain thread, after the call */
            cr_assert_eq(join_r(&z.co), 11, "%d workers, timed %d", counts[k], timed);
            if (counts[k] > 0)
                cr_assert(!pthread_equal(z.second, pthread_self()),
                          "%d workers: woken on the caller after it left", counts[k]);
            cr_assert_eq(coro_event_destroy(&ev), 0);
            fin_fit(s);
        }
    }
}

/* ---- nested block_on ---------------------------------------------------------- */

struct nester {
    coro_t co;
    struct where inner;
    int rc;
    pthread_t thread;
};

static int nester_fn(coro_t *co)
{
    struct nester *n = CORO_SELF(co, struct nester);
    intptr_t r;
    CORO_BEGIN(co);
    n->thread = pthread_self();
    n->rc = coro_block_on(coro_sched_current(), &n->inner.co, where_fn, NULL, &r);
    CORO_END(co);
}

Test(sched_block_on_seat, a_nested_block_on_on_the_caller_gets_edeadlk, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_fit(counts[k]);
        static struct nester n;
        cr_assert_eq(block_on_r(s, &n.co, nester_fn, NULL), 0);
        cr_assert_eq(n.rc, -EDEADLK, "%d workers", counts[k]);
        cr_assert(pthread_equal(n.thread, pthread_self()), "%d workers", counts[k]);
        fin_fit(s);
    }
}

/* ---- two callers at once ------------------------------------------------------ */

struct counter_root {
    coro_t co;
    struct kid kids[8];
    atomic_int ran;
    int i;
};

static int counter_root_fn(coro_t *co)
{
    struct counter_root *r = CORO_SELF(co, struct counter_root);
    CORO_BEGIN(co);
    for (int i = 0; i < 8; i++) {
        r->kids[i].ran = &r->ran;
        cr_assert_eq(coro_spawn(coro_sched_current(), &r->kids[i].co, kid_fn, NULL), 0);
    }
    for (r->i = 0; r->i < 8; r->i++) {
        CORO_AWAIT(co, coro_done(&r->kids[r->i].co));
    }
    CORO_RETURN(co, atomic_load(&r->ran));
    CORO_END(co);
}

struct caller {
    pthread_t t;
    coro_sched_t *s;
    int bad;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    for (int i = 0; i < 300; i++) {
        struct counter_root r;
        memset(&r, 0, sizeof r);
        if (block_on_r(c->s, &r.co, counter_root_fn, NULL) != 8)
            c->bad++;
    }
    return NULL;
}

Test(sched_block_on_seat, two_threads_in_block_on_at_once_both_get_their_results, .timeout = 30)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_fit(counts[k]);
        struct caller c[2] = { { .s = s }, { .s = s } };
        for (int i = 0; i < 2; i++)
            cr_assert_eq(pthread_create(&c[i].t, NULL, caller_main, &c[i]), 0);
        for (int i = 0; i < 2; i++) {
            pthread_join(c[i].t, NULL);
            cr_assert_eq(c[i].bad, 0, "%d workers: caller %d", counts[k], i);
        }
        fin_fit(s);
    }
}

/* ---- cancel and deadline of a root on the caller -------------------------- */

struct waiter {
    coro_t co;
    coro_event_t *started, *never;
};

static int waiter_fn(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    if (w->started)
        coro_event_set(w->started);
    CORO_AWAIT(co, coro_event_wait(w->never, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

struct canceller {
    pthread_t t;
    coro_event_t *started;
    coro_t *job;
};

static void *cancel_main(void *arg)
{
    struct canceller *c = arg;
    coro_event_wait_blocking(c->started, CORO_FOREVER);
    coro_cancel(c->job);
    return NULL;
}

Test(sched_block_on_seat, cancel_and_deadline_end_a_root_that_began_on_the_caller, .timeout = 20)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_fit(counts[k]);
        coro_event_t started, never;
        cr_assert_eq(coro_event_init(&started), 0);
        cr_assert_eq(coro_event_init(&never), 0);
        static struct waiter w;
        w.started = &started;
        w.never = &never;
        struct canceller c = { .started = &started, .job = &w.co };
        cr_assert_eq(pthread_create(&c.t, NULL, cancel_main, &c), 0);
        cr_assert_eq(block_on_r(s, &w.co, waiter_fn, NULL), -ECANCELED, "%d workers", counts[k]);
        pthread_join(c.t, NULL);

        w.started = NULL;
        coro_spawn_opts_t o = { .deadline = coro_now() + 20 * 1000000LL };
        cr_assert_eq(block_on_r(s, &w.co, waiter_fn, &o), -ETIMEDOUT, "%d workers", counts[k]);
        cr_assert_eq(coro_event_destroy(&started), 0);
        cr_assert_eq(coro_event_destroy(&never), 0);
        fin_fit(s);
    }
}

/* ---- shutdown while a caller sits ------------------------------------------- */

struct yielder {
    coro_t co;
    atomic_int *go;
    int n;
};

static int yielder_fn(coro_t *co)
{
    struct yielder *y = CORO_SELF(co, struct yielder);
    CORO_BEGIN(co);
    atomic_store(y->go, 1);
    for (y->n = 0; y->n < 2000; y->n++) {
        CORO_YIELD(co);
        if (coro_cancelled())
            CORO_RETURN(co, -ECANCELED);
    }
    CORO_RETURN(co, 3);
    CORO_END(co);
}

struct stopper {
    pthread_t t;
    coro_sched_t *s;
    atomic_int *go;
    int mode, rc;
};

static void *stop_main(void *arg)
{
    struct stopper *st = arg;
    while (!atomic_load(st->go))
        sched_yield();
    st->rc = coro_sched_shutdown(st->s, st->mode);
    return NULL;
}

Test(sched_block_on_seat, shutdown_while_a_caller_runs_its_root_waits_or_cancels_it, .timeout = 30)
{
    for (size_t k = 0; k < NCOUNTS; k++) {
        for (int mode = 0; mode <= 1; mode++) {
            coro_sched_t *s = mk_fit(counts[k]);
            atomic_int go = 0;
            static struct yielder y;
            y.go = &go;
            struct stopper st = { .s = s, .go = &go, .mode = mode ? CORO_CANCEL : CORO_DRAIN };
            cr_assert_eq(pthread_create(&st.t, NULL, stop_main, &st), 0);
            intptr_t r = block_on_r(s, &y.co, yielder_fn, NULL);
            pthread_join(st.t, NULL);
            cr_assert_eq(st.rc, 0);
            if (mode)
                cr_assert(r == 3 || r == -ECANCELED, "%d workers: %ld", counts[k], (long)r);
            else
                cr_assert_eq(r, 3, "%d workers", counts[k]);
            /* closed: the next call is refused, seat or not */
            static struct where w;
            cr_assert_eq(block_on_r(s, &w.co, where_fn, NULL), -ESHUTDOWN);
            fin_fit(s);
        }
    }
}

/* ---- while tracing, the seat stays off: every step is on a worker's lane ---- */

Test(sched_block_on_seat, while_tracing_the_caller_runs_nothing_and_every_step_is_on_a_worker_lane, .timeout = 30)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = 2;
    c.pin = false;
    c.trace_events = 1024;
    fit_caller(2);
    coro_sched_t *s = mk_config(&c);
    static struct chainer ch;
    memset(links, 0, sizeof links);
    cr_assert_eq(coro_event_init(&ch.end), 0);
    cr_assert_eq(block_on_r(s, &ch.co, chainer_fn, NULL), 7);
    cr_assert_eq(coro_event_destroy(&ch.end), 0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/corokit-seat-trace-%d.json", (int)getpid());
    cr_assert_eq(coro_sched_trace_write(s, path), 0);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = 0;
    cr_assert(!strstr(buf, "\"coro-caller\""), "a lane that is no worker's");
    cr_assert(strstr(buf, "\"coro-w"), "no worker lane");
    cr_assert(strstr(buf, "link_fn"), "the links' steps are not in the trace");
    cr_assert_eq(seat_runs(s), 0, "the caller ran steps while tracing");
    fin_fit(s);
}

/* ---- a root that fans out keeps the next calls off the seat --------------- */

Test(sched_block_on_seat, after_a_root_that_fanned_out_the_next_calls_run_on_the_workers, .timeout = 30)
{
    coro_sched_t *s = mk_fit(2);
    static struct counter_root fan;
    static struct where w;
    memset(&fan, 0, sizeof fan);
    /* both workers held in a step: no idle worker steals the kids, so
     * they are still queued on the seat after the root's step, which is
     * what makes a fan-out (an idle worker stealing them all first would
     * make it none, and the test depend on timing) */
    hold_workers(s, 2);
    /* its step queues eight kids: more than the LIFO slot holds */
    cr_assert_eq(block_on_r(s, &fan.co, counter_root_fn, NULL), 8);
    free_workers(2);
    uint64_t before = seat_runs(s);
    int off = 0;
    for (int r = 0; r < 63; r++) {
        cr_assert_eq(block_on_r(s, &w.co, where_fn, NULL), 5);
        off += !pthread_equal(w.thread, pthread_self());
    }
    cr_assert_eq(off, 63, "%d of the 63 calls after the fan-out ran elsewhere", off);
    cr_assert_eq(seat_runs(s), before);
    /* then the seat again */
    cr_assert_eq(block_on_r(s, &w.co, where_fn, NULL), 5);
    cr_assert(pthread_equal(w.thread, pthread_self()));
    fin_fit(s);
}
