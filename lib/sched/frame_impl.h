/* SPDX-License-Identifier: MIT */
/* private: the layout of pool frames' slabs and pools, and the helpers
 * lib/sched/frame*.c and thread_subring.c share; never installed.  What the
 * allocation and give-back paths use is static inline here: none of it
 * is a call on those paths. */
#ifndef COROKIT_LIB_SCHED_FRAME_IMPL_H
#define COROKIT_LIB_SCHED_FRAME_IMPL_H

#include <errno.h>

#include "sched/frame.h"
#include "sched/sched.h"

#define SLAB_SHIFT 16
#define SLAB_SIZE ((size_t)1 << SLAB_SHIFT)
#define NCLASS 32
#define MAX_SMALL (NCLASS * 64)
#define MAX_BLOCKS 1024
/* rfree, one word: bit 0 PENDING (the slab is on pending), bits 1-16
 * the head block's index + 1 (0: empty), bits 17-32 the number of blocks
 * on the list, so that the owner takes list and count in one exchange
 * and never walks the list (each block was last written by its freer:
 * a walk is one cache miss after another, each waiting for the last) */
#define RF_PENDING ((uintptr_t)1)
/* a plain thread's submission ring (coro__thread_subring) */
#define XQ_BYTES (sizeof(struct coro__subring) + CORO__XQ_SIZE * sizeof(ck_ring_buffer_t))
#define RF_HEAD(w) ((uint32_t)((w) >> 1) & 0xffffu)
#define RF_COUNT(w) ((uint32_t)((w) >> 17) & 0xffffu)
#define RF_WORD(head, n) ((uintptr_t)(head) << 1 | (uintptr_t)(n) << 17 | RF_PENDING)
/* bit 33: the slab is detached (DETACH, lib/sched/frame_slab.c): frees only count, and the
 * one that brings the count to nblocks takes the slab */
#define RF_DETACHED ((uintptr_t)1 << 33)
#define RF_DWORD(head, n) ((uintptr_t)(head) << 1 | (uintptr_t)(n) << 17 | RF_DETACHED)

/* a worker's outbox (coro__frame_free_remote): slabs it holds blocks of at once, and
 * the blocks it holds per slab before it pushes them */
#define OUT_SLOTS 4
#define OUT_MAX 32

/* per-block state bytes */
enum { B_FREE = CORO__FRAME_FREE, B_ALLOC = CORO__FRAME_ALLOC, B_SPAWNED = CORO__FRAME_SPAWNED };

struct fpool;

struct slab {
    /* the fixed line: written when the slab is made or (empty, nobody
     * else holding a block of it) reshaped; read by every freer, so that
     * a free from another thread does not pull the owner's line */
    struct fpool *pool;         /* owner pool, fixed for life */
    struct coro__frames *fr;
    void *raw;                  /* what the allocator returned */
    size_t rawsize, size;       /* allocator size; slab size */
    uint32_t bsize, nblocks;
    uint32_t recip;             /* 2^32 / bsize, rounded up: index without a division */
    uint8_t cls, big;
    /* the owner's line: changes at every allocation and local free */
    /* free lists of block indices + 1 (0: empty), linked through the
     * blocks' first 4 bytes: `free` allocates; `rlist` holds a list taken
     * from rfree while `free` was not empty */
    uint32_t free __attribute__((aligned(CORO__CACHELINE)));
    uint32_t rlist;
    struct slab *next, *prev;   /* owner: the class's avail list */
    struct slab *anext, *aprev; /* every slab of the pool (owner) / fr's big ones (fr->lock) */
    uint32_t bump, used;
    uint8_t in_avail;
    uint8_t det;                /* owner: detached (DETACH) */
    /* the remote line: other threads push here */
    uintptr_t rfree __attribute__((aligned(CORO__CACHELINE)));    /* atomic: list | PENDING */
    struct slab *pnext;         /* link on pool->pending */
    /* block states (atomic bytes) */
    uint8_t st[MAX_BLOCKS] __attribute__((aligned(CORO__CACHELINE)));
};
/* the header before the blocks: its three lines and a state byte per block */
#define HDR_SIZE sizeof(struct slab)
_Static_assert(HDR_SIZE == 3 * CORO__CACHELINE + MAX_BLOCKS,
               "each of the slab's three lines fits in its cache line");
_Static_assert(HDR_SIZE % CORO__CACHELINE == 0, "the first block starts a cache line");

struct fclass {
    struct slab *cur;           /* allocate from here */
    struct slab *avail;         /* other slabs with room */
};

