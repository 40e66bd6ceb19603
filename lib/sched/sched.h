/* SPDX-License-Identifier: MIT */
/* private, layer 1 (scheduling): jobs and their state word, awaitables,
 * pins, affinity classes, workers and their queues, waking and parking,
 * the event driver's table, the generators' hooks in the step loop, the
 * caller's seat, reports; pool frames and the tracer have headers of their
 * own (frame.h, trace.h).  Includes only base/.  See docs/architecture.md. */
#ifndef COROKIT_LIB_SCHED_SCHED_H
#define COROKIT_LIB_SCHED_SCHED_H

#include "base/base.h"
#include "base/queues.h"

#include <limits.h>
#include <stdio.h>

/* ---- the job state word (coro_t.state) ---------------------------------
 *
 * One 32-bit atomic word, as tokio's task state: the low three bits hold
 * the lifecycle state, the others flags.  Every change is a CAS or an
 * atomic RMW so that flags set by other threads are never lost.
 *
 *   IDLE      zeroed frame, never spawned
 *   READY     in exactly one queue, or running: whoever dequeued it owns
 *             it, and runs it without touching this word (a worker's
 *             w->cur names the job it runs; a RUNNING state, 2, was one
 *             locked instruction per step that nothing read)
 *   SUSPENDED its awaitable is (being) armed: exactly one waker, the one
 *             that removes it from the wait structure, makes it READY
 *   DONE      finished; the frame may be spawned again
 *   CHILD     the frame is running as a coro_call child of another job
 *
 * THREAD_JOIN: a plain thread waits in coro_join (futex on the word).
 * JOB_JOIN:    jobs wait in the parking lot on this job (coro_done); set
 *              under the lot bucket lock, so the finisher, which locks the
 *              bucket after storing DONE, sees every such waiter.
 * JOINER:      the first awaiting job of the same scheduler sits in
 *              coro_t.joiner (fork-join needs no lot): it stores itself
 *              there first and sets the flag second, unless DONE came
 *              first; the finisher takes it only when the flag was set.
 */
#define CORO__S_IDLE      0u
#define CORO__S_READY     1u
#define CORO__S_SUSPENDED 3u
#define CORO__S_DONE      4u
#define CORO__S_CHILD     5u
#define CORO__S_MASK      7u
#define CORO__F_THREAD_JOIN 8u
#define CORO__F_JOB_JOIN    16u
#define CORO__F_JOINER      32u     /* coro_t.joiner holds an awaiting job */
/* POOL:    the frame came from coro_frame_alloc (set by coro_spawn); the
 *          library gives it back when the job is over (lib/sched/frame.c).
 * EXITING: set with DONE when the job had waiters, while its finisher still
 *          touches the frame (wakes them, and for a pool frame or a frame a
 *          thread joins, runs on_exit); coro_join returns and coro_spawn
 *          accepts the frame only once it is clear.
 * JOINERS: bits 24-31 count the threads blocked in coro_join on a pool
 *          frame: the last one to leave gives the frame back. */
#define CORO__F_POOL        64u
#define CORO__F_EXITING     128u
#define CORO__JOINER_ONE    (1u << 24)
#define CORO__JOINERS_MASK  (0xffu << 24)
/* CANCEL: coro_cancel(job) was called: set once (seq_cst RMW) and kept
 * until the frame is spawned again; every await of the job (its coro_call
 * children's too) that has not completed returns -ECANCELED.  The parking
 * lot, the joiner slots and the I/O context check it where they insert a
 * waiter, after the registry bit / under the registry lock, so that a
 * waiter either sees it or is found by the sweep coro_cancel runs after
 * setting it (lib/wait/parklot.c REGISTRY, lib/io/cancel.c). */
#define CORO__F_CANCEL      256u
/* CREAD: a coro_cancel reads the suspended job's awaitable (its innermost
 *        frame, aw.ops, the key or the sleep's timer slot in aw.arg): set
 *        by the cancel's CAS when that CAS saw SUSPENDED, cleared by one
 *        RMW when the cancel is done with it (lib/rt/cancel_one.c, READING THE
 *        AWAITABLE).  Meanwhile the job writes no awaitable: a wake makes
 *        it READY but leaves it unqueued, with CQUEUE, for the canceller to
 *        queue at the clear (coro__wake); a worker whose arm completed at
 *        once waits for the clear before the body goes on (sched/run.c).
 * CQUEUE: a wake met CREAD and left the job to the canceller. */
#define CORO__F_CREAD       (1u << 9)
#define CORO__F_CQUEUE      (1u << 10)
/* POOLQ: the job is queued on the blocking pool's FIFO (lib/io/blocking.c
 *        QUEUED): set and cleared under the pool's mutex. */
#define CORO__F_POOLQ       (1u << 12)

static inline bool coro__job_cancelled(const coro_t *job)
{
    /* seq_cst: against coro_cancel's seq_cst RMW of the flag and its
     * later loads of the registry bits (lib/wait/parklot.c REGISTRY) */
    return (__atomic_load_n(&job->state, __ATOMIC_SEQ_CST) & CORO__F_CANCEL) != 0;
}

/* coro_t.flags */
#define CORO__FL_THREAD 1u      /* a plain thread's stand-in in the lot */
/* 2u: CORO__FL_PROXY, a select stand-in (lib/wait/wait.h) */
#define CORO__FL_IOWAKE 4u      /* made ready by the I/O layer (stats io_wakeups) */
#define CORO__FL_TIMED 8u       /* waits in the lot with a timer (lib/wait/parklot.c) */
#define CORO__FL_EXT 16u        /* coro_t.ext holds the spawn extras below */
/* woken to arm its await again, not to resume its body (with
 * CORO__FL_IOWAKE: readiness came for the fd it waits on, and the job
 * makes its own system call on the worker that runs it, lib/io/fd_wait.c
 * WHO CALLS); the await's arm sees it and clears it */
