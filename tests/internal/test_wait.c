/* SPDX-License-Identifier: MIT */
/* tests for the wait layer (lib/wait/parklot.c): timed waits on every sync kind,
 * timers that belong to their wait, memory, the per-scheduler registry
 * behind CORO_CANCEL, -ENOMEM, the timeout rule - at 0, 1, 2 and 4
 * workers where it applies.  Issue 9's findings 1, 2, 3, 5, 6, 9 and 11
 * (wait group, negative timeouts). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/rt.h"     /* coro__parklot_cancel_visits, the job state word */

#define MS 1000000LL
#define SEC (1000 * MS)

static const int wcounts[] = { 0, 1, 2, 4 };
#define FOR_W(w) for (size_t wi__ = 0; wi__ < 4 && ((w) = wcounts[wi__], 1); wi__++)

/* a config allocator that counts, and fails on demand */
static uint64_t n_alloc;
static int fail_alloc;

static void *cnt_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (__atomic_load_n(&fail_alloc, __ATOMIC_RELAXED))
        return NULL;
    __atomic_add_fetch(&n_alloc, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void cnt_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

static coro_alloc_t cnt_alloc = { .alloc = cnt_malloc, .free = cnt_free };

static coro_sched_t *mk_counted(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.alloc = &cnt_alloc;
    return mk_config(&c);
}

static long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ---- finding 1: a timed wait never hangs -------------------------------------------- */

enum { K_EVENT, K_MUTEX, K_SEM, K_RECV, K_SEND, K_WG, K_SELECT, K_N };
static const char *kind_name[K_N] = { "event", "mutex", "sem", "recv", "send", "waitgroup",
                                      "select" };

struct objs {
    coro_event_t ev;
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t empty, full;
    void *ebuf[1], *fbuf[1];
    coro_waitgroup_t wg;
};

static void objs_init(struct objs *o)
{
    cr_assert_eq(coro_event_init(&o->ev), 0);
    cr_assert_eq(coro_mutex_init(&o->m), 0);
    cr_assert_eq(coro_sem_init(&o->sem, 0), 0);
    cr_assert_eq(coro_chan_init(&o->empty, o->ebuf, 1), 0);
    cr_assert_eq(coro_chan_init(&o->full, o->fbuf, 1), 0);
    cr_assert_eq(coro_chan_try_send(&o->full, o), 0);
    cr_assert_eq(coro_waitgroup_init(&o->wg), 0);
    cr_assert_eq(coro_waitgroup_add(&o->wg, 1), 1);
    /* the mutex is held by the test thread: jobs never get it */
    cr_assert_eq(coro_mutex_lock_blocking(&o->m, CORO_FOREVER), 0);
}

struct tw {
    coro_t co;
    struct objs *o;
    int kind, n, i, bad;
    int64_t t;
    void *item;
    coro_select_t sel;
};

static int tw_body(coro_t *co)
{
    struct tw *f = CORO_SELF(co, struct tw);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        f->t = 1 + (f->i * 7919) % 50000;       /* 1 ns .. 50 us */
        switch (f->kind) {
        case K_EVENT:
            CORO_AWAIT(co, coro_event_wait(&f->o->ev, f->t));
            break;
        case K_MUTEX:
            CORO_AWAIT(co, coro_mutex_lock(&f->o->m, f->t));
            break;
        case K_SEM:
            CORO_AWAIT(co, coro_sem_acquire(&f->o->sem, f->t));
            break;
        case K_RECV:
            CORO_AWAIT(co, coro_chan_recv(&f->o->empty, &f->item, f->t));
            break;
        case K_SEND:
            CORO_AWAIT(co, coro_chan_send(&f->o->full, f, f->t));
            break;
        case K_WG:
            CORO_AWAIT(co, coro_waitgroup_wait(&f->o->wg, f->t));
            break;
        default:
            coro_select_init(&f->sel);
            coro_select_event(&f->sel, &f->o->ev);
            coro_select_recv(&f->sel, &f->o->empty, &f->item);
            CORO_AWAIT(co, coro_select(&f->sel, f->t));
            coro_select_end(&f->sel, CORO_RESULT(co));
            break;
        }
        if (CORO_RESULT(co) != -ETIMEDOUT)
            f->bad++;
    }
    CORO_RETURN(co, f->bad);
    CORO_END(co);
}

