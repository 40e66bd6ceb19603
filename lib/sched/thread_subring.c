/* SPDX-License-Identifier: MIT */
/* A plain thread's submission ring: the ring a thread that is no worker
 * pushes the NORMAL jobs it spawns onto (sched/rings.c RINGS), made on
 * its first such spawn and kept with its thread cache
 * (lib/sched/frame_tcache.c), which outlives the thread and is adopted,
 * ring and all, by the next one.
 */
#include <string.h>

#include "sched/frame_impl.h"

struct coro__subring *coro__thread_subring(coro_sched_t *s)
{
    struct coro__frames *fr = s->frames;
    struct fpool *p = fr ? coro__frame_tc_get(fr, true) : NULL;

    if (!p)
        return NULL;
    if (CORO__LIKELY(p->subring != NULL))
        return p->subring;
    /* the table of rings by index (sched/rings.c RINGS), made once */
    struct coro__subring **tab = __atomic_load_n(&s->subring_tab, __ATOMIC_ACQUIRE);
    if (!tab) {
        struct coro__subring **t = coro__alloc(s, CORO__XQ_MAX * sizeof *t);
        if (!t)
            return NULL;
        memset(t, 0, CORO__XQ_MAX * sizeof *t);
        /* acq_rel: publishes the zeroed table / acquires the winner's */
        if (__atomic_compare_exchange_n(&s->subring_tab, &tab, t, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            tab = t;
        else
            coro__free(s, t, CORO__XQ_MAX * sizeof *t);
    }
    /* relaxed: a counter; past the limit the thread uses the inboxes */
    if (__atomic_load_n(&s->nsubrings, __ATOMIC_RELAXED) >= CORO__XQ_MAX)
        return NULL;
    struct coro__subring *q = coro__alloc_aligned(s, XQ_BYTES);
    if (!q)
        return NULL;
    uint32_t idx = __atomic_fetch_add(&s->nsubrings, 1, __ATOMIC_RELAXED);
    if (idx >= CORO__XQ_MAX) {
        coro__free_aligned(s, q, XQ_BYTES);
        return NULL;
    }
    coro__localq_init(&q->q, q->buf, CORO__XQ_SIZE);
    q->idx = idx;
    /* release: the ring's initialisation before a worker that finds its
     * bit (set only after this, by its producer) reads the entry */
    __atomic_store_n(&tab[idx], q, __ATOMIC_RELEASE);
    struct coro__subring *h = __atomic_load_n(&s->subrings, __ATOMIC_RELAXED);
    do
        q->next = h;
    /* release: the ring's initialisation before workers reach it */
    while (!__atomic_compare_exchange_n(&s->subrings, &h, q, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    p->subring = q;
    return q;
}
