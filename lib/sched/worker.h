/* SPDX-License-Identifier: MIT */
/* Private to the workers' files (lib/sched/): what they share.  The scheduler
 * is one protocol spread over files of one idea each - waking (wake.c), the
 * submission rings (rings.c), submitting (submit.c), looking for work
 * (find.c), stealing (steal.c), parking (park.c), running a job (run.c), the
 * worker thread (worker.c) - and these are the pieces more than one of them
 * uses.  The ones on the path of every pick, push or step stay static
 * inline here, so that a call crosses a file only where it was a call
 * already.  Never installed.
 *
 * The files cite each other's essays by name: QUEUES and LOOKING FOR WORK
 * (find.c); STEALING, SEARCHING and NUMA (steal.c); PARKING and WAITING IN
 * EPOLL INSTEAD (park.c); IDLE SUMMARY (wake.c); RINGS (rings.c);
 * PRIORITIES (here); BUDGET AND CANCEL, CONTINUING and JOINING INLINE
 * (run.c); IDLE, DEFERRED YIELDS, BUSY LOOKS and DUE TIMERS (worker.c);
 * THE SEAT, WHICH JOBS, STEALING, WAKES and LEAVING (seat.c: a thread in
 * coro_block_on as a worker). */
#ifndef CORO_SCHED_WORKER_H
#define CORO_SCHED_WORKER_H

#include "sched/sched.h"
#include "sched/trace.h"

/* wake.c: the idle bitmap and the wakes (all threads) */
/* bump worker idx's park epoch and wake it (futex, or its epoll_wait) */
CORO__HIDDEN void coro__unpark(coro_sched_t *s, int idx);
/* worker idx parks: counted in the summary, then its bit set (its owner) */
CORO__HIDDEN void coro__idle_set(coro_sched_t *s, int idx);
/* worker idx clears its own bit: true when it was still set (its owner) */
CORO__HIDDEN bool coro__idle_clear(coro_sched_t *s, int idx);
/* claim worker idx if its bit is set: true when this call cleared it */
CORO__HIDDEN bool coro__claim_one(coro_sched_t *s, int idx);
/* claim one parked worker among wmask: its index, or -1 */
CORO__HIDDEN int coro__claim_idle(coro_sched_t *s, const uint64_t *wmask);
/* steps b-c of the park protocol, after notify_fence */
CORO__HIDDEN void coro__notify_fenced(coro_sched_t *s, const uint64_t *wmask, bool any);
/* rings.c: the submission rings' map (workers only) */
/* a parking worker with s->use_membarrier, before its membarrier: empty rings off
 * the map, quiet in its name, noted in off[]; whether it noted any */
CORO__HIDDEN bool coro__subring_unlist_empty(coro_sched_t *s, uint64_t *off);
/* after the membarrier: the rings noted in off[] end their quiet */
CORO__HIDDEN void coro__subring_relook(coro_sched_t *s, const uint64_t *off, bool relist);
/* half of the first listed ring with jobs, from map top `top` */
CORO__HIDDEN coro_t *coro__pop_subring_map(struct coro__worker *w, uint64_t top, bool keep_first,
                                      bool off, unsigned *got);
/* half of the first quiet ring that holds jobs, listed again */
CORO__HIDDEN coro_t *coro__pop_subring_quiet(struct coro__worker *w, bool keep_first);
/* submit.c: job to the global queue, counted (any thread) */
CORO__HIDDEN void coro__push_global(coro_sched_t *s, coro_t *job);
/* find.c: w's pick at priority index pi, from w's own and the shared
 * queues (global_first: the periodic look's order); NULL: none (w's owner) */
CORO__HIDDEN coro_t *coro__pop_level(struct coro__worker *w, int pi, bool global_first);
/* steal.c (w's owner) */
/* take half of ring q's n jobs with one CAS, the rest into dst */
CORO__HIDDEN coro_t *coro__take_half_localq(struct coro__worker *w, struct coro__localq *q, unsigned n,
                                        struct coro__localq *dst, bool keep_first, unsigned *got,
                                        uint32_t *src_nprio, int pi, bool deque);
/* count w as a searcher: false when the searchers are at their cap */
CORO__HIDDEN bool coro__start_searching(struct coro__worker *w);
/* one sweep of the other workers' queues: a job, or NULL */
CORO__HIDDEN coro_t *coro__steal(struct coro__worker *w);
/* a turn of worker w at s's event driver (sched/sched.h), of a mode that
 * needs nothing but the worker: the jobs it woke into b.  s->io set */
