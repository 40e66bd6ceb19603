/* SPDX-License-Identifier: MIT */
/* private: the built-in tracer's hooks (lib/sched/trace.c); never installed.
 *
 * Every hook is an inline function whose whole cost while tracing is off
 * is one load and one predictable branch (`if (CORO__UNLIKELY(...))`):
 * the scheduler's `trace` pointer, or a worker's `trace_ring`, is NULL.  When
 * on, a worker appends its 32-byte events to its own ring inline (a few
 * plain stores, no call); other threads call coro__trace_any in
 * sched/trace.c, which picks their ring (see its opening essay). */
#ifndef COROKIT_LIB_TRACE_H
#define COROKIT_LIB_TRACE_H

#include "sched/sched.h"

#include <pthread.h>
#include <time.h>

/* event types */
enum {
    CORO__TRACE_SPAWN = 1,     /* a = job, b = body, prio, cls */
    CORO__TRACE_STEP,          /* a job step: a = job, b = body, prio, cls, why = its
                               end (CORO__TRACE_END_*) and whether its start and end
                               were read (CORO__TRACE_NOSTART, CORO__TRACE_NOEND): ts =
                               its start, x = its length in clock ticks, when both
                               were; ts = its start (NOEND) or its end (NOSTART)
                               when one was; ts = 0 when neither */
    CORO__TRACE_AWAIT,         /* follows a step that ended at an await: a = job,
                               b = the await's name */
    CORO__TRACE_LONG,          /* follows a step too long for x: ts = its end */
    CORO__TRACE_WAKE,          /* a = job made READY, prio, cls */
    CORO__TRACE_STEAL,         /* a = victim worker, x = jobs taken */
    CORO__TRACE_PARK,          /* a worker goes to sleep */
    CORO__TRACE_UNPARK,        /* ... and is awake again */
    CORO__TRACE_NUDGE,         /* this thread woke parked worker x */
    CORO__TRACE_POLL0,         /* epoll_wait begins */
    CORO__TRACE_POLL1,         /* epoll_wait returned x events */
    CORO__TRACE_THREAD_WAKE,   /* a plain thread waiting in the lot is woken: a = its record */
    CORO__TRACE_MARK,          /* a worker found no work twice, or stops driving:
                               ts ends its open run */
};
enum { CORO__TRACE_END_DONE = 0, CORO__TRACE_END_YIELD, CORO__TRACE_END_AWAIT };
/* STEP's why bits (4-7): the end (bits 4-5) and what was not read */
#define CORO__TRACE_NOSTART 4u     /* the step's start is not its own reading */
#define CORO__TRACE_NOEND 8u       /* nor its end: a later event's reading ends its run */

/* One event: 32 bytes, four words.  meta = type (bits 0-3) | why (4-7,
 * STEP only) | prio as a byte (8-15, read back as int8_t) | cls (16-31) | x
 * (32-63).  The slots are never read before written (the reader copies
 * only the last min(head, cap) of them), so a new ring is not zeroed.
 * ts = 0: not read (a worker's events in a run; see "Runs" below). */
struct coro__tev {
    uint64_t ts, a, b, meta;
};

struct coro__trace_ring {
    uint64_t head;          /* events ever written; atomic (the writer's release) */
    uint32_t mask;          /* cap - 1 */
    uint32_t lock;          /* the shared ring only: its writers' spinlock */
    /* a worker's ring only, owner-only plain words (the clock readings a
     * worker saves, coro__trace_ring_stamp): */
    uint64_t t_now;         /* the start of the step it runs (stamps its events);
                               0 = not read (the step is in a run) */
    uint64_t t_next;        /* the end of its last step when that step finished the
                               job and nothing happened since: the next step's
                               start; 0 = read the clock (or, in a run, do not) */
    uint64_t t_run;         /* the start of the open run's first step */
    uint64_t run_lim;       /* CORO__TRACE_RUN_NS in clock ticks */
    uint32_t nrun;          /* steps of the open run recorded without a reading
                               of their end; 0 = no run is open */
    uint32_t krun;          /* the open run ends (its step's end is read) at this
                               many steps: 1..CORO__TRACE_RUN_MAX, adaptive */
    uint32_t idle;          /* looks for work that found none since its last step */
    int64_t tick;           /* a plain thread's ring only: CLOCK_MONOTONIC_COARSE
                               at its last reading (coro__trace_ring_thread_stamp); nrun
                               counts its events since that reading */
    pthread_t owner;        /* ... and the thread */
    struct coro__tev ev[] __attribute__((aligned(CORO__CACHELINE)));
};

