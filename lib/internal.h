/* SPDX-License-Identifier: MIT */
/* private: corokit internals shared by the files of lib/; never installed. */
#ifndef COROKIT_INTERNAL_H
#define COROKIT_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corokit.h"
#include "mq.h"

#define CORO__HIDDEN __attribute__((visibility("hidden")))
#define CORO__LIKELY(x) __builtin_expect(!!(x), 1)
#define CORO__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CORO__CACHELINE 64

#if defined(__SANITIZE_THREAD__)
# define CORO__TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define CORO__TSAN 1
# endif
#endif

/* A full barrier.  ThreadSanitizer does not support atomic_thread_fence;
 * under it a seq_cst RMW on a private word gives the same hardware barrier
 * (a locked instruction on x86, a full dmb on arm64). */
#ifdef CORO__TSAN
static inline void coro__fence_seq_cst(void)
{
    static uint32_t dummy;
    __atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
}
#else
# define coro__fence_seq_cst() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* ---- a small spinlock ---------------------------------------------------
 * For short critical sections taken on hot paths (the joiner-slot registry,
 * a group's member list), where a pthread mutex cost fib 10 % of its
 * instructions.  It gives the CPU away after a few tries, so a pre-empted
 * holder (more workers than CPUs) is not spun against. */
static inline void coro__spin_lock(uint32_t *l)
{
    /* acquire: pairs with coro__spin_unlock's release; the data is read after */
    for (unsigned i = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); i++) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++i >= 64)
                sched_yield();
#if defined(__x86_64__) || defined(__i386__)
            else
                __builtin_ia32_pause();
#endif
        }
    }
}

static inline void coro__spin_unlock(uint32_t *l)
{
    /* release: the data's updates before the next holder's acquire */
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- the job state word (coro_t.state) ---------------------------------
 *
 * One 32-bit atomic word, as tokio's task state: the low three bits hold
 * the lifecycle state, the others flags.  Every change is a CAS or an
 * atomic RMW so that flags set by other threads are never lost.
 *
 *   IDLE      zeroed frame, never spawned
 *   READY     in exactly one queue; whoever dequeues it owns it
 *   RUNNING   a worker is inside its body (or arming its awaitable)
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
#define CORO__S_RUNNING   2u
#define CORO__S_SUSPENDED 3u
#define CORO__S_DONE      4u
#define CORO__S_CHILD     5u
#define CORO__S_MASK      7u
#define CORO__F_THREAD_JOIN 8u
#define CORO__F_JOB_JOIN    16u
#define CORO__F_JOINER      32u     /* coro_t.joiner holds an awaiting job */
/* POOL:    the frame came from coro_frame_alloc (set by coro_spawn); the
 *          library gives it back when the job is over (lib/frame.c).
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
 * setting it (lib/lot.c REGISTRY, lib/io_epoll.c CANCEL). */
#define CORO__F_CANCEL      256u

static inline bool coro__job_cancelled(const coro_t *job)
{
    /* seq_cst: against coro_cancel's seq_cst RMW of the flag and its
     * later loads of the registry bits (lib/lot.c REGISTRY) */
    return (__atomic_load_n(&job->state, __ATOMIC_SEQ_CST) & CORO__F_CANCEL) != 0;
}

/* coro_t.flags */
#define CORO__FL_THREAD 1u      /* a plain thread's stand-in in the lot */
/* 2u: CORO__FL_PROXY, a select stand-in (lib/sync_impl.h) */
#define CORO__FL_IOWAKE 4u      /* made ready by the I/O layer (stats io_wakeups) */
#define CORO__FL_TIMED 8u       /* waits in the lot with a timer (lib/lot.c) */
#define CORO__FL_EXT 16u        /* coro_t.ext holds the spawn extras below */

/* What a job spawned with .deadline (or .group) carries, allocated at
 * spawn through the scheduler's allocator and freed when it finishes;
 * immutable while it runs (read by its worker, the lot and the I/O
 * context). */
struct coro__ext {
    void (*on_exit)(coro_t *);
    int64_t deadline;       /* absolute ns, 0 = none */
    coro_group_t *group;    /* NULL = none */
    coro_t *job;            /* the member (lib/group.c) */
    struct coro__ext *gprev, *gnext;    /* the group's list, under its lock */
    const char *name;       /* coro_spawn_opts_t.name, NULL = none */
};

/* lib/group.c: join g (at spawn, before the job is queued) / the finish of
 * a member: under g's lock, store DONE (the exchange coro__finish does,
 * returned), leave, wake g's waiters when it was the last */
CORO__HIDDEN void coro__group_join(coro_group_t *g, struct coro__ext *x);
CORO__HIDDEN uint32_t coro__group_finish(coro_t *job, struct coro__ext *x, uint32_t *nw);
/* coro__finish_cas - the finisher's CAS to DONE (lib/sched.c): returns the
 * old state word, *nw the new one (DONE, POOL/JOINERS kept, EXITING when
 * the job had waiters) */
CORO__HIDDEN uint32_t coro__finish_cas(coro_t *job, uint32_t *nw);

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

/* An awaitable run on the blocking pool (lib/blocking.c): its arm is
 * coro__blocking_arm, and a pool thread calls run(aw) (aw is the job's
 * pending awaitable) to get the job's result.  coro_blocking and the
 * regular-file reads and writes (lib/io_file.c) are the two kinds. */
struct coro__pool_ops {
    struct coro_await_ops base;
    intptr_t (*run)(coro_await_t *aw);
};
CORO__HIDDEN int coro__blocking_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw,
                                    intptr_t *res);