#define CORO__FL_REARM 32u
/* 64u: CORO__FL_SMALL, a small slab's pool frame (lib/sched/frame.h) */
#define CORO__FL_GEN 128u       /* a generator's frame (coro_gen_init; sched/gen.c) */

/* What a job spawned with .deadline (or .group) carries, allocated at
 * spawn through the scheduler's allocator and freed when it finishes;
 * immutable while it runs (read by its worker, the lot and the I/O
 * context). */
struct coro__ext {
    void (*on_exit)(coro_t *);
    void (*on_exit_with)(coro_t *, void *);     /* coro_spawn_opts_t's, with its ctx */
    void *on_exit_ctx;
    union {
        int64_t deadline;   /* absolute ns, 0 = none */
        intptr_t result;    /* once finished, queued in a collecting group */
    };
    coro_group_t *group;    /* NULL = none */
    coro_t *job;            /* the member (lib/rt/group.c) */
    struct coro__ext *gprev, *gnext;    /* the group's list, under its lock */
    union {
        const char *name;   /* coro_spawn_opts_t.name, NULL = none */
        coro_sched_t *sched;    /* once finished, queued: whose allocator frees it */
    };
};

/* lib/rt/group.c: join g (at spawn, before the job is queued) / the finish of
 * a member: under g's lock, store DONE (the exchange coro__finish does,
 * returned), leave, wake g's waiters when it was the last */
/* the job's deadline (0 = none).  job: a job (not a child frame) */
static inline int64_t coro__job_deadline(const coro_t *job)
{
    return (job->flags & CORO__FL_EXT) ? job->ext->deadline : 0;
}

/* coro__job_name - the job's coro_spawn_opts_t.name, NULL = none.  job: a
 * live job (not a child frame), read by its worker or under a lock that
 * keeps it suspended; the string is the caller's (kept alive while the job
 * lives). */
static inline const char *coro__job_name(const coro_t *job)
{
    return (job->flags & CORO__FL_EXT) ? job->ext->name : NULL;
}

/* bound an absolute wait deadline d (-1 = none) by the job's */
static inline int64_t coro__bound_deadline(const coro_t *job, int64_t d)
{
    int64_t jd = coro__job_deadline(job);
    if (jd > 0 && (d < 0 || jd < d))
        return jd;
    return d;
}

/* ---- awaitables ---------------------------------------------------------- */

/* What arm() tells the worker. */
enum {
    CORO__ARM_PENDING = 0,  /* registered: exactly one coro__wake follows; the
                               worker must not touch the job any more */
    CORO__ARM_READY,        /* complete now: *res is the result; continue */
    CORO__ARM_REQUEUE,      /* put the job at the back of its (new) queue */
};

struct coro_await_ops {
    const char *name;
    /* Called on the worker after the body returned CORO__ST_AWAIT, with the
     * job already SUSPENDED.  aw is job->top->aw.  The last thing a PENDING
     * arm does is make the registration visible; after that it must not
     * touch the job or aw: the job may already run elsewhere. */
    int (*arm)(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);
};

extern const struct coro_await_ops coro__call_ops CORO__HIDDEN;
/* The name of the awaitable that waits for the end of job aw->arg[0].p,
 * with that job's result (coro_done: wait/done.c names its ops with it).
 * The worker knows it by this pointer and may then run that job inside
 * the awaiting step (sched/run.c, JOINING INLINE): the layer above marks
 * its ops with a name from here, and nothing is set from above at create */
extern const char coro__join_name[] CORO__HIDDEN;


/* coro__wake - make suspended job READY with result res (stored into the
 * innermost frame's CORO_RESULT) and queue it on a worker its affinity
 * allows, at its priority.  Called exactly once per PENDING arm, by the
 * thread that removed the job from the wait structure.  Any thread. */
CORO__HIDDEN void coro__wake(coro_t *job, intptr_t res);

/* WOKEN BATCHES (sched/submit.c).  A driver call a worker makes (its
 * looks at epoll, its park there, its fire of due timers) does not queue
 * the jobs it wakes: it makes them READY and hands them back in one of
 * these, which the worker owns on its stack, and the worker submits them
 * itself - with one notify for the batch, the first one run at once when
 * the worker has nothing else (sched/worker.c IDLE).  The I/O layer never
 * re-enters the scheduler's queues while a worker is inside it, save for
 * the jobs past a full batch, which it wakes by the downward coro__wake
 * as every other thread does. */
#define CORO__WOKEN_MAX 32
struct coro__woken {
    coro_sched_t *s;            /* whose worker owns it */
    int n;
    coro_t *job[CORO__WOKEN_MAX];
};

static inline void coro__woken_init(struct coro__woken *b, coro_sched_t *s)
{
    b->s = s;
    b->n = 0;
}

/* coro__wake_into - coro__wake for a driver call made by a worker of b's
 * scheduler: READY with result res as coro__wake makes it, then into b,
 * not a queue.  b NULL or full, or a job of another scheduler (a lock
 * shared across schedulers hands over to it): coro__wake's queueing, by
 * the calling thread, which may be any.  The caller of the driver submits
 * b (coro__submit_woken). */
CORO__HIDDEN void coro__wake_into(struct coro__woken *b, coro_t *job, intptr_t res);

