/* SPDX-License-Identifier: MIT */
/* The worker thread: its loop (look for work, wait, park, run a step), a
 * yielder kept aside while others run (DEFERRED YIELDS), and the
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
 * queues, whose pushes notify as usual.  Then it waits (WAITING) or
 * parks at once - in epoll only if no other worker
 * handled I/O since the idle phase began (coro__io_activity: that worker
 * will wait in epoll itself when it runs out, and a second thread blocked
 * there would only be woken for nothing at each event).
 *
 * WAITING.  An idle worker holds a CPU that, on a shared machine, belongs
 * to whoever we wait for, so it waits before it parks only where a
 * wake-up is likely soon: while one of its last 8 waits found work
 * (w->spin_hist; else one idle phase in CORO__IDLE_WAIT_PROBE waits, as
 * a probe).  Otherwise it parks right after its first look: an idle
 * scheduler, or a load whose work comes from epoll (where a parked worker
 * waits), makes no sched_yield.  A wait looks again up to
 * CORO__IDLE_LOOKS times: the first CORO__IDLE_PAUSES after pause
 * instructions (none when workers outnumber CPUs, which then look only
 * CORO__IDLE_OVERSUB_YIELDS times), the rest after sched_yield, which
 * hands the CPU to the thread that answers when that thread waits for it
 * (a blocking-pool thread that this worker's job woke is often queued on
 * its CPU).  Waits that only pause, or that one worker only may make,
 * measured far slower on blocking_roundtrip_par (docs/benchmarks.md, "The
 * idle path, second attempt").  Its looks steal at looks 0, 1, 3, 7 and
 * 15, then it parks as any idle worker does (sched/park.c: the park
 * protocol, not the wait, is what no wake-up is lost by).
 * One waiting worker at a time, the waiter, also opens a hand-off slot:
 * it names itself in s->spinner (a CAS from 0) and is no searcher - its
 * looks are not counted in s->searching, so a job it is handed or finds
 * makes it no last searcher, whose rule (sched/steal.c SEARCHING) would
 * wake a parked worker at each job.  One that a wake made a searcher
 * (sched/park.c) leaves the count before it waits, and wakes a worker in
 * its place if it was the last.
 * What makes the wait pay is its hand-off slot (w->handoff): a thread
 * outside the workers that makes a NORMAL job of class 0 ready - the
 * blocking pool answering, the I/O thread, a plain thread that spawns -
 * hands it to the waiter named in s->spinner with one CAS (OPEN -> job)
 * instead of pushing it and waking a parked worker (sched/submit.c).
 * The slot decides who has the job: the waiter names itself, then opens
 * the slot before its first look, and when its wait ends it clears its
 * name and closes the slot with an exchange (-> NULL), and runs what the
 * exchange returns; a hand-off whose CAS comes after the close fails and
 * takes the usual path.  So a job is handed over only while the waiter
 * has yet to close, and the close sees it: no job is left in a slot,
 * none is run twice, and the hand-off needs no notify
 * (tools/model/handoff.pml).  A job found in a queue and one in the slot
 * at the close: the second goes to this worker's queues. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "sched/frame.h"
#include "sched/worker.h"

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
        if (w->s->driver->poll_busy(w->s->io, w->idx) <= 0)
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

/* pauses between two looks of a spin: the slot is read at each */
#define SPIN_PAUSES 8

/* WAITING: whether this idle phase waits */
static inline bool may_wait(struct coro__worker *w)
{
    return w->spin_hist || ++w->spin_probe % CORO__IDLE_WAIT_PROBE == 0;
}

/* name ourselves the waiter, then open the slot: false when another is
 * the waiter.  A hander that reads our name before the slot opens finds
 * it closed and takes the usual path; one holding our name from an
 * earlier phase can only fill the slot while it is open, and the close
 * sees it (spin_end) */
