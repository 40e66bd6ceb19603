/* SPDX-License-Identifier: MIT */
/* private: the built-in tracer's hooks (lib/sched/trace.c); never installed.
 *
 * Every hook is an inline function whose whole cost while tracing is off
 * is one load and one predictable branch (`if (CORO__UNLIKELY(...))`):
 * the scheduler's `trace` pointer, or a worker's `tring`, is NULL.  When
 * on, the out-of-line recorder in sched/trace.c appends one 32-byte event to the
 * calling thread's ring (see the opening essay of sched/trace.c). */
#ifndef COROKIT_LIB_TRACE_H
#define COROKIT_LIB_TRACE_H

#include "sched/sched.h"

/* event types */
enum {
    CORO__TR_SPAWN = 1,     /* a = job, b = body, prio, cls */
    CORO__TR_STEP,          /* a job step: ts = its start, a = job, b = body, prio,
                               cls, x = its length in clock ticks, y = CORO__TR_END_* */
    CORO__TR_AWAIT,         /* follows a step that ended at an await: a = job,
                               b = the await's name */
    CORO__TR_LONG,          /* follows a step too long for x: ts = its end */
    CORO__TR_WAKE,          /* a = job made READY, prio, cls */
    CORO__TR_STEAL,         /* a = victim worker, x = jobs taken */
    CORO__TR_PARK,          /* a worker goes to sleep */
    CORO__TR_UNPARK,        /* ... and is awake again */
    CORO__TR_NUDGE,         /* this thread woke parked worker x */
    CORO__TR_POLL0,         /* epoll_wait begins */
    CORO__TR_POLL1,         /* epoll_wait returned x events */
    CORO__TR_THREAD_WAKE,   /* a plain thread waiting in the lot is woken: a = its record */
};
enum { CORO__TR_END_DONE = 0, CORO__TR_END_YIELD, CORO__TR_END_AWAIT };

struct coro__tring;
struct coro__trace;

/* sched/trace.c */
CORO__HIDDEN int coro__trace_init(coro_sched_t *s, const coro_sched_config_t *c);
/* at destroy, once the workers stopped: write COROKIT_TRACE's file, if set */
CORO__HIDDEN void coro__trace_write_env(coro_sched_t *s);
/* free the rings: after every thread that records into them is gone */
CORO__HIDDEN void coro__trace_fini(coro_sched_t *s);
/* record into ring r (the caller's own: a worker's or the I/O thread's) */
CORO__HIDDEN void coro__trace_put(struct coro__tring *r, unsigned type, const void *a,
                                  const void *b, int prio, unsigned cls, unsigned x);
/* record from any thread of s: picks the calling thread's ring */
CORO__HIDDEN void coro__trace_any(coro_sched_t *s, unsigned type, const void *a, const void *b,
                                  int prio, unsigned cls, unsigned x);
CORO__HIDDEN void coro__trace_io_thread_(coro_sched_t *s);
/* a job step that began at *t0 ends now: record it (and the await's name);
 * *t0 = now (the next step, when the await completes at once) */
CORO__HIDDEN void coro__trace_step_(struct coro__worker *w, coro_t *job, uint64_t *t0,
                                    unsigned why, const coro_await_t *aw);
CORO__HIDDEN uint64_t coro__trace_clock(void);

/* ---- the hooks ---------------------------------------------------------------- */

/* the calling thread is s's I/O thread (io_main): its events go to the I/O lane */
static inline void coro__trace_io_thread(coro_sched_t *s)
{
    if (CORO__UNLIKELY(s->trace))
        coro__trace_io_thread_(s);
}

static inline void coro__trace_spawn(coro_sched_t *s, coro_t *job)
{
    if (CORO__UNLIKELY(s->trace))
        coro__trace_any(s, CORO__TR_SPAWN, job, (const void *)job->fn, job->prio, job->cls, 0);
}

static inline void coro__trace_wake(coro_t *job)
{
    if (CORO__UNLIKELY(job->sched->trace))
        coro__trace_any(job->sched, CORO__TR_WAKE, job, NULL, job->prio, job->cls, 0);
}

/* a plain thread's record in the lot is woken (lib/wait/lot.c): w->sched is not set
 * for those, so the scheduler is the waker's, if it is a worker */
static inline void coro__trace_thread_wake(const coro_t *rec)
{
    struct coro__worker *w = coro__tls_worker;
    if (w && CORO__UNLIKELY(w->tring))
        coro__trace_put(w->tring, CORO__TR_THREAD_WAKE, rec, NULL, 0, 0, 0);
}

/* a step of a job begins: its start time (0 when tracing is off) */
static inline uint64_t coro__trace_begin(struct coro__worker *w)
{
    return CORO__UNLIKELY(w->tring) ? coro__trace_clock() : 0;
}

/* the step that began at *t0 ends (why: CORO__TR_END_*; aw: the await, for
 * AWAIT, recorded before arm: the job may be gone once arm returned
 * PENDING).  One event per step (two when it ends at an await). */
static inline void coro__trace_step(struct coro__worker *w, coro_t *job, uint64_t *t0,
                                    unsigned why, const coro_await_t *aw)
{
    if (CORO__UNLIKELY(w->tring))
        coro__trace_step_(w, job, t0, why, aw);
}

static inline void coro__trace_steal(struct coro__worker *w, int victim, unsigned n)
{
    if (CORO__UNLIKELY(w->tring))
        coro__trace_put(w->tring, CORO__TR_STEAL, (const void *)(uintptr_t)victim, NULL, 0, 0, n);
}

static inline void coro__trace_park(struct coro__worker *w, bool awake)
{
    if (CORO__UNLIKELY(w->tring))
        coro__trace_put(w->tring, awake ? CORO__TR_UNPARK : CORO__TR_PARK, NULL, NULL, 0, 0, 0);
}

/* the caller claimed parked worker idx and wakes it */
static inline void coro__trace_nudge(coro_sched_t *s, int idx)
{
    if (CORO__UNLIKELY(s->trace))
        coro__trace_any(s, CORO__TR_NUDGE, NULL, NULL, 0, 0, (unsigned)idx);
}

/* n < 0: epoll_wait is about to begin; else it returned n events */
static inline void coro__trace_poll(coro_sched_t *s, int n)
{
    if (CORO__UNLIKELY(s->trace))
        coro__trace_any(s, n < 0 ? CORO__TR_POLL0 : CORO__TR_POLL1, NULL, NULL, 0, 0,
                        n < 0 ? 0 : (unsigned)n);
}

#endif
