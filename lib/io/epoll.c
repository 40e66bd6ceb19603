/* SPDX-License-Identifier: MIT */
/* The I/O context: one epoll set per scheduler, the fd table, the timers.
 * No thread owns it: whichever thread holds the POLL TOKEN waits in
 * epoll_wait and handles what it reports - an idle worker (tokio's and
 * Go's model: no hand-off), or the dedicated I/O thread when no worker
 * waits there (the guarantee that readiness is seen while every worker
 * runs long jobs: tokio #4730), or in single-threaded mode the thread
 * driving the scheduler (coro__io_poll).
 *
 * REGISTERED ONCE PER DIRECTION.  An fd enters the epoll set at its first
 * wait, edge-triggered, for that wait's direction (EPOLLIN | EPOLLRDHUP or
 * EPOLLOUT, with EPOLLET); the first wait in the other direction adds it
 * (EPOLL_CTL_MOD; its queued event is a possibly stale edge, which costs
 * one attempt).  A direction nobody waits in stays out: the peer's every
 * read would call into epoll for a writable edge no one needs.  The fd
 * stays registered until coro_close (EPOLL_CTL_DEL) or until
 * corokit learns that its number names a new file (coro__io_forget: accept
 * returned it, connect starts on it, a signalfd/pidfd of ours is closed).
 * The epoll tag is fd | gen << 32: an event of a forgotten registration
 * (gen moved on) is ignored.
 *
 * THE FD ENTRY (struct fdent, a two-level table whose chunks are never
 * freed before the scheduler, so a pointer to an entry stays valid) holds,
 * under its spinlock, the waiting reader and writer (w[dir]), and the
 * READINESS word `rdy` (tokio's ScheduledIo): flags in the low byte -
 * readable / writable (CORO__RDY_RD/WR), the sticky end states
 * (CORO__RDY_RD_CLOSED from EPOLLRDHUP, EPOLLHUP or EPOLLERR;
 * CORO__RDY_WR_CLOSED from EPOLLHUP or EPOLLERR), registered per direction
 * (CORO__RDY_REG_*) - and above them the TICK, the count of epoll events
 * seen for the fd (and of registrations).
 * The word is a hint that may cost a system call, never one that skips a
 * needed call.  Every constructor (lib/io/ops.c) makes its call whatever
 * the word says: the word cannot know of a number closed with close(2)
 * and reused, and a timeout of 0 must try.  The word is read only by a
 * job about to park whose own call just got EAGAIN (fd_wait), to choose
 * "park" or "try again".
 * Invariant: a direction's bits are clear only if an operation, started
 * after the word showed the current tick, got EAGAIN, and no event has
 * come since.  So clear bits of a registered direction mean "would block".
 *   an event for dir (poller, under the lock): tick + 1, dir's ready bit
 *     set, and its closed bit when the event says so (a CAS loop, one
 *     RMW); a waiter in the slot is taken and woken to try (WHO CALLS)
 *   an operation (anyone): snap = word (seq_cst load) BEFORE the system
 *     call; after EAGAIN, the kernel's only "not ready", clear dir's bits
 *     by CAS, only while the tick is still snap's.  A transfer, short or
 *     not, and an end of file (0) or an error clear nothing: a short read
 *     does not say the fd is drained - the FIN (a pipe's last writer
 *     gone, an RST) may have come with the data, and its edge may have
 *     been handled before the read, so no edge would come again.
 *   a waiter (fd_wait, under the lock, after its own EAGAIN): bits set:
 *     unlock, try (the rule above), loop; clear: park in w[dir] - no
 *     second system call.
 * No lost wake-up: the kernel queues an edge-triggered event for every
 * state change after the call that got EAGAIN (new data, FIN, RST, HUP,
 * an error, buffer space); the poller counts it (tick + 1) either before
 * the clear's CAS, which then fails and leaves the bits set (one extra
 * attempt), or after it, setting the bits again or taking the parked
 * waiter (the waiter parks under the lock the poller takes).  A change
 * before that call is no concern: the call saw it and did not get EAGAIN.
 * A set bit may be stale (an edge whose data was read): one extra
 * attempt, never a lost wake-up.  The closed bits are sticky against
 * everything but EAGAIN (a FIFO whose new writer opened it is no longer
 * at its end: the kernel says so, and the bit goes, so a waiter cannot
 * spin on it).  A fresh registration starts not ready: EPOLL_CTL_ADD (MOD)
 * queues an event at once if the fd is ready then.  coro_close and
 * coro__io_forget wipe the flags and move the tick, so older snapshots
 * clear nothing.  The case analysis over each kind of event and fd is in
 * docs/io.md ("When a system call is skipped"); tools/model/ready.pml
 * checks the protocol, and rejects the rule that a short read clears.
 *
 * THE POLL TOKEN (io->driver: 0 free, worker index + 1, or DRV_IOT).  A
 * worker about to park takes it if free and waits in epoll_wait instead of
 * its futex (coro__io_park; sched/worker.c's essay has the no-lost-wake-up
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
 * from workers that keep polling.  When it finds one worker hold lasting
 * CORO__IO_DEEP_LOOKS looks, it sleeps without a timeout until that worker lets
 * go (io_main, wake_standby): an idle process does not wake up.  A worker
 * that goes idle while the I/O thread holds the token asks for it
 * (coro__io_poll_now), and the I/O thread, asked, lets it go rather than
 * take it back.  The eventfd (io->evfd) wakes whoever
 * holds the token: a waker that sees worker i holding it writes it instead
 * of calling futex_wake (coro__io_wake_poller).
 *
 * TIMERS: one heap (lib/wait/heap.c) under io->hlock, behind one
 * timerfd in the epoll set, absolute, set to the earliest deadline when it
 * changes.  Lock order: an entry lock, then the heap lock; the timer path
 * pops under the heap lock alone and then locks the entry, where the slot's
 * sequence number tells whether the wait it names is still there.  A wait
 * that ends otherwise removes its timer (O(1) amortized), found through
 * the handle the wait keeps (an fd slot's hidx, a sleep's awaitable:
 * lib/wait/heap.c).
 *
 * WHO CALLS: the thread that handles an event (a worker in epoll_wait,
 * a busy worker's look, the I/O thread) makes no read or write for the
 * waiter it takes: it wakes it with CORO__FL_REARM, and the worker that
 * runs the job arms its await again (coro__io_arm -> fd_wait: the bits
 * this event set, the operation tried with a snapshot, EAGAIN clears and
 * parks again).  So the calls are made on the workers the jobs' masks
 * allow, spread as the jobs are, and the handler's work per event is a
 * lock, a slot and a push, whatever the operation costs: no one thread
 * does work that grows with the bytes moved.  The job's deadline is
 * absolute (aw->timeout), so a wait parked again keeps it; a cancel
 * between the wake and the try is seen by fd_wait under the entry lock.
 * A select's stand-in is fired as before (proxy_fire): the select makes
 * its calls itself when it runs.
 *
 * CANCEL: coro_sched_shutdown(CORO_CANCEL) sets s->cancelling and calls
 * coro__io_cancel_all, which sweeps every waiter and timer at once, on
 * its thread.  A waiter checks the flag under the entry (heap) lock before
 * it parks: either it parks before the sweep locks that entry, and the
 * sweep finds it, or it locks after, and the lock orders the flag before
 * its check.
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/sys.h"
#include "io/io.h"
#include "sched/trace.h"

#define TAG_EVFD (1ull << 62)
#define TAG_TFD (1ull << 61)
#define TAG_SRC (1ull << 60)    /* | index: an extra source (coro__io_add_source) */
#define NO_TIMER (-1)

#define CHUNK_BITS 8
#define CHUNK (1u << CHUNK_BITS)
#define MAX_FDS (1u << 22)
#define NCHUNKS (MAX_FDS / CHUNK)

#define DRV_FREE 0u
#define DRV_IOT 0xffffffffu
/* io->want: who asks the I/O thread for the token.  A worker about to
 * park (coro__io_park, coro__io_poll_now): the I/O thread lets go and
 * wakes an idle worker to take it.  A busy worker's look
 * (coro__io_poll_busy): it lets go only; the asker takes it at its next
 * look */
#define WANT_PARK 1u
#define WANT_BUSY 2u
#define MAX_SOURCES 4

#define RD_BIT 1u
#define WR_BIT 2u

