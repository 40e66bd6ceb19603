/* SPDX-License-Identifier: MIT */
/* private: the first try shared by the constructors of lib/io/vec.c,
 * dgram.c and bufread.c - the same protocol as coro_read's in
 * lib/io/ops.c (rw_now), for an awaitable whose attempt() does the
 * operation. */
#ifndef COROKIT_LIB_IO_IO_TRY_H
#define COROKIT_LIB_IO_IO_TRY_H

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io.h"

/* a non-socket fd about to be read or written without MSG_DONTWAIT:
 * O_NONBLOCK once (it stays), as lib/io/ops.c does for pipes */
static inline int coro__set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

/* one read, never blocking: sockets with recv(MSG_DONTWAIT), anything
 * else switched to O_NONBLOCK first (as coro_read); -EAGAIN, -errno or
 * the bytes */
static inline intptr_t coro__read_now(int fd, void *buf, size_t len)
{
    ssize_t n;

    for (;;) {
        n = recv(fd, buf, len, MSG_DONTWAIT);
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
        n = read(fd, buf, len);
    while (n < 0 && errno == EINTR);
    return n >= 0 ? n : errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* The constructor's try: `a` is built with ops (arg[0]'s low 32 bits the
 * fd waited on in ops->dir) and no deadline yet.  The call is made
 * whatever the fd's readiness word says, the word read before it (a
 * snapshot, READINESS in lib/io/fd_wait.c); only an EAGAIN clears it, and
 * only if no event came since.  Done: an awaitable completed with the
 * result; would block: -ETIMEDOUT for a timeout of 0, else `a` with its
 * absolute deadline, for coro__io_arm to park. */
static inline coro_await_t coro__io_start(coro_await_t a, int64_t timeout)
{
    const struct coro__io_ops *ops = coro__io_ops_of(&a);
    intptr_t res = 0;

    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    coro_sched_t *s = coro_sched_current();
    struct coro__io *io = s ? coro__sched_io(s) : NULL;
    uint64_t *word = io ? coro__io_readiness_word(io, (int)a.arg[0].i) : NULL;
    uint64_t snap = coro__readiness_load(word);

    if (ops->attempt(&a, &res))
        return coro__complete(res);
    if (word)
        coro__readiness_clear(word, ops->dir, snap);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    a.timeout = coro__deadline(timeout);
    return a;
}

/* the usual checks of an fd constructor: 0 or the error to complete with */
static inline int coro__io_check(int fd, int64_t timeout)
{
    if (fd < 0)
        return -EBADF;
    if (!coro__timeout_ok(timeout))
        return -EINVAL;
    return 0;
}

#endif