Test(wait, timed_waits_of_1ns_to_50us_always_end_on_every_sync_kind, .timeout = 120)
{
    enum { N = 1500 };
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w);
        struct objs o;
        objs_init(&o);
        for (int k = 0; k < K_N; k++) {
            struct tw *f = calloc(1, sizeof *f);
            f->o = &o;
            f->kind = k;
            f->n = N;
            /* hangs here on adca440: a deadline that passed before the
             * job was on the wait list was dropped */
            intptr_t r = block_on_r(s, &f->co, tw_body, NULL);
            cr_assert_eq(r, 0, "%d workers, %s: %ld waits did not time out", w, kind_name[k],
                         (long)r);
            free(f);
        }
        cr_assert_eq(coro_mutex_unlock(&o.m), 0);
        fin(s);
    }
}

/* ---- finding 2: a timer never fires into a reused frame ------------------------------ */

struct rw {
    coro_t co;
    coro_event_t *ev;
    int64_t timeout;
};

static int rw_body(coro_t *co)
{
    struct rw *f = CORO_SELF(co, struct rw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(f->ev, f->timeout));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static bool job_finished(coro_t *co)
{
    return (__atomic_load_n(&co->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_DONE;
}

static bool suspended(coro_t *co)
{
    return (__atomic_load_n(&co->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_SUSPENDED;
}

/* wakes the event's waiter once it is parked (coro_event_set counts the
 * waiters it woke): returns how many it woke (0: it finished unparked) */
struct waker {
    coro_t co;
    coro_event_t *ev;
    coro_t *waiter;
    int woke;
};

static int waker_body(coro_t *co)
{
    struct waker *f = CORO_SELF(co, struct waker);
    CORO_BEGIN(co);
    while (!job_finished(f->waiter) && (f->woke = coro_event_set(f->ev)) == 0) {
        coro_event_reset(f->ev);
        CORO_YIELD(co);
    }
    CORO_RETURN(co, f->woke);
    CORO_END(co);
}

Test(wait, a_zeroed_frame_waiting_again_is_not_ended_by_its_old_timeout, .timeout = 60)
{
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w);
        coro_event_t ev;
        struct rw f;
        struct waker k;
        cr_assert_eq(coro_event_init(&ev), 0);
        /* first life: a 150 ms wait, woken early while parked (retried
         * until it was) */
        for (;;) {
            memset(&f, 0, sizeof f);
            memset(&k, 0, sizeof k);
            f.ev = k.ev = &ev;
            f.timeout = 150 * MS;
            k.waiter = &f.co;
            cr_assert_eq(coro_event_reset(&ev), 0);
            cr_assert_eq(coro_spawn(s, &f.co, rw_body, NULL), 0);
            intptr_t woke = block_on_r(s, &k.co, waker_body, NULL);
            cr_assert_eq(join_r(&f.co), 0);
            if (woke == 1)
                break;
        }
        /* second life: the same frame, zeroed, waits forever on the event */
        memset(&f, 0, sizeof f);
        f.ev = &ev;
        f.timeout = CORO_FOREVER;
        cr_assert_eq(coro_event_reset(&ev), 0);
        cr_assert_eq(coro_spawn(s, &f.co, rw_body, NULL), 0);
        usleep(300 * 1000);     /* the first life's deadline passes */
        if (w == 0)
            coro_sched_run(s);  /* single-threaded: timers fire while driven */
        cr_assert(!job_finished(&f.co), "%d workers: ended by a stale timer with %ld", w,
                  (long)f.co.result);
        cr_assert_eq(coro_event_set(&ev), 1);
        cr_assert_eq(join_r(&f.co), 0);
        fin(s);
    }
}

/* ---- finding 3: finished timed waits keep no memory, make no allocation --------------- */

struct pp {
    coro_t co;
    coro_chan_t *in, *out;
    coro_mutex_t *m;
    bool recv_first;
    int n, i, bad;
    void *item;
};

/* one side of a ping-pong: every wait has a 60 s timeout and ends at once */
static int pp_body(coro_t *co)
{
    struct pp *f = CORO_SELF(co, struct pp);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        if (f->m) {
            /* uncontended: took an allocation per lock on adca440 */
            CORO_AWAIT(co, coro_mutex_lock(f->m, 60 * SEC));
            if (CORO_RESULT(co) != 0 || coro_mutex_unlock(f->m) != 0)
                f->bad++;
        }
        if (!f->recv_first) {
            CORO_AWAIT(co, coro_chan_send(f->out, f, 60 * SEC));
            if (CORO_RESULT(co) != 0)
                f->bad++;
        }
        CORO_AWAIT(co, coro_chan_recv(f->in, &f->item, 60 * SEC));
        if (CORO_RESULT(co) != 0)
            f->bad++;
        if (f->recv_first) {
            CORO_AWAIT(co, coro_chan_send(f->out, f, 60 * SEC));
            if (CORO_RESULT(co) != 0)
                f->bad++;
        }
    }
    CORO_RETURN(co, f->bad);
    CORO_END(co);
}

static void ping_pong(coro_sched_t *s, int n, coro_mutex_t *m)
{
    void *b1[1], *b2[1];
    coro_chan_t c1, c2;
    struct pp a, b;

    cr_assert_eq(coro_chan_init(&c1, b1, 1), 0);
    cr_assert_eq(coro_chan_init(&c2, b2, 1), 0);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.out = &c1, a.in = &c2, a.n = n, a.m = m;
    b.in = &c1, b.out = &c2, b.n = n, b.recv_first = true;
    cr_assert_eq(coro_spawn(s, &a.co, pp_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &b.co, pp_body, NULL), 0);
    cr_assert_eq(join_r(&a.co), 0);
    cr_assert_eq(join_r(&b.co), 0);
    cr_assert_eq(coro_chan_destroy(&c1), 0);
    cr_assert_eq(coro_chan_destroy(&c2), 0);
}

Test(wait, timed_waits_of_60s_that_end_at_once_allocate_nothing_and_keep_no_memory,
     .timeout = 120)
{
    enum { N = 200000 };
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk_counted(w);
        coro_mutex_t m;
        cr_assert_eq(coro_mutex_init(&m), 0);
        ping_pong(s, 2000, &m);     /* warm-up */
        long rss0 = rss_kib();
        uint64_t a0 = __atomic_load_n(&n_alloc, __ATOMIC_RELAXED);
        ping_pong(s, N, &m);
        uint64_t a1 = __atomic_load_n(&n_alloc, __ATOMIC_RELAXED);
        long rss1 = rss_kib();
        cr_assert_eq(a1 - a0, 0, "%d workers: %llu allocations for %d timed waits", w,
                     (unsigned long long)(a1 - a0), 4 * N);
        cr_assert_lt(rss1 - rss0, 1024, "%d workers: RSS grew %ld KiB", w, rss1 - rss0);
        cr_assert_eq(coro_mutex_destroy(&m), 0);
        fin(s);
    }
}

Test(wait, a_wait_that_ended_early_leaves_no_timer_behind, .timeout = 30)
{
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w);
        coro_mutex_t m;
        cr_assert_eq(coro_mutex_init(&m), 0);
        ping_pong(s, 1000, &m);
        cr_assert(!coro__io_pending(coro__sched_io(s)), "%d workers: a lot timer outlived its wait",
                  w);
        cr_assert_eq(coro_mutex_destroy(&m), 0);
        fin(s);
    }
}