/* the most events a writer fills before one release of head (a step and
 * the await that ended it): the reader drops as many slots (trace.c) */
#define CORO__TRACE_BATCH 2u

#define CORO__TRACE_META(type, prio, cls, x)                                          \
    ((uint64_t)(type) | (uint64_t)(uint8_t)(prio) << 8 | (uint64_t)(uint16_t)(cls) << 16 | \
     (uint64_t)(x) << 32)

/* the tracer of a scheduler (s->trace); trace.c's, but the inline hooks
 * read gen (coro__trace_ring_any) */
struct coro__trace {
    uint64_t gen;           /* this trace's number: a thread's cached ring is its own */
    uint32_t cap;
    struct coro__trace_ring *io, *ext;
    char *path;             /* COROKIT_TRACE, or NULL */
    uint64_t tsc0;
    int64_t ns0;
    uint64_t run_lim;       /* CORO__TRACE_RUN_NS in clock ticks */
    uint32_t nthr;          /* plain threads' rings in thr; atomic (release after the slot) */
    uint32_t thr_lock;      /* taken to add one */
    struct coro__trace_ring *thr[CORO__TRACE_THREAD_RINGS];
};

/* a plain thread's ring in the trace numbered gen (trace.c, thread_ring,
 * sets it at the thread's first event; ring NULL: it records into the
 * shared ring).  gen, not the trace's address: a trace freed and another
 * made at its address must not find the old ring */
struct coro__trace_ring_thr {
    uint64_t gen;
    struct coro__trace_ring *ring;
};
extern __thread struct coro__trace_ring_thr coro__tls_trthr CORO__HIDDEN;

/* sched/trace.c */
CORO__HIDDEN int coro__trace_init(coro_sched_t *s, const coro_sched_config_t *c);
/* worker w's ring (none while s has no trace): 0 or -ENOMEM.  Called by
 * w's own thread, before w runs; trace_init before it */
CORO__HIDDEN int coro__trace_worker_init(coro_sched_t *s, struct coro__worker *w);
/* at destroy, once the workers stopped: write COROKIT_TRACE's file, if set */
CORO__HIDDEN void coro__trace_write_env(coro_sched_t *s);
/* free the rings: after every thread that records into them is gone */
CORO__HIDDEN void coro__trace_fini(coro_sched_t *s);
/* record from a thread of s that is not one of its workers: the I/O
 * thread's ring, the plain thread's own (thread_stamp decides whether ts
 * is read) or the shared one (under its lock, ts read) */
CORO__HIDDEN void coro__trace_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta);
CORO__HIDDEN void coro__trace_io_thread_(coro_sched_t *s);
/* an event of worker ring r that a system call (a futex wake) follows:
 * stamped with a reading, as it costs little beside the call.  It ends the
 * open run (the steps before it end here, the step that makes the call
 * holds it), and the next step reads the clock */
CORO__HIDDEN void coro__trace_syscall_(struct coro__trace_ring *r, const void *a, uint64_t meta);
/* a look for work found none (end: or the worker stops): coro__trace_idle */
CORO__HIDDEN void coro__trace_idle_(struct coro__trace_ring *r, bool end);
/* a step that ends its run (coro__trace_step's reading, out of line) */
CORO__HIDDEN void coro__trace_step_end(struct coro__trace_ring *r, coro_t *job, uint64_t *t0,
                                       unsigned why, const char *await);

/* ---- recording (inline: the worker's hot path) --------------------------------- */

/* 1: read the TSC (x86 with an invariant TSC: CPUID 0x80000007 EDX bit 8,
 * "constant_tsc nonstop_tsc" in /proc/cpuinfo); 0: coro__now()
 * (clock_gettime).  Set by coro__trace_init before its first reading;
 * atomic (relaxed: every scheduler stores the same value) */
extern int coro__trace_ring_rdtsc CORO__HIDDEN;

