/* SPDX-License-Identifier: MIT */
/* The caller's seat: a plain thread blocked in coro_block_on runs the root
 * job, and what it queues, as a worker for the time of its wait (oneTBB's
 * task_group::wait, arena.execute), where it would otherwise hand the job
 * to a worker and sleep until a worker hands the result back.
 *
 *
 * THE SEAT.  A scheduler with workers has one more worker struct than it
 * has workers, s->w[s->nslots]: its LIFO slot, local, yield and inbox
 * rings, counters, frame pool (lib/sched/frame_sched.c makes one per
 * struct) and spare units of s->live, as any worker's.  It has no thread
 * of its own: one plain thread at a time holds it, from coro__seat_take
 * (a CAS of s->seat_word from 0 to TAKEN, acquire: what the previous
 * holder did to the struct happens before) to coro__seat_leave (an
 * exchange to 0, release: what this holder did happens before the next
 * take and before coro_sched_destroy's free).  No model checks the pair:
 * it is one CAS and one exchange, and every race on the seat's queues
 * (its holder's pops against thieves, its LIFO slot) is a worker's, which
 * tools/model/lifo.pml, park.pml and search.pml cover.  While it holds it the thread's
 * coro__tls_worker is the seat, so coro_spawn, coro__wake, coro__finish
 * and the frame pools treat it as the worker it is; another thread that
 * calls coro_block_on meanwhile fails the CAS and waits as before
 * (spawn, then coro_join's futex).
 *
 * WHICH JOBS.  A job never runs on a CPU outside its mask.  The seat is
 * not pinned: it may run a job only if every CPU the calling thread may
 * run on has a worker, since a job of class 0 ("any worker": its mask,
 * cut to the workers' CPUs, holds every worker) allows all of those and
 * may not allow others.  When every CPU of the machine has a worker
 * (s->seat_anywhere, fixed at create) that holds for any thread;
 * otherwise take asks sched_getaffinity.  The seat is in no class's
 * worker mask, so only class-0 jobs reach it: the root (coro_block_on
 * takes the seat only for a root without a mask, in a frame of the
 * caller's: a pool frame's finish gives it back when no joiner is
 * registered yet, and the seat reads the root's state until it is over),
 * and what its jobs
 * spawn or wake with class 0 - coro__submit puts a job of another class
 * in that class's queues, as on a worker.  Priorities: the seat looks at
 * its own queues HIGH, NORMAL, LOW (the LIFO slot first at NORMAL, as
 * coro__pop_level); a HIGH job queued anywhere else is the workers', who
 * run it as before.  The seat never looks at the shared queues, the
 * submission rings or epoll, and never parks: the thread's wait is
 * coro_join's.
 *
 * FAN-OUT.  The seat is one thread more than the workers, and pinned
 * workers cover the CPUs: while they are busy, a caller that runs jobs
 * too shares a CPU with one of them, and the jobs it spawns are run and
 * their frames given back on other CPUs.  It pays where it saves the two
 * hand-offs of a root whose work is serial (a chain, a parent awaiting a
 * child), and costs where the root fans out to the workers (a loop that
 * spawns many jobs; fib), whose hand-offs are a small part of the call.
 * So a tenure after which jobs were left in the seat's local rings (its
 * step queued more than the LIFO slot holds) makes the next
 * CORO__SEAT_SKIP calls of coro_block_on keep off the seat: they hand the
 * root to the workers as a plain thread does; then the seat is tried
 * again.
 *
 * STEALING.  The seat is a victim of every thief (sched/steal.c: after
 * the workers, whether or not a thread holds it - it is empty when free),
 * so a job queued on it never waits behind a long step of the caller: a
 * push to its local or yield ring notifies as any worker's does (with one
 * worker too: the seat is the other), and its LIFO slot is taken by a
 * thief after CORO__LIFO_STEAL_NS without a step start, as a worker's.
 * A job that a step spawns into the empty LIFO slot wakes nobody: the
 * seat runs it next (CONTINUING, sched/run.c), so a chain of spawns, or
 * a root that spawns a child and awaits it, runs on the calling thread
 * without a single hand-off between threads.
 *
 * WAKES.  A job that suspends on the seat is woken by whoever ends its
 * wait, through coro__wake, which queues it on the waker's worker or, from
 * a thread with no worker, the shared queues: only the thread that holds
 * the seat queues on it, so a job woken after the seat was left goes to a
 * worker.  Timed waits begun on the seat use the scheduler's timer heaps,
 * as a plain thread's do (lib/wait/wtimer.c: a worker's own heap is fired
 * only by that worker).
 *
 * LEAVING.  coro__seat_run returns when the root is over (DONE, or back
 * to IDLE) or nothing is queued on the seat; the step loop's CONTINUING
 * stops at the root's end too (run.c take_next).  Then coro__seat_leave
 * hands every job still queued on the seat to the shared queue and
 * notifies, as a worker's queue is handed over, flushes the frame pool's
 * outboxes and the spare units of s->live, and frees the seat; the caller
 * then waits in coro_join as before, if the root is not over.  Shutdown
 * needs nothing more: the jobs on the seat are live, so a drain waits for
 * them, and the workers keep running until coro_sched_destroy, which
 * waits for the seat to be free before it stops them (a thread may still
 * be leaving after the last job ended): coro__seat_wait_free.  A take
 * after the close is refused.
 */
#include <sched.h>

#include "sched/frame.h"
#include "sched/worker.h"

/* calls that keep off the seat after a tenure that fanned out (FAN-OUT) */
#define CORO__SEAT_SKIP 63u

