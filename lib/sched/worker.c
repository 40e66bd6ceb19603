/* SPDX-License-Identifier: MIT */
/* Workers: the run loop, where a worker looks for work, stealing, parking.
 *
 * QUEUES.  A job lives in exactly one queue while READY:
 *   - "any CPU" jobs (affinity class 0): a worker's LIFO slot (NORMAL jobs
 *     it spawned last), its local rings (one per priority, ck_ring SPMC:
 *     the owner pushes, owner and thieves pop), its inboxes (per priority,
 *     coro__mq, base/mq.c: a ck_ring whose producers take a mutex, plus an
 *     overflow list: what other threads hand it: HIGH and LOW
 *     jobs, and NORMAL ones when a submission ring is full), a plain
 *     thread's submission ring (NORMAL jobs it spawned or woke: ck_ring
 *     SPMC, that thread pushes, workers pop; struct coro__xq), or the
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
 * that hold work, one CAS: RINGS); HIGH and LOW only while some are
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
 * 128 picks above LOW in a row LOW is; so under a flood of HIGH, NORMAL
 * gets at least 1 pick in 33 and LOW 1 in 129.  Then it steals.
 *
 * STEALING.  An idle worker visits the others from a random start (those
 * of its own NUMA node first: NUMA, at steal_order), HIGH to LOW, and
 * takes half of a victim's local ring (one CAS: coro__lq_steal, ck_ring's
 * dequeue moved by n; the victim may take its newest job back meanwhile,
 * base/mq.c TAKING BACK) or inbox (one dequeue each) at that level,
 * keeps the first and puts the rest in its own local ring; the victim's
 * LIFO slot last, and only once the victim started no step for
 * CORO__LIFO_STEAL_NS (steal_lifo).  At most half the workers (at least
 * one) steal at once (s->searching).
 *   Victims are the workers whose idle bit is clear (Go's idle-P mask): a
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
 * the last to stop either parks through its own full look or wakes a
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
 * await while workers slept.
 *
 * PARKING - the protocol, and why no wake-up is lost.
 *   worker W, when it found nothing:
 *     1. e = W.futex                         (the park epoch)
 *     2. count W in s->idle_sum, set W's bit in s->idle  (seq_cst RMWs)
 *     3. look for work everywhere once more  (all queues, steal)
 *     4. futex_wait(&W.futex, e)             (returns at once if e changed)
 *     5. clear W's bit if still set
 *   a submitter S, after any push of a READY job (local, inbox, class):
 *     a. seq_cst fence (with s->asym: a compiler barrier, below)
 *     b. read s->idle_sum (none counted: done), then s->idle & (workers
 *        the job's class allows) (IDLE SUMMARY)
 *     c. for such a bit: atomically clear it; the one that cleared it owns
 *        the wake: it counts W down, W.futex++ then futex_wake(&W.futex)
 *   Invariant: for every pushed job, either some allowed worker's step 3
 *   runs after the push is visible, or S sees that worker's bit in (b).
 *   Steps 2/3 and a/b are store-then-load on both sides, each separated by
 *   a full barrier (Dekker), so at least one of the two sees the other's
 *   store.  If W sees the job in step 3 it runs it.  If S sees a bit, it
 *   claims exactly one worker (the clearing RMW picks one winner) and bumps
 *   its epoch before the wake, so W's step 4 cannot sleep through it: it
 *   either sees the new epoch or is woken by futex_wake.  A woken worker
 *   looks everywhere, steals included, so it finds the job wherever S put
 *   it.  Spurious wakes only cost a look.
 *   Asymmetric (s->asym, set at create when membarrier(2) registers): S
 *   runs at every spawn and W at every park, so W carries the barrier of
 *   both: after step 2 it calls membarrier(PRIVATE_EXPEDITED), a full
 *   barrier on every CPU running one of our threads, and S's step a is a
 *   compiler barrier.  A push S made before that barrier point is visible
 *   to W's step 3; S's reads after it see W's bit (the store-then-load of
 *   each side is still split by a full barrier, now one per CPU run by
 *   the kernel).  The searcher decrement of a parking worker (before step
 *   2) is covered the same way; a searcher that stops because it found
 *   work, and any other notify, is light too: whatever push it missed is
 *   seen at the next park's membarrier or by the worker its wake reaches
 *   (a claim is a locked RMW: the push is visible before the wake).
 *   tools/model/park.pml and search.pml check both modes.  S's full
 *   barrier had to wait for its store buffer, where a spawn's stores to
 *   lines a worker last held (frame, ring slot, tail) were queued
 *   (docs/architecture.md, "Parking", has the figures).
 *   The asymmetric mode is chosen at create only for at most
 *   CORO__ASYM_MAX_WORKERS workers on a machine of at most
 *   CORO__ASYM_MAX_CPUS online CPUs.  The kernel's
 *   membarrier(PRIVATE_EXPEDITED) (kernel/sched/membarrier.c) takes one
 *   mutex for the whole machine (membarrier_ipi_mutex, since the fix of
 *   CVE-2024-26602), walks every online CPU's run queue to find those
 *   running a thread of our mm, interrupts each of them and waits for all:
 *   its cost grows with the machine's CPUs and with the CPUs our threads
 *   run on, and parks of many workers queue on that mutex.  Bounding the
 *   workers bounds the parks that call it and the CPUs our workers hold;
 *   bounding the CPUs bounds the walk.  Beyond either bound every notify
 *   pays its full fence, a cost that is the same on any machine.  Both
 *   modes are the ones the models verify: the choice only picks one.
 *
 * BUDGET AND CANCEL.  A job gets CORO__BUDGET (128) awaits that complete at
 * once per run; the next one (coro__complete) travels as a yield carrying
 * its result, so a job whose operations are always ready still lets the
 * others run.  Under CORO_CANCEL an await that has not completed returns
 * -ECANCELED before it is armed, but that yield is never rewritten: its
 * operation (an item received, bytes read, an fd accepted) already
 * happened, and a completed operation keeps its result.  coro_cancel(job)
 * (flag CORO__F_CANCEL in the state word) does the same for one job.  So
 * that a job whose operations always complete at once still sees its
 * cancel, the I/O constructors ask coro__cancel_due (sched/await.c) once
 * the budget is spent, and complete with -ECANCELED before their call.
 *
 * WAITING IN EPOLL INSTEAD.  In step 4 a worker of a threaded
 * scheduler may wait in epoll_wait on the I/O context instead of its futex
 * (coro__io_park, lib/io/epoll.c), when it can take the poll token.  The
 * protocol above holds unchanged with one more way to deliver step c's
 * wake: the submitter's epoch increment is a seq_cst RMW, after which it
 * reads the token (coro__io_wake_poller); the worker takes the token with
 * a seq_cst CAS, then reads its epoch, and waits in epoll only if the
 * epoch is still e.  Store-then-load on both sides again (Dekker): either
 * the worker sees the new epoch and does not wait, or the submitter sees
 * the worker holding the token and writes the eventfd, which ends its
 * epoll_wait (the eventfd is read only by the token holder, so a look at
 * epoll without the token cannot swallow that wake).  A submitter that
 * sees no token calls futex_wake as before; the worker then is, or will
 * be, on its futex (it failed to take the token) or saw the epoch.  Once
 * epoll_wait returns the worker clears its idle bit before it handles the
 * events, so the jobs it wakes into its own queues wake no one: it runs
 * them when it returns from park.
 *
 * IDLE.  A worker that finds nothing in its own queues first looks at the
 * epoll set without blocking (coro__io_poll_now, once per idle phase,
 * before it steals): readiness its jobs
 * wait for is usually there, and taking it here runs the woken job on
 * this worker with no thread wake-up at all.  The first NORMAL job it
 * wakes is kept aside (w->caught) and run next; the rest go to its own
 * queues, whose pushes notify as usual.  Then: < 4 empty looks spin,
 * 4..15 sched_yield, then park - in epoll only if no other worker
 * handled I/O since the idle phase began (coro__io_activity: that worker
 * will wait in epoll itself when it runs out, and a second thread blocked
 * there would only be woken for nothing at each event).
 * When workers outnumber CPUs a worker never busy-spins: it goes straight
 * to the sched_yield phase, which hands the CPU to whoever needs it, and
 * cuts it to CORO__IDLE_OVERSUB_YIELDS looks before it parks.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"
#include "sched/trace.h"
#include "sched/frame.h"

/* round-robin position of a plain thread's submissions (its own: a shared
 * counter is one more contended RMW per spawn) */
static __thread uint32_t tls_rr;

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

/* ---- waking parked workers --------------------------------------------- */

static void unpark(coro_sched_t *s, int idx)
{
    struct coro__worker *w = s->w[idx];

    /* seq_cst: the push that made this wake necessary happens before the
     * epoch change the parked worker observes (release), and the change is
     * ordered before our read of the poll token in coro__io_wake_poller
     * (Dekker with the worker's token CAS and epoch read, coro__io_park) */
    __atomic_add_fetch(&w->futex, 1, __ATOMIC_SEQ_CST);
    coro__trace_nudge(s, idx);
    if (s->nworkers > 0 && s->io && s->drv->wake_poller(s->io, idx))
        return;     /* it waits in epoll: the eventfd woke it */
    coro__futex_wake(&w->futex, 1);
    if (s->nworkers == 0 && s->io)
        s->drv->kick(s->io);
}

/* IDLE SUMMARY.  s->idle_sum holds, for each word k of s->idle, a 16-bit
 * field that counts the bits of that word: a parker counts itself up
 * (seq_cst RMW) before it sets its bit, and whoever clears a bit - its
 * claimer, or the worker itself - counts it down after the clear.  So a
 * field is never below its word's bits (a count-down follows a clear,
 * which follows the set, which follows the count-up: all ordered through
 * the bit).  It is above them only by the claimers between their clear
 * and their count-down (a worker woken otherwise may park and count
 * itself again meanwhile): 64 plus those stays far below 0x8000, so a
 * field never carries into its neighbour.  A notifier reads the
 * summary first: a zero byte means no bit in that word, in the sense the
 * park protocol needs - the parker's count-up is a store before its last
 * look, exactly as its bit is (PARKING at the top: if the notifier's read
 * misses the count, the parker's look sees the push).  So a push while no
 * worker is parked reads one word per 256 workers (one word up to 256, 4 at
 * CORO_MAX_WORKERS) where it read one per 64; with some parked it reads
 * only the words of s->idle that hold them. */
#define SUM_FIELDS 4                    /* fields per word of s->idle_sum */
#define SUM_ONE(k) (1ull << (16 * ((k) % SUM_FIELDS)))
#define SUM_LOW 0x7fff7fff7fff7fffull
#define SUM_HIGH 0x8000800080008000ull
/* words of s->idle_sum in use: one per 256 workers */
#define SUM_USED(s) (((s)->nslots + 64 * SUM_FIELDS - 1) / (64 * SUM_FIELDS))

/* the words of s->idle that hold a bit, as the high bit of each field of
 * summary word g (a field below 0x8000 plus 0x7fff carries out of no
 * field, and sets its high bit when it was not zero) */
