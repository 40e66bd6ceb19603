/* SPDX-License-Identifier: MIT */
/* A pool's slabs: made and given back, their free lists, the frees of
 * blocks from the owner and from other threads (the outbox), and a plain
 * thread's full slab detached.  Handing a block out: lib/sched/frame.c
 * (pool_alloc); a worker's trim before it parks: lib/sched/frame_sched.c.
 *
 * FREE LISTS (the invariant).  A block is in exactly one of: handed out
 * (st[i] = ALLOC or SPAWNED), the slab's local free lists `free` and
 * `rlist` (owner only), the slab's remote list in `rfree`, or never used
 * (index >= bump).  Lists hold block indices + 1, linked through the
 * blocks' first 4 bytes.  `used` counts the blocks that are not on the
 * local lists and not behind bump; it is the owner's alone.
 *   - The owner frees onto `free`, writes the state byte FREE and
 *     decrements `used`.
 *   - Another thread pushes onto `rfree` (a worker a list of up to
 *     OUT_MAX blocks it gathered, OUTBOX below; a plain thread one block)
 *     (CAS, a Treiber push: there is no
 *     pop of single nodes, the owner takes the whole list with one
 *     exchange, so there is no ABA).  The word holds the head, the list's
 *     length and PENDING (RF_WORD): the owner learns how many blocks came
 *     back without walking them.  A spawned frame given back this way
 *     keeps its state byte SPAWNED until it is handed out again (the
 *     freer never touches the state line the owner writes).  Every push
 *     sets PENDING, and the freer whose push found it clear then pushes the
 *     slab on its pool's `pending` stack (the same kind of push).  The
 *     owner takes `pending` whole, and per slab reads `pnext`, then
 *     exchanges the word with 0: the blocks, their count and the cleared
 *     bit in one step, so a later free pushes the slab again and none is
 *     missed.  The list taken becomes `free` if that is empty, else
 *     `rlist` (used once `free` runs out).  A slab is on `pending` at most
 *     once, so `pnext` has one writer.  The
 *     freer that set PENDING still touches the slab after its block is in
 *     (pnext); the slab cannot be given back meanwhile: its block counts in
 *     `used` until the owner collects it, which it does only once it finds
 *     the slab on `pending`, after that freer's last touch.  A freer that
 *     found PENDING set is done with the slab at its CAS.
 *   - A slab whose `used` drops to 0 and that is not the class's current
 *     slab goes back to the allocator (one empty slab per class is kept as
 *     the class's current slab, and up to CORO__FRAME_EMPTY_MAX per pool on
 *     its empty list, ready for any class: a burst of spawns reuses them
 *     with no allocator call and no page fault), so idle pools do not
 *     grow: memory follows the frames alive, plus at most
 *     CORO__FRAME_EMPTY_MAX + NCLASS slabs per pool, and a parked worker's
 *     pool at most CORO__FRAME_EMPTY_PARK + NCLASS (IDLE in lib/sched/frame_sched.c).
 *
 *
 * DETACH.  A plain thread may stop calling corokit for good, so nothing
 * it owns may wait for it to come back: when the slab a thread cache
 * allocates from is full (every block handed out, none waiting in rfree),
 * the owner detaches it - one CAS of rfree from 0 to DETACHED, under
 * fr->lock with the move from the pool's list to fr->detached - and takes
 * another.  From then on every give-back of its blocks, the owner's too,
 * is a push onto rfree that only counts (no PENDING, no pending stack), and
 * the push that brings the count to nblocks made the last block come back:
 * that thread holds the slab alone (its CAS acquired every earlier push,
 * the detach CAS included: one release sequence) and disposes of it, onto
 * the pool's returned stack while that holds fewer than
 * CORO__FRAME_EMPTY_MAX, else back to the allocator.  The detach CAS
 * succeeds only on 0: PENDING clear means the slab is not on the pending
 * stack and no freer is about to put it there, so it never is while
 * detached.  The owner takes from the returned stack when it needs a slab
 * (RETURNED below).  So a thread cache holds, whatever its thread does
 * next, the slab it allocates from per size class, the slabs it saw come
 * back partly free, and at most CORO__FRAME_EMPTY_MAX empty ones, until a
 * worker goes idle after its burst (TRIM in lib/sched/frame_sched.c).
 * A worker's pool does not detach: a
 * worker comes back (it collects its pending slabs when it next allocates
 * from a full slab and before it parks), and its own gives back stay
 * plain stores.
 *
 * RETURNED.  A thread cache's empty slabs - the detached ones that came
 * back whole, and those its owner found empty itself (made detached, then
 * pushed) - all wait on its returned stack, CORO__FRAME_EMPTY_MAX at most
 * (nret counts them; beyond, back to the allocator), never on the owner's
 * own empty list, which only a thread that comes back would look at.  The
 * stack is a Treiber stack of whole takes: pushes CAS the head, and a take
 * exchanges it with NULL, so there is no pop of single nodes and no ABA.
 * The owner takes it when it needs a slab, keeps the first and pushes the
 * rest back (at most CORO__FRAME_EMPTY_MAX links walked, once per slab it
 * fills).  Any thread may take it whole and give slabs back
 * (coro__frame_returned_trim, unlinking them from fr->detached under
 * fr->lock; the owner's at its exit).  So a thread cache's empty slabs
 * number CORO__FRAME_EMPTY_MAX at most in all, where the owner's own
 * list and the stack could each hold that many.  While a burst of the
 * thread's jobs runs (a detached slab of it still has blocks out: nout),
 * they are kept: a thread that spawns burst after burst of fire-and-forget
 * jobs draws on them at every burst (spawn_many_remote), and a trim at
 * each worker's look for work, which came between the thread's slab
 * switches, made the burst allocate them again.  Once no detached slab
 * has blocks out, a worker going idle gives them back (TRIM in
 * lib/sched/frame_sched.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/frame_impl.h"

/* FRESH.  The frame a worker last took from its own pool, for the spawn
 * that usually follows at once on the same thread (coro__frame_check):
 * the spawn then finds its slab and state byte here rather than through
 * the region map.  Only a worker of a scheduler with workers sets it, from
 * the pool that is its own for life, so only that thread reads or clears
 * it.  It can be stale in one way only: its block given back and handed
 * out again or freed - and then its state byte, read by the spawn as the
 * slow path reads it, says so - while its slab holds the same blocks: the
 * owner clears it when the slab leaves its class (coro__frame_keep_empty, for reuse
 * by any class, or back to the allocator: coro__frame_pool_slab_free), the only ways
 * a worker pool's slab changes shape or goes. */
