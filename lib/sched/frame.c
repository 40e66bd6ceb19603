/* SPDX-License-Identifier: MIT */
/* Pool frames: coro_frame_alloc / coro_frame_free and the library's
 * give-back of a spawned frame (coro__frame_release), with the check
 * coro_spawn makes first (coro__frame_check_slow).  This file holds the
 * paths every frame takes; the slabs behind them: lib/sched/frame_slab.c
 * (free lists, remote frees, a plain thread's full slab detached),
 * frame_big.c, frame_map.c (which memory is a pool frame), frame_tcache.c
 * (plain threads' pools), frame_sched.c (a scheduler's pools made and
 * given back); the layout: frame_impl.h.
 *
 * SHAPE (mimalloc's pages, "Mimalloc: Free List Sharding in Action",
 * Leijen, Zorn, de Moura 2019).  Frames come from slabs: 64 KiB blocks,
 * 64 KiB aligned, each serving one size class (64-byte steps up to
 * 2 KiB).  A slab starts with its header (struct slab, 1216 bytes: a
 * fixed line, the owner's line, the remote line, one state byte per block); blocks follow,
 * 64-byte aligned.  A frame larger than 2 KiB gets a slab of its own,
 * rounded up to 64 KiB ("big").  Every slab belongs for life to one pool:
 * a worker's (one per worker slot) or a plain thread's cache.  A pool is
 * used by one thread at a time: its worker (single-threaded mode: the
 * thread driving, handed over by coro__drive_begin/coro__drive_end's
 * acquire/release), or the thread whose cache it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/frame_impl.h"

/* owner: a block from pool p, class c, or NULL */
static void *pool_alloc(struct fpool *p, int ci)
{
    struct fclass *c = &p->c[ci];
    struct slab *sl = c->cur;

    if (CORO__UNLIKELY(!sl || !has_room(sl))) {
        if (__atomic_load_n(&p->pending, __ATOMIC_RELAXED))
            coro__frame_collect(p);
        sl = c->cur;
        if (!sl || !has_room(sl)) {
            if (sl && p->thread)
                coro__frame_detach(p, sl);      /* DETACH */
            if (!p->empty)
                coro__frame_take_returned(p);
            if ((sl = c->avail)) {
                avail_del(c, sl);
            } else if ((sl = p->empty)) {
                p->empty = sl->next;
                if (--p->nempty < p->empty_low)
                    p->empty_low = p->nempty;
                slab_format(sl, (uint32_t)(ci + 1) * 64, ci);
            } else {
                sl = coro__frame_slab_new(p->fr, p, SLAB_SIZE, (uint32_t)(ci + 1) * 64, ci, false);
                if (!sl)
                    return NULL;
            }
            c->cur = sl;    /* the old one is full: found again by its frees */
        }
    }
    void *b;
    if (!sl->free && sl->rlist) {
        sl->free = sl->rlist;
        sl->rlist = 0;
    }
    if (sl->free) {
        b = block_at(sl, sl->free - 1);
        sl->free = *(uint32_t *)b;
        /* the next block to hand out was last written by whoever freed
         * it, often another CPU: start fetching it now, for writing, not
         * when the next allocation needs its link.  Its second line too
         * (coro_t alone is two): coro_frame_alloc's memset writes both,
         * and coro_spawn's state CAS waited for that store to drain
         * (perf annotate: most of coro_spawn's samples from a plain
         * thread sat on that CAS).  prefetchw, not prefetcht0: a shared
         * copy still waits for an upgrade at the memset
         * (docs/benchmarks.md, spawn_many_remote) */
        if (sl->free) {
            char *nb = block_at(sl, sl->free - 1);
            coro__prefetch_w(nb);
            if (sl->bsize > CORO__CACHELINE)
                coro__prefetch_w(nb + CORO__CACHELINE);
        }
    } else {
        b = block_at(sl, sl->bump++);
    }
    sl->used++;
    return b;
}

/* the slow path: big frames, a thread's cache, a class whose current slab
 * has no free block on its list */
