/* SPDX-License-Identifier: MIT */
/* The end of a job (coro__finish): its awaiters and joiners woken, its
 * group left, on_exit run, a pool frame given back, s->live counted down.
 * The worker calls it through s->finish, which the runtime sets at create:
 * one of the pointers through which the scheduling layer reaches a layer
 * above it without naming its symbols (docs/architecture.md lists them).
 * Layer 5 (the runtime). */
#include <limits.h>

#include "rt/rt.h"
#include "sched/frame.h"

/* ---- finishing a job --------------------------------------------------------- */

/* the job whose on_exit runs on this thread (coro_spawn of that frame
 * from its own on_exit must not wait for the finisher: it is the caller) */
static __thread coro_t *tls_exiting;

bool coro__exiting_here(const coro_t *job)
{
    return tls_exiting == job;
}

/* a job's exit hook: on_exit, or on_exit_with and its context */
struct exit_hook {
    void (*fn)(coro_t *);
    void (*with)(coro_t *, void *);
    void *ctx;
};

static void run_on_exit(const struct exit_hook *h, coro_t *job)
{
    coro_t *outer = tls_exiting;
    tls_exiting = job;
    if (h->with)
        h->with(job, h->ctx);
    else
        h->fn(job);
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
 *     by the last thread joiner to leave.
 * NO TOUCH AFTER THE WAKE.  A job woken here may end at once, and whoever
 * joins it may free its frame - which may hold this job's (a fork's
 * children embedded in the parent's frame, docs/guide.md).  So everything
 * the finisher reads or writes in the frame comes before the first wake:
 * the joiner slot, the on_exit that runs first, the clear of EXITING; the
 * wakes then use the frame's address only (a lot key, a futex address).
 * Only an on_exit that runs last (a caller-owned frame nobody joins from
 * a thread: the hook is then its owner's) and a pool frame's give-back
 * (the library's, held by JOINERS while a joiner reads it) come later.
 * And once DONE is in, a frame without EXITING is not read at all but
 * for those two (the scheduler is read before the CAS): whoever reads
 * DONE there - a fork's join that finds its child ended - may end and
 * let the frame go without waiting for any wake of ours. */
static inline uint32_t finish_cas(coro_t *job, uint32_t *nwp)
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

uint32_t coro__finish_cas(coro_t *job, uint32_t *nwp)
{
    return finish_cas(job, nwp);
}

/* what follows the CAS when someone waits for the job or it has an on_exit
 * hook (old, nw: the CAS's, coro__finish_cas; s: job's scheduler, read
 * before the CAS: once DONE is in, a frame without EXITING may be gone
 * already - a fork's child whose parent found it DONE and ended) */
static __attribute__((noinline)) void finish_rest(coro_sched_t *s, coro_t *job,
                                                  const struct exit_hook *h, intptr_t res,
                                                  uint32_t old, uint32_t nw)
{
    bool on_exit = h->fn || h->with;
    bool pool = old & CORO__F_POOL;
    /* on_exit before the thread joiners go: a pool frame is the library's
     * (on_exit cannot free it), a joined frame must outlive its joiner */
    bool exit_first = pool || (old & CORO__F_THREAD_JOIN);
    coro_t *w = NULL;
    if (old & CORO__F_JOINER)
        w = __atomic_exchange_n(&job->joiner, NULL, __ATOMIC_ACQUIRE);
    /* coro_done, coro_done_timeout: taken off the lot now, woken below.
     * Taken before EXITING clears: once it is clear the frame may be
     * spawned again, and a waiter of that next job on the same key must
     * not be ours to take */
    coro__wakelist_t wakes;
    coro__wakelist_init(&wakes);
    if (old & CORO__F_JOB_JOIN)
        coro__done_take_all(job, res, &wakes);
    if (on_exit && exit_first)
        run_on_exit(h, job);
    uint32_t last = nw;
    if (nw & CORO__F_EXITING)
        /* release: our last touch of the frame (NO TOUCH AFTER THE WAKE)
         * before a joiner sees EXITING clear and takes it back; from here
         * the frame may be reused: only its address is used */
        last = __atomic_and_fetch(&job->state, ~CORO__F_EXITING, __ATOMIC_ACQ_REL);
    if (w)
        coro__parklot_joiner_wake(w, res);  /* off the cancel registry, then wake */
    coro__wakelist_wake(&wakes);
    if (old & CORO__F_THREAD_JOIN)
        coro__thread_joiners_wake(s, job);
    if (on_exit && !exit_first)
        run_on_exit(h, job);
    if (pool && !(last & CORO__JOINERS_MASK))
        coro__frame_release(job);       /* no thread joiner: give it back now */
}

/* the end of any job (what FINISHING A PLAIN JOB does not know) */
static __attribute__((noinline)) void finish_general(coro_t *job)
{
    coro_sched_t *s = job->sched;
    struct exit_hook h = { job->on_exit, NULL, NULL };
    intptr_t res = job->result;
    uint32_t nw, old;

    if (CORO__UNLIKELY(job->flags & CORO__FL_EXT)) {
        struct coro__ext *x = job->ext;
        h = (struct exit_hook){ x->on_exit, x->on_exit_with, x->on_exit_ctx };
        job->on_exit = h.fn;        /* the frame as it was spawned */
        job->flags &= (uint8_t)~CORO__FL_EXT;
        /* one CAS (coro__finish_cas), under the group's lock for a member */
        bool kept = false;      /* x queued for coro_group_next (rt/group.c) */
        old = x->group ? coro__group_finish(job, x, &nw, &kept) : finish_cas(job, &nw);
        if (!kept)
            coro__free(s, x, sizeof *x);
        finish_rest(s, job, &h, res, old, nw);
    } else {
        old = finish_cas(job, &nw);
        if (CORO__UNLIKELY(old & (CORO__F_JOINER | CORO__F_JOB_JOIN | CORO__F_THREAD_JOIN |
                                  CORO__JOINERS_MASK))) {
            finish_rest(s, job, &h, res, old, nw);
        } else {
            /* nobody waits: finish_rest with nothing to wake and no
             * EXITING to clear; a pool frame goes back after on_exit */
            if (h.fn)
                run_on_exit(&h, job);
            if (old & CORO__F_POOL)
                coro__frame_release(job);
        }
    }
    /* a worker keeps the unit of a job that ended here as a spare (the
     * next spawn on this worker takes it) and gives spares back in
     * batches, so that the line every spawn and finish would change does
     * not bounce; it gives them all back before it parks and at once
     * after shutdown began (relaxed: a stale "open" only delays that to
     * the park; rt/runtime.c SHUTDOWN) */
    struct coro__worker *w = coro__tls_worker;
    if (w && w->s == s && s->nworkers > 0) {
        /* owner-only; atomic stores for coro_sched_stats' racy read */
        __atomic_store_n(&w->spare, w->spare + 1, __ATOMIC_RELAXED);
        if (__atomic_load_n(&s->closed, __ATOMIC_RELAXED))
            coro__flush_live(w, 0);
        else if (w->spare >= 2 * CORO__LIVE_BATCH)
            coro__flush_live(w, CORO__LIVE_BATCH);
        return;
    }
    coro__live_sub(&s->live, 1);
}

/* FINISHING A PLAIN JOB.  The usual end on a worker: a job spawned
 * without options (no ext, no on_exit) that nobody awaits or holds.  It
 * is finish_general with every branch known: one CAS (the same
 * one, which fails if a waiter set its flag meanwhile, and then the
 * general path runs), the spare unit kept, the pool frame given back.
 * It calls nothing but that give-back, so it saves no register.  The
 * give-back comes before anything that may hand the live count back
 * (coro__flush_live): once live reads CLOSED, shutdown may free the
 * pools; so a finish that must flush takes the general path's order. */
void coro__finish(coro_t *job)
{
    coro_sched_t *s = job->sched;
    struct coro__worker *w = coro__tls_worker;
    uint32_t old, spare;

    /* the job's own words first: a job with a hook, awaited or held (a
     * fork's child) leaves after the fewest looks */
    if (CORO__LIKELY(!(job->flags & CORO__FL_EXT) && !job->on_exit &&
                     !((old = __atomic_load_n(&job->state, __ATOMIC_RELAXED)) &
                       (CORO__F_JOINER | CORO__F_JOB_JOIN | CORO__F_THREAD_JOIN |
                        CORO__JOINERS_MASK)) &&
                     w && w->s == s && s->nworkers > 0 &&
                     (spare = w->spare + 1) < 2 * CORO__LIVE_BATCH &&
                     /* relaxed: as finish_general's read of it */
                     !__atomic_load_n(&s->closed, __ATOMIC_RELAXED)) &&
        /* acq_rel, as finish_cas's; nothing to wake, so no EXITING */
        CORO__LIKELY(__atomic_compare_exchange_n(&job->state, &old,
                                                 CORO__S_DONE | (old & CORO__F_POOL), false,
                                                 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))) {
        /* owner-only; atomic store for coro_sched_stats' racy read */
        __atomic_store_n(&w->spare, spare, __ATOMIC_RELAXED);
        if (old & CORO__F_POOL)
            coro__frame_release_on(w, job);
        return;
    }
    finish_general(job);
}
