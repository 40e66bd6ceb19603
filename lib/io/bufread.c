/* SPDX-License-Identifier: MIT */
/* Exact and buffered reads: coro_read_exact and coro_bufreader_t.
 *
 * Both are fd awaitables of lib/io/ops.c's kind (tried at once by
 * coro__io_start, lib/io/io_try.h; parked only on EAGAIN), whose attempt
 * reads as often as the fd gives data.
 *
 * NOTHING READ IS LOST.  A buffered reader keeps every byte it read in
 * the caller's buffer until a result hands it over: a read that ends in
 * -ETIMEDOUT, -ECANCELED or an error consumes nothing, and the next call
 * finds the bytes there.  A record is handed over as a pointer into the
 * buffer (no copy); the buffer is compacted (memmove of what is left to
 * its start) only when a read needs the room at its end, so a record
 * stays where it was handed over until the next call.  The bound: no
 * record longer than the buffer is assembled - -EMSGSIZE hands over a full
 * buffer without a delimiter, and the next call goes on with the rest.
 *
 * coro_read_exact has no buffer of its own: its progress is in the
 * awaitable (arg[1] the next byte's address, arg[2] the bytes still
 * wanted, bit 32 of arg[0]: some byte came, so an end is -EPIPE, not 0).
 * A reader's awaitable: arg[0] the fd, arg[1] the reader.
 */
#include <string.h>

#include "io/io_try.h"

/* ---- read_exact ----------------------------------------------------------- */

#define SOME_READ ((uint64_t)1 << 32)
#define LEN_SHIFT 33
#define EXACT_MAX (((size_t)1 << 30) - 1)   /* the length fits in arg[0]'s bits 33..62 */

static bool exact_attempt(coro_await_t *aw, intptr_t *res)
{
    uint64_t a0 = (uint64_t)aw->arg[0].i;
    int fd = (int)(uint32_t)a0;

    while (aw->arg[2].i > 0) {
        intptr_t n = coro__read_now(fd, aw->arg[1].p, (size_t)aw->arg[2].i);
        if (n == -EAGAIN)
            return false;
        if (n <= 0) {
            *res = n < 0 ? n : (a0 & SOME_READ) ? -EPIPE : 0;
            return true;
        }
        a0 |= SOME_READ;
        aw->arg[0].i = (intptr_t)a0;
        aw->arg[1].p = (char *)aw->arg[1].p + n;
        aw->arg[2].i -= n;
    }
    *res = (intptr_t)(a0 >> LEN_SHIFT);
    return true;
}

static const struct coro__io_ops exact_ops = {
    { "read_exact", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, exact_attempt, NULL, NULL,
};

coro_await_t coro_read_exact(int fd, void *buf, size_t len, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    int rc = coro__io_check(fd, timeout);

    if (rc == 0 && ((!buf && len) || len > EXACT_MAX))
        rc = -EINVAL;
    if (rc < 0)
        return coro__complete(rc);
    if (len == 0)
        return coro__complete(0);
    intptr_t a0 = (intptr_t)((uint64_t)(uint32_t)fd | (uint64_t)len << LEN_SHIFT);
    return coro__io_start(coro__io_await(&exact_ops, a0, buf, (intptr_t)len, -1), timeout);
}

/* ---- the buffered reader ---------------------------------------------------- */

int coro_bufreader_init(coro_bufreader_t *r, int fd, void *buf, size_t cap)
{
    if (!r || !buf || cap == 0 || cap > SSIZE_MAX)
        return -EINVAL;
    if (fd < 0)
        return -EBADF;
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->buf = buf;
    r->cap = cap;
    r->delim = -1;
    return 0;
}

size_t coro_bufreader_buffered(const coro_bufreader_t *r)
{
    return r ? r->end - r->start : 0;
}

/* hand over the first n buffered bytes */
static intptr_t take(coro_bufreader_t *r, size_t n)
{
    *r->out = r->buf + r->start;
    r->start += n;
    r->scanned = 0;
    if (r->start == r->end)
        r->start = r->end = 0;      /* empty: the next read starts at the front */
    return (intptr_t)n;
}

/* the record is in the buffer: true with *res (delim >= 0: until delim;
 * else r->want bytes) */
static bool br_complete(coro_bufreader_t *r, intptr_t *res)
{
    size_t have = r->end - r->start;

    if (r->delim < 0) {
        if (have >= r->want) {
            *res = take(r, r->want);
            return true;
        }
    } else {
        const char *p = memchr(r->buf + r->start + r->scanned, r->delim, have - r->scanned);
        if (p) {
            *res = take(r, (size_t)(p - (r->buf + r->start)) + 1);
            return true;
        }
        r->scanned = have;
        if (have == r->cap) {
            take(r, have);      /* no delimiter in a full buffer */
            *res = -EMSGSIZE;
            return true;
        }
    }
    if (r->eof) {
        if (have == 0)
            *res = 0;
        else
            *res = r->delim < 0 ? -EPIPE : take(r, have);
        return true;
    }
    return false;
}

static bool reader_attempt(coro_await_t *aw, intptr_t *res)
{
    coro_bufreader_t *r = aw->arg[1].p;

    for (;;) {
        if (br_complete(r, res))
            return true;
        if (r->end == r->cap) {     /* room at the end: move what is left to the front */
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        intptr_t n = coro__read_now(r->fd, r->buf + r->end, r->cap - r->end);
        if (n == -EAGAIN)
            return false;
        if (n < 0) {
            *res = n;
            return true;
        }
        if (n == 0)
            r->eof = 1;
        r->end += (size_t)n;
    }
}

static const struct coro__io_ops reader_ops = {
    { "bufreader", coro__io_arm }, CORO__IOK_FD, CORO__DIR_RD, 0, reader_attempt, NULL, NULL,
};

static coro_await_t reader_start(coro_bufreader_t *r, int delim, size_t want, const char **out,
                                 int64_t timeout)
{
    if (!r || !out || !r->buf || !coro__timeout_ok(timeout))
        return coro__complete(-EINVAL);
    if (r->fd < 0)
        return coro__complete(-EBADF);
    if (delim != r->delim)
        r->scanned = 0;
    r->delim = delim;
    r->want = want;
    r->out = out;
    return coro__io_start(coro__io_await(&reader_ops, r->fd, r, 0, -1), timeout);
}

coro_await_t coro_bufreader_until(coro_bufreader_t *r, int delim, const char **line,
                                  int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    if (delim < 0 || delim > 255)
        return coro__complete(-EINVAL);
    return reader_start(r, delim, 0, line, timeout);
}

coro_await_t coro_bufreader_line(coro_bufreader_t *r, const char **line, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    return reader_start(r, '\n', 0, line, timeout);
}

coro_await_t coro_bufreader_exact(coro_bufreader_t *r, size_t n, const char **data,
                                  int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    if (!r || n == 0 || n > r->cap)
        return coro__complete(-EINVAL);
    return reader_start(r, -1, n, data, timeout);
}
