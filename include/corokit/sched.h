/* SPDX-License-Identifier: MIT */
/* corokit: the scheduler - workers, jobs, affinity and priority. */
#ifndef COROKIT_SCHED_H
#define COROKIT_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "coro.h"
#include "cpuset.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Job priorities.  A worker always looks at HIGH first, then NORMAL, then
 * LOW; see docs/guide.md for the bound that keeps lower levels from
 * starving. */
#define CORO_PRIO_LOW    (-1)
#define CORO_PRIO_NORMAL 0
#define CORO_PRIO_HIGH   1

/* .workers: one worker per CPU the process may use. */
#define CORO_WORKERS_AUTO (-1)
/* The most workers a scheduler runs: as many as CORO_MAX_CPUS, so that
 * CORO_WORKERS_AUTO has one per usable CPU on any machine corokit can
 * name. */
#define CORO_MAX_WORKERS 1024

/* What the stall detector reports (coro_sched_config_t.stall_ns).  The
 * pointers are valid during the hook call only. */
typedef struct coro_stall {
    coro_t *job;                /* the job (identity only: do not touch it) */
    const char *name;           /* its coro_spawn_opts_t.name, or NULL */
    void *fn;                   /* the body that runs (the innermost frame's) */
    const char *symbol;         /* fn's name (static bodies too), NULL if stripped */
    int64_t duration_ns;        /* how long the step has run so far */
    int worker;                 /* worker index (0 when single-threaded) */
    int cpu;                    /* the worker's CPU (-1 when single-threaded) */
    int priority;               /* CORO_PRIO_* */
    uint32_t reserved_u;
    uint64_t reserved[2];
} coro_stall_t;

typedef struct coro_sched_config {
    /* CORO_WORKERS_AUTO: one pinned worker per usable CPU
     * (sched_getaffinity: cgroups and taskset are honoured).
     * 0: single-threaded - jobs run on the thread that calls
     * coro_sched_run / coro_join / coro_block_on.
     * N > 0: N workers; more than the CPUs is allowed, they then share the
     * CPUs round-robin. */
    int workers;
    /* Pin each worker to its CPU (default true).  A failed pin is counted
     * in the stats, never fatal. */
    bool pin;
    /* The CPUs to place workers on (NULL = all usable CPUs). */
    const coro_cpuset_t *cpus;
    /* Where the scheduler's own memory comes from (NULL = malloc and
     * free): see coro_alloc_t.  Must outlive the scheduler. */
    const coro_alloc_t *alloc;
    /* The blocking pool (coro_blocking): at most this many threads
     * (0 = 512, as tokio), each retired after blocking_keepalive_ns
     * without work (0 = 10 s; < 0: -EINVAL).  Threads start only when
     * needed. */
    uint32_t blocking_threads;
    uint32_t reserved_u;        /* keep zero */
    int64_t blocking_keepalive_ns;
    /* The built-in tracer (include/corokit/trace.h): 0 = off, unless
     * COROKIT_TRACE=FILE is in the environment (then 8,192); N > 0 = on,
     * each worker, the I/O thread and the plain threads keeping their last
     * N events (rounded up to a power of two, at most 16,777,216; 32 bytes
     * each).  Off costs one predictable branch per hook. */
    uint64_t trace_events;
    /* Seeded runs (docs/testing.md), single-threaded only (.workers = 0,
     * else create gives -EINVAL).  0 = off (the default: no cost).
     * Nonzero: whenever the driving thread picks the next job, it picks
     * among all ready jobs of the highest ready priority with a PRNG
     * seeded with it, so jobs made ready together (wake-ups of one step,
     * timers of one instant) run in a seeded order.  The same seed and the
     * same program give the same order of steps, and the same trace
     * (COROKIT_TRACE): on a virtual clock byte for byte (its timestamps
     * are virtual), on the real one apart from the timing; another seed,
     * another order.  What comes from outside (fds, signals, children, blocking
     * calls, other threads) comes when it comes: it is repeatable only
     * as far as its timing is. */
    uint64_t seed;
    /* The stall detector (docs/diagnostics.md): a job step (from the
     * moment a worker resumes the job until it suspends, yields or
     * finishes) that runs longer than stall_ns is reported once, while the
     * step still runs (at its next await), to stall_hook(info, stall_arg)
     * on the worker's thread; stall_hook NULL = one line on stderr.
     * 0 = off (the default): one predictable branch per step. */
    int64_t stall_ns;
    void (*stall_hook)(const struct coro_stall *info, void *arg);
    void *stall_arg;
    /* Latency histograms in coro_sched_stats (ready to running per
     * priority, step time, I/O readiness to running): two clock reads per
     * step, so off by default (false), as tokio's
     * enable_metrics_poll_count_histogram. */
    bool histograms;
    /* Virtual time (docs/testing.md), single-threaded only (.workers = 0,
     * else create gives -EINVAL).  false = the real clock (the default).
     * true: the scheduler's clock (coro_sched_now) starts at
     * CORO_VIRTUAL_TIME_START in every run and moves only by
     * coro_sched_advance, or by jumping to the earliest pending deadline
     * when the thread driving the scheduler (coro_sched_run, coro_join,
     * coro_block_on) finds no job ready and none waiting on the outside
     * world (an fd, a signal, a child, a blocking call): time stands still
     * while any job can run.  Inside the scheduler's jobs coro_now() is
     * that clock, and every sleep, timeout, .deadline, timed join,
     * coro_select_timer and timed group wait of its jobs is on it.  While
     * a job waits on the outside world the clock does not jump: the driver
     * waits for it in real time.  When nothing can ever run again (no job
     * ready, no timer pending, nothing waiting on the outside world) a
     * join returns -EDEADLK at once instead of hanging. */
    bool virtual_time;
    /* Room for fields added by later versions without an ABI break: keep
     * them zero (start from CORO_SCHED_CONFIG_DEFAULT or a zeroed struct).
     * A new field takes the place of reserved bytes; the size stays. */
    uint8_t reserved_b[6];
} coro_sched_config_t;