static __attribute__((noinline)) void *frame_alloc_slow(coro_sched_t *s, size_t size)
{
    if (!s || !s->frames || size == 0 || size > ((size_t)1 << 40))
        return NULL;
    struct coro__frames *fr = s->frames;
    void *b;
    struct slab *sl;

    if (size > MAX_SMALL) {
        size_t total = (HDR_SIZE + size + SLAB_SIZE - 1) & ~(SLAB_SIZE - 1);
        sl = coro__frame_big_get(fr, my_pool(fr, true), total, size);
        if (!sl)
            return NULL;
        b = block_at(sl, 0);
    } else {
        struct fpool *p = my_pool(fr, true);
        if (!p)
            return NULL;
        int ci = (int)((size - 1) / 64);
        b = pool_alloc(p, ci);
        if (!b)
            return NULL;
        sl = (struct slab *)((uintptr_t)b & ~(uintptr_t)(SLAB_SIZE - 1));
    }
    memset(b, 0, size);
    uint8_t *st = &sl->st[block_index(sl, b)];
    /* relaxed: the frame reaches other threads through coro_spawn's
     * release operations */
    __atomic_store_n(st, B_ALLOC, __ATOMIC_RELAXED);
    struct coro__worker *w = coro__tls_worker;
    if (!sl->big && w && w->s == s && s->nworkers > 0 && sl->pool == fr->wp[w->idx]) {
        coro__fresh.frame = b;      /* FRESH */
        coro__fresh.st = st;
    }
    return b;
}

void *coro_frame_alloc(coro_sched_t *s, size_t size)
{
    struct coro__worker *w = coro__tls_worker;

    /* the fast path: a worker of s with workers, a small frame, a free
     * block on its class's current slab's list (pool_alloc's usual case) */
    if (CORO__LIKELY(w && s && w->s == s && s->nworkers > 0 && size - 1 < MAX_SMALL)) {
        struct fpool *p = s->frames->wp[w->idx];
        struct slab *sl = p->c[(size - 1) / 64].cur;
        if (CORO__LIKELY(sl && sl->free)) {
            uint32_t i = sl->free - 1;
            char *b = block_at(sl, i);
            sl->free = *(uint32_t *)b;
            if (sl->free) {     /* as pool_alloc: its next block, for writing */
                char *nb = block_at(sl, sl->free - 1);
                coro__prefetch_w(nb);
                if (sl->bsize > CORO__CACHELINE)
                    coro__prefetch_w(nb + CORO__CACHELINE);
            }
            sl->used++;
            /* relaxed: as the slow path's */
            __atomic_store_n(&sl->st[i], B_ALLOC, __ATOMIC_RELAXED);
            coro__fresh.frame = b;      /* FRESH */
            coro__fresh.st = &sl->st[i];
            /* last, so that it is a tail call (memset returns b) and this
             * path saves no register: nothing reads the block before the
             * caller has it */
            return memset(b, 0, size);
        }
    }
    return frame_alloc_slow(s, size);
}

/* give back block b (state already checked) */
static void release_block(struct slab *sl, void *b)
{
    if (sl->big) {
        coro__frame_big_release(sl);
        return;
    }
    struct fpool *p = my_pool(sl->fr, false);
    if (p == sl->pool && !sl->det)
        pool_free_local(p, sl, b);
    else
        coro__frame_free_remote(outbox_of(sl->fr, p), sl, b);
}

