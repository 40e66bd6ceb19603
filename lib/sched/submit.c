/* SPDX-License-Identifier: MIT */
/* Submitting a READY job: where a job goes when it is spawned, woken or
 * yields - the LIFO slot, the local, yield and class rings, a plain
 * thread's submission ring, an inbox, the global queue - and the notify
 * that follows each push (sched/wake.c).  The queues themselves are listed
 * in sched/find.c, QUEUES.
 */
#include "sched/frame.h"
#include "sched/worker.h"

/* round-robin position of a plain thread's submissions (its own: a shared
 * counter is one more contended RMW per spawn) */
static __thread uint32_t tls_rr;
/* this thread's LENT CPUS count (sched/sched.h): its words' values, which
 * start at an address of the thread's so that two threads rarely write
 * the same ones */
static __thread uint32_t tls_lent;

/* a thread outside the workers submits from its CPU: change that CPU's
 * word, for a worker whose yield there came back late (LENT CPUS) */
static inline __attribute__((always_inline)) void lent_mark(coro_sched_t *s)
{
    int cpu = sched_getcpu();
    if (CORO__UNLIKELY(tls_lent == 0))
        tls_lent = (uint32_t)(uintptr_t)&tls_lent;
    /* relaxed: a hint (base/spin.c, LATE YIELDS) */
    __atomic_store_n(&s->lent[(unsigned)(cpu < 0 ? 0 : cpu) % CORO__LENT_SLOTS].v, ++tls_lent,
                     __ATOMIC_RELAXED);
}

void coro__push_global(coro_sched_t *s, coro_t *job)
{
    struct coro__affinity_class *any = coro__affinity_get(s, 0);
    int pi = CORO__PRIO_IDX(job->prio);

    prio_add(&any->nprio, pi, 1);
    coro__sharedq_push(&any->q[pi], job);
}

/* local ring full: move half of it and job to the global queue, under one
 * lock (tokio).  One pop per job: taking the half with one CAS
 * (coro__localq_pop_batch, as spill_half does) measured worse on
 * spawn_many_local (docs/benchmarks.md; not explained - the batch CAS
 * races the thief's steals of the same ring) */
static void local_overflow(struct coro__worker *w, int pi, coro_t *job)
{
    coro_t *batch[CORO__LOCAL_SIZE / 2 + 1];
    unsigned n = 0;

    while (n < CORO__LOCAL_SIZE / 2 && (batch[n] = coro__localq_pop(&w->local[pi])))
        n++;
    batch[n++] = job;
    struct coro__affinity_class *any = coro__affinity_get(w->s, 0);
    prio_add(&any->nprio, pi, (int)n);
    coro__sharedq_push_batch(&any->q[pi], batch, n);
    prio_add(&w->nprio, pi, -(int)(n - 1));
}

/* a plain thread's submission ring is full: move its older half to the
 * global queue with one CAS (the thread takes from its own ring as a
 * worker would) and one lock.  Workers look at the global queue before
 * the rings, so the older half still runs first */
static void spill_half(coro_sched_t *s, struct coro__localq *q, int pi)
{
    coro_t *batch[CORO__XQ_SIZE / 2];
    unsigned n = coro__localq_pop_batch(q, batch, CORO__XQ_SIZE / 2);

    if (n)
        coro__sharedq_push_batch(&coro__affinity_get(s, 0)->q[pi], batch, n);
}

/* a job of an affinity class: its class's queue, and a worker the class
 * allows woken for it */
static inline __attribute__((always_inline)) void submit_class(coro_sched_t *s, coro_t *job,
                                                               int pi)
{
    struct coro__affinity_class *c = coro__affinity_get(s, job->cls);
    prio_add(&c->nprio, pi, 1);         /* PRIORITIES */
    coro__sharedq_push(&c->q[pi], job);
    notify(s, c->wmask, false);
}

/* a step's first NORMAL hand-off on this worker: into the LIFO slot.
 * Returns the job it displaced, for the back of the local ring, or NULL
 * when nothing is left to queue (and no one to wake) */
