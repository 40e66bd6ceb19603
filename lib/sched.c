/* SPDX-License-Identifier: MIT */
/* The scheduler's life: create, spawn, join, run, shutdown, destroy, stats.
 *
 * SHUTDOWN follows tokio's protocol.  s->live counts the jobs that were
 * spawned and have not finished, with a CLOSED bit on top.  coro_spawn
 * adds one with an atomic RMW and, if it sees CLOSED, takes it back and
 * fails with -ESHUTDOWN; coro_sched_shutdown sets CLOSED with an RMW on the
 * same word.  The RMWs are totally ordered, so a racing spawn either counted
 * before CLOSED (it runs, and shutdown waits for it) or after (it fails):
 * never both, never neither.  CORO_CANCEL then sets s->cancelling, which
 * every arm checks (the parking lot and the I/O thread check it under the
 * lock they insert under), and wakes every job already waiting with
 * -ECANCELED.  Shutdown returns when live == CLOSED: every queue is empty.
 * Workers take finished jobs off live in batches (coro__flush_live): before
 * they park, and at once when s->closed is set, so a drain is never held up
 * by a batch: the last finishes before the drain ends happen on workers that
 * then either see closed or park.
 */
#include <ck_malloc.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "sched_impl.h"
#include "trace.h"

/* ---- memory ---------------------------------------------------------------- */

void *coro__alloc(coro_sched_t *s, size_t n)
{
    void *p = (s && s->alloc) ? s->alloc->malloc(n) : malloc(n);
    if (p)
        memset(p, 0, n);
    return p;
}

void coro__free(coro_sched_t *s, void *p, size_t n)
{
    if (!p)
        return;
    if (s && s->alloc)
        s->alloc->free(p, n, false);
    else
        free(p);
}

/* The scheduler and worker structs hold cache-line aligned members, which
 * malloc (16 bytes) and a user's ck_malloc (no alignment at all) do not
 * honour.  Over-allocate by a line plus a pointer, align up, and keep the
 * allocator's pointer just below the block for the free (the size is the
 * caller's n plus the same overhead). */
#define ALIGN_EXTRA (CORO__CACHELINE + sizeof(void *))

void *coro__alloc_aligned(coro_sched_t *s, size_t n)
{
    if (n > SIZE_MAX - ALIGN_EXTRA)
        return NULL;
    char *raw = coro__alloc(s, n + ALIGN_EXTRA);
    if (!raw)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(void *) + CORO__CACHELINE - 1) &
                  ~(uintptr_t)(CORO__CACHELINE - 1);
    memcpy((void *)(a - sizeof(void *)), &raw, sizeof raw);
    return (void *)a;
}

void coro__free_aligned(coro_sched_t *s, void *p, size_t n)
{
    void *raw;

    if (!p)
        return;
    memcpy(&raw, (char *)p - sizeof(void *), sizeof raw);
    coro__free(s, raw, n + ALIGN_EXTRA);
}

/* ---- helpers used across the library --------------------------------------- */

bool coro__in_job(void)
{
    return coro__tls_in_job != 0;
}

bool coro__cancelling(const coro_sched_t *s)
{
    /* acquire: pairs with coro_sched_shutdown's store of the flag */
    return __atomic_load_n(&s->cancelling, __ATOMIC_ACQUIRE) != 0;
}

struct coro__io *coro__sched_io(coro_sched_t *s)
{
    return s->io;
}

coro_sched_t *coro_sched_current(void)
{
    struct coro__worker *w = coro__tls_worker;
    return w ? w->s : NULL;
}

int coro_sched_workers(const coro_sched_t *s)
{
    return s ? s->nworkers : -EINVAL;
}

unsigned coro_version(void)
{
    return CORO_VERSION_HEX;
}

void coro__wake(coro_t *job, intptr_t res)
{
    job->top->result = res;
    coro__trace_wake(job);
    /* SUSPENDED -> READY, keeping the flags (the waker owns the job now);
     * release: the result is visible to the worker that acquires RUNNING */
    __atomic_sub_fetch(&job->state, CORO__S_SUSPENDED - CORO__S_READY, __ATOMIC_ACQ_REL);
    coro__submit(job->sched, job, false);
}

/* ---- finishing a job --------------------------------------------------------- */

/* the job whose on_exit runs on this thread (coro_spawn of that frame
 * from its own on_exit must not wait for the finisher: it is the caller) */
static __thread coro_t *tls_exiting;

static void run_on_exit(void (*on_exit)(coro_t *), coro_t *job)
{
    coro_t *outer = tls_exiting;
    tls_exiting = job;
    on_exit(job);
    tls_exiting = outer;
}

/* The end of a job.  What holds afterwards (docs/guide.md, "Frame
 * lifetimes"):
 *   - jobs awaiting it (coro_done) are woken with the result by value;
 *   - a coro_join that was blocked when the job finished returns only after
 *     on_exit has returned and the scheduler has stopped touching the
 *     frame (EXITING is cleared last); a coro_join that starts later
 *     returns once EXITING is clear;
 *   - without a blocked thread joiner, on_exit (the place to free a
 *     caller-owned frame) runs after the scheduler's last touch;
 *   - a pool frame is given back after all of that: by the finisher, or
 *     by the last thread joiner to leave. */
