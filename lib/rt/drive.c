/* SPDX-License-Identifier: MIT */
/* Driving a single-threaded scheduler: the thread that calls coro_sched_run,
 * coro_join or shutdown on a scheduler without workers runs its only
 * worker itself, and the drive word hands that worker from one such thread
 * to the next.  Layer 5 (the runtime).
 *
 * Single-threaded mode: one thread at a time drives the scheduler's only
 * worker (bit CORO__DRIVE_ON of the drive word, see sched/sched.h); it
 * runs jobs and, when none is ready, waits in epoll (coro__park).  A
 * thread that joins a job while another drives must not just sleep: the
 * driver stops once its own job is done, and then nobody would run the
 * joiner's job.  So the joiner waits in the drive queue until its job is
 * over or the drive is free, and then takes the drive over.
 *
 * THE DRIVE QUEUE.  Each waiting thread queues a node of its own (on its
 * stack) under s->drive_lock and sleeps on the node's futex word (kick).
 * A thread that waits for one job (coro_join, coro_block_on) is chained by
 * that job's address (drive_job); one that waits for anything else
 * (shutdown's "every job ended") is on drive_any.  Kicks:
 *   - the end of a job a plain thread joins (coro__drive_job_ended, from
 *     the finish or a failed spawn, which know: F_THREAD_JOIN) kicks the
 *     nodes chained under that job only;
 *   - every finish on the driver kicks the drive_any nodes (and, with
 *     virtual time, every node: a virtual deadline is no CLOCK_MONOTONIC
 *     time, so finishes are when waiters look at it);
 *   - the driver stopping kicks one node, to take the drive over; a node
 *     that then leaves without driving (its job ended meanwhile) passes
 *     that kick on, so the drive is never free while a waiter sleeps.
 * So a thread waits without a wake-up per job that others' jobs run, and
 * the driver's cost per finish does not grow with the waiters.
 * Ordering: a node is queued before its thread counts itself in the
 * drive word (an RMW) and looks at its job and the drive again; the
 * driver makes a job's end or its stop visible (RMWs) before it takes the
 * lock to look for nodes.  Either the driver's look finds the node, or the
 * node's look comes after the driver's unlock and sees what changed.  A
 * kick stores 1 (release) and wakes; the sleeper exchanges it back to 0
 * (acquire) before each look, and sleeps only while it reads 0.  A node
 * leaves the queue before its thread returns: kicks touch it only under
 * the lock. */
#include <limits.h>

#include "rt/rt.h"
#include "sched/trace.h"

/* a thread waiting in coro__drive_until_dl while another drives */
struct coro__drive_node {
    uint32_t kick;                      /* futex: 1 once told to look */
    const coro_t *co;                   /* the job it waits for, or NULL: any */
    struct coro__drive_node *next, **prevp;
};

/* a job's chain: Fibonacci hashing of its address, whose top bits mix all
 * of them (frames on the threads' stacks sit at the same offset of
 * regions megabytes apart: their low bits agree) */
static struct coro__drive_node **chain(coro_sched_t *s, const coro_t *co)
{
    _Static_assert(CORO__DRIVE_BUCKETS == 64, "the top 6 bits choose the chain");
    if (!co)
        return &s->drive_any;
    uint64_t h = (uint64_t)(uintptr_t)co * 0x9e3779b97f4a7c15u;
    return &s->drive_job[h >> 58];
}

/* under drive_lock */
static void kick_node(struct coro__drive_node *n)
{
    /* release: what made us kick (a job's end, the drive let go) is seen
     * by the sleeper's acquire exchange */
    __atomic_store_n(&n->kick, 1, __ATOMIC_RELEASE);
    coro__futex_wake(&n->kick, 1);
}

static void kick_chain(struct coro__drive_node *n, const coro_t *co)
{
    for (; n; n = n->next)
        if (!co || n->co == co)
            kick_node(n);
}

/* under drive_lock: one waiter, to take the drive over */
static void kick_one(coro_sched_t *s)
{
    if (s->drive_any) {
        kick_node(s->drive_any);
        return;
    }
    for (int i = 0; i < CORO__DRIVE_BUCKETS; i++)
        if (s->drive_job[i]) {
            kick_node(s->drive_job[i]);
            return;
        }
}

