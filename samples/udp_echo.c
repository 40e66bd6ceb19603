/* SPDX-License-Identifier: MIT */
/* udp_echo - a UDP echo server: every datagram goes back to its sender,
 * with coro_recvfrom and coro_sendto.
 *
 *   udp_echo PORT [WORKERS] echo on 0.0.0.0:PORT until SIGINT/SIGTERM,
 *                           with WORKERS worker threads (default: one per
 *                           CPU; 0: single-threaded, on main's thread)
 *   udp_echo --self-test    echo on a loopback port, send 20 clients x 50
 *                           numbered datagrams at it, check, exit 0
 *
 * One job per socket: with several workers, one socket per worker bound
 * with SO_REUSEPORT (the kernel spreads the senders over them). */
#define _GNU_SOURCE
#include <corokit.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SOCKETS 64

/* [udp-echo] one socket's loop: a datagram in, the same bytes back to
 * whoever sent it */
struct echo {
    coro_t co;
    int fd;
    ssize_t n;
    coro_sockaddr_t from;       /* the sender, filled by coro_recvfrom */
    char buf[65536];            /* the largest UDP datagram fits */
};

static int echo_body(coro_t *co)
{
    struct echo *e = CORO_SELF(co, struct echo);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_recvfrom(e->fd, e->buf, sizeof e->buf, &e->from, CORO_FOREVER));
        e->n = CORO_RESULT(co);
        if (e->n == -ECANCELED || e->n == -EBADF)
            break;
        if (e->n < 0)
            continue;       /* an ICMP error of an earlier answer: go on */
        CORO_AWAIT(co, coro_sendto(e->fd, e->buf, (size_t)e->n, &e->from, CORO_FOREVER));
    }
    CORO_END(co);
}
/* [/udp-echo] */

/* a UDP socket on addr:port (SO_REUSEPORT: several may share it); the
 * port bound in *bound */
static int udp_bind(in_addr_t addr, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = addr };
    socklen_t len = sizeof sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (bound)
        *bound = ntohs(sa.sin_port);
    return fd;
}

/* start n echo jobs on n sockets sharing addr:*port (0: any; the port
 * chosen is written back); 0 or -errno */
static int start_echoes(coro_sched_t *s, struct echo *e, int n, in_addr_t addr, int *port)
{
    for (int i = 0; i < n; i++) {
        e[i].fd = udp_bind(addr, *port, port);
        if (e[i].fd < 0)
            return e[i].fd;
        int rc = coro_spawn(s, &e[i].co, echo_body, NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- self-test --------------------------------------------------------------- */
enum { CLIENTS = 20, DATAGRAMS = 50 };

struct client {
    coro_t co;
    int port, fd, i, tries;
    uint32_t out[2], in[2];     /* client number, sequence */
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    CORO_BEGIN(co);
    for (c->i = 0; c->i < DATAGRAMS; c->i++) {
        c->out[1] = (uint32_t)c->i;
        /* UDP may drop a datagram: send again after a quiet second, three times */
        for (c->tries = 0; c->tries < 3; c->tries++) {
            CORO_AWAIT(co, coro_sendto(c->fd, c->out, sizeof c->out, NULL, 1000000000));
            if (CORO_RESULT(co) != (intptr_t)sizeof c->out)
                CORO_RETURN(co, -EIO);
            CORO_AWAIT(co, coro_recvfrom(c->fd, c->in, sizeof c->in, NULL, 1000000000));
            if (CORO_RESULT(co) == -ETIMEDOUT)
                continue;
            if (CORO_RESULT(co) != (intptr_t)sizeof c->in || memcmp(c->in, c->out, sizeof c->in))
                CORO_RETURN(co, -EIO);
            break;
        }
        if (c->tries == 3)
            CORO_RETURN(co, -ETIMEDOUT);
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static int self_test(void)
{
    static struct echo e[2];
    static struct client cl[CLIENTS];
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    int port = 0, bad = 0;

    cfg.workers = 2;
    if (coro_sched_create(&s, &cfg) < 0 || start_echoes(s, e, 2, htonl(INADDR_LOOPBACK), &port) < 0)
        return 1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    for (int i = 0; i < CLIENTS; i++) {
        cl[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        cl[i].out[0] = (uint32_t)i;
        if (cl[i].fd < 0 || connect(cl[i].fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
            coro_spawn(s, &cl[i].co, client_body, NULL) < 0)
            return 1;
    }
    for (int i = 0; i < CLIENTS; i++) {
        intptr_t r;
        if (coro_join(&cl[i].co, &r) != 0 || r != 0)
            bad++;
        close(cl[i].fd);
    }
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    for (int i = 0; i < 2; i++)
        close(e[i].fd);
    printf("udp_echo self-test: %d clients x %d datagrams, %d bad\n", CLIENTS, DATAGRAMS, bad);
    return bad ? 1 : 0;
}

/* ---- serving until a signal --------------------------------------------------- */
struct stopper {
    coro_t co;
};

static int stopper_body(coro_t *co)
{
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_signal(SIGINT, 100000000));
        if (CORO_RESULT(co) == SIGINT)
            break;
        CORO_AWAIT(co, coro_signal(SIGTERM, 100000000));
        if (CORO_RESULT(co) == SIGTERM || CORO_RESULT(co) == -ECANCELED)
            break;
    }
    CORO_END(co);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s PORT [WORKERS] | --self-test\n", argv[0]);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);     /* before the workers start: they inherit it */

    static struct echo e[MAX_SOCKETS];
    static struct stopper stop;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    int port = atoi(argv[1]);
    if (argc == 3)
        cfg.workers = atoi(argv[2]);
    if (cfg.workers < 0 || coro_sched_create(&s, &cfg) < 0) {
        fprintf(stderr, "udp_echo: cannot start %d workers\n", cfg.workers);
        return 1;
    }
    int n = cfg.workers == CORO_WORKERS_AUTO ? (int)sysconf(_SC_NPROCESSORS_ONLN) : cfg.workers;
    n = n < 1 ? 1 : n > MAX_SOCKETS ? MAX_SOCKETS : n;
    int rc = start_echoes(s, e, n, htonl(INADDR_ANY), &port);
    if (rc < 0) {
        fprintf(stderr, "udp_echo: %s\n", coro_strerror(rc));
        return 1;
    }
    intptr_t r;
    (void)coro_block_on(s, &stop.co, stopper_body, NULL, &r);
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    for (int i = 0; i < n; i++)
        if (e[i].fd > 0)
            close(e[i].fd);
    return 0;
}
