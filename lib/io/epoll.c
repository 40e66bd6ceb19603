/* SPDX-License-Identifier: MIT */
/* Waiting in epoll: who waits in the I/O context's epoll set and handles
 * what it reports.  No thread owns the set: whichever thread holds the
 * POLL TOKEN waits in epoll_wait and handles what it reports - an idle
 * worker (tokio's and Go's model: no hand-off), or the dedicated I/O
 * thread when no worker waits there (the guarantee that readiness is seen
 * while every worker runs long jobs: tokio #4730), or in single-threaded
 * mode the thread driving the scheduler (coro__io_poll).  What an event
 * does to the fd's waiters: lib/io/fd_wait.c; the timers fired after the
 * events: lib/io/timers.c.
 *
 * THE POLL TOKEN (io->poll_token: 0 free, worker index + 1, that | TOKEN_LOOK
 * for a busy look, or TOKEN_IOT).  A
 * worker about to park takes it if free and waits in epoll_wait instead of
 * its futex (coro__io_park; sched/park.c, PARKING, has the no-lost-wake-up
 * argument), releasing it as soon as epoll_wait returns, so that another
 * idle worker can wait while it handles the events and runs the jobs.  A
 * worker that finds the I/O thread holding it asks for it (io->want + an
 * eventfd write) and parks on its futex; the I/O thread gives it up and
 * wakes one idle worker, which takes it on its next park.  The I/O thread
 * without the token waits on io->standby for CORO__IO_STANDBY_NS (or until the
 * next timer): it takes the token when it finds it free and no worker
 * took it (nor made a busy look, BUSY WORKERS LOOK TOO) since its last
 * look - every worker is in a long step - so readiness and
 * timers are seen within about 2 * CORO__IO_STANDBY_NS even then, and never taken
 * from workers that keep polling.  A busy worker's look never waits for the token
 * the I/O thread or another busy look holds: it looks beside it, without
 * the token, so no event waits for a holder that does not run
 * (tools/model/look.pml).
 * When it finds one worker hold lasting
 * CORO__IO_DEEP_LOOKS looks, it sleeps until that worker lets go (coro__io_main,
 * wake_standby), with only a long safety-net timeout
 * (CORO__IO_DEEP_STANDBY_NS): an idle process seldom wakes up.  A worker
 * that goes idle while the I/O thread holds the token asks for it
 * (coro__io_poll_now), and the I/O thread, asked, lets it go rather than
 * take it back.  The eventfd (io->evfd) wakes whoever
 * holds the token: a waker that sees worker i holding it writes it instead
 * of calling futex_wake (coro__io_wake_poller).
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>

#include "io/io_impl.h"
#include "sched/trace.h"

/* handle what epoll_wait returned (the jobs woken into b: coro__wake_into).
 * Only the token holder reads the eventfd (holder): a kick is meant for it, and a
 * look without the token (coro__io_poll_now) that drained it could leave
 * the holder asleep; the eventfd is level-triggered, so the holder still
 * sees it. */

#ifdef CORO_TEST_HOOKS
bool coro__io_thread_timers_off;
int64_t coro__io_thread_hold_ns;
#endif

static int handle(struct coro__io *io, const struct epoll_event *evs, int n, bool holder,
                  int who, struct coro__woken *b)
{
    int done = 0, woke = 0;
    /* the test hook: the I/O thread (who 1) leaves the timers to workers */
    bool timers = !(who == 1 && CORO__HOOK(coro__io_thread_timers_off, false));

    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        uint64_t v;
        if (tag == TAG_EVFD) {
            if (holder) {
                ssize_t r = coro__read(io->evfd, &v, sizeof v);
                (void)r;
            }
        } else if (tag == TAG_TFD) {
            ssize_t r = coro__read(io->timer.fd, &v, sizeof v);
            (void)r;
        } else if (tag & TAG_SRC) {
            struct source *src = &io->src[tag & (MAX_SOURCES - 1)];
            if (timers || src->cb != coro__io_parklot_timers_cb)
                src->cb(src->arg, b);
            done++;
        } else {
            woke += fd_event(io, tag, evs[i].events, b);
            done++;
        }
    }
    /* relaxed load and store, not a locked add at every event: [1] has
     * one writer (the I/O thread), and [0] only feeds coro__io_woken_by,
     * whose readers ask whether workers took events at all - two workers
     * racing here lose a count, never the fact */
    if (woke)
        __atomic_store_n(&io->n_woke[who],
                         __atomic_load_n(&io->n_woke[who], __ATOMIC_RELAXED) + (uint64_t)woke,
                         __ATOMIC_RELAXED);
    return done + (timers ? coro__io_expire(io, b) : 0);
}