/* Pins (sched/pin.c): a thread that is not s's own and may touch s after
 * a job's state changed holds s pinned meanwhile; destroy waits for every
 * pin on s once the jobs ended.  Each returns a token for coro__unpin.
 *   coro__pin_owned - the caller owns a live job of s it has not queued yet
 *   coro__pin_job   - the caller then reads the state word of a job of s
 *                     with a seq_cst load or RMW; DONE there: unpin, and
 *                     touch s no more
 *   coro__pin_sched - a call on s; CORO__PIN_NONE: destroy is past its
 *                     wait, s must not be touched (nothing to unpin) */
#define CORO__PIN_NONE (-2)
CORO__HIDDEN int coro__pin_owned(coro_sched_t *s);
CORO__HIDDEN int coro__pin_job(coro_sched_t *s);
CORO__HIDDEN int coro__pin_sched(coro_sched_t *s);
CORO__HIDDEN void coro__unpin(int tok);
/* coro__pin_drain - destroy, after every job ended: wait until no other
 * thread holds s pinned; from then on every pin_sched of s is refused */
CORO__HIDDEN void coro__pin_drain(coro_sched_t *s);
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN int coro__pins_held(void);
#endif

/* coro__in_job - true when the calling thread is inside a job's body or
 * arm (used by the blocking calls to refuse with -EDEADLK). */
CORO__HIDDEN bool coro__in_job(void);

/* coro__current_job - the job (its root frame) the calling thread runs a
 * step of, NULL on a thread that runs none. */
CORO__HIDDEN coro_t *coro__current_job(void);

/* coro__cancelling - true once coro_sched_shutdown(CORO_CANCEL) began: every
 * arm then completes at once with -ECANCELED. */
CORO__HIDDEN bool coro__cancelling(const coro_sched_t *s);

/* coro__complete - an already-completed awaitable with result r, built
 * inside a job: once the job has completed CORO__BUDGET awaits without
 * suspending in one run, it yields instead (result r all the same), so a
 * job whose I/O is always ready cannot keep its worker forever. */
CORO__HIDDEN coro_await_t coro__complete(intptr_t r);

/* coro__cancel_due - asked by a constructor before an operation that may
 * complete at once (a read of an fd that always has data): true when the
 * calling job, or its scheduler (CORO_CANCEL), was cancelled and the job's
 * budget of immediate completions is spent.  The constructor then completes
 * with -ECANCELED before the operation takes anything; the forced yield
 * coro__complete makes there carries it.  A job whose fd is always ready
 * thus sees its cancel within CORO__BUDGET awaits, where no arm would ever
 * run to tell it; while the budget lasts the cost is one thread-local load. */
CORO__HIDDEN bool coro__cancel_due(void);

/* ---- memory (sched/common.c) ------------------------------------------------ */
CORO__HIDDEN void *coro__alloc(coro_sched_t *s, size_t n);
CORO__HIDDEN void coro__free(coro_sched_t *s, void *p, size_t n);
/* 64-byte (CORO__CACHELINE) aligned, zeroed blocks through s's allocator,
 * for structs with cache-line aligned members (rt/runtime.c); free with
 * coro__free_aligned and the same n */
CORO__HIDDEN void *coro__alloc_aligned(coro_sched_t *s, size_t n);
CORO__HIDDEN void coro__free_aligned(coro_sched_t *s, void *p, size_t n);


#define CORO__NPRIO 3                   /* index = priority + 1 */
#define CORO__PRIO_IDX(p) ((p) + 1)
/* a set of workers, a bit per worker index; loops over one stop at the
 * scheduler's own words, (nslots + 63) / 64 (CORO__WMASK_USED) */
#define CORO__WMASK_WORDS (CORO_MAX_WORKERS / 64)
#define CORO__WMASK_USED(s) (((s)->nslots + 63) / 64)
/* s->idle_sum: 16 bits per word of s->idle, four to a word */
#define CORO__IDLE_SUM_WORDS ((CORO__WMASK_WORDS + 3) / 4)
_Static_assert(1,
               "CORO_WORKERS_AUTO makes one worker per usable CPU");

/* An affinity class: one distinct set of workers a job may run on.  Class 0
 * is "any worker"; its queues are the global injection queue.  A class is
 * created once (under class_lock) and never freed before the scheduler, so
 * readers need no lock: they load the table pointer with acquire. */
struct coro__affinity_class {
    uint64_t wmask[CORO__WMASK_WORDS];  /* workers allowed */
    coro_cpuset_t cpus;                 /* the user's mask, cut to the workers' CPUs */
    int nworkers;                       /* popcount of wmask */
    unsigned qsize;                     /* each queue's ring */
    uint32_t nprio;                     /* atomic: HIGH and LOW jobs in q (sched/submit.c) */
    struct coro__sharedq q[CORO__NPRIO];
};

/* A plain thread's submission ring for one scheduler (TBB gives an outside
 * thread a slot of its arena the same way): the NORMAL "any CPU" jobs it
 * spawns go here with one lock-free single-producer push (ck_ring SPMC),
 * instead of an inbox's CAS per job on a line every producer writes.  Workers pop from it like the
 * global queue (sched/rings.c).  Made with the thread's frame cache and
 * handed with it to the next thread when the thread exits
 * (lib/sched/thread_subring.c); freed at destroy. */
struct coro__subring {
    struct coro__localq q;
    struct coro__subring *next;              /* s->subrings; fixed once published */
    uint32_t idx;                       /* its bit in s->subring_bits, fixed */
    /* atomic: 1 while its bit is set in s->subring_bits (the producer's check,
     * on a line the consumers write only when they take it off) */
    uint32_t listed __attribute__((aligned(CORO__CACHELINE)));
    /* atomic: 0, or 1 + the index of the worker that took it off the map
     * in membarrier mode and has not yet confirmed it (its bit is then set
     * in s->subring_quiet: sched/rings.c RINGS) */
    uint32_t quiet;
    ck_ring_buffer_t buf[] __attribute__((aligned(CORO__CACHELINE)));
};
#define CORO__XQ_WORDS (CORO__XQ_MAX / 64)

