/* SPDX-License-Identifier: MIT */
/* coro_chan_t: a bounded MPMC channel of pointers.
 *
 * State (ring buffer, count, closed) under the lot bucket lock of the
 * channel; receivers wait on key ch, senders on key ch + 2 (same bucket).
 * Invariants, kept under that lock:
 *   - a live receiver waits only while the buffer is empty: a send first
 *     hands its item straight to the oldest receiver;
 *   - a live sender waits only while the buffer is full: a receive that
 *     frees a slot refills it at once from the oldest sender.
 * So items keep FIFO order and "ready" needs no look at the wait lists:
 * send is ready when closed or count < cap, receive when closed or
 * count > 0.  Stale select stand-ins may linger on the lists (their select
 * won elsewhere); coro__parklot_take drops them.
 */
#include <stdlib.h>

#include "sync/sync.h"

#define CHAN_MAGIC 0x4348414eu      /* "CHAN" */

static bool chan_ok(const coro_chan_t *ch)
{
    return ch && ch->magic == CHAN_MAGIC;
}

static inline const void *send_key(const coro_chan_t *ch)
{
    return (const char *)ch + 2;
}

static void push(coro_chan_t *ch, void *item)
{
    size_t tail = ch->head + ch->count;
    if (tail >= ch->cap)
        tail -= ch->cap;
    ch->buf[tail] = item;
    ch->count++;
}

static void *chan_pop(coro_chan_t *ch)
{
    void *item = ch->buf[ch->head];
    if (++ch->head == ch->cap)
        ch->head = 0;
    ch->count--;
    return item;
}

/* ---- the operations, under the lock ---------------------------------------------- */

static const void *snd_key(const coro_await_t *a)
{
    return send_key(a->arg[0].p);
}

static int recv_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_chan_t *ch = a->arg[0].p;
    void **out = a->arg[1].p;

    if (ch->count == 0 && !ch->closed)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    if (ch->count == 0) {
        *res = -EPIPE;
        return 1;
    }
    *out = chan_pop(ch);
    coro_t *s = coro__parklot_take(NULL, send_key(ch));
    if (s) {
        push(ch, coro__parklot_args(s)->arg[1].p);
        coro__wakelist_add(wakes, s, 0);
    }
    *res = 0;
    return 1;
}

static int send_try(coro_await_t *a, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy)
{
    coro_chan_t *ch = a->arg[0].p;

    if (ch->count == ch->cap && !ch->closed)
        return 0;
    if (proxy && coro__proxy_claim(proxy) < 0)
        return -1;
    if (ch->closed) {
        *res = -EPIPE;
        return 1;
    }
    coro_t *r = coro__parklot_take(NULL, ch);
    if (r) {
        *(void **)coro__parklot_args(r)->arg[1].p = a->arg[1].p;
        coro__wakelist_add(wakes, r, 0);
    } else {
        push(ch, a->arg[1].p);
    }
    *res = 0;
    return 1;
}

const struct coro__sync_ops coro__chan_recv_ops = {
    { "chan_recv", coro__sync_arm }, coro__arg0_key, recv_try,
};
const struct coro__sync_ops coro__chan_send_ops = {
    { "chan_send", coro__sync_arm }, snd_key, send_try,
};

/* ---- life ------------------------------------------------------------------------ */

int coro_chan_init(coro_chan_t *ch, void **buf, size_t cap)
{
    if (!ch || !buf || cap == 0 || cap > SIZE_MAX / sizeof(void *))
        return -EINVAL;
    ch->buf = buf;
    ch->cap = cap;
    ch->head = ch->count = 0;
    ch->closed = 0;
    ch->alloc = NULL;
    ch->owned = 0;
    ch->magic = CHAN_MAGIC;
    return 0;
}

int coro_chan_init_alloc(coro_chan_t *ch, size_t cap, const coro_alloc_t *alloc)
{
    void **buf;

    if (!ch || cap == 0 || cap > SIZE_MAX / sizeof(void *) ||
        (alloc && (!alloc->alloc || !alloc->free)))
        return -EINVAL;
    buf = alloc ? alloc->alloc(alloc->ctx, cap * sizeof(void *)) : malloc(cap * sizeof(void *));
    if (!buf)
        return -ENOMEM;
    coro_chan_init(ch, buf, cap);
    ch->alloc = alloc;
    ch->owned = 1;
    return 0;
}

