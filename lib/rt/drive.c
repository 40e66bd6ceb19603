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
#include <limits.h>

#include "rt/rt.h"
#include "sched/trace.h"

static void drive_kick(struct coro__worker *w, uint32_t old)
{
    if (old & CORO__DRIVE_WMASK)
        coro__futex_wake(&w->started_st, INT_MAX);
}

/* a job finished on the driving thread: tell the joiners sleeping on
 * the drive word */
void coro__drive_finished(struct coro__worker *w)
{
    /* acq_rel: releases the job's DONE to a joiner that reads the new
     * sequence; acquires its registration */
    uint32_t old = __atomic_fetch_add(&w->started_st, CORO__DRIVE_SEQ, __ATOMIC_ACQ_REL);
    drive_kick(w, old);
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
            if (s->io && (__atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED) &&
                coro__io_pending(s->io)) {
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
     * RMW sees every joiner registered before it (top of file) */
    uint32_t old = __atomic_fetch_and(&w->started_st, ~CORO__DRIVE_ON, __ATOMIC_ACQ_REL);
    drive_kick(w, old);
}

int coro_sched_run(coro_sched_t *s)
{
    if (!s || s->nworkers != 0)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    if (!coro__drive_begin(s))
        return -EBUSY;
    int e = errno;      /* epoll and futex waits, jobs run here: errno is the caller's */
    int n = drive(s, NULL, NULL, false);
    coro__drive_end(s);
    errno = e;
    return n;
}

/* the same, giving up at the absolute deadline (-1 = none): done(arg) must
 * then be true too (see job_over_or_late) */
void coro__drive_until_dl(coro_sched_t *s, bool (*done)(void *), void *arg, int64_t deadline)
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
            if (coro__drive_begin(s)) {
                int64_t saved = coro__tls_drive_deadline;
                coro__tls_drive_deadline = deadline < 0 ? 0 : deadline;
                drive(s, done, arg, true);
                coro__tls_drive_deadline = saved;
                coro__drive_end(s);
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
        /* a virtual deadline is no CLOCK_MONOTONIC time: the driver's
         * finishes and its stop wake us to look at it */
        coro__futex_wait(word, v, s->vtime ? -1 : deadline);
    }
    if (registered)     /* relaxed: as above */
        __atomic_fetch_sub(word, CORO__DRIVE_WAITER, __ATOMIC_RELAXED);
}
