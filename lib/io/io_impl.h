/* SPDX-License-Identifier: MIT */
/* private: the I/O context's layout and the helpers its files share
 * (lib/io/{context,epoll,fd_wait,fd_select,timers,cancel,dump}.c); never
 * installed.  The helpers on every wait and wake-up are static inline
 * here, so that the files they serve call none of them. */
#ifndef COROKIT_LIB_IO_IO_IMPL_H
#define COROKIT_LIB_IO_IO_IMPL_H

#include <sys/epoll.h>

#include "base/sys.h"
#include "io/io.h"

#define TAG_EVFD (1ull << 62)
#define TAG_TFD (1ull << 61)
#define TAG_SRC (1ull << 60)    /* | index: an extra source (coro__io_add_source) */
#define NO_TIMER 0u      /* an fd slot's timer_handle: no timer */

#define CHUNK_BITS 8
#define CHUNK (1u << CHUNK_BITS)
#define MAX_FDS (1u << 22)
#define NCHUNKS (MAX_FDS / CHUNK)

#define TOKEN_FREE 0u
#define TOKEN_IOT 0xffffffffu
/* | worker index + 1: held for a busy look (coro__io_poll_busy), which
 * never blocks: another busy look goes beside it, where it leaves a
 * worker's park in epoll_wait alone */
#define TOKEN_LOOK 0x80000000u
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

struct fd_entry {
    uint32_t lock;          /* spinlock: everything below */
    uint32_t gen;           /* of the registration, in the epoll tag */
    uint8_t reg;            /* in the epoll set under gen */
    uint8_t dirs;           /* RD_BIT | WR_BIT: the directions registered */
    uint8_t timed[2];       /* the waiter has a timer */
    uint32_t wait_seq[2];       /* numbers the waits of each slot */
    coro_t *w[2];           /* the waiting reader / writer */
    uint32_t timer_handle[2];       /* their timers' slots (lib/wait/wait.h: home and
                               handle + 1; NO_TIMER none), relaxed atomics; may
                               name a timer that left (STALE HANDLES in
                               lib/io/timers.c) */
    uint64_t readiness;           /* the readiness word (CORO__RDY_*, READINESS in
                               lib/io/fd_wait.c):
                               atomic; changed under the lock, except the
                               lock-free clears of coro__readiness_clear */
};

struct source {
    int fd;
    void (*cb)(void *arg, struct coro__woken *b);   /* b: coro__io_add_source */
    void *arg;
};

struct coro__io {
    coro_sched_t *s;
    int epfd, evfd, tfd;
    bool threaded;
    pthread_t thread;

    /* shared, hot */
    uint32_t poll_token __attribute__((aligned(CORO__CACHELINE)));  /* the poll token */
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
    uint32_t nfd;           /* fd waiters alone (THE DRIVER'S HINTS, sched/sched.h) */
    uint64_t n_woke[2] __attribute__((aligned(CORO__CACHELINE)));  /* fd waiters taken by an
                               event: [0] a worker or the single-threaded driver,
                               [1] the I/O thread */

    /* the fd table: chunks created once (CAS), freed by destroy */
    struct fd_entry *chunks[NCHUNKS] __attribute__((aligned(CORO__CACHELINE)));

    /* the timers */
    pthread_mutex_t hlock;
    struct coro__heap heap;
    struct coro__tfd timer; /* the timerfd: decided under hlock, programmed after it */
    uint64_t sleep_cancel_looks;    /* atomic: a count for tests (coro__io_sleep_cancel_looks) */

    struct source src[MAX_SOURCES];
    uint32_t nsrc;          /* atomic: sources published with release */
};

static inline void kick(struct coro__io *io)
{
    uint64_t one = 1;
    ssize_t r = coro__write(io->evfd, &one, sizeof one);
    (void)r;    /* EAGAIN: the counter is saturated, the poller is awake anyway */
}

/* two per wait and wake-up: the uncontended take inline (base/base.h) */
static inline void ent_lock(struct fd_entry *e)
{
    coro__spin_lock(&e->lock);
}

static inline void ent_unlock(struct fd_entry *e)
{
    coro__spin_unlock(&e->lock);
}

/* fd's chunk, created (CAS) on first use; NULL: -ENOMEM (fd_wait.c) */
__attribute__((noinline, cold))
CORO__HIDDEN struct fd_entry *coro__io_chunk_new(struct coro__io *io, struct fd_entry **slot);

/* fd's entry; NULL when its chunk does not exist (create: -ENOMEM) or fd
 * is out of range.  Inline, the chunk's creation out of line: it is on
 * every wait, wake and readiness look (about ten per I/O round trip),
 * where an out-of-line call with the creation path costs several times
 * the instructions of the inline look */
static inline struct fd_entry *ent_get(struct coro__io *io, int fd, bool create)
{
    if (CORO__UNLIKELY((uint32_t)fd >= MAX_FDS))     /* negative ones too */
        return NULL;
    struct fd_entry **slot = &io->chunks[(uint32_t)fd >> CHUNK_BITS];
    /* acquire: the chunk's initialised entries, published by coro__io_chunk_new's CAS */
    struct fd_entry *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (CORO__UNLIKELY(!c)) {
        if (!create || !(c = coro__io_chunk_new(io, slot)))
            return NULL;
    }
    return &c[(uint32_t)fd & (CHUNK - 1)];
}