__thread struct coro__fresh coro__fresh;

static void *raw_alloc(coro_sched_t *s, size_t n, size_t *rawsize, void **raw)
{
    if (!s->alloc) {
        void *p = NULL;
        if (posix_memalign(&p, SLAB_SIZE, n) != 0)
            return NULL;
        *raw = p;
        *rawsize = n;
        return p;
    }
    /* a config allocator gives no alignment: take one slab more */
    *rawsize = n + SLAB_SIZE;
    *raw = s->alloc->alloc(s->alloc->ctx, *rawsize);
    if (!*raw)
        return NULL;
    return (void *)(((uintptr_t)*raw + SLAB_SIZE - 1) & ~(uintptr_t)(SLAB_SIZE - 1));
}

void coro__frame_slab_free(struct slab *sl)
{
    coro_sched_t *s = sl->fr->s;
    void *raw = sl->raw;
    size_t rawsize = sl->rawsize;

    __atomic_sub_fetch(&sl->fr->held, sl->size, __ATOMIC_RELAXED);
    coro__frame_map_set((uintptr_t)sl, sl->size, 0, 0);
    if (s->alloc)
        s->alloc->free(s->alloc->ctx, raw, rawsize);
    else
        free(raw);
}

static struct slab *slab_new_(struct coro__frames *fr, struct fpool *p, size_t size,
                              uint32_t bsize, int cls, bool big);

/* a new slab: the allocations behind it (malloc, mmap) may set errno on
 * the way, which stays the caller's (include/corokit/error.h); off the
 * fast path, which takes blocks from slabs that exist */
