/* SPDX-License-Identifier: MIT */
/* coro_waitgroup_t: wait until a count of pending tasks drops to zero.
 * State under the lot bucket lock of the object (see wait/sync.c). */
#include "sync/sync.h"

#define WG_MAGIC 0x57475250u        /* "WGRP" */

static int wg_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_waitgroup_t *wg = a->arg[0].p;

    (void)wakes;
    (void)proxy;
    if (wg->count != 0)
        return 0;
    *res = 0;
    return 1;
}

static const struct coro__sync_ops wg_ops = {
    { "waitgroup_wait", coro__sync_arm }, coro__arg0_key, wg_try,
};

static bool wg_ok(const coro_waitgroup_t *wg)
{
    return wg && wg->magic == WG_MAGIC;
}

int coro_waitgroup_init(coro_waitgroup_t *wg)
{
    if (!wg)
        return -EINVAL;
    wg->count = 0;
    wg->pad = 0;
    wg->magic = WG_MAGIC;
    return 0;
}

int coro_waitgroup_destroy(coro_waitgroup_t *wg)
{
    if (!wg_ok(wg))
        return -EINVAL;
    return coro__sync_retire(wg, &wg->magic);
}

int64_t coro_waitgroup_add(coro_waitgroup_t *wg, int64_t n)
{
    coro__wakelist_t wakes;
    coro_t *w;
    int64_t c;

    if (!wg_ok(wg))
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(wg);
    /* count >= 0 always: count + n cannot overflow for n < 0, and -n
     * (INT64_MIN) is never computed */
    if ((n < 0 && wg->count + n < 0) || (n > 0 && wg->count > INT64_MAX - n)) {
        coro__parklot_unlock(b);
        return -EINVAL;
    }
    c = wg->count += n;
    if (c == 0)
        while ((w = coro__parklot_take(b, wg)))
            coro__wakelist_add(&wakes, w, 0);
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return c;
}

int64_t coro_waitgroup_done(coro_waitgroup_t *wg)
{
    return coro_waitgroup_add(wg, -1);
}

static coro_await_t wg_args(coro_waitgroup_t *wg, int64_t timeout)
{
    coro_await_t a = { .ops = &wg_ops.base, .timeout = timeout };
    a.arg[0].p = wg;
    return a;
}

coro_await_t coro_waitgroup_wait(coro_waitgroup_t *wg, int64_t timeout)
{
    if (!wg_ok(wg))
        return coro_ready(-EINVAL);
    return coro__sync_await(wg_args(wg, timeout));
}

int coro_waitgroup_wait_blocking(coro_waitgroup_t *wg, int64_t timeout)
{
    if (!wg_ok(wg))
        return -EINVAL;
    coro_await_t a = wg_args(wg, timeout);
    return (int)coro__sync_block(&a, timeout);
}
