/* SPDX-License-Identifier: MIT */
/* coro_done and coro_done_timeout: waiting for a job's end, through its
 * joiner slot or the parking lot; the finisher's wake of those waiters
 * (coro__done_take_all); and the cancel of one job waiting in the lot,
 * reached through its awaitable (coro__wait_cancel_job: the dispatch,
 * lib/wait/parklot.c CANCEL ONE the argument).  Layer 2 (waiting). */
#include <errno.h>

#include "wait/wait.h"

/* ---- coro_done ------------------------------------------------------------- */

/* under the target's lot bucket: set JOB_JOIN unless it is already done */
static bool done_validate(void *key, void *ctx, intptr_t *res)
{
    coro_t *target = key;
    /* acquire: a DONE target's result is complete (coro__finish's release) */
    uint32_t st = __atomic_load_n(&target->state, __ATOMIC_ACQUIRE);

    (void)ctx;
    for (;;) {
        uint32_t s = st & CORO__S_MASK;
        if (s == CORO__S_DONE) {
            *res = target->result;
            return false;
        }
        if (s == CORO__S_IDLE || s == CORO__S_CHILD) {
            *res = -EINVAL;
            return false;
        }
        if (st & CORO__F_JOB_JOIN)
            return true;
        /* acq_rel: pairs with coro__finish's CAS to DONE, which reads the
         * flag and then locks this bucket */
        if (__atomic_compare_exchange_n(&target->state, &st, st | CORO__F_JOB_JOIN, true,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return true;
    }
}

static int done_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    coro_t *target = aw->arg[0].p;
    int r;

    if (target == job) {
        *res = -EDEADLK;
        return CORO__ARM_READY;
    }
    /* fast path: the first awaiter of a job of the same scheduler sits in
     * its joiner slot, registered with the scheduler for CORO_CANCEL; a
     * job with a deadline waits in the lot, whose timer bounds the wait */
    if (target->sched == s && !coro__job_deadline(job) &&
        (r = coro__parklot_joiner_arm(s, target, job, res)) >= 0)
        return r;
    return coro__parklot_park_job(target, job, done_validate, NULL, res, -1);
}

const struct coro_await_ops coro__done_ops = { coro__join_name, done_arm };  /* JOINING INLINE */

/* a select's branch on a job's end (lib/sync/select.c): the same wait in
 * the lot, on the job's key; coro__done_take_all gives the record the
 * job's result */
static int done_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    (void)wakes;
    if (done_validate(a->arg[0].p, NULL, res))
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    return 1;
}

const struct coro__sync_ops coro__done_sel_ops = { { "select_done", NULL }, coro__arg0_key, done_try };

coro_await_t coro_done(coro_t *job)
{
    if (!job)
        return coro_ready(-EINVAL);
    /* acquire: pairs with coro__finish's release (result complete) */
    uint32_t st = __atomic_load_n(&job->state, __ATOMIC_ACQUIRE) & CORO__S_MASK;
    if (st == CORO__S_IDLE || st == CORO__S_CHILD)
        return coro_ready(-EINVAL);
    if (st == CORO__S_DONE)
        return coro__complete(job->result);
    /* built in the caller's slot at once: a fork awaits every child
     * through here */
    return (coro_await_t){ .ops = &coro__done_ops, .arg[0].p = job };
}

/* ---- coro_done_timeout ------------------------------------------------------------ *
 * Keeps the awaited job's result apart from the await's own result: the
 * waiter always waits in the lot (never the joiner slot, which has no
 * timer), and the finisher (coro__done_take_all, under the bucket lock,
 * with the waiter already unlinked: it owns the waiter) writes the job's
 * result to the waiter's *result and wakes it with 0.  Its timer wakes it
 * with -ETIMEDOUT, a cancel with -ECANCELED. */

