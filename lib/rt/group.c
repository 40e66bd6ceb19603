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
 *   - a waiter checks the count under its bucket lock (coro__lot_park_job's
 *     validate) and stays linked there; the last finisher decrements, then
 *     locks that bucket: either the waiter saw 0, or it is linked before
 *     the finisher's lock and is woken.
 * Lock order: group -> lot bucket (the finisher's wake, the cancel sweep).
 * Nothing takes a group's lock under a bucket lock.
 *
 * CANCEL sets CORO__F_CANCEL on every live member under the lock, then
 * runs one sweep per scheduler (the same as coro_cancel's, lib/wait/lot.c
 * REGISTRY) after unlocking: the schedulers outlive their jobs. */
#include <sched.h>
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

uint32_t coro__group_finish(coro_t *job, struct coro__ext *x, uint32_t *nw)
{
    coro_group_t *g = x->group;

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
    /* seq_cst: the decrement before our lock of the waiters' bucket (top) */
    __atomic_store_n(&g->count, left, __ATOMIC_SEQ_CST);
    if (left == 0)
        coro__lot_unpark_all(g, 0);
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
    return coro__lot_park_job(aw->arg[0].p, job, group_validate, NULL, res, aw->timeout);
}

/* its key, for coro_cancel of one waiter (lib/wait/lot.c CANCEL ONE):
 * the group's */
static const struct coro__lot_ops group_wait_ops = { { "group_wait", coro__lot_ops_arm },
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
    return (int)coro__lot_park_thread(g, group_validate, NULL, coro__deadline(timeout));
}

/* ---- cancel, destroy -------------------------------------------------------------- */

int coro_group_cancel(coro_group_t *g)
{
    coro_sched_t *sw[8];
    int nsw = 0, n = 0;
    bool all = false;       /* more schedulers than sw holds: sweep each */

    if (!g)
        return -EINVAL;
    glock(g);
    for (struct coro__ext *x = g->head; x; x = x->gnext) {
        /* seq_cst: as coro_cancel's (lib/rt/runtime.c): the flag before the
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
            if (nsw < 8)
                sw[nsw++] = s;
            else
                all = true;
        }
    }
    if (all) {
        /* rare: many schedulers in one group: sweep under the lock, where
         * every member's scheduler is known */
        for (struct coro__ext *x = g->head; x; x = x->gnext) {
            coro__lot_cancel_jobs(x->job->sched);
            if (x->job->sched->io)
                coro__io_cancel_jobs(x->job->sched->io);
        }
    }
    gunlock(g);
    for (int i = 0; i < nsw && !all; i++) {
        coro__lot_cancel_jobs(sw[i]);
        if (sw[i]->io)
            coro__io_cancel_jobs(sw[i]->io);
    }
    return n;
}

int coro_group_destroy(coro_group_t *g)
{
    if (!g)
        return -EINVAL;
    glock(g);
    uint32_t n = g->count;
    gunlock(g);
    return n ? -EBUSY : 0;
}