struct coro__worker {
    /* touched by other threads */
    coro_t *lifo;                       /* atomic: NORMAL "any" job, stealable */
    uint32_t futex;                     /* park epoch */
    struct coro__localq local[CORO__NPRIO];
    struct coro__sharedq inbox[CORO__NPRIO];
    struct coro__localq yielded[CORO__NPRIO];   /* jobs that yielded: run after the rest */
    /* atomic: HIGH and LOW jobs in local, inbox and yielded (counted
     * before the push, taken off after the pop: sched/worker.h PRIORITIES) */
    uint32_t nprio;
    /* atomic (relaxed): the earliest deadline among this worker's timers
     * (lib/wait/wtimer.c), INT64_MAX = none; written under their lock,
     * read by the owner at its DUE TIMERS looks and by the I/O thread's
     * standby.  A line of its own: each timed wait begun here may write
     * it, and the other workers' pushes and steals must not meet it */
    int64_t timer_next __attribute__((aligned(CORO__CACHELINE)));
    /* owner only */
    coro_sched_t *s __attribute__((aligned(CORO__CACHELINE)));
    int idx, cpu;                       /* cpu: -1 when single-threaded */
    bool pinned, started;
    uint32_t started_st;                /* atomic: the drive word (single-threaded), below */
    pthread_t thread;
    uint64_t tick;                      /* counts down to the next global-first look */
    unsigned lifo_streak;
    uint64_t lifo_run;                  /* n_run when a job last went to lifo */
    /* the caller's seat only (sched/seat.c): the root job of the
     * coro_block_on that holds it, NULL on a worker; a step that ends
     * does not go on to the LIFO slot's job once it is over (run.c) */
    coro_t *seat_root;
    /* the victim whose LIFO slot this worker saw full at its last look,
     * and that victim's n_run then (sched/steal.c, steal_lifo) */
    int lifo_watch;
    uint64_t lifo_watch_run;
    int64_t lifo_watch_t;               /* when (coro__now) */
    bool searching;                     /* counted in s->searching */
    unsigned idle_looks;                /* failed looks in this idle phase (sched/park.c) */
    bool took_more;                     /* the last look took jobs besides the one it runs */
    /* busy looks at epoll (sched/worker.c, BUSY LOOKS): steps left before
     * the next, whether the last step yielded, when a yield last looked;
     * and a job of a narrower class that yielded, queued after the next
     * pick (DEFERRED YIELDS) */
    uint32_t poll_steps;
    uint32_t poll_idle;                 /* yields left that skip the "anything waits?" check */
    bool poll_yield;
    int64_t poll_t;
    unsigned drain;                     /* looks left before the yielder runs again */
    unsigned defer_picks;               /* picks made while it waits */
    coro_t *deferred;
    /* units of s->live this worker holds for no job: jobs it finished and
     * has not taken off yet, and units it added ahead for the jobs it
     * spawns (rt/runtime.c SHUTDOWN).  Owner-only; atomic stores for
     * coro_sched_stats' racy read */
    uint32_t spare;
    unsigned since_normal, since_low;   /* starvation bound, see sched/worker.h */
    uint32_t rng;
    /* the workers on this worker's NUMA node, itself included: a thief
     * visits them first (sched/steal.c STEALING); set at create, read
     * only with s->numa */
    uint64_t near[CORO__WMASK_WORDS];
    struct coro__trace_ring *trace_ring;          /* trace ring, NULL = off (lib/sched/trace.c) */
    uint16_t *served;                   /* atomic: classes > 0 this worker serves (affinity.c SERVED) */
    uint32_t nserved;                   /* atomic: grows when classes appear */
    uint32_t served_cap;                /* served's room (under s->class_lock) */
    /* JOINING INLINE (sched/run.c): the jobs whose steps wait, on this
     * thread's stack, for the job they run inline, outermost first;
     * stored relaxed, read racily by coro_sched_dump (addresses only) */
    uint32_t nest;
    coro_t *nested[CORO__INLINE_DEPTH];
    /* counters: written by the owner (relaxed), read by coro_sched_stats */
    uint64_t n_run, n_steals, n_stolen, n_parks, n_wakeups, n_io;
    /* diagnostics (lib/rt/diag.c): the job this worker runs (NULL = none) and
     * its body, stored relaxed at each step's start and end and read racily
     * by coro_sched_dump (never dereferenced there); with s->diag also the
     * step's start (ns) and name */
    coro_t *cur;
    coro_fn cur_fn;
    int64_t cur_t0;                     /* 0 = unknown (diagnostics off) */
    const char *cur_name;
    uint64_t n_stalls;
    /* with s->hist: ready->running per priority, step, I/O->running */
    uint64_t h_ready[CORO__NPRIO][CORO_HIST_BUCKETS];
    uint64_t h_step[CORO_HIST_BUCKETS];
    uint64_t h_io[CORO_HIST_BUCKETS];
    ck_ring_buffer_t bufs[] __attribute__((aligned(CORO__CACHELINE)));
};

struct coro__drive_node;            /* rt/drive.c */
#define CORO__DRIVE_BUCKETS 64          /* coro_sched's drive_job chains */

/* THE DRIVER'S HINTS: words of the I/O context, each written by the I/O
 * layer where it changes, read here with relaxed loads (a stale value
 * delays a look or makes one for nothing, never loses a wake-up: the
 * turns decide again).  Set with s->io (io/context.c). */