/* under the target's bucket: done -> *result and 0; else set JOB_JOIN */
static bool done_to_validate(void *key, void *ctx, intptr_t *res)
{
    coro_await_t *aw = ctx;
    intptr_t r;

    if (done_validate(key, NULL, &r))
        return true;
    /* acquire: as in done_validate */
    uint32_t st = __atomic_load_n(&((coro_t *)key)->state, __ATOMIC_ACQUIRE) & CORO__S_MASK;
    if (st == CORO__S_DONE) {
        *(intptr_t *)aw->arg[1].p = r;
        *res = 0;
    } else {
        *res = r;       /* -EINVAL */
    }
    return false;
}

static int done_to_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    coro_t *target = aw->arg[0].p;

    (void)s;
    if (target == job) {
        *res = -EDEADLK;
        return CORO__ARM_READY;
    }
    return coro__parklot_park_job(target, job, done_to_validate, aw, res, aw->timeout);
}

const struct coro_await_ops coro__done_to_ops = { "done_timeout", done_to_arm };

coro_await_t coro_done_timeout(coro_t *job, intptr_t *result, int64_t timeout)
{
    coro_await_t a = { .ops = &coro__done_to_ops };

    if (!job || !result || timeout < CORO_FOREVER)
        return coro_ready(-EINVAL);
    /* acquire: pairs with coro__finish's release (result complete) */
    uint32_t st = __atomic_load_n(&job->state, __ATOMIC_ACQUIRE) & CORO__S_MASK;
    if (st == CORO__S_IDLE || st == CORO__S_CHILD)
        return coro_ready(-EINVAL);
    if (st == CORO__S_DONE) {
        *result = job->result;
        return coro__complete(0);
    }
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    a.arg[0].p = job;
    a.arg[1].p = result;
    a.timeout = coro__deadline(timeout);
    return a;
}

int coro__done_take_all(coro_t *key, intptr_t res, coro__wakelist_t *wakes)
{
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    coro_t *w;
    int n = 0;

    while ((w = coro__parklot_take(b, key))) {
        coro_await_t *aw = coro__parklot_args(w);
        if (aw->ops == &coro__done_to_ops) {
            /* ours since the take: its frame waits for this wake */
            *(intptr_t *)aw->arg[1].p = res;
            coro__wakelist_add(wakes, w, 0);
        } else {
            coro__wakelist_add(wakes, w, res);
        }
        n++;
    }
    coro__parklot_unlock(b);
    return n;
}

/* ---- coro_cancel of one job: what it waits on, through its awaitable ------------------
 * lib/wait/parklot.c CANCEL ONE has the argument; here only the dispatch on
 * the awaitable, kept above the lot so that the lot names none of them */
bool coro__wait_cancel_job(coro_sched_t *s, coro_t *job, uint32_t old)
{
    if ((old & CORO__S_MASK) != CORO__S_SUSPENDED)
        return true;
    /* ordered by the state word's RMWs (parklot.c CANCEL ONE); the awaitable
     * is the innermost frame's (a coro_call child's own await) */
    /* relaxed: a step that armed an await which completed at once may
     * move top meanwhile (sched/run.c set_top) */
    coro_await_t *aw = &__atomic_load_n(&job->top, __ATOMIC_RELAXED)->aw;
    const struct coro_await_ops *ops = aw->ops;
    if (ops && ops->arm == coro__sync_arm) {
        coro__parklot_cancel_in_bucket(job, coro__sync_ops_of(aw)->key(aw));
        return true;
    }
    if (ops == &coro__done_to_ops) {
        coro__parklot_cancel_in_bucket(job, aw->arg[0].p);
        return true;
    }
    if (ops == &coro__done_ops) {
        /* in the target's bucket, or in its joiner slot */
        coro__parklot_cancel_in_bucket(job, aw->arg[0].p);
        coro__parklot_cancel_joiner(s, job, aw->arg[0].p);
        return true;
    }
    if (ops && ops->arm == coro__parklot_ops_arm) {
        const struct coro__parklot_ops *lo = (const struct coro__parklot_ops *)(const void *)ops;
        coro__parklot_cancel_in_bucket(job, lo->key(aw));
        return true;
    }
    return false;
}

int coro__parklot_ops_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    return ((const struct coro__parklot_ops *)(const void *)aw->ops)->arm(s, job, aw, res);
}
