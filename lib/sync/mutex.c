/* SPDX-License-Identifier: MIT */
/* coro_mutex_t (FIFO hand-off) and coro_sem_t (counting, FIFO).
 * State under the lot bucket lock of the object (see wait/sync.c).
 *
 * Ownership: m->owner is the owning job's root frame (a coro_t, aligned)
 * or a plain thread's token (odd: coro__thread_token), 0 when free.  A
 * waiter carries its identity in its args (arg[1].i), set by the arm (the
 * job is only known there) or by the blocking call; unlock hands the
 * mutex to the oldest waiter by writing that identity into m->owner before
 * waking it, so no one can take the mutex in between.
 */
#include "sync/sync.h"

#define MUTEX_MAGIC 0x4d555458u     /* "MUTX" */
#define SEM_MAGIC 0x53454d41u       /* "SEMA" */

/* ---- mutex ---------------------------------------------------------------------- */

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

static int mutex_try(coro_await_t *a, intptr_t *res, coro__wl_t *wl, coro_t *proxy)
{
    coro_mutex_t *m = a->arg[0].p;
    uintptr_t me = (uintptr_t)a->arg[1].i;

    (void)wl;
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

static int mutex_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    aw->arg[1].i = (intptr_t)(uintptr_t)job;
    return coro__sync_arm(s, job, aw, res);
}

static const struct coro__sync_ops mutex_ops = {
    { "mutex_lock", mutex_arm }, coro__arg0_key, mutex_try,
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
    coro__lotb_t *b = coro__lot_lock(m);
    bool busy = m->owner != 0 || coro__lot_waiting(b, m);
    if (!busy)
        m->magic = 0;
    coro__lot_unlock(b);
    return busy ? -EBUSY : 0;
}

coro_await_t coro_mutex_lock(coro_mutex_t *m, int64_t timeout)
{
    coro_await_t a = { .ops = &mutex_ops.base, .timeout = timeout };

    if (!mutex_ok(m) || !coro__timeout_ok(timeout))
        return coro_ready(-EINVAL);
    a.arg[0].p = m;
    return a;       /* no in-body try: the owner (the job) is known in arm */
}

int coro_mutex_lock_blocking(coro_mutex_t *m, int64_t timeout)
{
    coro_await_t a = { .ops = &mutex_ops.base, .timeout = timeout };

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
    coro__lotb_t *b = coro__lot_lock(m);
    int rc = m->owner == me ? -EDEADLK : m->owner ? -EAGAIN : 0;
    if (rc == 0)
        m->owner = me;
    coro__lot_unlock(b);
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
    coro__wl_t wl;

    if (!mutex_ok(m))
        return -EINVAL;
    uintptr_t me = caller_identity();
    coro__wl_init(&wl);
    coro__lotb_t *b = coro__lot_lock(m);
    if (m->owner != me) {
        coro__lot_unlock(b);
        return -EPERM;
    }
    coro_t *w = coro__lot_take(b, m);
    if (w) {
        /* hand-off: the oldest waiter owns it before anyone else can look */
        m->owner = (uintptr_t)coro__lot_args(w)->arg[1].i;
        coro__wl_add(&wl, w, 0);
    } else {
        m->owner = 0;
    }
    coro__lot_unlock(b);
    coro__wl_wake(&wl);
    return 0;
}

/* ---- semaphore ------------------------------------------------------------------ */

static bool sem_ok(const coro_sem_t *sem)
{
    return sem && sem->magic == SEM_MAGIC;
}

/* invariant: waiters exist only while count == 0 (release hands units to
 * waiters first), so taking a unit when count > 0 never overtakes one */
static int sem_try(coro_await_t *a, intptr_t *res, coro__wl_t *wl, coro_t *proxy)
{
    coro_sem_t *sem = a->arg[0].p;

    (void)wl;
    (void)proxy;
    if (sem->count == 0)
        return 0;
    sem->count--;
    *res = 0;
    return 1;
}

static const struct coro__sync_ops sem_ops = {
    { "sem_acquire", coro__sync_arm }, coro__arg0_key, sem_try,
};

int coro_sem_init(coro_sem_t *sem, int64_t n)
{
    if (!sem || n < 0)
        return -EINVAL;
    sem->count = n;
    sem->pad = 0;
    sem->magic = SEM_MAGIC;
    return 0;
}

int coro_sem_destroy(coro_sem_t *sem)
{
    if (!sem_ok(sem))
        return -EINVAL;
    coro__lotb_t *b = coro__lot_lock(sem);
    bool busy = coro__lot_waiting(b, sem);
    if (!busy)
        sem->magic = 0;
    coro__lot_unlock(b);
    return busy ? -EBUSY : 0;
}

static coro_await_t sem_args(coro_sem_t *sem, int64_t timeout)
{
    coro_await_t a = { .ops = &sem_ops.base, .timeout = timeout };
    a.arg[0].p = sem;
    return a;
}

coro_await_t coro_sem_acquire(coro_sem_t *sem, int64_t timeout)
{
    if (!sem_ok(sem))
        return coro_ready(-EINVAL);
    return coro__sync_await(sem_args(sem, timeout));
}

int coro_sem_acquire_blocking(coro_sem_t *sem, int64_t timeout)
{
    if (!sem_ok(sem))
        return -EINVAL;
    coro_await_t a = sem_args(sem, timeout);
    return (int)coro__sync_block(&a, timeout);
}

int coro_sem_try_acquire(coro_sem_t *sem)
{
    if (!sem_ok(sem))
        return -EINVAL;
    coro__lotb_t *b = coro__lot_lock(sem);
    int rc = sem->count > 0 ? (sem->count--, 0) : -EAGAIN;
    coro__lot_unlock(b);
    return rc;
}

int coro_sem_release(coro_sem_t *sem, int64_t n)
{
    coro__wl_t wl;
    coro_t *w;
    int woken = 0;

    if (!sem_ok(sem) || n < 0)
        return -EINVAL;
    coro__wl_init(&wl);
    coro__lotb_t *b = coro__lot_lock(sem);
    if (sem->count > INT64_MAX - n) {
        coro__lot_unlock(b);
        return -EINVAL;
    }
    while (n > 0 && (w = coro__lot_take(b, sem))) {
        coro__wl_add(&wl, w, 0);
        woken++;
        n--;
    }
    sem->count += n;
    coro__lot_unlock(b);
    coro__wl_wake(&wl);
    return woken;
}

int64_t coro_sem_value(coro_sem_t *sem)
{
    if (!sem_ok(sem))
        return -EINVAL;
    coro__lotb_t *b = coro__lot_lock(sem);
    int64_t v = sem->count;
    coro__lot_unlock(b);
    return v;
}