struct fdent {
    uint32_t lock;          /* spinlock: everything below but hidx */
    uint32_t gen;           /* of the registration, in the epoll tag */
    uint8_t reg;            /* in the epoll set under gen */
    uint8_t dirs;           /* RD_BIT | WR_BIT: the directions registered */
    uint8_t timed[2];       /* the waiter has a timer */
    uint32_t wseq[2];       /* numbers the waits of each slot */
    coro_t *w[2];           /* the waiting reader / writer */
    int32_t hidx[2];        /* their timers' heap handles (NO_TIMER: none): under hlock */
    uint64_t rdy;           /* the readiness word (CORO__RDY_*, READINESS above):
                               atomic; changed under the lock, except the
                               lock-free clears of coro__rdy_clear */
};

struct source {
    int fd;
    void (*cb)(void *arg);
    void *arg;
};

struct coro__io {
    coro_sched_t *s;
    int epfd, evfd, tfd;
    bool threaded;
    pthread_t thread;

    /* shared, hot */
    uint32_t driver __attribute__((aligned(CORO__CACHELINE)));  /* the poll token */
    uint32_t want;          /* a worker asks the I/O thread for the token (WANT_*) */
    uint32_t poll_gen;      /* bumped by each worker that takes the token */
    uint32_t look_gen;      /* bumped by each busy look (coro__io_poll_busy) */
    uint32_t standby;       /* futex word of the I/O thread's standby */
    uint32_t iot_asleep;    /* the I/O thread sleeps until the token holder lets go */
    uint32_t stop;          /* the I/O thread exits */
    uint32_t swept;
    int64_t next_deadline;  /* atomic copy of the heap's top, INT64_MAX = none */
    /* written at every wait and wake: lines of their own, apart from the
     * token's, which idle workers and the I/O thread read */
    uint32_t npending __attribute__((aligned(CORO__CACHELINE)));   /* waiters + timers
                                                                      (coro__io_pending) */
    uint32_t nfd;           /* fd waiters alone (coro__io_fd_waiting) */
    uint64_t n_woke[2] __attribute__((aligned(CORO__CACHELINE)));  /* fd waiters taken by an
                               event: [0] a worker or the single-threaded driver,
                               [1] the I/O thread */

    /* the fd table: chunks created once (CAS), freed by destroy */
    struct fdent *chunks[NCHUNKS] __attribute__((aligned(CORO__CACHELINE)));

    /* the timers */
    pthread_mutex_t hlock;
    struct coro__heap heap;
    struct coro__tfd timer; /* the timerfd: decided under hlock, programmed after it */
    uint64_t sleep_cancel_looks;    /* under hlock (coro__io_sleep_cancel_looks) */

    struct source src[MAX_SOURCES];
    uint32_t nsrc;          /* atomic: sources published with release */
};

static void kick(struct coro__io *io)
{
    uint64_t one = 1;
    ssize_t r = coro__write(io->evfd, &one, sizeof one);
    (void)r;    /* EAGAIN: the counter is saturated, the poller is awake anyway */
}

/* ---- the fd table ------------------------------------------------------------------------ */

/* two per wait and wake-up: the uncontended take inline (base/base.h) */
static inline void ent_lock(struct fdent *e)
{
    coro__spin_lock(&e->lock);
}

static void ent_unlock(struct fdent *e)
{
    coro__spin_unlock(&e->lock);
}

