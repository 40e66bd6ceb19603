/* SPDX-License-Identifier: MIT */
/* The worker thread: its loop (look for work, spin, yield, park, run a
 * step), a yielder kept aside while others run (DEFERRED YIELDS), and the
 * looks at epoll and at the timers that a busy worker makes between its
 * steps (BUSY LOOKS, DUE TIMERS).  The rest of the workers' code is in
 * the files beside it; sched/worker.h says which essay (QUEUES, PARKING,
 * RINGS, ...) is in which file.
 *
 * IDLE.  A worker that finds nothing in its own queues first looks at the
 * epoll set without blocking (coro__io_poll_now, once per idle phase,
 * before it steals): readiness its jobs
 * wait for is usually there, and taking it here runs the woken job on
 * this worker with no thread wake-up at all.  The first NORMAL job it
 * wakes is kept aside (w->caught) and run next; the rest go to its own
 * queues.  Those pushes notify nobody one by one (w->batching): this
 * worker looks at its queues before it could park, so no job of the
 * batch can be left with every worker asleep, and one notify follows the
 * batch - the only jobs another worker needs waking for are those this
 * one cannot run at once (batch_end).  Then it steals, spins (SPINNING)
 * or parks - in epoll only if no other worker
 * handled I/O since the idle phase began (coro__io_activity: that worker
 * will wait in epoll itself when it runs out, and a second thread blocked
 * there would only be woken for nothing at each event).
 *
 * SPINNING.  An idle worker takes CPU from whoever shares the machine -
 * often the process whose answer its jobs wait for - so it parks at once
 * after its first look, unless it may spin: it is the only searcher
 * (s->searching is 1 and counts it; searchers are at most half the
 * workers, so spinners are too, and no other is spinning: Go's rule), some
 * other worker is awake (one that runs a job may hand it work soon; with
 * every other worker parked, work comes only from outside - a plain
 * thread's submission, readiness - and each of those wakes a parked
 * worker anyway), and workers are no more than CPUs (a spinner would take
 * the CPU of the worker it waits for).  Then it looks again up to
 * CORO__IDLE_SPIN_LOOKS times with a pause in between, stealing at looks
 * 1, 3, 7 and 15, and parks.  It never calls sched_yield: giving the CPU
 * away to a runnable thread hands it a time slice, and giving it to
 * nobody costs a system call for nothing.  docs/benchmarks.md ("Idle
 * workers") has the policy against its alternatives.
 */
#include <pthread.h>
#include <stdio.h>

#include "sched/frame.h"
#include "sched/worker.h"

/* the jobs our own look at epoll made ready in our queues (w->batching):
 * one notify for them all, for a worker that may take them while we run
 * the first (it wakes only if no worker searches) */
static void batch_end(struct coro__worker *w)
{
    uint32_t n = w->batched;

    w->batching = false;
    w->batched = 0;
    if (n && w->s->nworkers > 1)
        notify(w->s, w->s->all_wmask, true);
}

/* a busy worker's look at epoll (BUSY LOOKS): what it wakes for our own
 * queues sends one notify in all */
static int busy_look(struct coro__worker *w)
{
    w->batching = true;
    int n = w->s->driver->poll_busy(w->s->io, w->idx);
    batch_end(w);
    return n;
}

/* DEFERRED YIELDS.  Queued at the back of its class queue, which a worker
 * looks at before the global queue and the plain threads' submission
 * rings (coro__pop_level), a job pinned to this worker's CPU that keeps yielding
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
 * this worker's yield ring, looked at last (coro__pop_level).  Until it is
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
        if (busy_look(w) <= 0)
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
    if (w->s->nslots > 1 && (j = found_(w, coro__steal(w))))
        return j;
    w->deferred = NULL;
    return d;                   /* it runs again, no queue */
}

/* BUSY LOOKS.  A worker that always finds a job ready never parks, so it
 * would never wait in epoll nor make its idle look; the readiness its
 * jobs wait for would be left to the I/O thread, whose wake-ups cross to
 * this CPU through a queue.  So after a step it looks at the epoll set
 * without blocking (coro__io_poll_busy: with the poll token if it is
 * free, beside the I/O thread or another busy look if they hold it, not
 * beside a parked worker, which sees the events) every CORO__IO_POLL_STEPS
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
 * The single-threaded driver (rt/drive.c) looks at the same points, with
 * coro__io_poll(0): it has no other thread to leave readiness to.
 * Steps that are long and never yield cannot be interrupted: then the I/O
 * thread, which takes the token when no worker took it or looked for
 * CORO__IO_STANDBY_NS, is the guarantee (lib/io/epoll.c, THE POLL TOKEN),
 * and DEFERRED YIELDS lets what it wakes run after the current steps. */
