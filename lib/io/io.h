/* SPDX-License-Identifier: MIT */
/* private, layer 3 (I/O): the epoll context and its fd slots, the I/O
 * awaitables, regular files, the blocking pool.  Includes only wait/,
 * sched/ and base/.  See docs/architecture.md. */
#ifndef COROKIT_LIB_IO_IO_H
#define COROKIT_LIB_IO_IO_H

#include <errno.h>

#include "wait/wait.h"
#include "corokit/io.h"

/* errno is the caller's: no I/O entry point (constructor, arm, close)
 * leaves a value of its own there, whatever system calls it made on the
 * way (the errors are results, io.h).  CORO__IO_KEEP_ERRNO() first in a
 * function body puts errno back at every return (clang counts a variable
 * read only by its cleanup as unused: hence the attribute). */
static inline void coro__errno_put(const int *saved)
{
    errno = *saved;
}
#define CORO__IO_KEEP_ERRNO() \
    int coro__errno_saved __attribute__((cleanup(coro__errno_put), unused)) = errno

/* What a registration asks of the I/O context. */
enum {
    CORO__IOK_FD = 0,   /* wait until fd is ready in direction dir, then attempt() */
    CORO__IOK_SLEEP,    /* wake at aw->timeout */
};

#define CORO__DIR_RD 0
#define CORO__DIR_WR 1

/* The ops of every I/O awaitable: the generic part first, so that a
 * const struct coro_await_ops * from aw->ops can be converted back. */
struct coro__io_ops {
    struct coro_await_ops base;
    uint8_t kind;
    uint8_t dir;
    /* CORO__IOF_*: what the fd layer must know about the operation */
    uint8_t flags;
    /* fd ready in dir (or a kept edge, lib/io/fd_wait.c): perform the
     * operation, on whichever thread took the readiness (a worker, the I/O
     * thread, the single-threaded driver).  true = done with *res; false =
     * it would block, keep waiting. */
    bool (*attempt)(coro_await_t *aw, intptr_t *res);
    /* In arm, on the worker, before the job parks: acquire what the wait
     * needs (the signalfd, the pidfd) and put its fd into arg[0].  0, or
     * -errno to complete at once.  May be NULL.  Constructors never own
     * resources, so an await the worker completes without arming (on
     * cancel) leaks nothing. */
    int (*prepare)(coro_await_t *aw);
    /* Release what the awaitable owns (a signalfd, a pidfd); called once
     * on every completion, whatever its result.  May be NULL. */
    void (*fini)(coro_await_t *aw);
};

static inline const struct coro__io_ops *coro__io_ops_of(const coro_await_t *aw)
{
    return (const struct coro__io_ops *)(const void *)aw->ops;
}

/* The arm shared by every I/O awaitable: park the job in its fd's slot or
 * the timer heap, or complete it at once (lib/io/fd_wait.c). */
CORO__HIDDEN int coro__io_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);

/* An awaitable of ops whose deadline is absolute (-1 = none). */
static inline coro_await_t coro__io_await(const struct coro__io_ops *ops, intptr_t a0,
                                          const void *a1, intptr_t a2, int64_t deadline)
{
    coro_await_t a = { .ops = &ops->base };
    a.arg[0].i = a0;
    a.arg[1].cp = a1;
    a.arg[2].i = a2;
    a.timeout = deadline;
    return a;
}

/* a result >= 0 is a new fd (accept): whatever corokit knew of that number
 * belongs to a closed file and is forgotten */
#define CORO__IOF_NEWFD 1u
/* the fd is the awaitable's own (signalfd, pidfd), closed by fini: it is
 * forgotten before fini closes it */
#define CORO__IOF_OWNFD 2u
/* a read of flags 0 into arg[1] of arg[2] bytes (coro_read): after a
 * short result fd_wait clears the word's read bit as the constructor does
 * (coro__readiness_clear_short: plain TCP only) */
#define CORO__IOF_SHORTRD 4u