/* the real clock, on any thread */
static inline uint64_t coro__trace_clock_real(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (CORO__LIKELY(__atomic_load_n(&coro__trace_ring_rdtsc, __ATOMIC_RELAXED)))
        return __builtin_ia32_rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* a worker ring's clock.  The thread that drives a virtual scheduler
 * (coro__tls_vclock set) writes only that scheduler's worker ring, whose
 * trace is in its virtual ns (trace_write.c, write_file): same seed, same
 * trace, timestamps included */
static inline uint64_t coro__trace_clock(void)
{
    if (CORO__UNLIKELY(coro__tls_vclock != NULL))
        return (uint64_t)__atomic_load_n(coro__tls_vclock, __ATOMIC_RELAXED);
    return coro__trace_clock_real();
}

/* a plain thread's or the I/O thread's event in s's trace: s's virtual
 * clock when it has one, else `real` (a reading of the real clock, or 0) */
static inline uint64_t coro__trace_ring_other_stamp(const coro_sched_t *s, uint64_t real)
{
    return CORO__UNLIKELY(s->vtime) ? (uint64_t)coro__sched_clock(s) : real;
}

/* the next event's number in r: the caller is r's only writer */
static inline uint64_t coro__trace_ring_head(const struct coro__trace_ring *r)
{
    /* relaxed: only this thread stores head */
    return __atomic_load_n(&r->head, __ATOMIC_RELAXED);
}

/* fill slot h of r; not visible to a reader before coro__trace_ring_publish */
static inline void coro__trace_ring_set(struct coro__trace_ring *r, uint64_t h, uint64_t ts, const void *a,
                                const void *b, uint64_t meta)
{
    struct coro__tev *e = &r->ev[h & r->mask];
    /* relaxed: the release store of head in coro__trace_ring_publish publishes
     * them; a reader racing us drops this slot (trace.c's opening essay) */
    __atomic_store_n(&e->ts, ts, __ATOMIC_RELAXED);
    __atomic_store_n(&e->a, (uint64_t)(uintptr_t)a, __ATOMIC_RELAXED);
    __atomic_store_n(&e->b, (uint64_t)(uintptr_t)b, __ATOMIC_RELAXED);
    __atomic_store_n(&e->meta, meta, __ATOMIC_RELAXED);
}

/* events before number h are written.  Then the line CORO__TRACE_AHEAD
 * events on is fetched: a ring (8,192 events: 256 KiB) does not stay in
 * L1, and a store to a line not there waits for it - and so does the next
 * locked instruction of the scheduler (the LIFO slot's exchange, spawn's
 * CAS), which must drain the store buffer first (perf: the samples on the
 * exchange after a spawn's event).  Further ahead did no better
 * (docs/benchmarks.md, tracing).  A prefetch never faults: the index needs no check */
#define CORO__TRACE_AHEAD 4u
static inline void coro__trace_ring_publish(struct coro__trace_ring *r, uint64_t h)
{
    /* release: the events' words before the count a reader acquires */
    __atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
    __builtin_prefetch(&r->ev[(h + CORO__TRACE_AHEAD) & r->mask], 1, 3);
}

/* one event into r, the caller's own ring, stamped ts */
static inline void coro__trace_ring_put_at(struct coro__trace_ring *r, uint64_t ts, const void *a,
                                   const void *b, uint64_t meta)
{
    uint64_t h = coro__trace_ring_head(r);
    coro__trace_ring_set(r, h, ts, a, b, meta);
    coro__trace_ring_publish(r, h + 1);
}

/* one event into r, the caller's own ring (not a worker's), stamped now */
static inline void coro__trace_ring_put(struct coro__trace_ring *r, const void *a, const void *b, uint64_t meta)
{
    coro__trace_ring_put_at(r, coro__trace_clock_real(), a, b, meta);
}

/* ---- Runs: what a worker's clock readings promise ------------------------------
 *
 * A clock reading (rdtsc) is most of what tracing costs a short job, so a
 * worker does not read the clock at every step.  Its steps come in RUNS:
 * steps of one worker with nothing between them but finishing a job,
 * taking the next from a queue, and at most one look for work that found
 * none.  A run's first step starts at a reading (or at the end of the step
 * before, when that finished its job and was read); the clock is read
 * again at the end of its krun-th step, or earlier when anything else
 * happens: the worker looks for work twice in vain, steals, parks, or is
 * about to wake a thread or a parked worker (read before the system call,
 * in the step that makes it, if any), or a job with an on_exit hook
 * finishes.  krun adapts: a run whose steps averaged more than
 * CORO__TRACE_RUN_NS makes the next run one step, a shorter one doubles it
 * up to CORO__TRACE_RUN_MAX.
 *
 * The trace writer (trace_write.c, resolve) spreads a run's steps evenly over
 * the time between the readings around it.  So, on a worker's lane:
 * - the steps are in the order they ran and never overlap;
 * - a run's span is exact (two readings), and its steps share it evenly: a
 *   step's own start and length are exact in a run of one step (no "run"
 *   arg in the JSON); in a run of n they are the run's average, so a step
 *   longer than the others of its run is drawn up to n times too short
 *   (the next run is then a single step).  The stall detector (.stall_ns)
 *   and the histograms time every step on its own;
 * - a step that wakes a thread or a parked worker in a run is drawn from
 *   that wake's reading on (the steps before it end there);
 * - spawns and wakes made in a step are drawn at the start of that step
 *   (in a run, its start is not known while it runs: they are recorded
 *   with ts 0 and placed when the trace is written);
 * - a step after an idle spell starts at a reading taken after its job was
 *   taken from its queue, so after the job's spawn or wake.
 * Between steps - steals, parks, nudges, polls - events are read. */

/* the stamp of an event of worker ring r (0: the start of the step that
 * makes it, once its run is over) */
static inline uint64_t coro__trace_ring_stamp(struct coro__trace_ring *r)
{
    if (coro__tls_in_job)
        return r->t_now;
    r->t_next = 0;
    r->nrun = 0;            /* a reading between steps ends the open run */
    return coro__trace_clock();
}

/* A plain thread's events share readings as a worker's steps do ("Runs"
 * above), but nothing tells where a plain thread's burst of spawns ends:
 * so it reads the clock at its first event, at every
 * CORO__TRACE_THREAD_RUN-th, and whenever the kernel's coarse clock (one
 * tick, one to ten milliseconds; a vDSO read cheaper than rdtsc) moved
 * since its last reading.  An event between two readings (ts 0) is placed
 * when the trace is written (trace_write.c, resolve_thread): evenly between them
 * when they are close (a burst), else at the first (it happened after it,
 * within the same tick).  r is the caller's own ring */
static inline uint64_t coro__trace_ring_thread_stamp(struct coro__trace_ring *r)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    int64_t tick = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;

    if (CORO__LIKELY(tick == r->tick) && ++r->nrun < CORO__TRACE_THREAD_RUN)
        return 0;
    r->tick = tick;
    r->nrun = 0;
    return coro__trace_clock_real();
}