static inline __attribute__((always_inline)) coro_t *submit_lifo(struct coro__worker *w,
                                                                 coro_t *job)
{
    /* the first job a step hands off goes to the LIFO slot; the
     * one it displaces to the back of the local ring.  The step's
     * later ones go to the ring behind it: a burst keeps its order
     * and pays one exchange, not one per job (tokio exchanges
     * every time; its slot is not stealable, a plain store) */
    w->lifo_run = w->n_run;
    /* Only this worker fills the slot; thieves and this worker
     * only empty it.  Seen empty, it stays empty until our store:
     * a plain release store fills it (no locked instruction; the
     * chain's and a woken parent's usual case).  Seen full, a
     * thief may take the job meanwhile: the exchange says which
     * of us has it.  relaxed load: a stale "full" only costs the
     * exchange; a stale "empty" cannot be (only we fill it;
     * tools/model/lifo.pml).
     * release / acq_rel: publishes the job's fields to a thief
     * that takes the slot, and acquires the displaced job's */
    if (!__atomic_load_n(&w->lifo, __ATOMIC_RELAXED)) {
        __atomic_store_n(&w->lifo, job, __ATOMIC_RELEASE);
        return NULL;    /* this worker runs it next: no one to wake (tokio) */
    }
    job = __atomic_exchange_n(&w->lifo, job, __ATOMIC_ACQ_REL);
    return job;         /* NULL: a thief took the old one: as above */
}

/* submitted by one of s's own workers, w: the yielded ring, the LIFO
 * slot or the local ring.  True when the push needs a notify (false: it
 * filled the LIFO slot, which this worker runs next) */
static inline __attribute__((always_inline)) bool own_push(coro_sched_t *s,
                                                           struct coro__worker *w,
                                                           coro_t *job, int pi, bool yield)
{
    if (yield) {
        /* the back of everything this worker has (tokio defers a
         * yielding task the same way); full: the global queue */
        if (!own_localq_push(w, &w->yielded[pi], pi, job))
            coro__push_global(s, job);
        return true;
    }
    if (pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL) && w->lifo_run != w->n_run) {
        if (!(job = submit_lifo(w, job)))
            return false;
        pi = CORO__PRIO_IDX(job->prio);
    }
    if (!own_localq_push(w, &w->local[pi], pi, job))
        local_overflow(w, pi, job);
    return true;
}

/* the notify after a push of one of s's own workers, w */
static inline __attribute__((always_inline)) void own_notify(coro_sched_t *s,
                                                             struct coro__worker *w)
{
    /* with one worker, the caller's seat has it for a thief */
    if (s->nworkers > 1 || w->idx == s->nslots)
        notify(s, s->all_wmask, true);
}

static inline __attribute__((always_inline)) void submit_own(coro_sched_t *s,
                                                             struct coro__worker *w,
                                                             coro_t *job, int pi, bool yield)
{
    if (own_push(s, w, job, pi, yield))
        own_notify(s, w);
}

/* from outside the workers, a NORMAL job: the thread's own submission
 * ring.  Returns false when the thread has none or it stays full */
static inline __attribute__((always_inline)) bool submit_subring(coro_sched_t *s, coro_t *job,
                                                                 int pi)
{
    struct coro__subring *subring = coro__thread_subring(s);
    bool pushed = subring && coro__localq_push(&subring->q, job);
    if (subring && !pushed) {
        /* full: its older half to the global queue (one inbox lock
         * per job past the ring is a large share of a spawning thread) */
        spill_half(s, &subring->q, pi);
        pushed = coro__localq_push(&subring->q, job);
    }
    if (!pushed)
        return false;
    notify_fence(s);
    /* relaxed: after the fence (RINGS); 1 on every push of a
     * burst, one read of a line that workers rarely write */
    if (CORO__UNLIKELY(!__atomic_load_n(&subring->listed, __ATOMIC_RELAXED)))
        subring_list(s, subring);
    /* any = false: wake an idle worker even when one searches,
     * as the inboxes' hand-off to an idle worker did */
    coro__notify_fenced(s, s->all_wmask, false);
    return true;
}

