/* SPDX-License-Identifier: MIT */
/* Pool frames: coro_frame_alloc / coro_frame_free and the library's give-back.
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
 * thread driving, handed over by drive_begin/drive_end's acquire/release),
 * or the thread whose cache it is.
 *
 * WHICH MEMORY IS A POOL FRAME.  A process-wide two-level map has one
 * byte per 64 KiB region of the address space: 1 = a slab starts here,
 * 2 = inside a big slab.  coro_spawn looks up the region of the frame
 * header it is given (an interior pointer: the header may sit anywhere in
 * the frame), so it needs no flag from the user.  The byte is set before
 * the slab is handed out and cleared before its memory is given back; a
 * region whose byte is 0 is never read.  Leaves (64 KiB, 4 GiB of address
 * space each) are made on first use and given back when the last
 * scheduler's frames are gone (map_release): every lookup is made for a
 * live scheduler, registered in g_live, so with none registered and none
 * finishing nobody can be reading a leaf.
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
 *     pool at most CORO__FRAME_EMPTY_PARK + NCLASS (IDLE below).
 *
 * LIFETIME.  Slabs and pools live until coro_sched_destroy, which gives
 * every slab back (the pools' lists and the scheduler's list of big slabs
 * and thread caches reach all of them).  A plain thread's cache is made on
 * its first coro_frame_alloc for a scheduler and named in that thread's
 * TLS table (scheduler pointer + generation, so a destroyed scheduler's
 * entry is never taken for a new one at the same address).  When the
 * thread exits, a pthread key destructor collects what it can, gives empty
 * slabs back, and parks the cache on its scheduler's list of unowned
 * caches (if the scheduler is still alive: checked under g_lock against
 * the list of live schedulers); the next thread that needs a cache adopts
 * it, pending frees included.  Nothing is lost; frames freed into an
 * unowned cache wait there until it is adopted or the scheduler is
 * destroyed.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
/* a plain thread's submission ring (coro__thread_xq) */
#define XQ_BYTES (sizeof(struct coro__xq) + CORO__XQ_SIZE * sizeof(ck_ring_buffer_t))
#define RF_HEAD(w) ((uint32_t)((w) >> 1) & 0xffffu)
#define RF_COUNT(w) ((uint32_t)((w) >> 17) & 0xffffu)
#define RF_WORD(head, n) ((uintptr_t)(head) << 1 | (uintptr_t)(n) << 17 | RF_PENDING)
/* bit 33: the slab is detached (DETACH below): frees only count, and the
 * one that brings the count to nblocks takes the slab */
#define RF_DETACHED ((uintptr_t)1 << 33)
#define RF_DWORD(head, n) ((uintptr_t)(head) << 1 | (uintptr_t)(n) << 17 | RF_DETACHED)

/* a worker's outbox (free_remote): slabs it holds blocks of at once, and
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
    struct coro__xq *xq;        /* a thread cache's submission ring, or NULL */
    /* a worker's pool: blocks of other pools' slabs it gave back and has
     * not pushed yet, one list per slab (OUTBOX below; owner only) */
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
    /* atomic: big slabs of this pool given back (BIG FRAMES), a Treiber
     * stack the owner takes whole; nbig counts them and bigc's (CAUTION:
     * a giver counts before it pushes, so nbig may run ahead of the lists) */
    struct slab *bigret;
    uint32_t nbig;
};

struct coro__frames {
    coro_sched_t *s;
    uint64_t gen;
    struct coro__frames *gnext;         /* g_live */
    pthread_mutex_t lock;               /* threads, unowned, big, detached, bigc */
    struct fpool *threads;              /* every thread cache */
    struct fpool *unowned;              /* caches of exited threads */
    struct slab *big;                   /* every big slab, in use or kept (lock) */
    struct slab *detached;              /* detached slabs, and those on a returned stack (lock) */
    size_t held;                        /* atomic: bytes of every slab (coro__frames_held) */
    int npools;
    struct fpool *wp[];                 /* one per worker slot */
};

