/* SPDX-License-Identifier: MIT */
/* The I/O tests' fixture, on the public API: nanoseconds per millisecond,
 * a loop over worker counts 0 (single-threaded), 1 and 4, a loopback
 * listener, and one job that awaits one I/O call (struct one, run_one).
 * Include after tests/fixture.h. */
#ifndef COROKIT_TESTS_FIXTURE_IO_H
#define COROKIT_TESTS_FIXTURE_IO_H

#include "fixture.h"
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000LL

/* w takes 0 (coro_sched_run on the calling thread), 1 and 4 workers */
#define FOR_WORKERS(w) \
    for (int wi__ = 0; wi__ < 3 && ((w) = (const int[]){ 0, 1, 4 }[wi__], 1); wi__++)

/* a TCP listener on a free loopback port: its fd, and the port in *port */
static inline int listen_loopback(int *port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* ---- one awaitable, one job --------------------------------------------------- */

enum op { OP_READ, OP_WRITE, OP_WRITE_ALL, OP_READABLE, OP_WRITABLE, OP_ACCEPT, OP_SLEEP,
          OP_SIGNAL, OP_CHILD };

struct one {
    coro_t co;
    enum op op;
    int fd;
    void *buf;
    size_t len;
    int64_t timeout;
    intptr_t res;
    int64_t elapsed;
    int64_t start;      /* coro_now() when the job began */
    int cpu;
    int wakes;
};

static inline int one_body(coro_t *co)
{
    struct one *o = CORO_SELF(co, struct one);
    int64_t t0;
    CORO_BEGIN(co);
    t0 = coro_now();
    o->elapsed = o->start = t0;
    switch (o->op) {
    case OP_READ: CORO_AWAIT(co, coro_read(o->fd, o->buf, o->len, o->timeout)); break;
    case OP_WRITE: CORO_AWAIT(co, coro_write(o->fd, o->buf, o->len, o->timeout)); break;
    case OP_WRITE_ALL: CORO_AWAIT(co, coro_write_all(o->fd, o->buf, o->len, o->timeout)); break;
    case OP_READABLE: CORO_AWAIT(co, coro_readable(o->fd, o->timeout)); break;
    case OP_WRITABLE: CORO_AWAIT(co, coro_writable(o->fd, o->timeout)); break;
    case OP_ACCEPT: CORO_AWAIT(co, coro_accept(o->fd, o->timeout)); break;
    case OP_SLEEP: CORO_AWAIT(co, coro_sleep(o->timeout)); break;
    case OP_SIGNAL: CORO_AWAIT(co, coro_signal(o->fd, o->timeout)); break;
    case OP_CHILD: CORO_AWAIT(co, coro_child(o->fd, o->timeout)); break;
    }
    o->res = CORO_RESULT(co);
    o->wakes++;
    o->elapsed = coro_now() - o->elapsed;
    o->cpu = sched_getcpu();
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static inline intptr_t run_one(coro_sched_t *s, struct one *o)
{
    cr_assert_eq(block_on_r(s, &o->co, one_body, NULL), 0);
    return o->res;
}

#endif