/* from any thread of s: a worker of s writes its own ring inline, and so
 * does a plain thread that has a ring in s's trace; the others (the I/O
 * thread, a plain thread's first event, the shared ring) call trace.c */
static inline void coro__trace_ring_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta)
{
    struct coro__worker *w = coro__tls_worker;
    struct coro__trace_ring *r;

    if (CORO__LIKELY(w && w->s == s))
        coro__trace_ring_put_at(w->trace_ring, coro__trace_ring_stamp(w->trace_ring), a, b, meta);
    else if ((r = coro__tls_trthr.ring) && coro__tls_trthr.gen == s->trace->gen)
        coro__trace_ring_put_at(r, coro__trace_ring_other_stamp(s, coro__trace_ring_thread_stamp(r)), a, b, meta);
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
        coro__trace_ring_any(s, job, (const void *)job->fn,
                     CORO__TRACE_META(CORO__TRACE_SPAWN, job->prio, job->cls, 0));
}

static inline void coro__trace_wake(coro_t *job)
{
    if (CORO__UNLIKELY(job->sched->trace))
        coro__trace_ring_any(job->sched, job, NULL, CORO__TRACE_META(CORO__TRACE_WAKE, job->prio, job->cls, 0));
}

/* a plain thread's record in the lot is woken (lib/wait/parklot.c): w->sched is not set
 * for those, so the scheduler is the waker's, if it is a worker.  Out of
 * line (a futex wake follows) */
static inline void coro__trace_thread_wake(const coro_t *rec)
{
    struct coro__worker *w = coro__tls_worker;
    if (w && CORO__UNLIKELY(w->trace_ring))
        coro__trace_syscall_(w->trace_ring, rec, CORO__TRACE_THREAD_WAKE);
}

/* a step of a job begins: its start time (0 when tracing is off, or when
 * the step is in a run and its start is not read).  After a step that
 * finished its job, with nothing but the job's finish and taking this job
 * from a queue since (coro__trace_idle and the events between steps reset
 * t_next), the end of that step: one clock reading per job, not two. */
static inline uint64_t coro__trace_begin(struct coro__worker *w)
{
    struct coro__trace_ring *r = w->trace_ring;

    if (CORO__LIKELY(!r))
        return 0;
    uint64_t t = r->t_next;
    r->t_next = 0;
    r->idle = 0;
    if (!t && !r->nrun)
        t = coro__trace_clock();
    r->t_now = t;
    return t;
}

/* the worker stops for a time nobody knows (a thread begins or ends
 * driving a single-threaded scheduler): its open run ends here (a MARK
 * event, the reading that closes it), and its next step reads the clock */
static inline void coro__trace_pause(struct coro__worker *w)
{
    if (CORO__UNLIKELY(w->trace_ring))
        coro__trace_idle_(w->trace_ring, true);
}