int coro_chan_destroy(coro_chan_t *ch)
{
    if (!chan_ok(ch))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(ch);
    bool busy = coro__parklot_waiting(b, ch) || coro__parklot_waiting(b, send_key(ch));
    if (!busy)
        ch->magic = 0;
    coro__parklot_unlock(b);
    if (busy)
        return -EBUSY;
    if (ch->owned) {
        if (ch->alloc)
            ch->alloc->free(ch->alloc->ctx, ch->buf, ch->cap * sizeof(void *));
        else
            free(ch->buf);
    }
    ch->buf = NULL;
    return 0;
}

int coro_chan_close(coro_chan_t *ch)
{
    coro__wakelist_t wakes;
    coro_t *w;

    if (!chan_ok(ch))
        return -EINVAL;
    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(ch);
    if (ch->closed) {               /* a second close does nothing */
        coro__parklot_unlock(b);
        return 0;
    }
    ch->closed = 1;
    while ((w = coro__parklot_take(b, ch)))
        coro__wakelist_add(&wakes, w, -EPIPE);
    while ((w = coro__parklot_take(b, send_key(ch))))
        coro__wakelist_add(&wakes, w, -EPIPE);
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return 0;
}

intptr_t coro_chan_len(coro_chan_t *ch)
{
    if (!chan_ok(ch))
        return -EINVAL;
    coro__parklot_bucket_t *b = coro__parklot_lock(ch);
    intptr_t n = (intptr_t)ch->count;
    coro__parklot_unlock(b);
    return n;
}

intptr_t coro_chan_cap(coro_chan_t *ch)
{
    return chan_ok(ch) ? (intptr_t)ch->cap : -EINVAL;
}

/* ---- send / receive ---------------------------------------------------------------- */

static coro_await_t send_args(coro_chan_t *ch, void *item, int64_t timeout)
{
    coro_await_t a = { .ops = &coro__chan_send_ops.base, .timeout = timeout };
    a.arg[0].p = ch;
    a.arg[1].p = item;
    return a;
}

static coro_await_t recv_args(coro_chan_t *ch, void **out, int64_t timeout)
{
    coro_await_t a = { .ops = &coro__chan_recv_ops.base, .timeout = timeout };
    a.arg[0].p = ch;
    a.arg[1].p = out;
    return a;
}

coro_await_t coro_chan_send(coro_chan_t *ch, void *item, int64_t timeout)
{
    if (!chan_ok(ch))
        return coro_ready(-EINVAL);
    return coro__sync_await(send_args(ch, item, timeout));
}

coro_await_t coro_chan_recv(coro_chan_t *ch, void **out, int64_t timeout)
{
    if (!chan_ok(ch) || !out)
        return coro_ready(-EINVAL);
    return coro__sync_await(recv_args(ch, out, timeout));
}

int coro_chan_send_blocking(coro_chan_t *ch, void *item, int64_t timeout)
{
    if (!chan_ok(ch))
        return -EINVAL;
    coro_await_t a = send_args(ch, item, timeout);
    return (int)coro__sync_block(&a, timeout);
}

int coro_chan_recv_blocking(coro_chan_t *ch, void **out, int64_t timeout)
{
    if (!chan_ok(ch) || !out)
        return -EINVAL;
    coro_await_t a = recv_args(ch, out, timeout);
    return (int)coro__sync_block(&a, timeout);
}

static int try_op(coro_await_t *a)
{
    const struct coro__sync_ops *op = coro__sync_ops_of(a);
    coro__wakelist_t wakes;
    intptr_t res;

    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(op->key(a));
    int r = op->try(a, &res, &wakes, NULL);
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return r == 1 ? (int)res : -EAGAIN;
}

int coro_chan_try_send(coro_chan_t *ch, void *item)
{
    if (!chan_ok(ch))
        return -EINVAL;
    coro_await_t a = send_args(ch, item, 0);
    return try_op(&a);
}

int coro_chan_try_recv(coro_chan_t *ch, void **out)
{
    if (!chan_ok(ch) || !out)
        return -EINVAL;
    coro_await_t a = recv_args(ch, out, 0);
    return try_op(&a);
}