/* fd's chunk, created (CAS) on first use; NULL: -ENOMEM */
__attribute__((noinline, cold))
static struct fdent *chunk_new(struct coro__io *io, struct fdent **slot)
{
    struct fdent *c = NULL;
    struct fdent *n = coro__alloc(io->s, CHUNK * sizeof *n);
    if (!n)
        return NULL;
    memset(n, 0, CHUNK * sizeof *n);
    for (uint32_t i = 0; i < CHUNK; i++)
        n[i].hidx[0] = n[i].hidx[1] = NO_TIMER;
    /* acq_rel: publishes n's contents; on failure acquires the winner's */
    if (__atomic_compare_exchange_n(slot, &c, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return n;
    coro__free(io->s, n, CHUNK * sizeof *n);
    return c;
}

/* fd's entry; NULL when its chunk does not exist (create: -ENOMEM) or fd
 * is out of range.  Inline, the chunk's creation out of line: it is on
 * every wait, wake and readiness look (about ten per I/O round trip),
 * where an out-of-line call with the creation path costs several times
 * the instructions of the inline look */
static inline struct fdent *ent_get(struct coro__io *io, int fd, bool create)
{
    if (CORO__UNLIKELY((uint32_t)fd >= MAX_FDS))     /* negative ones too */
        return NULL;
    struct fdent **slot = &io->chunks[(uint32_t)fd >> CHUNK_BITS];
    /* acquire: the chunk's initialised entries, published by chunk_new's CAS */
    struct fdent *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (CORO__UNLIKELY(!c)) {
        if (!create || !(c = chunk_new(io, slot)))
            return NULL;
    }
    return &c[(uint32_t)fd & (CHUNK - 1)];
}

/* ---- readiness words (READINESS at the top) ------------------------------------------ */

/* a new readiness word: off what `clear` names, on what `set` names, and one
 * more tick (an event, or a registration: older snapshots no longer clear) */
static void rdy_update(struct fdent *e, uint64_t clear, uint64_t set)
{
    /* seq_cst: snapshots and clears are ordered around system calls; the
     * tick must move before anything that follows the event or the
     * registration (see READINESS) */
    uint64_t cur = __atomic_load_n(&e->rdy, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(&e->rdy, &cur, ((cur & ~clear) | set) + CORO__RDY_TICK,
                                        false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

static inline uint64_t rdy_load(struct fdent *e)
{
    return coro__rdy_load(&e->rdy);
}

static void rdy_clear(struct fdent *e, int dir, uint64_t snap)
{
    coro__rdy_clear(&e->rdy, dir, snap);
}

uint64_t *coro__io_rdy_word(struct coro__io *io, int fd)
{
    struct fdent *e = ent_get(io, fd, false);
    return e ? &e->rdy : NULL;
}

/* under hlock: where a sleep keeps its timer's handle (lib/wait/heap.c),
 * written at the push: its awaitable stays put while the job sleeps, since
 * the heap alone wakes it */
static inline coro_arg_t *sleep_slot(coro_t *job)
{
    return &job->top->aw.arg[CORO__SLEEP_SLOT];
}

static void pending_add(struct coro__io *io, int d)
{
    /* relaxed: a hint for the single-threaded driver (coro__io_pending) */
    __atomic_add_fetch(&io->npending, (uint32_t)d, __ATOMIC_RELAXED);
    /* a wait begun on a worker: its next yield asks "anything waits?"
     * again (sched/worker.c BUSY LOOKS; owner-only field, and this is
     * the owner's thread) */
    struct coro__worker *w = coro__tls_worker;
    if (d > 0 && w && w->s == io->s)
        w->poll_idle = 0;
}

/* an fd waiter set or taken: counted apart from the timers as well, for
 * the busy workers' question (coro__io_fd_waiting) */
static void waiters_add(struct coro__io *io, int d)
{
    /* relaxed: a hint, as npending */
    __atomic_add_fetch(&io->nfd, (uint32_t)d, __ATOMIC_RELAXED);
    pending_add(io, d);
}

/* ---- timers ---------------------------------------------------------------------------------- */

/* under hlock: the timerfd never later than the heap's earliest deadline;
 * true when the caller must call coro__tfd_sync once it drops hlock (the
 * system call is made outside the heap lock: lib/wait/tfd.c).
 * Lazily: a timerfd armed earlier than needed - its timer was removed, as
 * a connection's read timeout is at every request - is left to fire once
 * for nothing (expire() then arms it for the next): a removal costs no
 * system call.  One armed for a time that has passed has fired (or is
 * about to) and is armed again: left to the expire() its expiry leads
 * to, an add waited for that holder's wake-up (the timers shape read
 * worse: docs/benchmarks.md).  now: the clock, if the caller has read it (0: read
 * it here, only when the answer depends on it). */
static bool tfd_update(struct coro__io *io, int64_t now)
{
    int64_t d = coro__heap_next(&io->heap);
    int64_t armed = coro__tfd_wanted(&io->timer);

    __atomic_store_n(&io->next_deadline, d, __ATOMIC_RELAXED);
    /* relaxed: a busy worker's hint (sched/worker.c DUE TIMERS) */
    __atomic_store_n(&io->s->timers_next[0], d, __ATOMIC_RELAXED);
    if (d == armed || (d > armed && armed > (now ? now : coro__now())))
        return false;
    return coro__tfd_want(&io->timer, d);
}

/* add a timer; its handle (lib/wait/heap.c) into *hidx (an fd wait) or
 * the sleep's awaitable, under the lock that removals read it under.
 * -ECANCELED once cancelling (checked under the lock: see CANCEL at the
 * top), -ENOMEM */
static int timer_add(struct coro__io *io, struct coro__tnode *t, int32_t *hidx)
{
    bool sync = false;
    int rc;

    pthread_mutex_lock(&io->hlock);
    /* a sleep checks its job's cancel flag here, under the lock that
     * coro__io_cancel_jobs walks the heap under */
    if (coro__cancelling(io->s) ||
        (t->kind == CORO__IOK_SLEEP && coro__job_cancelled(t->p))) {
        rc = -ECANCELED;
    } else if ((rc = coro__heap_push(&io->heap, t)) == 0) {
        if (hidx)
            *hidx = (int32_t)t->h;
        else
            sleep_slot(t->p)->i = (intptr_t)t->h + 1;
        pending_add(io, 1);
        /* relaxed: written under hlock, which we hold */
        bool first = t->deadline < __atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED);
        sync = tfd_update(io, 0);   /* armed no later than t (lazily: see there) */
        if (first) {
            /* nobody may hold the token: let the I/O thread see it */
            if (io->threaded && __atomic_load_n(&io->driver, __ATOMIC_RELAXED) == DRV_FREE) {
                __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
                coro__futex_wake(&io->standby, 1);
            }
        }
    }
    pthread_mutex_unlock(&io->hlock);
    if (sync)
        coro__tfd_sync(&io->timer);
    return rc;
}

/* under hlock: out is a timer that left the heap, uncounted (the
 * caller's pending_add) */
static void taken_(struct coro__io *io, const struct coro__tnode *out)
{
    /* a sleep's awaitable keeps its handle: coro__heap_get tells a stale
     * one from the timer's */
    if (out->kind == CORO__TK_FD)
        ent_get(io, (int)(out->aux / 2), false)->hidx[out->aux % 2] = NO_TIMER;
}

/* under hlock: the earliest timer out */
static void heap_pop(struct coro__io *io, struct coro__tnode *out)
{
    coro__heap_pop(&io->heap, out);
    taken_(io, out);
    pending_add(io, -1);
}

/* under hlock: the live timer of handle out */
static void heap_del(struct coro__io *io, uint32_t handle, struct coro__tnode *out)
{
    coro__heap_del(&io->heap, handle, out);
    taken_(io, out);
    pending_add(io, -1);
}

/* ---- completing ---------------------------------------------------------------------- */

/* every completion of an fd awaitable, whoever completes it: the
 * awaitable's own fd is forgotten then released, a new fd forgotten */
__attribute__((noinline))
static void fd_done_(struct coro__io *io, coro_await_t *aw, intptr_t res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->flags & CORO__IOF_OWNFD)
        coro__io_forget(io, (int)aw->arg[0].i);
    if (ops->fini)
        ops->fini(aw);
    if ((ops->flags & CORO__IOF_NEWFD) && res >= 0)
        coro__io_forget(io, (int)res);
}

/* inline: read and write have nothing to do here */
static inline void fd_done(struct coro__io *io, coro_await_t *aw, intptr_t res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->fini || (ops->flags & (CORO__IOF_OWNFD | CORO__IOF_NEWFD)))
        fd_done_(io, aw, res);
}

static void finish(struct coro__io *io, coro_t *job, intptr_t res)
{
    fd_done(io, &job->top->aw, res);
    job->flags |= CORO__FL_IOWAKE;  /* counted by the worker that runs it */
    coro__wake(job, res);       /* from here the job is not ours */
}

/* under e's lock: the timer of slot dir's waiter off the heap */
__attribute__((noinline))
static void slot_untime(struct coro__io *io, struct fdent *e, int dir)
{
    struct coro__tnode t;

    e->timed[dir] = 0;
    pthread_mutex_lock(&io->hlock);
    if (e->hidx[dir] != NO_TIMER)
        heap_del(io, (uint32_t)e->hidx[dir], &t);
    pthread_mutex_unlock(&io->hlock);
}

/* under e's lock: take the waiter of dir off the slot (its timer off the heap) */
static inline coro_t *slot_take(struct coro__io *io, struct fdent *e, int dir)
{
    coro_t *job = e->w[dir];

    if (!job)
        return NULL;
    e->w[dir] = NULL;
    waiters_add(io, -1);
    if (e->timed[dir])
        slot_untime(io, e, dir);
    return job;
}

/* ---- waiting on an fd ------------------------------------------------------------------- */

static inline uint64_t tag_of(int fd, uint32_t gen)
{
    return (uint64_t)(uint32_t)fd | (uint64_t)gen << 32;
}

/* under e's lock: the first wait in direction bit (RD_BIT / WR_BIT): ADD
 * fd to the epoll set, or MOD it to add that direction (at most two
 * epoll_ctl per fd).  A direction nobody waits in is left out: each read
 * by the peer of a socket registered for EPOLLOUT too would queue an event
 * (unix_write_space) that every epoll_wait then reports.  0 or -errno. */
static int ent_register(struct coro__io *io, struct fdent *e, int fd, uint8_t bit)
{
    uint32_t gen = e->reg ? e->gen : e->gen + 1;
    uint8_t dirs = (uint8_t)((e->reg ? e->dirs : 0) | bit);
    struct epoll_event ev = {
        .events = EPOLLET | ((dirs & RD_BIT) ? EPOLLIN | EPOLLRDHUP : 0) |
                  ((dirs & WR_BIT) ? EPOLLOUT : 0),
        .data.u64 = tag_of(fd, gen)
    };
    int rc = epoll_ctl(io->epfd, e->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
    if (rc < 0 && e->reg && errno == ENOENT) {
        /* closed with close(2) and the number reused: epoll forgot the old
         * file, so we do too */
        e->reg = 0;
        gen = e->gen + 1;
        dirs = bit;
        ev.events = EPOLLET | (bit == RD_BIT ? EPOLLIN | EPOLLRDHUP : EPOLLOUT);
        ev.data.u64 = tag_of(fd, gen);
        rc = epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rc < 0 && !e->reg && errno == EEXIST)  /* the old file lives on (a dup): retag it */
        rc = epoll_ctl(io->epfd, EPOLL_CTL_MOD, fd, &ev);
    if (rc < 0)
        return -errno;
    /* ADD / MOD report what is ready now (an event is queued, handled after
     * our unlock): the new direction starts not ready.  At ADD the fd is
     * new to us: forget the old word. */
    uint64_t set = ((dirs & RD_BIT) ? CORO__RDY_REG_RD : 0) | ((dirs & WR_BIT) ? CORO__RDY_REG_WR : 0);
    rdy_update(e, e->reg ? coro__rdy_bits(bit == RD_BIT ? CORO__DIR_RD : CORO__DIR_WR) : 0xffu,
               set);
    e->gen = gen;
    e->reg = 1;
    e->dirs = dirs;
    return 0;
}

/* ---- select branches in fd slots ------------------------------------------------------
 * A select's readable/writable branch parks its record (CORO__FL_PROXY) in
 * the fd's slot like a job, without a timer (the select's own wait has
 * it).  Whoever takes a record off a slot claims its select under the
 * entry lock (the record's hook takes the select's lot bucket next: entry
 * lock, then that bucket; nothing takes them the other way round), and
 * the owner's coro_select_end unlinks the record under the same entry
 * lock: once it has, no claim runs or starts, so the record may go.  A
 * claim that fails (another branch won) gives the edge back (the ready bit
 * is set again).  Strictly the next waiter would not need it - every wait
 * tries its operation before it parks - but an edge taken by nobody stays
 * as if the record had never been there. */

static inline bool is_proxy(const coro_t *w)
{
    return (w->flags & CORO__FL_PROXY) != 0;
}

/* under e's lock: the record p, just taken off slot dir, claims its select
 * for res (queued on wl: the owner is woken after the unlock) */
static void proxy_fire(struct fdent *e, int dir, coro_t *p, intptr_t res, coro__wl_t *wl)
{
    if (p->fn(p) == 0)
        coro__wl_add(wl, p, res);
    else if (res == 0)
        rdy_update(e, 0, coro__rdy_bit(dir));
}

int coro__io_sel_link(struct coro__io *io, coro_t *p, int fd, int dir)
{
    CORO__IO_KEEP_ERRNO();
    struct fdent *e = ent_get(io, fd, true);
    int rc = 0;

    if (!e)
        return fd < 0 || (uint32_t)fd >= MAX_FDS ? -EBADF : -ENOMEM;
    ent_lock(e);
    uint8_t bit = dir == CORO__DIR_RD ? RD_BIT : WR_BIT;
    if (!(e->dirs & bit) || !e->reg)
        rc = ent_register(io, e, fd, bit);
    if (rc == 0 && e->w[dir])
        rc = -EBUSY;        /* one reader and one writer per fd */
    if (rc == 0) {
        e->w[dir] = p;
        waiters_add(io, 1);
    }
    ent_unlock(e);
    return rc;
}

void coro__io_sel_unlink(struct coro__io *io, coro_t *p, int fd, int dir)
{
    struct fdent *e = ent_get(io, fd, false);

    if (!e)
        return;
    ent_lock(e);
    if (e->w[dir] == p) {
        e->w[dir] = NULL;
        waiters_add(io, -1);
    }
    ent_unlock(e);
}

/* under e's lock: slot_take for the paths that end a wait with res (close,
 * forget, cancel): a select branch's record claims its select for res
 * (woken from wl after the unlock) and NULL is returned; a job is
 * returned for finish() */
static coro_t *slot_take_jobs(struct coro__io *io, struct fdent *e, int dir, intptr_t res,
                              coro__wl_t *wl)
{
    coro_t *w = slot_take(io, e, dir);

    if (w && is_proxy(w)) {
        proxy_fire(e, dir, w, res, wl);
        return NULL;
    }
    return w;
}

/* The job is SUSPENDED; its operation got EAGAIN.  Park it in its fd's
 * slot, or complete it (READY with *res) - the waiter's protocol at the top. */
static int fd_wait(struct coro__io *io, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    int fd = (int)aw->arg[0].i, dir = ops->dir;
    uint8_t bit = dir == CORO__DIR_RD ? RD_BIT : WR_BIT;
    struct fdent *e = ent_get(io, fd, true);
    int rc;

    if (!e) {
        *res = fd < 0 || (uint32_t)fd >= MAX_FDS ? -EBADF : -ENOMEM;
        return CORO__ARM_READY;
    }
    for (;;) {
        ent_lock(e);
        /* the per-job flag too (coro_cancel): checked under the entry lock
         * that coro__io_cancel_jobs takes, so the park sees it or is found */
        if (coro__cancelling(io->s) || coro__job_cancelled(job)) {
            ent_unlock(e);
            *res = -ECANCELED;
            return CORO__ARM_READY;
        }
        if (!(e->dirs & bit) && (rc = ent_register(io, e, fd, bit)) < 0) {
            ent_unlock(e);
            *res = rc;
            return CORO__ARM_READY;
        }
        /* an event came since the fd was last seen not ready (or the end
         * state stands): try the operation (the word read before it: a
         * snapshot); would block: clear, unless another event came
         * meanwhile */
        uint64_t snap = rdy_load(e);
        if (snap & coro__rdy_bits(dir)) {
            ent_unlock(e);
            bool done = ops->attempt(aw, res);
            if (!done)
                rdy_clear(e, dir, snap);
            if (done)
                return CORO__ARM_READY;
            continue;
        }
        if (e->w[dir]) {
            ent_unlock(e);
            *res = -EBUSY;      /* one reader and one writer per fd */
            return CORO__ARM_READY;
        }
        uint32_t seq = ++e->wseq[dir];
        int64_t deadline = coro__bound_deadline(job, aw->timeout);     /* .deadline */
        if (deadline >= 0) {
            struct coro__tnode t = { .deadline = deadline, .p = job, .seq = seq,
                                     .kind = CORO__TK_FD, .aux = (uint32_t)fd * 2 + (uint32_t)dir };
            rc = timer_add(io, &t, &e->hidx[dir]);  /* entry, then heap: the lock order */
            if (rc < 0) {
                ent_unlock(e);
                *res = rc;
                return CORO__ARM_READY;
            }
            e->timed[dir] = 1;
        }
        e->w[dir] = job;
        waiters_add(io, 1);
        ent_unlock(e);      /* from here the job is the poller's */
        return CORO__ARM_PENDING;
    }
}

/* a taken waiter, its fd ready: wake it to make its call itself, on the
 * worker that runs it (WHO CALLS).  Its await is armed again there
 * (coro__io_arm, CORO__FL_REARM): fd_wait finds the bits this event set
 * and tries, or parks it again after an EAGAIN - the waiter's protocol,
 * with no call made here */
static void fd_resume(coro_t *job)
{
    job->flags |= CORO__FL_IOWAKE | CORO__FL_REARM;
    coro__wake(job, 0);         /* from here the job is not ours */
}

/* returns how many waiters the event took */
static int fd_event(struct coro__io *io, uint64_t tag, uint32_t events)
{
    static const uint32_t want[2] = {
        EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR,
        EPOLLOUT | EPOLLHUP | EPOLLERR,
    };
    /* what ends each direction: a read then returns 0 or the error, a
     * write fails (EPOLLRDHUP: the peer's FIN or shutdown(SHUT_WR), our
     * own SHUT_RD; EPOLLHUP: both ends, a pipe's last writer or reader
     * gone; EPOLLERR: a pending error, an RST, a failed connect) */
    static const uint32_t closes[2] = {
        EPOLLRDHUP | EPOLLHUP | EPOLLERR,
        EPOLLHUP | EPOLLERR,
    };
    CORO__IO_KEEP_ERRNO();
    struct fdent *e = ent_get(io, (int)(uint32_t)tag, false);
    coro_t *job[2] = { NULL, NULL };

    if (!e)
        return 0;
    ent_lock(e);
    if (!e->reg || e->gen != (uint32_t)(tag >> 32)) {
        ent_unlock(e);      /* a forgotten registration */
        return 0;
    }
    coro__wl_t wl;
    int n = 0;
    coro__wl_init(&wl);
    for (int dir = 0; dir < 2; dir++) {
        if (!(events & want[dir]))
            continue;
        /* a select's record is chosen only by readiness that is still
         * there: an edge may be stale (its data already read, by the same
         * select's owner after an earlier round), and a job would try its
         * operation again where a select cannot - look first (poll, no
         * wait), and leave the record parked for the next edge */
        if (e->w[dir] && is_proxy(e->w[dir]) &&
            coro__fd_ready((int)(uint32_t)tag, dir == CORO__DIR_RD) == 0) {
            rdy_update(e, 0, 0);        /* seen: the tick moves, the bit stays */
            continue;
        }
        /* the bits are set whether or not a waiter is there: the taken
         * waiter's attempt clears them if it gets EAGAIN.  The end
         * states are kept apart from "ready": sticky until an EAGAIN */
        rdy_update(e, 0, coro__rdy_bit(dir) | ((events & closes[dir]) ? coro__rdy_bits(dir) : 0));
        if (e->w[dir])
            job[dir] = slot_take(io, e, dir);
        if (job[dir] && is_proxy(job[dir])) {
            proxy_fire(e, dir, job[dir], 0, &wl);
            job[dir] = NULL;
            n++;
        }
    }
    ent_unlock(e);
    if (wl.head)        /* a select's record fired: rare */
        coro__wl_wake(&wl);
    for (int dir = 0; dir < 2; dir++)
        if (job[dir])
            fd_resume(job[dir]);
    return n + (job[0] != NULL) + (job[1] != NULL);
}

/* fd's number no longer names the file its slot knew: every waiter ends
 * with EBADF and the registration and readiness are forgotten.  With
 * close_it (coro_close) the file is also taken out of epoll and closed,
 * under the lock: a waiter that comes next registers anew and gets EBADF
 * (unless the number was reused meanwhile: then it is a new fd).  Returns
 * close's result, else 0.  Inlined: close_it is a constant at each call. */
static inline __attribute__((always_inline)) int ent_reset(struct coro__io *io, struct fdent *e,
                                                           int fd, bool close_it)
{
    coro_t *job[2];
    int rc = 0;

    coro__wl_t wl;
    coro__wl_init(&wl);
    ent_lock(e);
    job[0] = slot_take_jobs(io, e, 0, -EBADF, &wl);
    job[1] = slot_take_jobs(io, e, 1, -EBADF, &wl);
    if (close_it && e->reg)
        epoll_ctl(io->epfd, EPOLL_CTL_DEL, fd, NULL);  /* a dup may keep the file open */
    e->reg = 0;
    e->dirs = 0;
    rdy_update(e, 0xffu, 0);    /* nothing known; older snapshots clear nothing */
    e->gen++;           /* events of the old registration are ignored */
    if (close_it)
        rc = close(fd) == 0 ? 0 : -errno;
    ent_unlock(e);
    coro__wl_wake(&wl);
    for (int dir = 0; dir < 2; dir++)
        if (job[dir])
            finish(io, job[dir], -EBADF);
    return rc;
}

void coro__io_forget(struct coro__io *io, int fd)
{
    struct fdent *e = ent_get(io, fd, false);

    if (e)
        ent_reset(io, e, fd, false);
}

/* ---- timers firing ----------------------------------------------------------------------- */

static void timer_fire(struct coro__io *io, const struct coro__tnode *t, intptr_t res)
{
    switch (t->kind) {
    case CORO__IOK_SLEEP: {
        coro_t *job = t->p;
        /* a sleep cut short by the job's deadline times out */
        if (res == 0 && t->deadline < job->top->aw.timeout)
            res = -ETIMEDOUT;
        finish(io, job, res);       /* the heap owned its wake-up */
        break;
    }
    case CORO__IOK_FD: {
        int dir = (int)(t->aux % 2);
        struct fdent *e = ent_get(io, (int)(t->aux / 2), false);
        coro_t *job = NULL;
        ent_lock(e);
        if (e->w[dir] == t->p && e->wseq[dir] == t->seq) {
            e->timed[dir] = 0;      /* already off the heap */
            job = slot_take(io, e, dir);
        }
        ent_unlock(e);
        if (job)
            finish(io, job, res == 0 ? -ETIMEDOUT : res);
        break;
    }
    }
}

/* the timers expire() takes out under one hold of hlock: the adds that
 * wait for the lock meanwhile wait for a few pops, and the fires that
 * follow find their jobs already asked for (a cache miss each, overlapped) */
#define EXPIRE_BATCH 16

static int expire(struct coro__io *io)
{
    struct coro__tnode t[EXPIRE_BATCH];
    int n = 0;

    /* relaxed: a stale value only delays the look to the next event */
    if (__atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED) == INT64_MAX)
        return 0;
    int64_t now = coro__now();
    for (;;) {
        int k = 0;
        bool sync = false;
        pthread_mutex_lock(&io->hlock);
        while (k < EXPIRE_BATCH && coro__heap_next(&io->heap) <= now) {
            coro__heap_pop(&io->heap, &t[k]);
            taken_(io, &t[k++]);
        }
        if (k)
            pending_add(io, -k);
        if (k < EXPIRE_BATCH)
            sync = tfd_update(io, now);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        for (int i = 0; i < k; i++)
            __builtin_prefetch(t[i].p);
        for (int i = 0; i < k; i++)
            timer_fire(io, &t[i], 0);
        n += k;
        if (k < EXPIRE_BATCH)
            return n;
    }
}

/* resume every waiter and drop every timer: CORO_CANCEL */
static int sweep(struct coro__io *io)
{
    struct coro__tnode t;
    int n = 0;

    for (;;) {
        pthread_mutex_lock(&io->hlock);
        if (!coro__heap_count(&io->heap)) {
            bool sync = tfd_update(io, 0);
            pthread_mutex_unlock(&io->hlock);
            if (sync)
                coro__tfd_sync(&io->timer);
            break;
        }
        heap_pop(io, &t);
        pthread_mutex_unlock(&io->hlock);
        timer_fire(io, &t, -ECANCELED);
        n++;
    }
    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fdent *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fdent *e = &ch[i];
            coro_t *job[2];
            ent_lock(e);
            job[0] = slot_take(io, e, 0);
            job[1] = slot_take(io, e, 1);
            ent_unlock(e);
            for (int dir = 0; dir < 2; dir++) {
                /* a select's record: its owner waits on the select's own
                 * key, where the lot's sweep cancels it */
                if (job[dir] && !is_proxy(job[dir])) {
                    finish(io, job[dir], -ECANCELED);
                    n++;
                }
            }
        }
    }
    return n;
}

