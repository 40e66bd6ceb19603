/* SPDX-License-Identifier: MIT */
/* Looking for work: the order in which a worker looks at the queues it may
 * take from, the other workers' queues apart (sched/steal.c).
 *
 * QUEUES.  A job lives in exactly one queue while READY:
 *   - "any CPU" jobs (affinity class 0): a worker's LIFO slot (NORMAL jobs
 *     it spawned last), its local rings (one per priority, ck_ring SPMC:
 *     the owner pushes, owner and thieves pop), its inboxes (per priority,
 *     coro__sharedq, base/queues.c: a ring with lock-free producers, plus an
 *     overflow list: what other threads hand it: HIGH and LOW
 *     jobs, and NORMAL ones when a submission ring is full), a plain
 *     thread's submission ring (NORMAL jobs it spawned or woke: ck_ring
 *     SPMC, that thread pushes, workers pop; struct coro__subring), or the
 *     global injection queue (= class 0's MPMC queues);
 *   - jobs of a narrower class: that class's per-priority MPMC queues, which
 *     only the workers the class allows look at.  They are never in a
 *     local ring, an inbox or a LIFO slot, so a thief never sees a job it
 *     may not run: it never has to dequeue one and put it back.
 *
 * LOOKING FOR WORK (coro__find_work), per priority level HIGH, NORMAL, LOW:
 * LIFO slot (NORMAL, at most CORO__LIFO_MAX runs in a row while other
 * jobs wait), local ring, inbox, served class queues, global queue, the
 * submission rings (NORMAL: half of the first one on the map of rings
 * that hold work, one CAS: RINGS; a worker fed by a thread's stream of
 * jobs first waits briefly for a batch: BATCHES there); HIGH and LOW only while some are
 * counted where the worker looks (PRIORITIES);
 * every CORO__GLOBAL_INTERVAL (61) ticks the global queue, the submission
 * rings, the class queues and the inbox are looked at first (a ring's
 * batch then goes behind the local ring's jobs: one thread's jobs keep
 * their order).  With nothing else found, the LIFO slot again, before
 * stealing.  A yielding job (class 0) goes to its worker's yield ring, looked
 * at last, and first every 61 ticks (tokio defers a yielding task until
 * its next driver poll, likewise): behind everything the worker has, so a
 * job that keeps yielding cannot starve the others, and never more than 61
 * picks away.  A job of a narrower class yields to the back of its class
 * queue.  Starvation
 * bound: after 32 HIGH picks in a row NORMAL is looked at first once, after
 * 128 picks above LOW in a row LOW is (CORO__STARVE_NORMAL,
 * CORO__STARVE_LOW); so under a flood of HIGH, NORMAL gets at least 1 pick
 * in 33 and LOW 1 in 129.  Then it steals (sched/steal.c).
 */
#include "sched/worker.h"

/* the class queues of the n classes we serve (pop_classes) */
static __attribute__((noinline)) coro_t *pop_served(struct coro__worker *w, int pi, uint32_t n)
{
    coro_sched_t *s = w->s;
    /* acquire: the array's copied entries (it grows, sched/affinity.c SERVED) */
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);

    for (uint32_t i = 0; i < n; i++) {
        struct coro__affinity_class *c = coro__affinity_get(s, served[i]);
        if (coro__sharedq_size(&c->q[pi]) == 0)
            continue;
        coro_t *j = class_pop(c, pi);
        if (j)
            return j;
    }
    return NULL;
}

/* the narrower classes' queues: inline, as most workers serve none */
static inline coro_t *pop_classes(struct coro__worker *w, int pi)
{
    /* acquire: the served[] entries before nserved were written first */
    uint32_t n = __atomic_load_n(&w->nserved, __ATOMIC_ACQUIRE);

    return CORO__LIKELY(n == 0) ? NULL : pop_served(w, pi, n);
}

