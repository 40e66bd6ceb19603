/* SPDX-License-Identifier: MIT */
/* private: the first try of the I/O constructors.  coro__rw_now, one read
 * or write that never blocks (sockets with MSG_DONTWAIT, anything else
 * switched to O_NONBLOCK once: coro__set_nonblock), is coro_read's and
 * coro_write's try (lib/io/ops.c) and bufread.c's reads; coro__io_start is
 * the try of the constructors of vec.c, dgram.c and bufread.c, whose ops'
 * attempt() makes the call, with the fd's readiness word read before it
 * and cleared only on EAGAIN. */
#ifndef COROKIT_LIB_IO_IO_TRY_H
#define COROKIT_LIB_IO_IO_TRY_H

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sys.h"
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

/* not a socket: switch it to O_NONBLOCK (once: it stays) and use
 * read/write */
_Static_assert(EWOULDBLOCK == EAGAIN, "a raw call's EWOULDBLOCK is taken for EAGAIN");

__attribute__((noinline, cold, unused))
static intptr_t coro__rw_other(int fd, void *buf, size_t len, bool out)
{
    int rc = coro__set_nonblock(fd);
    if (rc < 0)
        return rc;
    ssize_t n;
    do {
        n = out ? coro__write(fd, buf, len) : coro__read(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n >= 0 ? n : errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* one read or write, never blocking (coro_read's and coro_write's first
 * try, and the other constructors' here): -EAGAIN, -errno or the bytes.
 * Inline in its callers, the rare paths out of line: the call with
 * the fallback inside costs a prologue and an epilogue per operation */
static inline intptr_t coro__rw_now(int fd, void *buf, size_t len, bool out)
{
    for (;;) {
        long n = out ? coro__send_r(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL)
                     : coro__recv_r(fd, buf, len, MSG_DONTWAIT);
        if (CORO__LIKELY(n >= 0))
            return n;
        if (n == -EINTR)
            continue;
        if (CORO__LIKELY(n != -ENOTSOCK))
            return n;   /* EWOULDBLOCK is EAGAIN (asserted above) */
        return coro__rw_other(fd, buf, len, out);
    }
}

/* one read, never blocking, as coro_read's first try */
static inline intptr_t coro__read_now(int fd, void *buf, size_t len)
{
    return coro__rw_now(fd, buf, len, false);
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