static inline uint64_t sum_nonzero(coro_sched_t *s, int g)
{
    /* relaxed: the caller's fence (notify) or RMW orders it */
    return (__atomic_load_n(&s->idle_sum[g], __ATOMIC_RELAXED) + SUM_LOW) & SUM_HIGH;
}

/* worker idx parks: counted, then its bit set (step 2 of PARKING) */
static void idle_set(coro_sched_t *s, int idx)
{
    int k = idx / 64;
    /* seq_cst: both stores before the parker's last look (PARKING) */
    __atomic_fetch_add(&s->idle_sum[k / SUM_FIELDS], SUM_ONE(k), __ATOMIC_SEQ_CST);
    __atomic_fetch_or(&s->idle[k], 1ull << (idx % 64), __ATOMIC_SEQ_CST);
}

/* a bit of word k was cleared: count it down */
static void idle_uncount(coro_sched_t *s, int k)
{
    /* relaxed: ordered after the count-up through the bit (above) */
    __atomic_fetch_sub(&s->idle_sum[k / SUM_FIELDS], SUM_ONE(k), __ATOMIC_RELAXED);
}

/* worker idx clears its own bit: whether it was still set (nobody claimed
 * it).  relaxed: the bit only; a claimer's push is ours to see through
 * the queue it used */
static bool idle_clear(coro_sched_t *s, int idx)
{
    uint64_t bit = 1ull << (idx % 64);
    bool had = __atomic_fetch_and(&s->idle[idx / 64], ~bit, __ATOMIC_RELAXED) & bit;
    if (had)
        idle_uncount(s, idx / 64);
    return had;
}

/* claim worker idx if its bit is set: true when this call cleared it */
static bool claim_one(coro_sched_t *s, int idx)
{
    uint64_t bit = 1ull << (idx % 64);
    /* acq_rel: one claimer wins the bit; it sees the parker's epoch read
     * and publishes the push it wakes the worker for */
    if (!(__atomic_fetch_and(&s->idle[idx / 64], ~bit, __ATOMIC_ACQ_REL) & bit))
        return false;
    idle_uncount(s, idx / 64);
    return true;
}

/* claim one parked worker among wmask: returns its index or -1 */
static int claim_idle(coro_sched_t *s, const uint64_t *wmask)
{
    for (int g = 0, groups = SUM_USED(s); g < groups; g++) {
        for (uint64_t f = sum_nonzero(s, g); f; f &= f - 1) {
            int k = g * SUM_FIELDS + __builtin_ctzll(f) / 16;
            /* relaxed: a candidate; claim_one's acq_rel fetch_and decides */
            uint64_t bits = __atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k];
            while (bits) {
                int idx = k * 64 + __builtin_ctzll(bits);
                if (claim_one(s, idx))
                    return idx;
                bits = __atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k];
            }
        }
    }
    return -1;
}

/* step a of the park protocol: orders our push before the reads of
 * s->searching and s->idle (and a ring's listed flag), against the
 * parker's bit-set and searcher decrement before its last look (see the
 * top).  With s->asym the parker's membarrier is the barrier of both
 * sides: here only the compiler's (a full barrier here drained the store
 * buffer at every spawn: the spawner's stores to lines a worker reads -
 * the ring slot, the frame - waited for their transfer; PARKING at the
 * top) */
static inline void notify_fence(coro_sched_t *s)
{
    if (CORO__LIKELY(s->asym))
        coro__fence_light();
    else
        coro__fence_seq_cst();
}

static void notify_fenced(coro_sched_t *s, const uint64_t *wmask, bool any);

/* step a-c of the park protocol, after a push.  any: the job may run on
 * every worker, so a searching worker covers it */
static void notify(coro_sched_t *s, const uint64_t *wmask, bool any)
{
    notify_fence(s);
    notify_fenced(s, wmask, any);
}

static void notify_fenced(coro_sched_t *s, const uint64_t *wmask, bool any)
{
    /* no parked worker the job may run on: nothing to do (one that parks
     * later looks once more after its bit is set).  Read first: the idle
     * words change only at parks, the searcher count at every steal, and
     * a busy spawner would miss on it at every push */
    bool some = false;
    /* relaxed: the fence above orders these reads after our push; the
     * summary first (IDLE SUMMARY) */
    for (int g = 0, groups = SUM_USED(s); g < groups && !some; g++)
        for (uint64_t f = sum_nonzero(s, g); f && !some; f &= f - 1) {
            int k = g * SUM_FIELDS + __builtin_ctzll(f) / 16;
            some = (__atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k]) != 0;
        }
    if (!some)
        return;
    if (any && __atomic_load_n(&s->searching, __ATOMIC_RELAXED) != 0)
        return;
    /* the woken worker counts itself as a searcher once it runs (tokio
     * counts it here, in the waker; a claim racing the worker's own
     * return from park then leaks a count, which silences every later
     * notify: a lost wake-up TSan's slow scheduling found) */
    int idx = claim_idle(s, wmask);
    if (idx >= 0)
        unpark(s, idx);
}

bool coro__io_handoff(coro_sched_t *s)
{
    int idx = claim_idle(s, s->all_wmask);
    if (idx < 0)
        return false;
    unpark(s, idx);
    return true;
}

void coro__wake_all_workers(coro_sched_t *s)
{
    for (int i = 0; i < s->nslots; i++)
        unpark(s, i);
}

/* ---- the submission rings that hold work ---------------------------------- */

/* RINGS.  A worker looks only at the plain threads' rings whose bit is set
 * in s->xq_bits (a second level, s->xq_top, says which words to read), so
 * a look costs the same with no plain thread and with thousands that once
 * spawned: an empty ring is off the map.  Each ring's `listed` word says
 * whether its bit is set; it changes with the bit.
 *   list (its producer after a push; a worker that found it not empty
 *   after taking it off): CAS listed 0 -> 1, the winner sets the bit, then
 *   the top bit if it reads clear (both seq_cst RMWs).
 *   unlist (a worker): clear the bit, then listed (seq_cst RMWs), then a
 *   full barrier and a look at the ring's size; not empty: list it again.
 * The top level: a worker that reads a word as 0 clears its top bit, then
 *   reads the word again and sets the bit back if it is not 0; the lister
 *   sets the word's bit, then reads the top bit.  Store-then-load on both
 *   sides (seq_cst), so one of them sees the other: a word with bits never
 *   stays hidden.
 * No job is left in a ring that nobody looks at.  The producer's push
 * (the slot, then the tail: ck_ring) is followed by notify's fence, then
 * its read of listed: it lists the ring when it reads 0.  When it reads 1
 * the ring is listed, or a worker is taking it off at that moment:
 *   - without s->asym the fence is full.  The read saw 1, so the
 *     worker's clear comes after it in the order of listed; the producer
 *     stored its push, fenced, read; the worker cleared, fenced, read the
 *     size: store-then-load on both sides (Dekker), so the worker sees the
 *     push and lists the ring again.
 *   - with s->asym the producer's fence is the compiler's only, and its
 *     read may pass its push: a look at the size right after the clear
 *     proves nothing.  So the worker that takes a ring off marks it quiet
 *     with its own name (quiet = its index + 1) and sets its bit in a
 *     second map, s->xq_quiet (two levels again, the same tidy protocol:
 *     a bit is cleared only by one who then reads the name as 0).  A
 *     quiet ring is looked at by every worker's periodic look (every
 *     CORO__GLOBAL_INTERVAL picks) and by the last look of every park,
 *     which comes after that worker's membarrier; one that holds jobs is
 *     listed again.  The
 *     worker whose name it bears ends the quiet at its next park, after
 *     its membarrier(2) (a CAS from its name to 0, then one more look
 *     at the size): a producer that read listed as 1 had issued its push
 *     before the take-off, so before that membarrier, which makes it
 *     visible to the look after.  Another worker's membarrier may precede
 *     the take-off, so only the name's owner ends a quiet (a ring taken
 *     off again by another worker bears that one's name, and the CAS
 *     fails).  Until then a push that raced the take-off waits at most
 *     for one of those looks: within CORO__GLOBAL_INTERVAL picks of any
 *     busy worker, or the next park of an idle one (the producer's
 *     notify wakes one, which parks again when it finds nothing).  Rings are taken off only at the periodic look there,
 *     so a producer that keeps a busy worker fed lists its ring again at
 *     most once per interval of each worker, and a worker whose rings are
 *     empty pays no look at them on its picks.  If the membarrier fails,
 *     the rings are listed again unseen.
 * tools/model/rings.pml checks both modes and rejects a take-off without
 * the second look, the membarrier mode without the quiet mark, and a park
 * that ends other workers' quiet.
 * A thread's ring lives with its frame cache: when the thread exits the
 * ring keeps its bit while jobs are left in it (the workers take them),
 * and the next thread to need a cache takes both over (lib/sched/frame.c):
 * the rings are never more than the threads alive at once. */

/* set bit i of a two-level map: the word's bit, then the top bit if it
 * reads clear */
static inline void map_set(uint64_t *top, uint64_t *words, unsigned i)
{
    uint64_t kb = 1ull << (i / 64);
    /* seq_cst: the word's bit, then the read of the top bit (RINGS) */
    __atomic_fetch_or(&words[i / 64], 1ull << (i % 64), __ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(top, __ATOMIC_SEQ_CST) & kb))
        __atomic_fetch_or(top, kb, __ATOMIC_SEQ_CST);
}

/* word k of a two-level map read as 0: clear its top bit unless it
 * refills */
static void map_top_tidy(uint64_t *top, const uint64_t *words, int k)
{
    uint64_t kb = 1ull << k;
    /* seq_cst: the clear, then the read of the word (RINGS) */
    __atomic_fetch_and(top, ~kb, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&words[k], __ATOMIC_SEQ_CST) != 0)
        __atomic_fetch_or(top, kb, __ATOMIC_SEQ_CST);
}

static inline void xq_list(coro_sched_t *s, struct coro__xq *q)
{
    uint32_t zero = 0;
    /* seq_cst: the flag before the bit; one winner sets the bit */
    if (!__atomic_compare_exchange_n(&q->listed, &zero, 1, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED))
        return;
    map_set(&s->xq_top, s->xq_bits, q->idx);
}

static inline void xq_unlist(coro_sched_t *s, struct coro__xq *q)
{
    /* seq_cst: the bit, then the flag (a producer that lists it again
     * after seeing the flag clear sets the bit after ours is gone) */
    __atomic_fetch_and(&s->xq_bits[q->idx / 64], ~(1ull << (q->idx % 64)), __ATOMIC_SEQ_CST);
    __atomic_store_n(&q->listed, 0, __ATOMIC_SEQ_CST);
}

/* after xq_unlist without s->asym: list it again if it holds jobs */
static inline void xq_recheck(coro_sched_t *s, struct coro__xq *q)
{
    /* full barrier: our clear of listed before the look at the ring's
     * tail, against the producer's push then read of listed (RINGS) */
    coro__fence_seq_cst();
    if (coro__lq_size(&q->q) != 0)
        xq_list(s, q);
}

