/* SPDX-License-Identifier: MIT */
/* Reads and writes of regular files and block devices on the blocking pool.
 *
 * epoll cannot wait for a regular file: it is always "ready", and a read
 * or write of it blocks in the kernel for as long as the disk takes.  So
 * coro_read, coro_write and coro_write_all, when their fd is a regular
 * file or a block device, do the system call on a thread of the blocking
 * pool (lib/io/blocking.c) instead of on the worker: the job is suspended
 * meanwhile and resumes with the same result as read(2) / write(2) - the
 * bytes, 0 at end of file, or -errno - on a worker its mask allows.
 *
 * THE KIND OF AN FD is found once, by fstat, and kept per fd number in
 * a process-wide table (fds are process-wide) of bytes: UNKNOWN, POLL
 * (anything epoll can wait for: the caller goes on as before, one load
 * per call) or FILE.  fd numbers are reused after close(2): a FILE entry
 * is checked again by the pool thread (fstat, off the worker) before the
 * call; if the fd is no longer a file it is done without blocking and, if
 * it would block, waits on poll(2) on that pool thread (up to the call's
 * timeout), and the entry goes back to UNKNOWN.  A stale POLL entry (a
 * socket's number reused by open(2) without coro_close) makes the read
 * run on the worker, as for any fd epoll can wait for.  fds beyond the table
 * are looked at with fstat at every call.
 *
 * Awaitable layout: arg[0] fd, arg[1] buffer, arg[2] length, timeout:
 * the relative timeout (only for the stale case above) times 4 plus the
 * operation (OP_*).  Cancel and .deadline: as every call on
 * the pool, -ECANCELED / -ETIMEDOUT only before the system call starts,
 * and then no byte was read or written.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"

#define KINDS CORO__FD_KINDS
#define kinds coro__fd_kinds
enum { K_UNKNOWN, K_POLL = CORO__FD_POLL, K_FILE };

/* atomic bytes, relaxed: a kind is a hint that the pool checks again
 * (coro__file_op in io/io.h reads it inline) */
uint8_t coro__fd_kinds[KINDS];

static int file_kind(int fd)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return -errno;
    return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) ? K_FILE : K_POLL;
}

enum { OP_READ, OP_WRITE, OP_WRITE_ALL };  /* coro__file_op's op */

/* fd is not a file any more (its number was reused): the operation
 * without blocking, waiting for readiness on poll(2) here (a pool thread)
 * up to timeout ns (-1 = none) */
static intptr_t stale_rw(int fd, char *buf, size_t len, int op, int64_t timeout)
{
    int64_t dl = coro__deadline(timeout);     /* saturating: too far is none */
    size_t done = 0;

    for (;;) {
        ssize_t n = op == OP_READ ? read(fd, buf + done, len - done)
                                  : write(fd, buf + done, len - done);
        if (n >= 0) {
            done += (size_t)n;
            if (op != OP_WRITE_ALL || done == len)
                return op == OP_WRITE_ALL ? 0 : n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if (dl >= 0 && coro__now() >= dl)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = op == OP_READ ? POLLIN : POLLOUT };
        int64_t left = dl < 0 ? -1 : (dl - coro__now()) / 1000000 + 1;
        int ms = left > INT_MAX ? INT_MAX : (int)left;
        if (poll(&p, 1, ms) < 0 && errno != EINTR)
            return -errno;
    }
}

static intptr_t file_run(coro_await_t *aw)
{
    int fd = (int)aw->arg[0].i;
    char *buf = aw->arg[1].p;
    size_t len = (size_t)aw->arg[2].i;
    int op = (int)(aw->timeout & 3);
    int64_t timeout = (aw->timeout - op) / 4;
    int k = file_kind(fd);
    ssize_t n;

    if (k < 0)
        return k;
    if (k != K_FILE) {
        if (fd < KINDS)
            __atomic_store_n(&kinds[fd], K_UNKNOWN, __ATOMIC_RELAXED);
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
            return -errno;
        if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -errno;
        return stale_rw(fd, buf, len, op, timeout);
    }
    if (op == OP_READ) {
        do
            n = read(fd, buf, len);
        while (n < 0 && errno == EINTR);
        return n >= 0 ? n : -errno;
    }
    for (size_t done = 0;;) {
        n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return done && op == OP_WRITE ? (intptr_t)done : -errno;
        done += (size_t)n;
        if (op == OP_WRITE)
            return n;
        if (done == len || n == 0)
            return done == len ? 0 : -EIO;
    }
}

static const struct coro__pool_ops read_ops = { { "file_read", coro__blocking_arm }, file_run };
static const struct coro__pool_ops write_ops = { { "file_write", coro__blocking_arm },
                                                 file_run };

bool coro__file_op_(int fd, const void *buf, size_t len, int64_t timeout, int op,
                   coro_await_t *a)
{
    int k = fd < KINDS ? __atomic_load_n(&kinds[fd], __ATOMIC_RELAXED) : K_UNKNOWN;

    if (k == K_POLL)
        return false;
    if (k == K_UNKNOWN) {
        k = file_kind(fd);
        if (k < 0)
            return false;       /* the caller's own call reports it (-EBADF ...) */
        if (fd < KINDS)
            __atomic_store_n(&kinds[fd], (uint8_t)k, __ATOMIC_RELAXED);
        if (k == K_POLL)
            return false;
    }
    a->ops = op == OP_READ ? &read_ops.base : &write_ops.base;
    a->arg[0].i = fd;
    a->arg[1].cp = buf;
    a->arg[2].i = (intptr_t)len;
    if (timeout > INT64_MAX / 4)
        timeout = -1;
    a->timeout = timeout * 4 + op;  /* both in one slot: timeout = (t - op) / 4 */
    return true;
}