uint32_t coro__finish_cas(coro_t *job, uint32_t *nwp)
{
    uint32_t old = __atomic_load_n(&job->state, __ATOMIC_RELAXED), nw;
    /* one CAS: DONE, the waiter flags cleared and returned (waiters set
     * theirs with a CAS that fails once DONE is in); EXITING when there are
     * waiters to wake.  release: the result and the frame's last writes
     * happen before any joiner's acquire load of DONE */
    do {
        nw = CORO__S_DONE | (old & (CORO__F_POOL | CORO__JOINERS_MASK));
        if (old & (CORO__F_JOINER | CORO__F_JOB_JOIN | CORO__F_THREAD_JOIN))
            nw |= CORO__F_EXITING;
    } while (!__atomic_compare_exchange_n(&job->state, &old, nw, true, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));
    *nwp = nw;
    return old;
}

void coro__finish(coro_t *job)
{
    coro_sched_t *s = job->sched;
    void (*on_exit)(coro_t *) = job->on_exit;
    intptr_t res = job->result;
    struct coro__ext *x = NULL;
    if (job->flags & CORO__FL_EXT) {
        x = job->ext;
        on_exit = x->on_exit;
        job->on_exit = on_exit;     /* the frame as it was spawned */
        job->flags &= (uint8_t)~CORO__FL_EXT;
    }
    /* one CAS (coro__finish_cas), under the group's lock for a member */
    uint32_t nw;
    uint32_t old = x && x->group ? coro__group_finish(job, x, &nw) : coro__finish_cas(job, &nw);
    if (x)
        coro__free(s, x, sizeof *x);
    bool pool = old & CORO__F_POOL;
    /* on_exit before the thread joiners go: a pool frame is the library's
     * (on_exit cannot free it), a joined frame must outlive its joiner */
    bool exit_first = pool || (old & CORO__F_THREAD_JOIN);
    if (old & CORO__F_JOINER) {
        coro_t *w = __atomic_exchange_n(&job->joiner, NULL, __ATOMIC_ACQUIRE);
        if (w)
            coro__lot_joiner_wake(w, res);  /* off the cancel registry, then wake */
    }
    if (old & CORO__F_JOB_JOIN)
        coro__done_wake_all(job, res);  /* coro_done, coro_done_timeout */
    if (on_exit && exit_first)
        run_on_exit(on_exit, job);
    uint32_t last = nw;
    if (nw & CORO__F_EXITING) {
        /* release: our last touch of the frame before a joiner sees
         * EXITING clear and takes it back */
        last = __atomic_and_fetch(&job->state, ~CORO__F_EXITING, __ATOMIC_ACQ_REL);
        /* from here the frame may be reused: only its address is used */
        if (old & CORO__F_THREAD_JOIN)
            coro__futex_wake(&job->state, INT_MAX);
    }
    if (on_exit && !exit_first)
        run_on_exit(on_exit, job);
    if (pool && !(last & CORO__JOINERS_MASK))
        coro__frame_release(job);       /* no thread joiner: give it back now */
    /* a worker takes its finished jobs off s->live in batches, so that
     * the line a spawning thread increments does not bounce on every
     * finish; it flushes before it parks and at once after shutdown
     * began (relaxed: a stale "open" only delays the flush to the park) */
    struct coro__worker *w = coro__tls_worker;
    if (w && w->s == s && s->nworkers > 0 && !__atomic_load_n(&s->closed, __ATOMIC_RELAXED)) {
        /* owner-only; atomic stores for coro_sched_stats' racy read */
        __atomic_store_n(&w->unflushed, w->unflushed + 1, __ATOMIC_RELAXED);
        if (w->unflushed >= CORO__LIVE_BATCH)
            coro__flush_live(w);
        return;
    }
    /* acq_rel: everything this job did happens before shutdown's return */
    if (__atomic_sub_fetch(&s->live, 1, __ATOMIC_ACQ_REL) == CORO__LIVE_CLOSED)
        coro__futex_wake(&s->live, INT_MAX);
}

void coro__flush_live(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    uint32_t n = w->unflushed;

    if (!n)
        return;
    __atomic_store_n(&w->unflushed, 0, __ATOMIC_RELAXED);
    if (__atomic_sub_fetch(&s->live, n, __ATOMIC_ACQ_REL) == CORO__LIVE_CLOSED)
        coro__futex_wake(&s->live, INT_MAX);
}

/* ---- create / destroy ----------------------------------------------------------- */

static size_t worker_size(void)
{
    return sizeof(struct coro__worker) +
           CORO__NPRIO * (2 * CORO__LOCAL_SIZE + CORO__INBOX_SIZE) * sizeof(ck_ring_buffer_t);
}

