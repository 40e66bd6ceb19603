/* SPDX-License-Identifier: MIT */
/* Stealing: an idle worker takes half of a busy one's queues, in an order
 * that prefers its own NUMA node, and at most half the workers search at
 * once.
 *
 *
 * STEALING.  An idle worker visits the others from a random start (those
 * of its own NUMA node first: NUMA, at steal_order), HIGH to LOW, and
 * takes half of a victim's local ring (one CAS: coro__localq_steal, ck_ring's
 * dequeue moved by n; the victim may take its newest job back meanwhile,
 * base/queues.c TAKING BACK) or inbox (one dequeue each) at that level,
 * keeps the first and puts the rest in its own local ring; the victim's
 * LIFO slot last, and only once the victim started no step for
 * CORO__LIFO_STEAL_NS (steal_lifo).  At most half the workers (at least
 * one) steal at once (s->searching).
 *   Victims are the workers whose idle bit is clear (Go's idle-P mask),
 * and after them the caller's seat, always (sched/seat.c STEALING: it
 * never parks, and is empty while no thread holds it): a
 * parked worker's queues are empty - it parked after its own look found
 * nothing, only its owner pushes to its local and yield rings and its LIFO
 * slot, and a push to its inbox either claims it first (its bit cleared,
 * then the wake) or, for a plain thread's round-robin hand-off, is
 * followed by notify's fence and a look at that worker's bit: set, the
 * pusher claims that worker and wakes it (its last look before sleeping
 * either saw the job or its bit is seen: Dekker, as in PARKING).  A
 * sweep costs the busy workers' queues, not every worker's.
 *   An idle phase sweeps the others at its looks 0, 1, 3, 7 and 15 only,
 * then once more at its park: a job pushed between two sweeps is covered
 * by the searchers' next sweep or, with none, by the notify that wakes a
 * parked worker for it.  The park's look leaves the others' queues alone
 * while the searchers are at their cap (read after its own searcher
 * count is gone and its idle bit is set): each of them sweeps again, and
 *
 * worker in its place (SEARCHING; tools/model/search.pml).
 *
 * SEARCHING (tokio's rules; tools/model/search.pml).  A worker searching
 * for work counts in s->searching, and a notify for a job any worker may
 * run wakes nobody while one searches: the searcher will find the job.  A
 * worker woken from its park searches.  The last searcher to find work
 * wakes another in its place; a worker that was not searching but took
 * more jobs than the one it runs (half a ring) wakes one for the rest; a
 * plain thread's ring push wakes an idle worker even while one searches;
 * and a worker whose last look before parking found a job after a
 * notifier had claimed it passes the wake on.  Without the last three, a
 * burst from a plain thread left jobs queued behind jobs that never
 */
#include "sched/worker.h"

static uint32_t rng_next(struct coro__worker *w)
{
    /* xorshift32 */
    uint32_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return w->rng = x;
}

/* take half of the n jobs of ring q (at least one) with one CAS: keep the
 * first (keep_first), put the rest in ring dst (full: the global queue) */
coro_t *coro__take_half_localq(struct coro__worker *w, struct coro__localq *q, unsigned n,
                           struct coro__localq *dst, bool keep_first, unsigned *got,
                           uint32_t *src_nprio, int pi, bool deque)
{
    coro_t *batch[CORO__LOCAL_SIZE / 2];
    unsigned want = (n + 1) / 2;

    if (want == 0)
        return NULL;
    if (want > CORO__LOCAL_SIZE / 2)
        want = CORO__LOCAL_SIZE / 2;
    /* no more than dst has room for (a ring holds size - 1): a job that
     * did not fit went to the global queue, which the periodic look
     * takes first, and ran ahead of the ones before it in dst */
    unsigned room = CORO__LOCAL_SIZE - 1 - coro__localq_size(dst) + (keep_first ? 1 : 0);
    if (want > room)
        want = room;
    if (want == 0)
        return NULL;
    /* deque: a victim's local ring, whose owner may take its newest job
     * back (base/queues.c, TAKING BACK) */
    unsigned k = deque ? coro__localq_steal(q, batch, want) : coro__localq_pop_batch(q, batch, want);
    for (unsigned i = keep_first ? 1 : 0; i < k; i++)
        if (!own_localq_push(w, dst, pi, batch[i]))
            coro__push_global(w->s, batch[i]);
    prio_add(src_nprio, pi, -(int)k);   /* after the moves: PRIORITIES */
    if (k > (keep_first ? 1u : 0u))
        w->took_more = true;
    *got += k;
    return k && keep_first ? batch[0] : NULL;
}