/* with s->asym: take an empty ring off the map, quiet in our name */
static void xq_quiet_off(struct coro__worker *w, struct coro__xq *q)
{
    coro_sched_t *s = w->s;

    xq_unlist(s, q);
    /* seq_cst: the name, then the quiet map's bit (a tidier clears the
     * bit, then reads the name) */
    __atomic_store_n(&q->quiet, (uint32_t)w->idx + 1, __ATOMIC_SEQ_CST);
    map_set(&s->xq_qtop, s->xq_quiet, q->idx);
}

/* ring q's quiet bit, its name read as 0: clear the bit unless a worker
 * named it again meanwhile */
static void xq_quiet_tidy(coro_sched_t *s, struct coro__xq *q)
{
    /* seq_cst: the clear, then the read of the name (RINGS) */
    __atomic_fetch_and(&s->xq_quiet[q->idx / 64], ~(1ull << (q->idx % 64)), __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&q->quiet, __ATOMIC_SEQ_CST) != 0)
        map_set(&s->xq_qtop, s->xq_quiet, q->idx);
}

/* the ring with bit i (set: the table entry was stored before it) */
static inline struct coro__xq *xq_at(coro_sched_t *s, unsigned i)
{
    /* acquire, both: the table pointer pairs with coro__thread_xq's CAS
     * that installs it, the entry with its release store (a plain read of
     * the pointer would race with that CAS in the C11 model: TSan saw it) */
    struct coro__xq **tab = __atomic_load_n(&s->xq_tab, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&tab[i], __ATOMIC_ACQUIRE);
}

/* a parking worker with s->asym, before its membarrier: take the rings
 * that look empty off the map, quiet in our name, and note in off[] (a
 * bit per ring, as in s->xq_bits) those and the quiet rings that bear
 * our name from earlier looks; returns whether it noted any */
static bool xq_unlist_empty(coro_sched_t *s, uint64_t *off)
{
    struct coro__worker *w = coro__tls_worker;
    uint32_t name = (uint32_t)w->idx + 1;
    bool any = false;
    uint64_t top = __atomic_load_n(&s->xq_top, __ATOMIC_ACQUIRE);

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: the entries of the bits read */
        uint64_t bits = __atomic_load_n(&s->xq_bits[k], __ATOMIC_ACQUIRE);
        while (bits) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            struct coro__xq *q = xq_at(s, (unsigned)k * 64 + b);
            bits &= bits - 1;
            if (coro__lq_size(&q->q) == 0)
                xq_quiet_off(w, q);
        }
        if (__atomic_load_n(&s->xq_bits[k], __ATOMIC_RELAXED) == 0)
            map_top_tidy(&s->xq_top, s->xq_bits, k);
    }
    /* acquire: the entries of the bits read */
    top = __atomic_load_n(&s->xq_qtop, __ATOMIC_ACQUIRE);
    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: pairs with the quieting worker's set of the bit; the
         * ring it names is then complete (RINGS) */
        for (uint64_t bits = __atomic_load_n(&s->xq_quiet[k], __ATOMIC_ACQUIRE); bits;
             bits &= bits - 1) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            /* relaxed: our own name, stored by this thread */
            if (__atomic_load_n(&xq_at(s, (unsigned)k * 64 + b)->quiet, __ATOMIC_RELAXED) ==
                name) {
                off[k] |= 1ull << b;
                any = true;
            }
        }
    }
    return any;
}

/* after the membarrier: the quiet rings xq_unlist_empty noted end their
 * quiet if they still bear our name, and are looked at again (relist:
 * listed again without looking, when the membarrier failed) */
static void xq_relook(coro_sched_t *s, const uint64_t *off, bool relist)
{
    uint32_t name = (uint32_t)coro__tls_worker->idx + 1;

    for (int k = 0; k < CORO__XQ_WORDS; k++)
        for (uint64_t bits = off[k]; bits; bits &= bits - 1) {
            struct coro__xq *q = xq_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            uint32_t mine = name;
            /* seq_cst: taken off again by another worker since, the ring
             * bears that one's name and stays quiet (RINGS) */
            if (!__atomic_compare_exchange_n(&q->quiet, &mine, 0, false, __ATOMIC_SEQ_CST,
                                             __ATOMIC_RELAXED))
                continue;
            xq_quiet_tidy(s, q);
            /* after the membarrier: a push that raced the take-off is
             * visible (RINGS) */
            if (relist || coro__lq_size(&q->q) != 0)
                xq_list(s, q);
        }
}

/* ---- submitting a READY job ----------------------------------------------- */

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
        __atomic_load_n(&coro__cls_get(s, 0)->nprio, __ATOMIC_RELAXED))
        return true;
    /* acquire: the served[] entries before nserved were written first */
    uint32_t n = __atomic_load_n(&w->nserved, __ATOMIC_ACQUIRE);
    /* acquire: as pop_classes reads the array */
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (__atomic_load_n(&coro__cls_get(s, served[i])->nprio, __ATOMIC_RELAXED))
            return true;
    return false;
}

/* the pops of w's own queues and of class queues, with their counts */
static inline coro_t *own_lq_pop(struct coro__worker *w, struct coro__lq *q, int pi)
{
    coro_t *j = coro__lq_pop(q);
    if (j)
        prio_add(&w->nprio, pi, -1);
    return j;
}

static inline coro_t *own_mq_pop(struct coro__worker *w, struct coro__mq *q, int pi)
{
    coro_t *j = coro__mq_pop(q);
    if (j)
        prio_add(&w->nprio, pi, -1);
    return j;
}

static inline coro_t *cls_pop(struct coro__cls *c, int pi)
{
    coro_t *j = coro__mq_pop(&c->q[pi]);
    if (j)
        prio_add(&c->nprio, pi, -1);
    return j;
}

static void push_global(coro_sched_t *s, coro_t *job)
{
    struct coro__cls *any = coro__cls_get(s, 0);
    int pi = CORO__PRIO_IDX(job->prio);

    prio_add(&any->nprio, pi, 1);
    coro__mq_push(&any->q[pi], job);
}

/* push job to w's own ring q, counted (full: false, nothing counted) */
static inline bool own_lq_push(struct coro__worker *w, struct coro__lq *q, int pi, coro_t *job)
{
    prio_add(&w->nprio, pi, 1);
    if (coro__lq_push(q, job))
        return true;
    prio_add(&w->nprio, pi, -1);
    return false;
}

/* local ring full: move half of it and job to the global queue, under one
 * lock (tokio).  One pop per job: taking the half with one CAS
 * (coro__lq_pop_batch, as spill_half does) measured worse on
 * spawn_many_local (docs/benchmarks.md; not explained - the batch CAS
 * races the thief's steals of the same ring) */
static void local_overflow(struct coro__worker *w, int pi, coro_t *job)
{
    coro_t *batch[CORO__LOCAL_SIZE / 2 + 1];
    unsigned n = 0;

    while (n < CORO__LOCAL_SIZE / 2 && (batch[n] = coro__lq_pop(&w->local[pi])))
        n++;
    batch[n++] = job;
    struct coro__cls *any = coro__cls_get(w->s, 0);
    prio_add(&any->nprio, pi, (int)n);
    coro__mq_push_batch(&any->q[pi], batch, n);
    prio_add(&w->nprio, pi, -(int)(n - 1));
}

/* a plain thread's submission ring is full: move its older half to the
 * global queue with one CAS (the thread takes from its own ring as a
 * worker would) and one lock.  Workers look at the global queue before
 * the rings, so the older half still runs first */
static void spill_half(coro_sched_t *s, struct coro__lq *q, int pi)
{
    coro_t *batch[CORO__XQ_SIZE / 2];
    unsigned n = coro__lq_pop_batch(q, batch, CORO__XQ_SIZE / 2);

    if (n)
        coro__mq_push_batch(&coro__cls_get(s, 0)->q[pi], batch, n);
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
        struct coro__cls *c = coro__cls_get(s, job->cls);
        prio_add(&c->nprio, pi, 1);         /* PRIORITIES */
        coro__mq_push(&c->q[pi], job);
        notify(s, c->wmask, false);
        return;
    }
    if (w && w->s == s) {
        if (CORO__UNLIKELY(w->catching) && !yield && !w->caught &&
            pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL) &&
            /* a HIGH or LOW job queued where we look sends this one the
             * usual way, to be picked in priority order */
            !prio_queued(w)) {
            /* woken by this worker's own look at epoll (worker_main): it
             * runs the job next, straight from here.  Private until then,
             * as a job in a step's hands is: no queue, no atomic, nobody
             * to wake (the LIFO slot would cost an exchange to put it
             * there and one to take it back) */
            w->caught = job;
            return;
        }
        if (yield) {
            /* the back of everything this worker has (tokio defers a
             * yielding task the same way); full: the global queue */
            if (!own_lq_push(w, &w->yielded[pi], pi, job))
                push_global(s, job);
            goto out;
        }
        if (pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL) && w->lifo_run != w->n_run) {
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
                return;     /* this worker runs it next: no one to wake (tokio) */
            }
            job = __atomic_exchange_n(&w->lifo, job, __ATOMIC_ACQ_REL);
            if (!job)
                return;     /* a thief took the old one: as above */
            pi = CORO__PRIO_IDX(job->prio);
        }
        if (!own_lq_push(w, &w->local[pi], pi, job))
            local_overflow(w, pi, job);
    out:
        if (s->nworkers > 1)
            notify(s, s->all_wmask, true);
        return;
    }
    /* from outside the workers.  A NORMAL job goes to the thread's own
     * submission ring: one lock-free push, no mutex (spawn_many_remote
     * spent half its spawning thread's time in the inbox's); the workers
     * take it as they take the global queue's, and an idle one is woken
     * for it.  HIGH and LOW jobs, and a full ring: an inbox,
     * looked at by its worker at that priority at every pick. */
    if (pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL)) {
        struct coro__xq *xq = coro__thread_xq(s);
        bool pushed = xq && coro__lq_push(&xq->q, job);
        if (xq && !pushed) {
            /* full: its older half to the global queue (one inbox lock
             * per job past the ring is a large share of a spawning thread) */
            spill_half(s, &xq->q, pi);
            pushed = coro__lq_push(&xq->q, job);
        }
        if (pushed) {
            notify_fence(s);
            /* relaxed: after the fence (RINGS); 1 on every push of a
             * burst, one read of a line that workers rarely write */
            if (CORO__UNLIKELY(!__atomic_load_n(&xq->listed, __ATOMIC_RELAXED)))
                xq_list(s, xq);
            /* any = false: wake an idle worker even when one searches,
             * as the inboxes' hand-off to an idle worker did */
            notify_fenced(s, s->all_wmask, false);
            return;
        }
    }
    /* hand it to an idle worker if there is one (Coop), else round-robin,
     * then make sure someone is awake for it */
    int idx = claim_idle(s, s->all_wmask);
    if (idx >= 0) {
        prio_add(&s->w[idx]->nprio, pi, 1);
        coro__mq_push(&s->w[idx]->inbox[pi], job);
        unpark(s, idx);
        return;
    }
    idx = tls_rr < (uint32_t)s->nslots ? (int)tls_rr : 0;
    tls_rr = (uint32_t)idx + 1;
    prio_add(&s->w[idx]->nprio, pi, 1);
    coro__mq_push(&s->w[idx]->inbox[pi], job);
    /* thieves skip parked workers (STEALING): if this one parked
     * meanwhile and its last look missed the job, it is the one to wake
     * (store-then-load against its bit-set then look, as in notify) */
    notify_fence(s);
    /* relaxed: after the fence; the RMW picks one claimer */
    if ((__atomic_load_n(&s->idle[idx / 64], __ATOMIC_RELAXED) & (1ull << (idx % 64))) &&
        claim_one(s, idx)) {
        unpark(s, idx);
        return;
    }
    notify_fenced(s, s->all_wmask, true);
}

