/* SPDX-License-Identifier: MIT */
/* Job groups (coro_group_t): caller-owned sets of jobs that can be waited
 * for and cancelled as a whole.
 *
 * Who touches what: a member's record (struct coro__ext, allocated at
 * spawn) is on its group's doubly linked list from its spawn, before it is
 * queued, until its finish; the list and count change only under the
 * group's lock (a spinlock: a few pointer writes under it).
 *
 * FINISH.  A member's finisher takes the group's lock, stores DONE (the
 * one exchange coro__finish does), unlinks the record and decrements the
 * count, and, when it was the last, wakes the group's waiters in the
 * parking lot (key = the group), all under the lock; then it never touches
 * the group again.  So:
 *   - coro_group_cancel, which walks the list under the lock, only ever
 *     sees members that are not DONE: a frame cannot have been spawned
 *     again meanwhile (it is still on the list until DONE is stored), so
 *     the cancel reaches the right incarnation;
 *   - coro_group_destroy checks the count under the lock: after it saw 0,
 *     no finisher touches the group any more;
 *   - a waiter checks the count under its bucket lock (coro__parklot_park_job's
 *     validate) and stays linked there; the last finisher decrements, then
 *     locks that bucket: either the waiter saw 0, or it is linked before
 *     the finisher's lock and is woken.
 * Lock order: group -> lot bucket (the finisher's wake, the cancel sweep).
 * Nothing takes a group's lock under a bucket lock.
 *
 * COLLECT (coro_group_next).  A group made by coro_group_init_collect
 * keeps its finished members for coro_group_next, in finishing order,
 * intrusively: the member's record (struct coro__ext, which every member
 * has) is not freed by its finisher but queued on g->done with the job's
 * result in it, and freed by the coro_group_next that gives it (or by
 * coro_group_destroy).  A group that does not collect (done_last NULL)
 * frees the record at the finish as before.  The queue, the waiters of
 * coro_group_next and the count as they see it are under the lot bucket
 * lock of the key &g->done (NEXT_KEY): the finisher, still under the
 * group's lock (lock order group -> bucket), takes that bucket, stores the
 * decremented count, and either hands the member to the oldest waiter
 * (writing its outs, as a channel's sender does) or queues it; when it was
 * the last, the remaining waiters get -ENOENT.  So a waiter that found the
 * queue empty and the count above 0 under that bucket is linked before
 * the finisher looks for one: no wake is lost.  An empty collecting queue
 * has done NULL and done_last pointing at g itself.
 *
 * CANCEL sets CORO__F_CANCEL on every live member under the lock, then
 * runs the lot's, the I/O context's and the blocking pool's sweeps of
 * flagged jobs once per scheduler (coro_cancel's fallback,
 * lib/rt/cancel_one.c; the lot's visits its registry, lib/wait/parklot.c
 * REGISTRY) after unlocking, each scheduler pinned under the lock so
 * that it outlives the sweep even when its last member ends first
 * (sched/pin.c). */
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "rt/rt.h"

static void glock(coro_group_t *g)
{
    coro__spin_lock(&g->lock);
}

static void gunlock(coro_group_t *g)
{
    coro__spin_unlock(&g->lock);
}

int coro_group_init(coro_group_t *g)
{
    if (!g)
        return -EINVAL;
    memset(g, 0, sizeof *g);
    return 0;
}

void coro__group_join(coro_group_t *g, struct coro__ext *x)
{
    glock(g);
    x->gprev = NULL;
    x->gnext = g->head;
    if (x->gnext)
        x->gnext->gprev = x;
    g->head = x;
    /* relaxed under the lock; the waiters' validate reads it under their
     * bucket lock, which the last finisher takes after its decrement */
    __atomic_store_n(&g->count, g->count + 1, __ATOMIC_RELAXED);
    gunlock(g);
}

#define NEXT_KEY(g) ((const void *)&(g)->done)

/* relaxed: done_last is set once at init and never NULL again; it is read
 * without a lock by coro_group_next's argument check */
static bool collecting(const coro_group_t *g)
{
    return __atomic_load_n(&g->done_last, __ATOMIC_RELAXED) != NULL;
}

static void set_last(coro_group_t *g, void *last)
{
    /* relaxed: under the group's lock, which orders it for the finishers;
     * the unlocked reader is collecting()'s, which asks NULL or not */
    __atomic_store_n(&g->done_last, last, __ATOMIC_RELAXED);
}

static void done_push(coro_group_t *g, struct coro__ext *x)
{
    x->gnext = NULL;
    if (g->done)
        ((struct coro__ext *)g->done_last)->gnext = x;
    else
        g->done = x;
    set_last(g, x);
}

