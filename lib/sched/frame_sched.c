/* SPDX-License-Identifier: MIT */
/* A scheduler's frame pools: one per worker slot, made at create and
 * registered among the live schedulers' (lib/sched/frame_map.c); trimmed
 * when a worker parks; every slab given back at destroy (the pools'
 * lists, the big and detached lists and the thread caches reach all of
 * them), and the region map's leaves with the last scheduler's.
 *
 * IDLE.  A worker about to park keeps the empty slabs its next active
 * phase is likely to draw on, and no more: the slabs that stayed on its
 * empty list through the whole phase that just ended (the fewest it held
 * since it last parked: the list is a stack, so those were never taken)
 * go back beyond CORO__FRAME_EMPTY_IDLE, and in any case no more than
 * CORO__FRAME_EMPTY_PARK stay.  A load that draws the same slabs phase
 * after phase (bursts, a spawning loop between parks) keeps them up to
 * that cap and reaches the allocator for none; a worker that parks for
 * good holds at most CORO__FRAME_EMPTY_PARK empty slabs, plus the current
 * slab of each class it allocated from.
 *
 * TRIM.  A plain thread has no idle hook: it may spawn a burst and never
 * call corokit again, and the empty slabs its cache keeps for its next
 * burst (its returned stack, lib/sched/frame_slab.c RETURNED) would wait
 * for it for good.  So whoever pushes slabs there lists the cache on its
 * scheduler's trim list (coro__frame_trim_note, in frame_slab.c: a flag,
 * trim_on, keeps it there once; a Treiber stack of pushes and whole
 * takes, no ABA), and a worker about to park takes the list and gives
 * back every slab on those stacks beyond CORO__FRAME_THREAD_KEEP - once
 * the thread's burst is over: while a detached slab of its cache still
 * has blocks out (nout), its jobs still run and their slabs come back to
 * be drawn on, and the cache is listed again for the next look (a trim
 * at every look for work in a burst, when the workers catch up with the
 * spawner, made the thread allocate its slabs again).  The last frees of
 * a burst are the workers' (the jobs finish there), and a worker looks
 * for work, and then parks, once it has run out of jobs: so a plain
 * thread's empty slabs go back at the latest when the worker that gave
 * back the last block of its last detached slab goes idle.  The trim takes the
 * stack whole, as the owner does (coro__frame_returned_trim): an owner
 * drawing on it meanwhile finds it empty and asks the allocator.  Ordering:
 * the trim clears trim_on, then exchanges the stack (acq_rel); a push
 * that the exchange did not take is a CAS after it (acq_rel), so its
 * note reads trim_on as cleared or later and lists the cache again.
 */
#include "sched/frame_impl.h"

/* TRIM: the listed thread caches' empty slabs back, beyond a few */
static void threads_trim(struct coro__frames *fr)
{
    if (!__atomic_load_n(&fr->trimq, __ATOMIC_RELAXED))
        return;
    /* acquire: pairs with the notes' release pushes */
    struct fpool *p = __atomic_exchange_n(&fr->trimq, NULL, __ATOMIC_ACQUIRE);
    while (p) {
        struct fpool *next = p->trim_next;      /* before the clear: p may be listed again */
        if (__atomic_load_n(&p->nout, __ATOMIC_RELAXED)) {
            /* its burst still runs: its slabs come back to be drawn on
             * again; listed again (trim_on stays), looked at next time */
            coro__frame_trim_relist(fr, p);
            p = next;
            continue;
        }
        /* release: the read of trim_next above before a note's push of p */
        __atomic_store_n(&p->trim_on, 0, __ATOMIC_RELEASE);
        /* (its exchange of the stack is acq_rel: the clear comes first) */
        coro__frame_returned_trim(p, CORO__FRAME_THREAD_KEEP);
        p = next;
    }
}

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
        coro__frame_pool_slab_free(p, sl);
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
        coro__frame_out_flush(&p->out[i]);
    /* what other threads gave back while we ran: the empty slabs go back
     * now, not when we next allocate from a full slab, which may be never */
    if (__atomic_load_n(&p->pending, __ATOMIC_RELAXED))
        coro__frame_collect(p);
    if (__atomic_load_n(&p->nbig, __ATOMIC_RELAXED) > CORO__FRAME_BIG_IDLE)
        coro__frame_bigc_trim(p, CORO__FRAME_BIG_IDLE);
    idle_trim(p);
    threads_trim(s->frames);
}

int coro__frames_init(coro_sched_t *s)
{
    struct coro__frames *fr =
        coro__alloc(s, sizeof *fr + (size_t)s->nall * sizeof(struct fpool *));
    if (!fr)
        return -ENOMEM;
    fr->s = s;
    fr->npools = s->nall;       /* the workers' and the caller's seat's */
    pthread_mutex_init(&fr->lock, NULL);
    for (int i = 0; i < s->nall; i++) {
        fr->wp[i] = coro__alloc_aligned(s, sizeof(struct fpool));
        if (!fr->wp[i]) {
            s->frames = fr;
            coro__frames_fini(s);
            return -ENOMEM;
        }
        fr->wp[i]->fr = fr;
    }
    pthread_mutex_lock(&coro__frame_lock);
    fr->gen = ++coro__frame_gen;
    fr->gnext = coro__frame_live;
    coro__frame_live = fr;
    pthread_mutex_unlock(&coro__frame_lock);
    s->frames = fr;
    return 0;
}

static void pool_fini(struct fpool *p)
{
    while (p->all) {
        struct slab *sl = p->all;
        p->all = sl->anext;
        coro__frame_slab_free(sl);
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
    pthread_mutex_lock(&coro__frame_lock);
    for (struct coro__frames **pp = &coro__frame_live; *pp; pp = &(*pp)->gnext)
        if (*pp == fr) {
            *pp = fr->gnext;
            break;
        }
    coro__frame_finishing++;
    pthread_mutex_unlock(&coro__frame_lock);
    while (fr->big) {
        struct slab *sl = fr->big;
        fr->big = sl->anext;
        coro__frame_slab_free(sl);
    }
    while (fr->detached) {
        struct slab *sl = fr->detached;
        fr->detached = sl->anext;
        coro__frame_slab_free(sl);
    }
    for (int i = 0; i < fr->npools; i++)
        if (fr->wp[i]) {
            pool_fini(fr->wp[i]);
            coro__free_aligned(s, fr->wp[i], sizeof(struct fpool));
        }
    for (struct fpool *p = fr->threads, *n; p; p = n) {
        n = p->tnext;
        pool_fini(p);
        if (p->subring)
            coro__free_aligned(s, p->subring, XQ_BYTES);
        coro__free_aligned(s, p, sizeof *p);
    }
    if (s->subring_tab)
        coro__free(s, s->subring_tab, CORO__XQ_MAX * sizeof *s->subring_tab);
    s->subring_tab = NULL;
    pthread_mutex_destroy(&fr->lock);
    coro__free(s, fr, sizeof *fr + (size_t)fr->npools * sizeof(struct fpool *));
    s->frames = NULL;
    pthread_mutex_lock(&coro__frame_lock);
    coro__frame_finishing--;
    coro__frame_map_release();
    pthread_mutex_unlock(&coro__frame_lock);
}

#ifdef CORO_TEST_HOOKS
size_t coro__frames_held(coro_sched_t *s)
{
    return s->frames ? __atomic_load_n(&s->frames->held, __ATOMIC_RELAXED) : 0;
}
#endif