/* ---- finding 9: no memory for a timer: -ENOMEM, not -ETIMEDOUT ------------------------ */

struct ew {
    coro_t co;
    coro_event_t *ev;
    int on;     /* the worker its wait began on (its timer's heap), -1 none */
};

static int ew_body(coro_t *co)
{
    struct ew *f = CORO_SELF(co, struct ew);
    CORO_BEGIN(co);
    /* the heap lib/wait/wtimer.c picks: the worker's own, the
     * scheduler's for any other thread - a plain thread's seat too (its
     * worker record's index is past the workers'), which runs jobs of a
     * coro_block_on caller */
    struct coro__worker *me = coro__tls_worker;
    f->on = me && me->s == co->sched && me->idx < coro_sched_workers(co->sched) ? me->idx : -1;
    CORO_AWAIT(co, coro_event_wait(f->ev, 60 * SEC));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* once every waiter has finished (failed) or waits, memory comes back
 * and the event is set */
struct ewset {
    coro_t co;
    coro_event_t *ev;
    struct ew *f;
    int n, nfail;
};

static int ewset_body(coro_t *co)
{
    struct ewset *e = CORO_SELF(co, struct ewset);
    CORO_BEGIN(co);
    for (;;) {
        int done = 0;
        for (int i = 0; i < e->n; i++)
            done += job_finished(&e->f[i].co) || suspended(&e->f[i].co);
        if (done >= e->n)
            break;
        CORO_YIELD(co);
    }
    __atomic_store_n(&fail_alloc, 0, __ATOMIC_RELAXED);
    coro_event_set(e->ev);
    CORO_END(co);
}

Test(wait, a_timed_wait_without_memory_for_its_timer_fails_with_enomem, .timeout = 60)
{
    /* the timers each heap preallocates: a wait's timer goes to the heap
     * of the worker it began on (lib/wait/wtimer.c), the scheduler's
     * without workers */
    enum { N = 300, PREALLOC = 256 };
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk_counted(w);
        coro_event_t ev;
        struct ew *f = calloc(N, sizeof *f);
        struct ewset e = { .ev = &ev, .f = f, .n = N, .nfail = N - PREALLOC };
        cr_assert_eq(coro_event_init(&ev), 0);
        __atomic_store_n(&fail_alloc, 1, __ATOMIC_RELAXED);
        for (int i = 0; i < N; i++) {
            f[i].ev = &ev;
            cr_assert_eq(coro_spawn(s, &f[i].co, ew_body, NULL), 0);
        }
        cr_assert_eq(block_on_r(s, &e.co, ewset_body, NULL), 0);
        int nomem = 0;
        for (int i = 0; i < N; i++) {
            intptr_t r = join_r(&f[i].co);
            cr_assert(r == 0 || r == -ENOMEM, "%d workers: job %d ended %ld", w, i, (long)r);
            nomem += r == -ENOMEM;
        }
        /* adca440: -ENOMEM for all (a node per timed wait).  Each heap
         * holds PREALLOC before it must grow */
        int on[CORO_MAX_WORKERS + 1] = { 0 }, want = 0;
        for (int i = 0; i < N; i++)
            on[f[i].on + 1]++;
        for (int i = 0; i <= w; i++)
            want += on[i] > PREALLOC ? on[i] - PREALLOC : 0;
        cr_assert_eq(nomem, want, "%d workers: %d waits got -ENOMEM", w, nomem);
        fin(s);
        free(f);
    }
}

