/* SPDX-License-Identifier: MIT */
/* Parking: a worker that found nothing sleeps on its futex, or in
 * epoll_wait, and no wake-up meant for it is lost.
 *
 *
 * PARKING - the protocol, and why no wake-up is lost.
 *   worker W, when it found nothing:
 *     1. e = W.futex                         (the park epoch)
 *     2. count W in s->idle_sum, set W's bit in s->idle  (seq_cst RMWs)
 *     3. look for work everywhere once more  (all queues, steal)
 *     4. futex_wait(&W.futex, e)             (returns at once if e changed)
 *     5. clear W's bit if still set
 *   a submitter S, after any push of a READY job (local, inbox, class):
 *     a. seq_cst fence (with s->use_membarrier: a compiler barrier, below)
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
 *   Asymmetric (s->use_membarrier, set at create when membarrier(2) registers): S
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
 *   CORO__MEMBARRIER_MAX_WORKERS workers on a machine of at most
 *   CORO__MEMBARRIER_MAX_CPUS online CPUs.  The kernel's
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
 * be, on its futex (it failed to take the token) or saw the epoch.  The
 * jobs the events wake come back from the park in the worker's batch
 * (WOKEN BATCHES, sched/sched.h), not queued: the worker clears its idle
 * bit first, then queues them with one notify - which so never claims the
 * worker itself - and runs the first.  Only the jobs past a full batch
 * are queued from inside the park, while the bit is still set: a notify
 * of theirs may claim this worker, one futex wake for nothing.
 */
#include <string.h>

#include "sched/frame.h"
#include "sched/worker.h"

/* our own timers before we park: returns the deadline of the earliest
 * left, INT64_MAX for none */
static inline __attribute__((always_inline)) int64_t fire_own_timers(struct coro__worker *w)
{
    /* our own timers (lib/wait/wtimer.c): what is due fires now, into our
     * queues, where the last look below finds it; the next one bounds our
     * sleep.  Read under their lock: a removal's rebuild or the I/O
     * thread's fire moves the heap's top meanwhile (tools/model/wtimer.pml).
     * The line we publish it on is never later than the earliest timer,
     * so none there means none at all (relaxed: our own line).  Only we
     * add to them: nothing earlier can come while we sleep */
    int64_t due = __atomic_load_n(&w->timer_next, __ATOMIC_RELAXED);
    if (due != INT64_MAX) {
        struct coro__woken b;
        coro__woken_init(&b, w->s);
        due = driver_own_timers(w, false, &b);
        if (b.n)
            coro__submit_woken(w, &b, false);
    }
    return due;
}

/* protocol steps 1 and 2: returns the park epoch, with our bit set and,
 * with s->use_membarrier, the barrier run; *timed: it failed, sleep with
 * a timeout only */
static inline __attribute__((always_inline)) uint32_t set_idle(struct coro__worker *w,
                                                               bool *timed)
{
    coro_sched_t *s = w->s;

    /* acquire: pairs with the waker's release increment */
    uint32_t epoch = __atomic_load_n(&w->futex, __ATOMIC_ACQUIRE);
    /* the bit is visible before our last look (protocol step 2) */
    coro__idle_set(s, w->idx);
    /* with s->use_membarrier a notifier fences with the compiler only: its push may
     * still sit in its CPU's store buffer, its reads of our bit done
     * before our store.  membarrier runs a full barrier on each CPU that
     * runs one of our threads: after it, every push whose notify missed
     * our bit is visible to the look below (PARKING above).  If it
     * fails (it cannot once registered; a scheduler inherited across a
     * fork would see -EPERM) we sleep with a timeout only */
    uint64_t off[CORO__XQ_WORDS];
    bool took = false;
    if (s->use_membarrier) {
        memset(off, 0, sizeof off);
        took = coro__subring_unlist_empty(s, off);
    }
    *timed = s->use_membarrier && CORO__UNLIKELY(coro__membarrier_heavy() < 0);
    /* the rings taken off before the membarrier: after it, a push their
     * producer made without listing them is visible (RINGS) */
    if (took)
        coro__subring_relook(s, off, *timed);
    return epoch;
}

/* WAITING IN EPOLL INSTEAD: true when we waited there (or saw our epoch
 * move), false when we are to wait on our futex */
