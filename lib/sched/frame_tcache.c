/* SPDX-License-Identifier: MIT */
/* Thread caches: the pool of a plain thread (not a worker) that allocates
 * pool frames, made on its first allocation, parked at its exit, adopted
 * by the next thread.
 *
 * LIFETIME.  Slabs and pools live until coro_sched_destroy, which gives
 * every slab back (the pools' lists and the scheduler's list of big slabs
 * and thread caches reach all of them).  A plain thread's cache is made on
 * its first coro_frame_alloc for a scheduler and named in that thread's
 * TLS table (scheduler pointer + generation, so a destroyed scheduler's
 * entry is never taken for a new one at the same address).  When the
 * thread exits, a pthread key destructor collects what it can, gives empty
 * slabs back, and parks the cache on its scheduler's list of unowned
 * caches (if the scheduler is still alive: checked under coro__frame_lock
 * against the list of live schedulers); the next thread that needs a
 * cache adopts it, pending frees included.  Nothing is lost; frames freed into an
 * unowned cache wait there until it is adopted or the scheduler is
 * destroyed.
 */
#include "sched/frame_impl.h"

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
    for (struct coro__frames *f = coro__frame_live; f; f = f->gnext)
        if (f == fr && f->gen == gen)
            return true;
    return false;
}

/* owner, at thread exit or before: collect, give back empty slabs */
static void pool_trim(struct fpool *p)
{
    coro__frame_collect(p);
    coro__frame_returned_trim(p, 0);
    coro__frame_bigc_trim(p, 0);
    while (p->empty) {
        struct slab *sl = p->empty;
        p->empty = sl->next;
        p->nempty--;
        coro__frame_pool_slab_free(p, sl);
    }
    for (int i = 0; i < NCLASS; i++) {
        struct fclass *c = &p->c[i];
        if (c->cur && c->cur->used == 0) {
            coro__frame_pool_slab_free(p, c->cur);
            c->cur = NULL;
        }
    }
}

static void tc_exit(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&coro__frame_lock);
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
    pthread_mutex_unlock(&coro__frame_lock);
}

static void tc_key_make(void)
{
    tc_key_ok = pthread_key_create(&tc_key, tc_exit) == 0;
}

struct fpool *coro__frame_tc_get(struct coro__frames *fr, bool create)
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
    pthread_mutex_lock(&coro__frame_lock);
    for (int i = 0; i < TC_SLOTS && !e; i++)
        if (!tc[i].fr || !fr_alive(tc[i].fr, tc[i].gen))
            e = &tc[i];
    pthread_mutex_unlock(&coro__frame_lock);
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
