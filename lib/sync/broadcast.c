/* SPDX-License-Identifier: MIT */
/* coro_bcast_t: a broadcast channel - every receiver gets every item
 * (tokio's sync::broadcast), with a bounded ring and lag reports.
 *
 * State under the lot bucket lock of the channel, as every sync object
 * (lib/wait/sync.c): the ring, tail, closed, the receivers' count, and
 * each subscribed receiver's next and missed.  Items are numbered by a
 * 64-bit sequence: item seq lives in buf[seq % cap] while tail - cap <=
 * seq < tail.  A receiver is a position (next) and nothing else, so a send
 * costs O(1) plus the waiters it wakes, whatever the number of receivers.
 *
 * Receivers wait on key bc.  Invariant, under the lock: a receiver waits
 * only while it has received everything (next == tail) and the channel is
 * open.  So a send completes every waiting receiver's receive with the
 * item it just wrote (the waker does the receive for it: the woken side
 * never retries), and a close completes them with -EPIPE.
 *
 * Lag: a receiver whose next fell below tail - cap has lost tail - cap -
 * next items.  Its next receive reports that (-EOVERFLOW, the count in
 * missed) and moves it to the oldest item kept; it never skips silently.
 */
#include <stdlib.h>

#include "sync/sync.h"

#define BC_MAGIC 0x42434153u    /* "BCAS" */
#define RX_MAGIC 0x42435258u    /* "BCRX" */

static bool bc_ok(const coro_bcast_t *bc)
{
    return bc && bc->magic == BC_MAGIC;
}

static bool rx_ok(const coro_bcast_rx_t *rx)
{
    return rx && rx->magic == RX_MAGIC && rx->bc;
}

/* ---- the receive, under the lock ---------------------------------------------------- */

static int recv_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_bcast_rx_t *rx = a->arg[0].p;
    coro_bcast_t *bc = rx->bc;
    uint64_t oldest = bc->tail > bc->cap ? bc->tail - bc->cap : 0;

    (void)wakes;
    if (rx->next == bc->tail && !bc->closed)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    if (rx->next < oldest) {
        rx->missed = oldest - rx->next;
        rx->next = oldest;
        *res = -EOVERFLOW;
    } else if (rx->next < bc->tail) {
        *(void **)a->arg[1].p = bc->buf[rx->next % bc->cap];
        rx->next++;
        *res = 0;
    } else {
        *res = -EPIPE;      /* closed, and everything received */
    }
    return 1;
}

static const void *rx_key(const coro_await_t *a)
{
    return ((const coro_bcast_rx_t *)a->arg[0].p)->bc;
}

static const struct coro__sync_ops bcast_recv_ops = {
    { "bcast_recv", coro__sync_arm }, rx_key, recv_try,
};

/* ---- life ---------------------------------------------------------------------------- */

int coro_bcast_init(coro_bcast_t *bc, void **buf, size_t cap)
{
    if (!bc || !buf || cap == 0 || cap > SIZE_MAX / sizeof(void *))
        return -EINVAL;
    bc->buf = buf;
    bc->cap = cap;
    bc->tail = 0;
    bc->receivers = 0;
    bc->closed = 0;
    bc->alloc = NULL;
    bc->owned = 0;
    bc->magic = BC_MAGIC;
    return 0;
}

int coro_bcast_init_alloc(coro_bcast_t *bc, size_t cap, const coro_alloc_t *alloc)
{
    void **buf;

    if (!bc || cap == 0 || cap > SIZE_MAX / sizeof(void *) ||
        (alloc && (!alloc->alloc || !alloc->free)))
        return -EINVAL;
    buf = alloc ? alloc->alloc(alloc->ctx, cap * sizeof(void *)) : malloc(cap * sizeof(void *));
    if (!buf)
        return -ENOMEM;
    coro_bcast_init(bc, buf, cap);
    bc->alloc = alloc;
    bc->owned = 1;
    return 0;
}