static int ms_of(int64_t timeout_ns)
{
    if (timeout_ns < 0)
        return -1;
    int64_t ms = coro__ns_add(timeout_ns, 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* wait in epoll up to timeout_ns and handle what is ready; the caller
 * holds the token */
static int poll_round(struct coro__io *io, int64_t timeout_ns)
{
    struct epoll_event evs[CORO__IO_EVENTS];

    coro__trace_poll(io->s, -1);
    int n = coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, ms_of(timeout_ns));
    coro__trace_poll(io->s, n);
    return handle(io, evs, n > 0 ? n : 0, true, io->threaded ? 1 : 0, NULL);
}

/* how long the I/O thread, holding the token, may block in epoll_wait (ns,
 * -1: until an event).  The workers' own timers are not in the epoll set:
 * a worker in a long step fires its heap only after that step, so we fire
 * the heaps of the workers whose deadline passed CORO__IO_STANDBY_NS ago
 * (as coro__io_main does without the token), and wake for the earliest
 * one.  A timer pushed after we went to sleep tells us nothing, so the
 * sleep is bounded by the same safety net as the deep standby
 * (CORO__IO_DEEP_STANDBY_NS).  Without the workers' heaps (no workers) every
 * timer is in the scheduler's heaps, whose timerfds are in the set. */
static int64_t iot_bound(struct coro__io *io)
{
    if (!coro__wt_homes(io->s))
        return -1;
    int fired = 0;
    int64_t now = coro__now();
    int64_t until = coro__wt_expire_stuck(io->s, now, CORO__IO_STANDBY_NS, &fired);
    if (fired || until <= now)
        return 0;
    if (until > now + CORO__IO_DEEP_STANDBY_NS)
        until = now + CORO__IO_DEEP_STANDBY_NS;
    return until - now;
}

/* the I/O thread holds the token: wait and handle until a worker asks
 * for it (and an idle worker was woken to take it) or the thread stops */
static void iot_drive(struct coro__io *io)
{
    int idle = 0;
    uint32_t gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);

    /* acquire: pairs with coro__io_destroy's release of stop */
    while (!__atomic_load_n(&io->stop, __ATOMIC_ACQUIRE)) {
        /* workers handle I/O again (coro__io_poll_now found events): leave
         * it to them rather than compete for each event */
        if (__atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) != gen)
            break;
        /* relaxed: a hint; the exchange keeps a park's ask that races a
         * busy one */
        uint32_t want = __atomic_load_n(&io->want, __ATOMIC_RELAXED);
        if (want) {
            want = __atomic_exchange_n(&io->want, 0, __ATOMIC_RELAXED);
            /* release: what we handled before a worker's CAS takes the token */
            __atomic_store_n(&io->poll_token, TOKEN_FREE, __ATOMIC_RELEASE);
            /* only a busy worker asked: it takes the token at its next
             * look, and no idle worker is woken for it (a futex wake and
             * two context switches per ask, on CPUs the busy workers use) */
            if (!(want & WANT_PARK))
                return;
            /* an idle worker wakes and takes it; if none is idle, the one
             * that asked was woken meanwhile (often by the event we just
             * handled) and takes it at its next park.  Taking the token
             * back here could keep it from the workers for good: we would
             * take every event first, and a worker that finds the token
             * with us asks again, and again is woken by our event before
             * we see its ask.  Should the workers stay busy instead,
             * coro__io_main takes it again within two looks. */
            coro__io_wake_idle_worker(io->s);
            return;
        }
        /* after a round that did something, look again without sleeping
         * for up to CORO__IO_SPIN rounds (giving the CPU away in between,
         * while no neighbour holds it): the next event usually comes
         * within microseconds under load */
        int64_t tmo = idle < CORO__IO_SPIN ? 0 : iot_bound(io);
        int did = poll_round(io, tmo);
        if (did)
            idle = 0;
        else if (++idle < CORO__IO_SPIN && !coro__idle_yield(NULL))
            idle = CORO__IO_SPIN;       /* came back late: sleep in the next round (LATE YIELDS) */
    }
    /* release: what we handled before the next taker's CAS of the token */
    __atomic_store_n(&io->poll_token, TOKEN_FREE, __ATOMIC_RELEASE);
}