/* ---- waiting in epoll --------------------------------------------------------------------- */

/* handle what epoll_wait returned; *kicked: the eventfd fired.  Only the
 * token holder reads the eventfd (holder): a kick is meant for it, and a
 * look without the token (coro__io_poll_now) that drained it could leave
 * the holder asleep; the eventfd is level-triggered, so the holder still
 * sees it. */
static void lot_timers_cb(void *arg);

bool coro__io_thread_timers_off;

static int handle(struct coro__io *io, const struct epoll_event *evs, int n, bool *kicked,
                  bool holder, int who)
{
    int done = 0, woke = 0;
    /* the test hook: the I/O thread (who 1) leaves the timers to workers */
    bool timers = !(who == 1 && coro__io_thread_timers_off);

    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        uint64_t v;
        if (tag == TAG_EVFD) {
            if (holder) {
                ssize_t r = coro__read(io->evfd, &v, sizeof v);
                (void)r;
            }
            *kicked = true;
        } else if (tag == TAG_TFD) {
            ssize_t r = coro__read(io->timer.fd, &v, sizeof v);
            (void)r;
        } else if (tag & TAG_SRC) {
            struct source *src = &io->src[tag & (MAX_SOURCES - 1)];
            if (timers || src->cb != lot_timers_cb)
                src->cb(src->arg);
            done++;
        } else {
            woke += fd_event(io, tag, evs[i].events);
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
    return done + (timers ? expire(io) : 0);
}

static int ms_of(int64_t timeout_ns)
{
    if (timeout_ns < 0)
        return -1;
    int64_t ms = (timeout_ns + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* wait in epoll up to timeout_ns and handle what is ready; the caller
 * holds the token */
static int poll_round(struct coro__io *io, int64_t timeout_ns, bool *kicked)
{
    struct epoll_event evs[CORO__IO_EVENTS];

    *kicked = false;
    coro__trace_poll(io->s, -1);
    int n = coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, ms_of(timeout_ns));
    coro__trace_poll(io->s, n);
    return handle(io, evs, n > 0 ? n : 0, kicked, true, io->threaded ? 1 : 0);
}

/* ---- the I/O thread ----------------------------------------------------------------------- */


/* the I/O thread holds the token: wait and handle until a worker asks
 * for it (and an idle worker was woken to take it) or the thread stops */
static void iot_drive(struct coro__io *io)
{
    bool kicked;
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
            __atomic_store_n(&io->driver, DRV_FREE, __ATOMIC_RELEASE);
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
             * io_main takes it again within two looks. */
            coro__io_handoff(io->s);
            return;
        }
        /* after a round that did something, look again without sleeping
         * for up to CORO__IO_SPIN rounds (giving the CPU away in between): the
         * next event usually comes within microseconds under load */
        int did = poll_round(io, idle < CORO__IO_SPIN ? 0 : -1, &kicked);
        if (did)
            idle = 0;
        else if (++idle < CORO__IO_SPIN)
            sched_yield();
    }
    /* release: what we handled before the next taker's CAS of the token */
    __atomic_store_n(&io->driver, DRV_FREE, __ATOMIC_RELEASE);
}