#if defined(__x86_64__) || defined(__aarch64__)
CORO_STATIC_ASSERT(sizeof(coro_sched_config_t) == 88,
                   "coro_sched_config_t grows only into its reserved words");
#endif

/* The default configuration: one pinned worker per usable CPU.  A
 * compound literal in C; a call of coro_sched_config_default() in C++,
 * which has no designated initialisers before C++20.  Both start from a
 * zeroed struct, so every field not named is zero. */
static inline coro_sched_config_t coro_sched_config_default(void)
{
#ifdef __cplusplus
    coro_sched_config_t c{};
#else
    coro_sched_config_t c = {0};
#endif
    c.workers = CORO_WORKERS_AUTO;
    c.pin = true;
    return c;
}

#ifdef __cplusplus
# define CORO_SCHED_CONFIG_DEFAULT (coro_sched_config_default())
#else
# define CORO_SCHED_CONFIG_DEFAULT \
    ((coro_sched_config_t){ .workers = CORO_WORKERS_AUTO, .pin = true })
#endif

/* A job group, owned by the caller (lib/rt/group.c): jobs join it at spawn
 * (coro_spawn_opts_t.group) and leave it when they finish; it can be
 * waited for and cancelled as a whole.  Its members may run on different
 * schedulers: the waits end when the members of all have finished, and
 * coro_group_cancel reaches each.  Every field is private. */
typedef struct coro_group {
    void *head;             /* private: the members' records */
    uint32_t lock;          /* private: a spinlock */
    uint32_t count;         /* private: members not finished */
    /* private: finished members not yet collected (coro_group_next), and
     * the last of them; done_last is NULL in a group that does not collect */
    void *done, *done_last;
} coro_group_t;

/* Per-spawn options; a zero-initialised struct (or NULL) means any CPU,
 * NORMAL priority, no exit hook. */
typedef struct coro_spawn_opts {
    const coro_cpuset_t *affinity;  /* NULL = any CPU; read during the call */
    int priority;                   /* CORO_PRIO_LOW .. CORO_PRIO_HIGH */
    /* Called once the scheduler will never touch the frame again (the
     * place to free it), on the thread that finished the job, as the end
     * of the job: blocking calls return -EDEADLK there.  It may run after
     * coro_join / coro_done returned: free or reuse a frame that has an
     * on_exit only here (docs/api.md, "Frame lifetime"). */
    void (*on_exit)(coro_t *co);
    /* The group the job joins (NULL = none): it is a member until it
     * finishes; the group must outlive it (coro_group_destroy: -EBUSY). */
    coro_group_t *group;
    /* The job's deadline: absolute nanoseconds on coro_now()'s clock,
     * CORO_NO_DEADLINE (0) = none.  Every await of the job (and of its coro_call children) that
     * has not completed by then returns -ETIMEDOUT; a wait pending at the
     * deadline ends then (lot waits and I/O waits: their timers are bounded
     * by it).  An await that completes at once keeps its result. */
    int64_t deadline;
    /* The job's name, shown by coro_sched_dump and the stall detector
     * (NULL = none).  Not copied: the caller keeps the string alive while
     * the job lives (a string literal is best: a dump may print it while
     * the job finishes).  A named job costs one allocation at spawn. */
    const char *name;
    /* on_exit with a context: called as on_exit_with(co, on_exit_ctx), at
     * the moment and under the rules of on_exit (above), for hooks that
     * need more than the frame (a session shared by two jobs, a pool to
     * give the frame back to).  Set on_exit or on_exit_with, not both
     * (coro_spawn gives EINVAL).  on_exit_ctx is not read without on_exit_with.
     * Like .name, it costs one allocation at spawn: the frame header does
     * not grow. */
    void (*on_exit_with)(coro_t *co, void *ctx);
    void *on_exit_ctx;
    /* Room for fields added by later versions without an ABI break: keep
     * it zero (`= { .priority = ... }` does).  A new field takes the place
     * of reserved words; the size stays. */
    uint64_t reserved[1];
} coro_spawn_opts_t;