void coro_frame_free(void *frame)
{
    struct slab *sl = frame ? slab_of(frame) : NULL;
    if (!sl)
        return;             /* NULL or not a pool frame: ignored */
    if ((uintptr_t)frame - (uintptr_t)sl < HDR_SIZE)
        return;             /* inside the slab's header: not a frame */
    uint32_t i = block_index(sl, frame);
    if (i >= sl->nblocks || block_at(sl, i) != frame)
        return;             /* not the start of a block: ignored */
    uint8_t want = B_ALLOC;
    /* acq_rel: one of two racing calls wins; a spawned or already free
     * frame is left alone */
    if (!__atomic_compare_exchange_n(&sl->st[i], &want, B_FREE, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    release_block(sl, frame);
}

/* the owner gives back block i (at b) of sl, spawned.  A load and a
 * store, not an exchange: only the one who gives a spawned frame back
 * writes its byte (coro_frame_free leaves SPAWNED alone), and the slab's
 * owner reads it again only after the block came back through a free
 * list */
static inline void release_spawned(struct slab *sl, uint32_t i, void *b, const bool small)
{
    if (CORO__UNLIKELY(__atomic_load_n(&sl->st[i], __ATOMIC_RELAXED) != B_SPAWNED)) {
        fprintf(stderr, "corokit: pool frame %p given back twice\n", b);
        abort();
    }
    __atomic_store_n(&sl->st[i], B_FREE, __ATOMIC_RELAXED);
    if (!small && sl->big) {
        coro__frame_big_release(sl);
        return;
    }
    /* pool_free_local, with the index known */
    struct fpool *p = sl->pool;
    *(uint32_t *)b = sl->free;
    sl->free = i + 1;
    sl->used--;
    if (sl != p->c[sl->cls].cur)
        coro__frame_slab_gained(p, sl);
}

int coro__frame_check_slow(coro_sched_t *s, const coro_t *co, uint8_t **state)
{
    struct slab *sl = slab_of(co);
    if (CORO__LIKELY(!sl))
        return 0;
    if (sl->fr->s != s || (uintptr_t)co - (uintptr_t)sl < HDR_SIZE)
        return -EINVAL;
    uint32_t i = block_index(sl, co);
    if (i >= sl->nblocks)
        return -EINVAL;
    *state = &sl->st[i];
    switch (__atomic_load_n(&sl->st[i], __ATOMIC_RELAXED)) {
    case B_ALLOC:
        return sl->big ? 1 : 2;
    case B_SPAWNED:
        return -EBUSY;
    default:
        return -EINVAL;
    }
}

/* the rest of coro__frame_release: a big slab's frame, another pool's */
static __attribute__((noinline)) void frame_release_slow(const coro_t *co)
{
    /* a small slab's frame: its slab is the 64 KiB around its header */
    struct slab *sl = co->flags & CORO__FL_SMALL
                          ? (struct slab *)((uintptr_t)co & ~(uintptr_t)(SLAB_SIZE - 1))
                          : slab_of(co);
    uint32_t i = block_index(sl, co);
    void *b = block_at(sl, i);

    struct fpool *mine = sl->big ? NULL : my_pool(sl->fr, false);
    if (!sl->big && (mine != sl->pool || sl->det)) {
        /* another thread's block: onto its remote list, its state byte
         * left SPAWNED until the owner hands the block out again (ALLOC).
         * Reading or writing the byte here would pull the line of state
         * bytes that the owner writes at every allocation and spawn: with
         * a thief running the jobs right behind their spawner, one
         * transfer per job.  Meanwhile coro_frame_free ignores the block
         * (SPAWNED is not the caller's) and coro_spawn refuses it
         * (-EBUSY).  The check for a second give-back is the owner's
         * only. */
        coro__frame_free_remote(outbox_of(sl->fr, mine), sl, b);
        return;
    }
    release_spawned(sl, i, b, false);
}

/* the fast path: a small slab's frame of the calling worker's own pool
 * (the job ran where it was spawned); false: not that case.  same_s: the
 * caller knows w is a worker of the frame's scheduler (wp[w->idx] is w's
 * pool only in its own scheduler's frames) */
static inline bool release_own(struct coro__worker *w, const coro_t *co, const bool same_s)
{
    if (CORO__LIKELY(co->flags & CORO__FL_SMALL)) {
        struct slab *sl = (struct slab *)((uintptr_t)co & ~(uintptr_t)(SLAB_SIZE - 1));
        struct coro__frames *fr = sl->fr;
        if (CORO__LIKELY((same_s || w->s == fr->s) && sl->pool == fr->wp[w->idx] && !sl->det)) {
            uint64_t off = (uint64_t)((uintptr_t)co - (uintptr_t)sl - HDR_SIZE);
            uint32_t i = (uint32_t)((off * sl->recip) >> 32);
            release_spawned(sl, i, block_at(sl, i), true);
            return true;
        }
    }
    return false;
}

void coro__frame_release(const coro_t *co)
{
    struct coro__worker *w = coro__tls_worker;

    if (CORO__LIKELY(w && release_own(w, co, false)))
        return;
    frame_release_slow(co);
}

void coro__frame_release_on(struct coro__worker *w, const coro_t *co)
{
    if (CORO__LIKELY(release_own(w, co, true)))
        return;
    frame_release_slow(co);
}