/* every kind, while the timer table is full and cannot grow */
struct nm {
    coro_t co;
    struct objs *o;
    intptr_t r[K_N];
    void *item;
    coro_select_t sel;
};

static int nm_body(coro_t *co)
{
    struct nm *f = CORO_SELF(co, struct nm);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_mutex_lock(&f->o->m, SEC));
    f->r[K_MUTEX] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_sem_acquire(&f->o->sem, SEC));
    f->r[K_SEM] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_chan_recv(&f->o->empty, &f->item, SEC));
    f->r[K_RECV] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_chan_send(&f->o->full, f, SEC));
    f->r[K_SEND] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_waitgroup_wait(&f->o->wg, SEC));
    f->r[K_WG] = CORO_RESULT(co);
    coro_select_init(&f->sel);
    coro_select_recv(&f->sel, &f->o->empty, &f->item);
    coro_select_send(&f->sel, &f->o->full, f);
    CORO_SELECT(co, &f->sel, SEC);
    f->r[K_SELECT] = CORO_RESULT(co);
    CORO_END(co);
}

/* once the table is full: memory runs out, nm runs, memory comes back,
 * the parked waiters are released */
struct nmdrv {
    coro_t co;
    struct ew *f;
    int n;
    struct nm *j;
    const coro_spawn_opts_t *on;    /* the probe's: on the filled heap's worker */
    coro_event_t *ev;
    int i;
};

static int nmdrv_body(coro_t *co)
{
    struct nmdrv *d = CORO_SELF(co, struct nmdrv);
    CORO_BEGIN(co);
    while (coro__parklot_timers_count(coro_sched_current()) < (uint32_t)d->n)
        CORO_YIELD(co);     /* every waiter parked with its timer */
    __atomic_store_n(&fail_alloc, 1, __ATOMIC_RELAXED);
    if (coro_spawn(coro_sched_current(), &d->j->co, nm_body, d->on) != 0)
        CORO_RETURN(co, -1);
    while (!job_finished(&d->j->co))
        CORO_YIELD(co);
    __atomic_store_n(&fail_alloc, 0, __ATOMIC_RELAXED);
    coro_event_set(d->ev);
    CORO_END(co);
}