/* a worker let go of the token: if the I/O thread sleeps in deep standby
 * (io_main), it keeps watch again */
static void wake_standby(struct coro__io *io)
{
    /* seq_cst: the other half of io_main's Dekker - the caller stored
     * the token (seq_cst) before this load */
    if (!__atomic_load_n(&io->iot_asleep, __ATOMIC_SEQ_CST))
        return;
    /* relaxed exchange: one waker makes the system call */
    if (!__atomic_exchange_n(&io->iot_asleep, 0, __ATOMIC_RELAXED))
        return;
    /* release: pairs with io_main's acquire load of the word */
    __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
    coro__futex_wake(&io->standby, 1);
}

static void *io_main(void *arg)
{
    struct coro__io *io = arg;
    /* relaxed: generation counters, compared for change only; what a
     * look handled is ordered by the poll token, not by these */
    uint32_t seen_gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
    uint32_t seen_look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
    uint32_t held_gen = seen_gen, held_looks = 0;

    pthread_setname_np(pthread_self(), "coro-io");
    coro__trace_io_thread(io->s);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);     /* timers fire on time */
    while (!__atomic_load_n(&io->stop, __ATOMIC_ACQUIRE)) {
        uint32_t gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
        uint32_t drv = __atomic_load_n(&io->driver, __ATOMIC_RELAXED);
        int64_t now = coro__now();
        int64_t next = __atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED);
        uint32_t free_ = DRV_FREE;
        /* relaxed: a hint, as poll_gen */
        uint32_t look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
        /* the token is free and no worker took it or looked since our last
         * look (or a timer is due): every worker is busy, so we wait in
         * epoll */
        if (drv == DRV_FREE && ((gen == seen_gen && look == seen_look) || next <= now) &&
            /* seq_cst: the token word is RMWed by every taker */
            __atomic_compare_exchange_n(&io->driver, &free_, DRV_IOT, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED)) {
            iot_drive(io);
            seen_gen = __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
            seen_look = __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED);
            now = coro__now();
            drv = DRV_IOT;
        } else {
            seen_gen = gen;
            seen_look = look;
        }
        /* acquire: pairs with the release increments of timer_add / destroy
         * / wake_standby */
        uint32_t sb = __atomic_load_n(&io->standby, __ATOMIC_ACQUIRE);
        /* DEEP STANDBY.  A worker holds the token and has held it, the
         * same hold (poll_gen moves at every take), for CORO__IO_DEEP_LOOKS looks:
         * it is blocked in epoll_wait, timerfd included, and sees every
         * event itself.  Nothing is left for us to watch until it lets go,
         * so we sleep without a timeout instead of looking 1000 times a
         * second (an idle process stays idle).  Dekker with wake_standby:
         * we store iot_asleep then read the token; the worker stores the
         * token then reads iot_asleep (both seq_cst).  Either we see the
         * token gone and keep watch, or the worker sees us asleep and
         * wakes us (the standby bump makes our futex_wait return). */
        if (drv != DRV_FREE && drv != DRV_IOT && gen == held_gen) {
            if (++held_looks >= CORO__IO_DEEP_LOOKS) {
                __atomic_store_n(&io->iot_asleep, 1, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(&io->driver, __ATOMIC_SEQ_CST) == drv &&
                    __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) == gen)
                    /* bounded (CORO__IO_DEEP_STANDBY_NS): a safety net, not part
                     * of the argument above - 20 looks a second at most
                     * while idle, instead of 1,000 */
                    coro__futex_wait(&io->standby, sb, coro__now() + CORO__IO_DEEP_STANDBY_NS);
                __atomic_store_n(&io->iot_asleep, 0, __ATOMIC_RELAXED);
                /* the safety net's timeout, the same hold going on: back
                 * to deep sleep at the next look, not after CORO__IO_DEEP_LOOKS
                 * more short looks (an idle process woke twice as often
                 * with them); a new hold or a free
                 * token resets the count below */
                held_looks = CORO__IO_DEEP_LOOKS - 1;
                continue;
            }
        } else {
            held_gen = gen;
            held_looks = 0;
        }
        int64_t until = now + CORO__IO_STANDBY_NS;
        if (next > now && next < until)
            until = next;   /* due ones: the token holder has the timerfd */
        coro__futex_wait(&io->standby, sb, until);
    }
    return NULL;
}

