/* SPDX-License-Identifier: MIT */
/* coro_sem_t: a counting semaphore, FIFO.
 * State under the lot bucket lock of the object (see wait/sync.c). */
#include "sync/sync.h"

#define SEM_MAGIC 0x53454d41u       /* "SEMA" */

static bool sem_ok(const coro_sem_t *sem)
{
    return sem && sem->magic == SEM_MAGIC;
}

/* invariant: waiters exist only while count == 0 (release hands units to
 * waiters first), so taking a unit when count > 0 never overtakes one */
static int sem_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_sem_t *sem = a->arg[0].p;

    (void)wakes;
    if (sem->count == 0)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;      /* a select branch whose select another branch won */
    sem->count--;
    *res = 0;
    return 1;
}

const struct coro__sync_ops coro__sem_acquire_ops = {
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
    return coro__sync_retire(sem, &sem->magic);
}

static coro_await_t sem_args(coro_sem_t *sem, int64_t timeout)
{
    coro_await_t a = { .ops = &coro__sem_acquire_ops.base, .timeout = timeout };
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
    coro__parklot_bucket_t *b = coro__parklot_lock(sem);
    int rc = sem->count > 0 ? (sem->count--, 0) : -EAGAIN;
    coro__parklot_unlock(b);
    return rc;
}

int coro_sem_release(coro_sem_t *sem, int64_t n)
{
    coro__wakelist_t wakes;
    coro_t *w;
    int woken = 0;

    if (!sem_ok(sem) || n < 0)
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(sem);
    if (sem->count > INT64_MAX - n) {
        coro__parklot_unlock(b);
        return -EINVAL;
    }
    while (n > 0 && (w = coro__parklot_take(b, sem))) {
        coro__wakelist_add(&wakes, w, 0);
        woken++;
        n--;
    }
    sem->count += n;
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return woken;
}

int64_t coro_sem_value(coro_sem_t *sem)
{
    if (!sem_ok(sem))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(sem);
    int64_t v = sem->count;
    coro__parklot_unlock(b);
    return v;
}