/* a worker let go of the token: if the I/O thread sleeps in deep standby
 * (coro__io_main), it keeps watch again */
static void wake_standby(struct coro__io *io)
{
    /* seq_cst: the other half of coro__io_main's Dekker - the caller stored
     * the token (seq_cst) before this load */
    if (!__atomic_load_n(&io->iot_asleep, __ATOMIC_SEQ_CST))
        return;
    /* relaxed exchange: one waker makes the system call */
    if (!__atomic_exchange_n(&io->iot_asleep, 0, __ATOMIC_RELAXED))
        return;
    /* release: pairs with coro__io_main's acquire load of the word */
    __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
    coro__futex_wake(&io->standby, 1);
}

/* what the I/O thread saw at its last look: the token's take and look
 * generations, and the worker hold it counts looks of (DEEP STANDBY) */
struct iot_seen {
    uint32_t gen, look;         /* poll_gen and look_gen */
    uint32_t held_gen, held_looks;
};

/* one look's first step: take the token and drive the set if every
 * worker is busy.  Returns the token's holder after it (TOKEN_IOT when
 * we drove); *now is read again when we did */
static uint32_t iot_take_if_idle(struct coro__io *io, struct iot_seen *seen, uint32_t gen,
                                 uint32_t holder, int64_t *now, int64_t next)
{
    uint32_t free_ = TOKEN_FREE;
    /* relaxed: a hint, as poll_gen */
    uint32_t look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
    /* the token is free and no worker took it or looked since our last
     * look (or a timer is due): every worker is busy, so we wait in
     * epoll.  A busy worker's look does not wait for us: it looks
     * beside us (coro__io_poll_busy) */
    if (holder == TOKEN_FREE && ((gen == seen->gen && look == seen->look) || next <= *now) &&
        /* seq_cst: the token word is RMWed by every taker */
        __atomic_compare_exchange_n(&io->poll_token, &free_, TOKEN_IOT, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
        /* the test hook: we hold the token and do not run, as when
         * preempted or waiting for a CPU that the busy workers hold */
        int64_t hold = CORO__HOOK(coro__io_thread_hold_ns, 0);
        if (hold > 0)
            nanosleep(&(struct timespec){ hold / 1000000000, hold % 1000000000 }, NULL);
        iot_drive(io);
        seen->gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
        seen->look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
        *now = coro__now();
        return TOKEN_IOT;
    }
    seen->gen = gen;
    seen->look = look;
    return holder;
}

/* DEEP STANDBY: returns true when this look slept in it (the caller looks
 * again), false when the look goes on to the short standby wait */
static bool iot_deep_standby(struct coro__io *io, struct iot_seen *seen, uint32_t gen,
                             uint32_t holder, uint32_t sb, int64_t stuck, int64_t now)
{
    /* DEEP STANDBY.  A worker holds the token and has held it, the
     * same hold (poll_gen moves at every take), for CORO__IO_DEEP_LOOKS looks:
     * it is blocked in epoll_wait, timerfd included, and sees every
     * event itself.  Nothing is left for us to watch until it lets go,
     * so we sleep until it does (the safety net below aside) instead
     * of looking 1000 times a second (an idle process stays idle).  Dekker with wake_standby:
     * we store iot_asleep then read the token; the worker stores the
     * token then reads iot_asleep (both seq_cst).  Either we see the
     * token gone and keep watch, or the worker sees us asleep and
     * wakes us (the standby bump makes our futex_wait return). */
    if (holder != TOKEN_FREE && !(holder & TOKEN_LOOK) && gen == seen->held_gen) {
        if (++seen->held_looks >= CORO__IO_DEEP_LOOKS) {
            __atomic_store_n(&io->iot_asleep, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&io->poll_token, __ATOMIC_SEQ_CST) == holder &&
                __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) == gen)
                /* bounded (CORO__IO_DEEP_STANDBY_NS): a safety net, not part
                 * of the argument above - 20 looks a second at most
                 * while idle, instead of 1,000 */
                coro__futex_wait(&io->standby, sb,
                                 stuck < now + CORO__IO_DEEP_STANDBY_NS
                                     ? stuck
                                     : now + CORO__IO_DEEP_STANDBY_NS);
            __atomic_store_n(&io->iot_asleep, 0, __ATOMIC_RELAXED);
            /* the safety net's timeout, the same hold going on: back
             * to deep sleep at the next look, not after CORO__IO_DEEP_LOOKS
             * more short looks (an idle process woke twice as often
             * with them); a new hold or a free
             * token resets the count below */
            seen->held_looks = CORO__IO_DEEP_LOOKS - 1;
            return true;
        }
    } else {
        seen->held_gen = gen;
        seen->held_looks = 0;
    }
    return false;
}

