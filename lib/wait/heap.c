/* SPDX-License-Identifier: MIT */
/* The timer heap: one implementation for every timed wait - the parking
 * lot's (lib/wait/wtimer.c) and the I/O context's fd waits and sleeps
 * (lib/io/timers.c).  Each owner keeps its own heap under its own lock;
 * this file has no lock and no clock.
 *
 * A 4-ary min-heap by deadline.  4-ary rather than binary: a pop - the
 * fire path's step, once per timer - walks half the levels (10,000
 * pending timers: 7 instead of 14); a push, whose entry usually stops near
 * the bottom, pays one compare a level either way.  A hierarchical wheel
 * would remove in O(1) but rounds every deadline to its tick (1 ns to
 * 50 us are valid timeouts) and cascades entries between levels as time
 * passes; the heap is exact and moves an entry only when it is touched.
 *
 * LAYOUT.  With thousands of timers pending the heap does not stay in
 * cache between two fires, and a sift costs its cache misses.  So a heap
 * entry is 16 bytes, the deadline and a handle (struct coro__hent), and
 * a[] starts 3 entries into a cache-line aligned block: the four children
 * of entry i, a[4i + 1 .. 4i + 4], then fill exactly one 64-byte line, and
 * a level costs at most one miss (LaMarca and Ladner, "The influence of
 * caches on the performance of heaps", 1996).  Everything else a timer
 * carries - its job, its key or fd slot, its kind - is its RECORD,
 * rec[handle], written at the push and read when the timer leaves.
 *
 * HANDLES, AND REMOVAL BY MARK.  A timer that ends another way - its wait
 * woken, withdrawn or cancelled - is never searched for: the wait keeps
 * the handle the push gave (a lot waiter in its wait_slot, a sleep in its
 * awaitable, an fd wait in its slot), and coro__heap_del clears the
 * record's job (p = NULL, the mark of a removed timer) in O(1), without
 * moving the entry.  A marked entry leaves the heap when it reaches the
 * top (coro__heap_next drops it there) or when the marked ones outnumber
 * the live ones, which rebuilds the heap of the live ones in O(n)
 * (Floyd's heapify): so the heap is never more than twice its live size
 * plus a constant, and each removal costs O(1) amortized.  This is Go's
 * runtime timer heap's scheme (deleted timers left in the heap, cleaned
 * at the top and when they pass a quarter of it).  The alternative, an
 * index per handle rewritten by every move, writes a line of its own at
 * every level of every sift, lines that the thread adding timers and the
 * thread firing them then pass back and forth.
 *
 * A handle stays taken while its entry is in a[], marked or not, so a
 * record is never reused under an entry that names it; it is given back
 * (onto a stack of free handles) when the entry leaves.  A stale handle -
 * its timer fired or removed - finds a record whose p is NULL or another
 * job's: coro__heap_get checks p.  The arrays grow by doubling through the
 * scheduler's allocator and keep their size until the heap is finished.
 */
#include <string.h>

#include "wait/wait.h"

#define ARY 4
#define LEAD 3      /* a[] starts LEAD entries into its aligned block */

static void sift_up(struct coro__hent *a, uint32_t i, struct coro__hent e)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / ARY;
        if (a[parent].deadline <= e.deadline)
            break;
        a[i] = a[parent];
        i = parent;
    }
    a[i] = e;
}

/* the earliest of the children c .. c + k - 1 (k >= 1) */
static inline uint32_t min_child(const struct coro__hent *a, uint32_t c, uint32_t k)
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

static void sift_down(struct coro__hent *a, uint32_t n, uint32_t i, struct coro__hent e)
{
    for (;;) {
        uint32_t c = ARY * i + 1;
        if (c >= n)
            break;
        uint32_t m = min_child(a, c, n - c < ARY ? n - c : ARY);
        if (e.deadline <= a[m].deadline)
            break;
        a[i] = a[m];
        i = m;
    }
    a[i] = e;
}

static size_t a_size(uint32_t cap)
{
    return (cap + LEAD) * sizeof(struct coro__hent);
}

static void heap_release(struct coro__heap *h)
{
    if (h->cap) {
        coro__free_aligned(h->s, h->a - LEAD, a_size(h->cap));
        coro__free(h->s, h->rec, h->cap * sizeof *h->rec);
        coro__free(h->s, h->fs, h->cap * sizeof *h->fs);
    }
}