/* A wait's timer goes to the heap of the worker it begins on (lib/wait/
 * wtimer.c), so "the table is full" means that heap: the waiters and the
 * probe all run on worker 0, held there by a mask of its CPU alone.  The
 * test hook gives each worker a CPU of its own (0 .. w-1, unpinned), so
 * the mask names one worker on any machine, one real CPU included.
 * Unpinned, the waiters spread over the heaps and the probe could begin a
 * wait on one with room. */
static coro_sched_t *mk_counted_home(int w, coro_cpuset_t *home, coro_spawn_opts_t *on)
{
    __atomic_store_n(&coro__test_ncpus, w, __ATOMIC_RELAXED);
    coro_sched_t *s = mk_counted(w);
    __atomic_store_n(&coro__test_ncpus, 0, __ATOMIC_RELAXED);
    *on = (coro_spawn_opts_t){ 0 };
    if (w > 0) {
        coro_worker_stats_t ws;
        cr_assert_eq(coro_sched_worker_stats(s, 0, &ws), 0);
        coro_cpuset_zero(home);
        coro_cpuset_add(home, ws.cpu);
        for (int i = 1; i < w; i++) {
            coro_worker_stats_t other;
            cr_assert_eq(coro_sched_worker_stats(s, i, &other), 0);
            cr_assert_neq(other.cpu, ws.cpu, "worker %d shares worker 0's CPU", i);
        }
        on->affinity = home;
    }
    return s;
}

Test(wait, every_timed_wait_kind_fails_with_enomem_and_leaves_no_trace_when_timers_run_out,
     .timeout = 60)
{
    enum { PREALLOC = 256 };
    int w;
    FOR_W(w) {
        coro_cpuset_t home;
        coro_spawn_opts_t on;
        coro_sched_t *s = mk_counted_home(w, &home, &on);
        coro_event_t ev;
        struct objs o;
        struct ew *f = calloc(PREALLOC, sizeof *f);
        struct nm j;
        struct nmdrv d = { .f = f, .n = PREALLOC, .j = &j, .on = &on, .ev = &ev };
        cr_assert_eq(coro_event_init(&ev), 0);
        objs_init(&o);  /* the test thread holds the mutex */
        memset(&j, 0, sizeof j);
        j.o = &o;
        j.r[K_EVENT] = -ENOMEM;     /* covered by the test above */
        /* fill worker 0's heap (the scheduler's without workers):
         * PREALLOC jobs parked with timers */
        for (int i = 0; i < PREALLOC; i++) {
            f[i].ev = &ev;
            cr_assert_eq(coro_spawn(s, &f[i].co, ew_body, &on), 0);
        }
        /* a mask keeps the driver off the caller's seat (sched/seat.c),
         * whose waits take the scheduler's heap: it and nm run on a
         * worker, whose heap the waiters filled */
        coro_cpuset_t every;
        cr_assert_eq(coro_cpuset_parse(&every, "0-1023"), 0);
        coro_spawn_opts_t dro = { .affinity = &every };
        cr_assert_eq(block_on_r(s, &d.co, nmdrv_body, &dro), 0);
        cr_assert_eq(join_r(&j.co), 0);
        for (int i = 0; i < PREALLOC; i++)
            cr_assert_eq(f[i].on, w > 0 ? 0 : -1, "%d workers: waiter %d began on %d", w, i,
                         f[i].on);
        for (int k = 0; k < K_N; k++)
            cr_assert_eq(j.r[k], -ENOMEM, "%d workers, %s: %ld", w, kind_name[k], (long)j.r[k]);
        for (int i = 0; i < PREALLOC; i++)
            cr_assert_eq(join_r(&f[i].co), 0);
        /* nothing was taken, sent or locked, and no branch is left linked */
        cr_assert_eq(coro_chan_len(&o.full), 1);
        cr_assert_eq(coro_chan_len(&o.empty), 0);
        cr_assert_eq(coro_chan_try_send(&o.empty, &o), 0);
        cr_assert_eq(coro_chan_len(&o.empty), 1, "a select branch swallowed the item");
        cr_assert_eq(coro_mutex_unlock(&o.m), 0);
        cr_assert_eq(coro_mutex_try_lock(&o.m), 0, "the mutex went to the failed job");
        cr_assert_eq(coro_mutex_unlock(&o.m), 0);
        cr_assert_eq(coro_mutex_destroy(&o.m), 0);
        cr_assert_eq(coro_chan_destroy(&o.empty), 0);
        cr_assert_eq(coro_chan_destroy(&o.full), 0);
        cr_assert_eq(coro_sem_destroy(&o.sem), 0);
        cr_assert_eq(coro_waitgroup_add(&o.wg, -1), 0);
        cr_assert_eq(coro_waitgroup_destroy(&o.wg), 0);
        fin(s);
        free(f);
    }
}