void coro__submit_spawned(coro_sched_t *s, coro_t *job)
{
    struct coro__worker *w = coro__tls_worker;

    /* submit_'s usual case first, without its slow paths' register saves:
     * a step's first hand-off of a plain NORMAL job on this worker, into
     * an empty LIFO slot (a chain's next link, a fork's first child) */
    if (CORO__LIKELY(w && w->s == s && job->cls == 0 && job->prio == CORO_PRIO_NORMAL &&
                     w->lifo_run != w->n_run && !w->catching && !s->hist &&
                     /* relaxed: as coro__submit's look at the slot */
                     !__atomic_load_n(&w->lifo, __ATOMIC_RELAXED))) {
        w->lifo_run = w->n_run;
        /* release: as coro__submit's store to the slot */
        __atomic_store_n(&w->lifo, job, __ATOMIC_RELEASE);
        return;
    }
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

/* the one way a suspended job becomes READY (sched/sched.h) */
void coro__wake(coro_t *job, intptr_t res)
{
    job->top->result = res;
    coro__trace_wake(job);
    /* SUSPENDED -> READY, keeping the flags (the waker owns the job now);
     * release: the result is visible to the worker that acquires RUNNING */
    __atomic_sub_fetch(&job->state, CORO__S_SUSPENDED - CORO__S_READY, __ATOMIC_ACQ_REL);
    coro__submit(job->sched, job, false);
}

/* ---- looking for work -------------------------------------------------------- */

/* the class queues of the n classes we serve (pop_classes) */
static __attribute__((noinline)) coro_t *pop_served(struct coro__worker *w, int pi, uint32_t n)
{
    coro_sched_t *s = w->s;
    /* acquire: the array's copied entries (it grows, sched/cls.c SERVED) */
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);

    for (uint32_t i = 0; i < n; i++) {
        struct coro__cls *c = coro__cls_get(s, served[i]);
        if (coro__mq_size(&c->q[pi]) == 0)
            continue;
        coro_t *j = cls_pop(c, pi);
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

/* take half of the n jobs of ring q (at least one) with one CAS: keep the
 * first (keep_first), put the rest in ring dst (full: the global queue) */
static coro_t *take_half_lq(struct coro__worker *w, struct coro__lq *q, unsigned n,
                            struct coro__lq *dst, bool keep_first, unsigned *got,
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
    unsigned room = CORO__LOCAL_SIZE - 1 - coro__lq_size(dst) + (keep_first ? 1 : 0);
    if (want > room)
        want = room;
    if (want == 0)
        return NULL;
    /* deque: a victim's local ring, whose owner may take its newest job
     * back (base/mq.c, TAKING BACK) */
    unsigned k = deque ? coro__lq_steal(q, batch, want) : coro__lq_pop_batch(q, batch, want);
    for (unsigned i = keep_first ? 1 : 0; i < k; i++)
        if (!own_lq_push(w, dst, pi, batch[i]))
            push_global(w->s, batch[i]);
    prio_add(src_nprio, pi, -(int)k);   /* after the moves: PRIORITIES */
    if (k > (keep_first ? 1u : 0u))
        w->took_more = true;
    *got += k;
    return k && keep_first ? batch[0] : NULL;
}

/* the rings on the map (RINGS), from pop_xq.  off: an empty ring is taken
 * off (with s->asym, at the periodic look only: quiet in our name) */
static coro_t *pop_xq_map(struct coro__worker *w, uint64_t top, bool keep_first, bool off,
                          unsigned *got)
{
    coro_sched_t *s = w->s;

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        uint64_t bits = __atomic_load_n(&s->xq_bits[k], __ATOMIC_ACQUIRE);
        if (!bits) {
            map_top_tidy(&s->xq_top, s->xq_bits, k);
            continue;
        }
        while (bits) {
            struct coro__xq *q = xq_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            bits &= bits - 1;
            unsigned n = coro__lq_size(&q->q);
            if (n == 0) {
                if (!s->asym) {
                    xq_unlist(s, q);
                    xq_recheck(s, q);
                } else if (off) {
                    xq_quiet_off(w, q);
                }
                continue;
            }
            coro_t *j = take_half_lq(w, &q->q, n, &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)],
                                     keep_first, got, NULL, CORO__PRIO_IDX(CORO_PRIO_NORMAL),
                                     false);
            if (j || *got)
                return j;
        }
    }
    return NULL;
}

/* the quiet rings (RINGS: membarrier mode), at the periodic look and at
 * the park's last look: one that holds jobs, which a push racing
 * its take-off left there, is listed again and half of it taken */
static __attribute__((noinline)) coro_t *pop_xq_quiet(struct coro__worker *w, bool keep_first)
{
    coro_sched_t *s = w->s;
    unsigned got = 0;
    /* acquire: the words' bits, then the entries (RINGS) */
    uint64_t top = __atomic_load_n(&s->xq_qtop, __ATOMIC_ACQUIRE);

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: as in the periodic look's read of the quiet words */
        uint64_t bits = __atomic_load_n(&s->xq_quiet[k], __ATOMIC_ACQUIRE);
        if (!bits) {
            map_top_tidy(&s->xq_qtop, s->xq_quiet, k);
            continue;
        }
        while (bits) {
            struct coro__xq *q = xq_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            bits &= bits - 1;
            /* seq_cst: a tidier reads the name after its clear (RINGS) */
            if (__atomic_load_n(&q->quiet, __ATOMIC_SEQ_CST) == 0) {
                xq_quiet_tidy(s, q);
                continue;
            }
            unsigned n = coro__lq_size(&q->q);
            if (n == 0)
                continue;
            /* relaxed: a hint; xq_list's CAS decides */
            if (!__atomic_load_n(&q->listed, __ATOMIC_RELAXED))
                xq_list(s, q);
            coro_t *j = take_half_lq(w, &q->q, n, &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)],
                                     keep_first, &got, NULL, CORO__PRIO_IDX(CORO_PRIO_NORMAL),
                                     false);
            if (j || got)
                return j;
        }
    }
    return NULL;
}

/* jobs from the plain threads' submission rings (NORMAL only): half of
 * the first ring with any, the first to run, the rest to our local ring
 * behind what it holds; off: the periodic look (pop_xq_map) */
static inline coro_t *pop_xq(struct coro__worker *w, bool keep_first, bool off)
{
    coro_sched_t *s = w->s;
    unsigned got = 0;
    /* acquire: the words' bits, then the entries (RINGS) */
    uint64_t top = __atomic_load_n(&s->xq_top, __ATOMIC_ACQUIRE);

    if (CORO__LIKELY(top == 0))
        return NULL;
    return pop_xq_map(w, top, keep_first, off, &got);
}

/* the periodic look at the submission rings (global_first): with jobs in
 * our local ring, which may hold earlier jobs of the same ring, the batch
 * goes behind them and none runs now - a thread's jobs keep their order,
 * and they wait at most for the ring's jobs ahead of them.  The quiet
 * rings too (RINGS) */
static coro_t *pop_xq_fair(struct coro__worker *w)
{
    bool keep = coro__lq_size(&w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)]) == 0;
    coro_t *j = pop_xq(w, keep, true);

    /* relaxed: a hint (the quiet map is looked at again at every park's
     * last look, after its membarrier) */
    if (!j && CORO__UNLIKELY(__atomic_load_n(&w->s->xq_qtop, __ATOMIC_RELAXED)))
        j = pop_xq_quiet(w, keep);
    return j;
}

static inline coro_t *pop_level(struct coro__worker *w, int pi, bool global_first)
{
    coro_sched_t *s = w->s;
    struct coro__cls *any = coro__cls_get(s, 0);
    coro_t *j;

    bool normal = pi == CORO__PRIO_IDX(CORO_PRIO_NORMAL);
    if (global_first) {
        if ((j = cls_pop(any, pi)) || (normal && (j = pop_xq_fair(w))) ||
            (j = pop_classes(w, pi)) || (j = own_mq_pop(w, &w->inbox[pi], pi)) ||
            (j = own_lq_pop(w, &w->yielded[pi], pi)))
            goto other;
    }
    if (normal && w->lifo_streak < CORO__LIFO_MAX &&
        __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) &&
        /* acq_rel: pairs with the exchange that put the job there */
        (j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL))) {
        w->lifo_streak++;
        return j;
    }
    if ((j = own_lq_pop(w, &w->local[pi], pi)) || (j = own_mq_pop(w, &w->inbox[pi], pi)) ||
        (j = pop_classes(w, pi)) || (j = cls_pop(any, pi)) ||
        (normal && (j = pop_xq(w, true, false))) || (j = own_lq_pop(w, &w->yielded[pi], pi)))
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

static uint32_t rng_next(struct coro__worker *w)
{
    /* xorshift32 */
    uint32_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return w->rng = x;
}

/* take half of the n jobs of a victim's inbox q (at least one), one
 * dequeue each (its ring has a mutex among producers and an overflow
 * list): keep the first, put the rest in the thief's ring dst (full: the
 * global queue) */
static coro_t *take_half_mq(struct coro__worker *w, struct coro__mq *q, unsigned n,
                            struct coro__lq *dst, unsigned *got, uint32_t *src_nprio, int pi)
{
    coro_t *first = NULL;

    for (unsigned k = 0, want = (n + 1) / 2; k < want; k++) {
        coro_t *j = coro__mq_pop(q);
        if (!j)
            break;
        ++*got;
        if (!first) {
            first = j;
        } else {
            w->took_more = true;
            if (!own_lq_push(w, dst, pi, j))
                push_global(w->s, j);
        }
        prio_add(src_nprio, pi, -1);
    }
    return first;
}

