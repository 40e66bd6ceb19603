/* SPDX-License-Identifier: MIT */
/* The core I/O awaitables - readable / writable, read, write, write_all,
 * accept, connect, sleep, signal, child: their constructors (run in the
 * job's body, on the worker: they try the system call first - but a
 * coro_read of a plain TCP socket whose word says empty: rw_now) and their
 * attempt functions (run at the arm, on the job's worker, each time
 * readiness woke it: the thread that took the readiness makes no call for
 * it, lib/io/fd_wait.c WHO CALLS).
 *
 * Awaitable layout: arg[0] fd, arg[1] buffer (or address), arg[2] length
 * (or a number), timeout = absolute deadline (-1 = none), converted from
 * the relative timeout when the constructor gives up (only on EAGAIN).
 *
 * Blocking fds: sockets go through recv/send with MSG_DONTWAIT and keep
 * their flags; any other fd gets O_NONBLOCK set before the first read or
 * write (so the thread that performs the operation never blocks on it).
 * accept and connect have no per-call flag: their sockets get O_NONBLOCK
 * too.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sys.h"
#include "io/io_try.h"

#ifndef P_PIDFD
# define P_PIDFD 3
#endif

#ifdef CORO_TEST_HOOKS
bool coro__sys_libc;    /* base/sys.h: tests route the wrappers through libc */
uint64_t coro__io_read_calls;   /* io.h */
#endif

/* a read of coro_read is about to be made (tests count them) */
static inline void count_read(void)
{
#ifdef CORO_TEST_HOOKS
    __atomic_add_fetch(&coro__io_read_calls, 1, __ATOMIC_RELAXED);     /* a count, no order */
#endif
}

/* ---- the system calls, as -errno ------------------------------------------- */

/* the one non-blocking try of every constructor: coro__rw_now
 * (lib/io/io_try.h) */
static intptr_t do_read(int fd, void *buf, size_t len)
{
    return coro__rw_now(fd, buf, len, false);
}

static intptr_t do_write(int fd, const void *buf, size_t len)
{
    return coro__rw_now(fd, (void *)buf, len, true);   /* only written from */
}

/* write as much as possible: 0 when all is written, -EAGAIN with *buf and
 * *len advanced, or -errno */
static intptr_t do_write_all(int fd, const char **buf, size_t *len)
{
    while (*len) {
        intptr_t n = do_write(fd, *buf, *len);
        if (n < 0)
            return n;
        *buf += n;
        *len -= (size_t)n;
    }
    return 0;
}

/* the calling job's I/O context, or NULL (outside a job) */
static struct coro__io *cur_io(void)
{
    coro_sched_t *s = coro_sched_current();
    return s ? coro__sched_io(s) : NULL;
}

/* A constructor's system call, made whatever the fd's readiness word says
 * (READINESS in lib/io/fd_wait.c) - the word may be stale, or of a short
 * read that left an end of file behind it - with one exception: a read
 * (dir CORO__DIR_RD) whose timeout is not 0, on a plain-TCP fd whose word
 * says registered, not ready, not closed and no urgent data
 * (coro__readiness_skip), returns -EAGAIN without the call, and the job
 * parks (fd_wait reads the word again under the entry's lock).  EAGAIN
 * clears the word's bits, and so does a read of a plain-TCP fd that comes
 * back short (its read bit only: coro__readiness_clear_short), unless an
 * event came since the snapshot taken before the call. */
static inline intptr_t rw_now(int fd, const void *buf, size_t len, int dir, int64_t timeout)
{
    if (CORO__UNLIKELY(coro__cancel_due()))
        return -ECANCELED;
    struct coro__io *io = cur_io();
    uint64_t *word = io ? coro__io_readiness_word(io, fd) : NULL;
    uint64_t snap = coro__readiness_load(word);
    if (dir == CORO__DIR_RD && timeout != 0 && coro__readiness_skip(snap))
        return -EAGAIN;     /* the queue was found empty and no event came since */
    if (dir == CORO__DIR_RD)
        count_read();
    intptr_t n = coro__rw_now(fd, (void *)buf, len, dir == CORO__DIR_WR);    /* only written from */

    if (word)
        coro__readiness_after(word, dir, snap, n, len, dir == CORO__DIR_RD);
    return n;
}