struct slab *coro__frame_slab_new(struct coro__frames *fr, struct fpool *p, size_t size,
                             uint32_t bsize, int cls, bool big)
{
    int e = errno;
    struct slab *sl = slab_new_(fr, p, size, bsize, cls, big);
    errno = e;
    return sl;
}

static struct slab *slab_new_(struct coro__frames *fr, struct fpool *p, size_t size,
                              uint32_t bsize, int cls, bool big)
{
    void *raw;
    size_t rawsize;
    struct slab *sl = raw_alloc(fr->s, size, &rawsize, &raw);

    if (!sl)
        return NULL;
    memset(sl, 0, sizeof *sl);
    sl->pool = p;
    sl->fr = fr;
    sl->raw = raw;
    sl->rawsize = rawsize;
    sl->size = size;
    sl->bsize = bsize;
    sl->nblocks = big ? 1 : (uint32_t)((SLAB_SIZE - HDR_SIZE) / bsize);
    /* exact for offsets below 2^16: the error off * (recip - 2^32/bsize) /
     * 2^32 < 2^-16 stays below 1/bsize >= 2^-11, the smallest gap between
     * a fractional part and the next integer */
    sl->recip = big ? 0 : (uint32_t)(((uint64_t)1 << 32) / bsize + 1);
    sl->cls = (uint8_t)cls;
    sl->big = big;
    if (coro__frame_map_set((uintptr_t)sl, size, 1, 2) < 0) {
        coro__frame_map_set((uintptr_t)sl, size, 0, 0);
        if (fr->s->alloc)
            fr->s->alloc->free(fr->s->alloc->ctx, raw, rawsize);
        else
            free(raw);
        return NULL;
    }
    __atomic_add_fetch(&fr->held, size, __ATOMIC_RELAXED);
    if (p) {
        slab_link(&p->all, sl);         /* owner */
    } else {
        pthread_mutex_lock(&fr->lock);
        slab_link(&fr->big, sl);
        pthread_mutex_unlock(&fr->lock);
    }
    return sl;
}

/* owner: give a slab of p back */
void coro__frame_pool_slab_free(struct fpool *p, struct slab *sl)
{
    fresh_forget(sl);
    slab_unlink(&p->all, sl);
    coro__frame_slab_free(sl);
}