struct coro__driver_hints {
    const uint32_t *fd_waiters;     /* jobs waiting on an fd's readiness (timers not counted) */
    const uint32_t *pending;        /* those and the I/O layer's timers */
    const uint32_t *lot_timers;     /* the lot's timers off the workers (lib/wait/wtimer.c) */
    /* changes whenever a worker handles I/O events or takes the poll
     * token: a park reads it at the start of its idle phase, and its
     * turn declines when it moved (another worker drives I/O) */
    const uint32_t *activity;
};

struct coro_sched {
    int nworkers;                       /* 0 = single-threaded */
    int nslots;                         /* worker structs (max(1, nworkers)) */
    /* the structs in w[]: nslots, and with workers one more, w[nslots],
     * the caller's seat (sched/seat.c) */
    int nall;
    /* atomic: the seat's word (sched/seat.c): 0 free, CORO__SEAT_TAKEN
     * while a thread in coro_block_on holds it, | CORO__SEAT_WAITED when
     * coro_sched_destroy waits for it to be left (a futex) */
    uint32_t seat_word;
    /* atomic (relaxed): calls of coro_block_on left that keep off the
     * seat, after one whose jobs fanned out (sched/seat.c, FAN-OUT) */
    uint32_t seat_skip;
    /* fixed at create: every CPU the machine has holds a worker, so any
     * thread's CPUs are inside the workers' (the seat needs no
     * sched_getaffinity to tell: sched/seat.c WHICH JOBS) */
    bool seat_anywhere;
    cpu_set_t wcpus;                    /* the workers' CPUs */
    bool pin;
    bool oversubscribed;                /* more workers than CPUs: never spin */
    /* fixed at create: notify's fence is a compiler barrier and a parking
     * worker calls membarrier(2) instead (sched/park.c PARKING) */
    bool use_membarrier;
    bool numa;                          /* the workers' CPUs span NUMA nodes (w->near) */
    /* FIRST TOUCH (rt/runtime.c): workers that made their structs, and
     * the word they wait on until create lets them run (futexes) */
    uint32_t boot_ready, boot_go;
    struct coro__trace *trace;          /* NULL = tracing off (lib/sched/trace.c) */
    const coro_alloc_t *alloc;
    struct coro__worker **w;
    uint64_t all_wmask[CORO__WMASK_WORDS];

    /* affinity classes */
    pthread_mutex_t class_lock;
    struct coro__affinity_class **cls;             /* fixed-size table, entries published with release */
    uint32_t nclasses;                      /* atomic */

    /* parked workers: a bit per worker, set by the worker before its last
     * look for work and cleared by whoever claims it to wake it; and their
     * summary, 16 bits per word of idle that count its bits (counted up
     * before a bit is set, down after it is cleared: never below them),
     * so that a notify reads one word per 256 workers while none is parked
     * (sched/wake.c IDLE SUMMARY).  On the same line as idle's first
     * words */
    uint64_t idle_sum[CORO__IDLE_SUM_WORDS] __attribute__((aligned(CORO__CACHELINE)));
    uint64_t idle[CORO__WMASK_WORDS];
    /* atomic: workers searching for work (sched/steal.c).  A line of its
     * own: thieves change it at every steal, and a notifier that finds no
     * idle bit never reads it */
    uint32_t searching __attribute__((aligned(CORO__CACHELINE)));

    /* LENT CPUS: a word per CPU (modulo CORO__LENT_SLOTS) that a thread
     * outside the workers changes at each submission from that CPU
     * (sched/submit.c), so that a worker whose yield came back late can
     * tell a thread of ours that made work on its CPU meanwhile from a
     * neighbour (base/spin.c, LATE YIELDS).  Atomic words, a hint each */
    struct {
        uint32_t v;
    } lent[CORO__LENT_SLOTS] __attribute__((aligned(CORO__CACHELINE)));

    /* lifecycle */
    uint32_t closed __attribute__((aligned(CORO__CACHELINE)));  /* atomic bool, read-mostly */
    uint32_t cancelling;                /* atomic bool */
    uint32_t live __attribute__((aligned(CORO__CACHELINE)));    /* jobs + CLOSED bit */
    uint32_t stopping;                  /* atomic bool: workers exit when idle */
    uint32_t shut_done;                 /* atomic bool: shutdown completed */
    uint32_t shut_users;                /* threads inside a shutdown, under shut_lock */
    uint32_t pin_gone;                  /* atomic bool: destroy scans the pins (sched/pin.c) */
    pthread_mutex_t shut_lock;
    pthread_cond_t shut_gone;           /* destroy waits for shut_users == 0 */
    pthread_mutex_t cancel_lock;        /* one cancel_all at a time */
    /* single-threaded: the threads that wait while another drives, each
     * on a futex of its own (rt/drive.c, THE DRIVE QUEUE); under drive_lock
     * (coro__spin_lock) but drive_nany, also read by the driver without it */
    uint32_t drive_lock;
    uint32_t drive_nany;
    struct coro__drive_node *drive_any;                 /* any finish may end their wait */
    struct coro__drive_node *drive_job[CORO__DRIVE_BUCKETS];   /* by the job they join */