/* ---- the hooks ---------------------------------------------------------------------------------------- */

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

uint32_t coro__io_activity(struct coro__io *io)
{
    return __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED);
}

int coro__io_park(struct coro__io *io, int idx, const uint32_t *epoch_word, uint32_t epoch,
                  uint32_t activity, void (*awake)(void *), void *arg)
{
    struct epoll_event evs[CORO__IO_EVENTS];
    uint32_t me = (uint32_t)idx + 1, free_ = DRV_FREE;
    bool kicked;

    /* relaxed: a hint.  Another worker handled I/O while we looked for
     * work: it will wait in epoll when it runs out, and its jobs' readiness
     * is best left to it (each event we took would move a conversation
     * between workers and wake us for nothing) */
    if (__atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) != activity)
        return -EAGAIN;
    uint32_t cur = __atomic_load_n(&io->driver, __ATOMIC_RELAXED);
    if (cur == DRV_IOT) {
        /* relaxed: a hint iot_drive reads at its next round; the kick
         * (one per ask: the first to set the bit) ends an epoll_wait it
         * may block in meanwhile */
        if (!(__atomic_fetch_or(&io->want, WANT_PARK, __ATOMIC_RELAXED) & WANT_PARK))
            kick(io);
        return -EAGAIN;
    }
    /* seq_cst: Dekker against coro__io_wake_poller - we store the token,
     * then read the epoch; the waker bumps the epoch, then reads the token */
    if (cur != DRV_FREE || !__atomic_compare_exchange_n(&io->driver, &free_, me, false,
                                                         __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return -EAGAIN;
    __atomic_add_fetch(&io->poll_gen, 1, __ATOMIC_RELAXED);
    int n = 0;
    if (__atomic_load_n(epoch_word, __ATOMIC_SEQ_CST) == epoch)
        n = coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, -1);
    /* the kick was for us: take it off the eventfd while we still hold
     * the token.  Read after letting go (as handle() did), it could take
     * the kick of the next holder, written for it in between, which then
     * slept in epoll_wait for good - a worker never woke for destroy
     * (stress/sched_shutdown, 1 run in about 100) */
    take_kick(io, evs, n);
    /* seq_cst: orders our handling so far before the next taker
     * (release), and is the store half of wake_standby's Dekker */
    __atomic_store_n(&io->driver, DRV_FREE, __ATOMIC_SEQ_CST);
    wake_standby(io);
    awake(arg);
    handle(io, evs, n > 0 ? n : 0, &kicked, false, 0);   /* not the holder now */
    return 0;
}