/* from outside the workers, to an inbox: an idle worker's, else the next
 * one round-robin, and someone woken for it */
static inline __attribute__((always_inline)) void submit_inbox(coro_sched_t *s, coro_t *job,
                                                               int pi)
{
    /* hand it to an idle worker if there is one (Coop), else round-robin,
     * then make sure someone is awake for it */
    int idx = coro__claim_idle(s, s->all_wmask);
    if (idx >= 0) {
        prio_add(&s->w[idx]->nprio, pi, 1);
        coro__sharedq_push(&s->w[idx]->inbox[pi], job);
        coro__unpark(s, idx);
        return;
    }
    idx = tls_rr < (uint32_t)s->nslots ? (int)tls_rr : 0;
    tls_rr = (uint32_t)idx + 1;
    prio_add(&s->w[idx]->nprio, pi, 1);
    coro__sharedq_push(&s->w[idx]->inbox[pi], job);
    /* thieves skip parked workers (STEALING): if this one parked
     * meanwhile and its last look missed the job, it is the one to wake
     * (store-then-load against its bit-set then look, as in notify) */
    notify_fence(s);
    /* relaxed: after the fence; the RMW picks one claimer */
    if ((__atomic_load_n(&s->idle[coro__bit_word((size_t)idx)], __ATOMIC_RELAXED) &
         coro__bit((size_t)idx)) &&
        coro__claim_one(s, idx)) {
        coro__unpark(s, idx);
        return;
    }
    coro__notify_fenced(s, s->all_wmask, true);
}

void coro__submit(coro_sched_t *s, coro_t *job, bool yield)
{
    struct coro__worker *w = coro__tls_worker;
    int pi = CORO__PRIO_IDX(job->prio);

    if (CORO__UNLIKELY(s->hist))
        /* the ready stamp for the histograms (diag_begin); coro_t.reserved,
         * the job is ours until the push below publishes it */
        job->reserved = (uint32_t)((uint64_t)coro__now() >> CORO__READY_SHIFT);
    if (job->cls != 0) {
        submit_class(s, job, pi);
        return;
    }
    if (w && w->s == s) {
        submit_own(s, w, job, pi, yield);
        return;
    }
    /* from outside the workers.  A NORMAL job goes to the thread's own
     * submission ring: one lock-free push, no mutex (spawn_many_remote
     * spent half its spawning thread's time in the inbox's); the workers
     * take it as they take the global queue's, and an idle one is woken
     * for it.  HIGH and LOW jobs, and a full ring: an inbox,
     * looked at by its worker at that priority at every pick. */
    lent_mark(s);
    if (pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL) && submit_subring(s, job, pi))
        return;
    submit_inbox(s, job, pi);
}

/* WOKEN BATCHES (sched/sched.h): the jobs of b from `from` on, queued
 * as coro__submit queues a wake-up of w's, with one notify for them all */
static void submit_woken_from(struct coro__worker *w, struct coro__woken *b, int from)
{
    coro_sched_t *s = w->s;
    bool wake = false;

    for (int i = from; i < b->n; i++) {
        coro_t *job = b->job[i];
        int pi = CORO__PRIO_IDX(job->prio);
        if (job->cls != 0)
            submit_class(s, job, pi);
        else
            wake |= own_push(s, w, job, pi, false);
    }
    if (wake)
        own_notify(s, w);
}

