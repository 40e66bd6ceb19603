/* SPDX-License-Identifier: MIT */
/* coro_rwlock_t: a writer-preferring read-write lock with hand-off.
 *
 * State (readers, writer) under the lot bucket lock of the lock, as every
 * sync object (lib/wait/sync.c); readers wait on key rw, writers on key
 * rw + 2 (the same bucket).  A waiter's identity is in its args' arg[1].i
 * (set by the arm: coro__sync_arm_held; by the blocking call; by the
 * constructor for its own try; by the select for its branches).
 *
 * THE POLICY (include/corokit/sync.h; Go's sync.RWMutex):
 *   - a reader takes the lock only when no writer holds it AND no writer
 *     waits: writers are never starved by a stream of readers;
 *   - a writer takes it only when it is free;
 *   - write unlock hands the lock to every reader waiting at that moment
 *     (a batch, woken together), or, when none waits, to the oldest
 *     writer: readers are never starved by a stream of writers;
 *   - the last read unlock hands it to the oldest writer.
 * INVARIANT, under the lock: a live waiter exists only while the lock is
 * held.  Every change that can free the lock (an unlock) ends in grant(),
 * which hands it to its next holders before the lock is dropped; so an
 * acquire that finds the lock free takes it without looking at the lists
 * and nobody barges in past a waiter.
 * A WRITER THAT LEAVES.  Readers queue behind a waiting writer, not behind
 * the holders: when that writer stops waiting without being taken (its
 * timer, a cancel, a plain thread's timeout, a select branch that was not
 * chosen) the lot calls write_left (the left hook of struct
 * coro__held_ops, lib/wait/wait.h) under this same lock, which admits the readers that no writer holds
 * back any more - so a writer that gave up never keeps readers waiting.
 * Select branches: a stale record (its select won elsewhere) may sit on
 * the writers' list until its owner withdraws it; meanwhile readers that
 * come wait, and the withdrawal (coro_select_end) is such a leave.
 */
#include <stdio.h>

#include "sync/sync.h"

#define RW_MAGIC 0x52574c4bu     /* "RWLK" */

static bool rw_ok(const coro_rwlock_t *rw)
{
    return rw && rw->magic == RW_MAGIC;
}

bool coro__rwlock_ok(const coro_rwlock_t *rw)
{
    return rw_ok(rw);
}

static inline const void *wkey(const coro_rwlock_t *rw)
{
    return (const char *)rw + 2;
}

/* who calls: the running job (its root frame), else the plain thread */
static uintptr_t caller_identity(void)
{
    coro_t *job = coro__current_job();
    return job ? (uintptr_t)job : coro__thread_token();
}

/* ---- under the lock ---------------------------------------------------------------- */

/* every waiting reader gets a hold; how many */
static int admit_readers(coro_rwlock_t *rw, coro__wakelist_t *wakes)
{
    coro_t *w;
    int n = 0;

    while (rw->readers < UINT32_MAX && (w = coro__parklot_take(NULL, rw))) {
        rw->readers++;
        coro__wakelist_add(wakes, w, 0);
        n++;
    }
    return n;
}

/* after a change: hand the lock to whoever may have it now (the POLICY);
 * readers_first after a write unlock */
static void grant(coro__parklot_bucket_t *b, coro_rwlock_t *rw, coro__wakelist_t *wakes,
                  bool readers_first)
{
    if (rw->writer)
        return;
    if (readers_first && admit_readers(rw, wakes) > 0)
        return;
    if (rw->readers == 0) {
        coro_t *w = coro__parklot_take(b, wkey(rw));
        if (w) {
            rw->writer = (uintptr_t)coro__parklot_args(w)->arg[1].i;
            coro__wakelist_add(wakes, w, 0);
            return;
        }
    }
    if (!coro__parklot_waiting(b, wkey(rw)))
        admit_readers(rw, wakes);   /* held back by writers that are gone */
}

static int read_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_rwlock_t *rw = a->arg[0].p;
    uintptr_t me = (uintptr_t)a->arg[1].i;
    bool self = rw->writer == me;   /* it would wait for itself */

    (void)wakes;
    if (!self && (rw->writer || coro__parklot_waiting(NULL, wkey(rw))))
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    if (self) {
        *res = -EDEADLK;
    } else if (rw->readers == UINT32_MAX) {
        *res = -EAGAIN;
    } else {
        rw->readers++;
        *res = 0;
    }
    return 1;
}

static int write_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_rwlock_t *rw = a->arg[0].p;
    uintptr_t me = (uintptr_t)a->arg[1].i;

    (void)wakes;
    if ((rw->writer && rw->writer != me) || rw->readers)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    if (rw->writer) {
        *res = -EDEADLK;
    } else {
        rw->writer = me;    /* free: no live waiter (INVARIANT) */
        *res = 0;
    }
    return 1;
}

/* a writer left without being taken (A WRITER THAT LEAVES) */
static void write_left(coro__parklot_bucket_t *b, const coro_await_t *a, coro__wakelist_t *wakes)
{
    grant(b, a->arg[0].p, wakes, false);
}

