/* SPDX-License-Identifier: MIT */
/* private, layer 5 (the runtime): what the files of rt/ call in each
 * other - a group member's finish, the finisher's CAS and the finish
 * itself, a cancel that a job's state word showed, the shutdown drain, a
 * pinned spawn for forks, single-threaded driving, virtual time.
 * The public calls of rt/ are declared in include/corokit/.  Includes
 * every layer below.  See docs/architecture.md. */
#ifndef COROKIT_LIB_RT_RT_H
#define COROKIT_LIB_RT_RT_H

#include "sync/sync.h"

CORO__HIDDEN void coro__group_join(coro_group_t *g, struct coro__ext *x);
/* coro__group_finish (lib/sched/sched.h says what it does): *kept is set
 * when x stays queued in a collecting group for coro_group_next, which
 * frees it; the finisher must not free it then */
CORO__HIDDEN uint32_t coro__group_finish(coro_t *job, struct coro__ext *x, uint32_t *nw,
                                         bool *kept);
/* coro__finish_cas - the finisher's CAS to DONE (lib/rt/finish.c): returns the
 * old state word, *nw the new one (DONE, POOL/JOINERS kept, EXITING when
 * the job had waiters) */
CORO__HIDDEN uint32_t coro__finish_cas(coro_t *job, uint32_t *nw);

/* coro__cancel_seen - coro_cancel of job, whose state word the caller
 * read as `seen` (acquire); the CAS starts from it (rt/runtime.c, above
 * coro_cancel).  White-box tests pass a stale word: a holder's look that
 * the job's finish and give-back overtook. */
CORO__HIDDEN int coro__cancel_seen(coro_t *job, uint32_t seen);

/* coro__shutdown - close s, cancel its jobs for CORO_CANCEL or once
 * timeout_ns is over, and wait until every job ended (rt/shutdown.c);
 * coro_sched_shutdown, coro_sched_shutdown_timeout and coro_sched_destroy's
 * drain.  0, -ETIMEDOUT (a drain that had to cancel), -EDEADLK */
CORO__HIDDEN int coro__shutdown(coro_sched_t *s, int mode, int64_t timeout);

/* coro__spawn_pinned - coro_spawn, the claim also taking one JOINERS unit
 * (sched/sched.h) for the spawner: the finish leaves the frame (a pool
 * frame is not given back, a caller-owned one cannot be spawned again)
 * until the spawner drops the unit (rt/fork.c) */
CORO__HIDDEN int coro__spawn_pinned(coro_sched_t *s, coro_t *co, coro_fn fn,
                                    const coro_spawn_opts_t *opts);

/* coro__finish - the end of a job (rt/finish.c): wakes its joiners and
 * awaiters, runs on_exit, gives a pool frame back, counts it off s->live.
 * The one upcall of the library: the worker (sched/run.c) calls it
 * through s->finish, set at create, when a body returns CORO__ST_DONE. */
CORO__HIDDEN void coro__finish(coro_t *job);

/* true when job's on_exit runs on this thread now (finish.c): coro_spawn of
 * that frame from its own on_exit must not wait for the finisher */
CORO__HIDDEN bool coro__exiting_here(const coro_t *job);
/* single-threaded driving (drive.c): run s's jobs on this thread until
 * done(arg) or the absolute deadline (ns, -1 = none) */
CORO__HIDDEN void coro__drive_until_dl(coro_sched_t *s, const coro_t *co, bool (*done)(void *),
                                       void *arg, int64_t deadline);

/* tests: when > 0, coro_sched_create takes CPUs 0 .. n - 1 for the ones
 * the process may use (a machine that size, as sched_getaffinity would
 * show it), still cut by the config's .cpus; whether workers outnumber the
 * CPUs (never spin) is judged on the real ones.  Set before create */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern int coro__test_ncpus;
#endif

/* drive.c: the drive word of a single-threaded scheduler (take it: false
 * when another thread drives; give it back), and what the driver does
 * after each job that finished on it */
CORO__HIDDEN bool coro__drive_begin(coro_sched_t *s);
CORO__HIDDEN void coro__drive_end(coro_sched_t *s);
CORO__HIDDEN void coro__drive_finished(struct coro__worker *w);
/* coro_sched_run's question when no job is ready: may the outside world
 * (an fd, a blocking call, a timer that ever fires) make one ready while
 * some job of s is unfinished?  Drives on the real clock ask it */
CORO__HIDDEN bool coro__drive_may_wake(coro_sched_t *s);
/* ...and what ends a job that a plain thread joins (F_THREAD_JOIN) does
 * after the RMW that shows it: wake that thread if it waits in the drive
 * queue.  Only co's address is used */
CORO__HIDDEN void coro__drive_job_ended(coro_sched_t *s, const coro_t *co);

/* co's plain-thread joiners (F_THREAD_JOIN) may look: it ended, or its
 * spawn failed.  They sleep on its state word, or on a scheduler without
 * workers in the drive queue */
static inline void coro__thread_joiners_wake(coro_sched_t *s, coro_t *co)
{
    coro__futex_wake(&co->state, INT_MAX);
    if (s->nworkers == 0)
        coro__drive_job_ended(s, co);
}

/* vtime.c: virtual time and seeded runs (config .virtual_time, .seed).
 * init at create (-EINVAL with workers, -ENOMEM), fini at free; the drive
 * drive.c's drive() hands over to when either is on (limit: the end of a
 * coro_sched_advance, -1 = none); stuck: the last drive stopped because
 * nothing can ever run again */
CORO__HIDDEN int coro__vt_init(coro_sched_t *s, const coro_sched_config_t *c);
CORO__HIDDEN void coro__vt_fini(coro_sched_t *s);
CORO__HIDDEN int coro__vt_drive(coro_sched_t *s, bool (*done)(void *), void *arg, bool block,
                                int64_t limit);
CORO__HIDDEN bool coro__vt_stuck(const coro_sched_t *s);

#endif