/* ---- readiness words (lib/io/fd_wait.c's essay, READINESS; docs/io.md) ----------
 * Each fd entry keeps one 64-bit word: the low byte holds flags, the rest
 * counts the epoll events seen for the fd (the tick).  A thread reads the
 * word (coro__readiness_load of coro__io_readiness_word) BEFORE its system
 * call; if the call then gets EAGAIN - the kernel's only "not ready" for
 * every kind of fd - it clears the direction's bits with
 * coro__readiness_clear, which succeeds only if the tick has not moved
 * since the read: an event that came in between keeps the bits set, so it
 * is never lost (tokio's ScheduledIo).  A job about to park (fd_wait),
 * whose own call has just seen EAGAIN, reads the word to choose between
 * parking and trying again.
 * One kind of fd says "not ready" in a second way: a PLAIN TCP socket
 * (SOCK_STREAM, IPPROTO_TCP, no upper-layer protocol: CORO__RDY_TCP, set
 * at its registration for reading) whose read of flags 0 returned fewer
 * bytes than asked has no data left, unless the read stopped at the
 * urgent mark - which EPOLLPRI, registered for such a socket, reports and
 * CORO__RDY_URG keeps - or the end came (the sticky closed bit).  Such a
 * short read clears the read bit alone, under the same tick check
 * (coro__readiness_clear_short), and a read constructor with a timeout
 * other than 0 skips its call while the word says "registered, not ready,
 * not closed, no urgent data" (coro__readiness_skip).  Every other
 * constructor, and every read of any other fd, makes its call whatever
 * the word says; for them a transfer, short or not, clears nothing. */
#define CORO__RDY_RD 1u         /* readable: an event came and no EAGAIN showed it gone */
#define CORO__RDY_WR 2u         /* writable: likewise */
#define CORO__RDY_REG_RD 4u     /* registered for reading: CORO__RDY_RD is meaningful */
#define CORO__RDY_REG_WR 8u     /* registered for writing */
#define CORO__RDY_RD_CLOSED 16u /* EPOLLRDHUP, EPOLLHUP or EPOLLERR: a read ends (0 or
                                   -errno) at once; only an EAGAIN clears it */
#define CORO__RDY_WR_CLOSED 32u /* EPOLLHUP or EPOLLERR: a write fails at once; likewise */
#define CORO__RDY_TCP 64u       /* plain TCP, registered for reading (and for EPOLLPRI):
                                   a short read clears CORO__RDY_RD */
#define CORO__RDY_URG 128u      /* EPOLLPRI came (urgent data): a read may stop short at
                                   the mark with data behind it; sticky until the fd is
                                   forgotten, so no short read clears again */
#define CORO__RDY_TICK 256u     /* one event */

static inline uint64_t coro__readiness_bit(int dir)
{
    return dir == CORO__DIR_RD ? CORO__RDY_RD : CORO__RDY_WR;
}

/* what dir's bits in the word are: ready, and the sticky end state */
static inline uint64_t coro__readiness_bits(int dir)
{
    return dir == CORO__DIR_RD ? CORO__RDY_RD | CORO__RDY_RD_CLOSED
                               : CORO__RDY_WR | CORO__RDY_WR_CLOSED;
}

/* where fd's readiness word lives (NULL: fd has no entry yet, nothing is
 * known), for a snapshot and a clear with one look-up: the constructors'
 * path (lib/io/ops.c).  The entry lives as long as the scheduler. */
CORO__HIDDEN uint64_t *coro__io_readiness_word(struct coro__io *io, int fd);

static inline uint64_t coro__readiness_load(const uint64_t *w)
{
    /* seq_cst: read before the system call it is a snapshot for */
    return w ? __atomic_load_n(w, __ATOMIC_SEQ_CST) : 0;
}

/* an operation in dir started after `snap` (coro__readiness_load) got EAGAIN
 * from the kernel: clear dir's bits (ready and closed) unless an event
 * came since (the tick moved) or snap is of no registration in dir.  Any
 * thread, lock-free. */