/* fd's number names a new open file: forget what the calling job's
 * scheduler knew of it (a registration of an fd closed with close(2)) */
static void new_fd(int fd)
{
    coro_sched_t *s = coro_sched_current();
    struct coro__io *io = s ? coro__sched_io(s) : NULL;

    if (io)
        coro__io_forget(io, fd);
}

/* addr/len: NULL, or where the peer's address goes (*len: its size in,
 * the address's length out) */
static intptr_t do_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    for (;;) {
        socklen_t l = len ? *len : 0;
        int c = coro__accept4(fd, addr, len ? &l : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c >= 0 && len)
            *len = l;
        if (c >= 0)
            return c;
        /* a connection that died in the backlog: take the next one */
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

/* poll(2) saw fd readable: a plain-TCP fd's word gets its read bit (a set
 * bit costs at most a call), so the read that follows a readable report
 * (coro_readable, a select's branch) makes its call whatever its timeout,
 * even before the poller has counted the edge of the data poll saw */
static void seen_readable(int fd)
{
    struct coro__io *io = cur_io();
    uint64_t *word = io ? coro__io_readiness_word(io, fd) : NULL;

    if (word && (coro__readiness_load(word) & CORO__RDY_TCP))
        __atomic_fetch_or(word, CORO__RDY_RD, __ATOMIC_SEQ_CST);   /* as the word's other RMWs */
}

/* readiness of fd now: 1 ready, 0 not, or -errno */
static int poll_now(int fd, short events)
{
    struct pollfd p = { .fd = fd, .events = events };
    int n;

    do {
        n = poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (p.revents & POLLNVAL)
        return -EBADF;
    if (n > 0 && (events & POLLIN))
        seen_readable(fd);
    return n > 0;
}

int coro__fd_ready(int fd, bool rd)
{
    CORO__IO_KEEP_ERRNO();
    return poll_now(fd, rd ? POLLIN : POLLOUT);
}

/* ---- readable / writable ------------------------------------------------------ */

/* an edge may be stale (its data already read): look before reporting */
static bool ready_attempt(coro_await_t *aw, intptr_t *res)
{
    bool rd = coro__io_ops_of(aw)->dir == CORO__DIR_RD;
    int r = poll_now((int)aw->arg[0].i, rd ? POLLIN : POLLOUT);

    if (r == 0)
        return false;
    *res = r > 0 ? 0 : r;
    return true;
}

static const struct coro__io_ops readable_ops = {
    { "readable", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, ready_attempt, NULL, NULL,
};
static const struct coro__io_ops writable_ops = {
    { "writable", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, ready_attempt, NULL, NULL,
};

static coro_await_t readiness(const struct coro__io_ops *ops, int fd, short events,
                              int64_t timeout)
{
    if (fd < 0)
        return coro__complete(-EBADF);
    if (!coro__timeout_ok(timeout))
        return coro__complete(-EINVAL);
    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    int r = poll_now(fd, events);
    if (r != 0)
        return coro__complete(r > 0 ? 0 : r);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(ops, fd, NULL, 0, coro__deadline(timeout));
}

coro_await_t coro_readable(int fd, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return readiness(&readable_ops, fd, POLLIN, timeout);
}

coro_await_t coro_writable(int fd, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return readiness(&writable_ops, fd, POLLOUT, timeout);
}

/* ---- read / write / write_all ---------------------------------------------------- */

static bool read_attempt(coro_await_t *aw, intptr_t *res)
{
    count_read();
    intptr_t n = do_read((int)aw->arg[0].i, aw->arg[1].p, (size_t)aw->arg[2].i);
    if (n == -EAGAIN)
        return false;
    *res = n;
    return true;
}

static bool write_attempt(coro_await_t *aw, intptr_t *res)
{
    intptr_t n = do_write((int)aw->arg[0].i, aw->arg[1].cp, (size_t)aw->arg[2].i);
    if (n == -EAGAIN)
        return false;
    *res = n;
    return true;
}

static bool write_all_attempt(coro_await_t *aw, intptr_t *res)
{
    const char *buf = aw->arg[1].cp;
    size_t len = (size_t)aw->arg[2].i;
    intptr_t n = do_write_all((int)aw->arg[0].i, &buf, &len);

    aw->arg[1].cp = buf;
    aw->arg[2].i = (intptr_t)len;
    if (n == -EAGAIN)
        return false;
    *res = n;
    return true;
}

static const struct coro__io_ops read_ops = {
    { "read", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, CORO__IOF_SHORTRD, read_attempt, NULL,
    NULL,
};
static const struct coro__io_ops write_ops = {
    { "write", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, write_attempt, NULL, NULL,
};
static const struct coro__io_ops write_all_ops = {
    { "write_all", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, write_all_attempt, NULL, NULL,
};

/* coro_read (dir CORO__DIR_RD) and coro_write (CORO__DIR_WR): inlined
 * into each, where dir is a constant */
static inline __attribute__((always_inline)) coro_await_t rw(int fd, const void *buf, size_t len,
                                                             int64_t timeout, int dir)
{
    CORO__IO_KEEP_ERRNO();
    if (fd < 0)
        return coro__complete(-EBADF);
    if (!coro__timeout_ok(timeout) || (!buf && len) || len > SSIZE_MAX)
        return coro__complete(-EINVAL);
    coro_await_t f;
    /* regular file: the pool (its op 0 reads, 1 writes) */
    if (coro__file_op(fd, buf, len, timeout, dir == CORO__DIR_RD ? 0 : 1, &f))
        return f;
    intptr_t n = rw_now(fd, buf, len, dir, timeout);
    if (n != -EAGAIN)
        return coro__complete(n);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(dir == CORO__DIR_RD ? &read_ops : &write_ops, fd, buf,
                          (intptr_t)len, coro__deadline(timeout));
}

coro_await_t coro_read(int fd, void *buf, size_t len, int64_t timeout)
{
    return rw(fd, buf, len, timeout, CORO__DIR_RD);
}

coro_await_t coro_write(int fd, const void *buf, size_t len, int64_t timeout)
{
    return rw(fd, buf, len, timeout, CORO__DIR_WR);
}

coro_await_t coro_write_all(int fd, const void *buf, size_t len, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    const char *p = buf;

    if (fd < 0)
        return coro__complete(-EBADF);
    if (!coro__timeout_ok(timeout) || (!buf && len) || len > SSIZE_MAX)
        return coro__complete(-EINVAL);
    coro_await_t f;
    if (coro__file_op(fd, buf, len, timeout, 2, &f))       /* regular file: the pool */
        return f;
    /* tried whatever the word says, as rw_now */
    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    struct coro__io *io = cur_io();
    uint64_t *word = io ? coro__io_readiness_word(io, fd) : NULL;
    uint64_t snap = coro__readiness_load(word);
    intptr_t n = do_write_all(fd, &p, &len);
    if (n == -EAGAIN && word)
        coro__readiness_clear(word, CORO__DIR_WR, snap);
    if (n != -EAGAIN)
        return coro__complete(n);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(&write_all_ops, fd, p, (intptr_t)len, coro__deadline(timeout));
}

/* ---- accept / connect ------------------------------------------------------------- */

static bool accept_attempt(coro_await_t *aw, intptr_t *res)
{
    intptr_t c = do_accept((int)aw->arg[0].i, aw->arg[1].p, (socklen_t *)aw->arg[2].p);
    if (c == -EAGAIN)
        return false;
    *res = c;
    return true;
}

static bool connect_attempt(coro_await_t *aw, intptr_t *res)
{
    int err = 0;
    socklen_t l = sizeof err;

    if (getsockopt((int)aw->arg[0].i, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
        err = errno;
    if (err == EINPROGRESS || err == EALREADY)
        return false;
    *res = -err;
    return true;
}

static const struct coro__io_ops accept_ops = {
    { "accept", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, CORO__IOF_NEWFD, accept_attempt,
    NULL, NULL,
};
static const struct coro__io_ops connect_ops = {
    { "connect", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, connect_attempt, NULL, NULL,
};

static coro_await_t accept_(int fd, struct sockaddr *addr, socklen_t *len, int64_t timeout)
{
    if (fd < 0)
        return coro__complete(-EBADF);
    if (!coro__timeout_ok(timeout) || (addr && !len) || (!addr && len))
        return coro__complete(-EINVAL);
    int rc = coro__set_nonblock(fd);
    if (rc < 0)
        return coro__complete(rc);
    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    intptr_t c = do_accept(fd, addr, len);
    if (c >= 0)
        new_fd((int)c);
    if (c != -EAGAIN)
        return coro__complete(c);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    coro_await_t a = coro__io_await(&accept_ops, fd, addr, 0, coro__deadline(timeout));
    a.arg[2].p = len;
    return a;
}

coro_await_t coro_accept(int fd, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return accept_(fd, NULL, NULL, timeout);
}

coro_await_t coro_accept_addr(int fd, struct sockaddr *addr, socklen_t *len, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    if (!addr || !len)
        return coro__complete(-EINVAL);
    return accept_(fd, addr, len, timeout);
}

coro_await_t coro_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    if (fd < 0)
        return coro__complete(-EBADF);
    if (!coro__timeout_ok(timeout) || !addr)
        return coro__complete(-EINVAL);
    int rc = coro__set_nonblock(fd);
    if (rc < 0)
        return coro__complete(rc);
    new_fd(fd);     /* a socket starting to connect is new to corokit */
    if (connect(fd, addr, len) == 0)
        return coro__complete(0);
    if (errno != EINPROGRESS && errno != EINTR)
        return coro__complete(errno == EAGAIN ? -EAGAIN : -errno);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(&connect_ops, fd, NULL, 0, coro__deadline(timeout));
}

/* ---- sleep ---------------------------------------------------------------------------- */

static const struct coro__io_ops sleep_ops = {
    { "sleep", coro__io_arm }, CORO__IOK_SLEEP, 0, 0, NULL, NULL, NULL,
};

coro_await_t coro_sleep_until(int64_t deadline_ns)
{
    if (deadline_ns < 0)
        return coro__complete(-EINVAL);
    if (deadline_ns == CORO_NO_DEADLINE)      /* as coro_sleep(CORO_FOREVER) */
        return coro__io_await(&sleep_ops, 0, NULL, 0, INT64_MAX);
    if (deadline_ns <= coro__now())
        return coro__complete(0);
    return coro__io_await(&sleep_ops, 0, NULL, 0, deadline_ns);
}

coro_await_t coro_sleep(int64_t ns)
{
    if (ns == CORO_FOREVER)
        return coro__io_await(&sleep_ops, 0, NULL, 0, INT64_MAX);
    if (ns < 0)
        return coro__complete(-EINVAL);
    if (ns == 0)
        return coro__complete(0);
    int64_t d = coro__deadline(ns);
    return coro__io_await(&sleep_ops, 0, NULL, 0, d < 0 ? INT64_MAX : d);   /* too far: forever */
}

/* ---- signals ------------------------------------------------------------------------------ */

/* arg[0]: the signalfd (from prepare), arg[2]: signo */
static int signal_prepare(coro_await_t *aw)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, (int)aw->arg[2].i);
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* seq_cst: before the arm's load of the cancel flag (fd_wait), against
     * coro_cancel's flag, then its load of this fd (coro__io_cancel_job) */
    __atomic_store_n(&aw->arg[0].i, fd, __ATOMIC_SEQ_CST);
    return 0;
}

static bool signal_attempt(coro_await_t *aw, intptr_t *res)
{
    struct signalfd_siginfo si;
    ssize_t n;

    do {
        n = read((int)aw->arg[0].i, &si, sizeof si);
    } while (n < 0 && errno == EINTR);
    /* false only for "not ready": the caller clears the fd's readiness */
    if (n < 0 && errno == EAGAIN)
        return false;       /* another waiter took it */
    *res = n == (ssize_t)sizeof si ? (intptr_t)si.ssi_signo : n < 0 ? -errno : -EIO;
    return true;
}

static void fd_fini(coro_await_t *aw)
{
    close((int)aw->arg[0].i);
}

static const struct coro__io_ops signal_ops = {
    { "signal", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, CORO__IOF_OWNFD, signal_attempt,
    signal_prepare, fd_fini,
};

coro_await_t coro_signal(int signo, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    sigset_t set, cur;
    siginfo_t si;
    const struct timespec zero = { 0, 0 };

    if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP ||
        !coro__timeout_ok(timeout))
        return coro__complete(-EINVAL);
    /* a signal not blocked here is delivered to its handler instead */
    if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 || !sigismember(&cur, signo))
        return coro__complete(-EINVAL);
    sigemptyset(&set);
    sigaddset(&set, signo);
    if (sigtimedwait(&set, &si, &zero) == signo)
        return coro__complete(signo);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(&signal_ops, -1, NULL, signo, coro__deadline(timeout));
}

/* ---- child processes ---------------------------------------------------------------------------- */

static intptr_t wait_status(const siginfo_t *si)
{
    switch (si->si_code) {
    case CLD_EXITED:
        return (si->si_status & 0xff) << 8;
    case CLD_DUMPED:
        return (si->si_status & 0x7f) | 0x80;
    default:
        return si->si_status & 0x7f;
    }
}

/* arg[0]: the pidfd (from prepare), arg[2]: pid */
static int child_prepare(coro_await_t *aw)
{
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)aw->arg[2].i, 0);
    if (fd < 0)
        return -errno;
    /* seq_cst: as in signal_prepare */
    __atomic_store_n(&aw->arg[0].i, fd, __ATOMIC_SEQ_CST);
    return 0;
}

static bool child_attempt(coro_await_t *aw, intptr_t *res)
{
    siginfo_t si;

    int rc;

    memset(&si, 0, sizeof si);
    /* false only for "not ready": the caller clears the fd's readiness */
    do {
        rc = waitid((idtype_t)P_PIDFD, (id_t)aw->arg[0].i, &si, WEXITED | WNOHANG);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        /* coro_child armed only for a child of ours (its constructor got
         * no ECHILD); ECHILD now means another waiter reaped it: -ESRCH,
         * as io.h promises for a child already reaped */
        *res = errno == ECHILD ? -ESRCH : -errno;
        return true;
    }
    if (si.si_pid == 0)
        return false;       /* not yet */
    *res = wait_status(&si);
    return true;
}

static const struct coro__io_ops child_ops = {
    { "child", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, CORO__IOF_OWNFD, child_attempt,
    child_prepare, fd_fini,
};

coro_await_t coro_child(pid_t pid, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    siginfo_t si;

    if (pid <= 0 || !coro__timeout_ok(timeout))
        return coro__complete(-EINVAL);
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG) < 0) {
        int e = errno;
        if (e == ECHILD && kill(pid, 0) < 0 && errno == ESRCH)
            e = ESRCH;
        return coro__complete(-e);
    }
    if (si.si_pid != 0)
        return coro__complete(wait_status(&si));
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    return coro__io_await(&child_ops, -1, NULL, pid, coro__deadline(timeout));
}
