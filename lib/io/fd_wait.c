/* SPDX-License-Identifier: MIT */
/* Waiting on an fd: the fd table, each fd's registration in the epoll
 * set, its readiness word, and the waiters parked in its slots until an
 * event (handled by whoever holds the poll token: lib/io/epoll.c) takes
 * them.  Timers of timed waits: lib/io/timers.c; select branches parked
 * in the slots: lib/io/fd_select.c; the layout: lib/io/io_impl.h.
 *
 * REGISTERED ONCE PER DIRECTION.  An fd enters the epoll set at its first
 * wait, edge-triggered, for that wait's direction (EPOLLIN | EPOLLRDHUP,
 * with EPOLLPRI for a plain TCP socket, or EPOLLOUT; with EPOLLET); the
 * first wait in the other direction adds it
 * (EPOLL_CTL_MOD; its queued event is a possibly stale edge, which costs
 * one attempt).  A direction nobody waits in stays out: the peer's every
 * read would call into epoll for a writable edge no one needs.  The fd
 * stays registered until coro_close (EPOLL_CTL_DEL) or until
 * corokit learns that its number names a new file (coro__io_forget: accept
 * returned it, connect starts on it, a signalfd/pidfd of ours is made or
 * closed).
 * The epoll tag is fd | gen << 32: an event of a forgotten registration
 * (gen moved on) is ignored.
 *
 * THE FD ENTRY (struct fd_entry, a two-level table whose chunks are never
 * freed before the scheduler, so a pointer to an entry stays valid) holds,
 * under its spinlock, the waiting reader and writer (w[dir]), and the
 * READINESS word `readiness` (tokio's ScheduledIo): flags in the low byte -
 * readable / writable (CORO__RDY_RD/WR), the sticky end states
 * (CORO__RDY_RD_CLOSED from EPOLLRDHUP, EPOLLHUP or EPOLLERR;
 * CORO__RDY_WR_CLOSED from EPOLLHUP or EPOLLERR), registered per direction
 * (CORO__RDY_REG_*), the fd's kind (CORO__RDY_TCP: plain TCP, asked at its
 * registration for reading) and urgent data seen (CORO__RDY_URG, sticky) -
 * and above them the TICK, the count of epoll events seen for the fd (and
 * of registrations).
 * The word is a hint that may cost a system call and skips one in a
 * single case: a read of a plain TCP socket, with a timeout other than 0,
 * while the word says its queue was found empty and nothing came since
 * (below).  Every other constructor (lib/io/ops.c) makes its call whatever
 * the word says, and so does every read of any other kind of fd: a short
 * read of a datagram, of a unix stream at passed fds or credentials, or
 * of kTLS at a control record leaves data behind it with no edge to come.
 * Invariant: a direction's bits are clear only if an operation, started
 * after the word showed the current tick, found the kernel's queue empty
 * - it got EAGAIN, or it was a read of flags 0 of a plain TCP socket that
 * came back short while no urgent data and no end had been seen - and no
 * event has come since.  So clear bits of a registered direction mean
 * "would block" (RD_CLOSED is never cleared by a short read: the end
 * stays readable, as 0 or the error, with no edge to come again).
 *   an event for dir (poller, under the lock): tick + 1, dir's ready bit
 *     set, its closed bit when the event says so, the urgent bit on
 *     EPOLLPRI (a CAS loop, one RMW); a waiter in the slot is taken and
 *     woken to try (WHO CALLS)
 *   an operation (anyone): snap = word (seq_cst load) BEFORE the system
 *     call; after EAGAIN, the kernel's only "not ready" for every fd,
 *     clear dir's bits by CAS, only while the tick is still snap's.  After
 *     a short coro_read (0 < n < len, flags 0) of a plain-TCP fd, with
 *     neither URG nor RD_CLOSED in snap, clear the read bit alone by the
 *     same CAS (coro__readiness_clear_short): TCP's recvmsg copies every
 *     byte queued until len is full, stopping early only at the urgent
 *     mark (EPOLLPRI, registered for such an fd, reports it and URG
 *     turns the rule off for the registration) and at the end (FIN, RST:
 *     RD_CLOSED, which snap shows if the edge was counted before it, and
 *     which moves the tick if it is counted after); what arrives while
 *     the read holds the socket waits in its backlog, processed at
 *     release_sock, whose wake-up is an edge after snap.  Any other
 *     transfer, an end of file (0) or an error clears nothing.
 *   a read constructor (rw_now) with a timeout other than 0: snap says
 *     plain TCP, registered, not ready, not closed, no urgent data: no
 *     call; the job parks through fd_wait, which reads the word again
 *     under the lock.  A timeout of 0 always calls; a readable report of
 *     poll(2) (coro_readable, a select's branch) sets the read bit, so
 *     the read after it calls too.
 *   a waiter (fd_wait, under the lock, after its own EAGAIN or the skip):
 *     bits set: unlock, try (the rules above), loop; clear: park in w[dir]
 *     - no second system call.
 * No lost wake-up: the kernel queues an edge-triggered event for every
 * state change after the call that found the queue empty (new data, FIN,
 * RST, HUP, an error, urgent data, buffer space); the poller counts it
 * (tick + 1) either before the clear's CAS, which then fails and leaves
 * the bits set (one extra attempt), or after it, setting the bits again
 * or taking the parked waiter (the waiter parks under the lock the poller
 * takes).  A change before that call is no concern: the call saw it.
 * A set bit may be stale (an edge whose data was read): one extra
 * attempt, never a lost wake-up.  The closed bits are sticky against
 * everything but EAGAIN (a FIFO whose new writer opened it is no longer
 * at its end: the kernel says so, and the bit goes, so a waiter cannot
 * spin on it).  A fresh registration starts not ready: EPOLL_CTL_ADD (MOD)
 * queues an event at once if the fd is ready then.  coro_close and
 * coro__io_forget wipe the flags (the kind and the urgent bit with them)
 * and move the tick, so older snapshots clear nothing.  What the word
 * cannot know: a number closed with close(2) and reused (a read of it
 * may park without its call while the old file's word says empty), and
 * an upper-layer protocol set on the socket after its registration
 * (docs/io.md says both).  The case analysis over each kind of event and
 * fd is in docs/architecture.md ("When a system call is skipped");
 * tools/model/ready.pml checks the protocol for both kinds of fd, and
 * rejects a short read that clears for every kind, one that clears the
 * end, and the rule without the urgent bit.
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
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io_impl.h"

#ifndef TCP_ULP
# define TCP_ULP 31
#endif

/* fd's chunk, created (CAS) on first use; NULL: -ENOMEM */
__attribute__((noinline, cold))
struct fd_entry *coro__io_chunk_new(struct coro__io *io, struct fd_entry **slot)
{
    struct fd_entry *c = NULL;
    struct fd_entry *n = coro__alloc(io->s, CHUNK * sizeof *n);
    if (!n)
        return NULL;
    memset(n, 0, CHUNK * sizeof *n);     /* timer_handle: NO_TIMER */
    /* acq_rel: publishes n's contents; on failure acquires the winner's */
    if (__atomic_compare_exchange_n(slot, &c, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return n;
    coro__free(io->s, n, CHUNK * sizeof *n);
    return c;
}

uint64_t *coro__io_readiness_word(struct coro__io *io, int fd)
{
    struct fd_entry *e = ent_get(io, fd, false);
    return e ? &e->readiness : NULL;
}

/* every completion of an fd awaitable, whoever completes it: the
 * awaitable's own fd is forgotten then released, a new fd forgotten */
__attribute__((noinline))
void coro__io_fd_done_(struct coro__io *io, coro_await_t *aw, intptr_t res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->flags & CORO__IOF_OWNFD)
        coro__io_forget(io, (int)aw->arg[0].i);
    if (ops->fini)
        ops->fini(aw);
    if ((ops->flags & CORO__IOF_NEWFD) && res >= 0)
        coro__io_forget(io, (int)res);
}

static inline uint64_t tag_of(int fd, uint32_t gen)
{
    return (uint64_t)(uint32_t)fd | (uint64_t)gen << 32;
}

/* fd is a plain TCP socket: of IPPROTO_TCP (not MPTCP, SMC, SCTP, unix
 * or a pipe), answered by TCP's own getsockopt (TCP_ULP: a raw socket of
 * that protocol, SOCK_RAW, refuses the option, so SO_TYPE need not be
 * asked), not listening (a read of a listening socket fails at once, as
 * it always did), with no upper-layer protocol (TCP_ULP names none: kTLS
 * shows "tls", and its reads stop at a control record with the record
 * left behind).  Only such a socket's short read of flags 0 shows its
 * queue empty (READINESS).  Asked once, at the fd's registration for
 * reading: three system calls, each about the cost of one read the rule
 * saves later, so a connection that waits for a fourth request has paid
 * them back (one that reads once and closes has not: docs/io.md) */
static bool plain_tcp(int fd)
{
    int v = 0;
    socklen_t l = sizeof v;
    char ulp[16];

    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) < 0 || v != IPPROTO_TCP)
        return false;
    l = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0 || v != 0)
        return false;
    l = sizeof ulp;
    if (getsockopt(fd, IPPROTO_TCP, TCP_ULP, ulp, &l) < 0)
        return false;
    return l == 0 || ulp[0] == '\0';
}

