/* SPDX-License-Identifier: MIT */
/* The timer heap: one implementation for every timed wait - the parking
 * lot's (lib/wait/lot_timer.c) and the I/O context's fd waits and sleeps
 * (lib/io/epoll.c).  Each owner keeps its own heap under its own lock;
 * this file has no lock and no clock.
 *
 * A 4-ary min-heap of struct coro__tnode, by deadline.  4-ary rather than
 * binary: a pop - the fire path's step, once per timer - walks half the
 * levels (10,000 pending timers: 7 instead of 14), and its four children
 * sit in two cache lines; a push, whose entry usually stops near the
 * bottom, pays one compare a level either way.  A hierarchical wheel
 * would remove in O(1) but rounds every deadline to its tick (1 ns to
 * 50 us are valid timeouts) and cascades entries between levels as time
 * passes; the heap is exact and moves an entry only when it is touched.
 *
 * WHERE AN ENTRY IS.  A timer that ends another way - its wait woken,
 * withdrawn or cancelled - is taken out of the middle in O(log n), never
 * searched for.  Each entry holds a HANDLE, a number the heap gives at the
 * push and takes back at the removal, and pos[handle] is the entry's index,
 * rewritten by every move.  The wait keeps the handle - a lot waiter in its
 * wait_slot, a sleep in its awaitable, an fd wait in its slot - written
 * once, at the push, under the owner's heap lock.  The moves write only
 * the heap's own arrays: writing the index into each wait would touch a
 * waiting job's frame at every level of every push and pop, a cache miss
 * each when thousands of jobs wait.  The arrays grow by doubling through
 * the scheduler's allocator (pos, with a[], so that the handles in use are
 * never more than cap) and keep their size until the heap is finished.
 */
#include <string.h>

#include "wait/wait.h"

#define ARY 4

#define NO_HANDLE UINT32_MAX

static inline void place(struct coro__heap *h, uint32_t i, const struct coro__tnode *t)
{
    h->a[i] = *t;
    h->pos[t->h] = i;
}

static void sift_up(struct coro__heap *h, uint32_t i, struct coro__tnode t)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / ARY;
        if (h->a[parent].deadline <= t.deadline)
            break;
        place(h, i, &h->a[parent]);
        i = parent;
    }
    place(h, i, &t);
}

/* the earliest of the children c .. c + k - 1 (k >= 1) */
static inline uint32_t min_child(const struct coro__tnode *a, uint32_t c, uint32_t k)
{
    if (k == ARY) {     /* the common case, without a loop: two pairs, then the winners */
        uint32_t x = a[c + 1].deadline < a[c].deadline ? c + 1 : c;
        uint32_t y = a[c + 3].deadline < a[c + 2].deadline ? c + 3 : c + 2;
        return a[y].deadline < a[x].deadline ? y : x;
    }
    uint32_t m = c;
    for (uint32_t j = c + 1; j < c + k; j++)
        if (a[j].deadline < a[m].deadline)
            m = j;
    return m;
}

static void sift_down(struct coro__heap *h, uint32_t i, struct coro__tnode t)
{
    const uint32_t n = h->n;

    for (;;) {
        uint32_t c = ARY * i + 1;
        if (c >= n)
            break;
        uint32_t m = min_child(h->a, c, n - c < ARY ? n - c : ARY);
        if (t.deadline <= h->a[m].deadline)
            break;
        place(h, i, &h->a[m]);
        i = m;
    }
    place(h, i, &t);
}

static void release(struct coro__heap *h)
{
    if (h->cap) {
        coro__free(h->s, h->a, h->cap * sizeof *h->a);
        coro__free(h->s, h->pos, h->cap * sizeof *h->pos);
    }
}

/* a[] and pos[] at cap entries; the new handles chained free (the old
 * ones are all in use: growth happens only when the heap is full) */
static int grow(struct coro__heap *h, uint32_t cap)
{
    struct coro__tnode *a = coro__alloc(h->s, cap * sizeof *a);
    uint32_t *pos = coro__alloc(h->s, cap * sizeof *pos);
    if (!a || !pos) {
        coro__free(h->s, a, cap * sizeof *a);
        coro__free(h->s, pos, cap * sizeof *pos);
        return -ENOMEM;
    }
    if (h->n) {
        memcpy(a, h->a, h->n * sizeof *a);
        memcpy(pos, h->pos, h->cap * sizeof *pos);
    }
    for (uint32_t k = h->cap; k < cap; k++)
        pos[k] = k + 1 < cap ? k + 1 : NO_HANDLE;
    h->free = h->cap;
    release(h);
    h->a = a;
    h->pos = pos;
    h->cap = cap;
    return 0;
}

int coro__heap_init(struct coro__heap *h, coro_sched_t *s, uint32_t cap)
{
    *h = (struct coro__heap){ .s = s, .free = NO_HANDLE };
    return cap ? grow(h, cap) : 0;
}

int coro__heap_push(struct coro__heap *h, struct coro__tnode *t)
{
    int rc;

    if (h->n == h->cap && (rc = grow(h, h->cap ? h->cap * 2 : 256)) < 0)
        return rc;
    t->h = h->free;
    h->free = h->pos[t->h];
    sift_up(h, h->n++, *t);
    return 0;
}

void coro__heap_remove(struct coro__heap *h, uint32_t idx, struct coro__tnode *out)
{
    struct coro__tnode last;

    *out = h->a[idx];
    h->pos[out->h] = h->free;
    h->free = out->h;
    last = h->a[--h->n];
    if (idx == h->n)
        return;
    /* the last entry takes the hole: it may need to go either way */
    if (idx > 0 && last.deadline < h->a[(idx - 1) / ARY].deadline)
        sift_up(h, idx, last);
    else
        sift_down(h, idx, last);
}

int64_t coro__heap_find(const struct coro__heap *h, uint32_t handle, const void *p)
{
    if (handle >= h->cap)
        return -1;
    uint32_t i = h->pos[handle];
    /* a handle given back holds a free-list link, maybe < n: the entry
     * there must be the handle's own, and p's */
    if (i >= h->n || h->a[i].h != handle || h->a[i].p != p)
        return -1;
    return i;
}

void coro__heap_fini(struct coro__heap *h)
{
    release(h);
    h->a = NULL;
    h->pos = NULL;
    h->n = h->cap = 0;
    h->free = NO_HANDLE;
}
