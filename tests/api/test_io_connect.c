/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_connect and coro_accept: the errors of a refused connect and of an
 * accept on a socket that does not listen. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fixture_io.h"

/* ---- sockets: accept, connect ------------------------------------------------------------ */

struct conn_try {
    coro_t co;
    int fd, port;
    intptr_t res;
    struct sockaddr_in sa;
};

static int conn_try_body(coro_t *co)
{
    struct conn_try *c = CORO_SELF(co, struct conn_try);
    CORO_BEGIN(co);
    c->sa.sin_family = AF_INET;
    c->sa.sin_port = htons((uint16_t)c->port);
    c->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 5000 * MS));
    c->res = CORO_RESULT(co);
    CORO_END(co);
}

Test(io_connect, connect_and_accept_errors, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int port = 0, lfd = listen_loopback(&port);
        cr_assert_geq(lfd, 0);
        close(lfd);             /* nobody listens there now */
        struct conn_try c = { .fd = socket(AF_INET, SOCK_STREAM, 0), .port = port };
        cr_assert_eq(block_on_r(s, &c.co, conn_try_body, NULL), 0);
        cr_assert_eq(c.res, -ECONNREFUSED, "%s", coro_strerror((int)c.res));
        close(c.fd);
        int notlistening = socket(AF_INET, SOCK_STREAM, 0);
        struct one o = { .op = OP_ACCEPT, .fd = notlistening, .timeout = CORO_FOREVER };
        cr_assert_eq(run_one(s, &o), -EINVAL);
        close(notlistening);
        struct conn_try bad = { .fd = -1, .port = port };
        cr_assert_eq(block_on_r(s, &bad.co, conn_try_body, NULL), 0);
        cr_assert_eq(bad.res, -EBADF);
        /* accept with a timeout, then a real connection */
        lfd = listen_loopback(&port);
        o = (struct one){ .op = OP_ACCEPT, .fd = lfd, .timeout = 20 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        struct conn_try ok = { .fd = socket(AF_INET, SOCK_STREAM, 0), .port = port };
        cr_assert_eq(block_on_r(s, &ok.co, conn_try_body, NULL), 0);
        cr_assert_eq(ok.res, 0);
        o = (struct one){ .op = OP_ACCEPT, .fd = lfd, .timeout = CORO_FOREVER };
        cr_assert_geq(run_one(s, &o), 0);
        close((int)o.res);
        close(ok.fd);
        close(lfd);
        coro_sched_destroy(s);
    }
}
