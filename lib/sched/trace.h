/* SPDX-License-Identifier: MIT */
/* private: the built-in tracer's hooks (lib/sched/trace.c); never installed.
 *
 * Every hook is an inline function whose whole cost while tracing is off
 * is one load and one predictable branch (`if (CORO__UNLIKELY(...))`):
 * the scheduler's `trace` pointer, or a worker's `tring`, is NULL.  When
 * on, a worker appends its 32-byte events to its own ring inline (a few
 * plain stores, no call); other threads call coro__trace_any in
 * sched/trace.c, which picks their ring (see its opening essay). */
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

/* One event: 32 bytes, four words.  meta = type (bits 0-3) | why (4-7,
 * STEP only) | prio as a byte (8-15, read back as int8_t) | cls (16-31) | x
 * (32-63).  The slots are never read before written (the reader copies
 * only the last min(head, cap) of them), so a new ring is not zeroed. */
struct coro__tev {
    uint64_t ts, a, b, meta;
};

struct coro__tring {
    uint64_t head;          /* events ever written; atomic (the writer's release) */
    uint32_t mask;          /* cap - 1 */
    uint32_t lock;          /* the shared ring only: its writers' spinlock */
    /* a worker's ring only, owner-only plain words (the clock readings a
     * worker saves, coro__tr_stamp): */
    uint64_t t_now;         /* the start of the step it runs (stamps its events) */
    uint64_t t_next;        /* the end of its last step when that step finished the
                               job and nothing happened since: the next step's
                               start; 0 = read the clock */
    struct coro__tev ev[] __attribute__((aligned(CORO__CACHELINE)));
};

/* the most events a writer fills before one release of head (a step and
 * the await that ended it): the reader drops as many slots (trace.c) */
#define CORO__TR_BATCH 2u

#define CORO__TR_META(type, prio, cls, x)                                          \
    ((uint64_t)(type) | (uint64_t)(uint8_t)(prio) << 8 | (uint64_t)(uint16_t)(cls) << 16 | \
     (uint64_t)(x) << 32)

struct coro__trace;

/* sched/trace.c */
CORO__HIDDEN int coro__trace_init(coro_sched_t *s, const coro_sched_config_t *c);
/* at destroy, once the workers stopped: write COROKIT_TRACE's file, if set */
CORO__HIDDEN void coro__trace_write_env(coro_sched_t *s);
/* free the rings: after every thread that records into them is gone */
CORO__HIDDEN void coro__trace_fini(coro_sched_t *s);
/* record from a thread of s that is not one of its workers: the I/O
 * thread's ring or the shared one (under its lock); ts taken here */
CORO__HIDDEN void coro__trace_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta);
CORO__HIDDEN void coro__trace_io_thread_(coro_sched_t *s);
/* a step of at least 2^32 ticks: the step, then LONG (its end), then the
 * await's name if aw (the rare case of coro__trace_step, out of line) */
CORO__HIDDEN void coro__trace_long(struct coro__tring *r, const void *job, const void *fn,
                                   uint64_t meta, uint64_t t0, uint64_t now, const char *await);

/* ---- recording (inline: the worker's hot path) --------------------------------- */

static inline uint64_t coro__trace_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return (uint64_t)coro__now();
#endif
}

/* the next event's number in r: the caller is r's only writer */
static inline uint64_t coro__tr_head(const struct coro__tring *r)
{
    /* relaxed: only this thread stores head */
    return __atomic_load_n(&r->head, __ATOMIC_RELAXED);
}

/* fill slot h of r; not visible to a reader before coro__tr_publish */
static inline void coro__tr_set(struct coro__tring *r, uint64_t h, uint64_t ts, const void *a,
                                const void *b, uint64_t meta)
{
    struct coro__tev *e = &r->ev[h & r->mask];
    /* relaxed: the release store of head in coro__tr_publish publishes
     * them; a reader racing us drops this slot (trace.c's opening essay) */
    __atomic_store_n(&e->ts, ts, __ATOMIC_RELAXED);
    __atomic_store_n(&e->a, (uint64_t)(uintptr_t)a, __ATOMIC_RELAXED);
    __atomic_store_n(&e->b, (uint64_t)(uintptr_t)b, __ATOMIC_RELAXED);
    __atomic_store_n(&e->meta, meta, __ATOMIC_RELAXED);
}