/* coro_sched_dump, for a waiter: who holds the lock */
static void rw_holder(const coro_await_t *a, char *buf, size_t len)
{
    const coro_rwlock_t *rw = a->arg[0].p;

    if (rw->writer)
        coro__sync_holder_text(rw->writer, buf, len);
    else if (rw->readers)
        snprintf(buf, len, ", held by %u reader%s", rw->readers, rw->readers == 1 ? "" : "s");
    else
        buf[0] = '\0';
}

static const void *write_key(const coro_await_t *a)
{
    return wkey(a->arg[0].p);
}

const struct coro__held_ops coro__rwlock_read_ops = {
    { { "rwlock_read", coro__sync_arm_held }, coro__arg0_key, read_try }, rw_holder, NULL, coro__sync_arm,
};
const struct coro__held_ops coro__rwlock_write_ops = {
    { { "rwlock_write", coro__sync_arm_held }, write_key, write_try }, rw_holder, write_left, coro__sync_arm,
};

/* ---- life ---------------------------------------------------------------------------- */

int coro_rwlock_init(coro_rwlock_t *rw)
{
    if (!rw)
        return -EINVAL;
    rw->readers = 0;
    rw->writer = 0;
    rw->magic = RW_MAGIC;
    return 0;
}

int coro_rwlock_destroy(coro_rwlock_t *rw)
{
    if (!rw_ok(rw))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(rw);
    bool busy = rw->writer || rw->readers || coro__parklot_waiting(b, rw) ||
                coro__parklot_waiting(b, wkey(rw));
    if (!busy)
        rw->magic = 0;
    coro__parklot_unlock(b);
    return busy ? -EBUSY : 0;
}

/* ---- acquire ----------------------------------------------------------------------- */

static coro_await_t rw_args(const struct coro__held_ops *ops, coro_rwlock_t *rw, uintptr_t me,
                            int64_t timeout)
{
    coro_await_t a = { .ops = &ops->sync.base, .timeout = timeout };
    a.arg[0].p = rw;
    a.arg[1].i = (intptr_t)me;
    return a;
}

static coro_await_t lock_await(const struct coro__held_ops *ops, coro_rwlock_t *rw, int64_t timeout)
{
    if (!rw_ok(rw))
        return coro_ready(-EINVAL);
    return coro__sync_await(rw_args(ops, rw, caller_identity(), timeout));
}

static int lock_block(const struct coro__held_ops *ops, coro_rwlock_t *rw, int64_t timeout)
{
    if (!rw_ok(rw))
        return -EINVAL;
    coro_await_t a = rw_args(ops, rw, coro__thread_token(), timeout);
    return (int)coro__sync_block(&a, timeout);
}

static int lock_try(const struct coro__held_ops *ops, coro_rwlock_t *rw)
{
    coro__wakelist_t wakes;
    intptr_t res;

    if (!rw_ok(rw))
        return -EINVAL;
    coro_await_t a = rw_args(ops, rw, caller_identity(), 0);
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(rw);
    int r = ops->sync.try(&a, &res, &wakes, NULL);
    coro__parklot_unlock(b);
    return r == 1 ? (int)res : -EAGAIN;
}

coro_await_t coro_rwlock_read_lock(coro_rwlock_t *rw, int64_t timeout)
{
    return lock_await(&coro__rwlock_read_ops, rw, timeout);
}

coro_await_t coro_rwlock_write_lock(coro_rwlock_t *rw, int64_t timeout)
{
    return lock_await(&coro__rwlock_write_ops, rw, timeout);
}

int coro_rwlock_read_lock_blocking(coro_rwlock_t *rw, int64_t timeout)
{
    return lock_block(&coro__rwlock_read_ops, rw, timeout);
}

int coro_rwlock_write_lock_blocking(coro_rwlock_t *rw, int64_t timeout)
{
    return lock_block(&coro__rwlock_write_ops, rw, timeout);
}

int coro_rwlock_try_read_lock(coro_rwlock_t *rw)
{
    return lock_try(&coro__rwlock_read_ops, rw);
}

int coro_rwlock_try_write_lock(coro_rwlock_t *rw)
{
    return lock_try(&coro__rwlock_write_ops, rw);
}

/* ---- release ----------------------------------------------------------------------- */

int coro_rwlock_read_unlock(coro_rwlock_t *rw)
{
    coro__wakelist_t wakes;
    int rc = 0;

    if (!rw_ok(rw))
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(rw);
    if (rw->readers == 0 || rw->writer) {
        rc = -EPERM;
    } else if (--rw->readers == 0) {
        grant(b, rw, &wakes, false);    /* the last reader: the oldest writer */
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return rc;
}

int coro_rwlock_write_unlock(coro_rwlock_t *rw)
{
    coro__wakelist_t wakes;
    int rc = 0;

    if (!rw_ok(rw))
        return -EINVAL;
    uintptr_t me = caller_identity();
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(rw);
    if (rw->writer != me) {
        rc = -EPERM;
    } else {
        rw->writer = 0;
        grant(b, rw, &wakes, true);     /* the waiting readers first, then a writer */
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return rc;
}