/* take half of the n jobs of a victim's inbox q (at least one), one
 * dequeue each (its ring has a sequence number per slot and an overflow
 * list): keep the first, put the rest in the thief's ring dst (full: the
 * global queue) */
static coro_t *take_half_sharedq(struct coro__worker *w, struct coro__sharedq *q, unsigned n,
                            struct coro__localq *dst, unsigned *got, uint32_t *src_nprio, int pi)
{
    coro_t *first = NULL;

    for (unsigned k = 0, want = (n + 1) / 2; k < want; k++) {
        coro_t *j = coro__sharedq_pop(q);
        if (!j)
            break;
        ++*got;
        if (!first) {
            first = j;
        } else {
            w->took_more = true;
            if (!own_localq_push(w, dst, pi, j))
                coro__push_global(w->s, j);
        }
        prio_add(src_nprio, pi, -1);
    }
    return first;
}

static coro_t *steal_from(struct coro__worker *w, struct coro__worker *v, int pi)
{
    unsigned got = 0;
    coro_t *first = coro__take_half_localq(w, &v->local[pi], coro__localq_size(&v->local[pi]),
                                       &w->local[pi], true, &got, &v->nprio, pi, true);
    if (!first)
        first = take_half_sharedq(w, &v->inbox[pi], coro__sharedq_size(&v->inbox[pi]),
                             &w->local[pi], &got, &v->nprio, pi);
    if (!first)     /* jobs that yielded stay behind the thief's other work */
        first = coro__take_half_localq(w, &v->yielded[pi], coro__localq_size(&v->yielded[pi]),
                                   &w->yielded[pi], true, &got, &v->nprio, pi, false);
    if (got) {
        coro__trace_steal(w, v->idx, got);
        stat_inc(&w->n_steals);
        __atomic_store_n(&w->n_stolen, w->n_stolen + got, __ATOMIC_RELAXED);
    }
    return first;
}

/* searching: tokio's protocol.  A worker that looks for work outside its
 * own queues is "searching"; s->searching counts them, at most half the
 * workers (at least one).  A waker that sees a searcher does not wake a
 * parked worker: the searcher will find the job.  A worker that stops
 * searching because it found work, and was the last searcher, wakes a
 * parked one in its place, so work that is left is never without a
 * searcher. */

bool coro__start_searching(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (w->searching)
        return true;
    uint32_t max = search_max(s);
    if (__atomic_load_n(&s->searching, __ATOMIC_RELAXED) >= max)
        return false;
    /* seq_cst: pairs with the fence in notify() */
    __atomic_add_fetch(&s->searching, 1, __ATOMIC_SEQ_CST);
    w->searching = true;
    return true;
}

static coro_t *take_lifo(struct coro__worker *w, struct coro__worker *v)
{
    /* acq_rel: pairs with the victim's exchange into its slot */
    coro_t *j = __atomic_exchange_n(&v->lifo, NULL, __ATOMIC_ACQ_REL);
    if (j) {
        coro__trace_steal(w, v->idx, 1);
        stat_inc(&w->n_steals);
        stat_inc(&w->n_stolen);
    }
    w->lifo_watch = -1;
    return j;
}

/* A victim's LIFO slot holds the job it spawned last, which it runs as
 * soon as its current step ends: taking it while the victim is about to
 * run it moves a chain of spawns to another CPU and back a few jobs apart
 * (chained_spawn: one steal in four jobs, and every steal by a searching
 * worker woke a parked one in its place, which stole it back).  tokio
 * never steals the slot.  Here a thief takes it only when the victim has
 * started no step for CORO__LIFO_STEAL_NS since the thief first saw the
 * slot full: the victim is in a long step.  The thief is idle, so its
 * clock reads cost nobody.  The last look before parking follows the same
 * rule; a worker that parks with such a job in view sleeps at most
 * CORO__LIFO_PARK_NS (park), then looks again: a job spawned just before
 * a long step waits for it at most about that long while a worker is idle
 * (stress/sched_affinity: a job spawned by one that then blocks runs
 * elsewhere; it hung 1 run in about 100 without the bound).  A worker
 * already parked at the spawn is not woken for it (nor is tokio's:
 * docs/guide.md). */