void *coro__io_main(void *arg)
{
    struct coro__io *io = arg;
    struct iot_seen seen;
    /* relaxed: generation counters, compared for change only; what a
     * look handled is ordered by the poll token, not by these */
    seen.gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
    seen.look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
    seen.held_gen = seen.gen;
    seen.held_looks = 0;

    pthread_setname_np(pthread_self(), "coro-io");
    coro__trace_io_thread(io->s);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);     /* timers fire on time */
    while (!__atomic_load_n(&io->stop, __ATOMIC_ACQUIRE)) {
        uint32_t gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
        uint32_t holder = __atomic_load_n(&io->poll_token, __ATOMIC_RELAXED);
        int64_t now = coro__now();
        int64_t next = __atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED);
        holder = iot_take_if_idle(io, &seen, gen, holder, &now, next);
        /* acquire: pairs with the release increments of coro__io_timer_add,
         * destroy and wake_standby */
        uint32_t sb = __atomic_load_n(&io->standby, __ATOMIC_ACQUIRE);
        /* the workers fire their own timers, at their looks and parks; one
         * whose deadline passed CORO__IO_STANDBY_NS ago is in a long step:
         * its timers fire here (lib/wait/wtimer.c), and the earliest
         * deadline of them all bounds our sleep */
        int fired = 0;
        now = coro__now();
        int64_t stuck = coro__wt_expire_stuck(io->s, now, CORO__IO_STANDBY_NS, &fired);
        if (stuck <= now)
            stuck = now + CORO__IO_STANDBY_NS;
        if (iot_deep_standby(io, &seen, gen, holder, sb, stuck, now))
            continue;
        int64_t until = now + CORO__IO_STANDBY_NS;
        if (next > now && next < until)
            until = next;   /* due ones: the token holder has the timerfd */
        if (stuck < until)
            until = stuck;
        coro__futex_wait(&io->standby, sb, until);
    }
    return NULL;
}

/* a token holder's epoll_wait returned these n events: if the eventfd's
 * kick is among them, take it off while the token is still ours (a kick
 * read after letting go could be the next holder's) */