/* ---- finding 5: CORO_CANCEL ends jobs awaiting each other ------------------------------ */

struct mut {
    coro_t co;
    coro_event_t *gate;
    coro_t *peer;
};

static int mut_body(coro_t *co)
{
    struct mut *f = CORO_SELF(co, struct mut);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(f->gate, CORO_FOREVER));
    CORO_AWAIT(co, coro_done(f->peer));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(wait, cancel_ends_two_jobs_that_await_each_other_on_one_scheduler, .timeout = 30)
{
    int w;
    FOR_W(w) {
        for (int round = 0; round < 20; round++) {
            coro_sched_t *s = mk(w);
            coro_event_t gate;
            struct mut a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            cr_assert_eq(coro_event_init(&gate), 0);
            a.gate = b.gate = &gate;
            a.peer = &b.co;
            b.peer = &a.co;
            cr_assert_eq(coro_spawn(s, &a.co, mut_body, NULL), 0);
            cr_assert_eq(coro_spawn(s, &b.co, mut_body, NULL), 0);
            cr_assert_eq(coro_event_set(&gate) >= 0, 1);
            if (w == 0)
                coro_sched_run(s);
            else
                while (!suspended(&a.co) || !suspended(&b.co))
                    sched_yield();
            /* both wait in each other's joiner slot: hung here on adca440 */
            cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
            cr_assert_eq(join_r(&a.co), -ECANCELED);
            cr_assert_eq(join_r(&b.co), -ECANCELED);
            cr_assert_eq(coro_sched_destroy(s), 0);
        }
    }
}

/* ---- finding 6: CORO_CANCEL of an idle scheduler costs nothing ------------------------- */

Test(wait, cancel_on_an_idle_scheduler_visits_no_wait_list_and_grows_no_memory, .timeout = 30)
{
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w);
        long rss0 = rss_kib();
        cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
        long rss1 = rss_kib();
        cr_assert_eq(coro__parklot_cancel_visits(s), 0);
        /* adca440 walked 65,600 buckets: +4.3 MiB */
        cr_assert_lt(rss1 - rss0, 512, "%d workers: RSS grew %ld KiB", w, rss1 - rss0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(wait, cancel_visits_only_the_buckets_its_jobs_parked_in, .timeout = 30)
{
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w), *other = mk(w);
        coro_event_t ev[3];
        struct rw f[3];
        memset(f, 0, sizeof f);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(coro_event_init(&ev[i]), 0);
            f[i].ev = &ev[i];
            f[i].timeout = CORO_FOREVER;
            cr_assert_eq(coro_spawn(i < 2 ? s : other, &f[i].co, rw_body, NULL), 0);
        }
        if (w == 0) {
            coro_sched_run(s);
            coro_sched_run(other);
        } else {
            for (int i = 0; i < 3; i++)
                while (!suspended(&f[i].co))
                    sched_yield();
        }
        cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
        cr_assert_leq(coro__parklot_cancel_visits(s), 2);
        cr_assert_eq(join_r(&f[0].co), -ECANCELED);
        cr_assert_eq(join_r(&f[1].co), -ECANCELED);
        /* the other scheduler's waiter is untouched */
        cr_assert(!job_finished(&f[2].co));
        cr_assert_geq(coro_event_set(&ev[2]), 0);  /* 0: it was still arming */
        cr_assert_eq(join_r(&f[2].co), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        fin(other);
    }
}

/* ---- finding 11: wait group count, the timeout rule --------------------------------- */