static coro_t *steal_from(struct coro__worker *w, struct coro__worker *v, int pi)
{
    unsigned got = 0;
    coro_t *first = take_half_lq(w, &v->local[pi], coro__lq_size(&v->local[pi]),
                                 &w->local[pi], true, &got, &v->nprio, pi, true);
    if (!first)
        first = take_half_mq(w, &v->inbox[pi], coro__mq_size(&v->inbox[pi]),
                             &w->local[pi], &got, &v->nprio, pi);
    if (!first)     /* jobs that yielded stay behind the thief's other work */
        first = take_half_lq(w, &v->yielded[pi], coro__lq_size(&v->yielded[pi]),
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
/* at most half the workers search (at least one) */
static inline uint32_t search_max(const coro_sched_t *s)
{
    return s->nslots / 2 > 0 ? (uint32_t)s->nslots / 2 : 1;
}

static bool start_searching(struct coro__worker *w)
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

/* returns true when w was the last searcher */
static bool stop_searching(struct coro__worker *w)
{
    if (!w->searching)
        return false;
    w->searching = false;
    /* seq_cst: a notifier that saw us searching must be covered by our
     * later looks or by the wake we send when we were the last one */
    return __atomic_sub_fetch(&w->s->searching, 1, __ATOMIC_SEQ_CST) == 0;
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
 * clear (a parked worker's queues are empty: STEALING at the top), those
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
            if (k == w->idx / 64)
                bits &= ~(1ull << (w->idx % 64));
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

int coro__test_steal_order(coro_sched_t *s, int widx, int *vic)
{
    static const uint64_t none[CORO__WMASK_WORDS];

    return steal_order(s->w[widx], vic, none);
}

static coro_t *steal(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    int vic[CORO_MAX_WORKERS];
    coro_t *j = NULL;

    if (s->nslots < 2)
        return NULL;
    int n = steal_order(w, vic, s->idle);
    if (n == 0)
        return NULL;
    for (int pi = CORO__NPRIO - 1; pi >= 0 && !j; pi--)
        for (int i = 0; i < n && !j; i++)
            j = steal_from(w, s->w[vic[i]], pi);
    if (!j)
        j = steal_lifo(w, vic, n, 0);
    return j;
}

/* a job was found: the anti-starvation counters, a new idle phase */
/* the queue index of each priority (CORO__PRIO_IDX) */
enum {
    PI_LOW = CORO__PRIO_IDX(CORO_PRIO_LOW),
    PI_NORMAL = CORO__PRIO_IDX(CORO_PRIO_NORMAL),
    PI_HIGH = CORO__PRIO_IDX(CORO_PRIO_HIGH),
};

static coro_t *found_(struct coro__worker *w, coro_t *j)
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
static inline coro_t *find_own_(struct coro__worker *w, bool limit_steal)
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
     * after this look (top of file).  The last look before parking
     * (limit_steal false) looks everywhere all the same. */
    if (limit_steal && !global_first && !prio_queued(w))
        j = pop_level(w, CORO__PRIO_IDX(CORO_PRIO_NORMAL), false);
    else
        for (int k = 0; k < CORO__NPRIO && !j; k++)
            j = pop_level(w, order[k], global_first);
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
    if (!j && !limit_steal && CORO__UNLIKELY(__atomic_load_n(&w->s->xq_qtop, __ATOMIC_ACQUIRE)))
        j = pop_xq_quiet(w, true);
    return j;
}

/* the other workers' queues, as a searcher (limit_steal: if there is
 * room for one more) */
static coro_t *find_others_(struct coro__worker *w, bool limit_steal)
{
    /* an idle phase sweeps the others at its looks 0, 1, 3, 7 and 15
     * only (then at its park): a failed sweep reads every busy victim's
     * queues, and a job pushed meanwhile is covered by the searchers'
     * next sweep or by the park protocol (its notify wakes a parked
     * worker when no one searches) */
    unsigned n = w->idle_looks++;
    if (limit_steal && (n & (n + 1)) != 0)
        return NULL;
    return !limit_steal || start_searching(w) ? steal(w) : NULL;
}

static coro_t *find_work_(struct coro__worker *w, bool limit_steal)
{
    coro_t *j = find_own_(w, limit_steal);

    return found_(w, j ? j : find_others_(w, limit_steal));
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
        n += coro__lq_size(&w->local[pi]) + coro__mq_size(&w->inbox[pi]) +
             coro__lq_size(&w->yielded[pi]);
    return n;
}

/* ---- parking ------------------------------------------------------------------ */

/* epoll_wait returned in coro__io_park: we are no longer idle, so that the
 * jobs we wake do not send a wake-up back to us */
static void clear_idle(void *arg)
{
    struct coro__worker *w = arg;
    idle_clear(w->s, w->idx);
}

/* activity: coro__io_activity at the start of the idle phase */
static coro_t *park(struct coro__worker *w, uint32_t activity)
{
    coro_sched_t *s = w->s;
    coro_t *j;

    stop_searching(w);          /* the last look below covers what we leave */
    coro__flush_live(w, 0);     /* shutdown may be waiting for our units */
    coro__frames_flush(s);      /* their owners may be waiting for frames */
    /* acquire: pairs with the waker's release increment */
    uint32_t epoch = __atomic_load_n(&w->futex, __ATOMIC_ACQUIRE);
    /* the bit is visible before our last look (protocol step 2) */
    idle_set(s, w->idx);
    /* with s->asym a notifier fences with the compiler only: its push may
     * still sit in its CPU's store buffer, its reads of our bit done
     * before our store.  membarrier runs a full barrier on each CPU that
     * runs one of our threads: after it, every push whose notify missed
     * our bit is visible to the look below (PARKING at the top).  If it
     * fails (it cannot once registered; a scheduler inherited across a
     * fork would see -EPERM) we sleep with a timeout only */
    uint64_t off[CORO__XQ_WORDS];
    bool took = false;
    if (s->asym) {
        memset(off, 0, sizeof off);
        took = xq_unlist_empty(s, off);
    }
    bool timed = s->asym && CORO__UNLIKELY(coro__membarrier_heavy() < 0);
    /* the rings taken off before the membarrier: after it, a push their
     * producer made without listing them is visible (RINGS) */
    if (took)
        xq_relook(s, off, timed);
    w->idle_looks = 0;
    /* the last look: our own queues, then the others' unless the
     * searchers are at their cap - they cover the others' queues, and
     * the last of them to stop looks there itself or wakes a worker in
     * its place (SEARCHING at the top; seq_cst: after our bit) */
    j = find_own_(w, false);
    if (!j && __atomic_load_n(&s->searching, __ATOMIC_SEQ_CST) < search_max(s))
        j = steal(w);
    if ((j = found_(w, j)) || __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
        bool had = idle_clear(s, w->idx);
        /* a notifier claimed us meanwhile: its wake was for a job pushed
         * after our look began, which we may not be taking (the job we
         * found may be another, and may run for long).  Pass the wake on
         * (tools/model/search.pml: without it a job stayed queued with a
         * worker asleep).  The claimer's mask is not known here: a job
         * of a narrower class may wake a worker that cannot run it, and
         * then waits for us as before */
        if (j && !had && s->nworkers > 1)
            notify(s, s->all_wmask, false);
        goto out;
    }
    stat_inc(&w->n_parks);
    coro__trace_park(w, false);
    if (s->nworkers == 0) {
        int64_t dl = coro__tls_drive_deadline;      /* coro_join_timeout */
        if (s->io && s->drv->pending(s->io)) {
            int64_t left = dl ? dl - coro__now() : -1;
            s->drv->poll(s->io, dl && left < 0 ? 0 : left);    /* single-threaded: wait in epoll */
        } else {
            coro__futex_wait(&w->futex, epoch, dl ? dl : -1);
        }
    } else if (w->lifo_watch >= 0 || timed) {
        /* our last look saw a job in another worker's LIFO slot and left
         * it there (steal_lifo: the slot's owner may be about to run it).
         * If that worker is in fact in a long step, nobody would wake us
         * for the job: sleep at most CORO__LIFO_PARK_NS, then look again
         * (the watch then takes the job if the owner started no step).
         * Or the membarrier failed: a push may have reached no one, and
         * the look after the timeout sees it */
        coro__futex_wait(&w->futex, epoch, coro__now() + CORO__LIFO_PARK_NS);
    } else if (!s->io || s->drv->park(s->io, w->idx, &w->futex, epoch, activity, clear_idle,
                                           w) < 0) {
        coro__futex_wait(&w->futex, epoch, -1);     /* another thread waits in epoll */
    }
    idle_clear(s, w->idx);
    coro__trace_park(w, true);
    stat_inc(&w->n_wakeups);
    /* a woken worker searches (tokio's notified worker does): when it
     * finds work and is the last searcher it wakes another, so a burst
     * whose notifies found a searcher and woke only us still gets as
     * many workers as it has jobs (io_standby: four jobs from a plain
     * thread while one worker searched - two of them waited for good) */
    start_searching(w);
out:
    return j;
}

coro_t *coro__park(struct coro__worker *w)
{
    return park(w, w->s->io ? w->s->drv->activity(w->s->io) : 0);
}

/* ---- running a job ------------------------------------------------------------- */

/* A body returned an int that no macro produces: a plain `return` in the
 * body (coro.h's status words are distinctive for this).  Refuse it here,
 * naming the body, rather than read a stale or NULL awaitable below.  The
 * name comes from the dynamic symbol table when the body is exported;
 * otherwise the object and offset, for addr2line. */
__attribute__((noreturn, noinline, cold))
static void bad_body(const coro_t *cur, int st)
{
    Dl_info di;
    void *fn = (void *)(uintptr_t)cur->fn;
    const char *obj = "?", *name = NULL;
    uintptr_t off = (uintptr_t)fn;

    if (dladdr(fn, &di)) {
        if (di.dli_fname)
            obj = di.dli_fname;
        if (di.dli_sname && di.dli_saddr == fn)
            name = di.dli_sname;
        off = (uintptr_t)fn - (uintptr_t)di.dli_fbase;
    }
    fprintf(stderr,
            "corokit: coroutine body %s (%p, %s+0x%jx: addr2line -f -e %s 0x%jx) returned %d: "
            "a body ends with CORO_END or CORO_RETURN, never a plain return\n",
            name ? name : "?", fn, obj, (uintmax_t)off, obj, (uintmax_t)off, st);
    abort();
}

/* ---- diagnostics of a step (config .stall_ns, .histograms) ----------------- */

static inline void hist_inc(uint64_t *h, int64_t ns)
{
    stat_inc(&h[coro__hist_bucket(ns)]);
}

/* the step of job begins on w: returns its start (ns) */
static int64_t diag_begin(struct coro__worker *w, coro_t *job)
{
    coro_sched_t *s = w->s;
    int64_t t0 = coro__now();

    if (s->hist) {
        /* the ready stamp coro__submit left (64 ns units, wraps after
         * 274 s: an older stamp reads as a shorter wait) */
        uint32_t now_u = (uint32_t)((uint64_t)t0 >> CORO__READY_SHIFT);
        int64_t age = (int64_t)(uint32_t)(now_u - job->reserved) << CORO__READY_SHIFT;
        hist_inc(w->h_ready[CORO__PRIO_IDX(job->prio)], age);
        if (job->flags & CORO__FL_IOWAKE)
            hist_inc(w->h_io, age);
    }
    /* relaxed: read racily by coro_sched_dump, for display only */
    __atomic_store_n(&w->cur_t0, t0, __ATOMIC_RELAXED);
    return t0;
}

/* the body returned, the job is still ours: report a stall once per step */
static inline void diag_check(struct coro__worker *w, coro_t *job, coro_fn fn, int64_t t0,
                              bool *stalled)
{
    coro_sched_t *s = w->s;
    if (s->stall_ns > 0 && !*stalled) {
        int64_t d = coro__now() - t0;
        if (d > s->stall_ns) {
            *stalled = true;
            stat_inc(&w->n_stalls);
            coro__stall_report(w, job, fn, d);
        }
    }
}

/* the step ended (the job may no longer be ours: not touched) */
static void diag_end(struct coro__worker *w, int64_t t0)
{
    if (w->s->hist)
        hist_inc(w->h_step, coro__now() - t0);
    __atomic_store_n(&w->cur_t0, 0, __ATOMIC_RELAXED);
}

/* CONTINUING.  A step that hands off one NORMAL job puts it in the LIFO
 * slot (coro__submit): the child a chain link spawned, the parent a finishing
 * child woke (its coro_done), the first child a fork spawned before it
 * awaits it.  The worker would pick it next anyway (pop_level takes the
 * slot first while lifo_streak < CORO__LIFO_MAX), after a trip through
 * its loop, find_own_ and pop_level that costs more than the job itself
 * when the job is small.  So coro__run_job takes it at once, as pop_level
 * would, under the same bounds: the streak (its other queued jobs still
 * get a pick after CORO__LIFO_MAX runs from the slot; with none queued,
 * the slot runs again, as find_own_ then takes it), the tick of the
 * periodic look at the shared queues (find_own_: when it is due and a
 * NORMAL job waits there, the loop makes it), no HIGH or LOW job queued
 * where we look (PRIORITIES), no yielder kept aside (DEFERRED YIELDS),
 * and a step count that is not due for a look at epoll while a job waits
 * on an fd (BUSY LOOKS: the loop's coro__look_due makes it; a yield ends
 * the run with its own look).  A look due with nothing to find counts as
 * made (looks_idle).  The exchange still takes the
 * slot from thieves, who may have stolen it meanwhile.  Worker threads
 * only: the single-threaded driver counts each finished job itself
 * (rt/join.c).  The step's end calls run_next only when it filled the
 * slot: a step that yielded or handed nothing off pays one comparison. */
/* the periodic look is due: anything NORMAL where it would look */
static bool shared_waiting(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    const int pi = CORO__PRIO_IDX(CORO_PRIO_NORMAL);

    /* relaxed: hints, as the look's own size reads */
    if (coro__mq_size(&coro__cls_get(s, 0)->q[pi]) || coro__mq_size(&w->inbox[pi]) ||
        coro__lq_size(&w->yielded[pi]))
        return true;
    /* the submission rings on the map (RINGS): an empty one may stay
     * there until a park, so their sizes */
    uint64_t top = __atomic_load_n(&s->xq_top, __ATOMIC_ACQUIRE);
    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: the words' bits, then the entries (RINGS) */
        uint64_t bits = __atomic_load_n(&s->xq_bits[k], __ATOMIC_ACQUIRE);
        for (; bits; bits &= bits - 1)
            if (coro__lq_size(&xq_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits))->q))
                return true;
    }
    /* acquire: as pop_classes */
    uint32_t n = __atomic_load_n(&w->nserved, __ATOMIC_ACQUIRE);
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (coro__mq_size(&coro__cls_get(s, served[i])->q[pi]))
            return true;
    return false;
}