int coro__io_poll_now(struct coro__io *io)
{
    struct epoll_event evs[CORO__IO_POLL_NOW_EVENTS];
    bool kicked;

    /* relaxed: a hint; nothing waits means nothing to find */
    if (!coro__io_pending(io))
        return 0;
    /* a worker goes idle while the I/O thread holds the token: ask for it
     * (no kick: iot_drive sees the flag at its next round).  Else a busy
     * I/O thread polling between sched_yields takes every event first, and
     * a worker that always finds the woken job during its own idle spins
     * never parks, so never asks: the I/O thread would relay a whole
     * conversation (relaxed: a hint, as in coro__io_park) */
    if (__atomic_load_n(&io->driver, __ATOMIC_RELAXED) == DRV_IOT &&
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
     * only delays a hint (iot_drive's hand-back, io_main's deep standby,
     * coro__io_park's choice of futex or epoll), never a wake-up */
    __atomic_store_n(&io->poll_gen, __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return handle(io, evs, n, &kicked, false, 0);
}

/* BUSY WORKERS LOOK TOO.  A worker that always has a job ready never
 * parks, so it never waits in epoll, and its idle look (coro__io_poll_now)
 * never runs.  Between two steps, at the points sched/worker.c chooses
 * (every CORO__IO_POLL_STEPS steps, and at a yield at least
 * CORO__IO_POLL_YIELD_NS after its last look: worker_main, BUSY LOOKS),
 * it calls this: it takes the poll token if it is free, looks without
 * blocking, lets go, and handles what it found as an idle worker would.
 * The jobs that readiness wakes go to this worker's own queues (or their
 * class's: coro__wake), ahead of the job that yielded, and any idle worker
 * their masks allow is woken for them by the push as usual.
 *   The token, not a look beside its holder: a worker blocked in epoll
 * (coro__io_park) already sees every event, and a second look would only
 * take its jobs' readiness to this busy worker.  When the I/O thread holds
 * it, we ask for it (WANT_BUSY, with no kick: the I/O thread sees every
 * event meanwhile): it lets go after its next round, wakes no idle worker
 * for it, and stays in standby while workers keep
 * looking (look_gen moves at every look, poll_gen when a look found
 * something), so the I/O thread is the guarantee only while no worker
 * looks - every job in a long step.
 *   A kick seen while we hold the token is the holder's (coro__io_park:
 * only the holder reads the eventfd), read before we let go.  Returns
 * how many events woke something. */
int coro__io_poll_busy(struct coro__io *io, int idx)
{
    struct epoll_event evs[CORO__IO_EVENTS];
    uint32_t me = (uint32_t)idx + 1, free_ = DRV_FREE;
    bool kicked;

    /* relaxed: a hint; the CAS below decides */
    uint32_t cur = __atomic_load_n(&io->driver, __ATOMIC_RELAXED);
    if (cur == DRV_IOT) {
        /* relaxed: iot_drive reads the flag at its next round.  No kick:
         * while it blocks in epoll_wait the I/O thread sees every event,
         * so nothing waits for it to let go; it does after the round that
         * handles the next event (one batch relayed), without the eventfd
         * write and the wake-up of a thread on a busy CPU that a kick
         * would cost at every ask */
        if (!(__atomic_load_n(&io->want, __ATOMIC_RELAXED) & WANT_BUSY))
            __atomic_fetch_or(&io->want, WANT_BUSY, __ATOMIC_RELAXED);
        return 0;
    }
    /* seq_cst: the token word is RMWed by every taker, and its store by
     * each holder is half of a Dekker (coro__io_wake_poller, wake_standby):
     * kept the same here */
    if (cur != DRV_FREE || !__atomic_compare_exchange_n(&io->driver, &free_, me, false,
                                                         __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return 0;
    /* relaxed: a hint for the I/O thread (io_main: a worker looked since
     * its last look, so it stays in standby); one writer, the holder.  Not
     * poll_gen, which tells idle workers that another one handles I/O
     * (coro__io_park then parks on the futex): a look that finds nothing
     * says nothing of the kind */
    __atomic_store_n(&io->look_gen, __atomic_load_n(&io->look_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    int n = coro__epoll_wait(io->epfd, evs, CORO__IO_EVENTS, 0);
    take_kick(io, evs, n);
    /* seq_cst: as coro__io_park's release of the token */
    __atomic_store_n(&io->driver, DRV_FREE, __ATOMIC_SEQ_CST);
    wake_standby(io);
    if (n <= 0)
        return 0;
    /* relaxed: workers handle I/O, as coro__io_poll_now says it (one
     * writer: we held the token until just now; a racing poll_now's store
     * only hides a bump, never a wake-up) */
    __atomic_store_n(&io->poll_gen, __atomic_load_n(&io->poll_gen, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return handle(io, evs, n, &kicked, false, 0);
}

bool coro__io_wake_poller(struct coro__io *io, int idx)
{
    /* seq_cst: the other half of coro__io_park's Dekker (the caller bumped
     * the epoch with a seq_cst RMW first) */
    if (__atomic_load_n(&io->driver, __ATOMIC_SEQ_CST) != (uint32_t)idx + 1)
        return false;
    kick(io);
    return true;
}

int coro__io_add_source(struct coro__io *io, int fd, void (*cb)(void *arg), void *arg)
{
    uint32_t i = __atomic_load_n(&io->nsrc, __ATOMIC_RELAXED);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_SRC | i };

    if (i >= MAX_SOURCES)
        return -ENOSPC;
    io->src[i] = (struct source){ fd, cb, arg };
    /* release: the entry before the registration that can report it */
    __atomic_store_n(&io->nsrc, i + 1, __ATOMIC_RELEASE);
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    return 0;
}

int coro__io_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    CORO__IO_KEEP_ERRNO();
    struct coro__io *io = coro__sched_io(s);
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    int rc;

    if (ops->kind == CORO__IOK_SLEEP) {
        /* bounded by the job's deadline: timer_fire tells the two apart */
        struct coro__tnode t = { .deadline = coro__bound_deadline(job, aw->timeout), .p = job,
                                 .kind = CORO__TK_SLEEP };
        if ((rc = timer_add(io, &t, NULL)) < 0) {
            *res = rc;
            return CORO__ARM_READY;
        }
        return CORO__ARM_PENDING;
    }
    if (job->flags & CORO__FL_REARM)
        /* woken by readiness to try again (fd_resume): prepared already */
        job->flags &= (uint8_t)~CORO__FL_REARM;
    else if (ops->prepare && (rc = ops->prepare(aw)) < 0) {
        *res = rc;      /* nothing acquired: no fini */
        return CORO__ARM_READY;
    }
    if ((rc = fd_wait(io, job, aw, res)) == CORO__ARM_READY)
        fd_done(io, aw, *res);
    return rc;
}

/* a busy worker's look at the timers (sched/worker.c DUE TIMERS): fire
 * what is due of both heaps here, on the worker.  Not the timerfds: each
 * stays armed, and its holder, woken for what was fired here, finds less
 * or nothing due and arms it for what is next (a worker that reprogrammed
 * it would race that holder with a system call per look); and not
 * waiting for a heap's lock: held, its holder is adding or firing, and
 * the next look comes soon */
static int expire_due(struct coro__io *io)
{
    struct coro__tnode t;
    int n = 0;
    int64_t now = coro__now();

    for (;;) {
        if (pthread_mutex_trylock(&io->hlock) != 0)
            return n;
        int64_t d = coro__heap_next(&io->heap);
        if (d > now) {
            /* relaxed: the hint, as in tfd_update; next_deadline stays as
             * it is (no later than the top), so that the holder's
             * expire() runs */
            __atomic_store_n(&io->s->timers_next[0], d, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&io->hlock);
            return n;
        }
        heap_pop(io, &t);
        pthread_mutex_unlock(&io->hlock);
        timer_fire(io, &t, 0);
        n++;
    }
}

static int io_fire_due(struct coro__io *io)
{
    return expire_due(io) + coro__lot_timers_expire(io->s, true);
}

static void lot_timers_cb(void *arg)
{
    coro__lot_timers_fire(arg);     /* reads the lot's timerfd */
}

int coro__io_create(coro_sched_t *s, struct coro__io **out)
{
    struct coro__io *io = coro__alloc_aligned(s, sizeof *io);     /* aligned members */
    struct epoll_event ev = { .events = EPOLLIN };
    int rc;

    *out = NULL;
    if (!io)
        return -ENOMEM;
    memset(io, 0, sizeof *io);
    io->s = s;
    io->evfd = -1;
    coro__tfd_init(&io->timer, -1);
    io->next_deadline = INT64_MAX;
    s->timers_next[0] = INT64_MAX;     /* before any worker runs */
    coro__heap_init(&io->heap, s, 0);   /* no room yet: cannot fail */
    pthread_mutex_init(&io->hlock, NULL);
    io->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (io->epfd < 0)
        goto fail_errno;
    io->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (io->evfd < 0)
        goto fail_errno;
    io->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (io->timer.fd < 0)
        goto fail_errno;
    ev.data.u64 = TAG_EVFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->evfd, &ev) < 0)
        goto fail_errno;
    ev.data.u64 = TAG_TFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->timer.fd, &ev) < 0)
        goto fail_errno;
    /* the parking lot's timers (lib/wait/lot_timer.c) have a timerfd of their
     * own: whoever handles the I/O events fires them */
    if ((rc = coro__io_add_source(io, coro__lot_timer_fd(s), lot_timers_cb, s)) < 0)
        goto fail;
    if (coro_sched_workers(s) > 0) {
        /* the I/O thread takes no signals: they go to the threads that
         * want them, or stay pending for coro_signal's signalfd */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        io->threaded = true;    /* before the thread reads it */
        rc = -pthread_create(&io->thread, NULL, io_main, io);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc < 0) {
            io->threaded = false;
            goto fail;
        }
    }
    *out = io;
    return 0;
fail_errno:
    rc = -errno;
fail:
    coro__io_destroy(io);
    return rc;
}

void coro__io_destroy(struct coro__io *io)
{
    if (!io)
        return;
    if (io->threaded) {
        /* release: what the caller did before the stop, for io_main's acquire */
        __atomic_store_n(&io->stop, 1, __ATOMIC_RELEASE);
        kick(io);
        /* release: wakes io_main, which acquires the word and then reads stop */
        __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
        coro__futex_wake(&io->standby, 1);
        pthread_join(io->thread, NULL);
        io->threaded = false;
    }
    /* every job is done: nothing remains (a frame an entry names may be
     * gone: the array goes without a look at them) */
    coro__heap_fini(&io->heap);
    for (uint32_t c = 0; c < NCHUNKS; c++)
        if (io->chunks[c])
            coro__free(io->s, io->chunks[c], CHUNK * sizeof(struct fdent));
    pthread_mutex_destroy(&io->hlock);
    if (io->timer.fd >= 0)
        close(io->timer.fd);
    coro__tfd_fini(&io->timer);
    if (io->evfd >= 0)
        close(io->evfd);
    if (io->epfd >= 0)
        close(io->epfd);
    coro__free_aligned(io->s, io, sizeof *io);
}

void coro__io_cancel_all(struct coro__io *io)
{
    /* s->cancelling is already set (seq_cst, by this thread) */
    if (!__atomic_exchange_n(&io->swept, 1, __ATOMIC_ACQ_REL))
        sweep(io);
    kick(io);
}

/* coro_cancel: end every fd wait and sleep of a job that carries
 * CORO__F_CANCEL (set, seq_cst, before the call), on the calling thread.
 * A wait parking concurrently checks the flag under the lock this walk
 * takes (the entry's, or hlock for sleeps): it sees the flag or is found. */
void coro__io_cancel_jobs(struct coro__io *io)
{
    struct coro__tnode t;

    for (bool again = true; again;) {
        again = false;
        pthread_mutex_lock(&io->hlock);
        for (uint32_t k = 0; k < io->heap.cap; k++) {
            const struct coro__tnode *e = coro__heap_rec(&io->heap, k);
            if (e->p && e->kind == CORO__IOK_SLEEP && coro__job_cancelled(e->p)) {
                heap_del(io, k, &t);
                again = true;       /* the heap may have moved: look again */
                break;
            }
        }
        bool sync = again && tfd_update(io, 0);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        if (again)
            timer_fire(io, &t, -ECANCELED);
    }
    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fdent *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fdent *e = &ch[i];
            coro_t *job[2] = { NULL, NULL };
            ent_lock(e);
            for (int dir = 0; dir < 2; dir++)
                if (e->w[dir] && !is_proxy(e->w[dir]) && coro__job_cancelled(e->w[dir]))
                    job[dir] = slot_take(io, e, dir);
            ent_unlock(e);
            for (int dir = 0; dir < 2; dir++)
                if (job[dir])
                    finish(io, job[dir], -ECANCELED);
        }
    }
}