static void free_workers(coro_sched_t *s)
{
    if (!s->w)
        return;
    for (int i = 0; i < s->nslots; i++) {
        struct coro__worker *w = s->w[i];
        if (!w)
            continue;
        for (int p = 0; p < CORO__NPRIO; p++)
            coro__mq_fini(&w->inbox[p]);
        coro__free(s, w->served, CORO__MAX_CLASSES * sizeof(uint16_t));
        coro__free_aligned(s, w, worker_size());
    }
    coro__free(s, s->w, s->nslots * sizeof *s->w);
    s->w = NULL;
}

static void stop_workers(coro_sched_t *s)
{
    /* release: everything before destroy happens before the workers exit */
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
    coro__wake_all_workers(s);
    for (int i = 0; i < s->nslots; i++) {
        struct coro__worker *w = s->w[i];
        if (w && w->started) {
            pthread_join(w->thread, NULL);
            w->started = false;
        }
    }
}

static void sched_free(coro_sched_t *s)
{
    coro__blocking_destroy(s);
    coro__frames_fini(s);
    if (s->io)
        coro__io_destroy(s->io);
    if (s->trace && s->w)
        coro__trace_fini(s);    /* after every thread that records is gone */
    coro__lot_sched_fini(s);
    coro__cls_fini(s);
    free_workers(s);
    pthread_mutex_destroy(&s->shut_lock);
    pthread_mutex_destroy(&s->cancel_lock);
    struct ck_malloc *a = s->alloc;
    coro_sched_t tmp = { .alloc = a };
    coro__free_aligned(&tmp, s, sizeof *s);
}

