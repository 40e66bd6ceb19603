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
 * this worker with no thread wake-up at all.  The look hands the jobs it
 * woke back (WOKEN BATCHES, sched/sched.h): the first, if NORMAL, runs
 * next straight from there, with no queue; the rest go to this worker's
 * own queues with one notify for them all.  Then: < 4 empty looks spin,
 * 4..15 sched_yield, then park - in epoll only if no other worker
 * handled I/O since the idle phase began (coro__driver_activity: that worker
 * will wait in epoll itself when it runs out, and a second thread blocked
 * there would only be woken for nothing at each event).
 * When workers outnumber CPUs a worker never busy-spins: it goes straight
 * to the sched_yield phase, which hands the CPU to whoever needs it, and
 * cuts it to CORO__IDLE_OVERSUB_YIELDS looks before it parks.  Either
 * phase ends at a yield that came back late: the worker looks once more
 * and parks, for a neighbour wants the CPU and each further yield would
 * hand it a time slice (base/spin.c, LATE YIELDS).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "sched/frame.h"
#include "sched/worker.h"

/* the looks of BUSY LOOKS before a kept yielder runs again, while each
 * wakes something: the first job woken, or one found in our own queues */
static __attribute__((noinline)) coro_t *drain_looks(struct coro__worker *w)
{
    coro_t *j;

    while (w->drain > 0) {
        struct coro__woken b;
        coro__woken_init(&b, w->s);
        w->drain--;
        int n = driver_turn(w, CORO__TURN_BUSY, &b);
        /* the first job it woke runs now, ahead of the yielder */
        if (b.n && (j = coro__submit_woken(w, &b, true)))
            return found_(w, j);
        if (n <= 0)
            break;
        if ((j = found_(w, coro__find_own(w))))
            return j;
    }
    w->drain = 0;
    return NULL;
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
    if (w->drain > 0 && (j = drain_looks(w)))
        return j;
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
 * YIELDS).  What a look wakes comes back in the worker's batch (WOKEN
 * BATCHES, sched/sched.h) and goes to this worker's queues (or its
 * class's), ahead of the job that yielded, with one notify for idle
 * workers; masks and priorities are those of any wake-up (coro__wake);
 * a drain's look runs the first job it woke at once.
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
        if (!coro__driver_waiting(s)) {
            w->poll_idle = CORO__IO_POLL_IDLE_YIELDS;
            return false;
        }
        int64_t now = coro__now();
        if (now - w->poll_t < CORO__IO_POLL_YIELD_NS)
            return false;
        w->poll_t = now;
    } else if (!coro__driver_waiting(s)) {
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
    struct coro__woken b;

    if (now < d)
        return;
    coro__woken_init(&b, w->s);
    if (own <= now)
        driver_own_timers(w, true, &b);
    if (d < own && !CORO__HOOK(coro__busy_look_off, false))
        driver_turn(w, CORO__TURN_DUE_TIMERS, &b);
    if (b.n)
        coro__submit_woken(w, &b, false);
}

/* our own timers, due: fired, what they woke queued */
__attribute__((noinline)) static void fire_own_due(struct coro__worker *w)
{
    struct coro__woken b;

    coro__woken_init(&b, w->s);
    driver_own_timers(w, true, &b);
    if (b.n)
        coro__submit_woken(w, &b, false);
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
        fire_own_due(w);
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

/* the worker thread's start: its thread-local pointer, its name, and its
 * CPU when the scheduler pins */
static void worker_boot(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    char name[16];

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
}

/* the idle look at epoll (IDLE): -1 when it found nothing; else the
 * job it woke for us to run next (*j, NULL when it queued them all) */
static inline __attribute__((always_inline)) int idle_look(struct coro__worker *w, coro_t **j)
{
    struct coro__woken b;

    coro__woken_init(&b, w->s);
    int n = driver_turn(w, CORO__TURN_LOOK, &b);
    if (n <= 0 && !b.n)
        return -1;
    /* what we woke is ours to run next (the first), else in our own
     * queues.  We are no searcher here (we steal only after this look),
     * so no last searcher's wake is ours to send: the batch's push
     * notified for the rest */
    *j = b.n ? coro__submit_woken(w, &b, true) : NULL;
    return 0;
}

/* the busy look after a step (BUSY LOOKS): what it woke queued, ahead
 * of the job that yielded; the looks to drain if it woke something */
static __attribute__((noinline)) unsigned busy_look(struct coro__worker *w)
{
    struct coro__woken b;

    coro__woken_init(&b, w->s);
    int n = driver_turn(w, CORO__TURN_BUSY, &b);
    if (b.n)
        coro__submit_woken(w, &b, false);
    return n > 0 && w->deferred ? CORO__IO_POLL_DRAIN : 0;
}

/* the LENT CPUS word (sched/sched.h) of the CPU we run on */
static inline const uint32_t *lent_word(struct coro__worker *w)
{
    int cpu = w->pinned ? w->cpu : sched_getcpu();
    return &w->s->lent[(unsigned)(cpu < 0 ? 0 : cpu) % CORO__LENT_SLOTS].v;
}

/* we found a job: hand the search on to another worker if it is ours to */
static inline __attribute__((always_inline)) void pass_search_on(coro_sched_t *s,
                                                                 struct coro__worker *w)
{
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
}

void *coro__worker_main(void *arg)
{
    struct coro__worker *w = arg;
    coro_sched_t *s = w->s;
    unsigned idle = 0;
    uint32_t activity = 0;      /* coro__driver_activity at the start of the idle phase */

    worker_boot(w);
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
                if (idle_look(w, &j) == 0) {
                    if (!j)
                        continue;
                    j = found_(w, j);
                } else {
                    /* our own queues were just looked at: the others' */
                    activity = coro__driver_activity(s);
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
                /* came back late: a neighbour wants our CPU, and we
                 * park after this look (base/spin.c, LATE YIELDS) */
                if (!coro__idle_yield(lent_word(w)))
                    idle = CORO__IDLE_LOOKS;
                continue;
            }
            j = coro__park_since(w, activity);
            idle = 0;
            if (!j)
                continue;
        }
        pass_search_on(s, w);
        idle = 0;
        coro__run_job(w, j);
        if (s->io && look_due_(w) && !CORO__HOOK(coro__busy_look_off, false))
            w->drain = busy_look(w);
    }
    coro__frames_flush(s);      /* the frames of other pools it still holds */
    coro__tls_worker = NULL;
    return NULL;
}