/* the calling thread's CPUs are all workers' CPUs */
static bool caller_inside(coro_sched_t *s)
{
    cpu_set_t set, in;

    if (s->seat_anywhere)
        return true;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return false;
    CPU_AND(&in, &set, &s->wcpus);
    return CPU_EQUAL(&in, &set);
}

struct coro__worker *coro__seat_take(coro_sched_t *s)
{
    uint32_t zero = 0;

    /* relaxed closed: a take that misses a close meets it at coro_spawn's
     * own check */
    /* tracing and the stall detector off: a trace's lanes and a stall
     * report name workers, which the seat is not (coro_stall_t) */
    if (s->nworkers == 0 || s->trace || s->stall_ns > 0 || coro__tls_worker ||
        __atomic_load_n(&s->closed, __ATOMIC_RELAXED) ||
        __atomic_load_n(&s->seat_word, __ATOMIC_RELAXED))
        return NULL;
    /* relaxed: a count of calls, racy among callers by design (FAN-OUT) */
    uint32_t skip = __atomic_load_n(&s->seat_skip, __ATOMIC_RELAXED);
    if (CORO__UNLIKELY(skip)) {
        __atomic_compare_exchange_n(&s->seat_skip, &skip, skip - 1, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        return NULL;
    }
    if (!caller_inside(s))
        return NULL;
    /* acquire: the previous holder's writes to the seat (its release
     * store in leave) happen before ours */
    if (!__atomic_compare_exchange_n(&s->seat_word, &zero, CORO__SEAT_TAKEN, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return NULL;
    struct coro__worker *w = s->w[s->nslots];
    coro__tls_worker = w;
    /* the step that hands off first fills the LIFO slot (coro__submit):
     * coro_spawn of the root is that step */
    w->lifo_run = w->n_run - 1;
    w->lifo_streak = 0;
    return w;
}

/* the seat's pick: its own queues only, HIGH to LOW (WHICH JOBS) */
static coro_t *seat_pick(struct coro__worker *w)
{
    for (int pi = CORO__NPRIO - 1; pi >= 0; pi--) {
        coro_t *j;
        if (pi == PI_NORMAL && __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) &&
            /* acq_rel: pairs with the store or exchange that filled the
             * slot, and takes it from thieves, who exchange it too */
            (j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL)))
            return found_(w, j);
        if ((j = own_localq_pop(w, &w->local[pi], pi)) || (j = own_sharedq_pop(w, &w->inbox[pi], pi)) ||
            (j = own_localq_pop(w, &w->yielded[pi], pi)))
            return found_(w, j);
    }
    return NULL;
}

/* jobs queued in the seat's local rings (FAN-OUT) */
static bool fanned(struct coro__worker *w)
{
    for (int pi = 0; pi < CORO__NPRIO; pi++)
        if (coro__localq_size(&w->local[pi]))
            return true;
    return false;
}

void coro__seat_run(struct coro__worker *w, coro_t *root)
{
    coro_t *j;
    bool fan = false;

    w->seat_root = root;
    while (!seat_root_over(root) && (j = seat_pick(w))) {
        /* the looks a worker's loop makes between steps (the shared
         * queues, epoll) are not the seat's: none is ever due here, so
         * the CONTINUING steps never stop for them */
        w->tick = CORO__GLOBAL_INTERVAL;
        w->poll_steps = CORO__IO_POLL_STEPS;
        w->poll_yield = false;
        w->lifo_streak = 0;
        coro__run_job(w, j);
        fan = fan || fanned(w);
    }
    w->seat_root = NULL;
    if (fan)    /* relaxed: a count of calls (FAN-OUT) */
        __atomic_store_n(&w->s->seat_skip, CORO__SEAT_SKIP, __ATOMIC_RELAXED);
}

void coro__seat_leave(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    bool moved = false;
    coro_t *j;

    /* what is queued here goes to the shared queue, where every worker
     * looks; the yield rings' jobs after the others, as they would run */
    /* acq_rel: as seat_pick's exchange */
    if ((j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL))) {
        coro__push_global(s, j);
        moved = true;
    }
    for (int pi = CORO__NPRIO - 1; pi >= 0; pi--) {
        while ((j = own_localq_pop(w, &w->local[pi], pi)) || (j = own_sharedq_pop(w, &w->inbox[pi], pi))) {
            coro__push_global(s, j);
            moved = true;
        }
    }
    for (int pi = CORO__NPRIO - 1; pi >= 0; pi--)
        while ((j = own_localq_pop(w, &w->yielded[pi], pi))) {
            coro__push_global(s, j);
            moved = true;
        }
    if (moved)
        notify(s, s->all_wmask, false);
    coro__frames_flush(s);
    coro__flush_live(w, 0);
    coro__tls_worker = NULL;
    /* release: everything this holder did to the seat (and to s->live)
     * before the next take's acquire and before destroy frees it */
    uint32_t old = __atomic_exchange_n(&s->seat_word, 0, __ATOMIC_RELEASE);
    if (old & CORO__SEAT_WAITED)
        coro__futex_wake(&s->seat_word, INT_MAX);
}

void coro__seat_wait_free(coro_sched_t *s)
{
    uint32_t v;

    /* acquire: pairs with leave's release (its last writes to the seat) */
    while ((v = __atomic_load_n(&s->seat_word, __ATOMIC_ACQUIRE)) != 0) {
        if (!(v & CORO__SEAT_WAITED) &&
            /* acquire, as the load; what ends the wait is always the
             * load's 0, which orders the leave's writes before us */
            !__atomic_compare_exchange_n(&s->seat_word, &v, v | CORO__SEAT_WAITED, false,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        coro__futex_wait(&s->seat_word, v | CORO__SEAT_WAITED, -1);
    }
}