static void take_kick(struct coro__io *io, const struct epoll_event *evs, int n)
{
    for (int i = 0; i < n; i++)
        if (evs[i].data.u64 == TAG_EVFD) {
            uint64_t v;
            ssize_t r = coro__read(io->evfd, &v, sizeof v);
            (void)r;
            break;
        }
}

/* epoll_wait until the absolute deadline (ns): epoll_pwait2's
 * nanoseconds where the kernel has it, else milliseconds rounded up */
static int epoll_wait_until(int epfd, struct epoll_event *evs, int max, int64_t deadline)
{
    int64_t left = deadline - coro__now();
    if (left < 0)
        left = 0;
    struct timespec ts = { .tv_sec = left / 1000000000, .tv_nsec = left % 1000000000 };
    int n = epoll_pwait2(epfd, evs, max, &ts, NULL);
    if (n < 0 && errno == ENOSYS)
        n = coro__epoll_wait(epfd, evs, max, ms_of(left));
    return n;
}

int coro__io_park(struct coro__io *io, int idx, const uint32_t *epoch_word, uint32_t epoch,
                  uint32_t activity, struct coro__woken *b)
{
    struct epoll_event evs[CORO__IO_EVENTS];
    uint32_t me = (uint32_t)idx + 1, free_ = TOKEN_FREE;

    /* relaxed: a hint.  Another worker handled I/O while we looked for
     * work: it will wait in epoll when it runs out, and its jobs' readiness
     * is best left to it (each event we took would move a conversation
     * between workers and wake us for nothing) */
    if (__atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) != activity)
        return -EAGAIN;
    uint32_t cur = __atomic_load_n(&io->poll_token, __ATOMIC_RELAXED);
    if (cur == TOKEN_IOT) {
        /* relaxed: a hint iot_drive reads at its next round; the kick
         * (one per ask: the first to set the bit) ends an epoll_wait it
         * may block in meanwhile */
        if (!(__atomic_fetch_or(&io->want, WANT_PARK, __ATOMIC_RELAXED) & WANT_PARK))
            kick(io);
        return -EAGAIN;
    }
    /* seq_cst: Dekker against coro__io_wake_poller - we store the token,
     * then read the epoch; the waker bumps the epoch, then reads the token */
    if (cur != TOKEN_FREE || !__atomic_compare_exchange_n(&io->poll_token, &free_, me, false,
                                                         __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return -EAGAIN;
    __atomic_add_fetch(&io->poll_gen, 1, __ATOMIC_RELAXED);
    int n = 0;
    /* our own timers' next deadline bounds the wait: the line our park
     * published it on under their lock (relaxed: our own store, or a
     * later one the I/O thread made under that lock; never later than
     * the earliest of them: lib/wait/wtimer.c) */
    int64_t deadline = __atomic_load_n(&io->s->w[idx]->timer_next, __ATOMIC_RELAXED);
    if (__atomic_load_n(epoch_word, __ATOMIC_SEQ_CST) == epoch)
        n = deadline == INT64_MAX ? coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, -1)
                                  : epoll_wait_until(io->epfd, evs, CORO__IO_EVENTS, deadline);
    /* the kick was for us: take it off the eventfd while we still hold
     * the token.  Read after letting go (as handle() did), it could take
     * the kick of the next holder, written for it in between, which then
     * slept in epoll_wait for good - a worker never woke for destroy
     * (stress/sched_shutdown, 1 run in about 100) */
    take_kick(io, evs, n);
    /* seq_cst: orders our handling so far before the next taker
     * (release), and is the store half of wake_standby's Dekker */
    __atomic_store_n(&io->poll_token, TOKEN_FREE, __ATOMIC_SEQ_CST);
    wake_standby(io);
    handle(io, evs, n > 0 ? n : 0, false, 0, b);    /* not the holder now */
    return 0;
}