#ifdef CORO_TEST_HOOKS
bool coro__busy_look_off;
#endif

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
        if (!s->driver->fd_waiting(s->io)) {
            w->poll_idle = CORO__IO_POLL_IDLE_YIELDS;
            return false;
        }
        int64_t now = coro__now();
        if (now - w->poll_t < CORO__IO_POLL_YIELD_NS)
            return false;
        w->poll_t = now;
    } else if (!s->driver->fd_waiting(s->io)) {
        w->poll_steps = CORO__IO_POLL_STEPS;
        return false;
    }
    w->poll_steps = CORO__IO_POLL_STEPS;
    return true;
}

/* DUE TIMERS.  A timed wait begun on a worker puts its timer in that
 * worker's own heap (lib/wait/wtimer.c), and the worker fires it: at each
 * yield - the point where a CPU-bound job gives its worker away, as Go's
 * scheduler checks its timers at each schedule - every CORO__IO_POLL_STEPS
 * steps, and before it parks (the park's timeout is its own next
 * deadline).  The look is one relaxed load of the worker's own line
 * (coro__worker.timer_next) and, with a timer armed, one clock reading.
 * The waits begun off the workers keep the scheduler's heaps, which fire at
 * their timerfds; their holder is the I/O thread while every worker is
 * busy - a thread the kernel must first give a CPU, which on a machine
 * whose every CPU runs a busy worker waits behind them (docs/recipes.md
 * has a periodic sleep beside a busy job) - so a yield also fires what is
 * due there (coro_sched.timers_next, two more relaxed loads).  What a
 * fire wakes runs by its mask and priority, ahead of the yielder
 * (DEFERRED YIELDS) */
__attribute__((noinline)) static void timers_due_slow(struct coro__worker *w, int64_t d,
                                                     int64_t own)
{
    int64_t now = coro__now();

    if (now < d)
        return;
    if (own <= now)
        w->s->driver->fire_own(w->s->io, w->idx, true);
    if (d < own && !CORO__HOOK(coro__busy_look_off, false))
        w->s->driver->fire_due(w->s->io);
}

static inline void timers_due(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    /* relaxed: a hint; a stale one delays the fire to the next look, or
     * finds nothing due (the fire path decides under the heaps' locks) */
    int64_t d0 = __atomic_load_n(&s->timers_next[0], __ATOMIC_RELAXED);
    int64_t d1 = __atomic_load_n(&s->timers_next[1], __ATOMIC_RELAXED);
    /* our own timers' deadline, on our own line (lib/wait/wtimer.c) */
    int64_t own = __atomic_load_n(&w->timer_next, __ATOMIC_RELAXED);
    int64_t d = d0 < d1 ? d0 : d1;

    if (CORO__UNLIKELY(d != INT64_MAX || own != INT64_MAX))
        timers_due_slow(w, d < own ? d : own, own);
}

/* the step count ran out: our own timers, which only we fire while we
 * run (the scheduler's heaps have their timerfd's holder) */
static inline void own_timers_due(struct coro__worker *w)
{
    /* relaxed: our own line's hint (timers_due) */
    int64_t own = __atomic_load_n(&w->timer_next, __ATOMIC_RELAXED);
    if (CORO__UNLIKELY(own != INT64_MAX) && coro__now() >= own)
        w->s->driver->fire_own(w->s->io, w->idx, true);
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
    own_timers_due(w);
    return look_due_slow(w, true);
}

bool coro__look_due(struct coro__worker *w)
{
    return look_due_(w);
}

/* SPINNING: whether this idle worker, its first look done, may spin */
static bool may_spin(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (CORO__IDLE_SPIN_LOOKS == 0 || s->oversubscribed || !w->searching)
        return false;
    /* relaxed: hints.  A stale count only makes this phase spin or park
     * when the other choice was better: no wake-up depends on it (a
     * spinner parks through the same protocol as any worker) */
    if (__atomic_load_n(&s->searching, __ATOMIC_RELAXED) != 1)
        return false;
    return coro__idle_count(s) + 1 < (unsigned)s->nworkers;
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
                w->batching = true;
                int n = s->driver->poll_now(s->io);
                w->catching = false;
                batch_end(w);
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
                    activity = s->driver->activity(s->io);
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
            /* SPINNING: decided once, after the first look; then bounded */
            if (idle < CORO__IDLE_SPIN_LOOKS && (idle > 0 || may_spin(w))) {
                idle++;
                coro__cpu_relax();
                continue;
            }
            j = coro__park_since(w, activity);
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
        if (s->io && look_due_(w) && !CORO__HOOK(coro__busy_look_off, false))
            w->drain = busy_look(w) > 0 && w->deferred ? CORO__IO_POLL_DRAIN : 0;
    }
    coro__frames_flush(s);      /* the frames of other pools it still holds */
    coro__tls_worker = NULL;
    return NULL;
}