int coro_bcast_destroy(coro_bcast_t *bc)
{
    if (!bc_ok(bc))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(bc);
    /* every waiter is a subscribed receiver: none waits when none is */
    bool busy = bc->receivers > 0;
    if (!busy)
        bc->magic = 0;
    coro__parklot_unlock(b);
    if (busy)
        return -EBUSY;
    if (bc->owned) {
        if (bc->alloc)
            bc->alloc->free(bc->alloc->ctx, bc->buf, bc->cap * sizeof(void *));
        else
            free(bc->buf);
    }
    bc->buf = NULL;
    return 0;
}

int coro_bcast_subscribe(coro_bcast_t *bc, coro_bcast_rx_t *rx)
{
    int rc = 0;

    if (!bc_ok(bc) || !rx || rx_ok(rx))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(bc);
    if (bc->closed) {
        rc = -EPIPE;
    } else {
        rx->bc = bc;
        rx->next = bc->tail;
        rx->missed = 0;
        rx->pad = 0;
        rx->magic = RX_MAGIC;
        bc->receivers++;
    }
    coro__parklot_unlock(b);
    return rc;
}

int coro_bcast_unsubscribe(coro_bcast_rx_t *rx)
{
    int rc = 0;

    if (!rx_ok(rx))
        return -EINVAL;
    coro_bcast_t *bc = rx->bc;
    coro__parklot_bucket_t *b = coro__parklot_lock(bc);
    if (coro__parklot_waiting_arg(b, bc, rx)) {
        rc = -EBUSY;
    } else {
        rx->magic = 0;
        rx->bc = NULL;
        bc->receivers--;
    }
    coro__parklot_unlock(b);
    return rc;
}

int coro_bcast_close(coro_bcast_t *bc)
{
    if (!bc_ok(bc))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(bc);
    bool first = !bc->closed;
    bc->closed = 1;
    coro__parklot_unlock(b);
    /* a waiter has received everything (the invariant): it ends so */
    if (first)
        coro__parklot_unpark_all(bc, -EPIPE);
    return 0;
}

/* ---- send / receive ------------------------------------------------------------------ */

int64_t coro_bcast_send(coro_bcast_t *bc, void *item)
{
    coro__wakelist_t wakes;
    coro_t *w;
    int64_t n;

    if (!bc_ok(bc))
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(bc);
    if (bc->closed) {
        coro__parklot_unlock(b);
        return -EPIPE;
    }
    bc->buf[bc->tail % bc->cap] = item;
    bc->tail++;
    n = (int64_t)bc->receivers;
    while ((w = coro__parklot_take(b, bc))) {
        /* it had received everything: the item just written is its next */
        intptr_t res;
        recv_try(coro__parklot_args(w), &res, &wakes, NULL);
        coro__wakelist_add(&wakes, w, res);
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return n;
}

static coro_await_t recv_args(coro_bcast_rx_t *rx, void **out, int64_t timeout)
{
    coro_await_t a = { .ops = &bcast_recv_ops.base, .timeout = timeout };
    a.arg[0].p = rx;
    a.arg[1].p = out;
    return a;
}

coro_await_t coro_bcast_recv(coro_bcast_rx_t *rx, void **out, int64_t timeout)
{
    if (!rx_ok(rx) || !out)
        return coro_ready(-EINVAL);
    return coro__sync_await(recv_args(rx, out, timeout));
}

int coro_bcast_recv_blocking(coro_bcast_rx_t *rx, void **out, int64_t timeout)
{
    if (!rx_ok(rx) || !out)
        return -EINVAL;
    coro_await_t a = recv_args(rx, out, timeout);
    return (int)coro__sync_block(&a, timeout);
}

int coro_bcast_try_recv(coro_bcast_rx_t *rx, void **out)
{
    coro__wakelist_t wakes;
    intptr_t res;

    if (!rx_ok(rx) || !out)
        return -EINVAL;
    coro_await_t a = recv_args(rx, out, 0);
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(rx->bc);
    int r = recv_try(&a, &res, &wakes, NULL);
    coro__parklot_unlock(b);
    return r == 1 ? (int)res : -EAGAIN;
}

int64_t coro_bcast_missed(const coro_bcast_rx_t *rx)
{
    if (!rx_ok(rx))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(rx->bc);
    int64_t n = (int64_t)rx->missed;
    coro__parklot_unlock(b);
    return n;
}