/* ---- readiness words (READINESS in lib/io/fd_wait.c) ----------------------------------- */

/* a new readiness word: off what `clear` names, on what `set` names, and one
 * more tick (an event, or a registration: older snapshots no longer clear) */
static inline void readiness_update(struct fd_entry *e, uint64_t clear, uint64_t set)
{
    /* seq_cst: snapshots and clears are ordered around system calls; the
     * tick must move before anything that follows the event or the
     * registration (see READINESS) */
    uint64_t cur = __atomic_load_n(&e->readiness, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(&e->readiness, &cur, ((cur & ~clear) | set) + CORO__RDY_TICK,
                                        false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

static inline uint64_t readiness_load(struct fd_entry *e)
{
    return coro__readiness_load(&e->readiness);
}

/* under hlock: where a sleep keeps its timer's handle (lib/wait/heap.c),
 * written at the push: its awaitable stays put while the job sleeps, since
 * the heap alone wakes it */
static inline coro_arg_t *sleep_slot(coro_t *job)
{
    return &job->top->aw.arg[CORO__SLEEP_SLOT];
}

static inline void pending_add(struct coro__io *io, int d)
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
 * the busy workers' question (coro__driver_waiting) */
static inline void waiters_add(struct coro__io *io, int d)
{
    /* relaxed: a hint, as npending */
    __atomic_add_fetch(&io->nfd, (uint32_t)d, __ATOMIC_RELAXED);
    pending_add(io, d);
}

/* ---- completing ---------------------------------------------------------------------- */

/* every completion of an fd awaitable, whoever completes it: the
 * awaitable's own fd is forgotten then released, a new fd forgotten
 * (fd_wait.c) */
__attribute__((noinline))
CORO__HIDDEN void coro__io_fd_done_(struct coro__io *io, coro_await_t *aw, intptr_t res);

/* inline: read and write have nothing to do here */
static inline void fd_done(struct coro__io *io, coro_await_t *aw, intptr_t res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->fini || (ops->flags & (CORO__IOF_OWNFD | CORO__IOF_NEWFD)))
        coro__io_fd_done_(io, aw, res);
}

/* b: the batch of the worker whose driver call completes it (WOKEN
 * BATCHES, sched/sched.h), NULL on any other thread */
static inline void finish_into(struct coro__io *io, coro_t *job, intptr_t res,
                               struct coro__woken *b)
{
    fd_done(io, &job->top->aw, res);
    job->flags |= CORO__FL_IOWAKE;  /* counted by the worker that runs it */
    coro__wake_into(b, job, res);   /* from here the job is not ours */
}

static inline void finish(struct coro__io *io, coro_t *job, intptr_t res)
{
    finish_into(io, job, res, NULL);
}

/* under e's lock: the timer of job, slot dir's waiter until now, off
 * its heap (timers.c) */
__attribute__((noinline))
CORO__HIDDEN void coro__io_slot_untime(struct coro__io *io, struct fd_entry *e, int dir,
                                       const coro_t *job);

/* under e's lock: take the waiter of dir off the slot (its timer off the heap) */
static inline coro_t *slot_take(struct coro__io *io, struct fd_entry *e, int dir)
{
    coro_t *job = e->w[dir];

    if (!job)
        return NULL;
    e->w[dir] = NULL;
    waiters_add(io, -1);
    if (e->timed[dir])
        coro__io_slot_untime(io, e, dir, job);
    return job;
}

static inline bool is_proxy(const coro_t *w)
{
    return (w->flags & CORO__FL_PROXY) != 0;
}

/* ---- a readiness event (WHO CALLS in lib/io/fd_wait.c; select branches:
 * lib/io/fd_select.c) ----------------------------------------------------------------------
 * Inline: one call per event, from the poller's handle() (lib/io/epoll.c) */

/* under e's lock: the record p, just taken off slot dir, claims its select
 * for res (queued on wakes: the owner is woken after the unlock) */
static inline void proxy_fire(struct fd_entry *e, int dir, coro_t *p, intptr_t res, coro__wakelist_t *wakes)
{
    if (p->fn(p) == 0)
        coro__wakelist_add(wakes, p, res);
    else if (res == 0)
        readiness_update(e, 0, coro__readiness_bit(dir));
}

/* a taken waiter, its fd ready: wake it to make its call itself, on the
 * worker that runs it (WHO CALLS).  Its await is armed again there
 * (coro__io_arm, CORO__FL_REARM): fd_wait finds the bits this event set
 * and tries, or parks it again after an EAGAIN - the waiter's protocol,
 * with no call made here */
static inline void fd_resume(coro_t *job, struct coro__woken *b)
{
    job->flags |= CORO__FL_IOWAKE | CORO__FL_REARM;
    coro__wake_into(b, job, 0);     /* from here the job is not ours */
}

/* returns how many waiters the event took; b: as finish_into's */
static inline int fd_event(struct coro__io *io, uint64_t tag, uint32_t events,
                           struct coro__woken *b)
{
    static const uint32_t want[2] = {
        EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLHUP | EPOLLERR,
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
    struct fd_entry *e = ent_get(io, (int)(uint32_t)tag, false);
    coro_t *job[2] = { NULL, NULL };

    if (!e)
        return 0;
    ent_lock(e);
    if (!e->reg || e->gen != (uint32_t)(tag >> 32)) {
        ent_unlock(e);      /* a forgotten registration */
        return 0;
    }
    coro__wakelist_t wakes;
    int n = 0;
    coro__wakelist_init(&wakes);
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
            readiness_update(e, 0, 0);        /* seen: the tick moves, the bit stays */
            continue;
        }
        /* the bits are set whether or not a waiter is there: the taken
         * waiter's attempt clears them if it gets EAGAIN.  The end
         * states are kept apart from "ready": sticky until an EAGAIN */
        /* EPOLLPRI (asked only for a plain-TCP reader): urgent data, whose
         * mark stops a read short with data behind it - the short-read
         * rule is off for the rest of the registration */
        readiness_update(e, 0, coro__readiness_bit(dir) |
                                   ((events & closes[dir]) ? coro__readiness_bits(dir) : 0) |
                                   (dir == CORO__DIR_RD && (events & EPOLLPRI) ? CORO__RDY_URG : 0));
        if (e->w[dir])
            job[dir] = slot_take(io, e, dir);
        if (job[dir] && is_proxy(job[dir])) {
            proxy_fire(e, dir, job[dir], 0, &wakes);
            job[dir] = NULL;
            n++;
        }
    }
    ent_unlock(e);
    if (wakes.head)        /* a select's record fired: rare */
        coro__wakelist_wake_into(&wakes, b);
    for (int dir = 0; dir < 2; dir++)
        if (job[dir])
            fd_resume(job[dir], b);
    return n + (job[0] != NULL) + (job[1] != NULL);
}

/* ---- across the context's files ------------------------------------------------------ */

/* timers.c (TIMERS there): add a timer (-ECANCELED once cancelling,
 * -ENOMEM); under hlock: the timerfd's wanted time (true: the caller calls
 * coro__tfd_sync after dropping hlock), a timer out of the heap; the fire
 * of a timer taken out; every due timer fired (handle's look) */
CORO__HIDDEN int coro__io_timer_add(struct coro__io *io, struct coro__timer_record *t, uint32_t *timer_handle);
CORO__HIDDEN bool coro__io_tfd_update(struct coro__io *io, int64_t now);
CORO__HIDDEN void coro__io_heap_pop(struct coro__io *io, struct coro__timer_record *out);
CORO__HIDDEN void coro__io_heap_del(struct coro__io *io, uint32_t handle, struct coro__timer_record *out);
CORO__HIDDEN void coro__io_timer_fire(struct coro__io *io, const struct coro__timer_record *t,
                                      intptr_t res, struct coro__woken *b);
CORO__HIDDEN int coro__io_expire(struct coro__io *io, struct coro__woken *b);
/* the driver's fire_due (sched/worker.c DUE TIMERS) */
CORO__HIDDEN int coro__io_fire_due(struct coro__io *io, struct coro__woken *b);
/* worker idx's own timers (the driver's fire_own: lib/wait/wtimer.c) */
CORO__HIDDEN int64_t coro__io_fire_own(struct coro__io *io, int idx, bool try,
                                       struct coro__woken *b);
/* the I/O thread (lib/io/epoll.c): fire the workers' heaps (lib/wait/wtimer.c)
 * whose published deadline is more than late ns past now (stuck in a
 * step).  Returns the earliest published deadline + late over all
 * workers (INT64_MAX none): when to look again; *fired += the jobs woken */
CORO__HIDDEN int64_t coro__wt_expire_stuck(coro_sched_t *s, int64_t now, int64_t late, int *fired);
/* the workers' heaps' sleeps ended with -ECANCELED: every one (all), or
 * the cancelled jobs'; how many */
CORO__HIDDEN int coro__io_cancel_own_sleeps(struct coro__io *io, bool all);
/* under e's lock: the deadline of the timer of slot dir's waiter, now
 * when it just left (coro_sched_dump) */
CORO__HIDDEN int64_t coro__io_timer_deadline(struct coro__io *io, const struct fd_entry *e, int dir,
                                             int64_t now);

/* fd_wait.c: the first wait in a direction registers the fd */
CORO__HIDDEN int coro__io_ent_register(struct coro__io *io, struct fd_entry *e, int fd, uint8_t bit);

/* epoll.c: the I/O thread's body (coro__io_create starts it) */
CORO__HIDDEN void *coro__io_main(void *arg);

/* context.c: the source of the parking lot's timerfd (handle() leaves it
 * to workers under the coro__io_thread_timers_off test hook) */
CORO__HIDDEN void coro__io_parklot_timers_cb(void *arg, struct coro__woken *b);

#endif
