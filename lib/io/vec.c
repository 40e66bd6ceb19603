/* SPDX-License-Identifier: MIT */
/* Vectored and zero-copy transfers: coro_readv, coro_writev,
 * coro_writev_all, coro_sendfile, coro_splice.
 *
 * Each is an fd awaitable of lib/io/ops.c's kind: the constructor tries
 * the call at once (coro__io_start, lib/io/io_try.h), the job parks in
 * its fd's slot only on EAGAIN, and the worker that runs it after a
 * readiness event makes the call again (WHO CALLS, lib/io/fd_wait.c).
 * Sockets go through recvmsg/sendmsg with MSG_DONTWAIT (their flags left
 * alone); any other fd is switched to O_NONBLOCK and goes through
 * readv/writev.
 *
 * WHERE THE STATE LIVES.  coro_writev_all keeps no progress of its own:
 * the caller's iovec array is advanced in place (the entries written are
 * emptied, the first one not finished starts at its first unwritten byte),
 * so after -ETIMEDOUT or -ECANCELED the array says exactly what was not
 * written and a new coro_writev_all over it goes on from there.
 * coro_sendfile keeps its progress in the caller's offset (the kernel
 * advances it) and the awaitable's remaining count.  Awaitable layout:
 * arg[0] the fd waited on (sendfile, splice: the other fd in the high 32
 * bits: fd_wait and the cancel read the low 32), arg[1] the iovec array
 * or the offset, arg[2] a count.
 *
 * SPLICE WAITS ON EITHER SIDE.  splice(2) gets EAGAIN when its input pipe
 * or socket is empty or when its output is full, and says not which.  The
 * attempt asks poll(2) about the side the job waits on: not ready - park
 * there (the EAGAIN clears that side's readiness, as for a read); ready -
 * the other side blocks, and the attempt completes with SWITCH, which
 * splice_arm (the awaitable's own arm, around coro__io_arm) turns into a
 * wait on the other fd in the other direction.  A wait always parks on a
 * side poll found not ready after the EAGAIN, so its edge is still to
 * come; a side found ready is never parked on.  Both sides ready by poll
 * yet EAGAIN (a pipe with room for less than a page) switches a bounded
 * number of times, then completes with -EAGAIN.  A switch rewrites the
 * awaitable's ops and fd while the job is being armed: a coro_cancel that
 * looks at the old side then (lib/io/cancel.c) finds no waiter in that
 * slot, and the park on the new side sees the job's cancel flag under the
 * new slot's lock (fd_wait), which the cancel set before it looked: the
 * cancel is never lost.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io_try.h"

#define FD_LO(a) ((int)(uint32_t)(a))
#define FD_HI(a) ((int)((uint64_t)(a) >> 32))
#define FD_PAIR(lo, hi) ((intptr_t)((uint64_t)(uint32_t)(lo) | (uint64_t)(uint32_t)(hi) << 32))

/* one vectored call: sockets with MSG_DONTWAIT, others O_NONBLOCK */
static intptr_t do_vec(int fd, const struct iovec *iov, int cnt, bool out)
{
    struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt };
    ssize_t n;

    for (;;) {
        n = out ? sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) : recvmsg(fd, &m, MSG_DONTWAIT);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != ENOTSOCK)
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        break;
    }
    int rc = coro__set_nonblock(fd);
    if (rc < 0)
        return rc;
    do
        n = out ? writev(fd, iov, cnt) : readv(fd, iov, cnt);
    while (n < 0 && errno == EINTR);
    return n >= 0 ? n : errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static bool readv_attempt(coro_await_t *aw, intptr_t *res)
{
    intptr_t n = do_vec((int)aw->arg[0].i, aw->arg[1].cp, (int)aw->arg[2].i, false);
    if (n == -EAGAIN)
        return false;
    *res = n;
    return true;
}

static bool writev_attempt(coro_await_t *aw, intptr_t *res)
{
    intptr_t n = do_vec((int)aw->arg[0].i, aw->arg[1].cp, (int)aw->arg[2].i, true);
    if (n == -EAGAIN)
        return false;
    *res = n;
    return true;
}

