/* SPDX-License-Identifier: MIT */
/* coro_pread and coro_pwrite: a read or write at an offset, on the
 * blocking pool (lib/io/blocking.c), as lib/io/file.c does coro_read of a
 * regular file - epoll cannot wait for a file, and its read blocks in the
 * kernel for as long as the disk takes.
 *
 * TRIED FIRST WITHOUT BLOCKING.  As every I/O constructor, these try the
 * call at once, on the worker - with preadv2 / pwritev2 and RWF_NOWAIT,
 * which the kernel completes only when it needs no wait (the pages are in
 * the page cache, the write needs no block allocation), and otherwise
 * refuses with EAGAIN; a kernel or file system without it says EOPNOTSUPP
 * (or ENOSYS, EINVAL before Linux 4.14).  Only then does the call go to
 * the pool.  So a read of cached data costs one system call and no
 * hand-over, and a read that would wait on the disk waits on a pool
 * thread.  A short result of the try is returned as it is (as pread(2)
 * may return fewer bytes).
 *
 * Awaitable layout: arg[0] fd, arg[1] buffer, arg[2] length, timeout: the
 * offset (a pool call has no timeout of its own: the slot is free).
 * Cancel and .deadline: as every call on the pool, -ECANCELED /
 * -ETIMEDOUT only before the system call starts, and then nothing was read
 * or written.
 */
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io.h"

static intptr_t pread_run(coro_await_t *aw)
{
    ssize_t n;

    do
        n = pread((int)aw->arg[0].i, aw->arg[1].p, (size_t)aw->arg[2].i, (off_t)aw->timeout);
    while (n < 0 && errno == EINTR);
    return n >= 0 ? n : -errno;
}

static intptr_t pwrite_run(coro_await_t *aw)
{
    ssize_t n;

    do
        n = pwrite((int)aw->arg[0].i, aw->arg[1].cp, (size_t)aw->arg[2].i, (off_t)aw->timeout);
    while (n < 0 && errno == EINTR);
    return n >= 0 ? n : -errno;
}

static const struct coro__pool_ops pread_ops = { { "pread", coro__blocking_arm }, pread_run };
static const struct coro__pool_ops pwrite_ops = { { "pwrite", coro__blocking_arm }, pwrite_run };

#ifndef RWF_NOWAIT
# define RWF_NOWAIT 0x00000008
#endif

/* the try on the worker: the bytes, or -EAGAIN when the pool must do it */
static intptr_t try_nowait(int fd, const void *buf, size_t len, off_t offset, bool out)
{
    struct iovec v = { (void *)buf, len };      /* only read from when out */
    ssize_t n;

    do
        n = out ? pwritev2(fd, &v, 1, offset, RWF_NOWAIT) : preadv2(fd, &v, 1, offset, RWF_NOWAIT);
    while (n < 0 && errno == EINTR);
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
        return -EAGAIN;     /* would wait, or no RWF_NOWAIT here: the pool */
    return -errno;
}

static coro_await_t pio(const struct coro__pool_ops *ops, int fd, const void *buf, size_t len,
                        off_t offset)
{
    CORO__IO_KEEP_ERRNO();
    coro_await_t a = { .ops = &ops->base };

    if (fd < 0)
        return coro_ready(-EBADF);
    if ((!buf && len) || len > SSIZE_MAX || offset < 0)
        return coro_ready(-EINVAL);
    if (CORO__UNLIKELY(coro__cancel_due()))
        return coro__complete(-ECANCELED);
    intptr_t n = try_nowait(fd, buf, len, offset, ops == &pwrite_ops);
    if (n != -EAGAIN)
        return coro__complete(n);
    a.arg[0].i = fd;
    a.arg[1].cp = buf;
    a.arg[2].i = (intptr_t)len;
    a.timeout = (int64_t)offset;
    return a;
}

coro_await_t coro_pread(int fd, void *buf, size_t len, off_t offset)
{
    return pio(&pread_ops, fd, buf, len, offset);
}

coro_await_t coro_pwrite(int fd, const void *buf, size_t len, off_t offset)
{
    return pio(&pwrite_ops, fd, buf, len, offset);
}