static struct coro__ext *done_pop(coro_group_t *g)
{
    struct coro__ext *x = g->done;
    if (x) {
        g->done = x->gnext;
        if (!g->done)
            set_last(g, g);         /* empty, still collecting */
    }
    return x;
}

/* give a finished member to a coro_group_next: its job and result through
 * the outs (arg[1]: coro_t **, arg[2]: intptr_t *, NULL = not wanted) */
static void give(coro_await_t *a, coro_t *job, intptr_t res)
{
    *(coro_t **)a->arg[1].p = job;
    if (a->arg[2].p)
        *(intptr_t *)a->arg[2].p = res;
}

/* the finish of a member of a collecting group, under g's lock (COLLECT) */
static void collect_finish(coro_group_t *g, struct coro__ext *x, coro_t *job, intptr_t res,
                           coro_sched_t *s, uint32_t left, bool *kept)
{
    coro__wakelist_t wakes;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(NEXT_KEY(g));
    /* seq_cst: the decrement before our lock of the group waiters' bucket
     * (top of file); coro_group_next reads it under this bucket */
    __atomic_store_n(&g->count, left, __ATOMIC_SEQ_CST);
    coro_t *w = coro__parklot_take(b, NEXT_KEY(g));
    if (w) {
        give(coro__parklot_args(w), job, res);
        coro__wakelist_add(&wakes, w, 0);
    } else {
        x->result = res;
        x->sched = s;
        done_push(g, x);
        *kept = true;
    }
    if (left == 0 && !g->done) {
        /* nothing left to give to those still waiting */
        while ((w = coro__parklot_take(b, NEXT_KEY(g))))
            coro__wakelist_add(&wakes, w, -ENOENT);
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
}

uint32_t coro__group_finish(coro_t *job, struct coro__ext *x, uint32_t *nw, bool *kept)
{
    coro_group_t *g = x->group;
    /* read before DONE is stored: then the frame may be reused */
    intptr_t res = job->result;
    coro_sched_t *s = job->sched;

    glock(g);
    /* the CAS to DONE of coro__finish (lib/rt/runtime.c), under the lock */
    uint32_t old = coro__finish_cas(job, nw);
    if (x->gprev)
        x->gprev->gnext = x->gnext;
    else
        g->head = x->gnext;
    if (x->gnext)
        x->gnext->gprev = x->gprev;
    uint32_t left = g->count - 1;
    if (collecting(g))
        collect_finish(g, x, job, res, s, left, kept);
    else
        /* seq_cst: the decrement before our lock of the waiters' bucket (top) */
        __atomic_store_n(&g->count, left, __ATOMIC_SEQ_CST);
    if (left == 0)
        coro__parklot_unpark_all(g, 0);
    gunlock(g);
    return old;
}

/* ---- waiting ------------------------------------------------------------------- */

static bool group_validate(void *key, void *ctx, intptr_t *res)
{
    coro_group_t *g = key;
    (void)ctx;
    /* seq_cst: against the last finisher's store (top of file) */
    if (__atomic_load_n(&g->count, __ATOMIC_SEQ_CST) == 0) {
        *res = 0;
        return false;
    }
    return true;
}

static int group_wait_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)s;
    return coro__parklot_park_job(aw->arg[0].p, job, group_validate, NULL, res, aw->timeout);
}

/* its key, for coro_cancel of one waiter (lib/wait/parklot.c CANCEL ONE):
 * the group's */
static const struct coro__parklot_ops group_wait_ops = { { "group_wait", coro__parklot_ops_arm },
                                                     group_wait_arm, coro__arg0_key };

coro_await_t coro_group_wait(coro_group_t *g, int64_t timeout)
{
    coro_await_t a = { .ops = &group_wait_ops.base };

    if (!g || timeout < CORO_FOREVER)
        return coro_ready(-EINVAL);
    /* acquire: the members' finishes happen before our return */
    if (__atomic_load_n(&g->count, __ATOMIC_ACQUIRE) == 0)
        return coro__complete(0);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    a.arg[0].p = g;
    a.timeout = coro__deadline(timeout);
    return a;
}

int coro_group_wait_blocking(coro_group_t *g, int64_t timeout)
{
    if (!g || timeout < CORO_FOREVER)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    /* acquire: as above */
    if (__atomic_load_n(&g->count, __ATOMIC_ACQUIRE) == 0)
        return 0;
    if (timeout == 0)
        return -ETIMEDOUT;
    return (int)coro__parklot_park_thread(g, group_validate, NULL, coro__deadline(timeout));
}

/* ---- collecting: the next finished member ------------------------------------------ */