static inline int driver_turn(struct coro__worker *w, int mode, struct coro__woken *b)
{
    struct coro__turn t;
    /* the fields the mode reads, no more (a look is on the idle path of
     * every wake-up) */
    t.mode = mode;
    t.idx = w->idx;
    return w->s->driver->turn(w->s->io, &t, b);
}

/* fire w's own timers that are due (try: unless their lock is held),
 * what they woke into b: their next deadline, INT64_MAX none */
static inline int64_t driver_own_timers(struct coro__worker *w, bool try_, struct coro__woken *b)
{
    int64_t next = INT64_MAX;
    struct coro__turn t = {
        .mode = CORO__TURN_OWN_TIMERS, .idx = w->idx, .try_ = try_, .next = &next,
    };
    w->s->driver->turn(w->s->io, &t, b);
    return next;
}

/* find.c: find_own_(w, true) out of line, for the looks' cold paths */
CORO__HIDDEN coro_t *coro__find_own(struct coro__worker *w);
/* park.c: park w; activity: coro__driver_activity at the start of the idle
 * phase.  Returns a job its last look found, or the first its wait in
 * epoll woke (as coro__submit_woken's), else NULL once woken */
CORO__HIDDEN coro_t *coro__park_since(struct coro__worker *w, uint32_t activity);
/* submit.c: queue what a driver call of w woke (b, n > 0; WOKEN BATCHES
 * in sched/sched.h) with one notify.  run_first: a class-0 NORMAL first
 * job, no HIGH or LOW one queued at w, is not queued but returned, for w
 * to run next; NULL when it queued them all.  w's owner */
CORO__HIDDEN coro_t *coro__submit_woken(struct coro__worker *w, struct coro__woken *b,
                                        bool run_first);

/* move the job's lifecycle bits from `from` to `to`.  Only the job's owner
 * (the thread that dequeued it, or its waker) changes these bits, and it
 * knows their value, so one atomic add does it without a CAS loop while
 * other threads may OR flags into the upper bits meanwhile. */
static inline void set_state(coro_t *job, uint32_t from, uint32_t to)
{
    /* acq_rel: SUSPENDED releases what the body wrote to the frame to
     * its waker; READY after an arm that completed at once acquires what
     * the awaitable's owner wrote (the result) */
    __atomic_add_fetch(&job->state, to - from, __ATOMIC_ACQ_REL);
}