static void queue(coro_sched_t *s, struct coro__drive_node *n)
{
    struct coro__drive_node **h = chain(s, n->co);

    coro__spin_lock(&s->drive_lock);
    n->next = *h;
    n->prevp = h;
    if (*h)
        (*h)->prevp = &n->next;
    *h = n;
    if (!n->co)     /* relaxed: published by the RMW below */
        __atomic_store_n(&s->drive_nany, s->drive_nany + 1, __ATOMIC_RELAXED);
    coro__spin_unlock(&s->drive_lock);
    /* acq_rel: ordered against the driver's RMWs on the word (top of file) */
    __atomic_fetch_add(&s->w[0]->started_st, CORO__DRIVE_WAITER, __ATOMIC_ACQ_REL);
}

/* pass: this thread leaves for good; if the drive is free, another
 * waiter must take it, in case the kick that said so was ours */
static void unqueue(coro_sched_t *s, struct coro__drive_node *n, bool pass)
{
    uint32_t *word = &s->w[0]->started_st;

    /* relaxed: leaving only spares the driver a look at the queue */
    __atomic_fetch_sub(word, CORO__DRIVE_WAITER, __ATOMIC_RELAXED);
    coro__spin_lock(&s->drive_lock);
    *n->prevp = n->next;
    if (n->next)
        n->next->prevp = n->prevp;
    if (!n->co)     /* relaxed: a count under the lock; the driver's look is a hint */
        __atomic_store_n(&s->drive_nany, s->drive_nany - 1, __ATOMIC_RELAXED);
    /* acquire: after the unlock of a driver's stop that kicked us */
    if (pass && !(__atomic_load_n(word, __ATOMIC_ACQUIRE) & CORO__DRIVE_ON))
        kick_one(s);
    coro__spin_unlock(&s->drive_lock);
}

/* co, which a plain thread joins (F_THREAD_JOIN), ended or went back to
 * IDLE: kick the threads that wait for it in the drive queue.  After the
 * RMW that made that visible; co's address only is used */
void coro__drive_job_ended(coro_sched_t *s, const coro_t *co)
{
    coro__spin_lock(&s->drive_lock);
    kick_chain(*chain(s, co), co);
    coro__spin_unlock(&s->drive_lock);
}

/* a job finished on the driving thread: kick the waiters any finish
 * concerns */
void coro__drive_finished(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    /* acq_rel: releases the job's end to a waiter whose RMW follows;
     * acquires the queueing of one whose RMW came first */
    uint32_t old = __atomic_fetch_add(&w->started_st, CORO__DRIVE_SEQ, __ATOMIC_ACQ_REL);
    if (!(old & CORO__DRIVE_WMASK))
        return;
    if (s->vtime) {
        coro__spin_lock(&s->drive_lock);
        kick_chain(s->drive_any, NULL);
        for (int i = 0; i < CORO__DRIVE_BUCKETS; i++)
            kick_chain(s->drive_job[i], NULL);
        coro__spin_unlock(&s->drive_lock);
    } else if (__atomic_load_n(&s->drive_nany, __ATOMIC_RELAXED)) {
        coro__spin_lock(&s->drive_lock);
        kick_chain(s->drive_any, NULL);
        coro__spin_unlock(&s->drive_lock);
    }
}

bool coro__drive_may_wake(coro_sched_t *s)
{
    /* relaxed: a count; the jobs it counts run on this thread */
    if (!s->io || !(__atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED) ||
        !coro__io_pending(s->io))
        return false;
    if (coro__io_fd_waiters(s->io) != 0 || coro__blocking_calls(s) != 0)
        return true;
    /* only timers: one that ever fires (a timer at INT64_MAX is a sleep
     * without end, in its heap only to be found by a cancel: base.h,
     * coro__due_by) */
    int64_t a = coro__io_next_timer(s->io), b = coro__parklot_timers_next(s);
    return (a < b ? a : b) != INT64_MAX;
}

/* Run s's only worker on this thread until done(arg) or, when block is
 * false, until no job is ready.  Returns steps run. */
