/* SPDX-License-Identifier: MIT */
/* echo_server - a TCP echo server: one coroutine per connection.
 *
 *   echo_server PORT [WORKERS] serve on 0.0.0.0:PORT until SIGINT/SIGTERM,
 *                           with WORKERS worker threads (default: one per
 *                           CPU; 0: single-threaded, on main's thread)
 *   echo_server --self-test listen on a loopback port, run 200 clients
 *                           against it, check every byte, exit 0
 *
 * The connection and listener bodies are shared with tests/api/test_io_echo.c,
 * which includes this file with ECHO_NO_MAIN defined. */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* [echo-conn] one connection: read what comes, write it back, until EOF */
struct echo_conn {
    coro_t co;
    int fd;
    ssize_t n;
    char buf[4096];
};

static int echo_conn_body(coro_t *co)
{
    struct echo_conn *c = CORO_SELF(co, struct echo_conn);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_read(c->fd, c->buf, sizeof c->buf, CORO_FOREVER));
        c->n = CORO_RESULT(co);             /* bytes, 0 at EOF, or -errno */
        if (c->n <= 0)
            break;
        CORO_AWAIT(co, coro_write_all(c->fd, c->buf, (size_t)c->n, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            break;
    }
    close(c->fd);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

/* the frame is the connection's own: freed once the scheduler is done with it */
static void echo_conn_free(coro_t *co)
{
    free(CORO_SELF(co, struct echo_conn));
}
/* [/echo-conn] */

/* [echo-listener] accept connections, spawn a job for each */
struct echo_server {
    coro_t co;
    coro_sched_t *s;
    int lfd;
    int fd;
    long accepted;
    long loopback;                          /* of them, from 127.0.0.0/8 */
    struct sockaddr_storage peer;           /* the last client's address */
    socklen_t peerlen;
};

static int echo_server_body(coro_t *co)
{
    struct echo_server *sv = CORO_SELF(co, struct echo_server);
    static const coro_spawn_opts_t opts = { .on_exit = echo_conn_free };
    CORO_BEGIN(co);
    for (;;) {
        sv->peerlen = sizeof sv->peer;      /* in the frame: read when the await completes */
        CORO_AWAIT(co, coro_accept_addr(sv->lfd, (struct sockaddr *)&sv->peer, &sv->peerlen,
                                        CORO_FOREVER));
        sv->fd = (int)CORO_RESULT(co);
        if (sv->fd == -ECANCELED || sv->fd == -EBADF || sv->fd == -EINVAL)
            break;                          /* shutdown, or the listener is gone */
        if (sv->fd < 0) {                   /* -EMFILE ...: breathe, then go on */
            CORO_AWAIT(co, coro_sleep(1000000));
            continue;
        }
        struct echo_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(sv->fd);
            continue;
        }
        c->fd = sv->fd;
        if (coro_spawn(sv->s, &c->co, echo_conn_body, &opts) < 0) {
            close(c->fd);                   /* shutting down: on_exit is not called */
            free(c);
            continue;
        }
        sv->accepted++;
        if (sv->peer.ss_family == AF_INET &&
            (ntohl(((struct sockaddr_in *)&sv->peer)->sin_addr.s_addr) >> 24) == 127)
            sv->loopback++;
    }
    CORO_RETURN(co, sv->accepted);
    CORO_END(co);
}
/* [/echo-listener] */

/* a listening TCP socket on addr:port (port 0 = any); the bound port in *bound */
static int echo_listen(in_addr_t addr, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    socklen_t len = sizeof sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    sa.sin_addr.s_addr = addr;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 65535) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (bound)
        *bound = ntohs(sa.sin_port);
    return fd;
}

#ifndef ECHO_NO_MAIN
/* [stop-on-signal] SIGINT or SIGTERM ends the server: a job per signal
 * sets `quit`, and main's thread waits for it in a job of its own.  In
 * single-threaded mode (WORKERS 0) that wait is what runs the scheduler
 * on main's thread: a sigwait there would leave every job unrun. */
struct stopper {
    coro_t co;
    int signo;
    coro_event_t *quit;
};

static int stopper_body(coro_t *co)
{
    struct stopper *st = CORO_SELF(co, struct stopper);
    CORO_BEGIN(co);
    if (st->signo)
        CORO_AWAIT(co, coro_signal(st->signo, CORO_FOREVER));
    else
        CORO_AWAIT(co, coro_event_wait(st->quit, CORO_FOREVER));
    if (st->signo && CORO_RESULT(co) == st->signo)
        coro_event_set(st->quit);
    CORO_END(co);
}