#if defined(__x86_64__) || defined(__aarch64__)
CORO_STATIC_ASSERT(sizeof(coro_spawn_opts_t) == 72,
                   "coro_spawn_opts_t grows only into its reserved words");
#endif

/* Shutdown modes. */
#define CORO_DRAIN  0   /* let every job finish */
#define CORO_CANCEL 1   /* resume every suspended job with -ECANCELED */

/* coro_sched_create - make a scheduler and start its workers.
 * cfg NULL = CORO_SCHED_CONFIG_DEFAULT.  Returns 0 and sets *out, or
 * -EINVAL (NULL out, workers < -1 or > CORO_MAX_WORKERS, cpus empty or
 * holding no usable CPU, trace_events > 16,777,216, .virtual_time or
 * .seed with workers != 0), -ENOMEM, or the error of a failed thread start
 * (pthread_create's: -EAGAIN).
 * On failure nothing is left behind.  Any thread may call it. */
CORO_EXTERN int coro_sched_create(coro_sched_t **out, const coro_sched_config_t *cfg);

/* coro_spawn - start job co (a zeroed or finished frame) with body fn.  The
 * frame stays the caller's.  A plain spawn allocates nothing; a new
 * affinity mask allocates its class once, and a job with a .name, a
 * .deadline or a .group a small record, freed when it finishes.  Any
 * thread, and any job, may spawn; never blocks.  Returns 0, or -EINVAL
 * (NULL s, co or fn; bad priority; affinity empty, holding a CPU id >=
 * CORO_MAX_CPUS or no worker's CPU), -EBUSY (co is live: spawned and not
 * finished, or a coro_call child), -ESHUTDOWN (shutdown has begun),
 * -ENOMEM (the table of distinct masks is full, or the record could not
 * be had).  When it fails, fn never runs and on_exit is never called. */
CORO_EXTERN int coro_spawn(coro_sched_t *s, coro_t *co, coro_fn fn,
                           const coro_spawn_opts_t *opts);

/* coro_join - block the calling plain thread until job co finishes, and
 * write its result (negative or not) to *result.  In single-threaded mode
 * it runs the scheduler on the calling thread until co is done; while
 * another thread drives, it sleeps until co is done or the drive is free,
 * then takes the drive over.  Returns 0 with *result, or -EINVAL (co or
 * result NULL, a never-spawned or coro_call child frame), -EDEADLK
 * (called from inside a job or its on_exit hook: await coro_done there;
 * or, on a .virtual_time scheduler, at once when no job can ever run
 * again: every live job waits on something only a job could end and no
 * timer is pending - coro_sched_dump says what each waits on).  *result
 * is written only with 0.  A finished frame gives its result at once.
 * Ordering: a call that was blocked when the job finished returns after the
 * job's on_exit returned, and the scheduler no longer touches the frame:
 * it may be freed or spawned again at once.  A call that starts after the
 * job finished may return while on_exit still runs.  A pool frame
 * (coro_frame_alloc) may be joined only while its job cannot have
 * finished; it is given back after the last such call returned. */
CORO_EXTERN int coro_join(coro_t *co, intptr_t *result);

/* coro_join_timeout - coro_join for at most timeout_ns (CORO_FOREVER =
 * no limit, 0 = just look): 0 and *result = the job's result (negative
 * or not), -ETIMEDOUT (the job goes on), -EINVAL (co or result NULL,
 * timeout_ns < CORO_FOREVER, a
 * never-spawned or coro_call child frame), -EDEADLK (from inside a job or
 * an on_exit hook; a deadlock on a .virtual_time scheduler, as for
 * coro_join).  Plain threads; blocks up to timeout (single-threaded
 * mode: drives the scheduler meanwhile, as coro_join; on a .virtual_time
 * scheduler the timeout is on its virtual clock). */
CORO_EXTERN int coro_join_timeout(coro_t *co, intptr_t *result, int64_t timeout_ns);

/* coro_group_init - an empty group.  0, -EINVAL (NULL).  Any thread. */
CORO_EXTERN int coro_group_init(coro_group_t *g);