/* the worker looked for work and found none (coro__find_work).  The first
 * such look leaves its open run open (the next step, if the next look
 * finds one, goes on in the run: the run then holds that look, a few
 * hundred ns); the second in a row ends it, as coro__trace_pause.  Out of
 * line when on: coro__find_work stays small enough to inline when off */
static inline void coro__trace_idle(struct coro__worker *w)
{
    if (CORO__UNLIKELY(w->trace_ring))
        coro__trace_idle_(w->trace_ring, false);
}

/* the step that began at *t0 (0: not read, in a run) ends (why:
 * CORO__TRACE_END_*; aw: the await, for AWAIT, recorded before arm: the job
 * may be gone once arm returned PENDING).  One event per step, two when it
 * ends at an await, published together; aw is a constant at every call
 * site, so its test folds away.  The clock is read only when the step ends
 * its run ("Runs" above), out of line (coro__trace_step_end); else *t0 =
 * 0 (the next step, when the await completes at once, goes on in the run).
 * An on_exit hook (user code) runs after a finished job's step: the run
 * ends there, as it would at any other event. */
static inline void coro__trace_step(struct coro__worker *w, coro_t *job, uint64_t *t0,
                                    unsigned why, const coro_await_t *aw)
{
    struct coro__trace_ring *r = w->trace_ring;

    if (CORO__UNLIKELY(r)) {
        uint32_t n = r->nrun + 1;
        if (CORO__LIKELY(n < r->krun) && (why != CORO__TRACE_END_DONE || !job->on_exit)) {
            uint64_t h = coro__trace_ring_head(r), start = *t0;
            uint64_t meta = CORO__TRACE_META(CORO__TRACE_STEP | (why | CORO__TRACE_NOEND) << 4, job->prio,
                                          job->cls, 0);
            if (start) {
                r->t_run = start;       /* a run's first step starts at a reading */
                r->t_now = 0;           /* the next step's events: not read */
                *t0 = 0;
            } else {
                meta |= (uint64_t)CORO__TRACE_NOSTART << 4;
            }
            coro__trace_ring_set(r, h, start, job, (const void *)job->fn, meta);
            if (aw)
                coro__trace_ring_set(r, ++h, 0, job, aw->ops->name, CORO__TRACE_AWAIT);
            coro__trace_ring_publish(r, h + 1);
            r->nrun = n;
        } else {
            coro__trace_step_end(r, job, t0, why, aw ? aw->ops->name : NULL);
        }
    }
}

/* a worker took jobs from another (never in a step): what it took is what
 * it runs next, so that step starts at this event's stamp (t_next) */
static inline void coro__trace_steal(struct coro__worker *w, int victim, unsigned n)
{
    struct coro__trace_ring *r = w->trace_ring;

    if (CORO__UNLIKELY(r)) {
        uint64_t t = coro__trace_clock();
        coro__trace_ring_put_at(r, t, (const void *)(uintptr_t)victim, NULL,
                        CORO__TRACE_META(CORO__TRACE_STEAL, 0, 0, n));
        r->nrun = 0;
        r->t_next = t;
    }
}

/* a worker goes to sleep (awake false) or is awake again (never in a
 * step); park returns the job it found, if any, right after either */
static inline void coro__trace_park(struct coro__worker *w, bool awake)
{
    struct coro__trace_ring *r = w->trace_ring;

    if (CORO__UNLIKELY(r)) {
        uint64_t t = coro__trace_clock();
        coro__trace_ring_put_at(r, t, NULL, NULL, awake ? CORO__TRACE_UNPARK : CORO__TRACE_PARK);
        r->nrun = 0;
        r->t_next = awake ? t : 0;
    }
}

/* the caller claimed parked worker idx and wakes it (a futex wake
 * follows: a worker reads the clock before it, which ends its run, and
 * its next step reads the clock; out of line) */
static inline void coro__trace_nudge(coro_sched_t *s, int idx)
{
    if (CORO__UNLIKELY(s->trace)) {
        struct coro__worker *w = coro__tls_worker;
        uint64_t meta = CORO__TRACE_META(CORO__TRACE_NUDGE, 0, 0, (unsigned)idx);
        if (w && w->s == s)
            coro__trace_syscall_(w->trace_ring, NULL, meta);
        else
            coro__trace_any(s, NULL, NULL, meta);
    }
}

/* n < 0: epoll_wait is about to begin; else it returned n events */
static inline void coro__trace_poll(coro_sched_t *s, int n)
{
    if (CORO__UNLIKELY(s->trace))
        coro__trace_ring_any(s, NULL, NULL,
                     n < 0 ? CORO__TRACE_POLL0 : CORO__TRACE_META(CORO__TRACE_POLL1, 0, 0, (unsigned)n));
}

#endif