/* FRESH.  The frame a worker last took from its own pool, for the spawn
 * that usually follows at once on the same thread (coro__frame_check):
 * the spawn then finds its slab and state byte here rather than through
 * the region map.  Only a worker of a scheduler with workers sets it, from
 * the pool that is its own for life, so only that thread reads or clears
 * it.  It can be stale in one way only: its block given back and handed
 * out again or freed - and then its state byte, read by the spawn as the
 * slow path reads it, says so - while its slab holds the same blocks: the
 * owner clears it when the slab leaves its class (keep_empty, for reuse
 * by any class, or back to the allocator: pool_slab_free), the only ways
 * a worker pool's slab changes shape or goes. */
__thread struct coro__fresh coro__fresh;

static inline void fresh_forget(const struct slab *sl)
{
    if ((uintptr_t)coro__fresh.frame - (uintptr_t)sl < SLAB_SIZE)
        coro__fresh.frame = NULL;
}

/* ---- the process-wide region map ------------------------------------------- */

#define MAP_L1_BITS 15
#define MAP_L2_BITS 16
static uint8_t *g_map[1u << MAP_L1_BITS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct coro__frames *g_live;     /* under g_lock */
static uint64_t g_gen;                  /* under g_lock */
static int g_finishing;                 /* under g_lock: in coro__frames_fini */

static inline uint8_t map_get(uintptr_t a)
{
    uintptr_t r = a >> SLAB_SHIFT;
    if (r >> (MAP_L1_BITS + MAP_L2_BITS))
        return 0;
    /* acquire: pairs with the release that published the leaf */
    uint8_t *leaf = __atomic_load_n(&g_map[r >> MAP_L2_BITS], __ATOMIC_ACQUIRE);
    if (!leaf)
        return 0;
    return __atomic_load_n(&leaf[r & ((1u << MAP_L2_BITS) - 1)], __ATOMIC_RELAXED);
}

/* set the bytes of [a, a + n) to v (first region: first); 0 or -ENOMEM */
static int map_set(uintptr_t a, size_t n, uint8_t first, uint8_t v)
{
    for (size_t off = 0; off < n; off += SLAB_SIZE) {
        uintptr_t r = (a + off) >> SLAB_SHIFT;
        if (r >> (MAP_L1_BITS + MAP_L2_BITS))
            return -ENOMEM;     /* outside the mapped range: do not use it */
        uint8_t **slot = &g_map[r >> MAP_L2_BITS];
        uint8_t *leaf = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (!leaf) {
            pthread_mutex_lock(&g_lock);
            leaf = *slot;
            if (!leaf) {
                /* given back by map_release */
                leaf = calloc(1, (size_t)1 << MAP_L2_BITS);
                if (leaf)   /* release: the zeroed leaf before its pointer */
                    __atomic_store_n(slot, leaf, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&g_lock);
            if (!leaf)
                return -ENOMEM;
        }
        /* relaxed: the map byte is published with the slab itself, by
         * whatever hands the frame to another thread */
        __atomic_store_n(&leaf[r & ((1u << MAP_L2_BITS) - 1)], off ? v : first,
                         __ATOMIC_RELAXED);
    }
    return 0;
}

/* Under g_lock: no scheduler has frames and none is giving its slabs back
 * (each of which clears its map bytes), so no leaf is read or written. */
static void map_release(void)
{
    if (g_live || g_finishing)
        return;
    for (size_t i = 0; i < sizeof g_map / sizeof g_map[0]; i++)
        if (g_map[i]) {
            free(g_map[i]);
            /* relaxed: nobody reads it now (above); atomic because
             * map_get's loads of the slot are */
            __atomic_store_n(&g_map[i], NULL, __ATOMIC_RELAXED);
        }
}

static struct slab *slab_of_big(uintptr_t a)
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

/* ---- slabs ------------------------------------------------------------------ */

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

static void slab_unlink(struct slab **head, struct slab *sl)
{
    if (sl->aprev)
        sl->aprev->anext = sl->anext;
    else
        *head = sl->anext;
    if (sl->anext)
        sl->anext->aprev = sl->aprev;
}

static void slab_link(struct slab **head, struct slab *sl)
{
    sl->aprev = NULL;
    sl->anext = *head;
    if (*head)
        (*head)->aprev = sl;
    *head = sl;
}

static void slab_free(struct slab *sl)
{
    coro_sched_t *s = sl->fr->s;
    void *raw = sl->raw;
    size_t rawsize = sl->rawsize;

    __atomic_sub_fetch(&sl->fr->held, sl->size, __ATOMIC_RELAXED);
    map_set((uintptr_t)sl, sl->size, 0, 0);
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
static struct slab *slab_new(struct coro__frames *fr, struct fpool *p, size_t size,
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
    if (map_set((uintptr_t)sl, size, 1, 2) < 0) {
        map_set((uintptr_t)sl, size, 0, 0);
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
static void pool_slab_free(struct fpool *p, struct slab *sl)
{
    fresh_forget(sl);
    slab_unlink(&p->all, sl);
    slab_free(sl);
}

/* owner: keep empty slab sl for any class, or give it back beyond
 * CORO__FRAME_EMPTY_MAX */
static void keep_empty(struct fpool *p, struct slab *sl)
{
    fresh_forget(sl);
    if (p->nempty < CORO__FRAME_EMPTY_MAX) {
        sl->next = p->empty;
        p->empty = sl;
        p->nempty++;
        return;
    }
    pool_slab_free(p, sl);
}

/* ---- detached slabs ------------------------------------------------------------
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
 * detached.  The owner takes the returned stack whole (no ABA: there is no
 * pop of single nodes) when it needs a slab, and at thread exit.  So a
 * thread cache holds, whatever its thread does next, the slab it allocates
 * from per size class, the slabs it saw come back partly free, and at most
 * CORO__FRAME_EMPTY_MAX empty ones.  A worker's pool does not detach: a
 * worker comes back (it collects its pending slabs when it next allocates
 * from a full slab and before it parks), and its own gives back stay
 * plain stores. */
static void detach(struct fpool *p, struct slab *sl)
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
    }
    pthread_mutex_unlock(&fr->lock);
}

/* the last block of detached slab sl came back: the caller holds it alone */
static void slab_dispose(struct slab *sl)
{
    struct fpool *p = sl->pool;
    struct coro__frames *fr = sl->fr;

    /* relaxed: the count is a bound, the stack's CAS publishes the slab */
    if (__atomic_add_fetch(&p->nret, 1, __ATOMIC_RELAXED) <= CORO__FRAME_EMPTY_MAX) {
        /* relaxed: nobody reaches the slab before the push below */
        __atomic_store_n(&sl->rfree, 0, __ATOMIC_RELAXED);
        struct slab *h = __atomic_load_n(&p->returned, __ATOMIC_RELAXED);
        do
            sl->next = h;
        /* release: the reset and the frames' last writes (acquired with
         * the count) before the owner's acquire exchange */
        while (!__atomic_compare_exchange_n(&p->returned, &h, sl, true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED));
        return;
    }
    __atomic_sub_fetch(&p->nret, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&fr->lock);
    slab_unlink(&fr->detached, sl);
    pthread_mutex_unlock(&fr->lock);
    slab_free(sl);
}

/* owner: the returned slabs join the pool's empty ones (beyond
 * CORO__FRAME_EMPTY_MAX: back to the allocator) */
static void take_returned(struct fpool *p)
{
    if (!__atomic_load_n(&p->returned, __ATOMIC_RELAXED))
        return;
    /* acquire: pairs with the disposers' release pushes */
    struct slab *r = __atomic_exchange_n(&p->returned, NULL, __ATOMIC_ACQUIRE);
    uint32_t n = 0;
    struct coro__frames *fr = p->fr;

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
        keep_empty(p, sl);
    }
}

/* ---- big slabs -----------------------------------------------------------------
 *
 * BIG FRAMES.  A frame above the largest class gets a slab of its own,
 * its size rounded up to 64 KiB: at that size the allocator maps and
 * unmaps fresh pages each time (an mmap, a munmap and a page fault per
 * 4 KiB touched, per spawn).  So a big slab given back goes back to the
 * pool that allocated it (sl->pool, fixed for life), onto its bigret
 * stack (a Treiber push from any thread; the owner takes the stack whole
 * into its own list bigc, no ABA), and the pool's next frame of the same
 * rounded size reuses it.  nbig counts a pool's kept slabs, stack and list:
 * beyond CORO__FRAME_BIG_KEEP (about what a burst has alive at once), and
 * for slabs above CORO__FRAME_BIG_KEEP_SIZE, a give-back returns the slab
 * to the allocator, and a worker that parks keeps CORO__FRAME_BIG_IDLE; a
 * plain thread's cache keeps what it has until the thread allocates a big
 * frame again or exits.  Back to its own pool, not to the thread that gives it back:
 * a job spawned from a plain thread finishes on a worker, and it is the
 * thread that allocates next.  Every big slab stays on fr->big, in use or
 * kept, so destroy reaches them all. */
static struct slab *bigc_take(struct slab **head, size_t size)
{
    for (struct slab **pp = head; *pp; pp = &(*pp)->next)
        if ((*pp)->size == size) {
            struct slab *sl = *pp;
            *pp = sl->next;
            return sl;
        }
    return NULL;
}

/* owner: the big slabs given back to p join its list */
static void bigc_collect(struct fpool *p)
{
    if (!__atomic_load_n(&p->bigret, __ATOMIC_RELAXED))
        return;
    /* acquire: pairs with the givers' release pushes */
    struct slab *r = __atomic_exchange_n(&p->bigret, NULL, __ATOMIC_ACQUIRE);
    while (r) {
        struct slab *sl = r;
        r = r->next;
        sl->next = p->bigc;
        p->bigc = sl;
    }
}

static struct slab *big_get(struct coro__frames *fr, struct fpool *p, size_t size, size_t fsize)
{
    struct slab *sl = NULL;

    if (p && size <= CORO__FRAME_BIG_KEEP_SIZE) {
        if (!(sl = bigc_take(&p->bigc, size))) {
            bigc_collect(p);
            sl = bigc_take(&p->bigc, size);
        }
        if (sl) {
            __atomic_sub_fetch(&p->nbig, 1, __ATOMIC_RELAXED);
            return sl;
        }
    }
    sl = slab_new(fr, NULL, size, (uint32_t)(fsize > UINT32_MAX ? 0 : fsize), 0, true);
    if (sl)
        sl->pool = p;
    return sl;
}

/* give back big slab sl (its block state already FREE); any thread */
static void big_release(struct slab *sl)
{
    struct coro__frames *fr = sl->fr;
    struct fpool *p = sl->pool;

    if (p && sl->size <= CORO__FRAME_BIG_KEEP_SIZE) {
        /* relaxed: the count is a bound, the stack's CAS publishes the slab */
        if (__atomic_add_fetch(&p->nbig, 1, __ATOMIC_RELAXED) <= CORO__FRAME_BIG_KEEP) {
            struct slab *h = __atomic_load_n(&p->bigret, __ATOMIC_RELAXED);
            do
                sl->next = h;
            /* release: the frame's last writes before the owner reuses it */
            while (!__atomic_compare_exchange_n(&p->bigret, &h, sl, true, __ATOMIC_RELEASE,
                                                __ATOMIC_RELAXED));
            return;
        }
        __atomic_sub_fetch(&p->nbig, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&fr->lock);
    slab_unlink(&fr->big, sl);
    pthread_mutex_unlock(&fr->lock);
    slab_free(sl);
}

/* owner: give back the big slabs p keeps beyond keep */
static void bigc_trim(struct fpool *p, uint32_t keep)
{
    struct coro__frames *fr = p->fr;
    bigc_collect(p);
    while (p->bigc && __atomic_load_n(&p->nbig, __ATOMIC_RELAXED) > keep) {
        struct slab *sl = p->bigc;
        p->bigc = sl->next;
        __atomic_sub_fetch(&p->nbig, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&fr->lock);
        slab_unlink(&fr->big, sl);
        pthread_mutex_unlock(&fr->lock);
        slab_free(sl);
    }
}

/* (re)shape a small slab for class cls; its block states are all FREE */
static void slab_format(struct slab *sl, uint32_t bsize, int cls)
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

static void avail_add(struct fclass *c, struct slab *sl)
{
    sl->prev = NULL;
    sl->next = c->avail;
    if (c->avail)
        c->avail->prev = sl;
    c->avail = sl;
    sl->in_avail = 1;
}

static void avail_del(struct fclass *c, struct slab *sl)
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

/* owner: sl gained free blocks (its used count already lowered) */
static void slab_gained(struct fpool *p, struct slab *sl)
{
    struct fclass *c = &p->c[sl->cls];

    if (sl == c->cur)
        return;
    if (sl->used == 0) {
        /* empty: a few kept for any class, the rest given back */
        if (sl->in_avail)
            avail_del(c, sl);
        keep_empty(p, sl);
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
static void collect(struct fpool *p)
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
            slab_gained(p, sl);
        }
        sl = next;
    }
}

/* owner: a block from pool p, class c, or NULL */
static void *pool_alloc(struct fpool *p, int ci)
{
    struct fclass *c = &p->c[ci];
    struct slab *sl = c->cur;

    if (CORO__UNLIKELY(!sl || !has_room(sl))) {
        if (__atomic_load_n(&p->pending, __ATOMIC_RELAXED))
            collect(p);
        sl = c->cur;
        if (!sl || !has_room(sl)) {
            if (sl && p->thread)
                detach(p, sl);      /* DETACH */
            if (!p->empty)
                take_returned(p);
            if ((sl = c->avail)) {
                avail_del(c, sl);
            } else if ((sl = p->empty)) {
                p->empty = sl->next;
                if (--p->nempty < p->empty_low)
                    p->empty_low = p->nempty;
                slab_format(sl, (uint32_t)(ci + 1) * 64, ci);
            } else {
                sl = slab_new(p->fr, p, SLAB_SIZE, (uint32_t)(ci + 1) * 64, ci, false);
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

/* owner: give block b of sl back */
static void pool_free_local(struct fpool *p, struct slab *sl, void *b)
{
    *(uint32_t *)b = sl->free;
    sl->free = block_index(sl, b) + 1;
    sl->used--;
    slab_gained(p, sl);
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
            slab_dispose(sl);       /* its last block: the slab is ours */
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
 * one per free: that line is the owner's too (collect exchanges it), and
 * each push pulled it across.  The blocks count in their slab's `used`
 * until the owner collects them, so a slab stays alive while an outbox
 * holds blocks of it; at most OUT_SLOTS * OUT_MAX blocks per worker wait.
 * Plain threads push at once: nothing would tell them to flush. */
static void out_flush(struct outbox *o)
{
    if (o->n)
        push_remote(o->sl, o->head, o->tail, o->n);
    o->sl = NULL;
    o->n = o->head = o->tail = 0;
}

static void free_remote(struct fpool *mine, struct slab *sl, void *b)
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
        out_flush(o);
        o->sl = sl;
        o->tail = idx;
    }
    *(uint32_t *)b = o->head;
    o->head = idx;
    if (++o->n >= OUT_MAX)
        out_flush(o);
}

/* IDLE.  A worker about to park keeps the empty slabs its next active
 * phase is likely to draw on, and no more: the slabs that stayed on its
 * empty list through the whole phase that just ended (the fewest it held
 * since it last parked: the list is a stack, so those were never taken)
 * go back beyond CORO__FRAME_EMPTY_IDLE, and in any case no more than
 * CORO__FRAME_EMPTY_PARK stay.  A load that draws the same slabs phase
 * after phase (bursts, a spawning loop between parks) keeps them up to
 * that cap and reaches the allocator for none; a worker that parks for
 * good holds at most CORO__FRAME_EMPTY_PARK empty slabs, plus the current
 * slab of each class it allocated from. */
static void idle_trim(struct fpool *p)
{
    uint32_t keep = p->nempty;

    if (p->empty_low > CORO__FRAME_EMPTY_IDLE)
        keep -= p->empty_low - CORO__FRAME_EMPTY_IDLE;
    if (keep > CORO__FRAME_EMPTY_PARK)
        keep = CORO__FRAME_EMPTY_PARK;
    while (p->nempty > keep) {
        struct slab *sl = p->empty;
        p->empty = sl->next;
        p->nempty--;
        pool_slab_free(p, sl);
    }
    p->empty_low = p->nempty;
}

void coro__frames_flush(coro_sched_t *s)
{
    struct coro__worker *w = coro__tls_worker;
    if (!s->frames || !w || w->s != s || s->nworkers == 0)
        return;
    struct fpool *p = s->frames->wp[w->idx];
    for (int i = 0; i < OUT_SLOTS; i++)
        out_flush(&p->out[i]);
    /* what other threads gave back while we ran: the empty slabs go back
     * now, not when we next allocate from a full slab, which may be never */
    if (__atomic_load_n(&p->pending, __ATOMIC_RELAXED))
        collect(p);
    if (__atomic_load_n(&p->nbig, __ATOMIC_RELAXED) > CORO__FRAME_BIG_IDLE)
        bigc_trim(p, CORO__FRAME_BIG_IDLE);
    idle_trim(p);
}

/* ---- thread caches -------------------------------------------------------------- */

#define TC_SLOTS 8
struct tc_ent {
    struct coro__frames *fr;
    uint64_t gen;
    struct fpool *p;
};
static __thread struct tc_ent tc[TC_SLOTS];
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

static bool fr_alive(struct coro__frames *fr, uint64_t gen)
{
    for (struct coro__frames *f = g_live; f; f = f->gnext)
        if (f == fr && f->gen == gen)
            return true;
    return false;
}

/* owner, at thread exit or before: collect, give back empty slabs */
static void pool_trim(struct fpool *p)
{
    collect(p);
    take_returned(p);
    bigc_trim(p, 0);
    while (p->empty) {
        struct slab *sl = p->empty;
        p->empty = sl->next;
        p->nempty--;
        pool_slab_free(p, sl);
    }
    for (int i = 0; i < NCLASS; i++) {
        struct fclass *c = &p->c[i];
        if (c->cur && c->cur->used == 0) {
            pool_slab_free(p, c->cur);
            c->cur = NULL;
        }
    }
}

static void tc_exit(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < TC_SLOTS; i++) {
        struct tc_ent *e = &tc[i];
        if (!e->fr)
            continue;
        if (fr_alive(e->fr, e->gen)) {
            pool_trim(e->p);
            pthread_mutex_lock(&e->fr->lock);
            e->p->unext = e->fr->unowned;
            e->fr->unowned = e->p;
            pthread_mutex_unlock(&e->fr->lock);
        }
        e->fr = NULL;
    }
    pthread_mutex_unlock(&g_lock);
}

static void tc_key_make(void)
{
    tc_key_ok = pthread_key_create(&tc_key, tc_exit) == 0;
}

static struct fpool *tc_get(struct coro__frames *fr, bool create)
{
    if (CORO__LIKELY(tc[0].fr == fr && tc[0].gen == fr->gen))
        return tc[0].p;
    for (int i = 1; i < TC_SLOTS; i++)
        if (tc[i].fr == fr && tc[i].gen == fr->gen) {
            struct tc_ent t = tc[0];    /* the last one used goes first */
            tc[0] = tc[i];
            tc[i] = t;
            return tc[0].p;
        }
    if (!create)
        return NULL;
    pthread_once(&tc_once, tc_key_make);
    if (!tc_key_ok)
        return NULL;
    struct tc_ent *e = NULL;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < TC_SLOTS && !e; i++)
        if (!tc[i].fr || !fr_alive(tc[i].fr, tc[i].gen))
            e = &tc[i];
    pthread_mutex_unlock(&g_lock);
    if (!e)
        return NULL;        /* a thread using more than TC_SLOTS schedulers */
    struct fpool *p = NULL;
    pthread_mutex_lock(&fr->lock);
    if ((p = fr->unowned)) {
        fr->unowned = p->unext;         /* adopt: its slabs and pending frees */
    } else if ((p = coro__alloc_aligned(fr->s, sizeof *p))) {
        p->fr = fr;
        p->thread = true;
        p->tnext = fr->threads;
        fr->threads = p;
    }
    pthread_mutex_unlock(&fr->lock);
    if (!p)
        return NULL;
    pthread_setspecific(tc_key, (void *)1);
    e->p = p;
    e->gen = fr->gen;
    e->fr = fr;
    return p;
}

/* the pool the calling thread owns in fr, or NULL */
static inline struct fpool *my_pool(struct coro__frames *fr, bool create)
{
    struct coro__worker *w = coro__tls_worker;
    if (w && w->s == fr->s)
        return fr->wp[w->idx];
    return tc_get(fr, create);
}

/* p (the caller's pool) when it has an outbox: a worker's, while the
 * workers run (a single-threaded scheduler's pool passes between drivers) */
static inline struct fpool *outbox_of(struct coro__frames *fr, struct fpool *p)
{
    struct coro__worker *w = coro__tls_worker;
    return p && w && w->s == fr->s && fr->s->nworkers > 0 ? p : NULL;
}

/* ---- scheduler hooks -------------------------------------------------------------- */

int coro__frames_init(coro_sched_t *s)
{
    struct coro__frames *fr =
        coro__alloc(s, sizeof *fr + (size_t)s->nslots * sizeof(struct fpool *));
    if (!fr)
        return -ENOMEM;
    fr->s = s;
    fr->npools = s->nslots;
    pthread_mutex_init(&fr->lock, NULL);
    for (int i = 0; i < s->nslots; i++) {
        fr->wp[i] = coro__alloc_aligned(s, sizeof(struct fpool));
        if (!fr->wp[i]) {
            s->frames = fr;
            coro__frames_fini(s);
            return -ENOMEM;
        }
        fr->wp[i]->fr = fr;
    }
    pthread_mutex_lock(&g_lock);
    fr->gen = ++g_gen;
    fr->gnext = g_live;
    g_live = fr;
    pthread_mutex_unlock(&g_lock);
    s->frames = fr;
    return 0;
}

static void pool_fini(struct fpool *p)
{
    while (p->all) {
        struct slab *sl = p->all;
        p->all = sl->anext;
        slab_free(sl);
    }
}

/* Give back every slab of s: the pools' lists and the big list reach
 * them all (the workers have stopped; other threads must no longer use
 * s's frames). */
void coro__frames_fini(coro_sched_t *s)
{
    struct coro__frames *fr = s->frames;
    if (!fr)
        return;
    pthread_mutex_lock(&g_lock);
    for (struct coro__frames **pp = &g_live; *pp; pp = &(*pp)->gnext)
        if (*pp == fr) {
            *pp = fr->gnext;
            break;
        }
    g_finishing++;
    pthread_mutex_unlock(&g_lock);
    while (fr->big) {
        struct slab *sl = fr->big;
        fr->big = sl->anext;
        slab_free(sl);
    }
    while (fr->detached) {
        struct slab *sl = fr->detached;
        fr->detached = sl->anext;
        slab_free(sl);
    }
    for (int i = 0; i < fr->npools; i++)
        if (fr->wp[i]) {
            pool_fini(fr->wp[i]);
            coro__free_aligned(s, fr->wp[i], sizeof(struct fpool));
        }
    for (struct fpool *p = fr->threads, *n; p; p = n) {
        n = p->tnext;
        pool_fini(p);
        if (p->xq)
            coro__free_aligned(s, p->xq, XQ_BYTES);
        coro__free_aligned(s, p, sizeof *p);
    }
    if (s->xq_tab)
        coro__free(s, s->xq_tab, CORO__XQ_MAX * sizeof *s->xq_tab);
    s->xq_tab = NULL;
    pthread_mutex_destroy(&fr->lock);
    coro__free(s, fr, sizeof *fr + (size_t)fr->npools * sizeof(struct fpool *));
    s->frames = NULL;
    pthread_mutex_lock(&g_lock);
    g_finishing--;
    map_release();
    pthread_mutex_unlock(&g_lock);
}

size_t coro__frames_held(coro_sched_t *s)
{
    return s->frames ? __atomic_load_n(&s->frames->held, __ATOMIC_RELAXED) : 0;
}

/* ---- a plain thread's submission ring ---------------------------------------- */

struct coro__xq *coro__thread_xq(coro_sched_t *s)
{
    struct coro__frames *fr = s->frames;
    struct fpool *p = fr ? tc_get(fr, true) : NULL;

    if (!p)
        return NULL;
    if (CORO__LIKELY(p->xq != NULL))
        return p->xq;
    /* the table of rings by index (sched/worker.c RINGS), made once */
    struct coro__xq **tab = __atomic_load_n(&s->xq_tab, __ATOMIC_ACQUIRE);
    if (!tab) {
        struct coro__xq **t = coro__alloc(s, CORO__XQ_MAX * sizeof *t);
        if (!t)
            return NULL;
        memset(t, 0, CORO__XQ_MAX * sizeof *t);
        /* acq_rel: publishes the zeroed table / acquires the winner's */
        if (__atomic_compare_exchange_n(&s->xq_tab, &tab, t, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            tab = t;
        else
            coro__free(s, t, CORO__XQ_MAX * sizeof *t);
    }
    /* relaxed: a counter; past the limit the thread uses the inboxes */
    if (__atomic_load_n(&s->nxq, __ATOMIC_RELAXED) >= CORO__XQ_MAX)
        return NULL;
    struct coro__xq *q = coro__alloc_aligned(s, XQ_BYTES);
    if (!q)
        return NULL;
    uint32_t idx = __atomic_fetch_add(&s->nxq, 1, __ATOMIC_RELAXED);
    if (idx >= CORO__XQ_MAX) {
        coro__free_aligned(s, q, XQ_BYTES);
        return NULL;
    }
    coro__lq_init(&q->q, q->buf, CORO__XQ_SIZE);
    q->idx = idx;
    /* release: the ring's initialisation before a worker that finds its
     * bit (set only after this, by its producer) reads the entry */
    __atomic_store_n(&tab[idx], q, __ATOMIC_RELEASE);
    struct coro__xq *h = __atomic_load_n(&s->xqs, __ATOMIC_RELAXED);
    do
        q->next = h;
    /* release: the ring's initialisation before workers reach it */
    while (!__atomic_compare_exchange_n(&s->xqs, &h, q, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    p->xq = q;
    return q;
}

/* ---- the public calls -------------------------------------------------------------- */

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
        sl = big_get(fr, my_pool(fr, true), total, size);
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
            memset(b, 0, size);
            /* relaxed: as the slow path's */
            __atomic_store_n(&sl->st[i], B_ALLOC, __ATOMIC_RELAXED);
            coro__fresh.frame = b;      /* FRESH */
            coro__fresh.st = &sl->st[i];
            return b;
        }
    }
    return frame_alloc_slow(s, size);
}

/* give back block b (state already checked) */
static void release_block(struct slab *sl, void *b)
{
    if (sl->big) {
        big_release(sl);
        return;
    }
    struct fpool *p = my_pool(sl->fr, false);
    if (p == sl->pool && !sl->det)
        pool_free_local(p, sl, b);
    else
        free_remote(outbox_of(sl->fr, p), sl, b);
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
static inline void release_spawned(struct slab *sl, uint32_t i, void *b)
{
    if (CORO__UNLIKELY(__atomic_load_n(&sl->st[i], __ATOMIC_RELAXED) != B_SPAWNED)) {
        fprintf(stderr, "corokit: pool frame %p given back twice\n", b);
        abort();
    }
    __atomic_store_n(&sl->st[i], B_FREE, __ATOMIC_RELAXED);
    if (sl->big) {
        big_release(sl);
        return;
    }
    /* pool_free_local, with the index known */
    struct fpool *p = sl->pool;
    *(uint32_t *)b = sl->free;
    sl->free = i + 1;
    sl->used--;
    if (sl != p->c[sl->cls].cur)
        slab_gained(p, sl);
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
        free_remote(outbox_of(sl->fr, mine), sl, b);
        return;
    }
    release_spawned(sl, i, b);
}

void coro__frame_release(const coro_t *co)
{
    struct coro__worker *w = coro__tls_worker;

    /* the fast path: a small slab's frame of the calling worker's own
     * pool (the job ran where it was spawned) */
    if (CORO__LIKELY((co->flags & CORO__FL_SMALL) && w)) {
        struct slab *sl = (struct slab *)((uintptr_t)co & ~(uintptr_t)(SLAB_SIZE - 1));
        struct coro__frames *fr = sl->fr;
        if (CORO__LIKELY(w->s == fr->s && sl->pool == fr->wp[w->idx] && !sl->det)) {
            uint64_t off = (uint64_t)((uintptr_t)co - (uintptr_t)sl - HDR_SIZE);
            uint32_t i = (uint32_t)((off * sl->recip) >> 32);
            release_spawned(sl, i, block_at(sl, i));
            return;
        }
    }
    frame_release_slow(co);
}