    struct coro__io *io;
    const struct coro__driver *driver;     /* s->io's functions (io/io.h), set with io */
    struct coro__driver_hints hints;    /* s->io's words, set with io */
    /* the end of a job (rt/runtime.c coro__finish), set at create: the one
     * upcall from the scheduling layer (docs/architecture.md) */
    void (*finish)(coro_t *job);
    struct coro__parklot_sched *parklot;         /* lot timers + wait registry (lib/wait/parklot.c) */
    struct coro__frames *frames;        /* pool frames (lib/sched/frame.c) */
    /* atomic: every plain thread's submission ring (push-only list, each
     * published with a release CAS; read with acquire) */
    struct coro__subring *subrings;
    /* the submission rings that may hold jobs (sched/rings.c RINGS): bit
     * i of subring_bits for ring subring_tab[i], bit k of subring_top when word k of
     * subring_bits may be nonzero; nsubrings rings were made (atomic) */
    uint64_t subring_top __attribute__((aligned(CORO__CACHELINE)));
    uint64_t subring_bits[CORO__XQ_WORDS];
    /* the same two levels for the rings taken off but not yet confirmed
     * empty (RINGS: membarrier mode), looked at only now and then */
    uint64_t subring_qtop __attribute__((aligned(CORO__CACHELINE)));
    uint64_t subring_quiet[CORO__XQ_WORDS];
    struct coro__subring **subring_tab;           /* CORO__XQ_MAX entries, made with the first ring */
    uint32_t nsubrings;
    struct coro__bpool *blocking;       /* the blocking pool (lib/io/blocking.c) */

    /* virtual time and seeded runs (lib/rt/vtime.c), fixed at create; vt
     * NULL = both off, the one branch a drive (not a step) pays */
    struct coro__vt *vt;
    bool vtime;                         /* .virtual_time */
    int64_t vnow;                       /* atomic: the virtual clock (ns), its driver writes */

    /* diagnostics (lib/rt/diag.c), fixed at create: diag = stall_ns > 0 ||
     * hist, the one branch a step pays when both are off */
    bool diag, hist;
    int64_t stall_ns;
    void (*stall_hook)(const coro_stall_t *, void *);
    void *stall_arg;

    /* atomic (relaxed): the earliest deadline armed in the I/O layer's
     * timers [0] and in the lot's [1], INT64_MAX = none; read by a busy
     * worker at its looks (sched/worker.c DUE TIMERS), written by each
     * heap's owner when its armed deadline moves.  A line of its own: the
     * readers are every worker, the writes are the timers' */
    int64_t timers_next[2] __attribute__((aligned(CORO__CACHELINE)));
    char timers_pad[CORO__CACHELINE - 2 * sizeof(int64_t)];
};

#define CORO__LIVE_CLOSED 0x80000000u

/* take n jobs' units off s->live; the last one out after a close wakes
 * shutdown.  acq_rel: what those jobs did happens before shutdown's
 * return, which acquires live == CLOSED (rt/runtime.c SHUTDOWN) */
static inline void coro__live_sub(uint32_t *live, uint32_t n)
{
    if (__atomic_sub_fetch(live, n, __ATOMIC_ACQ_REL) == CORO__LIVE_CLOSED)
        coro__futex_wake(live, INT_MAX);
}

/* The drive word of a single-threaded scheduler (s->w[0]->started_st):
 * bit 0 says a thread drives the scheduler; bits 1-15 count the threads
 * that wait (coro_join, coro_block_on, shutdown) while another drives;
 * bits 16-31 are a sequence the driver bumps after each job that
 * finishes.  The waiters sleep on futexes of their own, queued in the
 * scheduler (drive_any, drive_job): the driver wakes the one whose job
 * ended, and one of them when it stops (rt/drive.c). */
#define CORO__DRIVE_ON     1u
#define CORO__DRIVE_WAITER 2u
#define CORO__DRIVE_WMASK  0xfffeu
#define CORO__DRIVE_SEQ    0x10000u

/* a job's completed result travels in this yield when its budget ran out
 * (sched/await.c): cancel must never replace it (sched/run.c) */
extern const struct coro_await_ops coro__yield_ops CORO__HIDDEN;

/* ---- generators (sched/gen.c), what the step loop calls ---- */
/* a pending coro_gen_await: arg[0] the generator, arg[1] the value's place */
extern const struct coro_await_ops coro__gen_ops CORO__HIDDEN;
/* cur awaits coro__gen_ops: link that generator's chain into job; the
 * frame whose await is handled next */
CORO__HIDDEN coro_t *coro__gen_link(coro_t *job, coro_t *cur);
/* cur, a generator's frame in job's chain, returned st (CORO__ST_VALUE,
 * _DONE or _FROM): the frame to go on with; *pending: handle its await */
CORO__HIDDEN coro_t *coro__gen_step(coro_t *job, coro_t *cur, int st, bool *pending);
/* cancel of job while cur waits: with a generator in the chain, the
 * outermost generator's puller (which reads err), else NULL */
CORO__HIDDEN coro_t *coro__gen_unwind(coro_t *job, coro_t *cur, intptr_t err);
/* a body returned st, which no macro of its kind produces: abort naming it */
CORO__HIDDEN __attribute__((noreturn)) void coro__bad_body(const coro_t *cur, int st);

/* the calling thread's worker, if any */
extern __thread struct coro__worker *coro__tls_worker CORO__HIDDEN;
extern __thread int coro__tls_budget CORO__HIDDEN;
extern __thread int coro__tls_in_job CORO__HIDDEN;
/* single-threaded driving with a deadline (coro_join_timeout): coro__park
 * sleeps at most until it (absolute ns, 0 = none) */
extern __thread int64_t coro__tls_drive_deadline CORO__HIDDEN;

/* ---- the event driver ---------------------------------------------------------
 * How a worker takes the events other than work (readiness, timers) and
 * how a worker that waits for them is woken.  The scheduling layer
 * defines the interface; the I/O layer (io/context.c, coro__io_driver)
 * implements it and the runtime plugs it in at create (s->driver, with s->io
 * its context): scheduling never names a symbol of a layer above it.
 * Two calls, as a poller needs them (Go's netpoll, tokio's driver): a
 * worker's turn, which fills the worker's batch with the jobs it woke
 * (WOKEN BATCHES) and never queues them itself, and the wake-up of a
 * worker that waits in the driver.  What the workers only ask - does
 * anything wait on an fd, did another worker handle I/O - the I/O layer
 * publishes in words they read without a call (s->hints).  Contracts:
 * io/io.h, coro__io_turn and the functions it dispatches to. */
