/* SPDX-License-Identifier: MIT */
/* coro_sched_stats and coro_sched_worker_stats: the workers' counters,
 * read racily (relaxed) while they run.  Layer 5 (the runtime). */
#include <string.h>

#include "rt/rt.h"

/* ---- stats ------------------------------------------------------------------------ */

static void worker_stats(struct coro__worker *w, coro_worker_stats_t *o)
{
    memset(o, 0, sizeof *o);
    o->cpu = w->cpu;
    o->pinned = __atomic_load_n(&w->pinned, __ATOMIC_RELAXED);
    o->jobs_run = __atomic_load_n(&w->n_run, __ATOMIC_RELAXED);
    o->steals = __atomic_load_n(&w->n_steals, __ATOMIC_RELAXED);
    o->stolen = __atomic_load_n(&w->n_stolen, __ATOMIC_RELAXED);
    o->parks = __atomic_load_n(&w->n_parks, __ATOMIC_RELAXED);
    o->wakeups = __atomic_load_n(&w->n_wakeups, __ATOMIC_RELAXED);
    o->io_wakeups = __atomic_load_n(&w->n_io, __ATOMIC_RELAXED);
    o->queue_depth = coro__worker_depth(w);
    o->stalls = __atomic_load_n(&w->n_stalls, __ATOMIC_RELAXED);
}

int coro_sched_stats(const coro_sched_t *cs, coro_sched_stats_t *out)
{
    coro_sched_t *s = (coro_sched_t *)cs;

    if (!s || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    out->workers = s->nslots;
    out->histograms = s->hist;
    out->live_jobs = __atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED;
    for (int i = 0; i < s->nall && s->nworkers; i++)    /* approximate while running */
        out->live_jobs -= __atomic_load_n(&s->w[i]->spare, __ATOMIC_RELAXED);
    struct coro__affinity_class *any = coro__affinity_get(s, 0);
    for (int p = 0; p < CORO__NPRIO; p++)
        out->global_depth += coro__sharedq_size(&any->q[p]);
    /* the plain threads' submission rings count as the injection queue
     * (acquire: pairs with coro__thread_subring's release CAS) */
    for (struct coro__subring *x = __atomic_load_n(&s->subrings, __ATOMIC_ACQUIRE); x; x = x->next)
        out->global_depth += coro__localq_size(&x->q);
    /* the caller's seat too (w[nslots], sched/seat.c) */
    for (int i = 0; i < s->nall; i++) {
        struct coro__worker *w = s->w[i];
        coro_worker_stats_t o;
        worker_stats(w, &o);
        out->jobs_run += o.jobs_run;
        out->steals += o.steals;
        out->stolen += o.stolen;
        out->parks += o.parks;
        out->wakeups += o.wakeups;
        out->io_wakeups += o.io_wakeups;
        out->queue_depth += o.queue_depth;
        out->stalls += o.stalls;
        if (!s->hist)
            continue;
        /* owner-only counters, read racily (relaxed) */
        for (int b = 0; b < CORO_HIST_BUCKETS; b++) {
            for (int p = 0; p < CORO__NPRIO; p++)
                out->hist_ready[p][b] += __atomic_load_n(&w->h_ready[p][b], __ATOMIC_RELAXED);
            out->hist_step[b] += __atomic_load_n(&w->h_step[b], __ATOMIC_RELAXED);
            out->hist_io[b] += __atomic_load_n(&w->h_io[b], __ATOMIC_RELAXED);
        }
    }
    return 0;
}

int coro_sched_worker_stats(const coro_sched_t *cs, int i, coro_worker_stats_t *out)
{
    if (!cs || !out)
        return -EINVAL;
    /* the workers only: the caller's seat has no index of its own (its
     * counters are in coro_sched_stats' totals) */
    if (i < 0 || i >= cs->nslots)
        return -ERANGE;
    worker_stats(cs->w[i], out);
    return 0;
}