struct fpool {
    struct coro__frames *fr;
    struct fclass c[NCLASS];
    struct fpool *tnext;        /* fr->threads: every thread cache */
    struct fpool *unext;        /* fr->unowned */
    struct slab *all;           /* every slab of the pool (owner) */
    struct slab *empty;         /* empty slabs for any class (link: next) */
    uint32_t nempty;
    uint32_t empty_low;         /* a worker's: fewest empty since it last parked (IDLE) */
    bool thread;                /* a plain thread's cache: full slabs detach */
    struct slab *bigc;          /* big slabs kept for reuse (BIG FRAMES; link: next), owner */
    struct coro__subring *subring;        /* a thread cache's submission ring, or NULL */
    /* a worker's pool: blocks of other pools' slabs it gave back and has
     * not pushed yet, one list per slab (OUTBOX, lib/sched/frame_slab.c; owner only) */
    struct outbox {
        struct slab *sl;
        uint32_t head, tail, n;     /* block indices + 1, linked as in rfree */
    } out[OUT_SLOTS];
    struct slab *pending __attribute__((aligned(CORO__CACHELINE)));   /* atomic */
    /* atomic: detached slabs whose last frame came back (DETACH), a
     * Treiber stack the owner takes whole; nret counts them, at most
     * CORO__FRAME_EMPTY_MAX */
    struct slab *returned;
    uint32_t nret;
    /* a thread cache on its scheduler's trim list (TRIM, lib/sched/frame_sched.c):
     * trim_on (atomic) says it is there, trim_next links it */
    uint32_t trim_on;
    struct fpool *trim_next;
    /* atomic: its detached slabs whose blocks are not all back (DETACH):
     * nonzero while a burst of its jobs is still running */
    uint32_t nout;
    /* atomic: big slabs of this pool given back (BIG FRAMES), a Treiber
     * stack the owner takes whole; nbig counts them and bigc's (CAUTION:
     * a giver counts before it pushes, so nbig may run ahead of the lists) */
    struct slab *bigret;
    uint32_t nbig;
};

struct coro__frames {
    coro_sched_t *s;
    uint64_t gen;
    struct coro__frames *gnext;         /* coro__frame_live */
    pthread_mutex_t lock;               /* threads, unowned, big, detached, bigc */
    struct fpool *threads;              /* every thread cache */
    struct fpool *unowned;              /* caches of exited threads */
    struct slab *big;                   /* every big slab, in use or kept (lock) */
    struct slab *detached;              /* detached slabs, and those on a returned stack (lock) */
    size_t held;                        /* atomic: bytes of every slab (coro__frames_held) */
    /* atomic: thread caches whose returned stack got slabs since a worker
     * last trimmed them (TRIM, lib/sched/frame_sched.c), a Treiber stack
     * taken whole */
    struct fpool *trimq;
    int npools;
    struct fpool *wp[];                 /* one per worker slot */
};

/* FRESH (lib/sched/frame_slab.c): forget the frame a worker last took if it
 * lies in sl */
static inline void fresh_forget(const struct slab *sl)
{
    if ((uintptr_t)coro__fresh.frame - (uintptr_t)sl < SLAB_SIZE)
        coro__fresh.frame = NULL;
}

/* ---- the process-wide region map (lib/sched/frame_map.c) ---------------------- */

#define MAP_L1_BITS 15
#define MAP_L2_BITS 16
extern uint8_t *coro__frame_map[1u << MAP_L1_BITS] CORO__HIDDEN;
/* the live schedulers' frames: under coro__frame_lock */
extern pthread_mutex_t coro__frame_lock CORO__HIDDEN;
extern struct coro__frames *coro__frame_live CORO__HIDDEN;
extern uint64_t coro__frame_gen CORO__HIDDEN;
extern int coro__frame_finishing CORO__HIDDEN;

static inline uint8_t map_get(uintptr_t a)
{
    uintptr_t r = a >> SLAB_SHIFT;
    if (r >> (MAP_L1_BITS + MAP_L2_BITS))
        return 0;
    /* acquire: pairs with the release that published the leaf */
    uint8_t *leaf = __atomic_load_n(&coro__frame_map[r >> MAP_L2_BITS], __ATOMIC_ACQUIRE);
    if (!leaf)
        return 0;
    return __atomic_load_n(&leaf[r & ((1u << MAP_L2_BITS) - 1)], __ATOMIC_RELAXED);
}

static inline struct slab *slab_of_big(uintptr_t a)
{
    uint8_t m;
    do {                        /* inside a big slab: walk back to its start */
        a -= SLAB_SIZE;
        m = map_get(a);
    } while (m == 2);
    return (struct slab *)a;
}

/* the slab holding address p, or NULL */
static inline struct slab *slab_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint8_t m = map_get(a);

    if (!m)
        return NULL;
    a &= ~(uintptr_t)(SLAB_SIZE - 1);
    if (CORO__UNLIKELY(m == 2))
        return slab_of_big(a);
    return (struct slab *)a;
}

/* set the bytes of [a, a + n) to v (first region: first); 0 or -ENOMEM;
 * under coro__frame_lock, with no live scheduler: give the leaves back */
CORO__HIDDEN int coro__frame_map_set(uintptr_t a, size_t n, uint8_t first, uint8_t v);
CORO__HIDDEN void coro__frame_map_release(void);

/* ---- slabs (lib/sched/frame_slab.c) --------------------------------------------- */

static inline void slab_unlink(struct slab **head, struct slab *sl)
{
    if (sl->aprev)
        sl->aprev->anext = sl->anext;
    else
        *head = sl->anext;
    if (sl->anext)
        sl->anext->aprev = sl->aprev;
}

