/* SPDX-License-Identifier: MIT */
/* Datagrams and messages: coro_recvfrom, coro_sendto, coro_recvmsg,
 * coro_sendmsg.
 *
 * fd awaitables of lib/io/ops.c's kind (the call tried at once by
 * coro__io_start, lib/io/io_try.h; the job parks only on EAGAIN), on
 * sockets only: each call carries MSG_DONTWAIT (and MSG_NOSIGNAL to send),
 * so a blocking socket never blocks a worker and keeps its flags.
 *
 * Awaitable layout: arg[0] the fd in its low 32 bits (fd_wait and the
 * cancel read those), for recvfrom / sendto the length above them (a
 * datagram is never longer than INT32_MAX: recvfrom takes a longer buffer
 * as that much, sendto refuses a longer datagram); arg[1] the buffer or
 * the msghdr; arg[2] the coro_sockaddr_t (recvfrom / sendto) or the
 * caller's flags (recvmsg / sendmsg).
 *
 * Descriptors passed with SCM_RIGHTS are new numbers to this process: like
 * accept's, whatever the scheduler knew of an old file under the same
 * number is forgotten (coro__io_forget) before the job sees them.  They
 * arrive close-on-exec (MSG_CMSG_CLOEXEC).
 */
#include <limits.h>
#include <string.h>
#include <sys/socket.h>

#include "io/io_try.h"

#define FD_OF(a) ((int)(uint32_t)(a))
#define LEN_OF(a) ((size_t)((uint64_t)(a) >> 32))

/* send / recv family errors as -errno, EWOULDBLOCK as -EAGAIN */
static intptr_t sys_res(ssize_t n)
{
    if (n >= 0)
        return n;
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* the SCM_RIGHTS fds of a message just received: new numbers */
static void forget_passed(const struct msghdr *m)
{
    coro_sched_t *s = coro_sched_current();
    struct coro__io *io = s ? coro__sched_io(s) : NULL;

    if (!io || !m->msg_control)
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
            coro__io_forget(io, fd);
        }
    }
}

static bool recvfrom_attempt(coro_await_t *aw, intptr_t *res)
{
    coro_sockaddr_t *from = aw->arg[2].p;
    socklen_t l = sizeof from->addr;
    ssize_t n;

    do
        n = recvfrom(FD_OF(aw->arg[0].i), aw->arg[1].p, LEN_OF(aw->arg[0].i), MSG_DONTWAIT,
                     from ? (struct sockaddr *)&from->addr : NULL, from ? &l : NULL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    if (n >= 0 && from)
        from->len = l;
    *res = sys_res(n);
    return true;
}

static bool sendto_attempt(coro_await_t *aw, intptr_t *res)
{
    const coro_sockaddr_t *to = aw->arg[2].cp;
    ssize_t n;

    do
        n = sendto(FD_OF(aw->arg[0].i), aw->arg[1].cp, LEN_OF(aw->arg[0].i),
                   MSG_DONTWAIT | MSG_NOSIGNAL, to ? (const struct sockaddr *)&to->addr : NULL,
                   to ? to->len : 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    *res = sys_res(n);
    return true;
}

static bool recvmsg_attempt(coro_await_t *aw, intptr_t *res)
{
    struct msghdr *m = aw->arg[1].p;
    ssize_t n;

    do
        n = recvmsg(FD_OF(aw->arg[0].i), m, (int)aw->arg[2].i | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    if (n >= 0)
        forget_passed(m);
    *res = sys_res(n);
    return true;
}

static bool sendmsg_attempt(coro_await_t *aw, intptr_t *res)
{
    ssize_t n;

    do
        n = sendmsg(FD_OF(aw->arg[0].i), aw->arg[1].cp,
                    (int)aw->arg[2].i | MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    *res = sys_res(n);
    return true;
}

static const struct coro__io_ops recvfrom_ops = {
    { "recvfrom", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, recvfrom_attempt, NULL, NULL,
};
static const struct coro__io_ops sendto_ops = {
    { "sendto", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, sendto_attempt, NULL, NULL,
};
static const struct coro__io_ops recvmsg_ops = {
    { "recvmsg", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, recvmsg_attempt, NULL, NULL,
};
static const struct coro__io_ops sendmsg_ops = {
    { "sendmsg", coro__io_arm }, CORO__IOK_FD, CORO__DIR_WR, 0, sendmsg_attempt, NULL, NULL,
};

static intptr_t fd_len(int fd, size_t len)
{
    return (intptr_t)((uint64_t)(uint32_t)fd | (uint64_t)len << 32);
}

/* an awaitable of ops over fd, with arg[1] and arg[2] set, started */
static coro_await_t start(const struct coro__io_ops *ops, intptr_t a0, const void *a1,
                          const void *a2, intptr_t flags, int64_t timeout)
{
    coro_await_t a = coro__io_await(ops, a0, a1, flags, -1);
    if (a2)
        a.arg[2].cp = a2;
    return coro__io_start(a, timeout);
}

coro_await_t coro_recvfrom(int fd, void *buf, size_t len, coro_sockaddr_t *from, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd, timeout);

    if (rc == 0 && !buf && len)
        rc = -EINVAL;
    if (rc < 0)
        return coro__complete(rc);
    if (len > INT32_MAX)
        len = INT32_MAX;    /* no datagram is longer: a stream socket reads less */
    return start(&recvfrom_ops, fd_len(fd, len), buf, from, 0, timeout);
}

coro_await_t coro_sendto(int fd, const void *buf, size_t len, const coro_sockaddr_t *to,
                         int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd, timeout);

    if (rc == 0 && ((!buf && len) || (to && to->len > sizeof to->addr)))
        rc = -EINVAL;
    if (rc == 0 && len > INT32_MAX)
        rc = -EMSGSIZE;
    if (rc < 0)
        return coro__complete(rc);
    return start(&sendto_ops, fd_len(fd, len), buf, to, 0, timeout);
}

/* the flags MSG_DONTWAIT and MSG_NOSIGNAL are corokit's; any other is the
 * caller's to give */
coro_await_t coro_recvmsg(int fd, struct msghdr *msg, int flags, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd, timeout);

    if (rc == 0 && (!msg || flags < 0))
        rc = -EINVAL;
    if (rc < 0)
        return coro__complete(rc);
    return start(&recvmsg_ops, fd, msg, NULL, flags, timeout);
}

coro_await_t coro_sendmsg(int fd, const struct msghdr *msg, int flags, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd, timeout);

    if (rc == 0 && (!msg || flags < 0))
        rc = -EINVAL;
    if (rc < 0)
        return coro__complete(rc);
    return start(&sendmsg_ops, fd, msg, NULL, flags, timeout);
}
