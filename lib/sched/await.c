/* SPDX-License-Identifier: MIT */
/* The core awaitables the worker knows: coro_ready, a completed result
 * (coro__complete), coro_call, the forced yield, coro_reschedule; and the
 * constructors' look at a cancel once the budget is spent
 * (coro__cancel_due).  Layer 1 (scheduling); coro_done is in wait/done.c. */
#include "sched/sched.h"

static int yield_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)s;
    (void)job;
    *res = aw->arg[0].i;
    return CORO__ARM_REQUEUE;
}

/* The operation has already completed (an item taken, bytes read, a
 * connection accepted): r is its result and must reach the body whatever
 * happens meanwhile.  run_job never lets CORO_CANCEL replace it (a cancel
 * affects only awaits that have not completed). */
const struct coro_await_ops coro__yield_ops = { "yield", yield_arm };

coro_await_t coro__complete(intptr_t r)
{
    coro_await_t a = { .ops = NULL };

    a.arg[0].i = r;
    if (coro__tls_in_job && --coro__tls_budget < 0)
        a.ops = &coro__yield_ops;   /* out of budget: let the others run first */
    return a;
}

bool coro__cancel_due(void)
{
    if (!coro__tls_in_job || coro__tls_budget > 0)
        return false;
    struct coro__worker *w = coro__tls_worker;
    /* relaxed: this thread's own store at the step's start */
    coro_t *job = w ? __atomic_load_n(&w->cur, __ATOMIC_RELAXED) : NULL;
    return job && (coro__job_cancelled(job) || coro__cancelling(w->s));
}

coro_await_t coro_ready(intptr_t r)
{
    coro_await_t a = { .ops = NULL };

    a.arg[0].i = r;
    return a;
}

/* ---- coro_call: handled inline by the worker (sched/run.c) --------------------- */

/* no arm: the worker recognises coro__call_ops and starts the child itself
 * (sched/run.c), before it would arm anything */
const struct coro_await_ops coro__call_ops = { "call", NULL };

const char coro__join_name[] = "done";

coro_await_t coro_call(coro_t *child, coro_fn fn)
{
    coro_await_t a = { .ops = &coro__call_ops };

    if (!child || !fn)
        return coro_ready(-EINVAL);
    a.arg[0].p = child;
    a.arg[1].p = (void *)fn;
    return a;
}

/* ---- coro_reschedule ------------------------------------------------------------ */

static int resched_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)s;
    job->cls = (uint16_t)aw->arg[0].i;
    job->prio = (int8_t)aw->arg[1].i;
    *res = 0;
    return CORO__ARM_REQUEUE;
}

static const struct coro_await_ops resched_ops = { "reschedule", resched_arm };

coro_await_t coro_reschedule(const coro_cpuset_t *aff, int prio)
{
    coro_await_t a = { .ops = &resched_ops };
    coro_sched_t *s = coro_sched_current();
    int cls;

    if (!s || !coro__tls_in_job || prio < CORO_PRIO_LOW || prio > CORO_PRIO_HIGH)
        return coro_ready(-EINVAL);
    if ((cls = coro__affinity_intern(s, aff)) < 0)
        return coro_ready(cls);
    a.arg[0].i = cls;
    a.arg[1].i = prio;
    return a;
}
