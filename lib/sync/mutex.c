/* SPDX-License-Identifier: MIT */
/* coro_mutex_t: a FIFO hand-off mutex.
 * State under the lot bucket lock of the object (see wait/sync.c).
 *
 * Ownership: m->owner is the owning job's root frame (a coro_t, aligned)
 * or a plain thread's token (odd: coro__thread_token), 0 when free.  A
 * waiter carries its identity in its args (arg[1].i), set by the arm (the
 * job is only known there) or by the blocking call; unlock hands the
 * mutex to the oldest waiter by writing that identity into m->owner before
 * waking it, so no one can take the mutex in between.
 */
#include <stdio.h>

#include "sync/sync.h"

#define MUTEX_MAGIC 0x4d555458u     /* "MUTX" */

static bool mutex_ok(const coro_mutex_t *m)
{
    return m && m->magic == MUTEX_MAGIC;
}

static uintptr_t identity_of(coro_t *co)
{
    if (!co)
        return coro__thread_token();
    /* a coro_call child: the job is its root (parent and top share a
     * field: only a CHILD frame's is its caller) */
    while ((__atomic_load_n(&co->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_CHILD)
        co = co->parent;
    return (uintptr_t)co;
}

/* who calls: the running job (the whole job: its root frame, whatever
 * frame of a coro_call chain runs), else the plain thread */
static uintptr_t caller_identity(void)
{
    coro_t *job = coro__current_job();
    return job ? (uintptr_t)job : coro__thread_token();
}

static int mutex_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_mutex_t *m = a->arg[0].p;
    uintptr_t me = (uintptr_t)a->arg[1].i;

    (void)wakes;
    (void)proxy;
    if (m->owner == me) {
        *res = -EDEADLK;
        return 1;
    }
    if (m->owner != 0)
        return 0;
    m->owner = me;
    *res = 0;
    return 1;
}

void coro__sync_holder_text(uintptr_t owner, char *buf, size_t len)
{
    if (!owner)
        buf[0] = '\0';
    else if (owner & 1)
        snprintf(buf, len, ", held by a plain thread");
    else
        snprintf(buf, len, ", held by job %p", (void *)owner);
}

/* coro_sched_dump: who holds it (under its bucket lock) */
static void mutex_holder(const coro_await_t *a, char *buf, size_t len)
{
    coro__sync_holder_text(((const coro_mutex_t *)a->arg[0].p)->owner, buf, len);
}

/* the arm records the waiting job (coro__sync_arm_held) */
static const struct coro__held_ops mutex_ops = {
    { { "mutex_lock", coro__sync_arm_held }, coro__arg0_key, mutex_try }, mutex_holder, NULL, coro__sync_arm,
};

int coro_mutex_init(coro_mutex_t *m)
{
    if (!m)
        return -EINVAL;
    m->owner = 0;
    m->pad = 0;
    m->magic = MUTEX_MAGIC;
    return 0;
}

int coro_mutex_destroy(coro_mutex_t *m)
{
    if (!mutex_ok(m))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(m);
    bool busy = m->owner != 0 || coro__parklot_waiting(b, m);
    if (!busy)
        m->magic = 0;
    coro__parklot_unlock(b);
    return busy ? -EBUSY : 0;
}

coro_await_t coro_mutex_lock(coro_mutex_t *m, int64_t timeout)
{
    coro_await_t a = { .ops = &mutex_ops.sync.base, .timeout = timeout };

    if (!mutex_ok(m) || !coro__timeout_ok(timeout))
        return coro_ready(-EINVAL);
    a.arg[0].p = m;
    return a;       /* no in-body try: the owner (the job) is known in arm */
}

int coro_mutex_lock_blocking(coro_mutex_t *m, int64_t timeout)
{
    coro_await_t a = { .ops = &mutex_ops.sync.base, .timeout = timeout };

    if (!mutex_ok(m))
        return -EINVAL;
    a.arg[0].p = m;
    a.arg[1].i = (intptr_t)coro__thread_token();
    return (int)coro__sync_block(&a, timeout);
}

static int try_lock_as(coro_mutex_t *m, uintptr_t me)
{
    if (!mutex_ok(m))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(m);
    int rc = m->owner == me ? -EDEADLK : m->owner ? -EAGAIN : 0;
    if (rc == 0)
        m->owner = me;
    coro__parklot_unlock(b);
    return rc;
}

int coro_mutex_try_lock(coro_mutex_t *m)
{
    return try_lock_as(m, caller_identity());
}

/* The deprecated old name (sync.h), with its old frame argument: a
 * wrapper, exported by lib/corokit.map's coro_* like every other name. */
int coro_mutex_trylock(coro_mutex_t *m, coro_t *co)
{
    return try_lock_as(m, identity_of(co));
}

int coro_mutex_unlock(coro_mutex_t *m)
{
    coro__wakelist_t wakes;

    if (!mutex_ok(m))
        return -EINVAL;
    uintptr_t me = caller_identity();
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(m);
    if (m->owner != me) {
        coro__parklot_unlock(b);
        return -EPERM;
    }
    coro_t *w = coro__parklot_take(b, m);
    if (w) {
        /* hand-off: the oldest waiter owns it before anyone else can look */
        m->owner = (uintptr_t)coro__parklot_args(w)->arg[1].i;
        coro__wakelist_add(&wakes, w, 0);
    } else {
        m->owner = 0;
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return 0;
}