static inline bool park_turn(struct coro__worker *w, uint32_t epoch, uint32_t activity,
                             struct coro__woken *b)
{
    struct coro__turn t = {
        .mode = CORO__TURN_PARK, .idx = w->idx,
        .epoch_word = &w->futex, .epoch = epoch, .activity = activity,
    };
    return w->s->driver->turn(w->s->io, &t, b) >= 0;
}

/* protocol step 4: sleep on our futex, or in epoll, until woken, the epoch
 * moved or our earliest timer (due) is due; what epoll's events woke
 * into b */
static inline __attribute__((always_inline)) void sleep_parked(struct coro__worker *w,
                                                               uint32_t epoch, int64_t due,
                                                               bool timed, uint32_t activity,
                                                               struct coro__woken *b)
{
    coro_sched_t *s = w->s;

    if (s->nworkers == 0) {
        int64_t dl = coro__tls_drive_deadline;      /* coro_join_timeout */
        struct coro__turn t = { .mode = CORO__TURN_WAIT };
        if (s->io) {
            int64_t left = dl ? dl - coro__now() : -1;
            t.timeout_ns = dl && left < 0 ? 0 : left;
        }
        /* single-threaded: wait in epoll while anything waits there */
        if (!s->io || s->driver->turn(s->io, &t, NULL) == -EAGAIN)
            coro__futex_wait(&w->futex, epoch, dl ? dl : -1);
    } else if (w->lifo_watch >= 0 || timed) {
        /* our last look saw a job in another worker's LIFO slot and left
         * it there (steal_lifo: the slot's owner may be about to run it).
         * If that worker is in fact in a long step, nobody would wake us
         * for the job: sleep at most CORO__LIFO_PARK_NS, then look again
         * (the watch then takes the job if the owner started no step).
         * Or the membarrier failed: a push may have reached no one, and
         * the look after the timeout sees it */
        int64_t until = coro__ns_add(coro__now(), CORO__LIFO_PARK_NS);
        coro__futex_wait(&w->futex, epoch, due < until ? due : until);
    } else if (!s->io || !park_turn(w, epoch, activity, b)) {
        /* another thread waits in epoll; ours end at their deadline (epoll's
         * wait too: coro__io_park reads it where we published it) */
        coro__futex_wait(&w->futex, epoch, due == INT64_MAX ? -1 : due);
    }
}

/* activity: coro__driver_activity at the start of the idle phase */
coro_t *coro__park_since(struct coro__worker *w, uint32_t activity)
{
    coro_sched_t *s = w->s;
    coro_t *j;
    bool timed;
    struct coro__woken b;

    int64_t due = fire_own_timers(w);
    stop_searching(w);          /* the last look below covers what we leave */
    coro__flush_live(w, 0);     /* shutdown may be waiting for our units */
    coro__frames_flush(s);      /* their owners may be waiting for frames */
    uint32_t epoch = set_idle(w, &timed);
    w->idle_looks = 0;
    /* the last look: our own queues, then the others' unless the
     * searchers are at their cap - they cover the others' queues, and
     * the last of them to stop looks there itself or wakes a worker in
     * its place (sched/steal.c, SEARCHING; seq_cst: after our bit) */
    j = find_own_(w, false);
    if (!j && __atomic_load_n(&s->searching, __ATOMIC_SEQ_CST) < search_max(s))
        j = coro__steal(w);
    if ((j = found_(w, j)) || __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
        bool had = coro__idle_clear(s, w->idx);
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
    coro__woken_init(&b, w->s);
    sleep_parked(w, epoch, due, timed, activity, &b);
    coro__idle_clear(s, w->idx);
    coro__trace_park(w, true);
    stat_inc(&w->n_wakeups);
    /* woken at our own deadline (or later): fire before we look again */
    if (due != INT64_MAX && coro__now() >= due)
        driver_own_timers(w, false, &b);
    /* what we woke: queued now that our bit is clear (their notify does
     * not claim us), the first run next (WAITING IN EPOLL INSTEAD) */
    if (b.n)
        j = found_(w, coro__submit_woken(w, &b, true));
    /* a woken worker searches (tokio's notified worker does): when it
     * finds work and is the last searcher it wakes another, so a burst
     * whose notifies found a searcher and woke only us still gets as
     * many workers as it has jobs (io_standby: four jobs from a plain
     * thread while one worker searched - two of them waited for good) */
    coro__start_searching(w);
out:
    return j;
}

coro_t *coro__park(struct coro__worker *w)
{
    return coro__park_since(w, coro__driver_activity(w->s));
}