static coro_t *steal_lifo(struct coro__worker *w, const int *vic, int n, int start)
{
    coro_sched_t *s = w->s;

    if (w->lifo_watch >= 0) {
        struct coro__worker *v = s->w[w->lifo_watch];
        /* relaxed: n_run is a counter only its owner writes; a stale
         * value delays the steal to a later look */
        if (__atomic_load_n(&v->lifo, __ATOMIC_RELAXED) &&
            __atomic_load_n(&v->n_run, __ATOMIC_RELAXED) == w->lifo_watch_run) {
            if (coro__now() - w->lifo_watch_t >= CORO__LIFO_STEAL_NS)
                return take_lifo(w, v);
            return NULL;        /* not yet: keep watching it */
        }
        w->lifo_watch = -1;
    }
    for (int i = 0; i < n; i++) {
        struct coro__worker *v = s->w[vic[(start + i) % n]];
        /* relaxed: hints; the slot is taken with take_lifo's exchange */
        if (!__atomic_load_n(&v->lifo, __ATOMIC_RELAXED))
            continue;
        w->lifo_watch = v->idx;
        w->lifo_watch_run = __atomic_load_n(&v->n_run, __ATOMIC_RELAXED);
        w->lifo_watch_t = coro__now();
        break;
    }
    return NULL;
}

/* the victims worth a look: every worker but w whose bit in idle is
 * clear (a parked worker's queues are empty: STEALING above), those
 * of w's NUMA node first (NUMA below); returns how many are in vic, and
 * in *nnear how many of them are w's node's */
static int victims(struct coro__worker *w, int *vic, int *nnear, const uint64_t *idle)
{
    coro_sched_t *s = w->s;
    int n = 0, passes = s->numa ? 2 : 1;

    for (int pass = 0; pass < passes; pass++) {
        for (int k = 0, words = (s->nslots + 63) / 64; k < words; k++) {
            /* relaxed: a hint - a worker that parks after this read had
             * nothing to steal; one that wakes gets its jobs from whoever
             * claimed it, who wakes it for them */
            uint64_t bits = s->all_wmask[k] & ~__atomic_load_n(&idle[k], __ATOMIC_RELAXED);
            if ((size_t)k == coro__bit_word((size_t)w->idx))
                bits &= ~coro__bit((size_t)w->idx);
            if (passes == 2)
                bits &= pass == 0 ? w->near[k] : ~w->near[k];
            while (bits) {
                vic[n++] = k * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
            }
        }
        if (pass == 0)
            *nnear = n;
    }
    return n;
}

/* a[0..n) turned left by r, in place */
static void rotate(int *a, int n, int r)
{
    for (int pass = 0; pass < 3; pass++) {
        int lo = pass == 0 ? 0 : pass == 1 ? r : 0, hi = pass == 0 ? r : n;
        for (int i = lo, j = hi - 1; i < j; i++, j--) {
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}

/* NUMA.  A thief visits the busy workers of its own node first, from a
 * random start among them, then the others from a random start: a job
 * taken from a worker of the same node brings its frame and what it
 * touches over the node's own memory, and two idle nodes do not steal
 * across each other while their own work waits.  Each priority level
 * still comes before the next (a HIGH job on another node before a
 * NORMAL one here).  The nodes are the CPUs' (base/numa.c) that create
 * gave the workers: pinned, a worker stays there; unpinned, it starts
 * there and the kernel's NUMA balancing tends to keep it.  With one node
 * (s->numa false) the order is the random rotation alone.  Returns how
 * many are in vic, in the order to visit them. */
static int steal_order(struct coro__worker *w, int *vic, const uint64_t *idle)
{
    int nn = 0, n = victims(w, vic, &nn, idle);

    if (n == 0)
        return 0;
    uint32_t r = rng_next(w);
    if (nn > 1)
        rotate(vic, nn, (int)(r % (uint32_t)nn));
    if (n - nn > 1)
        rotate(vic + nn, n - nn, (int)(r % (uint32_t)(n - nn)));
    return n;
}

#ifdef CORO_TEST_HOOKS
int coro__test_steal_order(coro_sched_t *s, int widx, int *vic)
{
    static const uint64_t none[CORO__WMASK_WORDS];

    return steal_order(s->w[widx], vic, none);
}
#endif

coro_t *coro__steal(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    int vic[CORO_MAX_WORKERS + 1];
    coro_t *j = NULL;

    if (s->nall < 2)
        return NULL;
    int n = steal_order(w, vic, s->idle);
    /* the caller's seat, after the workers, held or not (it is empty when
     * free): no read of its word has to order against a take
     * (sched/seat.c, STEALING) */
    if (s->nall > s->nslots)
        vic[n++] = s->nslots;
    if (n == 0)
        return NULL;
    for (int pi = CORO__NPRIO - 1; pi >= 0 && !j; pi--)
        for (int i = 0; i < n && !j; i++)
            j = steal_from(w, s->w[vic[i]], pi);
    if (!j)
        j = steal_lifo(w, vic, n, 0);
    return j;
}
