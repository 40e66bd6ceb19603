/* SPDX-License-Identifier: MIT */
/* The lot's part of coro_sched_dump (lib/rt/diag.c): the jobs parked in
 * its buckets and joiner registries, each read under the lock that keeps
 * it suspended, with the holder of what it waits for. */
#include <pthread.h>

#include "wait/parklot_impl.h"
#include "sched/trace.h"

/* the jobs of s in the lot's buckets it parked in and in its joiner
 * registry, each under the lock that keeps them suspended */
int coro__parklot_dump(coro_sched_t *s, struct coro__dump *d)
{
    struct coro__parklot_sched *ls = s->parklot;
    int64_t now = coro__now();
    int n = 0;

    for (unsigned k = 0; k < CORO__PARKED_WORDS; k++) {
        /* relaxed: a bit set after this load belongs to a later park */
        uint64_t bits = __atomic_load_n(&ls->parked[k], __ATOMIC_RELAXED);
        while (bits) {
            unsigned i = k * 64 + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            struct coro__parklot_bucket *b = coro__parklot_bucket_at(i);
            pthread_mutex_lock(&b->lock);
            for (coro_t *w = b->head; w; w = w->next) {
                if ((w->flags & (CORO__FL_THREAD | CORO__FL_PROXY)) || w->sched != s)
                    continue;
                const coro_await_t *aw = &w->top->aw;
                const char *kind = aw->ops ? aw->ops->name : "?";
                /* who holds what it waits for (a mutex, a lock): its state
                 * is under this bucket lock too */
                const struct coro__held_ops *h = coro__held_ops_of(aw);
                char held[96] = "";
                if (h && h->holder)
                    h->holder(aw, held, sizeof held);
                if (w->flags & CORO__FL_TIMED) {
                    /* bucket lock, then the timer's: the order of coro__parklot_timer_add */
                    int64_t dl = w->wait_slot ? coro__parklot_timer_deadline(w) : now;
                    coro__dump_job(d, w, "%s %p (parking lot)%s, timer %.3f ms left", kind,
                                   w->wait_obj, held, (double)(dl - now) / 1e6);
                } else {
                    coro__dump_job(d, w, "%s %p (parking lot)%s", kind, w->wait_obj, held);
                }
                n++;
            }
            pthread_mutex_unlock(&b->lock);
        }
    }
    for (int i = 0; i < ls->nreg; i++) {
        struct joiner_registry *r = &ls->reg[i];
        coro__joiner_registry_lock(r);
        for (coro_t *w = r->head; w; w = w->next) {
            coro__dump_job(d, w, "done of job %p (coro_done)", w->top->aw.arg[0].p);
            n++;
        }
        coro__joiner_registry_unlock(r);
    }
    return n;
}