/* jobs from the plain threads' submission rings (NORMAL only): half of
 * the first ring with any, the first to run, the rest to our local ring
 * behind what it holds; off: the periodic look (coro__pop_subring_map) */
static inline coro_t *pop_subring(struct coro__worker *w, bool keep_first, bool off)
{
    coro_sched_t *s = w->s;
    unsigned got = 0;
    /* acquire: the words' bits, then the entries (RINGS) */
    uint64_t top = __atomic_load_n(&s->subring_top, __ATOMIC_ACQUIRE);

    if (CORO__LIKELY(top == 0))
        return NULL;
    return coro__pop_subring_map(w, top, keep_first, off, &got);
}

/* the periodic look at the submission rings (global_first): with jobs in
 * our local ring, which may hold earlier jobs of the same ring, the batch
 * goes behind them and none runs now - a thread's jobs keep their order,
 * and they wait at most for the ring's jobs ahead of them.  The quiet
 * rings too (RINGS) */
static coro_t *pop_subring_fair(struct coro__worker *w)
{
    bool keep = coro__localq_size(&w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)]) == 0;
    coro_t *j = pop_subring(w, keep, true);

    /* relaxed: a hint (the quiet map is looked at again at every park's
     * last look, after its membarrier) */
    if (!j && CORO__UNLIKELY(__atomic_load_n(&w->s->subring_qtop, __ATOMIC_RELAXED)))
        j = coro__pop_subring_quiet(w, keep);
    return j;
}

coro_t *coro__pop_level(struct coro__worker *w, int pi, bool global_first)
{
    coro_sched_t *s = w->s;
    struct coro__affinity_class *any = coro__affinity_get(s, 0);
    coro_t *j;

    bool normal = pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL);
    if (global_first) {
        if ((j = class_pop(any, pi)) || (normal && (j = pop_subring_fair(w))) ||
            (j = pop_classes(w, pi)) || (j = own_sharedq_pop(w, &w->inbox[pi], pi)) ||
            (j = own_localq_pop(w, &w->yielded[pi], pi)))
            goto other;
    }
    if (normal && w->lifo_streak < CORO__LIFO_MAX &&
        __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) &&
        /* acq_rel: pairs with the exchange that put the job there */
        (j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL))) {
        w->lifo_streak++;
        return j;
    }
    if ((j = own_localq_pop(w, &w->local[pi], pi)) || (j = own_sharedq_pop(w, &w->inbox[pi], pi)) ||
        (j = pop_classes(w, pi)) || (j = class_pop(any, pi)) ||
        (normal && (j = pop_subring(w, true, false))) || (j = own_localq_pop(w, &w->yielded[pi], pi)))
        goto other;
    return NULL;
other:
    /* a pick from elsewhere ends the LIFO streak.  Nothing found leaves
     * it as it is: at the bound, find_work_ then takes the slot before it
     * steals (resetting the streak here made every fourth job of a chain
     * go through a failed search, an epoll look, and the wake-up of a
     * parked worker by the "last searcher") */
    w->lifo_streak = 0;
    return j;
}

static coro_t *find_work_(struct coro__worker *w, bool limit_steal)
{
    coro_t *j = find_own_(w, limit_steal);

    return found_(w, j ? j : find_others_(w, limit_steal));
}

coro_t *coro__find_own(struct coro__worker *w)
{
    return find_own_(w, true);
}

coro_t *coro__find_work(struct coro__worker *w)
{
    coro_t *j = find_work_(w, true);
    if (!j)
        coro__trace_idle(w);
    return j;
}

unsigned coro__worker_depth(struct coro__worker *w)
{
    unsigned n = __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) ? 1 : 0;
    for (int pi = 0; pi < CORO__NPRIO; pi++)
        n += coro__localq_size(&w->local[pi]) + coro__sharedq_size(&w->inbox[pi]) +
             coro__localq_size(&w->yielded[pi]);
    return n;
}
