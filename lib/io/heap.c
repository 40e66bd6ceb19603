/* SPDX-License-Identifier: MIT */
/* The timer heap: a binary min-heap of deadlines behind the I/O context's
 * one timerfd (lib/io/epoll.c arms the timerfd at the earliest deadline).
 *
 * Push, pop and removal from the middle cost O(log n); 100,000 pending
 * timers cost 17 levels each.  Every move of an entry is reported to the
 * owner (moved), which keeps the entry's index where the wait can find it
 * (an fd slot's hidx, a sleep's awaitable), so a wait that ends another
 * way - woken, cancelled - removes its timer without searching.  The array grows by doubling through the
 * scheduler's allocator and never shrinks below its high-water mark until
 * the scheduler is destroyed.  It has no lock of its own: every caller
 * holds the I/O context's heap lock (lib/io/epoll.c), since workers add
 * timers when they park and whichever thread waits in epoll fires them.
 */
#include <string.h>

#include "io/io.h"

static inline void place(struct coro__heap *h, uint32_t i, const struct coro__tnode *t)
{
    h->a[i] = *t;
    if (h->moved)
        h->moved(h->ctx, &h->a[i], i);
}

static void sift_up(struct coro__heap *h, uint32_t i, struct coro__tnode t)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (h->a[parent].deadline <= t.deadline)
            break;
        place(h, i, &h->a[parent]);
        i = parent;
    }
    place(h, i, &t);
}

static void sift_down(struct coro__heap *h, uint32_t i, struct coro__tnode t)
{
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1].deadline < h->a[c].deadline)
            c++;
        if (t.deadline <= h->a[c].deadline)
            break;
        place(h, i, &h->a[c]);
        i = c;
    }
    place(h, i, &t);
}

int coro__heap_push(struct coro__heap *h, const struct coro__tnode *t)
{
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 256;
        struct coro__tnode *a = coro__alloc(h->s, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        if (h->n)
            memcpy(a, h->a, h->n * sizeof *a);
        coro__free(h->s, h->a, h->cap * sizeof *a);
        h->a = a;
        h->cap = cap;
    }
    sift_up(h, h->n++, *t);
    return 0;
}

void coro__heap_remove(struct coro__heap *h, uint32_t idx, struct coro__tnode *out)
{
    struct coro__tnode last;

    *out = h->a[idx];
    last = h->a[--h->n];
    if (idx == h->n)
        return;
    /* the last entry takes the hole: it may need to go either way */
    if (idx > 0 && last.deadline < h->a[(idx - 1) / 2].deadline)
        sift_up(h, idx, last);
    else
        sift_down(h, idx, last);
}

void coro__heap_fini(struct coro__heap *h)
{
    coro__free(h->s, h->a, h->cap * sizeof *h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