Test(wait, waitgroup_add_refuses_a_count_below_zero_or_past_int64_max, .timeout = 10)
{
    coro_waitgroup_t wg;
    cr_assert_eq(coro_waitgroup_init(&wg), 0);
    cr_assert_eq(coro_waitgroup_add(&wg, 3), 3);
    cr_assert_eq(coro_waitgroup_add(&wg, INT64_MIN), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, -4), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, INT64_MAX), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, 0), 3);
    cr_assert_eq(coro_waitgroup_add(&wg, INT64_MAX - 3), INT64_MAX);
    cr_assert_eq(coro_waitgroup_add(&wg, 1), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, INT64_MIN), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, -INT64_MAX), 0);
    cr_assert_eq(coro_waitgroup_destroy(&wg), 0);
}

struct nt {
    coro_t co;
    struct objs *o;
    int i;
    intptr_t r[K_N];
    void *item;
    coro_select_t sel;
};

static int nt_body(coro_t *co)
{
    struct nt *f = CORO_SELF(co, struct nt);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(&f->o->ev, -2));
    f->r[K_EVENT] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_mutex_lock(&f->o->m, -2));
    f->r[K_MUTEX] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_sem_acquire(&f->o->sem, INT64_MIN));
    f->r[K_SEM] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_chan_recv(&f->o->full, &f->item, -1000));
    f->r[K_RECV] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_chan_send(&f->o->empty, f, -2));
    f->r[K_SEND] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_waitgroup_wait(&f->o->wg, -2));
    f->r[K_WG] = CORO_RESULT(co);
    coro_select_init(&f->sel);
    coro_select_event(&f->sel, &f->o->ev);
    CORO_AWAIT(co, coro_select(&f->sel, -2));
    f->r[K_SELECT] = coro_select_end(&f->sel, CORO_RESULT(co));
    CORO_END(co);
}

Test(wait, a_negative_timeout_other_than_forever_is_einval_for_every_sync_call, .timeout = 30)
{
    int w;
    FOR_W(w) {
        coro_sched_t *s = mk(w);
        struct objs o;
        struct nt f;
        /* every object is ready: adca440 completed these (or waited
         * forever when not ready) */
        cr_assert_eq(coro_event_init(&o.ev), 0);
        cr_assert_eq(coro_event_set(&o.ev), 0);
        cr_assert_eq(coro_mutex_init(&o.m), 0);
        cr_assert_eq(coro_sem_init(&o.sem, 5), 0);
        cr_assert_eq(coro_chan_init(&o.empty, o.ebuf, 1), 0);
        cr_assert_eq(coro_chan_init(&o.full, o.fbuf, 1), 0);
        cr_assert_eq(coro_chan_try_send(&o.full, &o), 0);
        cr_assert_eq(coro_waitgroup_init(&o.wg), 0);
        memset(&f, 0, sizeof f);
        f.o = &o;
        cr_assert_eq(block_on_r(s, &f.co, nt_body, NULL), 0);
        for (int k = 0; k < K_N; k++)
            cr_assert_eq(f.r[k], -EINVAL, "%d workers, %s: %ld", w, kind_name[k], (long)f.r[k]);
        /* the blocking forms */
        void *item;
        coro_select_t sel;
        cr_assert_eq(coro_event_wait_blocking(&o.ev, -2), -EINVAL);
        cr_assert_eq(coro_mutex_lock_blocking(&o.m, -2), -EINVAL);
        cr_assert_eq(coro_sem_acquire_blocking(&o.sem, -2), -EINVAL);
        cr_assert_eq(coro_chan_recv_blocking(&o.full, &item, -2), -EINVAL);
        cr_assert_eq(coro_chan_send_blocking(&o.empty, &o, -2), -EINVAL);
        cr_assert_eq(coro_waitgroup_wait_blocking(&o.wg, -2), -EINVAL);
        coro_select_init(&sel);
        coro_select_event(&sel, &o.ev);
        cr_assert_eq(coro_select_blocking(&sel, -2), -EINVAL);
        /* nothing was consumed */
        cr_assert_eq(coro_sem_value(&o.sem), 5);
        cr_assert_eq(coro_chan_len(&o.full), 1);
        cr_assert_eq(coro_mutex_try_lock(&o.m), 0);
        cr_assert_eq(coro_mutex_unlock(&o.m), 0);
        /* CORO_FOREVER and 0 still work */
        cr_assert_eq(coro_event_wait_blocking(&o.ev, CORO_FOREVER), 0);
        cr_assert_eq(coro_sem_acquire_blocking(&o.sem, 0), 0);
        fin(s);
    }
}