/* block SIGINT and SIGTERM (before coro_sched_create: its threads inherit
 * the mask), serve until one comes */
static void serve_until_signal(coro_sched_t *s)
{
    static coro_event_t quit;
    static struct stopper sig[2], waiter;

    coro_event_init(&quit);
    sig[0] = (struct stopper){ .signo = SIGINT, .quit = &quit };
    sig[1] = (struct stopper){ .signo = SIGTERM, .quit = &quit };
    waiter = (struct stopper){ .quit = &quit };
    coro_spawn(s, &sig[0].co, stopper_body, NULL);
    coro_spawn(s, &sig[1].co, stopper_body, NULL);
    intptr_t r;
    (void)coro_block_on(s, &waiter.co, stopper_body, NULL, &r);
}
/* [/stop-on-signal] */

/* ---- self-test: clients that check every byte -------------------------------- */
struct client {
    coro_t co;
    int port, fd, id;
    size_t len, got;
    char out[3000], in[3000];
    struct sockaddr_in sa;
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        CORO_RETURN(co, -errno);
    c->sa.sin_family = AF_INET;
    c->sa.sin_port = htons((uint16_t)c->port);
    c->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 5000000000));
    if (CORO_RESULT(co) < 0)
        goto out;
    c->len = 1 + (size_t)(c->id * 37) % sizeof c->out;
    for (size_t i = 0; i < c->len; i++)
        c->out[i] = (char)(c->id + i * 7);
    CORO_AWAIT(co, coro_write_all(c->fd, c->out, c->len, 5000000000));
    if (CORO_RESULT(co) < 0)
        goto out;
    for (c->got = 0; c->got < c->len;) {
        CORO_AWAIT(co, coro_read(c->fd, c->in + c->got, c->len - c->got, 5000000000));
        if (CORO_RESULT(co) <= 0)
            goto out;
        c->got += (size_t)CORO_RESULT(co);
    }
out:
    close(c->fd);
    CORO_RETURN(co, c->got == c->len && memcmp(c->in, c->out, c->len) == 0 ? 0 : -EIO);
    CORO_END(co);
}

static int self_test(void)
{
    enum { N = 200 };
    coro_sched_t *s;
    int port, rc, bad = 0;
    int lfd = echo_listen(htonl(INADDR_LOOPBACK), 0, &port);
    static struct echo_server sv;
    static struct client cl[N];

    if (lfd < 0 || coro_sched_create(&s, NULL) < 0) {
        fprintf(stderr, "echo_server: setup failed\n");
        return 1;
    }
    sv.s = s;
    sv.lfd = lfd;
    coro_spawn(s, &sv.co, echo_server_body, NULL);
    for (int i = 0; i < N; i++) {
        cl[i].port = port;
        cl[i].id = i;
        if ((rc = coro_spawn(s, &cl[i].co, client_body, NULL)) < 0)
            bad++;
    }
    for (int i = 0; i < N; i++) {
        intptr_t r;
        if (coro_join(&cl[i].co, &r) != 0 || r != 0)
            bad++;
    }
    coro_sched_shutdown(s, CORO_CANCEL);    /* ends the accept loop */
    coro_sched_destroy(s);
    close(lfd);
    printf("echo_server self-test: %d clients, %ld accepted (%ld from loopback), %d bad\n", N,
           sv.accepted, sv.loopback, bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;   /* one worker per CPU */
    int port, bound, rc;

    if (argc > 1 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    if ((argc != 2 && argc != 3) || !sample_arg_port(argv[1], &port) ||
        (argc == 3 && !sample_arg_workers(argv[2], &cfg))) {
        fprintf(stderr,
                "usage: %s PORT [WORKERS] | --self-test\n"
                "  PORT 0 takes any free port; WORKERS 0 runs every job on main's thread\n"
                "  (up to %d; default one per CPU)\n",
                argv[0], CORO_MAX_WORKERS);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    static struct echo_server sv;
    coro_sched_t *s;
    int lfd = echo_listen(htonl(INADDR_ANY), port, &bound);
    if (lfd < 0) {
        fprintf(stderr, "echo_server: listen on port %d: %s\n", port, coro_strerror(lfd));
        return 1;
    }
    if ((rc = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "echo_server: coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    /* the port bound (PORT 0: the one the kernel chose), for whoever
     * started us: a script or a test connects there */
    printf("echo_server: listening on port %d, %d worker(s)\n", bound, coro_sched_workers(s));
    fflush(stdout);
    sv.s = s;
    sv.lfd = lfd;
    coro_spawn(s, &sv.co, echo_server_body, NULL);
    serve_until_signal(s);
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    close(lfd);
    return 0;
}
#endif