/* p onto fr's trim list (TRIM, lib/sched/frame_sched.c) */
void coro__frame_trim_relist(struct coro__frames *fr, struct fpool *p)
{
    struct fpool *h = __atomic_load_n(&fr->trimq, __ATOMIC_RELAXED);
    do
        p->trim_next = h;
    /* release: trim_next before the trimmer's acquire exchange of the list */
    while (!__atomic_compare_exchange_n(&fr->trimq, &h, p, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

void coro__frame_trim_note(struct fpool *p)
{
    struct coro__frames *fr = p->fr;

    /* relaxed: the common case, listed already; the exchange decides.
     * acquire: it may read a trim's clear (release) while that trim still
     * walks the list it took; its read of p->trim_next, made before the
     * clear, then happens before our relist writes it (TRIM,
     * lib/sched/frame_sched.c) */
    if (!p->thread || __atomic_load_n(&p->trim_on, __ATOMIC_RELAXED) ||
        __atomic_exchange_n(&p->trim_on, 1, __ATOMIC_ACQUIRE))
        return;
    coro__frame_trim_relist(fr, p);
}

/* the chain first..last (linked by next, ours alone) onto p's returned
 * stack */
static void returned_push(struct fpool *p, struct slab *first, struct slab *last)
{
    struct slab *h = __atomic_load_n(&p->returned, __ATOMIC_RELAXED);
    do
        last->next = h;
    /* release: the slabs' resets and the frames' last writes before the
     * acquire exchange of whoever takes the stack; acquire: a trim's clear
     * of trim_on, made before its exchange of the stack, is seen by
     * coro__frame_trim_note below when our push came after that exchange
     * (TRIM, lib/sched/frame_sched.c) */
    while (!__atomic_compare_exchange_n(&p->returned, &h, first, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
    coro__frame_trim_note(p);
}

/* owner of thread cache p: empty slab sl (its blocks all on its local
 * lists: none is on rfree, which is 0, nor on pending) goes where the
 * slabs that other threads find empty go (RETURNED) */
static void thread_keep_empty(struct fpool *p, struct slab *sl)
{
    struct coro__frames *fr = p->fr;

    /* relaxed: the count is a bound, as in coro__frame_slab_dispose */
    if (__atomic_add_fetch(&p->nret, 1, __ATOMIC_RELAXED) > CORO__FRAME_EMPTY_MAX) {
        __atomic_sub_fetch(&p->nret, 1, __ATOMIC_RELAXED);
        coro__frame_pool_slab_free(p, sl);
        return;
    }
    pthread_mutex_lock(&fr->lock);
    slab_unlink(&p->all, sl);
    slab_link(&fr->detached, sl);
    pthread_mutex_unlock(&fr->lock);
    sl->det = 1;
    returned_push(p, sl, sl);
}

/* owner: keep empty slab sl for any class, or give it back beyond
 * CORO__FRAME_EMPTY_MAX */
void coro__frame_keep_empty(struct fpool *p, struct slab *sl)
{
    fresh_forget(sl);
    if (p->thread) {
        thread_keep_empty(p, sl);
        return;
    }
    if (p->nempty < CORO__FRAME_EMPTY_MAX) {
        sl->next = p->empty;
        p->empty = sl;
        p->nempty++;
        return;
    }
    coro__frame_pool_slab_free(p, sl);
}

void coro__frame_detach(struct fpool *p, struct slab *sl)
{
    struct coro__frames *fr = p->fr;
    uintptr_t zero = 0;

    pthread_mutex_lock(&fr->lock);
    /* release: our writes to the slab (its lists, the blocks' links) before
     * whoever takes it at the end of the frees' RMW chain; only from 0 */
    if (__atomic_compare_exchange_n(&sl->rfree, &zero, RF_DETACHED, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED)) {
        sl->det = 1;
        slab_unlink(&p->all, sl);
        slab_link(&fr->detached, sl);
        /* relaxed: a hint for the trim (TRIM, frame_sched.c) */
        __atomic_add_fetch(&p->nout, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&fr->lock);
}

/* the last block of detached slab sl came back: the caller holds it alone */
void coro__frame_slab_dispose(struct slab *sl)
{
    struct fpool *p = sl->pool;
    struct coro__frames *fr = sl->fr;

    /* relaxed: a hint for the trim (TRIM, frame_sched.c); before the push
     * below, whose note lists the pool with this count already lowered */
    __atomic_sub_fetch(&p->nout, 1, __ATOMIC_RELAXED);
    /* relaxed: the count is a bound, the stack's CAS publishes the slab */
    if (__atomic_add_fetch(&p->nret, 1, __ATOMIC_RELAXED) <= CORO__FRAME_EMPTY_MAX) {
        /* relaxed: nobody reaches the slab before the push below */
        __atomic_store_n(&sl->rfree, 0, __ATOMIC_RELAXED);
        /* (its release: the reset and the frames' last writes, acquired
         * with the count, before the taker's acquire exchange) */
        returned_push(p, sl, sl);
        return;
    }
    __atomic_sub_fetch(&p->nret, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&fr->lock);
    slab_unlink(&fr->detached, sl);
    pthread_mutex_unlock(&fr->lock);
    coro__frame_slab_free(sl);
}

/* owner: the returned slabs join the pool's empty ones (beyond
 * CORO__FRAME_EMPTY_MAX: back to the allocator); a thread cache takes one
 * and leaves the rest on the stack (RETURNED) */
void coro__frame_take_returned(struct fpool *p)
{
    if (!__atomic_load_n(&p->returned, __ATOMIC_RELAXED))
        return;
    /* acquire: pairs with the disposers' release pushes */
    struct slab *r = __atomic_exchange_n(&p->returned, NULL, __ATOMIC_ACQUIRE);
    uint32_t n = 0;
    struct coro__frames *fr = p->fr;

    if (!r)
        return;     /* a worker's trim took them meanwhile */
    if (p->thread && r->next) {
        struct slab *last = r->next;
        while (last->next)
            last = last->next;      /* at most CORO__FRAME_EMPTY_MAX */
        returned_push(p, r->next, last);
        r->next = NULL;
    }

    pthread_mutex_lock(&fr->lock);
    for (struct slab *sl = r; sl; sl = sl->next, n++) {
        slab_unlink(&fr->detached, sl);
        slab_link(&p->all, sl);
    }
    pthread_mutex_unlock(&fr->lock);
    __atomic_sub_fetch(&p->nret, n, __ATOMIC_RELAXED);
    while (r) {
        struct slab *sl = r;
        r = r->next;
        sl->det = 0;
        /* its block states: FREE, as a new slab's (frees by other threads
         * left SPAWNED); nobody else reads them while no block is out */
        memset(sl->st, 0, sizeof sl->st);
        if (p->thread) {
            fresh_forget(sl);
            sl->next = p->empty;    /* the one it takes: allocated from at once */
            p->empty = sl;
            p->nempty++;
        } else {
            coro__frame_keep_empty(p, sl);
        }
    }
}

/* any thread: give back the slabs on thread cache p's returned stack
 * beyond the first keep (RETURNED) */
void coro__frame_returned_trim(struct fpool *p, uint32_t keep)
{
    struct coro__frames *fr = p->fr;

    if (!__atomic_load_n(&p->returned, __ATOMIC_RELAXED))
        return;
    /* acquire: pairs with the pushes' release (whole takes only: no ABA);
     * release: a trim's clear of trim_on before it (TRIM, frame_sched.c) */
    struct slab *r = __atomic_exchange_n(&p->returned, NULL, __ATOMIC_ACQ_REL);
    struct slab *kept = r, *klast = NULL;
    for (uint32_t k = 0; r && k < keep; k++) {
        klast = r;
        r = r->next;
    }
    if (klast)
        returned_push(p, kept, klast);
    if (!r)
        return;
    uint32_t n = 0;
    pthread_mutex_lock(&fr->lock);
    for (struct slab *sl = r; sl; sl = sl->next, n++)
        slab_unlink(&fr->detached, sl);
    pthread_mutex_unlock(&fr->lock);
    __atomic_sub_fetch(&p->nret, n, __ATOMIC_RELAXED);
    while (r) {
        struct slab *sl = r;
        r = r->next;
        coro__frame_slab_free(sl);
    }
}

/* owner: sl gained free blocks (its used count already lowered) */
void coro__frame_slab_gained(struct fpool *p, struct slab *sl)
{
    struct fclass *c = &p->c[sl->cls];

    if (sl == c->cur)
        return;
    if (sl->used == 0) {
        /* empty: a few kept for any class, the rest given back */
        if (sl->in_avail)
            avail_del(c, sl);
        coro__frame_keep_empty(p, sl);
        return;
    }
    if (!sl->in_avail)
        avail_add(c, sl);
}

/* owner: a list of blocks (first index + 1) joins sl's free blocks */
static void splice(struct slab *sl, uint32_t head)
{
    if (!sl->free) {
        sl->free = head;
    } else if (!sl->rlist) {
        sl->rlist = head;
    } else {
        /* both in use (the owner freed blocks locally meanwhile): the
         * rare case that walks */
        uint32_t t = head, n;
        while ((n = *(uint32_t *)block_at(sl, t - 1)))
            t = n;
        *(uint32_t *)block_at(sl, t - 1) = sl->rlist;
        sl->rlist = head;
    }
}

/* owner: take every remote free of the pool's pending slabs */
void coro__frame_collect(struct fpool *p)
{
    /* acquire: pairs with the freers' release pushes of slabs */
    struct slab *sl = __atomic_exchange_n(&p->pending, NULL, __ATOMIC_ACQUIRE);

    while (sl) {
        struct slab *next = sl->pnext;      /* before the exchange: sl may be pushed again */
        /* acquire: pairs with the freers' CAS: the links and the frames'
         * last writes are visible; release: our read of pnext above
         * happens before the next freer's write of it (its CAS acquires
         * this exchange).  The list and its count in one step */
        uintptr_t w = __atomic_exchange_n(&sl->rfree, 0, __ATOMIC_ACQ_REL);
        if (RF_HEAD(w)) {
            sl->used -= RF_COUNT(w);
            splice(sl, RF_HEAD(w));
            coro__frame_slab_gained(p, sl);
        }
        sl = next;
    }
}

/* push the list first..last (indices + 1, n blocks, linked) onto sl's
 * remote list */
static void push_remote(struct slab *sl, uint32_t first, uint32_t last, uint32_t n)
{
    void *tail = block_at(sl, last - 1);
    /* before our CAS: once our blocks are in, a detached slab may be
     * taken and reshaped by others */
    uint32_t nblocks = sl->nblocks;
    uintptr_t head = __atomic_load_n(&sl->rfree, __ATOMIC_RELAXED), w;
    do {
        *(uint32_t *)tail = RF_HEAD(head);
        w = head & RF_DETACHED ? RF_DWORD(first, RF_COUNT(head) + n)
                               : RF_WORD(first, RF_COUNT(head) + n);
    }
    /* release: the links and the frames' last writes before the owner's
     * exchange (or the taker's CAS, DETACH); acquire: the owner's read of
     * pnext before its exchange happens before our write of pnext below,
     * and a detached slab's earlier pushes before we take it */
    while (!__atomic_compare_exchange_n(&sl->rfree, &head, w, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
    if (head & RF_DETACHED) {
        if (RF_COUNT(w) == nblocks)
            coro__frame_slab_dispose(sl);       /* its last block: the slab is ours */
        return;
    }
    if (head & RF_PENDING)
        return;     /* the slab is (being put) on pending: no more touches */
    struct fpool *p = sl->pool;
    struct slab *ph = __atomic_load_n(&p->pending, __ATOMIC_RELAXED);
    do
        sl->pnext = ph;
    /* release: pnext before the slab is seen on the list */
    while (!__atomic_compare_exchange_n(&p->pending, &ph, sl, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

/* OUTBOX.  A worker that gives back blocks of other pools' slabs (it ran
 * jobs it stole, or that a plain thread spawned) keeps them in lists per
 * slab and pushes each list with one CAS once it holds OUT_MAX blocks of
 * that slab, needs the slot for another slab, or parks (coro__frames_flush)
 * or exits.  One CAS on the slab's remote line per OUT_MAX frees instead of
 * one per free: that line is the owner's too (coro__frame_collect exchanges it), and
 * each push pulled it across.  The blocks count in their slab's `used`
 * until the owner collects them, so a slab stays alive while an outbox
 * holds blocks of it; at most OUT_SLOTS * OUT_MAX blocks per worker wait.
 * Plain threads push at once: nothing would tell them to flush. */
void coro__frame_out_flush(struct outbox *o)
{
    if (o->n)
        push_remote(o->sl, o->head, o->tail, o->n);
    o->sl = NULL;
    o->n = o->head = o->tail = 0;
}

void coro__frame_free_remote(struct fpool *mine, struct slab *sl, void *b)
{
    uint32_t idx = block_index(sl, b) + 1;

    if (!mine) {
        push_remote(sl, idx, idx, 1);
        return;
    }
    struct outbox *o = NULL;
    for (int i = 0; i < OUT_SLOTS; i++)
        if (mine->out[i].sl == sl) {
            o = &mine->out[i];
            break;
        }
    if (!o) {
        /* a slot by slab address: consecutive slabs take different ones */
        o = &mine->out[((uintptr_t)sl >> SLAB_SHIFT) % OUT_SLOTS];
        coro__frame_out_flush(o);
        o->sl = sl;
        o->tail = idx;
    }
    *(uint32_t *)b = o->head;
    o->head = idx;
    if (++o->n >= OUT_MAX)
        coro__frame_out_flush(o);
}