static inline void coro__readiness_clear(uint64_t *w, int dir, uint64_t snap)
{
    uint64_t bits = coro__readiness_bits(dir);
    uint64_t reg = dir == CORO__DIR_RD ? CORO__RDY_REG_RD : CORO__RDY_REG_WR;
    uint64_t cur = snap;

    if (!(snap & reg))
        return;     /* no registration: nothing is known, nothing to clear */
    /* seq_cst: the CAS reads the newest word; an event (or registration)
     * whose RMW came first has moved the tick, and we leave the bits */
    while ((cur & bits) && cur / CORO__RDY_TICK == snap / CORO__RDY_TICK &&
           !__atomic_compare_exchange_n(w, &cur, cur & ~bits, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

/* a read of flags 0 started after `snap` returned 0 < n < the length it
 * asked for: on a plain-TCP fd registered for reading, with no urgent data
 * seen and no end state, the kernel's queue was empty when the read let
 * go of the socket (what came after raised an edge, counted after snap):
 * clear the read bit - never RD_CLOSED - unless the tick moved.  On any
 * other fd, or with urgent data or an end seen, nothing.  Any thread,
 * lock-free. */
static inline void coro__readiness_clear_short(uint64_t *w, uint64_t snap)
{
    const uint64_t need = CORO__RDY_REG_RD | CORO__RDY_TCP;
    uint64_t cur = snap;

    if ((snap & (need | CORO__RDY_URG | CORO__RDY_RD_CLOSED)) != need)
        return;
    /* seq_cst: as coro__readiness_clear's (an event whose RMW came first
     * moved the tick: the bit stays); a CAS that fails on an unchanged
     * tick (a concurrent clear) reads the newest word and tries again */
    while ((cur & CORO__RDY_RD) && !(cur & (CORO__RDY_URG | CORO__RDY_RD_CLOSED)) &&
           cur / CORO__RDY_TICK == snap / CORO__RDY_TICK &&
           !__atomic_compare_exchange_n(w, &cur, cur & ~(uint64_t)CORO__RDY_RD, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

/* the word after an operation in dir, started after `snap`, returned n
 * (-EAGAIN: not ready) of the len bytes it asked for; shortrd: it was a
 * read of flags 0 (coro_read), whose short result may show a plain-TCP
 * queue empty.  The one rule for the constructor's call (lib/io/ops.c
 * rw_now) and the woken job's try (lib/io/fd_wait.c) alike. */
static inline void coro__readiness_after(uint64_t *w, int dir, uint64_t snap, intptr_t n,
                                         size_t len, bool shortrd)
{
    if (n == -EAGAIN)
        coro__readiness_clear(w, dir, snap);
    else if (shortrd && n > 0 && (size_t)n < len)
        coro__readiness_clear_short(w, snap);   /* plain TCP only */
}

/* a read constructor with a timeout other than 0 may skip its call and
 * park (fd_wait, which reads the word again under the entry's lock):
 * snap says plain TCP, registered for reading, not ready, not closed, no
 * urgent data - the last read of the current tick found the queue empty
 * (EAGAIN, or a short read: coro__readiness_clear_short) and no event came
 * since */
static inline bool coro__readiness_skip(uint64_t snap)
{
    const uint64_t look = CORO__RDY_REG_RD | CORO__RDY_TCP | CORO__RDY_RD | CORO__RDY_RD_CLOSED |
                          CORO__RDY_URG;
    return (snap & look) == (CORO__RDY_REG_RD | CORO__RDY_TCP);
}

/* coro__io_forget - fd's number now names a new open file (or none):
 * forget its registration and readiness; jobs still waiting on the old
 * file resume with -EBADF.  Any thread. */
CORO__HIDDEN void coro__io_forget(struct coro__io *io, int fd);
/* readiness of fd now (poll, no wait): 1 ready, 0 not, -errno (-EBADF)
 * (io/ops.c) */
CORO__HIDDEN int coro__fd_ready(int fd, bool rd);
/* a select's readable (dir CORO__DIR_RD) / writable branch record p in
 * fd's slot: 0, -EBADF, -ENOMEM, -EBUSY (the slot is taken), -errno of
 * epoll_ctl (-EPERM: fd cannot be polled).  Unlink: p off the slot if it
 * is still there; after it returns no claim of p runs (io/fd_select.c). */
CORO__HIDDEN int coro__io_sel_link(struct coro__io *io, coro_t *p, int fd, int dir);
CORO__HIDDEN void coro__io_sel_unlink(struct coro__io *io, coro_t *p, int fd, int dir);

/* An awaitable run on the blocking pool (lib/io/blocking.c): its arm is
 * coro__blocking_arm, and a pool thread calls run(aw) (aw is the job's
 * pending awaitable) to get the job's result.  coro_blocking and the
 * regular-file reads and writes (lib/io/file.c) are the two kinds. */
struct coro__pool_ops {
    struct coro_await_ops base;
    intptr_t (*run)(coro_await_t *aw);
};
CORO__HIDDEN int coro__blocking_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw,
                                    intptr_t *res);
/* coro_cancel of one job whose awaitable is one of these (its arm is
 * coro__blocking_arm): take it off the queue if it waits there */
CORO__HIDDEN void coro__blocking_cancel_one(coro_sched_t *s, coro_t *job);

/* lib/io/file.c: the hook at the start of coro_read / coro_write /
 * coro_write_all.  When fd is a regular file or a block device (fstat
 * once, cached per fd number), set *a to an awaitable that does the
 * operation on the blocking pool and return true; false for any other fd
 * (the caller goes on as before).  op: 0 read, 1 write, 2 write_all;
 * timeout: the call's (relative), used only if the fd number turns out
 * to have been reused for something epoll can wait for. */
CORO__HIDDEN bool coro__file_op_(int fd, const void *buf, size_t len, int64_t timeout, int op,
                                 coro_await_t *a);
/* the cached kind of each fd number below CORO__FD_KINDS (lib/io/file.c):
 * atomic bytes, relaxed (a hint that the pool checks again) */
#define CORO__FD_KINDS 65536
#define CORO__FD_POLL 1         /* known not a file: epoll waits for it */
CORO__HIDDEN extern uint8_t coro__fd_kinds[CORO__FD_KINDS];

static inline bool coro__file_op(int fd, const void *buf, size_t len, int64_t timeout, int op,
                                 coro_await_t *a)
{
    /* a socket or pipe seen before: no call (every read and write asks) */
    if ((unsigned)fd < CORO__FD_KINDS &&
        __atomic_load_n(&coro__fd_kinds[fd], __ATOMIC_RELAXED) == CORO__FD_POLL)
        return false;
    return coro__file_op_(fd, buf, len, timeout, op, a);
}

/* ---- the I/O hook --------------------------------------------------------------
 * The I/O context (lib/io/context.c), created with the scheduler.
 * poll: single-threaded mode, wait for I/O up to timeout ns (-1 = forever,
 * 0 = just look) and wake what is ready; returns how many events it
 * handled, or -EAGAIN when nothing waits on I/O at all. */
struct coro__io;
CORO__HIDDEN int coro__io_create(coro_sched_t *s, struct coro__io **out);
CORO__HIDDEN void coro__io_cancel_all(struct coro__io *io);
/* cancel_jobs: end with -ECANCELED every I/O wait and sleep of a job that
 * carries CORO__F_CANCEL (set before the call); the context does it on its
 * next round.  Any thread. */
CORO__HIDDEN void coro__io_cancel_jobs(struct coro__io *io);
/* coro__io_cancel_job - coro_cancel of one job whose flag is set and that
 * was SUSPENDED at that RMW (lib/wait/parklot.c CANCEL ONE): end its fd wait
 * or sleep; false when it waits on something else (the caller sweeps) */
CORO__HIDDEN bool coro__io_cancel_job(struct coro__io *io, coro_t *job);
CORO__HIDDEN void coro__io_destroy(struct coro__io *io);
CORO__HIDDEN int coro__io_poll(struct coro__io *io, int64_t timeout_ns);
/* fd waiters (signals and children included: their fds), timers not
 * counted; and the earliest timer's deadline (INT64_MAX = none): what a
 * virtual clock's driver asks before it jumps (rt/vtime.c) */
CORO__HIDDEN uint32_t coro__io_fd_waiters(struct coro__io *io);
CORO__HIDDEN int64_t coro__io_next_timer(struct coro__io *io);
/* kick: make a coro__io_poll that blocks return (any thread) */
CORO__HIDDEN void coro__io_kick(struct coro__io *io);
/* pending: something waits on I/O or a timer */
CORO__HIDDEN bool coro__io_pending(struct coro__io *io);

/* ---- the event driver (sched/sched.h struct coro__driver) --------------------------
 * coro__io_turn - a turn of t->mode (CORO__TURN_*, whose contracts are in
 * sched/sched.h), dispatched to the functions below; the jobs a turn wakes
 * go into b (coro__wake_into: the caller, a worker of io's scheduler,
 * queues them; NULL for the single-threaded WAIT).  coro__io_unpark -
 * after bumping worker idx's epoch with a seq_cst RMW: wake it from epoll
 * if it waits there (true); single-threaded, kick the driving thread
 * (false: its futex is woken too).  Both: lib/io/context.c. */
CORO__HIDDEN int coro__io_turn(struct coro__io *io, const struct coro__turn *t,
                               struct coro__woken *b);
CORO__HIDDEN bool coro__io_unpark(struct coro__io *io, int idx);
/* coro__io_park - TURN_PARK: worker idx (multi-threaded), about to sleep
 * with its park epoch read as `epoch` from *epoch_word and its idle bit
 * set: if no other thread waits in epoll and no worker handled I/O since
 * `activity` was read, wait there instead of on the futex (unless
 * *epoch_word already moved on), then handle the events (the jobs woken
 * into b).  Returns 0 when it waited (or saw the epoch move), -EAGAIN when
 * another thread holds the poll token: then park on the futex.  The wait
 * ends at the worker's own next timer at the latest
 * (coro__worker.timer_next: lib/wait/wtimer.c).  See lib/io/epoll.c (THE
 * POLL TOKEN) and sched/park.c. */
CORO__HIDDEN int coro__io_park(struct coro__io *io, int idx, const uint32_t *epoch_word,
                               uint32_t epoch, uint32_t activity, struct coro__woken *b);
/* coro__io_poll_now - TURN_LOOK: look at the epoll set without blocking
 * and handle what is ready (token or not: a worker about to go idle takes
 * the readiness its own jobs are waiting for instead of waiting for
 * another thread to wake up).  Returns how many events woke something. */
CORO__HIDDEN int coro__io_poll_now(struct coro__io *io, struct coro__woken *b);
/* coro__io_poll_busy - TURN_BUSY: worker idx, between two steps while it
 * has jobs to run: if it can take the poll token, look at the epoll set
 * without blocking and handle what is ready; if the I/O thread holds it,
 * ask for it.  Never blocks.  Returns how many events woke something (0
 * when it did not look).  See lib/io/epoll.c (BUSY WORKERS LOOK TOO). */
CORO__HIDDEN int coro__io_poll_busy(struct coro__io *io, int idx, struct coro__woken *b);
/* coro__io_wake_poller - coro__io_unpark with workers: if worker idx
 * waits in epoll, wake it (eventfd) and return true */
CORO__HIDDEN bool coro__io_wake_poller(struct coro__io *io, int idx);
/* coro__io_add_source - one more fd in the I/O context's epoll set
 * (level-triggered, EPOLLIN): cb(arg) runs on whichever thread handles
 * the I/O events (a worker, the I/O thread, or the single-threaded driver)
 * each time epoll reports fd readable; cb must read what made it readable.
 * At most 4.  Returns 0, -ENOSPC, or -errno of epoll_ctl. */
CORO__HIDDEN int coro__io_add_source(struct coro__io *io, int fd,
                                     void (*cb)(void *arg, struct coro__woken *b), void *arg);
/* coro__io_woken_by - fd waiters taken by a readiness event so far, by the
 * I/O thread (io_thread) or by workers / the single-threaded driver (tests;
 * the workers' count is kept without a locked add and may miss a few when
 * two workers take events at once) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN uint64_t coro__io_woken_by(struct coro__io *io, bool io_thread);
#endif
/* test hook: the I/O thread, having taken the poll token, sleeps this long
 * (ns) before its round - a thread holding the token that does not run
 * (lib/io/epoll.c, coro__io_main) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern int64_t coro__io_thread_hold_ns;
#endif
/* test hook: the reads coro_read has made (its constructor's and its
 * attempts' recv/read calls; a skipped call is not counted), relaxed */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern uint64_t coro__io_read_calls;
#endif
/* test hook: coro_close calls it (when set) after it has the fd's entry,
 * before it takes the entry's lock to wake the waiters and close the fd */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern void (*coro__io_close_hook)(struct coro__io *io);
#endif
/* coro__io_sleep_cancel_looks - heap entries that cancels of one sleeping
 * job (coro__io_cancel_job) have read so far (tests: one per cancel) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN uint64_t coro__io_sleep_cancel_looks(struct coro__io *io);
#endif

/* the heap's kinds (lib/wait/heap.c) are the I/O kinds of its entries */
_Static_assert((int)CORO__TK_FD == (int)CORO__IOK_FD &&
                   (int)CORO__TK_SLEEP == (int)CORO__IOK_SLEEP,
               "a timer's kind is its wait's I/O kind");

/* the event driver the runtime plugs into s->driver (sched/sched.h): these
 * functions, by pointer */
extern const struct coro__driver coro__io_driver CORO__HIDDEN;

/* io/blocking.c: the pool of coro_blocking (see its opening essay).  create:
 * no thread started, 0 or -ENOMEM; cancel: wake every queued call with
 * -ECANCELED (s->cancelling already set); destroy: after the drain, wait
 * for the pool's threads to leave and free it; counts: for tests. */
CORO__HIDDEN int coro__blocking_create(coro_sched_t *s, const coro_sched_config_t *c);
CORO__HIDDEN void coro__blocking_cancel(coro_sched_t *s);
/* the same for the queued calls of jobs that carry CORO__F_CANCEL */
CORO__HIDDEN void coro__blocking_cancel_jobs(coro_sched_t *s);
CORO__HIDDEN void coro__blocking_destroy(coro_sched_t *s);
/* calls armed on s's blocking pool and not yet woken (a virtual clock's
 * driver: while one runs, the clock waits for it) */
CORO__HIDDEN uint32_t coro__blocking_calls(coro_sched_t *s);
CORO__HIDDEN void coro__blocking_counts(coro_sched_t *s, uint32_t *threads, uint64_t *started,
                                        uint64_t *retired);
CORO__HIDDEN bool coro__blocking_queued(coro_sched_t *s);
/* true on a thread of s's blocking pool (shutdown and destroy refuse it:
 * the job of the call it runs cannot finish meanwhile) */
CORO__HIDDEN bool coro__blocking_on_pool(const coro_sched_t *s);
#ifdef CORO_TEST_HOOKS
/* threads started by an arm, on a worker, so far (tests) */
CORO__HIDDEN uint64_t coro__blocking_arm_starts(coro_sched_t *s);
#endif
/* test hook: the thread-creating call (pthread_create by default) */
#ifdef CORO_TEST_HOOKS
extern int (*coro__blocking_spawn_hook)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                        void *) CORO__HIDDEN;
#endif

/* coro_sched_dump: the suspended jobs the I/O context / the blocking pool
 * hold */
CORO__HIDDEN int coro__io_dump(struct coro__io *io, struct coro__dump *d);
CORO__HIDDEN int coro__blocking_dump(coro_sched_t *s, struct coro__dump *d);

#endif