coro_t *coro__submit_woken(struct coro__worker *w, struct coro__woken *b, bool run_first)
{
    coro_t *first = b->job[0];

    if (CORO__UNLIKELY(w->s->hist)) {
        /* the ready stamps (coro__submit's), the first's included */
        uint32_t t = (uint32_t)((uint64_t)coro__now() >> CORO__READY_SHIFT);
        for (int i = 0; i < b->n; i++)
            b->job[i]->reserved = t;
    }
    /* a class-0 NORMAL job first runs next, on this worker, from here:
     * private until then as a job in a step's hands is (no queue, no
     * atomic, nobody to wake).  Any other first job queues with the rest,
     * to be picked in priority order (PRIORITIES) */
    if (!run_first || first->cls != 0 || first->prio != CORO_PRIO_NORMAL) {
        submit_woken_from(w, b, 0);
        return NULL;
    }
    if (b->n > 1)
        submit_woken_from(w, b, 1);
    /* a HIGH or LOW job woken with it, or queued before, goes first: the
     * first one then queues as any other */
    if (CORO__UNLIKELY(prio_queued(w))) {
        submit_own(w->s, w, first, CORO__PRIO_IDX(CORO_PRIO_NORMAL), false);
        return NULL;
    }
    return first;
}

void coro__submit_spawned(coro_sched_t *s, coro_t *job)
{
    struct coro__worker *w = coro__tls_worker;

    /* submit_'s usual case first, without its slow paths' register saves:
     * a step's first hand-off of a plain NORMAL job on this worker, into
     * an empty LIFO slot (a chain's next link, a fork's first child) */
    if (CORO__LIKELY(w && w->s == s && job->cls == 0 && job->prio == CORO_PRIO_NORMAL &&
                     coro__submit_spawned_lifo(w, s, job)))
        return;
    coro__submit(s, job, false);
}

/* give this worker's spare units of s->live back but `keep` (coro__finish
 * and coro_spawn count them in w->spare; rt/runtime.c SHUTDOWN) */
void coro__flush_live(struct coro__worker *w, uint32_t keep)
{
    coro_sched_t *s = w->s;
    uint32_t n = w->spare;

    if (n <= keep)
        return;
    n -= keep;
    /* owner-only; atomic store for coro_sched_stats' racy read */
    __atomic_store_n(&w->spare, keep, __ATOMIC_RELAXED);
    coro__live_sub(&s->live, n);
}

/* the one way a suspended job becomes READY (sched/sched.h): false when
 * a coro_cancel reads its awaitable and will queue it (CQUEUE) */
static inline __attribute__((always_inline)) bool make_ready(coro_t *job, intptr_t res)
{
    job->top->result = res;
    coro__trace_wake(job);
    /* SUSPENDED -> READY, keeping the flags (the waker owns the job now);
     * with CQUEUE when a coro_cancel reads its awaitable (CREAD): the
     * canceller queues it once done (sched/sched.h).  release: the result
     * is visible to the worker that acquires RUNNING, or to the canceller.
     * relaxed load: the CAS decides */
    uint32_t old = __atomic_load_n(&job->state, __ATOMIC_RELAXED), nw;
    do
        nw = (old - (CORO__S_SUSPENDED - CORO__S_READY)) | (old & CORO__F_CREAD ? CORO__F_CQUEUE : 0);
    while (!__atomic_compare_exchange_n(&job->state, &old, nw, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
    return !CORO__UNLIKELY(nw & CORO__F_CQUEUE);
}

void coro__wake_into(struct coro__woken *b, coro_t *job, intptr_t res)
{
    if (!b || b->n == CORO__WOKEN_MAX || job->sched != b->s) {
        coro__wake(job, res);   /* any thread, a full batch, another scheduler */
        return;
    }
    if (make_ready(job, res))
        b->job[b->n++] = job;   /* the caller, a worker of s, queues it */
}

void coro__wake(coro_t *job, intptr_t res)
{
    coro_sched_t *s = job->sched;
    struct coro__worker *w = coro__tls_worker;

    if (CORO__LIKELY(w && w->s == s)) {
        /* s's own threads outlive s's jobs */
        if (make_ready(job, res))
            coro__submit(s, job, false);
        return;
    }
    /* a waker that is not s's own (a plain thread, another scheduler's
     * worker) is still inside s after the push that lets the job run and
     * end: it holds s pinned until it leaves, and destroy waits for it
     * (sched/pin.c) */
    int tok = coro__pin_owned(s);
    if (make_ready(job, res))
        coro__submit(s, job, false);
    coro__unpin(tok);
}