static int drive(coro_sched_t *s, bool (*done)(void *), void *arg, bool block)
{
    struct coro__worker *w = s->w[0];
    struct coro__worker *saved = coro__tls_worker;
    int steps = 0;

    if (CORO__UNLIKELY(s->vt != NULL))      /* .virtual_time or .seed: rt/vtime.c */
        return coro__vt_drive(s, done, arg, block, -1);
    coro__tls_worker = w;
    coro__trace_pause(w);       /* idle since its last step: the next one reads the clock */
    while (!done || !done(arg)) {
        coro_t *j = coro__find_work(w);
        if (!j && !block) {
            /* wait for I/O only while some job of s is unfinished: a wait
             * that ended early leaves its timeout in the heap, and that
             * alone must not hold coro_sched_run until its deadline */
            if (coro__drive_may_wake(s)) {
                coro__io_poll(s->io, -1);
                continue;
            }
            break;
        }
        if (!j) {
            j = coro__park(w);      /* waits in epoll when I/O is pending */
        } else if (s->io && coro__look_due(w)) {
            /* jobs are always ready (one keeps yielding): look at timers
             * and I/O anyway, at a busy worker's points (sched/worker.c,
             * BUSY LOOKS), or they starve forever */
            coro__io_poll(s->io, 0);
        }
        if (j) {
            if (coro__run_job(w, j))
                coro__drive_finished(w);
            if (steps < INT_MAX)    /* coro_sched_run's count: held at INT_MAX */
                steps++;
        }
    }
    coro__trace_pause(w);       /* ends its open run (sched/trace.h) before another thread drives */
    coro__tls_worker = saved;
    return steps;
}

/* only one thread drives a single-threaded scheduler at a time: take the
 * drive if nobody has it */
bool coro__drive_begin(coro_sched_t *s)
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

void coro__drive_end(coro_sched_t *s)
{
    struct coro__worker *w = s->w[0];
    /* release: pairs with the next driver's acquire in drive_begin; the
     * RMW sees every waiter counted before it (top of file) */
    uint32_t old = __atomic_fetch_and(&w->started_st, ~CORO__DRIVE_ON, __ATOMIC_ACQ_REL);
    if (old & CORO__DRIVE_WMASK) {
        coro__spin_lock(&s->drive_lock);
        kick_one(s);
        coro__spin_unlock(&s->drive_lock);
    }
}

int coro_sched_run(coro_sched_t *s)
{
    if (!s || s->nworkers != 0)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    /* pinned: the last job may end here and a destroy waiting for it free
     * s before we let the drive go (sched/pin.c); past destroy's wait,
     * nothing is left to run */
    int tok = coro__pin_sched(s);
    if (tok == CORO__PIN_NONE)
        return 0;
    if (!coro__drive_begin(s)) {
        coro__unpin(tok);
        return -EBUSY;
    }
    int e = errno;      /* epoll and futex waits, jobs run here: errno is the caller's */
    int n = drive(s, NULL, NULL, false);
    coro__drive_end(s);
    coro__unpin(tok);
    errno = e;
    return n;
}

/* the same, giving up at the absolute deadline (-1 = none): done(arg) must
 * then be true too (see job_over_or_late).  co: the job whose end makes
 * done(arg) true, or NULL when any finish may (THE DRIVE QUEUE) */
void coro__drive_until_dl(coro_sched_t *s, const coro_t *co, bool (*done)(void *), void *arg,
                          int64_t deadline)
{
    uint32_t *word = &s->w[0]->started_st;
    struct coro__drive_node n = { .co = co };
    bool queued = false;

    for (;;) {
        /* acquire: pairs with the driver's RMWs (a finish, drive_end) */
        uint32_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (done(arg))
            break;
        if (!(v & CORO__DRIVE_ON)) {
            if (queued) {
                /* no pass: we take the drive, or whoever took it kicks
                 * a waiter when it stops */
                unqueue(s, &n, false);
                queued = false;
            }
            if (coro__drive_begin(s)) {
                int64_t saved = coro__tls_drive_deadline;
                coro__tls_drive_deadline = deadline < 0 ? 0 : deadline;
                drive(s, done, arg, true);
                coro__tls_drive_deadline = saved;
                coro__drive_end(s);
                return;
            }
            continue;
        }
        if (!queued) {
            queue(s, &n);
            queued = true;
            continue;   /* look again before sleeping */
        }
        /* acquire: pairs with a kick's release; a kick since our last look
         * means look again */
        if (__atomic_exchange_n(&n.kick, 0, __ATOMIC_ACQUIRE))
            continue;
        /* a virtual deadline is no CLOCK_MONOTONIC time: the driver's
         * finishes kick us to look at it */
        coro__futex_wait(&n.kick, 0, s->vtime ? -1 : deadline);
    }
    if (queued)
        unqueue(s, &n, true);
}