/* a[], rec[] and the free stack at cap entries; the new handles free
 * (growth happens only when every handle is taken) */
static int grow(struct coro__heap *h, uint32_t cap)
{
    struct coro__hent *a = coro__alloc_aligned(h->s, a_size(cap));
    struct coro__timer_record *rec = coro__alloc(h->s, cap * sizeof *rec);   /* zeroed: p NULL */
    uint32_t *fs = coro__alloc(h->s, cap * sizeof *fs);
    if (!a || !rec || !fs) {
        if (a)
            coro__free_aligned(h->s, a, a_size(cap));
        coro__free(h->s, rec, cap * sizeof *rec);
        coro__free(h->s, fs, cap * sizeof *fs);
        return -ENOMEM;
    }
    a += LEAD;
    if (h->n) {
        memcpy(a, h->a, h->n * sizeof *a);
        memcpy(rec, h->rec, h->cap * sizeof *rec);
    }
    /* the new handles, the lowest on top */
    for (uint32_t k = 0; k < cap - h->cap; k++)
        fs[k] = cap - 1 - k;
    h->nfree = cap - h->cap;
    heap_release(h);
    h->a = a;
    h->rec = rec;
    h->fs = fs;
    h->cap = cap;
    return 0;
}

int coro__heap_init(struct coro__heap *h, coro_sched_t *s, uint32_t cap)
{
    *h = (struct coro__heap){ .s = s };
    return cap ? grow(h, cap) : 0;
}

int coro__heap_push(struct coro__heap *h, struct coro__timer_record *t)
{
    int rc;

    if (!h->nfree && (rc = grow(h, h->cap ? h->cap * 2 : 256)) < 0)
        return rc;
    t->h = h->fs[--h->nfree];
    h->rec[t->h] = *t;
    sift_up(h->a, h->n++, (struct coro__hent){ .deadline = t->deadline, .h = t->h });
    return 0;
}

/* the root out; its handle given back */
static void take_root(struct coro__heap *h)
{
    uint32_t handle = h->a[0].h;

    h->rec[handle].p = NULL;
    h->fs[h->nfree++] = handle;
    struct coro__hent last = h->a[--h->n];
    if (h->n)
        sift_down(h->a, h->n, 0, last);
}

int64_t coro__heap_next(struct coro__heap *h)
{
    /* the marked entries that reached the top leave here */
    while (h->dead && h->n && !h->rec[h->a[0].h].p) {
        take_root(h);
        h->dead--;
    }
    return h->n ? h->a[0].deadline : INT64_MAX;
}

const struct coro__timer_record *coro__heap_first(struct coro__heap *h)
{
    coro__heap_next(h);
    return h->n ? &h->rec[h->a[0].h] : NULL;
}

void coro__heap_pop(struct coro__heap *h, struct coro__timer_record *out)
{
    coro__heap_next(h);     /* the root is live */
    *out = h->rec[h->a[0].h];
    take_root(h);
}

const struct coro__timer_record *coro__heap_get(const struct coro__heap *h, uint32_t handle,
                                         const void *p)
{
    return handle < h->cap && p && h->rec[handle].p == p ? &h->rec[handle] : NULL;
}

/* the live entries only, their handles kept, the marked ones' given back;
 * then Floyd's heapify, bottom up */
static void rebuild(struct coro__heap *h)
{
    uint32_t m = 0;

    for (uint32_t i = 0; i < h->n; i++) {
        if (h->rec[h->a[i].h].p)
            h->a[m++] = h->a[i];
        else
            h->fs[h->nfree++] = h->a[i].h;
    }
    h->n = m;
    h->dead = 0;
    for (uint32_t i = m > 1 ? (m - 2) / ARY + 1 : 0; i-- > 0;)
        sift_down(h->a, m, i, h->a[i]);
}

void coro__heap_del(struct coro__heap *h, uint32_t handle, struct coro__timer_record *out)
{
    *out = h->rec[handle];
    h->rec[handle].p = NULL;
    /* more marked than live: rebuild, O(n) after n/2 removals */
    if (++h->dead > 32 && h->dead > h->n - h->dead)
        rebuild(h);
}

void coro__heap_fini(struct coro__heap *h)
{
    heap_release(h);
    *h = (struct coro__heap){ .s = h->s };
}