/* advance the caller's array past n written bytes; arg[1]/arg[2] follow */
static void iov_advance(coro_await_t *aw, size_t n)
{
    struct iovec *v = aw->arg[1].p;
    intptr_t cnt = aw->arg[2].i;

    while (cnt > 0 && (n >= v->iov_len)) {
        n -= v->iov_len;
        v->iov_base = (char *)v->iov_base + v->iov_len;
        v->iov_len = 0;
        v++;
        cnt--;
    }
    if (cnt > 0 && n) {
        v->iov_base = (char *)v->iov_base + n;
        v->iov_len -= n;
    }
    aw->arg[1].p = v;
    aw->arg[2].i = cnt;
}

static bool writev_all_attempt(coro_await_t *aw, intptr_t *res)
{
    for (;;) {
        iov_advance(aw, 0);     /* skip empty entries */
        if (aw->arg[2].i == 0) {
            *res = 0;
            return true;
        }
        int cnt = aw->arg[2].i > IOV_MAX ? IOV_MAX : (int)aw->arg[2].i;
        intptr_t n = do_vec((int)aw->arg[0].i, aw->arg[1].cp, cnt, true);
        if (n == -EAGAIN)
            return false;
        if (n < 0) {
            *res = n;
            return true;
        }
        iov_advance(aw, (size_t)n);
    }
}