/* events before number h are written */
static inline void coro__tr_publish(struct coro__tring *r, uint64_t h)
{
    /* release: the events' words before the count a reader acquires */
    __atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
}

/* one event into r, the caller's own ring, stamped ts */
static inline void coro__tr_put_at(struct coro__tring *r, uint64_t ts, const void *a,
                                   const void *b, uint64_t meta)
{
    uint64_t h = coro__tr_head(r);
    coro__tr_set(r, h, ts, a, b, meta);
    coro__tr_publish(r, h + 1);
}

/* one event into r, the caller's own ring (not a worker's), stamped now */
static inline void coro__tr_put(struct coro__tring *r, const void *a, const void *b, uint64_t meta)
{
    coro__tr_put_at(r, coro__trace_clock(), a, b, meta);
}

/* The stamp of an event of worker ring r (the clock reading, about 13 ns
 * on this machine's rdtsc, is most of what tracing costs a short job).
 * In a job step - spawns and wakes - the step's start: an event is shown
 * at the start of the step that made it, not where in the step.  Between
 * steps - steals, parks, nudges, polls - the clock, and the next step
 * reads the clock again rather than start at the last one's end (the
 * worker did something else meanwhile). */
static inline uint64_t coro__tr_stamp(struct coro__tring *r)
{
    if (coro__tls_in_job)
        return r->t_now;
    r->t_next = 0;
    return coro__trace_clock();
}

/* from any thread of s: a worker of s writes its own ring inline */
static inline void coro__tr_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta)
{
    struct coro__worker *w = coro__tls_worker;
    if (CORO__LIKELY(w && w->s == s))
        coro__tr_put_at(w->tring, coro__tr_stamp(w->tring), a, b, meta);
    else
        coro__trace_any(s, a, b, meta);
}

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
        coro__tr_any(s, job, (const void *)job->fn,
                     CORO__TR_META(CORO__TR_SPAWN, job->prio, job->cls, 0));
}

static inline void coro__trace_wake(coro_t *job)
{
    if (CORO__UNLIKELY(job->sched->trace))
        coro__tr_any(job->sched, job, NULL, CORO__TR_META(CORO__TR_WAKE, job->prio, job->cls, 0));
}

/* a plain thread's record in the lot is woken (lib/wait/lot.c): w->sched is not set
 * for those, so the scheduler is the waker's, if it is a worker */
static inline void coro__trace_thread_wake(const coro_t *rec)
{
    struct coro__worker *w = coro__tls_worker;
    if (w && CORO__UNLIKELY(w->tring)) {
        coro__tr_put_at(w->tring, coro__tr_stamp(w->tring), rec, NULL, CORO__TR_THREAD_WAKE);
        w->tring->t_next = 0;       /* a futex wake follows: not the next step's */
    }
}

/* a step of a job begins: its start time (0 when tracing is off).  After
 * a step that finished its job, with nothing but the job's finish and
 * taking this job from a queue since (coro__trace_idle and the events
 * between steps reset t_next), the end of that step: one clock reading
 * per job, not two. */
static inline uint64_t coro__trace_begin(struct coro__worker *w)
{
    struct coro__tring *r = w->tring;

    if (CORO__LIKELY(!r))
        return 0;
    uint64_t t = r->t_next;
    r->t_next = 0;
    if (!t)
        t = coro__trace_clock();
    r->t_now = t;
    return t;
}

/* the worker found no work (coro__find_work), or a thread begins to drive
 * a single-threaded scheduler: its next step reads the clock */