int coro__io_poll_now(struct coro__io *io, struct coro__woken *b)
{
    struct epoll_event evs[CORO__IO_POLL_NOW_EVENTS];

    /* relaxed: a hint; nothing waits means nothing to find */
    if (!coro__io_pending(io))
        return 0;
    /* a worker goes idle while the I/O thread holds the token: ask for it
     * (no kick: iot_drive sees the flag at its next round).  Else a busy
     * I/O thread polling between sched_yields takes every event first, and
     * a worker that always finds the woken job during its own idle spins
     * never parks, so never asks: the I/O thread would relay a whole
     * conversation (relaxed: a hint, as in coro__io_park) */
    if (__atomic_load_n(&io->poll_token, __ATOMIC_RELAXED) == TOKEN_IOT &&
        !(__atomic_load_n(&io->want, __ATOMIC_RELAXED) & WANT_PARK))
        __atomic_fetch_or(&io->want, WANT_PARK, __ATOMIC_RELAXED);
    int n = coro__epoll_wait(io->epfd, evs, CORO__IO_POLL_NOW_EVENTS, 0);
    if (n <= 0)
        return 0;
    /* relaxed: a hint to the I/O thread that workers are handling I/O.
     * A load and a store, not an RMW (a locked instruction at every event
     * a worker takes this way): every reader of poll_gen only compares it
     * with an earlier look (!=), so two bumps that race and count once, or
     * a store that moves it back, still read as "moved"; the one miss - a
     * store of exactly the value a reader saw - hides one look, which
     * only delays a hint (iot_drive's hand-back, coro__io_main's deep standby,
     * coro__io_park's choice of futex or epoll), never a wake-up */
    __atomic_store_n(&io->poll_gen, __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return handle(io, evs, n, false, 0, b);
}

/* BUSY WORKERS LOOK TOO.  A worker that always has a job ready never
 * parks, so it never waits in epoll, and its idle look (coro__io_poll_now)
 * never runs.  Between two steps, at the points sched/worker.c chooses
 * (every CORO__IO_POLL_STEPS steps, and at a yield at least
 * CORO__IO_POLL_YIELD_NS after its last look: worker_main, BUSY LOOKS),
 * it calls this: it looks without blocking and handles what it found as
 * an idle worker would.  The jobs that readiness wakes go back in the
 * worker's batch (b), which it queues in its own queues (or their
 * class's) ahead of the job that yielded, and any idle worker their masks
 * allow is woken for them by that batch's notify.
 *   A BUSY LOOK ALWAYS LOOKS, unless an idle worker holds the token:
 * blocked in epoll (coro__io_park), it sees every event on a CPU of its
 * own, and a second look would only move its jobs' readiness here.
 * Free, we take the token for the look (marked TOKEN_LOOK).  The I/O
 * thread or another busy look holding it, we look beside it, without the
 * token, as an idle worker's coro__io_poll_now does: whatever the
 * holder's state - blocked in epoll_wait, woken but waiting for a CPU
 * that the busy workers hold, preempted in its own round or look - the
 * events ready now are ours, where leaving them to it made their wake-up
 * wait for that thread to run and then for the next yield (two steps).
 * Two lookers at once lose and double nothing: each
 * edge-triggered event goes to one epoll_wait, the fd's readiness word
 * and slots are under its lock (lib/io/fd_wait.c), the timerfd and the
 * sources are read non-blocking by whoever sees them, and the eventfd is
 * read only by the holder.  We also ask the I/O thread to let go
 * (WANT_BUSY, no kick: it sees every event meanwhile, and a kick would
 * wake a thread on a CPU the busy workers use), and look_gen moves at
 * every look, so it does not take the token while workers look
 * (coro__io_main): the I/O thread is the guarantee only while no worker
 * looks - every job in a long step.  What it takes between two looks
 * costs nothing, since the looks go beside it.
 *   A kick seen while we hold the token is the holder's (coro__io_park:
 * only the holder reads the eventfd), read before we let go.  Returns
 * how many events woke something. */
int coro__io_poll_busy(struct coro__io *io, int idx, struct coro__woken *b)
{
    struct epoll_event evs[CORO__IO_EVENTS];
    uint32_t me = ((uint32_t)idx + 1) | TOKEN_LOOK, cur;
    bool holder = false;

    /* relaxed: a hint; the CAS below decides */
    cur = __atomic_load_n(&io->poll_token, __ATOMIC_RELAXED);
    /* seq_cst: the token word is RMWed by every taker, and its store by
     * each holder is half of a Dekker (coro__io_wake_poller, wake_standby):
     * kept the same here.  A CAS that fails reloads cur: a holder that
     * took the token meanwhile is looked beside as well.  Our mark keeps
     * coro__io_wake_poller from kicking us (we are not parked: the
     * futex wake it makes instead finds nobody) and coro__io_main from
     * reading our hold as a park's (DEEP STANDBY) */
    if (cur == TOKEN_FREE && __atomic_compare_exchange_n(&io->poll_token, &cur, me, false,
                                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        holder = true;
    else if (!(cur & TOKEN_LOOK))
        return 0;   /* an idle worker waits in epoll, and sees the events */
    else if (cur == TOKEN_IOT && !(__atomic_load_n(&io->want, __ATOMIC_RELAXED) & WANT_BUSY))
        /* relaxed: iot_drive reads the flag at its next round */
        __atomic_fetch_or(&io->want, WANT_BUSY, __ATOMIC_RELAXED);
    /* relaxed: a hint for the I/O thread (coro__io_main: a worker looked
     * since its last look, so it stays in standby).
     * A load and a store, as poll_gen's in coro__io_poll_now: lookers
     * beside the I/O thread race here, and its reader only compares the
     * word with an earlier read (a lost bump still reads as "moved").  Not
     * poll_gen, which tells idle workers that another one handles I/O
     * (coro__io_park then parks on the futex): a look that finds nothing
     * says nothing of the kind */
    __atomic_store_n(&io->look_gen, __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    int n = coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, 0);
    if (holder) {
        take_kick(io, evs, n);
        /* seq_cst: as coro__io_park's release of the token */
        __atomic_store_n(&io->poll_token, TOKEN_FREE, __ATOMIC_SEQ_CST);
        wake_standby(io);
    }
    if (n <= 0)
        return 0;
    /* relaxed: workers handle I/O, as coro__io_poll_now says it (a racing
     * store only hides a bump, never a wake-up) */
    __atomic_store_n(&io->poll_gen, __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return handle(io, evs, n, false, 0, b);
}

bool coro__io_wake_poller(struct coro__io *io, int idx)
{
    /* seq_cst: the other half of coro__io_park's Dekker (the caller bumped
     * the epoch with a seq_cst RMW first) */
    if (__atomic_load_n(&io->poll_token, __ATOMIC_SEQ_CST) != (uint32_t)idx + 1)
        return false;
    kick(io);
    return true;
}

void coro__io_kick(struct coro__io *io)
{
    kick(io);
}

bool coro__io_pending(struct coro__io *io)
{
    return __atomic_load_n(&io->npending, __ATOMIC_RELAXED) != 0 ||
           coro__parklot_timers_pending(io->s);
}

uint32_t coro__io_fd_waiters(struct coro__io *io)
{
    /* relaxed: a count, for the virtual driver's "anything outside
     * waiting" question; the waiters themselves are under their fd
     * entries' locks */
    return __atomic_load_n(&io->nfd, __ATOMIC_RELAXED);
}

#ifdef CORO_TEST_HOOKS
uint64_t coro__io_woken_by(struct coro__io *io, bool io_thread)
{
    return __atomic_load_n(&io->n_woke[io_thread], __ATOMIC_RELAXED);
}
#endif

int coro__io_poll(struct coro__io *io, int64_t timeout_ns)
{

    if (io->threaded)
        return -EINVAL;
    if (!coro__io_pending(io))
        return -EAGAIN;     /* nothing waits on I/O: never block */
    /* the driving thread is the only poller: the token is free */
    int n = poll_round(io, timeout_ns);
    return n;
}