/* coro_group_init_collect - an empty group that keeps its finished members
 * for coro_group_next (one by one, in finishing order).  0, -EINVAL
 * (NULL).  Any thread.  A group made by coro_group_init does not keep
 * them (and costs nothing more); coro_group_next refuses it. */
CORO_EXTERN int coro_group_init_collect(coro_group_t *g);

/* coro_group_next - awaitable: the next member of g that finished (tokio's
 * JoinSet::join_next): 0 with *co = the member (the coro_t * its spawn
 * took) and *result = its result (result may be NULL).  Each finished
 * member is given exactly once, in finishing order, members that finished
 * before the call included.  -ENOENT: no member is left to give (none
 * queued, none live; a later spawn into g makes more).  Waits up to
 * timeout_ns (CORO_FOREVER = no limit, 0 = just look): -ETIMEDOUT;
 * -ECANCELED (the waiter was cancelled); -ENOMEM (no memory for its
 * timer); -EINVAL (NULL g or co, g not made by coro_group_init_collect,
 * timeout_ns < CORO_FOREVER).
 * The frame: *co names the member; it does not hand the frame over.  The
 * frame lifetime rules (docs/guide.md, "Frame lifetimes") hold as without
 * a group: free or reuse a caller-owned frame after coro_join on it
 * returned (at once, or once the scheduler stopped touching it), or in its
 * on_exit (which may still be running when coro_group_next returns); a
 * pool frame (coro_frame_alloc) is given back by the library at the
 * finish, so *co may already name a frame in use by a later spawn: compare
 * it, never dereference it.  The member's record is freed by the call that
 * gives it; members nobody collected are dropped by coro_group_destroy.
 * Empty or destroy g before the members' schedulers are destroyed (their
 * allocators free the records). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_group_next(coro_group_t *g, coro_t **co,
                                                        intptr_t *result, int64_t timeout_ns);

/* coro_group_next_blocking - the same from a plain thread; -EDEADLK from a
 * job.  Blocks up to timeout_ns. */
CORO_EXTERN int coro_group_next_blocking(coro_group_t *g, coro_t **co, intptr_t *result,
                                         int64_t timeout_ns);

/* coro_group_wait - awaitable: wait until every member of g has finished
 * (0; at once when none is live), for at most timeout_ns (CORO_FOREVER = no
 * limit, 0 = just look): -ETIMEDOUT; -ECANCELED (the waiter was
 * cancelled); -ENOMEM (no memory for its timer); -EINVAL (NULL g,
 * timeout_ns < CORO_FOREVER).  Members are finished (coro_join returns at
 * once) when it returns 0. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_group_wait(coro_group_t *g, int64_t timeout_ns);

/* coro_group_wait_blocking - the same from a plain thread; -EDEADLK from a
 * job.  Blocks up to timeout_ns. */
CORO_EXTERN int coro_group_wait_blocking(coro_group_t *g, int64_t timeout_ns);

/* coro_group_cancel - coro_cancel every live member of g.  Returns the
 * number of members cancelled (>= 0), -EINVAL (NULL).  Any thread, jobs
 * included; never blocks.  Members spawned later are not cancelled. */
CORO_EXTERN int coro_group_cancel(coro_group_t *g);

/* coro_group_destroy - 0, -EBUSY (members are live: wait for them first),
 * -EINVAL (NULL).  Any thread.  A collecting group's finished members that
 * nobody took with coro_group_next are dropped (their records freed; their
 * schedulers must not be destroyed before). */
CORO_EXTERN int coro_group_destroy(coro_group_t *g);

/* A fork (fork-join): a job spawns children into it (coro_fork_spawn) and
 * awaits them all with CORO_FORK_JOIN, which writes each child's result
 * into the caller's array.  Caller-owned, in the parent's frame; only the
 * job that spawns into it joins it.  Every field is private. */
typedef struct coro_fork {
    coro_t **kids;          /* private: the caller's array of cap children */
    intptr_t *results;      /* private: the caller's array of cap results, or NULL */
    uint32_t cap, n;        /* private: room, children spawned */
    uint32_t joined;        /* private: children joined */
    uint32_t out;           /* private: an await of a child is under way */
} coro_fork_t;

/* coro_fork_init - an empty fork for up to cap children: kids (cap
 * slots) and results (cap slots, or NULL: results not kept) are the
 * caller's and must outlive the fork's join.  0, -EINVAL (NULL f or kids,
 * cap 0 or > INT_MAX).  Any thread. */
CORO_EXTERN int coro_fork_init(coro_fork_t *f, coro_t **kids, intptr_t *results, size_t cap);