static const struct coro__io_ops readv_ops = {
    { "readv", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, readv_attempt, NULL, NULL,
};
static const struct coro__io_ops writev_ops = {
    { "writev", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, writev_attempt, NULL, NULL,
};
static const struct coro__io_ops writev_all_ops = {
    { "writev_all", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, writev_all_attempt, NULL,
    NULL,
};

/* the checks of a vector: -EINVAL for NULL with cnt > 0, a negative cnt,
 * more than IOV_MAX entries (unless all), an entry NULL with a length, or
 * a total past SSIZE_MAX */
static int iov_check(const struct iovec *iov, int cnt, bool all)
{
    size_t total = 0;

    if (cnt < 0 || (!iov && cnt > 0) || (!all && cnt > IOV_MAX))
        return -EINVAL;
    for (int i = 0; i < cnt; i++) {
        if (!iov[i].iov_base && iov[i].iov_len)
            return -EINVAL;
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    return 0;
}

static coro_await_t vec_(const struct coro__io_ops *ops, int fd, const struct iovec *iov, int cnt,
                         int64_t timeout, bool all)
{
    int rc = coro__io_check(fd, timeout);
    if (rc == 0)
        rc = iov_check(iov, cnt, all);
    if (rc < 0)
        return coro__complete(rc);
    return coro__io_start(coro__io_await(ops, fd, iov, cnt, -1), timeout);
}

coro_await_t coro_readv(int fd, const struct iovec *iov, int iovcnt, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return vec_(&readv_ops, fd, iov, iovcnt, timeout, false);
}

coro_await_t coro_writev(int fd, const struct iovec *iov, int iovcnt, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return vec_(&writev_ops, fd, iov, iovcnt, timeout, false);
}

coro_await_t coro_writev_all(int fd, struct iovec *iov, int iovcnt, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return vec_(&writev_all_ops, fd, iov, iovcnt, timeout, true);
}

/* ---- sendfile ------------------------------------------------------------------------ */

/* arg[0]: out | in << 32, arg[1]: the offset (or NULL), arg[2]: bytes left */
static bool sendfile_attempt(coro_await_t *aw, intptr_t *res)
{
    int out = FD_LO(aw->arg[0].i), in = FD_HI(aw->arg[0].i);

    while (aw->arg[2].i > 0) {
        ssize_t n = sendfile(out, in, aw->arg[1].p, (size_t)aw->arg[2].i);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        if (n < 0) {
            *res = -errno;
            return true;
        }
        if (n == 0) {
            *res = -ENODATA;    /* the file ended before count bytes */
            return true;
        }
        aw->arg[2].i -= n;
    }
    *res = 0;
    return true;
}

static const struct coro__io_ops sendfile_ops = {
    { "sendfile", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, sendfile_attempt, NULL, NULL,
};

coro_await_t coro_sendfile(int out_fd, int in_fd, off_t *offset, size_t count, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(out_fd, timeout);

    if (rc == 0 && in_fd < 0)
        rc = -EBADF;
    if (rc == 0 && (count > SSIZE_MAX || (offset && *offset < 0)))
        rc = -EINVAL;
    if (rc == 0 && count > 0)
        rc = coro__set_nonblock(out_fd);    /* sendfile has no per-call flag */
    if (rc < 0)
        return coro__complete(rc);
    return coro__io_start(coro__io_await(&sendfile_ops, FD_PAIR(out_fd, in_fd), offset,
                                         (intptr_t)count, -1), timeout);
}

/* ---- splice --------------------------------------------------------------------------- */

#define SPLICE_SWITCH INTPTR_MIN    /* attempt -> splice_arm: wait on the other side */
#define SPLICE_SWITCHES 8           /* then -EAGAIN (SPLICE WAITS ON EITHER SIDE) */

static bool splice_attempt(coro_await_t *aw, intptr_t *res);
static int splice_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);

static const struct coro__io_ops splice_in_ops = {
    { "splice", splice_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, splice_attempt, NULL, NULL,
};
static const struct coro__io_ops splice_out_ops = {
    { "splice", splice_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, splice_attempt, NULL, NULL,
};

/* arg[0]: the fd waited on | the other << 32, arg[2]: len */
static bool splice_attempt(coro_await_t *aw, intptr_t *res)
{
    bool in_side = coro__io_ops_of(aw) == &splice_in_ops;
    int me = FD_LO(aw->arg[0].i), other = FD_HI(aw->arg[0].i);
    int in = in_side ? me : other, out = in_side ? other : me;
    ssize_t n;

    do
        n = splice(in, NULL, out, NULL, (size_t)aw->arg[2].i, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    while (n < 0 && errno == EINTR);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        *res = n >= 0 ? n : -errno;
        return true;
    }
    struct pollfd p = { .fd = me, .events = in_side ? POLLIN : POLLOUT };
    int r;
    do
        r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return false;       /* this side blocks: park here */
    *res = r < 0 ? -errno : SPLICE_SWITCH;
    return true;
}

static int splice_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    for (int i = 0;; i++) {
        int rc = coro__io_arm(s, job, aw, res);
        if (rc != CORO__ARM_READY || *res != SPLICE_SWITCH)
            return rc;
        if (i == SPLICE_SWITCHES) {
            *res = -EAGAIN;
            return rc;
        }
        /* the job is still ours (READY): nobody else reads aw now */
        bool in_side = coro__io_ops_of(aw) == &splice_in_ops;
        aw->ops = in_side ? &splice_out_ops.base : &splice_in_ops.base;
        aw->arg[0].i = FD_PAIR(FD_HI(aw->arg[0].i), FD_LO(aw->arg[0].i));
    }
}

coro_await_t coro_splice(int fd_in, int fd_out, size_t len, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd_in, timeout);

    if (rc == 0 && fd_out < 0)
        rc = -EBADF;
    if (rc == 0 && len > SSIZE_MAX)
        rc = -EINVAL;
    if (rc == 0)
        rc = coro__set_nonblock(fd_in);
    if (rc == 0)
        rc = coro__set_nonblock(fd_out);
    if (rc < 0)
        return coro__complete(rc);
    coro_await_t a = coro__io_await(&splice_in_ops, FD_PAIR(fd_in, fd_out), NULL, (intptr_t)len, -1);
    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    intptr_t res;
    /* the first try without a snapshot: a SWITCH (the output is full)
     * turns the wait to the output before anything parks */
    for (int i = 0; i <= SPLICE_SWITCHES; i++) {
        if (!splice_attempt(&a, &res))
            break;
        if (res != SPLICE_SWITCH)
            return coro__complete(res);
        a.ops = coro__io_ops_of(&a) == &splice_in_ops ? &splice_out_ops.base : &splice_in_ops.base;
        a.arg[0].i = FD_PAIR(FD_HI(a.arg[0].i), FD_LO(a.arg[0].i));
        if (i == SPLICE_SWITCHES)
            return coro__complete(-EAGAIN);
    }
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    a.timeout = coro__deadline(timeout);
    return a;
}