enum {
    /* an idle worker's look: take what is ready, no wait (sched/worker.c
     * IDLE); returns the events that woke something */
    CORO__TURN_LOOK,
    /* a busy worker's look between two steps (sched/worker.c BUSY LOOKS);
     * the same return */
    CORO__TURN_BUSY,
    /* a parking worker waits in epoll instead of its futex (sched/park.c
     * WAITING IN EPOLL INSTEAD): 0 when it waited or saw its epoch move,
     * -EAGAIN when another thread holds the poll token or drives I/O
     * (then it parks on its futex); the wait ends at the worker's own
     * next timer at the latest */
    CORO__TURN_PARK,
    /* the single-threaded driver (no workers, b NULL): wait up to
     * timeout_ns (-1 forever, 0 just look); -EAGAIN at once when nothing
     * waits on I/O or a timer */
    CORO__TURN_WAIT,
    /* fire the worker's own timers that are due (lib/wait/wtimer.c);
     * try: give up if their lock is held.  Their next deadline into
     * *next, INT64_MAX none */
    CORO__TURN_OWN_TIMERS,
    /* a busy worker fires the I/O layer's and the lot's timers that are
     * due (sched/worker.c DUE TIMERS); returns how many */
    CORO__TURN_DUE_TIMERS,
};
struct coro__turn {
    int mode;                           /* CORO__TURN_* */
    int idx;                            /* the worker (not WAIT) */
    int64_t timeout_ns;                 /* WAIT */
    /* PARK: the worker's park epoch word and the value it read there
     * (it waits only while they agree), and the activity hint read at
     * the start of its idle phase */
    const uint32_t *epoch_word;
    uint32_t epoch, activity;
    bool try_;                          /* OWN_TIMERS */
    int64_t *next;                      /* OWN_TIMERS: out */
};
struct coro__io;
struct coro__driver {
    /* a turn (t->mode; only the fields of its mode are read); the jobs
     * it woke into b, which the caller (a worker of s; NULL for WAIT)
     * queues */
    int (*turn)(struct coro__io *io, const struct coro__turn *t, struct coro__woken *b);
    /* worker idx's park epoch was just bumped with a seq_cst RMW: if it
     * waits in the driver, wake it there and return true (nothing else
     * to do); false: wake its futex.  Single-threaded: the driving thread
     * is woken from epoll too, and false all the same */
    bool (*unpark)(struct coro__io *io, int idx);
};
/* what a busy worker's look is for (sched/worker.c BUSY LOOKS): a job
 * waits on an fd's readiness; with no workers (the single-threaded
 * driver, the only one to fire timers) any I/O wait or timer, the lot's
 * included.  s->io set */
static inline bool coro__driver_waiting(const coro_sched_t *s)
{
    /* relaxed: hints (THE DRIVER'S HINTS); a wait begun on the asking
     * worker is its own store, seen in program order */
    if (CORO__LIKELY(s->nworkers > 0))
        return __atomic_load_n(s->hints.fd_waiters, __ATOMIC_RELAXED) != 0;
    return __atomic_load_n(s->hints.pending, __ATOMIC_RELAXED) != 0 ||
           __atomic_load_n(s->hints.lot_timers, __ATOMIC_RELAXED) != 0;
}

/* the activity hint (THE DRIVER'S HINTS); 0 without I/O */
static inline uint32_t coro__driver_activity(const coro_sched_t *s)
{
    /* relaxed: a hint, compared for change only */
    return s->io ? __atomic_load_n(s->hints.activity, __ATOMIC_RELAXED) : 0;
}

/* s's clock: its virtual one (.virtual_time), else coro__now()'s; for
 * threads that neither drive nor join s (a blocking pool thread) */
static inline int64_t coro__sched_clock(const coro_sched_t *s)
{
    /* relaxed: one word its driver writes; a reader racing a jump sees
     * the time before or after it */
    return s->vtime ? __atomic_load_n(&s->vnow, __ATOMIC_RELAXED) : coro__now();
}

static inline struct coro__io *coro__sched_io(coro_sched_t *s)
{
    return s->io;
}

/* the caller's seat (sched/seat.c) */
#define CORO__SEAT_TAKEN  1u
#define CORO__SEAT_WAITED 2u
/* take s's seat for a coro_block_on of a root job whose mask is "any
 * CPU", from a plain thread: the seat, now the calling thread's worker
 * (coro__tls_worker), or NULL (held by another thread, no workers, the
 * calling thread's CPUs not inside the workers', closed, tracing on) */
CORO__HIDDEN struct coro__worker *coro__seat_take(coro_sched_t *s);
/* run the seat's jobs until root is over or none is queued there */
CORO__HIDDEN void coro__seat_run(struct coro__worker *w, coro_t *root);
/* hand what is still queued on the seat to the workers, and leave it */
CORO__HIDDEN void coro__seat_leave(struct coro__worker *w);
/* coro_sched_destroy: wait until no thread holds the seat */
CORO__HIDDEN void coro__seat_wait_free(coro_sched_t *s);

/* sched/affinity.c */
CORO__HIDDEN int coro__affinity_init(coro_sched_t *s, const int *cpus, int ncpus);
CORO__HIDDEN void coro__affinity_fini(coro_sched_t *s);
/* worker w's first served array, by w's own thread before it runs (no
 * class interned yet: create waits for the workers): 0 or -ENOMEM */