int coro_group_init_collect(coro_group_t *g)
{
    int rc = coro_group_init(g);
    if (rc == 0)
        set_last(g, g);
    return rc;
}

/* under the bucket of NEXT_KEY (COLLECT): give the oldest finished member,
 * or -ENOENT when none is queued and none is live, or wait */
static int next_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_group_t *g = (coro_group_t *)((char *)a->arg[0].p - offsetof(coro_group_t, done));
    (void)wakes;
    /* relaxed: count changes under this bucket for a collecting group */
    if (!g->done && __atomic_load_n(&g->count, __ATOMIC_RELAXED) != 0)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    struct coro__ext *x = done_pop(g);
    if (!x) {
        *res = -ENOENT;
        return 1;
    }
    give(a, x->job, x->result);
    /* off every list now; its scheduler's allocator (kept at the finish)
     * takes it back */
    coro__free(x->sched, x, sizeof *x);
    *res = 0;
    return 1;
}

static const struct coro__sync_ops group_next_ops = {
    { "group_next", coro__sync_arm }, coro__arg0_key, next_try,
};

/* arg[0] is the key (&g->done), so that coro__arg0_key gives it */
static coro_await_t next_args(coro_group_t *g, coro_t **co, intptr_t *result, int64_t timeout)
{
    coro_await_t a = { .ops = &group_next_ops.base, .timeout = timeout };
    a.arg[0].p = &g->done;
    a.arg[1].p = co;
    a.arg[2].p = result;
    return a;
}

coro_await_t coro_group_next(coro_group_t *g, coro_t **co, intptr_t *result, int64_t timeout)
{
    if (!g || !co || !collecting(g))
        return coro_ready(-EINVAL);
    return coro__sync_await(next_args(g, co, result, timeout));
}

int coro_group_next_blocking(coro_group_t *g, coro_t **co, intptr_t *result, int64_t timeout)
{
    if (!g || !co || !collecting(g))
        return -EINVAL;
    coro_await_t a = next_args(g, co, result, timeout);
    return (int)coro__sync_block(&a, timeout);
}

/* ---- cancel, destroy -------------------------------------------------------------- */

int coro_group_cancel(coro_group_t *g)
{
    coro_sched_t *sw[8];
    int tok[8];
    int nsw = 0, n = 0;
    bool all = false;       /* more schedulers than sw holds: sweep each */

    if (!g)
        return -EINVAL;
    glock(g);
    for (struct coro__ext *x = g->head; x; x = x->gnext) {
        /* seq_cst: as coro_cancel's (lib/rt/cancel_one.c): the flag before the
         * sweeps' loads of the registry bits */
        uint32_t old = __atomic_fetch_or(&x->job->state, CORO__F_CANCEL, __ATOMIC_SEQ_CST);
        if (old & CORO__F_CANCEL)
            continue;
        n++;
        coro_sched_t *s = x->job->sched;
        int i = 0;
        while (i < nsw && sw[i] != s)
            i++;
        if (i == nsw) {
            if (nsw < 8) {
                /* a member cannot end while we hold the lock (its finish
                 * takes it), so s lives; pinned, it lives until our sweep
                 * of it is done, even if every member ends meanwhile and
                 * destroy runs (sched/pin.c: the unlock below publishes
                 * the pin to the finisher that takes the lock next) */
                tok[nsw] = coro__pin_owned(s);
                sw[nsw++] = s;
            } else {
                all = true;
            }
        }
    }
    if (all) {
        /* rare: many schedulers in one group: sweep under the lock, where
         * every member's scheduler is known */
        for (struct coro__ext *x = g->head; x; x = x->gnext) {
            coro__parklot_cancel_jobs(x->job->sched);
            if (x->job->sched->io)
                coro__io_cancel_jobs(x->job->sched->io);
            coro__blocking_cancel_jobs(x->job->sched);
        }
    }
    gunlock(g);
    for (int i = 0; i < nsw && !all; i++) {
        coro__parklot_cancel_jobs(sw[i]);
        if (sw[i]->io)
            coro__io_cancel_jobs(sw[i]->io);
        coro__blocking_cancel_jobs(sw[i]);      /* calls still queued for the pool */
    }
    while (nsw > 0)
        coro__unpin(tok[--nsw]);
    return n;
}

int coro_group_destroy(coro_group_t *g)
{
    if (!g)
        return -EINVAL;
    glock(g);
    uint32_t n = g->count;
    gunlock(g);
    if (n)
        return -EBUSY;
    /* no finisher touches g any more (top of file): the members nobody
     * collected are dropped */
    if (collecting(g)) {
        struct coro__ext *x;
        while ((x = done_pop(g)))
            coro__free(x->sched, x, sizeof *x);
    }
    return 0;
}