static inline void coro__trace_idle(struct coro__worker *w)
{
    if (CORO__UNLIKELY(w->tring))
        w->tring->t_next = 0;
}

/* the step that began at *t0 ends (why: CORO__TR_END_*; aw: the await, for
 * AWAIT, recorded before arm: the job may be gone once arm returned
 * PENDING); *t0 = now (the next step, when the await completes at once).
 * One event per step, two when it ends at an await, published together;
 * aw is a constant at every call site, so its test folds away. */
static inline void coro__trace_step(struct coro__worker *w, coro_t *job, uint64_t *t0,
                                    unsigned why, const coro_await_t *aw)
{
    struct coro__tring *r = w->tring;

    if (CORO__UNLIKELY(r)) {
        uint64_t now = coro__trace_clock(), d = now - *t0, h = coro__tr_head(r);
        uint64_t meta = CORO__TR_META(CORO__TR_STEP | why << 4, job->prio, job->cls, 0);
        if (CORO__UNLIKELY(d >= UINT32_MAX)) {
            coro__trace_long(r, job, (const void *)job->fn, meta, *t0, now,
                             aw ? aw->ops->name : NULL);
        } else {
            coro__tr_set(r, h, *t0, job, (const void *)job->fn, meta | d << 32);
            if (aw)
                coro__tr_set(r, ++h, now, job, aw->ops->name, CORO__TR_AWAIT);
            coro__tr_publish(r, h + 1);
        }
        *t0 = now;
        r->t_now = now;     /* the step goes on when the await completes at once */
        /* a finished job: coro__finish frees its frame and wakes its
         * joiner, then the worker takes its next job, which starts here -
         * unless an on_exit hook (user code) runs first, or the finish
         * wakes a thread or a parked worker (a system call: those hooks
         * clear t_next) */
        if (why == CORO__TR_END_DONE)
            r->t_next = job->on_exit ? 0 : now;
    }
}

/* a worker took jobs from another (never in a step): what it took is what
 * it runs next, so that step starts at this event's stamp (t_next) */
static inline void coro__trace_steal(struct coro__worker *w, int victim, unsigned n)
{
    struct coro__tring *r = w->tring;

    if (CORO__UNLIKELY(r)) {
        uint64_t t = coro__trace_clock();
        coro__tr_put_at(r, t, (const void *)(uintptr_t)victim, NULL,
                        CORO__TR_META(CORO__TR_STEAL, 0, 0, n));
        r->t_next = t;
    }
}

/* a worker goes to sleep (awake false) or is awake again (never in a
 * step); park returns the job it found, if any, right after either */
static inline void coro__trace_park(struct coro__worker *w, bool awake)
{
    struct coro__tring *r = w->tring;

    if (CORO__UNLIKELY(r)) {
        uint64_t t = coro__trace_clock();
        coro__tr_put_at(r, t, NULL, NULL, awake ? CORO__TR_UNPARK : CORO__TR_PARK);
        r->t_next = awake ? t : 0;
    }
}

/* the caller claimed parked worker idx and wakes it (a futex wake
 * follows: a worker's next step reads the clock) */
static inline void coro__trace_nudge(coro_sched_t *s, int idx)
{
    if (CORO__UNLIKELY(s->trace)) {
        struct coro__worker *w = coro__tls_worker;
        coro__tr_any(s, NULL, NULL, CORO__TR_META(CORO__TR_NUDGE, 0, 0, (unsigned)idx));
        if (w && w->s == s)
            w->tring->t_next = 0;
    }
}

/* n < 0: epoll_wait is about to begin; else it returned n events */
static inline void coro__trace_poll(coro_sched_t *s, int n)
{
    if (CORO__UNLIKELY(s->trace))
        coro__tr_any(s, NULL, NULL,
                     n < 0 ? CORO__TR_POLL0 : CORO__TR_META(CORO__TR_POLL1, 0, 0, (unsigned)n));
}

#endif