/* lib/io_file.c: the hook at the start of coro_read / coro_write /
 * coro_write_all.  When fd is a regular file or a block device (fstat
 * once, cached per fd number), set *a to an awaitable that does the
 * operation on the blocking pool and return true; false for any other fd
 * (the caller goes on as before).  op: 0 read, 1 write, 2 write_all;
 * timeout: the call's (relative), used only if the fd number turns out
 * to have been reused for something epoll can wait for. */
CORO__HIDDEN bool coro__file_op(int fd, const void *buf, size_t len, int64_t timeout, int op,
                                coro_await_t *a);

/* coro__wake - make suspended job READY with result res (stored into the
 * innermost frame's CORO_RESULT) and queue it on a worker its affinity
 * allows, at its priority.  Called exactly once per PENDING arm, by the
 * thread that removed the job from the wait structure.  Any thread. */
CORO__HIDDEN void coro__wake(coro_t *job, intptr_t res);

/* coro__in_job - true when the calling thread is inside a job's body or
 * arm (used by the blocking calls to refuse with -EDEADLK). */
CORO__HIDDEN bool coro__in_job(void);

/* coro__cancelling - true once coro_sched_shutdown(CORO_CANCEL) began: every
 * arm then completes at once with -ECANCELED. */
CORO__HIDDEN bool coro__cancelling(const coro_sched_t *s);

/* coro__complete - an already-completed awaitable with result r, built
 * inside a job: once the job has completed CORO__BUDGET awaits without
 * suspending in one run, it yields instead (result r all the same), so a
 * job whose I/O is always ready cannot keep its worker forever. */
CORO__HIDDEN coro_await_t coro__complete(intptr_t r);

/* coro__done_wake_all - the finisher's wake of key's lot waiters (jobs
 * awaiting coro_done / coro_done_timeout of job key) with its result res;
 * returns how many (lib/coro.c) */
CORO__HIDDEN int coro__done_wake_all(coro_t *key, intptr_t res);

/* ---- the parking lot (lib/lot.c) -----------------------------------------
 *
 * A hashed table of wait lists keyed by address (WebKit's ParkingLot, the
 * kernel's futex hash): jobs and plain threads wait on a key, wakers wake
 * one or all waiters of a key.  Objects that are waited on (jobs for
 * coro_done, events, mutexes, channels ...) need no list of their own.
 * Each scheduler keeps its lot timers (a heap behind its own timerfd) and
 * a registry of the buckets and joiner slots its jobs wait in, so that
 * CORO_CANCEL visits exactly its own waits.
 */
typedef bool (*coro__lot_validate_fn)(void *key, void *ctx, intptr_t *res);

/* per scheduler: timers + registry.  init: 0 or -ENOMEM / -errno (timerfd). */
struct coro__lotsched;
CORO__HIDDEN int coro__lot_sched_init(coro_sched_t *s);
CORO__HIDDEN void coro__lot_sched_fini(coro_sched_t *s);

/* coro__lot_park_job - under the key's bucket lock: call validate(key,
 * ctx, &res) (NULL = always wait): if it returns false, do not wait:
 * return CORO__ARM_READY with *res.  If the job's scheduler is cancelling,
 * CORO__ARM_READY with -ECANCELED.  Otherwise queue job on key (FIFO) with
 * a timer at the absolute CLOCK_MONOTONIC deadline (ns, -1 = none) and
 * return CORO__ARM_PENDING: the job stays until an unpark, its timer
 * (-ETIMEDOUT) or cancel takes it.  A timer that cannot be had: READY with
 * -ENOMEM (or -ENOSYS without an I/O layer). */
CORO__HIDDEN int coro__lot_park_job(void *key, coro_t *job,
                                    coro__lot_validate_fn validate, void *ctx,
                                    intptr_t *res, int64_t deadline);