/* CONTINUING and JOINING INLINE run a job without the worker's loop: the
 * looks the loop would make now (the periodic look at the shared queues,
 * the busy look at epoll) are due only when something waits there; with
 * nothing, they count as made.  False: something waits, the caller ends
 * its run and the loop looks */
static __attribute__((noinline)) bool looks_idle_slow(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (w->tick == 0) {
        if (shared_waiting(w))
            return false;
        w->tick = CORO__GLOBAL_INTERVAL;
    }
    if (s->io && (w->poll_steps <= 1 || w->poll_yield)) {
        if (w->poll_yield || s->drv->fd_waiting(s->io))
            return false;
        w->poll_steps = CORO__IO_POLL_STEPS;
    }
    return true;
}

static inline bool looks_idle(struct coro__worker *w)
{
    if (CORO__LIKELY(w->tick != 0 &&
                     (!w->s->io || (w->poll_steps > 1 && !w->poll_yield))))
        return true;    /* no look due */
    return looks_idle_slow(w);
}

static inline coro_t *take_next(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (w->lifo_run != w->n_run || w->deferred || s->nworkers == 0 || prio_queued(w))
        return NULL;
    if (w->lifo_streak >= CORO__LIFO_MAX) {
        /* the bound gives the worker's other queued jobs a pick: with
         * none, the slot runs again (as find_own_ takes it then) */
        if (coro__lq_size(&w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)]) || shared_waiting(w))
            return NULL;
        w->lifo_streak = 0;
    }
    if (!looks_idle(w))
        return NULL;
    /* acq_rel: as pop_level's exchange (the job's frame is complete) */
    coro_t *j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL);
    if (!j)
        return NULL;    /* a thief took it */
    w->lifo_streak++;
    w->tick--;
    if (s->io)
        w->poll_steps--;
    return found_(w, j);
}

/* the job after a step that filled the LIFO slot (CONTINUING); done: the
 * step's job finished.  Returns what coro__run_job returns for the last
 * job run */
static bool run_next(struct coro__worker *w, bool done);

/* errno as the jobs run on this thread left it: put back before each step
 * of a body, so that no system call, futex or allocation of the library's
 * own between two steps shows through (a job that resumes on the thread
 * it left finds the errno it left) */
static __thread int tls_job_errno;
/* this thread's &errno, asked of libc once: a call per step otherwise
 * (__errno_location), on the path of every step */
static __thread int *tls_errp;

/* JOINING INLINE.  A job that awaits coro_done of a child still queued,
 * unstarted or ready, on its own worker - in the LIFO slot, or the newest
 * job of the local NORMAL ring (a fork's first and last child) - runs that
 * child now, inside its own step, as oneTBB's task_group::wait runs the
 * tasks it spawned: no suspension of the parent, no joiner record, no
 * wake-up, no trip of either through a queue.  The child's step is an
 * ordinary one (coro__run_job's body, nested on the C stack), and:
 *   - finished: the parent's await completes with the child's result,
 *     taken before the finish (a pool frame may be given back there; the
 *     result travels by value as to any awaiter).  Other awaiters of the
 *     child are woken by its finish as always.
 *   - not finished (it awaits something pending, yields, reschedules):
 *     it is an ordinary job again, suspended or queued, and the parent
 *     arms its coro_done as it would have (lib/wait/done.c), which sees
 *     the child as it is now, running elsewhere or even done.
 * Taking the child out of the queue is the owner's take of its own queue:
 * an exchange of the LIFO slot, or the deque's take-back of the ring's
 * newest job (base/mq.c, TAKING BACK); a thief that got there first wins
 * and the parent waits as usual.  Idle workers still steal queued
 * children from the ring's oldest end.
 * Promises kept: only a class-0 NORMAL job is taken (the LIFO slot and
 * the NORMAL ring hold nothing else), so any worker's mask allows it;
 * never while a HIGH or LOW job is queued where the worker looks
 * (PRIORITIES): with a HIGH one the worker would pick that first, and a
 * LOW one is kept from starving by the pick counters, which an inline
 * run does not see - a NORMAL child runs inline only where it would be
 * the worker's next pick anyway; never past CORO__INLINE_DEPTH jobs deep
 * (each level is the worker's C stack); never while a yielder is kept
 * aside (DEFERRED YIELDS), nor on a single-threaded scheduler (its driver
 * counts each finished job, and a seeded run picks each job by its PRNG).
 * The periodic look (CORO__GLOBAL_INTERVAL ticks) and the busy look at
 * epoll (BUSY LOOKS) count inline runs as steps: when one is due and
 * something waits there - a NORMAL job in the global queue, a served
 * class queue, the inbox, a submission ring or the yield ring, or a job
 * waiting on an fd - the parent waits as usual, its step ends and the
 * worker's loop makes the look; when nothing waits the count starts
 * again.  Cancel and deadlines: the parent's own checks come first (an
 * await of a cancelled or late job never runs a child); the child's are
 * its own steps'.  The trace records the parent's step as ending at the
 * await, then the child's steps, then the parent's next one; the dump
 * lists the parents (w->nested) under the job their worker runs. */
static bool run_inline(struct coro__worker *w, coro_t *child, intptr_t *res);

/* job's await aw (coro_done of aw->arg[0].p) at depth w->nest: 0 when the
 * child was not taken (the parent arms as usual, its step traced by the
 * caller); 1 when it ran and finished, *res its result; 2 when it ran and
 * did not finish (the parent arms as usual, its step already traced) */
static int join_inline(struct coro__worker *w, coro_t *job, coro_await_t *aw, uint64_t *tr0,
                       intptr_t *res)
{
    coro_sched_t *s = w->s;
    coro_t *child = aw->arg[0].p;
    struct coro__lq *ring = &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)];
    uint32_t d = w->nest;
    /* relaxed: only this worker fills its slot, so seen holding child it
     * holds child or nothing (a thief's exchange took it) */
    bool slot = __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) == child;

    /* first the child's place (an await of a job queued elsewhere, or
     * running, pays two loads), then the rules */
    if ((!slot && coro__lq_newest(ring) != child) || d >= CORO__INLINE_DEPTH ||
        s->nworkers == 0 || w->deferred || prio_queued(w) || !looks_idle(w))
        return 0;
    if (slot) {
        /* acq_rel: as pop_level's exchange (the job's frame is complete) */
        if (__atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL) != child)
            return 0;
    } else if (!coro__lq_unpush(ring, child)) {
        return 0;
    }
    w->tick--;
    if (s->io)
        w->poll_steps--;
    found_(w, child);
    coro__trace_step(w, job, tr0, CORO__TR_END_AWAIT, aw);
    int budget = coro__tls_budget;
    int64_t t0 = w->cur_t0;
    const char *name = w->cur_name;
    /* relaxed: read racily by coro_sched_dump (addresses only) */
    __atomic_store_n(&w->nested[d], job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->nest, d + 1, __ATOMIC_RELAXED);
    bool done = run_inline(w, child, res);
    __atomic_store_n(&w->nest, d, __ATOMIC_RELAXED);
    /* the parent's step goes on: what run_job_ set for it at its start */
    coro__tls_in_job = 1;
    coro__tls_budget = budget;
    __atomic_store_n(&w->cur, job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_fn, job->fn, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_name, name, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_t0, t0, __ATOMIC_RELAXED);
    return done ? 1 : 2;
}

/* coro__run_job's body; diag is a constant: the compiler makes one copy
 * without the diagnostics (the common case) and one with them */