/* the events of a registration in dirs (a plain-TCP reader asks for
 * EPOLLPRI too: urgent data turns its short-read rule off) */
static uint32_t reg_events(uint8_t dirs, bool tcp)
{
    return EPOLLET | ((dirs & RD_BIT) ? EPOLLIN | EPOLLRDHUP | (tcp ? EPOLLPRI : 0) : 0) |
           ((dirs & WR_BIT) ? EPOLLOUT : 0);
}

/* under e's lock: the first wait in direction bit (RD_BIT / WR_BIT): ADD
 * fd to the epoll set, or MOD it to add that direction (at most two
 * epoll_ctl per fd).  A direction nobody waits in is left out: each read
 * by the peer of a socket registered for EPOLLOUT too would queue an event
 * (unix_write_space) that every epoll_wait then reports.  0 or -errno. */
int coro__io_ent_register(struct coro__io *io, struct fd_entry *e, int fd, uint8_t bit)
{
    uint32_t gen = e->reg ? e->gen : e->gen + 1;
    uint8_t dirs = (uint8_t)((e->reg ? e->dirs : 0) | bit);
    /* reading registered now: classify the fd; else keep what the word says */
    bool tcp = bit == RD_BIT ? plain_tcp(fd)
                             : e->reg && (readiness_load(e) & CORO__RDY_TCP) != 0;
    struct epoll_event ev = { .events = reg_events(dirs, tcp), .data.u64 = tag_of(fd, gen) };
    int rc = epoll_ctl(io->epfd, e->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
    if (rc < 0 && e->reg && errno == ENOENT) {
        /* closed with close(2) and the number reused: epoll forgot the old
         * file, so we do too */
        e->reg = 0;
        gen = e->gen + 1;
        dirs = bit;
        ev.events = reg_events(dirs, tcp);
        ev.data.u64 = tag_of(fd, gen);
        rc = epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rc < 0 && !e->reg && errno == EEXIST)  /* the old file lives on (a dup): retag it */
        rc = epoll_ctl(io->epfd, EPOLL_CTL_MOD, fd, &ev);
    if (rc < 0)
        return -errno;
    /* ADD / MOD report what is ready now (an event is queued, handled after
     * our unlock): the new direction starts not ready, and a new reading
     * registration with its kind and no urgent data seen.  At ADD the fd
     * is new to us: forget the old word. */
    uint64_t set = ((dirs & RD_BIT) ? CORO__RDY_REG_RD : 0) | ((dirs & WR_BIT) ? CORO__RDY_REG_WR : 0) |
                   ((dirs & RD_BIT) && tcp ? CORO__RDY_TCP : 0);
    uint64_t clear = bit == RD_BIT ? coro__readiness_bits(CORO__DIR_RD) | CORO__RDY_TCP | CORO__RDY_URG
                                   : coro__readiness_bits(CORO__DIR_WR);
    readiness_update(e, e->reg ? clear : 0xffu, set);
    e->gen = gen;
    e->reg = 1;
    e->dirs = dirs;
    return 0;
}

/* under e's lock: slot_take for the paths that end a wait with res (close,
 * forget, cancel): a select branch's record claims its select for res
 * (woken from wakes after the unlock) and NULL is returned; a job is
 * returned for finish() */
static coro_t *slot_take_jobs(struct coro__io *io, struct fd_entry *e, int dir, intptr_t res,
                              coro__wakelist_t *wakes)
{
    coro_t *w = slot_take(io, e, dir);

    if (w && is_proxy(w)) {
        proxy_fire(e, dir, w, res, wakes);
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
    struct fd_entry *e = ent_get(io, fd, true);
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
        if (!(e->dirs & bit) && (rc = coro__io_ent_register(io, e, fd, bit)) < 0) {
            ent_unlock(e);
            *res = rc;
            return CORO__ARM_READY;
        }
        /* an event came since the fd was last seen not ready (or the end
         * state stands): try the operation (the word read before it: a
         * snapshot); would block: clear, unless another event came
         * meanwhile */
        uint64_t snap = readiness_load(e);
        if (snap & coro__readiness_bits(dir)) {
            ent_unlock(e);
            bool done = ops->attempt(aw, res);     /* false: EAGAIN */
            coro__readiness_after(&e->readiness, dir, snap, done ? *res : -EAGAIN,
                                  (size_t)aw->arg[2].i, (ops->flags & CORO__IOF_SHORTRD) != 0);
            if (done)
                return CORO__ARM_READY;
            continue;
        }
        if (e->w[dir]) {
            ent_unlock(e);
            *res = -EBUSY;      /* one reader and one writer per fd */
            return CORO__ARM_READY;
        }
        uint32_t seq = ++e->wait_seq[dir];
        int64_t deadline = coro__bound_deadline(job, aw->timeout);     /* .deadline */
        if (deadline >= 0) {
            struct coro__timer_record t = { .deadline = deadline, .p = job, .seq = seq,
                                     .kind = CORO__TK_FD, .aux = (uint32_t)fd * 2 + (uint32_t)dir };
            rc = coro__io_timer_add(io, &t, &e->timer_handle[dir]);  /* entry, then timers: the lock order */
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


/* fd's number no longer names the file its slot knew: every waiter ends
 * with EBADF and the registration and readiness are forgotten.  With
 * close_it (coro_close) the file is also taken out of epoll and closed,
 * under the lock: a waiter that comes next registers anew and gets EBADF
 * (unless the number was reused meanwhile: then it is a new fd).  Returns
 * close's result, else 0.  Inlined: close_it is a constant at each call. */
static inline __attribute__((always_inline)) int ent_reset(struct coro__io *io, struct fd_entry *e,
                                                           int fd, bool close_it)
{
    coro_t *job[2];
    int rc = 0;

    coro__wakelist_t wakes;
    coro__wakelist_init(&wakes);
    ent_lock(e);
    job[0] = slot_take_jobs(io, e, 0, -EBADF, &wakes);
    job[1] = slot_take_jobs(io, e, 1, -EBADF, &wakes);
    if (close_it && e->reg)
        epoll_ctl(io->epfd, EPOLL_CTL_DEL, fd, NULL);  /* a dup may keep the file open */
    e->reg = 0;
    e->dirs = 0;
    readiness_update(e, 0xffu, 0);    /* nothing known; older snapshots clear nothing */
    e->gen++;           /* events of the old registration are ignored */
    if (close_it)
        rc = close(fd) == 0 ? 0 : -errno;
    ent_unlock(e);
    coro__wakelist_wake(&wakes);
    for (int dir = 0; dir < 2; dir++)
        if (job[dir])
            finish(io, job[dir], -EBADF);
    return rc;
}

void coro__io_forget(struct coro__io *io, int fd)
{
    struct fd_entry *e = ent_get(io, fd, false);

    if (e)
        ent_reset(io, e, fd, false);
}

int coro__io_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    CORO__IO_KEEP_ERRNO();
    struct coro__io *io = coro__sched_io(s);
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    int rc;

    if (ops->kind == CORO__IOK_SLEEP) {
        /* bounded by the job's deadline: coro__io_timer_fire tells the two apart */
        struct coro__timer_record t = { .deadline = coro__bound_deadline(job, aw->timeout), .p = job,
                                 .kind = CORO__TK_SLEEP };
        if ((rc = coro__io_timer_add(io, &t, NULL)) < 0) {
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
    } else if (ops->flags & CORO__IOF_OWNFD) {
        /* the awaitable's own fd (a signalfd, a pidfd) is a new file: what
         * its number's entry knew belongs to an fd closed with close(2),
         * whose registration epoll dropped - kept, it would skip this
         * wait's own, and no event would ever come */
        coro__io_forget(io, (int)aw->arg[0].i);
    }
    if ((rc = fd_wait(io, job, aw, res)) == CORO__ARM_READY)
        fd_done(io, aw, *res);
    return rc;
}

#ifdef CORO_TEST_HOOKS
void (*coro__io_close_hook)(struct coro__io *io);
#endif

int coro_close(coro_sched_t *s, int fd)
{
    CORO__IO_KEEP_ERRNO();
    struct fd_entry *e;

    if (fd < 0)
        return -EBADF;
    if (!s)
        s = coro_sched_current();
    /* from a thread that is not s's own, s stays pinned while we wake the
     * fd's waiters and then touch the I/O context: the woken job may end,
     * and destroy free s, meanwhile (sched/pin.c); past destroy's wait, a
     * plain close */
    struct coro__worker *w = coro__tls_worker;
    int tok = CORO__PIN_NONE;
    if (s && !(w && w->s == s) && (tok = coro__pin_sched(s)) == CORO__PIN_NONE)
        s = NULL;
    struct coro__io *io = s ? coro__sched_io(s) : NULL;
    int rc;
    /* The entry is looked up with create, never skipped: every close of an
     * fd a job may wait on goes through the entry's lock (ent_reset), the
     * lock fd_wait registers and parks under.  A missing chunk does not
     * mean "nobody waits": a job whose read got EAGAIN may be on its way
     * to fd_wait, which creates the chunk.  Skipping the lock there let
     * the two go in any order; the one that lost a job: our lookup before
     * fd_wait's chunk CAS (NULL), fd_wait's EPOLL_CTL_ADD before our
     * close(2) (it succeeds), the job parked, then close(2) drops the file
     * from the epoll set (no event, ever) and nobody takes the slot.
     * With the lock, the cases (fd_wait's critical section F: register,
     * park; ours C: take the slots, EPOLL_CTL_DEL, close(2)):
     *   F then C: C takes the parked job and finishes it with -EBADF.
     *   C then F: fd_wait's EPOLL_CTL_ADD fails with EBADF (closed under
     *     C) and the read completes with -EBADF - unless the number was
     *     reused meanwhile, which is then a new fd (docs/io.md).
     *   C before the read's first call: that call gets EBADF itself.
     * The chunk's creation is a CAS (acq_rel, coro__io_chunk_new): both
     * sides get the one entry.  No chunk (-ENOMEM): the fd is left open
     * and the caller may try again - a plain close here could lose a
     * waiter as above.  fd beyond the table: no job can wait on it
     * (fd_wait gives -EBADF), a plain close. */
    if (!io || (uint32_t)fd >= MAX_FDS) {
        rc = close(fd) == 0 ? 0 : -errno;
    } else if (!(e = ent_get(io, fd, true))) {
        rc = -ENOMEM;
    } else {
#ifdef CORO_TEST_HOOKS
        if (coro__io_close_hook)
            coro__io_close_hook(io);
#endif
        rc = ent_reset(io, e, fd, true);
    }
    coro__unpin(tok);
    return rc;
}