/* coro__lot_park_thread - the same for a plain thread: block until woken
 * or until the absolute CLOCK_MONOTONIC deadline (ns, -1 = none) passes.
 * Returns the wake result, -ETIMEDOUT, or validate's result. */
CORO__HIDDEN intptr_t coro__lot_park_thread(void *key, coro__lot_validate_fn validate,
                                            void *ctx, int64_t deadline);

/* Wake the oldest waiter of key (true if one was woken) / all of them
 * (returns how many), each with result res, outside the bucket lock. */
CORO__HIDDEN bool coro__lot_unpark_one(void *key, intptr_t res);
CORO__HIDDEN int coro__lot_unpark_all(void *key, intptr_t res);

/* coro__lot_unpark_one_with - as unpark_one, but first calls
 * fn(key, ctx, woke, more) under the bucket lock once the oldest waiter
 * (if any) is unlinked - woke: one was; more: others still wait - so that
 * a mutex can hand itself over or a semaphore count atomically with the
 * wake.  *res_io (may be NULL) lets fn choose the woken waiter's result. */
CORO__HIDDEN bool coro__lot_unpark_one_with(void *key, intptr_t res,
                                            void (*fn)(void *key, void *ctx, bool woke,
                                                       bool more, intptr_t *res),
                                            void *ctx);

/* coro__lot_remove - withdraw job from key's list if it is there; true
 * when it was removed (its timer too): the caller then owns the job's
 * wake-up and must coro__wake it. */
CORO__HIDDEN bool coro__lot_remove(void *key, coro_t *job);

/* coro__lot_cancel_sched - wake every job of s that waits in the lot or in
 * a joiner slot with -ECANCELED (s->cancelling already set, seq_cst).
 * Visits only the buckets s's jobs have parked in.  Returns how many. */
CORO__HIDDEN int coro__lot_cancel_sched(coro_sched_t *s);
/* coro__lot_cancel_jobs - the same for the jobs of s that carry
 * CORO__F_CANCEL (coro_cancel set it, seq_cst, before the call). */
CORO__HIDDEN int coro__lot_cancel_jobs(coro_sched_t *s);
/* buckets the last coro__lot_cancel_sched(s) visited (tests) */
CORO__HIDDEN uint64_t coro__lot_cancel_visits(coro_sched_t *s);

/* Lot timers, for the I/O context: the timerfd to watch (its own epoll
 * tag), what to call when it is readable (the I/O thread, or the thread
 * in coro__io_poll; returns jobs woken), and whether any is pending (for
 * coro__io_pending). */
CORO__HIDDEN int coro__lot_timer_fd(coro_sched_t *s);
CORO__HIDDEN int coro__lot_timers_fire(coro_sched_t *s);
CORO__HIDDEN bool coro__lot_timers_pending(coro_sched_t *s);
CORO__HIDDEN uint32_t coro__lot_timers_count(coro_sched_t *s);     /* armed now */

/* coro_done within one scheduler: job awaits target through target's
 * joiner slot (registered for CORO_CANCEL).  Returns an arm result, or -1
 * when the slot is taken (use the lot). */
CORO__HIDDEN int coro__lot_joiner_arm(coro_sched_t *s, coro_t *target, coro_t *job,
                                      intptr_t *res);
/* the finisher, after its exchange of target->joiner returned w: wake w */
CORO__HIDDEN void coro__lot_joiner_wake(coro_t *w, intptr_t res);

/* ---- futex ------------------------------------------------------------------ */
CORO__HIDDEN int coro__futex_wait(uint32_t *addr, uint32_t expect, int64_t deadline_ns);
CORO__HIDDEN void coro__futex_wake(uint32_t *addr, int n);

/* ---- time ------------------------------------------------------------------- */
CORO__HIDDEN int64_t coro__now(void);   /* CLOCK_MONOTONIC ns */

/* ---- the I/O hook --------------------------------------------------------------
 * The I/O layer (lib/io_*.c) registers these when a scheduler is created.
 * poll: single-threaded mode, wait for I/O up to timeout ns (-1 = forever,
 * 0 = just look) and wake what is ready; returns how many events it
 * handled, or -EAGAIN when nothing waits on I/O at all. */
struct coro__io;
CORO__HIDDEN int coro__io_create(coro_sched_t *s, struct coro__io **out);
CORO__HIDDEN void coro__io_cancel_all(struct coro__io *io);
/* cancel_jobs: end with -ECANCELED every I/O wait and sleep of a job that
 * carries CORO__F_CANCEL (set before the call); the context does it on its
 * next round.  Any thread. */