static inline void stat_inc(uint64_t *c)
{
    /* owner-only counter, read racily by coro_sched_stats */
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

/* the queue index of each priority (CORO__PRIO_IDX) */
enum {
    PI_LOW = CORO__PRIO_IDX(CORO_PRIO_LOW),
    PI_NORMAL = CORO__PRIO_IDX(CORO_PRIO_NORMAL),
    PI_HIGH = CORO__PRIO_IDX(CORO_PRIO_HIGH),
};

/* PRIORITIES.  A worker whose queues hold no HIGH or LOW job looks at
 * NORMAL only (find_own_).  It knows from counters of the places it
 * looks at first-hand: its own (w->nprio: local, inbox, yielded), the
 * global queue's and its served classes' (cls->nprio): no word is
 * written by every HIGH or LOW submit of the scheduler.  A counter goes
 * up before the push and down after the pop (a move: up at the
 * destination first), so a look that reads 0 everywhere missed only jobs
 * pushed after its reads, which the pusher's notify covers as for any
 * job pushed after a look; and the last look before parking looks at
 * every level all the same.  Relaxed: counts, ordered for the workers by
 * the queues' own release and acquire and by notify's fence. */
static inline void prio_add(uint32_t *c, int pi, int n)
{
    if (pi != CORO__PRIO_IDX(CORO_PRIO_NORMAL) && n != 0)
        __atomic_add_fetch(c, (uint32_t)n, __ATOMIC_RELAXED);
}

/* any HIGH or LOW job where w looks first-hand */
static inline bool prio_queued(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (__atomic_load_n(&w->nprio, __ATOMIC_RELAXED) ||
        __atomic_load_n(&coro__affinity_get(s, 0)->nprio, __ATOMIC_RELAXED))
        return true;
    /* acquire: the served[] entries before nserved were written first */
    uint32_t n = __atomic_load_n(&w->nserved, __ATOMIC_ACQUIRE);
    /* acquire: as pop_classes reads the array */
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (__atomic_load_n(&coro__affinity_get(s, served[i])->nprio, __ATOMIC_RELAXED))
            return true;
    return false;
}

/* the seat's root job is over: done (EXITING or not: coro_join waits
 * that out) or back to IDLE (sched/seat.c, LEAVING) */
static inline bool seat_root_over(const coro_t *root)
{
    /* acquire: pairs with coro__finish's release */
    uint32_t st = __atomic_load_n(&root->state, __ATOMIC_ACQUIRE) & CORO__S_MASK;
    return st == CORO__S_DONE || st == CORO__S_IDLE;
}

/* the pops of w's own queues and of class queues, with their counts */
static inline coro_t *own_localq_pop(struct coro__worker *w, struct coro__localq *q, int pi)
{
    coro_t *j = coro__localq_pop(q);
    if (j)
        prio_add(&w->nprio, pi, -1);
    return j;
}

static inline coro_t *own_sharedq_pop(struct coro__worker *w, struct coro__sharedq *q, int pi)
{
    coro_t *j = coro__sharedq_pop(q);
    if (j)
        prio_add(&w->nprio, pi, -1);
    return j;
}

static inline coro_t *class_pop(struct coro__affinity_class *c, int pi)
{
    coro_t *j = coro__sharedq_pop(&c->q[pi]);
    if (j)
        prio_add(&c->nprio, pi, -1);
    return j;
}

/* push job to w's own ring q, counted (full: false, nothing counted) */
static inline bool own_localq_push(struct coro__worker *w, struct coro__localq *q, int pi, coro_t *job)
{
    prio_add(&w->nprio, pi, 1);
    if (coro__localq_push(q, job))
        return true;
    prio_add(&w->nprio, pi, -1);
    return false;
}

/* step a of the park protocol: orders our push before the reads of
 * s->searching and s->idle (and a ring's listed flag), against the
 * parker's bit-set and searcher decrement before its last look
 * (sched/park.c, PARKING).  With s->use_membarrier the parker's membarrier is the
 * barrier of both sides: here only the compiler's (a full barrier here
 * drained the store buffer at every spawn: the spawner's stores to lines
 * a worker reads - the ring slot, the frame - waited for their transfer;
 * sched/park.c, PARKING) */
static inline void notify_fence(coro_sched_t *s)
{
    if (CORO__LIKELY(s->use_membarrier))
        coro__fence_light();
    else
        coro__fence_seq_cst();
}

/* step a-c of the park protocol, after a push.  any: the job may run on
 * every worker, so a searching worker covers it */
static inline void notify(coro_sched_t *s, const uint64_t *wmask, bool any)
{
    notify_fence(s);
    coro__notify_fenced(s, wmask, any);
}

/* set bit i of a two-level map: the word's bit, then the top bit if it
 * reads clear */
static inline void map_set(uint64_t *top, uint64_t *words, unsigned i)
{
    uint64_t kb = coro__bit(coro__bit_word(i));
    /* seq_cst: the word's bit, then the read of the top bit (RINGS) */
    __atomic_fetch_or(&words[coro__bit_word(i)], coro__bit(i), __ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(top, __ATOMIC_SEQ_CST) & kb))
        __atomic_fetch_or(top, kb, __ATOMIC_SEQ_CST);
}

static inline void subring_list(coro_sched_t *s, struct coro__subring *q)
{
    uint32_t zero = 0;
    /* seq_cst: the flag before the bit; one winner sets the bit */
    if (!__atomic_compare_exchange_n(&q->listed, &zero, 1, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED))
        return;
    map_set(&s->subring_top, s->subring_bits, q->idx);
}

/* the ring with bit i (set: the table entry was stored before it) */
static inline struct coro__subring *subring_at(coro_sched_t *s, unsigned i)
{
    /* acquire, both: the table pointer pairs with coro__thread_subring's CAS
     * that installs it, the entry with its release store (a plain read of
     * the pointer would race with that CAS in the C11 model: TSan saw it) */
    struct coro__subring **tab = __atomic_load_n(&s->subring_tab, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&tab[i], __ATOMIC_ACQUIRE);
}

/* at most half the workers search (at least one) */
static inline uint32_t search_max(const coro_sched_t *s)
{
    return s->nslots / 2 > 0 ? (uint32_t)s->nslots / 2 : 1;
}