static inline void slab_link(struct slab **head, struct slab *sl)
{
    sl->aprev = NULL;
    sl->anext = *head;
    if (*head)
        (*head)->aprev = sl;
    *head = sl;
}

/* (re)shape a small slab for class cls; its block states are all FREE */
static inline void slab_format(struct slab *sl, uint32_t bsize, int cls)
{
    sl->bsize = bsize;
    sl->nblocks = (uint32_t)((SLAB_SIZE - HDR_SIZE) / bsize);
    /* exact for offsets below 2^16: the error off * (recip - 2^32/bsize) /
     * 2^32 < 2^-16 stays below 1/bsize >= 2^-11, the smallest gap between
     * a fractional part and the next integer */
    sl->recip = (uint32_t)(((uint64_t)1 << 32) / bsize + 1);
    sl->cls = (uint8_t)cls;
    sl->free = sl->rlist = 0;
    sl->bump = sl->used = 0;
    sl->next = sl->prev = NULL;
    sl->in_avail = 0;
}

static inline void *block_at(struct slab *sl, uint32_t i)
{
    return (char *)sl + HDR_SIZE + (size_t)i * sl->bsize;
}

static inline uint32_t block_index(struct slab *sl, const void *p)
{
    if (sl->big)
        return 0;
    uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)sl - HDR_SIZE);
    return (uint32_t)((off * sl->recip) >> 32);
}

static inline bool has_room(const struct slab *sl)
{
    return sl->free || sl->rlist || sl->bump < sl->nblocks;
}

static inline void avail_add(struct fclass *c, struct slab *sl)
{
    sl->prev = NULL;
    sl->next = c->avail;
    if (c->avail)
        c->avail->prev = sl;
    c->avail = sl;
    sl->in_avail = 1;
}

static inline void avail_del(struct fclass *c, struct slab *sl)
{
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        c->avail = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    sl->next = sl->prev = NULL;
    sl->in_avail = 0;
}

CORO__HIDDEN void coro__frame_slab_free(struct slab *sl);
CORO__HIDDEN struct slab *coro__frame_slab_new(struct coro__frames *fr, struct fpool *p,
                                              size_t size, uint32_t bsize, int cls, bool big);
CORO__HIDDEN void coro__frame_pool_slab_free(struct fpool *p, struct slab *sl);
CORO__HIDDEN void coro__frame_keep_empty(struct fpool *p, struct slab *sl);
CORO__HIDDEN void coro__frame_slab_gained(struct fpool *p, struct slab *sl);
CORO__HIDDEN void coro__frame_collect(struct fpool *p);
CORO__HIDDEN void coro__frame_free_remote(struct fpool *mine, struct slab *sl, void *b);
/* a worker's outbox list pushed onto its slab (OUTBOX in frame_slab.c) */
CORO__HIDDEN void coro__frame_out_flush(struct outbox *o);

/* owner: give block b of sl back */
static inline void pool_free_local(struct fpool *p, struct slab *sl, void *b)
{
    *(uint32_t *)b = sl->free;
    sl->free = block_index(sl, b) + 1;
    sl->used--;
    coro__frame_slab_gained(p, sl);
}

/* detached slabs (DETACH in lib/sched/frame_slab.c) */
CORO__HIDDEN void coro__frame_detach(struct fpool *p, struct slab *sl);
CORO__HIDDEN void coro__frame_slab_dispose(struct slab *sl);
CORO__HIDDEN void coro__frame_take_returned(struct fpool *p);
CORO__HIDDEN void coro__frame_returned_trim(struct fpool *p, uint32_t keep);
/* a thread cache's returned stack got slabs: list it for the next trim (TRIM) */
CORO__HIDDEN void coro__frame_trim_note(struct fpool *p);
CORO__HIDDEN void coro__frame_trim_relist(struct coro__frames *fr, struct fpool *p);

/* ---- big slabs (lib/sched/frame_big.c, BIG FRAMES) -------------------------------- */

CORO__HIDDEN struct slab *coro__frame_big_get(struct coro__frames *fr, struct fpool *p, size_t size,
                                  size_t fsize);
CORO__HIDDEN void coro__frame_big_release(struct slab *sl);
CORO__HIDDEN void coro__frame_bigc_trim(struct fpool *p, uint32_t keep);

/* ---- thread caches (lib/sched/frame_tcache.c) ----------------------------------- */

CORO__HIDDEN struct fpool *coro__frame_tc_get(struct coro__frames *fr, bool create);

/* the pool the calling thread owns in fr, or NULL */
static inline struct fpool *my_pool(struct coro__frames *fr, bool create)
{
    struct coro__worker *w = coro__tls_worker;
    if (w && w->s == fr->s)
        return fr->wp[w->idx];
    return coro__frame_tc_get(fr, create);
}

/* p (the caller's pool) when it has an outbox: a worker's, while the
 * workers run (a single-threaded scheduler's pool passes between drivers) */
static inline struct fpool *outbox_of(struct coro__frames *fr, struct fpool *p)
{
    struct coro__worker *w = coro__tls_worker;
    return p && w && w->s == fr->s && fr->s->nworkers > 0 ? p : NULL;
}

#endif
