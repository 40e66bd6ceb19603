/* SPDX-License-Identifier: MIT */
/* coro_gen_lines_t: the lines of an fd as a generator (include/corokit/
 * gen.h).  Layer 3 (I/O): its body reads with coro_read in a job and with
 * read(2) in plain code; there a non-blocking fd with nothing to read
 * awaits coro_read, so coro_gen_next gives -EWOULDBLOCK and the generator
 * waits for a job's pull, as every body that awaits. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"

static int gen_lines_body(coro_t *co)
{
    coro_gen_lines_t *g = CORO_SELF(co, coro_gen_lines_t);
    char *nl;
    bool ready;

    CORO_BEGIN(co);
    for (;;) {
        nl = memchr(g->buf + g->start + g->scan, '\n', g->end - g->start - g->scan);
        if (nl || (g->eof && g->end > g->start)) {
            g->line = g->buf + g->start;
            if (!nl)
                nl = g->buf + g->end;   /* a last line without '\n': end < cap */
            g->len = (size_t)(nl - g->line);
            g->start = g->len + 1 + (size_t)(g->line - g->buf);
            if (g->start > g->end)
                g->start = g->end;
            *nl = '\0';
            if (g->len > 0 && g->line[g->len - 1] == '\r')
                g->line[--g->len] = '\0';
            g->scan = 0;
            CORO_YIELD_VALUE(co, g->line);
            continue;
        }
        if (g->eof)
            break;
        g->scan = g->end - g->start;
        if (g->start > 0) {     /* keep the partial line at the front */
            memmove(g->buf, g->buf + g->start, g->end - g->start);
            g->end -= g->start;
            g->start = 0;
        }
        if (g->end >= g->cap - 1)
            CORO_RETURN(co, -ENOBUFS);
        /* one byte stays free for the NUL of a last line without '\n'.
         * Plain code reads with read(2) (a regular file too, which
         * coro_read hands to the blocking pool); in a job, or when a
         * non-blocking fd has nothing, coro_read */
        ready = false;
        if (!coro__current_job()) {
            ssize_t n;
            while ((n = read(g->fd, g->buf + g->end, g->cap - 1 - g->end)) < 0 && errno == EINTR)
                ;
            co->result = n < 0 ? -errno : n;
            ready = co->result != -EAGAIN;
        }
        if (!ready)
            CORO_AWAIT(co, coro_read(g->fd, g->buf + g->end, g->cap - 1 - g->end, g->timeout));
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
        if (CORO_RESULT(co) == 0)
            g->eof = 1;
        g->end += (size_t)CORO_RESULT(co);
    }
    CORO_END(co);
}

int coro_gen_lines_init(coro_gen_lines_t *g, int fd, char *buf, size_t cap, int64_t timeout_ns)
{
    if (!g || !buf || cap < 2 || fd < 0 || !coro__timeout_ok(timeout_ns))
        return -EINVAL;
    int rc = coro_gen_init(&g->co, gen_lines_body);
    if (rc < 0)
        return rc;
    g->fd = fd;
    g->buf = buf;
    g->cap = cap;
    g->timeout = timeout_ns;
    return 0;
}