/* returns true when w was the last searcher */
static inline bool stop_searching(struct coro__worker *w)
{
    if (!w->searching)
        return false;
    w->searching = false;
    /* seq_cst: a notifier that saw us searching must be covered by our
     * later looks or by the wake we send when we were the last one */
    return __atomic_sub_fetch(&w->s->searching, 1, __ATOMIC_SEQ_CST) == 0;
}

/* a job was found: the anti-starvation counters, a new idle phase */
static inline coro_t *found_(struct coro__worker *w, coro_t *j)
{
    if (j) {
        w->idle_looks = 0;
        if (CORO__LIKELY(j->prio == CORO_PRIO_NORMAL)) {     /* the common pick */
            w->since_normal = 0;
            w->since_low++;
            return j;
        }
        int pi = CORO__PRIO_IDX(j->prio);
        w->since_normal = pi == PI_HIGH ? w->since_normal + 1 : 0;
        w->since_low = pi != PI_LOW ? w->since_low + 1 : 0;
    }
    return j;
}

/* our own queues, the shared ones and the submission rings: everything
 * but the other workers' queues */
static inline __attribute__((always_inline)) coro_t *find_own_(struct coro__worker *w,
                                                             bool limit_steal)
{
    static const int normal_order[] = { PI_HIGH, PI_NORMAL, PI_LOW };
    static const int normal_first[] = { PI_NORMAL, PI_HIGH, PI_LOW };
    static const int low_first[] = { PI_LOW, PI_HIGH, PI_NORMAL };
    const int *order = normal_order;
    bool global_first = false;
    coro_t *j = NULL;

    if (CORO__UNLIKELY(w->tick == 0)) {     /* every CORO__GLOBAL_INTERVAL looks */
        w->tick = CORO__GLOBAL_INTERVAL;
        global_first = true;
    }
    w->tick--;
    if (w->since_low >= CORO__STARVE_LOW)
        order = low_first;
    else if (w->since_normal >= CORO__STARVE_NORMAL)
        order = normal_first;
    /* no HIGH or LOW job queued anywhere: look at NORMAL only.  The count
     * goes up before a push, so a job it misses was pushed after this
     * read: the pusher's notify then covers it exactly as for a job pushed
     * after this look (sched/park.c, PARKING).  The last look before parking
     * (limit_steal false) looks everywhere all the same. */
    if (limit_steal && !global_first && !prio_queued(w))
        j = coro__pop_level(w, CORO__PRIO_IDX(CORO_PRIO_NORMAL), false);
    else
        for (int k = 0; k < CORO__NPRIO && !j; k++)
            j = coro__pop_level(w, order[k], global_first);
    /* the LIFO slot after CORO__LIFO_MAX runs from it in a row, once
     * every queue of ours came out empty: before stealing, so that a
     * chain of spawns stays on this worker (the streak bound is there for
     * our other queued jobs, and there are none).  acq_rel: the exchange
     * takes the slot from thieves (who exchange it too); acquire pairs
     * with the release that filled it (the job's frame is complete),
     * release orders nothing but is free on x86 */
    if (!j && w->lifo_streak && (j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL)))
        w->lifo_streak = 0;
    /* nothing, in the park's last look (after its membarrier): the quiet
     * rings (RINGS).  Not at the other idle looks: a park follows them
     * within CORO__IDLE_LOOKS looks, and each look would read every quiet
     * ring.  acquire: a bit set after this read belongs to a take-off
     * that a later park or periodic look covers */
    if (!j && !limit_steal && CORO__UNLIKELY(__atomic_load_n(&w->s->subring_qtop, __ATOMIC_ACQUIRE)))
        j = coro__pop_subring_quiet(w, true);
    return j;
}

/* the other workers' queues, as a searcher (limit_steal: if there is
 * room for one more) */
static inline coro_t *find_others_(struct coro__worker *w, bool limit_steal)
{
    /* an idle phase sweeps the others at its looks 0, 1, 3, 7 and 15
     * only (then at its park): a failed sweep reads every busy victim's
     * queues, and a job pushed meanwhile is covered by the searchers'
     * next sweep or by the park protocol (its notify wakes a parked
     * worker when no one searches) */
    unsigned n = w->idle_looks++;
    if (limit_steal && (n & (n + 1)) != 0)
        return NULL;
    return !limit_steal || coro__start_searching(w) ? coro__steal(w) : NULL;
}

#endif
