/* SPDX-License-Identifier: MIT */
/* Big slabs: a frame above the largest size class has a slab of its own,
 * kept by the pool that allocated it for the next frame of its size.
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
 * kept, so destroy reaches them all.
 */
#include "sched/frame_impl.h"

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

struct slab *coro__frame_big_get(struct coro__frames *fr, struct fpool *p, size_t size,
                                 size_t fsize)
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
    sl = coro__frame_slab_new(fr, NULL, size, (uint32_t)(fsize > UINT32_MAX ? 0 : fsize), 0, true);
    if (sl)
        sl->pool = p;
    return sl;
}

/* give back big slab sl (its block state already FREE); any thread */
void coro__frame_big_release(struct slab *sl)
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
    coro__frame_slab_free(sl);
}

/* owner: give back the big slabs p keeps beyond keep */
void coro__frame_bigc_trim(struct fpool *p, uint32_t keep)
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
        coro__frame_slab_free(sl);
    }
}