/* coro_fork_spawn - coro_spawn(s, co, fn, opts), and co becomes child
 * number n of f (n: the children spawned into f before it), awaited by
 * f's next CORO_FORK_JOIN.  The frame stays where it is until that join
 * has read the child's result: a pool frame (coro_frame_alloc) is given
 * back only then (or at the child's finish, if that comes later), so it
 * may finish before the join; a caller-owned frame cannot be spawned
 * again until then (-EBUSY).  Returns 0, coro_spawn's errors (-EINVAL,
 * -EBUSY, -ESHUTDOWN, -ENOMEM), -EINVAL (NULL f), -ENOSPC (f holds cap
 * children), -EBUSY (a join of f is under way).  The job that joins f
 * calls it; never blocks. */
CORO_EXTERN int coro_fork_spawn(coro_fork_t *f, coro_sched_t *s, coro_t *co, coro_fn fn,
                                const coro_spawn_opts_t *opts);

/* coro_fork_pending - CORO_FORK_JOIN's step: accounts for the await
 * coro_fork_next handed out (last: that await's result), and returns the
 * number of children still to await (> 0), 0 when every child was joined
 * (each result written, the fork empty and ready for new children), or,
 * when that await ended before its child did (the joining job was
 * cancelled: -ECANCELED, or passed its .deadline: -ETIMEDOUT), that error:
 * the children not joined are then cancelled (coro_cancel) and let go, and
 * the fork is empty.  -EINVAL (NULL f or an uninitialised fork).  The job
 * that joins f calls it. */
CORO_EXTERN int coro_fork_pending(coro_fork_t *f, intptr_t last);

/* coro_fork_next - awaitable: coro_done of the next child to join (the
 * first spawned, then the others from the last back: each is then where
 * the joining worker runs it at once if no idle worker stole it).
 * -EINVAL (NULL f, no child left).  For CORO_FORK_JOIN. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_fork_next(coro_fork_t *f);

/* CORO_FORK_JOIN - await every child spawned into fork f (a coro_fork_t
 * *); then CORO_RESULT(co) is 0 and each child's result is in the
 * results array at its number, or CORO_RESULT(co) is -ECANCELED or
 * -ETIMEDOUT (the joining job was cancelled or passed its deadline: the
 * children not joined were cancelled; their results are lost).  A child
 * still queued on the joining worker runs at once, inside the join.  At
 * most one CORO_FORK_JOIN or CORO_AWAIT per source line, as CORO_AWAIT. */
#define CORO_FORK_JOIN(co, f)                                                   \
    do {                                                                        \
        (co)->result = 0;                                                       \
        while (((co)->result = coro_fork_pending((f), (co)->result)) > 0)       \
            CORO_AWAIT(co, coro_fork_next(f));                                  \
    } while (0)

/* coro_cancel - cancel job: its pending await (unless that operation has
 * already completed: it keeps its result) and every later await fail
 * with ECANCELED until the job finishes, its coro_call children's included; a
 * wait in the parking lot (a sync object, a select, a group wait), a
 * coro_done, an fd wait, a sleep or a blocking call still queued for a pool
 * thread ends at once (a blocking call whose fn has started is waited for
 * and keeps fn's result).
 * The job still runs: it can clean up and return its own result.  Returns
 * 0 (also for a finished job: nothing happens, and when cancelled twice),
 * -EINVAL (NULL, a never-spawned frame or a coro_call child frame).  Any
 * thread, jobs included; never blocks.  The frame must stay valid for the
 * call (as for coro_join): a pool frame (coro_frame_alloc) goes back when
 * its job finishes unless held, so cancel one only from its own job or
 * from the job whose fork holds it (before CORO_FORK_JOIN joins it); a
 * thread blocked in coro_join holds it for itself only.  One that
 * finishes during the call anyway is kept until the call returns, and
 * nothing is written into it once it is given back. */
CORO_EXTERN int coro_cancel(coro_t *job);

/* coro_cancelled - inside a job: true once the job was cancelled
 * (coro_cancel, coro_group_cancel, coro_sched_shutdown with CORO_CANCEL);
 * false otherwise and on a thread that is not running a job.  CORO_YIELD
 * is not a cancellation point (it returns no result): a loop that computes
 * and yields asks this to stop.  Only awaits are cancellation points
 * (their result says so: see coro_cancel).  Never blocks; reads one word. */
CORO_EXTERN bool coro_cancelled(void);