CORO__HIDDEN int coro__served_init(coro_sched_t *s, struct coro__worker *w);
/* give back worker w's served arrays (after the workers stopped) */
CORO__HIDDEN void coro__served_fini(coro_sched_t *s, struct coro__worker *w);
/* intern aff (NULL = any): returns the class index >= 0, or -EINVAL (empty,
 * no worker's CPU), -ENOMEM (table full or no memory) */
CORO__HIDDEN int coro__affinity_intern(coro_sched_t *s, const coro_cpuset_t *aff);
static inline struct coro__affinity_class *coro__affinity_get(coro_sched_t *s, unsigned idx)
{
    struct coro__affinity_class **tab = s->cls;
    /* acquire: pairs with the release store that published the class */
    return __atomic_load_n(&tab[idx], __ATOMIC_ACQUIRE);
}
static inline bool coro__affinity_allows(const struct coro__affinity_class *c, int widx)
{
    return coro__bit_test(c->wmask, (size_t)widx);
}

/* the workers: sched/worker.c, run.c, find.c, submit.c, park.c, wake.c,
 * steal.c (their essays are indexed in sched/worker.h) */
CORO__HIDDEN void *coro__worker_main(void *arg);
/* run job until it suspends, yields or finishes; true when it finished
 * (the frame may then be gone: only its address is known) */
CORO__HIDDEN bool coro__run_job(struct coro__worker *w, coro_t *job);
CORO__HIDDEN coro_t *coro__find_work(struct coro__worker *w);
CORO__HIDDEN void coro__submit(coro_sched_t *s, coro_t *job, bool yield);
/* coro__submit of a job coro_spawn just made READY (not a yield) */
CORO__HIDDEN void coro__submit_spawned(coro_sched_t *s, coro_t *job);
/* coro__submit_spawned's usual case, for a caller on w, a worker of s, with
 * a class-0 NORMAL job: a step's first hand-off, into an empty LIFO slot
 * (sched/submit.c, where coro__submit says why a plain store fills it).
 * False: nothing done, coro__submit_spawned's whole path is needed */
static inline bool coro__submit_spawned_lifo(struct coro__worker *w, coro_sched_t *s, coro_t *job)
{
    if (w->lifo_run == w->n_run || s->hist ||
        /* relaxed: as coro__submit's look at the slot */
        __atomic_load_n(&w->lifo, __ATOMIC_RELAXED))
        return false;
    w->lifo_run = w->n_run;
    /* release: as coro__submit's store to the slot */
    __atomic_store_n(&w->lifo, job, __ATOMIC_RELEASE);
    return true;
}
CORO__HIDDEN coro_t *coro__park(struct coro__worker *w);
CORO__HIDDEN void coro__wake_all_workers(coro_sched_t *s);
CORO__HIDDEN unsigned coro__worker_depth(struct coro__worker *w);
/* BUSY LOOKS (sched/worker.c): after a step of w, whether to look at the
 * epoll set now without blocking (every CORO__IO_POLL_STEPS steps, and
 * after a yield once CORO__IO_POLL_YIELD_NS passed since a yield last
 * looked; only while something waits on I/O).  w's owner; s->io set. */
CORO__HIDDEN bool coro__look_due(struct coro__worker *w);
/* test hook: workers never make the busy look (the I/O thread alone
 * takes readiness while they are busy) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern bool coro__busy_look_off;
#endif
/* test hook: the I/O thread fires no timers (a busy worker's DUE TIMERS
 * alone do; lib/io/epoll.c) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern bool coro__io_thread_timers_off;
#endif
/* test hook: the order in which worker widx's next steal would visit the
 * others (sched/steal.c NUMA), as if none were parked, in vic; returns
 * how many.  Draws from that worker's random numbers: only while it is
 * parked or the scheduler is not running */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN int coro__test_steal_order(coro_sched_t *s, int widx, int *vic);
#endif
/* coro__io_wake_idle_worker (sched/wake.c) - the I/O thread gave the poll token up
 * for the workers: wake one idle worker to take it.  False when none is
 * idle (the I/O thread keeps polling). */
CORO__HIDDEN bool coro__io_wake_idle_worker(coro_sched_t *s);
/* give back worker w's spare units of s->live but `keep` (sched/park.c) */
CORO__HIDDEN void coro__flush_live(struct coro__worker *w, uint32_t keep);

/* ---- reports (sched/report.c) ------------------------------------------------
 * the stall report (hook or stderr) of a step of job on w that has run dur
 * ns so far, body fn; the ready stamp (coro_t.reserved, 64 ns units) */
CORO__HIDDEN void coro__stall_report(struct coro__worker *w, coro_t *job, coro_fn fn,
                                     int64_t dur);
#define CORO__READY_SHIFT 6
/* coro_sched_dump's stream (rt/diag.c writes it; each layer lists the
 * suspended jobs it holds, under its own locks, with coro__dump_job) */
struct coro__dump {
    FILE *f;                /* the memory stream */
    coro_sched_t *s;
    int64_t now;
    int jobs;
};
CORO__HIDDEN void coro__dump_job(struct coro__dump *d, coro_t *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
CORO__HIDDEN const char *coro__prio_name(int prio);
/* "any CPU", "CPU 3", "CPUs 0-3": the mask of affinity class cls */
CORO__HIDDEN void coro__mask_text(coro_sched_t *s, unsigned cls, char *buf, int len);
/* the body's name in buf (base/symbol.c: static bodies too), NULL = unknown */
CORO__HIDDEN const char *coro__sym_of(const void *fn, char *buf, size_t len);

#endif