static inline __attribute__((always_inline)) bool run_job_(struct coro__worker *w, coro_t *job,
                                                           const bool diag, const bool cont,
                                                           intptr_t *done_res)
{
    coro_sched_t *s = w->s;
    coro_t *cur = job->top;
    coro_await_t *aw;
    intptr_t res;
    int64_t t0 = 0;
    bool stalled = false;

    /* the job stays READY while it runs: no store to its state word here
     * (one locked instruction per step saved).  Whoever dequeued it owns
     * it, and nothing else tells a queued job from a running one (the
     * dump asks w->cur); the queue's pop acquired what its waker wrote */
    coro__tls_budget = CORO__BUDGET;
    coro__tls_in_job = 1;
    stat_inc(&w->n_run);
    /* relaxed: what this worker runs, for coro_sched_dump (never
     * dereferenced there: the job's identity and body only) */
    __atomic_store_n(&w->cur, job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_fn, job->fn, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_name, coro__job_name(job), __ATOMIC_RELAXED);
    if (diag)
        t0 = diag_begin(w, job);
    /* errno: the thread's as its jobs left it, whatever the library did
     * between their steps (include/corokit/error.h) */
    int *errp = tls_errp;
    if (CORO__UNLIKELY(!errp))
        errp = tls_errp = &errno;
    uint64_t tr0 = coro__trace_begin(w);
    if (job->flags & CORO__FL_IOWAKE) {
        job->flags &= (uint8_t)~CORO__FL_IOWAKE;
        stat_inc(&w->n_io);
        /* readiness woke it to make its own call here: its await is
         * armed again (the arm clears the flag), the body resumes only
         * once the operation completed */
        if (job->flags & CORO__FL_REARM) {
            aw = &cur->aw;
            goto rearm;
        }
    }
#define STEP_END()                                                                 \
    do {                                                                           \
        if (diag)                                                                  \
            diag_end(w, t0);                                                       \
        __atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED);                         \
    } while (0)
    for (;;) {
        *errp = tls_job_errno;
        int st = cur->fn(cur);
        tls_job_errno = *errp;

        if (diag)
            diag_check(w, job, cur->fn, t0, &stalled);
        if (st == CORO__ST_DONE) {
            if (cur == job) {
                if (done_res)   /* JOINING INLINE: before the frame may go */
                    *done_res = job->result;
                STEP_END();
                /* still "in a job" while the job finishes: its on_exit
                 * hook runs on this worker, and a coro_join or blocking
                 * call there must get -EDEADLK, not block the worker */
                coro__trace_step(w, job, &tr0, CORO__TR_END_DONE, NULL);
                w->s->finish(job);     /* the one upcall: rt/runtime.c */
                coro__tls_in_job = 0;
                /* a chain's next link, or the parent this end woke */
                return !cont && w->lifo_run == w->n_run ? run_next(w, true) : true;
            }
            /* a coro_call child returned: its caller continues at once */
            coro_t *parent = cur->parent;
            parent->result = cur->result;
            /* release: the child frame's last writes before a later
             * spawn or call of it acquires DONE */
            __atomic_store_n(&cur->state, CORO__S_DONE, __ATOMIC_RELEASE);
            job->top = cur = parent;
            continue;
        }
        if (st == CORO__ST_YIELD) {
            STEP_END();
            coro__trace_step(w, job, &tr0, CORO__TR_END_YIELD, NULL);
            coro__tls_in_job = 0;     /* READY already: requeue it */
            w->poll_yield = true;     /* a point to look at epoll (BUSY LOOKS) */
            if (CORO__LIKELY(job->cls == 0) && CORO__LIKELY(!s->hist)) {
                /* the back of everything this worker has (submit_'s
                 * yield, without the questions whose answers are known
                 * here: a class-0 job, on its own worker, never the
                 * job a look at epoll caught) */
                int pi = CORO__PRIO_IDX(job->prio);
                if (CORO__UNLIKELY(!own_lq_push(w, &w->yielded[pi], pi, job)))
                    push_global(s, job);
                if (s->nworkers > 1)
                    notify(s, s->all_wmask, true);
                return false;
            }
            if (job->cls != 0 && s->nworkers > 0 && !w->deferred) {
                w->deferred = job;    /* behind the next picks (DEFERRED YIELDS) */
                /* a job only this worker may run waits behind up to
                 * CORO__GLOBAL_INTERVAL picks; one that another may run,
                 * one pick: then it is queued where that one looks */
                w->defer_picks = coro__cls_get(s, job->cls)->nworkers > 1
                                     ? CORO__GLOBAL_INTERVAL - 1 : 0;
                return false;
            }
            coro__submit(s, job, true);
            return false;
        }
        if (CORO__UNLIKELY(st != CORO__ST_AWAIT || !cur->aw.ops))
            bad_body(cur, st);
        aw = &cur->aw;
        if (aw->ops == &coro__call_ops) {
            coro_t *child = aw->arg[0].p;
            /* claim the child with one CAS, as coro_spawn claims a frame:
             * of two jobs calling one idle frame at once exactly one runs
             * it, the other gets -EBUSY.  acquire (load and CAS): a child
             * frame that finished elsewhere is complete; the CAS makes one
             * of two racing claimers (call or spawn) win */
            uint32_t cs = __atomic_load_n(&child->state, __ATOMIC_ACQUIRE);
            bool busy = false;
            do {
                uint32_t ls = cs & CORO__S_MASK;
                if (ls != CORO__S_IDLE && ls != CORO__S_DONE) {
                    busy = true;
                    break;
                }
            } while (!__atomic_compare_exchange_n(&child->state, &cs, CORO__S_CHILD, false,
                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
            if (busy) {
                cur->result = -EBUSY;
                continue;
            }
            child->fn = (coro_fn)aw->arg[1].p;
            child->resume = 0;
            child->result = 0;
            child->parent = cur;        /* a child's link: never its top */
            child->joiner = NULL;
            child->sched = s;
            child->cls = job->cls;
            child->prio = job->prio;
            job->top = cur = child;
            continue;
        }
        /* cancel: an await that has not completed returns -ECANCELED at
         * once.  Never the budget yield: it carries the result of an
         * operation that already completed (an item received, bytes read,
         * an fd accepted), which must reach the body */
        if (aw->ops != &coro__yield_ops &&
            (__atomic_load_n(&s->cancelling, __ATOMIC_RELAXED) ||
             /* relaxed: a hint; the wait structures check it again */
             (__atomic_load_n(&job->state, __ATOMIC_RELAXED) & CORO__F_CANCEL))) {
            cur->result = -ECANCELED;
            continue;
        }
        /* the job's deadline (.deadline): past it, the same with -ETIMEDOUT */
        if (CORO__UNLIKELY(job->flags & CORO__FL_EXT) && aw->ops != &coro__yield_ops &&
            job->ext->deadline > 0 && coro__now() >= job->ext->deadline) {
            cur->result = -ETIMEDOUT;
            continue;
        }
        if (aw->ops == s->joins) {
            int k = join_inline(w, job, aw, &tr0, &res);
            if (k != 0 && diag)
                /* the stall check times the parent's own part of its step */
                t0 = w->cur_t0 = coro__now();
            if (k == 1) {
                cur->result = res;
                continue;
            }
            if (k == 2)
                goto arm;
        }
    rearm:
        coro__trace_step(w, job, &tr0, CORO__TR_END_AWAIT, aw);
    arm:
        set_state(job, CORO__S_READY, CORO__S_SUSPENDED);
        int r = aw->ops->arm(s, job, aw, &res);
        if (r == CORO__ARM_PENDING) {
            /* the job may already run elsewhere: do not touch it */
            STEP_END();
            coro__tls_in_job = 0;
            /* a fork's first child, which this job now awaits */
            return !cont && w->lifo_run == w->n_run ? run_next(w, false) : false;
        }
        cur->result = res;
        if (r == CORO__ARM_READY) {
            set_state(job, CORO__S_SUSPENDED, CORO__S_READY);
            continue;
        }
        /* CORO__ARM_REQUEUE: to the back of its (possibly new) queue */
        STEP_END();
        set_state(job, CORO__S_SUSPENDED, CORO__S_READY);
        coro__tls_in_job = 0;
        coro__submit(s, job, true);
        return false;
    }
#undef STEP_END
}

bool coro__run_job(struct coro__worker *w, coro_t *job)
{
    /* the one branch the diagnostics cost when off (fixed at create) */
    if (CORO__UNLIKELY(w->s->diag))
        return run_job_(w, job, true, false, NULL);
    return run_job_(w, job, false, false, NULL);
}

/* the jobs after a step that filled the LIFO slot (CONTINUING); done: the
 * step's job finished.  Returns what coro__run_job returns for the last
 * job run.  Its own copy of the step loop (cont: the steps it runs do not
 * call back here), so that the loop's registers cost nothing to the steps
 * that end without a hand-off */
static __attribute__((noinline)) bool run_next(struct coro__worker *w, bool done)
{
    coro_t *j;

    if (CORO__UNLIKELY(w->s->diag)) {
        while ((j = take_next(w)))
            done = run_job_(w, j, true, true, NULL);
        return done;
    }
    while ((j = take_next(w)))
        done = run_job_(w, j, false, true, NULL);
    return done;
}

/* JOINING INLINE: the child's step, nested in its parent's; its own
 * copy of the step loop as run_next's (cont: it never goes on to the LIFO
 * slot's job: the parent continues next).  True when the child finished,
 * *res its result */
static __attribute__((noinline)) bool run_inline(struct coro__worker *w, coro_t *child,
                                                 intptr_t *res)
{
    if (CORO__UNLIKELY(w->s->diag))
        return run_job_(w, child, true, true, res);
    return run_job_(w, child, false, true, res);
}

/* ---- the worker thread ------------------------------------------------------ */

/* DEFERRED YIELDS.  Queued at the back of its class queue, which a worker
 * looks at before the global queue and the plain threads' submission
 * rings (pop_level), a job pinned to this worker's CPU that keeps yielding
 * would run ahead of everything the I/O thread wakes (its submission
 * ring), looked at only every CORO__GLOBAL_INTERVAL picks, half a ring at
 * a time: with every worker running such a job, each I/O wake-up would
 * wait dozens of its steps, and the I/O thread, none of whose work runs,
 * would sit idle.  Such
 * a job is kept here (w->deferred, owner-only: at most one, as a step
 * yields once) while the worker picks from its own queues, the shared ones
 * and the submission rings, so that what was ready when it yielded runs
 * first wherever it is queued; once a pick finds nothing (and the looks
 * of BUSY LOOKS woke nothing more, and the other workers' queues had
 * nothing to steal) it runs again at once, with no queue.
 * A job only this worker may run waits so for at most
 * CORO__GLOBAL_INTERVAL picks, then goes to its class queue (behind the
 * local ring: as a class-0 yielder waits at most that long in its yield
 * ring); one that other workers may run goes there after one pick, where
 * an idle one of them finds it.  A class-0 job already yields to
 * this worker's yield ring, looked at last (pop_level).  Until it is
 * queued the job is in this worker's hands as a running one is: no other
 * worker could take it, and none waits for it. */
static inline coro_t *with_deferred(struct coro__worker *w, coro_t *j)
{
    coro_t *d = w->deferred;

    if (CORO__LIKELY(!d))
        return j;
    if (j) {
        /* behind what our own queues hold, for a bounded number of picks */
        if (++w->defer_picks < CORO__GLOBAL_INTERVAL)
            return j;
        w->deferred = NULL;
        coro__submit(w->s, d, true);
        return j;
    }
    /* nothing else here: what the yield's look woke has run and written
     * where others wait; look again before the yielder (BUSY LOOKS) */
    while (w->drain > 0) {
        w->drain--;
        if (w->s->drv->poll_busy(w->s->io, w->idx) <= 0)
            break;
        if ((j = found_(w, find_own_(w, true))))
            return j;
    }
    w->drain = 0;
    /* nothing of ours either: the other workers' queues, before the
     * yielder runs again (tokio steals before it runs its deferred
     * tasks).  A busy worker's look takes every event there is, so the
     * jobs it woke wait in its queues behind its own yielder's next
     * step, while this worker, busy too, would never steal them: an
     * idle phase is the only other place a worker steals.  Not as a
     * searcher: the yielder runs right after, and a searcher's count
     * keeps notify from waking parked workers */
    if (w->s->nslots > 1 && (j = found_(w, steal(w))))
        return j;
    w->deferred = NULL;
    return d;                   /* it runs again, no queue */
}

/* BUSY LOOKS.  A worker that always finds a job ready never parks, so it
 * would never wait in epoll nor make its idle look; the readiness its
 * jobs wait for would be left to the I/O thread, whose wake-ups cross to
 * this CPU through a queue.  So after a step it looks at the epoll set
 * without blocking (coro__io_poll_busy: only with the poll token, which it
 * asks of the I/O thread when that holds it) every CORO__IO_POLL_STEPS
 * steps, and after a step that yielded when CORO__IO_POLL_YIELD_NS has
 * passed since a yield last looked.  A step count costs no clock reading
 * on the path of every step (a decrement and a flag's test); a yield pays
 * one only while a job waits on an fd, and a yield that found none
 * waiting spares the next CORO__IO_POLL_IDLE_YIELDS yields even that
 * question (a wait this worker begins asks it again at once).  Timers
 * alone make no look at epoll (it would cost each look's token
 * hand-over): at the same points a busy worker fires the timers that are
 * due itself, without the token (DUE TIMERS).  When that look woke jobs and the yielder is kept aside
 * (DEFERRED YIELDS), the worker looks again once they ran, before the
 * yielder runs, up to CORO__IO_POLL_DRAIN times while each look wakes
 * something (with_deferred): the jobs just run wrote where others wait,
 * and their readiness is there now; then it steals, as the other busy
 * workers do at their yields, so that what this look queued does not
 * wait for this worker's yielder's next step.  The yielder waits for at
 * most CORO__GLOBAL_INTERVAL picks of what the looks woke (DEFERRED
 * YIELDS).  What a look wakes goes to this worker's queues (or its
 * class's), ahead of the job that yielded, with the usual notify for idle
 * workers; masks and priorities are those of any wake-up (coro__wake).
 * The single-threaded driver (rt/join.c) looks at the same points, with
 * coro__io_poll(0): it has no other thread to leave readiness to.
 * Steps that are long and never yield cannot be interrupted: then the I/O
 * thread, which takes the token when no worker took it or looked for
 * CORO__IO_STANDBY_NS, is the guarantee (lib/io/epoll.c, THE POLL TOKEN),
 * and DEFERRED YIELDS lets what it wakes run after the current steps. */
bool coro__busy_look_off;

/* a yield's question, or the count ran out (count_out), out of the path
 * of every step */
__attribute__((noinline)) static bool look_due_slow(struct coro__worker *w, bool count_out)
{
    coro_sched_t *s = w->s;

    if (!count_out) {
        /* a yield before the count ran out: only while something waits,
         * and at least CORO__IO_POLL_YIELD_NS after the last look.  A
         * yield that found nothing waiting answers so for the next
         * CORO__IO_POLL_IDLE_YIELDS yields (a wait this worker starts
         * ends that at once: lib/io/epoll.c pending_add): a job that
         * yields in a tight loop with nothing to look for pays neither the
         * question nor a clock read at each yield */
        if (!s->drv->fd_waiting(s->io)) {
            w->poll_idle = CORO__IO_POLL_IDLE_YIELDS;
            return false;
        }
        int64_t now = coro__now();
        if (now - w->poll_t < CORO__IO_POLL_YIELD_NS)
            return false;
        w->poll_t = now;
    } else if (!s->drv->fd_waiting(s->io)) {
        w->poll_steps = CORO__IO_POLL_STEPS;
        return false;
    }
    w->poll_steps = CORO__IO_POLL_STEPS;
    return true;
}

/* DUE TIMERS.  The timers' heaps fire at their timerfds, whose holder is
 * the I/O thread while every worker is busy - a thread the kernel must
 * first give a CPU: on a machine whose every CPU runs a busy worker it
 * waits in the run queue behind them (a scheduler tick or more:
 * docs/recipes.md has a periodic sleep beside a busy job).  So a busy worker fires what is
 * due itself at each yield - the point where a CPU-bound job gives its
 * worker away - as Go's scheduler checks its timers at each schedule:
 * two relaxed loads of a line only the timers write
 * (coro_sched.timers_next), and with a timer armed one clock reading;
 * with one due, the I/O layer fires both heaps here (their locks are per
 * scheduler, the fire path the I/O thread's). What it wakes runs by its
 * mask and priority, ahead of the yielder (DEFERRED YIELDS) */
__attribute__((noinline)) static void timers_due_slow(struct coro__worker *w, int64_t d)
{
    if (!coro__busy_look_off && coro__now() >= d)
        w->s->drv->fire_due(w->s->io);
}

static inline void timers_due(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    /* relaxed: a hint; a stale one delays the fire to the next look, or
     * finds nothing due (the fire path decides under the heaps' locks) */
    int64_t d0 = __atomic_load_n(&s->timers_next[0], __ATOMIC_RELAXED);
    int64_t d1 = __atomic_load_n(&s->timers_next[1], __ATOMIC_RELAXED);
    int64_t d = d0 < d1 ? d0 : d1;

    if (CORO__UNLIKELY(d != INT64_MAX))
        timers_due_slow(w, d);
}

/* a yield: the timers (DUE TIMERS: at yields only, not at the count's
 * end, where steps that do not yield end soon and the workers park on
 * the timerfd; firing there too cost the timers shape time:
 * docs/benchmarks.md), the count, and the question of BUSY LOOKS unless
 * a yield within CORO__IO_POLL_IDLE_YIELDS of one that found nothing
 * waiting */
static inline bool look_due_yield(struct coro__worker *w)
{
    w->poll_yield = false;
    timers_due(w);
    if (CORO__UNLIKELY(w->poll_steps <= 1))
        return look_due_slow(w, true);
    w->poll_steps--;
    if (w->poll_idle > 0) {
        w->poll_idle--;
        return false;
    }
    return look_due_slow(w, false);
}

/* the path of every step: a test of the yield's flag and a decrement */
static inline bool look_due_(struct coro__worker *w)
{
    if (CORO__UNLIKELY(w->poll_yield))
        return look_due_yield(w);
    if (CORO__LIKELY(w->poll_steps > 1)) {
        w->poll_steps--;
        return false;
    }
    return look_due_slow(w, true);
}

bool coro__look_due(struct coro__worker *w)
{
    return look_due_(w);
}

void *coro__worker_main(void *arg)
{
    struct coro__worker *w = arg;
    coro_sched_t *s = w->s;
    char name[16];
    unsigned idle = 0;
    uint32_t activity = 0;      /* coro__io_activity at the start of the idle phase */

    coro__tls_worker = w;
    snprintf(name, sizeof name, "coro-w%d", w->cpu);
    pthread_setname_np(pthread_self(), name);
    if (s->pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        /* relaxed: read racily by coro_sched_stats / coro_sched_dump */
        __atomic_store_n(&w->pinned,
                         pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
                         __ATOMIC_RELAXED);
    }
    for (;;) {
        coro_t *j;
        if (idle == 0 && s->io) {
            /* the first look of an idle phase, with I/O: our own queues,
             * then the epoll set, and only then the other workers'.  The
             * readiness our own jobs wait for is often there already;
             * taking it here runs the woken job on this worker with no
             * thread wake-up (and the hand-off from the thread blocked in
             * epoll_wait), and before stealing it costs no turn as a
             * searcher (two locked RMWs on the shared count, and a look
             * at every other worker's queues, per wake-up: io_pingpong) */
            j = with_deferred(w, found_(w, find_own_(w, true)));
            if (!j) {
                /* acquire: pairs with stop_workers' release */
                if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
                    break;
                w->catching = true;
                int n = s->drv->poll_now(s->io);
                w->catching = false;
                if (n > 0 || w->caught) {
                    /* what we woke is ours to run next (w->caught, else in
                     * our own queues).  We are no searcher here (we steal
                     * only after this look), so no last searcher's wake is
                     * ours to send: the submits of what the look queued
                     * notified as any push does */
                    j = w->caught;
                    w->caught = NULL;
                    /* a HIGH or LOW job woken after it, by the same look:
                     * the caught one queues as any other, to be picked in
                     * priority order (PRIORITIES) */
                    if (j && prio_queued(w)) {
                        coro__submit(s, j, false);
                        j = NULL;
                    }
                    if (!j)
                        continue;
                    j = found_(w, j);
                } else {
                    /* our own queues were just looked at: the others' */
                    activity = s->drv->activity(s->io);
                    if (!(j = found_(w, find_others_(w, true))))
                        coro__trace_idle(w);
                }
            }
        } else {
            j = with_deferred(w, coro__find_work(w));
        }
        if (!j) {
            /* acquire: pairs with stop_workers' release */
            if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
                break;
            if (!s->oversubscribed && idle < CORO__IDLE_PAUSES) {
                idle++;
                coro__cpu_relax();
                continue;
            }
            if (idle < (s->oversubscribed ? CORO__IDLE_OVERSUB_YIELDS : CORO__IDLE_LOOKS)) {
                /* oversubscribed workers skip the pause spins and give
                 * the CPU away only a few times before they park: the
                 * thread that gets it is another of ours, and each
                 * sched_yield is a system call that its phase pays */
                idle++;
                sched_yield();
                continue;
            }
            j = park(w, activity);
            idle = 0;
            if (!j)
                continue;
        }
        /* the last searcher to find work wakes another in its place.  A
         * worker that was not searching (woken, or in its last look before
         * parking) but took more jobs than the one it runs - half a
         * submission ring, half a victim's ring - wakes one for the rest:
         * they sit in its local ring behind a step that may be long, and
         * the notifies of their pushes may have counted on a searcher that
         * is gone (io_standby: four jobs from a plain thread, two workers
         * parked while two of them waited) */
        bool more = w->took_more;
        w->took_more = false;
        if (w->searching) {
            if (stop_searching(w) && s->nworkers > 1)
                notify(s, s->all_wmask, true);
        } else if (more && s->nworkers > 1) {
            notify(s, s->all_wmask, true);
        }
        idle = 0;
        coro__run_job(w, j);
        if (s->io && look_due_(w) && !coro__busy_look_off)
            w->drain = s->drv->poll_busy(s->io, w->idx) > 0 && w->deferred ? CORO__IO_POLL_DRAIN : 0;
    }
    coro__frames_flush(s);      /* the frames of other pools it still holds */
    coro__tls_worker = NULL;
    return NULL;
}