/* coro_block_on - coro_spawn then coro_join: 0 with the job's result in
 * *result, or -EDEADLK (from inside a job; checked before spawning),
 * -EINVAL (a NULL result: nothing is spawned), and coro_spawn's errors
 * (-EINVAL, -EBUSY, -ESHUTDOWN, -ENOMEM).  Plain threads; blocks.
 * With workers, the calling thread runs the job itself while it waits
 * when it can (the caller's seat, one thread at a time): opts gives no
 * affinity, co is the caller's frame (not coro_frame_alloc's), and every
 * CPU the thread may run on has a worker, and tracing and the stall
 * detector are off (a trace and a stall report name workers).  It then runs
 * the job and the "any CPU" jobs that it spawns or wakes onto the seat,
 * which idle workers steal, until the job ends or nothing is queued
 * there; what is left goes to the workers.  After a call whose jobs
 * queued up there (they fanned out to the workers), the next calls hand
 * the job to the workers for a while, as before.  Inside those jobs
 * coro_sched_current() is s and a nested coro_block_on gives -EDEADLK,
 * as on a worker. */
CORO_EXTERN int coro_block_on(coro_sched_t *s, coro_t *co, coro_fn fn,
                              const coro_spawn_opts_t *opts, intptr_t *result);

/* ---- pool frames ------------------------------------------------------------
 * Frames for fire-and-forget jobs, from s's per-worker pools (docs/guide.md,
 * "Which frame to use when" and "Frame lifetimes"). */

/* coro_frame_alloc - a zeroed frame of at least size bytes, 64-byte
 * aligned, from s's pools: the calling worker's when called from a job of
 * s, else a cache of the calling thread's own (kept for the next thread
 * when it exits).  Pools grow in 64 KiB slabs through s's config
 * allocator; frames above 2 KiB get a slab of their own.  Returns NULL
 * when out of memory, for a NULL s or a size of 0, and on a plain thread
 * that already holds caches for 8 other live schedulers (frames above
 * 2 KiB excepted).  Any thread; never blocks (but may call the
 * allocator).
 *
 * Spawn it with coro_spawn(s, &frame->co, ...) on the same scheduler
 * (another one refuses it with EINVAL).  Once spawned, the frame belongs
 * to the library, which gives it back when nobody may touch it any more:
 * after on_exit returned (on_exit must not free it), after the jobs that
 * awaited it with coro_done when it finished were resumed, and after every
 * coro_join that was blocked on it when it finished returned.  A wait (or
 * a second spawn) that starts after the job finished touches a frame that
 * is gone: to wait for fire-and-forget jobs, let them signal (an event, a
 * channel).  All of s's frames are gone after coro_sched_destroy(s). */
CORO_EXTERN void *coro_frame_alloc(coro_sched_t *s, size_t size);

/* coro_frame_free - give back a frame from coro_frame_alloc that was never
 * spawned (or whose coro_spawn failed).  NULL, memory that did not come
 * from coro_frame_alloc, a frame that was spawned (the library gives it
 * back) and a frame already given back are ignored: the call does nothing.
 * Any thread. */
CORO_EXTERN void coro_frame_free(void *frame);

/* coro_sched_run - single-threaded mode: run ready jobs on this thread
 * until none is ready (and, with the I/O part, none waits on a timer or
 * fd that could make one ready; a sleep without end, coro_sleep(
 * CORO_FOREVER), is no such timer).  On a .virtual_time scheduler it jumps
 * the clock to each next deadline and returns once no job can ever run
 * again.  Returns the number of job steps run (at most INT_MAX), or
 * -EINVAL (NULL s or a multi-threaded scheduler), -EDEADLK (called from a
 * job), -EBUSY (another thread drives s now). */
CORO_EXTERN int coro_sched_run(coro_sched_t *s);

/* CORO_VIRTUAL_TIME_START - where a virtual clock starts (ns): one
 * second, the same in every run, and never 0 (which .deadline reads as
 * "none"). */
#define CORO_VIRTUAL_TIME_START INT64_C(1000000000)

/* coro_sched_now - s's clock in nanoseconds: its virtual clock when s was
 * created with .virtual_time, else coro_now() (CLOCK_MONOTONIC).  Inside a
 * job of a virtual scheduler coro_now() returns the same value.  Any
 * thread; never blocks.  NULL s: coro_now(). */
CORO_EXTERN int64_t coro_sched_now(const coro_sched_t *s);

/* coro_sched_advance - move s's virtual clock forward by ns: every timer
 * due on the way fires in deadline order, at its deadline (the clock
 * stops at each one and runs the jobs it makes ready, and any they make
 * ready, before it moves on), and the clock ends at exactly now + ns,
 * never past it.  Jobs that are ready run first, at the current time.  It
 * does not wait on the outside world: a job waiting on an fd stays
 * waiting.  Call it from a plain thread, the one that drives s (it takes
 * the drive as coro_sched_run does).  Returns 0, -EINVAL (NULL s, s not
 * virtual, ns < 0), -EDEADLK (called from inside a job), -EBUSY (another
 * thread drives s now). */
CORO_EXTERN int coro_sched_advance(coro_sched_t *s, int64_t ns);

/* coro_sched_current - the scheduler whose job the calling thread is
 * running, NULL on any other thread. */