/* coro_cancel of one suspended job (lib/wait/lot.c CANCEL ONE has the
 * argument: its awaitable is ours to read and stays put): an fd wait
 * takes its entry's lock and the job off its slot, as the sweep above
 * does for every entry; a wait parking concurrently takes the same lock
 * and checks the flag under it.  A signal or child wait waits on the fd
 * its arm makes (prepare), stored in the awaitable with a seq_cst store
 * before the arm's seq_cst load of the flag (fd_wait); our seq_cst RMW of
 * the flag comes before our seq_cst load of that fd, so one of the two
 * sees the other: no fd yet means the arm refuses, an fd means the entry
 * lock decides as above.  A sleep's timer is found through the handle its
 * awaitable keeps (lib/wait/heap.c), O(1) amortized to take out.  A call for the
 * blocking pool is taken off its queue.  False for an awaitable that is not ours: the caller sweeps. */
bool coro__io_cancel_job(struct coro__io *io, coro_t *job)
{
    coro_await_t *aw = &job->top->aw;

    if (!aw->ops)
        return false;
    if (aw->ops->arm == coro__blocking_arm) {
        coro__blocking_cancel_one(io->s, job);
        return true;
    }
    if (aw->ops->arm != coro__io_arm)
        return false;
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->kind == CORO__IOK_SLEEP) {
        struct coro__tnode t;
        bool took = false;
        pthread_mutex_lock(&io->hlock);
        /* the handle its awaitable keeps (lib/wait/heap.c), checked against
         * the entry: a fire that came first took the entry and gave the
         * handle back, and the job, woken, may be writing a new awaitable
         * there - a handle that names another entry, or none, is then no
         * timer of ours */
        uint32_t hd = (uint32_t)(sleep_slot(job)->i - 1);
        const struct coro__tnode *e = coro__heap_get(&io->heap, hd, job);
        io->sleep_cancel_looks++;
        if (e && e->kind == CORO__TK_SLEEP) {
            heap_del(io, hd, &t);
            took = true;
        }
        bool sync = took && tfd_update(io, 0);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        if (took)
            timer_fire(io, &t, -ECANCELED);
        return true;
    }
    if (ops->kind != CORO__IOK_FD)
        return false;
    int dir = ops->dir;
    /* seq_cst: the fd prepare made, against its store (above) */
    intptr_t fd = ops->prepare ? __atomic_load_n(&aw->arg[0].i, __ATOMIC_SEQ_CST)
                               : aw->arg[0].i;
    if (fd < 0)
        return true;    /* not made yet: the arm sees the flag */
    struct fdent *e = ent_get(io, (int)fd, true);
    if (!e)
        return (uint64_t)fd >= MAX_FDS;     /* no entry can hold it */
    coro_t *w = NULL;
    ent_lock(e);
    if (e->w[dir] == job)
        w = slot_take(io, e, dir);
    ent_unlock(e);
    if (w)
        finish(io, w, -ECANCELED);
    return true;
}

void coro__io_kick(struct coro__io *io)
{
    kick(io);
}

bool coro__io_pending(struct coro__io *io)
{
    return __atomic_load_n(&io->npending, __ATOMIC_RELAXED) != 0 ||
           coro__lot_timers_pending(io->s);
}

bool coro__io_fd_waiting(struct coro__io *io)
{
    /* with no I/O thread (no workers: the single-threaded driver asks),
     * nobody else fires the timers: they count too */
    if (coro_sched_workers(io->s) == 0)
        return coro__io_pending(io);
    /* a hint (BUSY LOOKS in sched/worker.c); a wait begun on the asking
     * worker is its own store, seen in program order */
    return coro__io_fd_waiters(io) != 0;
}

uint32_t coro__io_fd_waiters(struct coro__io *io)
{
    /* relaxed: a count, for the virtual driver's "anything outside
     * waiting" question; the waiters themselves are under their fd
     * entries' locks */
    return __atomic_load_n(&io->nfd, __ATOMIC_RELAXED);
}

int64_t coro__io_next_timer(struct coro__io *io)
{
    pthread_mutex_lock(&io->hlock);
    int64_t d = coro__heap_next(&io->heap);
    pthread_mutex_unlock(&io->hlock);
    return d;
}

uint64_t coro__io_woken_by(struct coro__io *io, bool io_thread)
{
    return __atomic_load_n(&io->n_woke[io_thread], __ATOMIC_RELAXED);
}

uint64_t coro__io_sleep_cancel_looks(struct coro__io *io)
{
    pthread_mutex_lock(&io->hlock);
    uint64_t n = io->sleep_cancel_looks;
    pthread_mutex_unlock(&io->hlock);
    return n;
}

int coro__io_poll(struct coro__io *io, int64_t timeout_ns)
{
    bool kicked;

    if (io->threaded)
        return -EINVAL;
    if (!coro__io_pending(io))
        return -EAGAIN;     /* nothing waits on I/O: never block */
    /* the driving thread is the only poller: the token is free */
    int n = poll_round(io, timeout_ns, &kicked);
    return n;
}


int coro_close(coro_sched_t *s, int fd)
{
    CORO__IO_KEEP_ERRNO();
    struct fdent *e;

    if (fd < 0)
        return -EBADF;
    if (!s)
        s = coro_sched_current();
    struct coro__io *io = s ? coro__sched_io(s) : NULL;
    if (!io || !(e = ent_get(io, fd, false)))
        return close(fd) == 0 ? 0 : -errno;
    return ent_reset(io, e, fd, true);
}

/* ---- coro_sched_dump (lib/rt/diag.c) ------------------------------------------------- */

/* the jobs waiting on fds (under each entry's lock; their timers under
 * hlock, taken after the entry's as fd_wait does) and the sleepers (under
 * hlock): none of them can be woken while the lock is held */
int coro__io_dump(struct coro__io *io, struct coro__dump *d)
{
    static const char *const dirs[2] = { "readable", "writable" };
    int64_t now = coro__now();
    int n = 0;

    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fdent *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fdent *e = &ch[i];
            int fd = (int)(c * CHUNK + i);
            ent_lock(e);
            for (int dir = 0; dir < 2; dir++) {
                coro_t *job = e->w[dir];
                if (!job)
                    continue;
                const char *op = job->top->aw.ops ? job->top->aw.ops->name : "?";
                if (e->timed[dir]) {
                    pthread_mutex_lock(&io->hlock);
                    int32_t h = e->hidx[dir];
                    int64_t dl = h != NO_TIMER ? coro__heap_rec(&io->heap, (uint32_t)h)->deadline : now;
                    pthread_mutex_unlock(&io->hlock);
                    coro__dump_job(d, job, "fd %d %s (%s), timer %.3f ms left", fd, dirs[dir],
                                   op, (double)(dl - now) / 1e6);
                } else {
                    coro__dump_job(d, job, "fd %d %s (%s)", fd, dirs[dir], op);
                }
                n++;
            }
            ent_unlock(e);
        }
    }
    pthread_mutex_lock(&io->hlock);
    for (uint32_t k = 0; k < io->heap.cap; k++) {
        const struct coro__tnode *t = coro__heap_rec(&io->heap, k);
        if (!t->p || t->kind != CORO__IOK_SLEEP)
            continue;
        coro__dump_job(d, t->p, "timer (sleep), %.3f ms left", (double)(t->deadline - now) / 1e6);
        n++;
    }
    pthread_mutex_unlock(&io->hlock);
    return n;
}

/* the event driver of the scheduling layer (sched/sched.h struct
 * coro__driver): the workers reach these through s->drv */
const struct coro__driver coro__io_driver = {
    .poll = coro__io_poll,
    .kick = coro__io_kick,
    .pending = coro__io_pending,
    .fd_waiting = coro__io_fd_waiting,
    .park = coro__io_park,
    .activity = coro__io_activity,
    .poll_now = coro__io_poll_now,
    .poll_busy = coro__io_poll_busy,
    .wake_poller = coro__io_wake_poller,
    .fire_due = io_fire_due,
};
