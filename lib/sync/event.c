/* SPDX-License-Identifier: MIT */
/* coro_event_t: a manual-reset event.
 * State under the lot bucket lock of the object (see wait/sync.c). */
#include "sync/sync.h"

#define EVENT_MAGIC 0x45564e54u     /* "EVNT" */

static int ev_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_event_t *ev = a->arg[0].p;

    (void)wakes;
    if (!ev->set)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    *res = 0;
    return 1;
}

const struct coro__sync_ops coro__event_wait_ops = {
    { "event_wait", coro__sync_arm }, coro__arg0_key, ev_try,
};

static bool ev_ok(const coro_event_t *ev)
{
    return ev && ev->magic == EVENT_MAGIC;
}

int coro_event_init(coro_event_t *ev)
{
    if (!ev)
        return -EINVAL;
    ev->set = 0;
    ev->magic = EVENT_MAGIC;
    return 0;
}

int coro_event_destroy(coro_event_t *ev)
{
    if (!ev_ok(ev))
        return -EINVAL;
    return coro__sync_retire(ev, &ev->magic);
}

int coro_event_set(coro_event_t *ev)
{
    coro__wakelist_t wakes;
    coro_t *w;
    int n = 0;

    if (!ev_ok(ev))
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(ev);
    ev->set = 1;
    while ((w = coro__parklot_take(b, ev))) {
        coro__wakelist_add(&wakes, w, 0);
        n++;
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return n;
}

int coro_event_reset(coro_event_t *ev)
{
    if (!ev_ok(ev))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(ev);
    ev->set = 0;
    coro__parklot_unlock(b);
    return 0;
}

int coro_event_is_set(coro_event_t *ev)
{
    if (!ev_ok(ev))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(ev);
    int v = (int)ev->set;
    coro__parklot_unlock(b);
    return v;
}

static coro_await_t ev_args(coro_event_t *ev, int64_t timeout)
{
    coro_await_t a = { .ops = &coro__event_wait_ops.base, .timeout = timeout };
    a.arg[0].p = ev;
    return a;
}

coro_await_t coro_event_wait(coro_event_t *ev, int64_t timeout)
{
    if (!ev_ok(ev))
        return coro_ready(-EINVAL);
    return coro__sync_await(ev_args(ev, timeout));
}

int coro_event_wait_blocking(coro_event_t *ev, int64_t timeout)
{
    if (!ev_ok(ev))
        return -EINVAL;
    coro_await_t a = ev_args(ev, timeout);
    return (int)coro__sync_block(&a, timeout);
}