CORO_EXTERN coro_sched_t *coro_sched_current(void);

/* coro_sched_workers - how many worker threads s runs (0 when
 * single-threaded), or -EINVAL. */
CORO_EXTERN int coro_sched_workers(const coro_sched_t *s);

/* coro_sched_shutdown - close s: from now on coro_spawn fails with
 * ESHUTDOWN.  CORO_DRAIN waits until every job has finished; CORO_CANCEL
 * first resumes every suspended job with ECANCELED (and every later await
 * that would wait completes at once with ECANCELED; an operation that
 * completed keeps its result) so that jobs clean up and finish, then
 * waits for them.  Nothing is left in any queue.  Blocks; call it from a
 * plain thread: from a job, a worker of s or a blocking-pool thread of s
 * (inside a coro_blocking function) it returns -EDEADLK, since the job
 * that thread serves could never finish.  In single-threaded mode it runs
 * the remaining jobs on the calling thread.  Returns 0, -EINVAL (NULL s or
 * bad mode), -EDEADLK.  Several threads may call it (and
 * coro_sched_shutdown_timeout, and coro_sched_destroy) at once, in any
 * order: no call waits behind another; each returns once every job has
 * finished; a CORO_CANCEL, or a timed call whose time is up, cancels the
 * jobs that another thread's CORO_DRAIN waits for.  A call after shutdown
 * has finished returns 0 at once.  -ETIMEDOUT: CORO_DRAIN on a
 * .virtual_time scheduler found that no job could ever run again,
 * cancelled them and waited until they finished (s is shut down). */
CORO_EXTERN int coro_sched_shutdown(coro_sched_t *s, int mode);

/* coro_sched_shutdown_timeout - CORO_DRAIN for at most timeout_ns
 * (CORO_FOREVER = no limit, 0 = cancel at once what has not finished),
 * then CORO_CANCEL for the jobs left; returns once every job finished.
 * Its time runs from its own call, whatever other shutdown calls wait
 * meanwhile.  0 (every job finished in time: drained, or cancelled by
 * another thread's CORO_CANCEL or timed call; or already shut down),
 * -ETIMEDOUT (its time ran out and it cancelled, or on a .virtual_time
 * scheduler the drain found its jobs deadlocked), -EINVAL (s NULL,
 * timeout_ns < CORO_FOREVER), -EDEADLK (as coro_sched_shutdown).  Plain
 * threads; blocks. */
CORO_EXTERN int coro_sched_shutdown_timeout(coro_sched_t *s, int64_t timeout_ns);

/* coro_sched_destroy - stop the workers and free s.  Shuts down with
 * CORO_DRAIN first if that has not been done.  Other threads may be
 * blocked in coro_sched_shutdown or coro_sched_shutdown_timeout on s
 * meanwhile: s is freed only after they have returned.  Call it once; no
 * call on s may start once it can have returned.  Returns 0 once s is
 * freed - also when the drain found a .virtual_time scheduler's jobs
 * deadlocked and cancelled them (coro_sched_shutdown(s, CORO_DRAIN) first
 * reports that as ETIMEDOUT) - or, with nothing done and s not freed,
 * -EINVAL for NULL, -EDEADLK (from a job, a worker of s or a
 * blocking-pool thread of s). */
CORO_EXTERN int coro_sched_destroy(coro_sched_t *s);

/* ---- statistics ---------------------------------------------------------- */

/* One worker's counters (coro_sched_worker_stats). */
typedef struct coro_worker_stats {
    int cpu;                /* the CPU the worker is meant for (-1: single-threaded) */
    bool pinned;            /* pinning succeeded */
    uint64_t jobs_run;      /* job steps run (a step ends at an await) */
    uint64_t steals;        /* steal operations that took jobs */
    uint64_t stolen;        /* jobs taken by those steals */
    uint64_t parks;         /* times the worker parked on its futex */
    uint64_t wakeups;       /* times it was woken from a park */
    uint64_t io_wakeups;    /* jobs made ready by the I/O thread that it ran */
    uint64_t queue_depth;   /* jobs queued for it at the time of the call */
    uint64_t stalls;        /* steps reported by the stall detector */
    uint64_t reserved[6];   /* zero; room for later counters */
} coro_worker_stats_t;

/* Latency histograms: bucket 0 counts values below 2 ns, bucket i (1 ..
 * CORO_HIST_BUCKETS - 2) values in [2^i, 2^(i+1)) ns, the last bucket
 * everything from 2^(CORO_HIST_BUCKETS - 1) ns (about 2.1 s) up. */
#define CORO_HIST_BUCKETS 32

/* The scheduler's summary (coro_sched_stats): about 1.4 KiB, fit for the
 * stack.  Per-worker counters: coro_sched_worker_stats. */