static bool spin_begin(struct coro__worker *w)
{
    uint32_t none = 0;

    /* relaxed: the name is a hint for handers; the slot decides */
    if (!__atomic_compare_exchange_n(&w->s->spinner, &none, (uint32_t)w->idx + 1, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return false;
    /* relaxed: a hander's CAS reads it; nothing is published with it */
    __atomic_store_n(&w->handoff, CORO__HANDOFF_OPEN, __ATOMIC_RELAXED);
    return true;
}

/* stop naming ourselves, close the slot: the job handed over, or NULL */
static coro_t *spin_end(struct coro__worker *w)
{
    uint32_t me = (uint32_t)w->idx + 1;

    /* relaxed: fails when another names itself (spin_begin lost); the
     * slot's exchange, not this, decides who has a job */
    __atomic_compare_exchange_n(&w->s->spinner, &me, 0, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    /* acquire: pairs with the hander's release CAS (the job's fields and
     * its READY state) */
    coro_t *j = __atomic_exchange_n(&w->handoff, NULL, __ATOMIC_ACQUIRE);
    return j == CORO__HANDOFF_OPEN ? NULL : j;
}

/* one waiting look: our queues, and the others' at looks 0, 1, 3, 7 and
 * 15 - not as a searcher (WAITING) */
static inline coro_t *spin_look(struct coro__worker *w)
{
    coro_t *j = find_own_(w, true);
    unsigned n = w->idle_looks++;

    if (!j && (n & (n + 1)) == 0 && w->s->nslots > 1)
        j = coro__steal(w);
    return found_(w, j);
}

/* whether the hand-off slot holds a job (or was closed) */
static inline bool handed(struct coro__worker *w)
{
    /* relaxed: spin_end's exchange reads it again */
    return __atomic_load_n(&w->handoff, __ATOMIC_RELAXED) != CORO__HANDOFF_OPEN;
}

/* the waiting looks (WAITING): pauses, then sched_yield, until work
 * comes or the looks run out; true when the slot holds a job */
static bool wait_looks(struct coro__worker *w, coro_t **j, bool slot)
{
    coro_sched_t *s = w->s;
    unsigned pauses = s->oversubscribed ? 0 : CORO__IDLE_PAUSES;
    unsigned looks = s->oversubscribed ? CORO__IDLE_OVERSUB_YIELDS : CORO__IDLE_LOOKS;

    for (unsigned n = 0; n < looks; n++) {
        if (n < pauses) {
            for (int k = 0; k < SPIN_PAUSES; k++) {
                if (slot && handed(w))
                    return true;
                coro__cpu_relax();
            }
        } else {
            /* the thread that answers (a pool thread, the I/O thread) may
             * wait for this CPU: give it away (WAITING) */
            sched_yield();
        }
        if (slot && handed(w))
            return true;
        /* acquire: pairs with stop_workers' release */
        if ((*j = spin_look(w)) || __atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
            return false;
    }
    return false;
}

/* WAITING: the idle phase of the waiter, its slot opened by spin_begin
 * before its first look (found: that look found work).  The job to run,
 * or NULL */
static coro_t *spin(struct coro__worker *w, coro_t *j, bool found, bool slot)
{
    coro_sched_t *s = w->s;

    /* the waiter is no searcher.  Still one when a wake made it one
     * (sched/park.c): the last to stop wakes one in our place, as
     * found_wake does, for the jobs whose notifies counted on us (our wait
     * may end in a job that runs long) */
    if (slot && stop_searching(w) && s->nworkers > 1)
        notify(s, s->all_wmask, true);
    if (!found)
        wait_looks(w, &j, slot);
    coro_t *h = slot ? spin_end(w) : NULL;
    if (h) {
        if (j)
            coro__submit(s, j, false);      /* ours to run after h */
        j = found_(w, h);
    }
    if (!found)
        w->spin_hist = (uint8_t)(w->spin_hist << 1 | (j != NULL));
    return j;
}

/* IDLE: what this worker's own look at epoll woke, once our own queues
 * came out empty: the job to run next (w->caught), or NULL with *woke
 * set when the look queued jobs for us (or nothing was woken) */
static coro_t *look_epoll(struct coro__worker *w, bool *woke)
{
    coro_sched_t *s = w->s;

    w->catching = true;
    int n = s->driver->poll_now(s->io);
    w->catching = false;
    *woke = n > 0 || w->caught;
    if (!*woke)
        return NULL;
    /* what we woke is ours to run next (w->caught, else in our own
     * queues).  We are no searcher here (we steal only after this look),
     * so no last searcher's wake is ours to send: the submits of what the
     * look queued notified as any push does */
    coro_t *j = w->caught;
    w->caught = NULL;
    /* a HIGH or LOW job woken after it, by the same look: the caught one
     * queues as any other, to be picked in priority order (PRIORITIES) */
    if (j && prio_queued(w)) {
        coro__submit(s, j, false);
        j = NULL;
    }
    return found_(w, j);
}

/* the first look of an idle phase, with I/O: our own queues were just
 * looked at, then the epoll set, and only then the other workers'.  The
 * readiness our own jobs wait for is often there already; taking it
 * here runs the woken job on this worker with no thread wake-up (and the
 * hand-off from the thread blocked in epoll_wait), and before stealing
 * it costs no turn as a searcher (two locked RMWs on the shared count,
 * and a look at every other worker's queues, per wake-up: io_pingpong).
 * *again: the look queued jobs for us, look at our queues again */
static coro_t *idle_look(struct coro__worker *w, bool spinning, uint32_t *activity, bool *again)
{
    coro_sched_t *s = w->s;
    coro_t *j = NULL;

    *again = false;
    if (s->io) {
        bool woke;
        j = look_epoll(w, &woke);
        if (woke) {
            *again = !j;
            return j;
        }
        *activity = s->driver->activity(s->io);
    }
    /* a spinner looks at the others' queues as its spin does, not as a
     * searcher (SPINNING) */
    j = spinning ? spin_look(w) : found_(w, find_others_(w, true));
    if (!j)
        coro__trace_idle(w);
    return j;
}

/* the worker found nothing in its own queues: look at epoll and the
 * others' queues, spin, park.  The job to run, or NULL (look again) */
static coro_t *go_idle(struct coro__worker *w, uint32_t *activity)
{
    bool waits = may_wait(w);
    /* relaxed: a hint; spin_begin's CAS decides */
    bool slot = waits && !__atomic_load_n(&w->s->spinner, __ATOMIC_RELAXED) && spin_begin(w);
    bool again;
    coro_t *j = idle_look(w, slot, activity, &again);

    if (slot || (waits && !j && !again)) {
        /* a slot is open from before our first look: a job handed over
         * meanwhile is ours whatever that look found */
        bool found = j || again;
        if ((j = spin(w, j, found, slot)) || found)
            return j;
    } else if (j || again) {
        return j;
    }
    return coro__park_since(w, *activity);
}

/* after a step: the last searcher to find work wakes another in its
 * place.  A worker that was not searching (woken, or in its last look
 * before parking) but took more jobs than the one it runs - half a
 * submission ring, half a victim's ring - wakes one for the rest: they
 * sit in its local ring behind a step that may be long, and the notifies
 * of their pushes may have counted on a searcher that is gone
 * (io_standby: four jobs from a plain thread, two workers parked while
 * two of them waited) */
static inline void found_wake(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    bool more = w->took_more;

    w->took_more = false;
    if (w->searching) {
        if (stop_searching(w) && s->nworkers > 1)
            notify(s, s->all_wmask, true);
    } else if (more && s->nworkers > 1) {
        notify(s, s->all_wmask, true);
    }
}

/* pin the worker to its CPU and name it */
static void worker_start(struct coro__worker *w)
{
    char name[16];

    coro__tls_worker = w;
    snprintf(name, sizeof name, "coro-w%d", w->cpu);
    pthread_setname_np(pthread_self(), name);
    if (w->s->pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        /* relaxed: read racily by coro_sched_stats / coro_sched_dump */
        __atomic_store_n(&w->pinned,
                         pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0,
                         __ATOMIC_RELAXED);
    }
}

void *coro__worker_main(void *arg)
{
    struct coro__worker *w = arg;
    coro_sched_t *s = w->s;
    uint32_t activity = 0;      /* coro__io_activity at the start of the idle phase */

    worker_start(w);
    for (;;) {
        coro_t *j = with_deferred(w, found_(w, find_own_(w, true)));
        if (!j) {
            /* acquire: pairs with stop_workers' release */
            if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
                break;
            if (!(j = go_idle(w, &activity)))
                continue;
        }
        found_wake(w);
        coro__run_job(w, j);
        if (s->io && look_due_(w) && !CORO__HOOK(coro__busy_look_off, false))
            w->drain = s->driver->poll_busy(s->io, w->idx) > 0 && w->deferred ? CORO__IO_POLL_DRAIN : 0;
    }
    coro__frames_flush(s);      /* the frames of other pools it still holds */
    coro__tls_worker = NULL;
    return NULL;
}