int coro_sched_create(coro_sched_t **out, const coro_sched_config_t *cfg)
{
    coro_sched_config_t c = cfg ? *cfg : CORO_SCHED_CONFIG_DEFAULT;
    cpu_set_t os;
    int cpus[CORO_MAX_CPUS], ncpus = 0, rc;
    coro_sched_t *s;

    if (!out)
        return -EINVAL;
    *out = NULL;
    if (c.workers < CORO_WORKERS_AUTO || c.workers > CORO_MAX_WORKERS)
        return -EINVAL;
    if (c.alloc && (!c.alloc->malloc || !c.alloc->free))
        return -EINVAL;
    if (c.stall_ns < 0)
        return -EINVAL;
    CPU_ZERO(&os);
    if (sched_getaffinity(0, sizeof os, &os) != 0)
        return -errno;
    for (int i = 0; i < CPU_SETSIZE && i < CORO_MAX_CPUS; i++)
        if (CPU_ISSET(i, &os) && (!c.cpus || coro_cpuset_has(c.cpus, i)))
            cpus[ncpus++] = i;
    if (ncpus == 0)
        return -EINVAL;

    coro_sched_t tmp = { .alloc = c.alloc };
    s = coro__alloc_aligned(&tmp, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->alloc = c.alloc;
    s->nworkers = c.workers == CORO_WORKERS_AUTO ? ncpus : c.workers;
    s->nslots = s->nworkers ? s->nworkers : 1;
    s->pin = c.pin;
    s->oversubscribed = s->nworkers > ncpus;
    s->stall_ns = c.stall_ns;
    s->stall_hook = c.stall_hook;
    s->stall_arg = c.stall_arg;
    s->hist = c.histograms;
    s->diag = c.stall_ns > 0 || c.histograms;
    pthread_mutex_init(&s->shut_lock, NULL);
    pthread_mutex_init(&s->cancel_lock, NULL);
    for (int i = 0; i < s->nslots; i++)
        s->all_wmask[i / 64] |= 1ull << (i % 64);

    rc = -ENOMEM;
    s->w = coro__alloc(s, s->nslots * sizeof *s->w);
    if (!s->w)
        goto fail;
    for (int i = 0; i < s->nslots; i++) {
        struct coro__worker *w = coro__alloc_aligned(s, worker_size());
        if (!w)
            goto fail;
        s->w[i] = w;
        w->s = s;
        w->idx = i;
        w->cpu = s->nworkers ? cpus[i % ncpus] : -1;
        w->rng = 0x9e3779b9u * (uint32_t)(i + 1);
        w->served = coro__alloc(s, CORO__MAX_CLASSES * sizeof(uint16_t));
        if (!w->served)
            goto fail;
        ck_ring_buffer_t *b = w->bufs;
        for (int p = 0; p < CORO__NPRIO; p++) {
            coro__lq_init(&w->local[p], b, CORO__LOCAL_SIZE);
            b += CORO__LOCAL_SIZE;
            coro__lq_init(&w->yielded[p], b, CORO__LOCAL_SIZE);
            b += CORO__LOCAL_SIZE;
            coro__mq_init(&w->inbox[p], b, CORO__INBOX_SIZE);
            b += CORO__INBOX_SIZE;
        }
    }
    if ((rc = coro__trace_init(s, &c)) < 0)
        goto fail;
    if ((rc = coro__cls_init(s, cpus, ncpus)) < 0)
        goto fail;
    if ((rc = coro__lot_sched_init(s)) < 0)
        goto fail;
    if ((rc = coro__frames_init(s)) < 0)
        goto fail;
    if ((rc = coro__io_create(s, &s->io)) < 0)
        goto fail;
    if ((rc = coro__blocking_create(s, &c)) < 0)
        goto fail;
    for (int i = 0; i < s->nworkers; i++) {
        struct coro__worker *w = s->w[i];
        rc = -pthread_create(&w->thread, NULL, coro__worker_main, w);
        if (rc < 0) {
            stop_workers(s);
            goto fail;
        }
        w->started = true;
    }
    *out = s;
    return 0;
fail:
    sched_free(s);
    return rc;
}

int coro_sched_destroy(coro_sched_t *s)
{
    if (!s)
        return -EINVAL;
    if (coro__tls_worker && coro__tls_worker->s == s)
        return -EDEADLK;
    int rc = coro_sched_shutdown(s, CORO_DRAIN);
    if (rc < 0)
        return rc;
    stop_workers(s);
    coro__trace_write_env(s);   /* COROKIT_TRACE's file */
    sched_free(s);
    return 0;
}

/* ---- spawn ------------------------------------------------------------------- */

int coro_spawn(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    int prio = opts ? opts->priority : CORO_PRIO_NORMAL;
    int cls = 0;
    uint32_t old;

    if (!s || !co || !fn)
        return -EINVAL;
    if (prio < CORO_PRIO_LOW || prio > CORO_PRIO_HIGH)
        return -EINVAL;
    /* a pool frame: of this scheduler, allocated, not spawned yet */
    uint8_t *pool_st = NULL;
    int pool = coro__frame_check(s, co, &pool_st);
    if (pool < 0)
        return pool;
    if (opts && opts->affinity && (cls = coro__cls_intern(s, opts->affinity)) < 0)
        return cls;
    if (opts && opts->deadline < 0)
        return -EINVAL;
    struct coro__ext *x = NULL;
    if (opts && (opts->deadline > 0 || opts->group || opts->name)) {
        if (!(x = coro__alloc(s, sizeof *x)))
            return -ENOMEM;
        memset(x, 0, sizeof *x);
        x->on_exit = opts->on_exit;
        x->deadline = opts->deadline;
        x->group = opts->group;
        x->job = co;
        x->name = opts->name;
    }
    /* claim the frame: only an idle or finished frame may start, and a
     * finished one only once its finisher let go (EXITING).  acquire: the
     * frame's previous life (its finisher's release) is over; the CAS
     * makes one of two racing spawns win */
    old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t st = old & CORO__S_MASK;
        if (st == CORO__S_DONE && (old & CORO__F_EXITING) && !(old & CORO__JOINERS_MASK) &&
            tls_exiting != co) {
            /* finished, its finisher between the wake-up of its awaiters
             * and its last touch: a coro_done awaiter that resumed at once
             * may spawn it again.  Wait for the finisher to let go (a few
             * instructions; a thread-joined frame's on_exit at most), then
             * look again.  acquire: as the load above */
            for (unsigned spin = 0; (old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE)) &
                                    CORO__F_EXITING; spin++)
                if (spin > 64)
                    sched_yield();
            continue;
        }
        if ((st != CORO__S_IDLE && st != CORO__S_DONE) ||
            (old & (CORO__F_EXITING | CORO__JOINERS_MASK))) {
            if (x)
                coro__free(s, x, sizeof *x);
            return -EBUSY;
        }
        if (__atomic_compare_exchange_n(&co->state, &old,
                                        CORO__S_READY | (pool ? CORO__F_POOL : 0), false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    /* acq_rel on the live word: ordered against shutdown's RMW (top of file) */
    if (__atomic_fetch_add(&s->live, 1, __ATOMIC_ACQ_REL) & CORO__LIVE_CLOSED) {
        if (__atomic_sub_fetch(&s->live, 1, __ATOMIC_ACQ_REL) == CORO__LIVE_CLOSED)
            coro__futex_wake(&s->live, INT_MAX);
        /* give the frame back as it was; a joiner that came meanwhile
         * sees it (acq_rel) and is woken */
        uint32_t prev = __atomic_exchange_n(&co->state, old & CORO__S_MASK, __ATOMIC_ACQ_REL);
        if (prev & CORO__F_THREAD_JOIN)
            coro__futex_wake(&co->state, INT_MAX);
        if (x)
            coro__free(s, x, sizeof *x);
        return -ESHUTDOWN;      /* a pool frame stays the caller's: coro_frame_free */
    }
    if (pool)
        coro__frame_mark_spawned(pool_st);
    co->fn = fn;
    co->resume = 0;
    co->result = 0;
    co->top = co;
    co->sched = s;
    co->next = NULL;
    co->on_exit = opts ? opts->on_exit : NULL;
    co->cls = (uint16_t)cls;
    co->prio = (int8_t)prio;
    co->flags = 0;
    if (x) {
        co->ext = x;
        co->flags = CORO__FL_EXT;
        if (x->group)
            coro__group_join(x->group, x);
    }
    co->wait_obj = NULL;
    coro__trace_spawn(s, co);
    coro__submit(s, co, false);
    return 0;
}

/* ---- single-threaded driving ---------------------------------------------------- */

/* Single-threaded mode: one thread at a time drives the scheduler's only
 * worker (bit CORO__DRIVE_ON of the drive word, see sched_impl.h); it
 * runs jobs and, when none is ready, waits in epoll (coro__park).  A
 * thread that joins a job while another drives must not just sleep: the
 * driver stops once its own job is done, and then nobody would run the
 * joiner's job.  So the joiner registers in the drive word and sleeps on
 * it; the driver bumps the word's sequence after every job that finishes
 * and clears DRIVE_ON when it stops, and wakes the registered sleepers
 * when either happens.  A woken joiner checks its job and tries to take
 * the drive over.  All of it is RMWs on that one word, so they are totally
 * ordered: a joiner's registration either precedes the driver's RMW (which
 * then sees the count and wakes it) or follows it (and then acquires what
 * the driver released: the DONE state of the job, or DRIVE_ON clear).  A
 * sleeper's expected value includes DRIVE_ON and the sequence, so a change
 * between its look and its sleep makes the futex wait return at once.
 * (The sequence wraps after 65,536 finishes: a joiner pre-empted that long
 * between its look and its sleep is woken by the next finish or stop.) */

static void drive_kick(struct coro__worker *w, uint32_t old)
{
    if (old & CORO__DRIVE_WMASK)
        coro__futex_wake(&w->started_st, INT_MAX);
}

/* Run s's only worker on this thread until done(arg) or, when block is
 * false, until no job is ready.  Returns steps run. */
static int drive(coro_sched_t *s, bool (*done)(void *), void *arg, bool block)
{
    struct coro__worker *w = s->w[0];
    struct coro__worker *saved = coro__tls_worker;
    unsigned since_poll = 0;
    int steps = 0;

    coro__tls_worker = w;
    coro__trace_idle(w);        /* idle since its last step: the next one reads the clock */
    while (!done || !done(arg)) {
        coro_t *j = coro__find_work(w);
        if (!j && !block) {
            /* wait for I/O only while some job of s is unfinished: a wait
             * that ended early leaves its timeout in the heap, and that
             * alone must not hold coro_sched_run until its deadline */
            if (s->io && (__atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED) &&
                coro__io_pending(s->io)) {
                coro__io_poll(s->io, -1);
                since_poll = 0;
                continue;
            }
            break;
        }
        if (!j) {
            j = coro__park(w);      /* waits in epoll when I/O is pending */
            since_poll = 0;
        } else if (++since_poll >= CORO__GLOBAL_INTERVAL) {
            /* jobs are always ready (one keeps yielding): look at timers
             * and I/O anyway every 61 steps, or they starve forever (the
             * multi-threaded scheduler has its I/O thread for that) */
            since_poll = 0;
            if (s->io && coro__io_pending(s->io))
                coro__io_poll(s->io, 0);
        }
        if (j) {
            if (coro__run_job(w, j)) {
                /* acq_rel: releases the job's DONE to a joiner that reads
                 * the new sequence; acquires its registration */
                uint32_t old = __atomic_fetch_add(&w->started_st, CORO__DRIVE_SEQ,
                                                  __ATOMIC_ACQ_REL);
                drive_kick(w, old);
            }
            steps++;
        }
    }
    coro__tls_worker = saved;
    return steps;
}

/* only one thread drives a single-threaded scheduler at a time: take the
 * drive if nobody has it */
static bool drive_begin(coro_sched_t *s)
{
    if (s->nworkers != 0)
        return false;
    uint32_t *word = &s->w[0]->started_st;
    uint32_t v = __atomic_load_n(word, __ATOMIC_RELAXED);
    while (!(v & CORO__DRIVE_ON)) {
        /* acquire/release (drive_end): a lock around the worker's
         * owner-only state, handed from one driving thread to the next */
        if (__atomic_compare_exchange_n(word, &v, v | CORO__DRIVE_ON, true, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

static void drive_end(coro_sched_t *s)
{
    struct coro__worker *w = s->w[0];
    /* release: pairs with the next driver's acquire in drive_begin; the
     * RMW sees every joiner registered before it (top of this part) */
    uint32_t old = __atomic_fetch_and(&w->started_st, ~CORO__DRIVE_ON, __ATOMIC_ACQ_REL);
    drive_kick(w, old);
}

int coro_sched_run(coro_sched_t *s)
{
    if (!s || s->nworkers != 0)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    if (!drive_begin(s))
        return -EBUSY;
    int n = drive(s, NULL, NULL, false);
    drive_end(s);
    return n;
}

/* ---- join ------------------------------------------------------------------ */

/* finished, and a blocked joiner may leave: on_exit has returned */
static bool job_done(void *arg)
{
    coro_t *co = arg;
    /* acquire: pairs with coro__finish's release: the result is there */
    uint32_t st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    return (st & CORO__S_MASK) == CORO__S_DONE && !(st & CORO__F_EXITING);
}

/* done, or back to IDLE: its spawn failed after coro_join looked */
static bool job_over(void *arg)
{
    coro_t *co = arg;
    /* acquire: pairs with coro__finish's release: the result is there */
    uint32_t st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    return job_done(co) || (st & CORO__S_MASK) == CORO__S_IDLE;
}

/* Single-threaded: drive s until done(arg), or, while another thread
 * drives, sleep until done(arg) or the drive is free (then take it over).
 * The protocol is at "single-threaded driving". */
static void drive_until_dl(coro_sched_t *s, bool (*done)(void *), void *arg, int64_t deadline);

static void drive_until(coro_sched_t *s, bool (*done)(void *), void *arg)
{
    drive_until_dl(s, done, arg, -1);
}

/* the same, giving up at the absolute deadline (-1 = none): done(arg) must
 * then be true too (see job_over_or_late) */
static void drive_until_dl(coro_sched_t *s, bool (*done)(void *), void *arg, int64_t deadline)
{
    uint32_t *word = &s->w[0]->started_st;
    bool registered = false;

    for (;;) {
        /* acquire: pairs with the driver's RMWs (a finish, drive_end) */
        uint32_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (done(arg))
            break;
        if (!(v & CORO__DRIVE_ON)) {
            if (registered) {
                /* relaxed: leaving only spares the driver wake-ups; one it
                 * sends meanwhile costs a look */
                __atomic_fetch_sub(word, CORO__DRIVE_WAITER, __ATOMIC_RELAXED);
                registered = false;
            }
            if (drive_begin(s)) {
                int64_t saved = coro__tls_drive_deadline;
                coro__tls_drive_deadline = deadline < 0 ? 0 : deadline;
                drive(s, done, arg, true);
                coro__tls_drive_deadline = saved;
                drive_end(s);
                break;
            }
            continue;
        }
        if (!registered) {
            /* acq_rel: ordered against the driver's RMWs on the word */
            __atomic_fetch_add(word, CORO__DRIVE_WAITER, __ATOMIC_ACQ_REL);
            registered = true;
            continue;   /* look again before sleeping */
        }
        coro__futex_wait(word, v, deadline);
    }
    if (registered)     /* relaxed: as above */
        __atomic_fetch_sub(word, CORO__DRIVE_WAITER, __ATOMIC_RELAXED);
}

struct late { coro_t *co; int64_t deadline; };

static bool job_over_or_late(void *arg)
{
    struct late *l = arg;
    return job_over(l->co) || (l->deadline >= 0 && coro__now() >= l->deadline);
}

/* coro_join and coro_join_timeout: wait until co is done (and, when this
 * call was blocked, its finisher let go: EXITING clear) or the absolute
 * deadline (-1 none) passes.  0 with *result, -ETIMEDOUT, -EINVAL,
 * -EDEADLK.  A pool frame counts its blocked joiners (JOINERS): the last
 * one out gives the frame back, even one that timed out just as the job
 * finished. */
static int join_dl(coro_t *co, int64_t deadline, intptr_t *result)
{
    uint32_t st;
    bool reg = false, pool = false;
    int rc = 0;

    /* acquire (here and in the loop below): pairs with coro__finish's
     * release, so a DONE frame's result is complete */
    st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    if ((st & CORO__S_MASK) == CORO__S_IDLE || (st & CORO__S_MASK) == CORO__S_CHILD)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    if (job_done(co)) {
        *result = co->result;   /* its scheduler may be gone: do not touch it */
        return 0;
    }
    coro_sched_t *s = co->sched;
    for (;;) {
        st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
        if ((st & CORO__S_MASK) == CORO__S_DONE) {
            if (!(st & CORO__F_EXITING))
                break;
            if (!reg) {
                /* finished just now, its finisher between the wake-up of
                 * its awaiters (one of which may have sent us here) and
                 * its last touch; it wakes only joiners registered before
                 * it finished: wait out those few instructions */
                sched_yield();
                continue;
            }
        } else if ((st & CORO__S_MASK) == CORO__S_IDLE) {
            return -EINVAL;         /* its spawn failed meanwhile (flags wiped) */
        } else if (!reg) {
            /* register: THREAD_JOIN, and for a pool frame one more joiner,
             * so that the frame stays until we have read the result */
            pool = st & CORO__F_POOL;
            if (pool && (st & CORO__JOINERS_MASK) == CORO__JOINERS_MASK) {
                sched_yield();      /* 255 threads join it already */
                continue;
            }
            uint32_t nw = st | CORO__F_THREAD_JOIN | (pool ? CORO__JOINER_ONE : 0);
            if (!__atomic_compare_exchange_n(&co->state, &st, nw, false, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue;
            reg = true;
            st = nw;
        }
        if (deadline >= 0 && coro__now() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        if (s && s->nworkers == 0) {
            /* single-threaded: drive until co is done, or sleep while
             * another thread drives and take the drive over when it stops */
            if (deadline < 0) {
                drive_until(s, job_over, co);
            } else {
                struct late l = { co, deadline };
                drive_until_dl(s, job_over_or_late, &l, deadline);
            }
            continue;
        }
        coro__futex_wait(&co->state, st, deadline);
    }
    if (rc == 0)
        *result = co->result;
    if (reg && pool) {
        /* acq_rel: our read of the result happens before the frame is
         * given back, by us or by the last other joiner (or its finisher,
         * when it finished after we left) */
        uint32_t left = __atomic_sub_fetch(&co->state, CORO__JOINER_ONE, __ATOMIC_ACQ_REL);
        if (!(left & CORO__JOINERS_MASK) && (left & CORO__S_MASK) == CORO__S_DONE &&
            !(left & CORO__F_EXITING))
            coro__frame_release(co);
    }
    return rc;
}

intptr_t coro_join(coro_t *co)
{
    intptr_t r;

    if (!co)
        return -EINVAL;
    int rc = join_dl(co, -1, &r);
    return rc < 0 ? rc : r;
}

int coro_join_timeout(coro_t *co, int64_t timeout, intptr_t *result)
{
    if (!co || !result || timeout < CORO_FOREVER)
        return -EINVAL;
    int64_t deadline = -1;
    if (timeout >= 0) {
        int64_t now = coro__now();
        deadline = timeout > INT64_MAX - now ? INT64_MAX : now + timeout;
    }
    return join_dl(co, deadline, result);
}

intptr_t coro_block_on(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    if (coro__in_job())
        return -EDEADLK;
    int rc = coro_spawn(s, co, fn, opts);
    if (rc < 0)
        return rc;
    return coro_join(co);
}

/* ---- cancelling one job -------------------------------------------------------- */

int coro_cancel(coro_t *job)
{
    if (!job)
        return -EINVAL;
    /* acquire: a frame spawned by another thread has its sched set */
    uint32_t st = __atomic_load_n(&job->state, __ATOMIC_ACQUIRE);
    uint32_t ls = st & CORO__S_MASK;
    if (ls == CORO__S_IDLE || ls == CORO__S_CHILD)
        return -EINVAL;
    if (ls == CORO__S_DONE || (st & CORO__F_CANCEL))
        return 0;
    coro_sched_t *s = job->sched;
    /* seq_cst: the flag before the sweeps' loads of the registry bits and
     * the I/O request (lib/lot.c REGISTRY, lib/io_epoll.c CANCEL); a
     * parker that misses it is found by them */
    uint32_t old = __atomic_fetch_or(&job->state, CORO__F_CANCEL, __ATOMIC_SEQ_CST);
    if ((old & CORO__S_MASK) == CORO__S_DONE || (old & CORO__F_CANCEL))
        return 0;
    coro__lot_cancel_jobs(s);
    if (s->io)
        coro__io_cancel_jobs(s->io);
    coro__blocking_cancel_jobs(s);
    return 0;
}

/* ---- shutdown ------------------------------------------------------------------- */

static bool all_done(void *arg)
{
    coro_sched_t *s = arg;
    /* acquire: every finished job's effects happen before shutdown returns */
    return __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) == CORO__LIVE_CLOSED;
}

struct all_late { coro_sched_t *s; int64_t deadline; };

static bool all_done_or_late(void *arg)
{
    struct all_late *a = arg;
    return all_done(a->s) || (a->deadline >= 0 && coro__now() >= a->deadline);
}

/* wait until every job finished or the absolute deadline (-1 = none)
 * passed; true when they all finished */
static bool wait_all(coro_sched_t *s, int64_t deadline)
{
    if (s->nworkers == 0) {
        struct all_late a = { s, deadline };
        drive_until_dl(s, all_done_or_late, &a, deadline);
        return all_done(s);
    }
    for (;;) {
        /* acquire: pairs with the finishers' acq_rel decrements */
        uint32_t l = __atomic_load_n(&s->live, __ATOMIC_ACQUIRE);
        if (l == CORO__LIVE_CLOSED)
            return true;
        if (coro__futex_wait(&s->live, l, deadline) == -ETIMEDOUT)
            return all_done(s);
    }
}

/* Any thread, any number of times: one walk at a time (cancel_lock), since a
 * CORO_CANCEL from one thread may meet another thread's timed drain that
 * expires. */
static void cancel_all(coro_sched_t *s)
{
    pthread_mutex_lock(&s->cancel_lock);
    /* order: the flag first, so that a job arming now either sees it or
     * is already in a structure the walks below find */
    __atomic_store_n(&s->cancelling, 1, __ATOMIC_SEQ_CST);
    coro__lot_cancel_sched(s);
    if (s->io)
        coro__io_cancel_all(s->io);
    coro__blocking_cancel(s);
    pthread_mutex_unlock(&s->cancel_lock);
}

/* no spawn succeeds from now on */
static void close_sched(coro_sched_t *s)
{
    /* acq_rel: the RMW that orders every racing spawn (top of file) */
    __atomic_fetch_or(&s->live, CORO__LIVE_CLOSED, __ATOMIC_ACQ_REL);
    /* seq_cst: workers that batch finished jobs see it and flush at once */
    __atomic_store_n(&s->closed, 1, __ATOMIC_SEQ_CST);
}

static int shutdown_(coro_sched_t *s, int mode, int64_t timeout);

int coro_sched_shutdown_timeout(coro_sched_t *s, int64_t timeout)
{
    if (!s || timeout < CORO_FOREVER)
        return -EINVAL;
    return shutdown_(s, CORO_DRAIN, timeout);
}

int coro_sched_shutdown(coro_sched_t *s, int mode)
{
    if (!s || (mode != CORO_DRAIN && mode != CORO_CANCEL))
        return -EINVAL;
    return shutdown_(s, mode, CORO_FOREVER);
}

/* mode CORO_DRAIN with a timeout >= 0: drain until it passes, then cancel */
static int shutdown_(coro_sched_t *s, int mode, int64_t timeout)
{
    int rc = 0;

    if (coro__in_job() || (coro__tls_worker && coro__tls_worker->s == s))
        return -EDEADLK;
    /* A CORO_CANCEL does not queue behind another thread's drain, which may
     * wait forever for the very jobs it is meant to end: it closes and
     * cancels first, then waits like any second call.  acquire: pairs with
     * the release of shut_done below. */
    if (mode == CORO_CANCEL && !__atomic_load_n(&s->shut_done, __ATOMIC_ACQUIRE)) {
        close_sched(s);
        cancel_all(s);
    }
    pthread_mutex_lock(&s->shut_lock);
    /* acquire/release (below): a second shutdown sees the first's work */
    if (__atomic_load_n(&s->shut_done, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&s->shut_lock);
        return 0;
    }
    close_sched(s);
    int64_t deadline = -1;
    if (timeout >= 0) {
        int64_t now = coro__now();
        deadline = timeout > INT64_MAX - now ? INT64_MAX : now + timeout;
    }
    /* single-threaded: another thread may drive: wait our turn */
    if (!wait_all(s, deadline)) {
        cancel_all(s);      /* the drain's time is up */
        wait_all(s, -1);
        rc = -ETIMEDOUT;
    }
    __atomic_store_n(&s->shut_done, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->shut_lock);
    return rc;
}

/* ---- stats ------------------------------------------------------------------------ */

static void worker_stats(struct coro__worker *w, coro_worker_stats_t *o)
{
    memset(o, 0, sizeof *o);
    o->cpu = w->cpu;
    o->pinned = __atomic_load_n(&w->pinned, __ATOMIC_RELAXED);
    o->jobs_run = __atomic_load_n(&w->n_run, __ATOMIC_RELAXED);
    o->steals = __atomic_load_n(&w->n_steals, __ATOMIC_RELAXED);
    o->stolen = __atomic_load_n(&w->n_stolen, __ATOMIC_RELAXED);
    o->parks = __atomic_load_n(&w->n_parks, __ATOMIC_RELAXED);
    o->wakeups = __atomic_load_n(&w->n_wakeups, __ATOMIC_RELAXED);
    o->io_wakeups = __atomic_load_n(&w->n_io, __ATOMIC_RELAXED);
    o->queue_depth = coro__worker_depth(w);
    o->stalls = __atomic_load_n(&w->n_stalls, __ATOMIC_RELAXED);
}

int coro_sched_stats(const coro_sched_t *cs, coro_sched_stats_t *out)
{
    coro_sched_t *s = (coro_sched_t *)cs;

    if (!s || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    out->workers = s->nslots;
    out->histograms = s->hist;
    out->live_jobs = __atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED;
    for (int i = 0; i < s->nworkers; i++)       /* approximate while running */
        out->live_jobs -= __atomic_load_n(&s->w[i]->unflushed, __ATOMIC_RELAXED);
    struct coro__cls *any = coro__cls_get(s, 0);
    for (int p = 0; p < CORO__NPRIO; p++)
        out->global_depth += coro__mq_size(&any->q[p]);
    for (int i = 0; i < s->nslots; i++) {
        struct coro__worker *w = s->w[i];
        coro_worker_stats_t o;
        worker_stats(w, &o);
        out->jobs_run += o.jobs_run;
        out->steals += o.steals;
        out->stolen += o.stolen;
        out->parks += o.parks;
        out->wakeups += o.wakeups;
        out->io_wakeups += o.io_wakeups;
        out->queue_depth += o.queue_depth;
        out->stalls += o.stalls;
        if (!s->hist)
            continue;
        /* owner-only counters, read racily (relaxed) */
        for (int b = 0; b < CORO_HIST_BUCKETS; b++) {
            for (int p = 0; p < CORO__NPRIO; p++)
                out->hist_ready[p][b] += __atomic_load_n(&w->h_ready[p][b], __ATOMIC_RELAXED);
            out->hist_step[b] += __atomic_load_n(&w->h_step[b], __ATOMIC_RELAXED);
            out->hist_io[b] += __atomic_load_n(&w->h_io[b], __ATOMIC_RELAXED);
        }
    }
    return 0;
}

int coro_sched_worker_stats(const coro_sched_t *cs, int i, coro_worker_stats_t *out)
{
    if (!cs || !out)
        return -EINVAL;
    if (i < 0 || i >= cs->nslots)
        return -ERANGE;
    worker_stats(cs->w[i], out);
    return 0;
}
