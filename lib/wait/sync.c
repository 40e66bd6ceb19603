/* SPDX-License-Identifier: MIT */
/* What every sync awaitable shares: the arm (timeout, cancel, park), the
 * in-body try, and the plain-thread blocking form.
 *
 * An operation's state lives under the lot bucket lock of its object
 * (lib/wait/wait.h), and its try() runs under that lock: it either
 * completes the operation - handing items, units or ownership to waiters
 * it takes off the lists, whose wake-ups go on a wake list performed after
 * unlocking - or the caller links itself on the object's key before the
 * lock is released.  So "not ready, wait" and "ready, take a waiter" are
 * serialised and no wake-up is lost.  A waiter's operation arguments (where
 * to put a received item, what to send, who it is) sit in its awaitable
 * (jobs), its stand-in (plain threads) or its select node, so whoever takes
 * it completes the operation for it: the woken side never retries.
 */
#include <string.h>

#include "wait/wait.h"

static __thread char thread_token_anchor;

uintptr_t coro__thread_token(void)
{
    /* a job is an aligned coro_t: an odd value can never be one */
    return (uintptr_t)&thread_token_anchor | 1;
}

const void *coro__arg0_key(const coro_await_t *args)
{
    return args->arg[0].p;
}

int coro__sync_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    const struct coro__sync_ops *op = coro__sync_ops_of(aw);
    const void *key = op->key(aw);
    int64_t deadline = aw->timeout > 0 ? coro__deadline(aw->timeout) : -1;
    coro__wakelist_t wakes;
    int r = CORO__ARM_READY, rc;

    (void)s;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    if (op->try(aw, res, &wakes, NULL) == 1) {
        /* completed: keeps its result */
    } else if (aw->timeout == 0) {
        *res = -ETIMEDOUT;
    } else if ((rc = coro__parklot_park(b, key, job, deadline)) < 0) {
        *res = rc;      /* -ECANCELED, -ENOMEM: nothing linked */
    } else {
        r = CORO__ARM_PENDING;  /* linked and timed under b: no window */
    }
    coro__parklot_unlock(b);
    /* after PENDING the job may already run elsewhere: only wakes is ours */
    coro__wakelist_wake(&wakes);
    return r;
}

coro_await_t coro__sync_await(coro_await_t aw)
{
    const struct coro__sync_ops *op = coro__sync_ops_of(&aw);
    const void *key = op->key(&aw);
    coro__wakelist_t wakes;
    intptr_t res;

    if (!coro__timeout_ok(aw.timeout))
        return coro_ready(-EINVAL);
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    int r = op->try(&aw, &res, &wakes, NULL);
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    if (r == 1)
        return coro__complete(res);
    if (aw.timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return aw;
}

intptr_t coro__sync_block(coro_await_t *args, int64_t timeout)
{
    const struct coro__sync_ops *op = coro__sync_ops_of(args);
    const void *key = op->key(args);
    int64_t deadline = coro__deadline(timeout);
    coro__wakelist_t wakes;
    intptr_t res;
    coro_t me;

    if (!coro__timeout_ok(timeout))
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    int r = op->try(args, &res, &wakes, NULL);
    if (r == 1 || timeout == 0) {
        coro__parklot_unlock(b);
        coro__wakelist_wake(&wakes);
        return r == 1 ? res : -ETIMEDOUT;
    }
    memset(&me, 0, sizeof me);
    me.aw = *args;
    return coro__parklot_wait_thread(b, key, &me, deadline);
}