typedef struct coro_sched_stats {
    int workers;            /* worker slots (1 when single-threaded) */
    bool histograms;        /* the hist_* arrays are filled (config .histograms) */
    uint64_t live_jobs;     /* spawned, not finished */
    uint64_t global_depth;  /* injection queue depth, plain threads' rings included */
    /* the workers' counters, summed */
    uint64_t jobs_run, steals, stolen, parks, wakeups, io_wakeups, queue_depth, stalls;
    /* with .histograms: ready (spawned, woken, yielded) to running, by
     * priority (index CORO_PRIO_* + 1; the ready time is kept in 64 ns
     * units, so values below 64 ns land in bucket 0..6 as 0); */
    uint64_t hist_ready[3][CORO_HIST_BUCKETS];
    /* step time (resume to suspend / yield / finish); */
    uint64_t hist_step[CORO_HIST_BUCKETS];
    /* made ready by an fd's readiness (or an I/O timer) to running */
    uint64_t hist_io[CORO_HIST_BUCKETS];
    uint64_t reserved[8];   /* zero; room for later fields */
} coro_sched_stats_t;

/* coro_blocking - awaitable: run fn(arg) on the scheduler's blocking pool
 * (threads started on demand up to .blocking_threads, retired after
 * .blocking_keepalive_ms idle; calls queue FIFO) so that a call that
 * blocks - a library without a non-blocking API, getaddrinfo, a read of a
 * regular file - does not stall a worker.  The job resumes on a worker its
 * mask allows, at its priority.  Result: fn's return value; -ECANCELED
 * when the scheduler was cancelled (CORO_CANCEL) before fn started - fn
 * then never runs; once fn has started the job waits for it; -EAGAIN when
 * no pool thread could be started and none exists (fn never runs: a call
 * that queued behind a start that then failed, leaving no thread, gets it
 * too); -ENOMEM likewise; -EINVAL for a NULL fn.  Await it only in a job's
 * body; fn runs on a plain thread (it may block, and may call the
 * *_blocking sync calls; shutting down or destroying its own scheduler
 * gives EDEADLK).  In single-threaded mode coro_sched_run returns while calls are
 * still out; coro_join / coro_block_on wait for them. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_blocking(intptr_t (*fn)(void *arg), void *arg);

/* coro_sched_stats - s's summary: totals over the workers (and the
 * caller's seat: the steps threads in coro_block_on ran, which no
 * worker's counters hold), live jobs,
 * queue depths and (config .histograms) the latency histograms.  Counters
 * are read without stopping the workers: each is exact, their sum is a
 * snapshot.  Returns 0 or -EINVAL (NULL s or out).  Any thread. */
CORO_EXTERN int coro_sched_stats(const coro_sched_t *s, coro_sched_stats_t *out);

/* coro_sched_worker_stats - the counters of worker i (0 ..
 * coro_sched_stats().workers - 1; single-threaded mode has one, the
 * driving thread's).  The steps that threads blocked in coro_block_on ran
 * themselves (the caller's seat) are in coro_sched_stats' totals, not in
 * any worker's.  Returns 0, -EINVAL (NULL s or out), -ERANGE (i < 0 or i
 * >= the number of worker slots).  Any thread; racy as coro_sched_stats. */
CORO_EXTERN int coro_sched_worker_stats(const coro_sched_t *s, int i, coro_worker_stats_t *out);

/* coro_sched_dump - write to out, in plain text, every live job that s can
 * reach (docs/diagnostics.md): each worker and what it runs (and for how
 * long, with .stall_ns or .histograms on), the jobs queued per worker,
 * class and priority with why they are not running, and every suspended
 * job with what it waits on: an fd and direction, a parking-lot object
 * (event, mutex, channel, coro_done, select ...) with its address, a
 * timer with the time left, a blocking call; with its mask, priority,
 * body symbol and name.  Running jobs always show their body and name;
 * static bodies are named from the program's symbol table (an address
 * only when the file is stripped).  Safe from any thread, jobs included, while the
 * workers run: it takes each wait structure's lock in turn (never two
 * at once but in their usual order), so it is a sequence of snapshots,
 * not one: a job may move between them, and the running / queued part is
 * read without locks (queued jobs are shown by address only).  Text is
 * built in memory and written once at the end.  Returns the number of
 * jobs listed (>= 0), -EINVAL (NULL s or out), -ENOMEM, -EIO (writing out
 * failed). */
CORO_EXTERN int coro_sched_dump(coro_sched_t *s, FILE *out);

/* coro_version - CORO_VERSION_HEX of the library actually linked. */
CORO_EXTERN unsigned coro_version(void);

#ifdef __cplusplus
}
#endif
#endif