CORO__HIDDEN void coro__io_cancel_jobs(struct coro__io *io);
CORO__HIDDEN void coro__io_destroy(struct coro__io *io);
CORO__HIDDEN int coro__io_poll(struct coro__io *io, int64_t timeout_ns);
/* kick: make a coro__io_poll that blocks return (any thread) */
CORO__HIDDEN void coro__io_kick(struct coro__io *io);
/* pending: something waits on I/O or a timer */
CORO__HIDDEN bool coro__io_pending(struct coro__io *io);
/* coro__io_park - worker idx (multi-threaded), about to sleep with its
 * park epoch read as `epoch` from *epoch_word and its idle bit set: if no
 * other thread waits in epoll and no worker handled I/O since `activity`
 * was read, wait there instead of on the futex (unless
 * *epoch_word already moved on), call awake(arg) as soon as epoll_wait
 * returns, then handle the events (jobs woken go to this worker's queues
 * when their masks allow: coro__wake).  Returns 0 when it waited (or saw
 * the epoch move), -EAGAIN when another thread holds the poll token: then
 * park on the futex.  See lib/io_epoll.c (THE POLL TOKEN) and worker.c. */
CORO__HIDDEN int coro__io_park(struct coro__io *io, int idx, const uint32_t *epoch_word,
                               uint32_t epoch, uint32_t activity, void (*awake)(void *),
                               void *arg);
/* coro__io_activity - a number that changes whenever a worker handles I/O
 * events or takes the poll token; coro__io_park(activity) declines (the
 * caller parks on its futex) when it changed since the caller read it at
 * the start of its idle phase: another worker is driving I/O. */
CORO__HIDDEN uint32_t coro__io_activity(struct coro__io *io);
/* coro__io_poll_now - look at the epoll set without blocking and handle
 * what is ready (any thread, token or not: a worker about to go idle takes
 * the readiness its own jobs are waiting for instead of waiting for
 * another thread to wake up).  Returns how many events woke something. */
CORO__HIDDEN int coro__io_poll_now(struct coro__io *io);
/* coro__io_wake_poller - after bumping worker idx's epoch with a seq_cst
 * RMW: if that worker waits in epoll, wake it (eventfd) and return true;
 * false: it does not (wake its futex). */
CORO__HIDDEN bool coro__io_wake_poller(struct coro__io *io, int idx);
/* coro__io_handoff (lib/worker.c) - the I/O thread gave the poll token up
 * for the workers: wake one idle worker to take it.  False when none is
 * idle (the I/O thread keeps polling). */
CORO__HIDDEN bool coro__io_handoff(coro_sched_t *s);
/* coro__io_add_source - one more fd in the I/O context's epoll set
 * (level-triggered, EPOLLIN): cb(arg) runs on whichever thread handles
 * the I/O events (a worker, the I/O thread, or the single-threaded driver)
 * each time epoll reports fd readable; cb must read what made it readable.
 * At most 4.  Returns 0, -ENOSPC, or -errno of epoll_ctl. */
CORO__HIDDEN int coro__io_add_source(struct coro__io *io, int fd, void (*cb)(void *arg),
                                     void *arg);
/* coro__io_ctl_count - epoll_ctl calls made on users' fds so far (tests) */
CORO__HIDDEN uint64_t coro__io_ctl_count(struct coro__io *io);
/* coro__io_woken_by - fd waiters taken by a readiness event so far, by the
 * I/O thread (io_thread) or by workers / the single-threaded driver (tests) */
CORO__HIDDEN uint64_t coro__io_woken_by(struct coro__io *io, bool io_thread);
CORO__HIDDEN struct coro__io *coro__sched_io(coro_sched_t *s);

/* ---- memory ----------------------------------------------------------------- */
CORO__HIDDEN void *coro__alloc(coro_sched_t *s, size_t n);
CORO__HIDDEN void coro__free(coro_sched_t *s, void *p, size_t n);
/* 64-byte (CORO__CACHELINE) aligned, zeroed blocks through s's allocator,
 * for structs with cache-line aligned members (sched.c); free with
 * coro__free_aligned and the same n */
CORO__HIDDEN void *coro__alloc_aligned(coro_sched_t *s, size_t n);
CORO__HIDDEN void coro__free_aligned(coro_sched_t *s, void *p, size_t n);

/* ---- diagnostics ---------------------------------------------------------- */
/* coro_sched_dump (lib/diag.c): lot.c, io_epoll.c / io_stub.c, blocking.c: list the suspended jobs of s
 * each of them holds (under its own locks) into the dump's stream; return
 * how many */
struct coro__dump;
struct coro__io;
CORO__HIDDEN void coro__dump_job(struct coro__dump *d, coro_t *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
CORO__HIDDEN int coro__lot_dump(coro_sched_t *s, struct coro__dump *d);
CORO__HIDDEN int coro__io_dump(struct coro__io *io, struct coro__dump *d);
CORO__HIDDEN int coro__blocking_dump(coro_sched_t *s, struct coro__dump *d);

#endif
