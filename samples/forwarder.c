/* SPDX-License-Identifier: MIT */
/* forwarder - a TCP forwarder: every connection accepted on a local port
 * is connected to one upstream HOST:PORT and bytes are copied both ways.
 * docs/recipes.md, "A TCP forwarder", walks through it.
 *
 *   forwarder [-b ADDR] [-i IDLE_MS] [-d DRAIN_MS] [-w WORKERS] PORT HOST:PORT
 *       listen on ADDR:PORT (default 127.0.0.1; PORT 0 = any free port,
 *       printed), forward to HOST:PORT.  A connection that moves no byte
 *       in either direction for IDLE_MS (default 60,000) is closed both
 *       ways.  SIGINT or SIGTERM: stop accepting, let the open connections
 *       finish for up to DRAIN_MS (default 5,000), cancel the rest, exit 0.
 *       WORKERS: worker threads (default one per CPU; 0 = main's thread).
 *   forwarder --self-test
 *       an echo server, the forwarder in front of it and three clients in
 *       this process: a half-close, an idle connection, and SIGINT (raised
 *       by the third client) while a connection is open; exits 0 if each
 *       saw what it should.
 *
 * The shape: one acceptor job; per connection one block of memory with
 * three frames - an opener job that connects upstream, then two pump jobs,
 * one per direction.  The last of the three to finish closes both sockets
 * and frees the block (on_exit).  A pump that reads the end of its stream
 * shuts down the writing side of the other socket and ends: the other
 * direction goes on (half-close).  A pump that finds the connection idle,
 * or fails, cancels its twin. */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000LL

/* what every connection shares: set before the first spawn, read-only after */
struct fwd {
    coro_sched_t *s;
    int lfd;
    struct sockaddr_storage up;     /* the upstream address */
    socklen_t uplen;
    int64_t idle_ns, drain_ns;
    atomic_int conns;               /* connections open now */
};

struct conn;

/* [pump] one direction of a connection */
struct pump {
    coro_t co;
    struct conn *c;
    struct pump *twin;              /* the other direction */
    int from, to;
    ssize_t n;
    char buf[16384];
};

struct conn {
    coro_t co;                      /* the opener's frame */
    struct pump up, down;           /* client -> upstream, upstream -> client */
    struct fwd *f;
    int client, upstream;
    atomic_int refs;                /* frames whose job has not finished */
    /* when a byte last moved, either way (coro_now()): both pumps write
     * it, and each reads it to tell "my direction is quiet" from "the
     * connection is idle".  Relaxed: a value a few nanoseconds old only
     * moves the decision by as much. */
    _Atomic int64_t last;
};

static void conn_touch(struct conn *c)
{
    atomic_store_explicit(&c->last, coro_now(), memory_order_relaxed);
}

/* the time left before c counts as idle (<= 0: it is idle) */
static int64_t conn_idle_in(const struct conn *c)
{
    return atomic_load_explicit(&c->last, memory_order_relaxed) + c->f->idle_ns - coro_now();
}

static int pump_body(coro_t *co)
{
    struct pump *p = CORO_SELF(co, struct pump);
    struct conn *c = p->c;
    int64_t left;
    CORO_BEGIN(co);
    for (;;) {
        /* the read waits at most until the connection would be idle; a
         * timeout while the other direction moved bytes just waits again */
        if ((left = conn_idle_in(c)) <= 0)
            break;
        CORO_AWAIT(co, coro_read(p->from, p->buf, sizeof p->buf, left));
        p->n = CORO_RESULT(co);
        if (p->n == -ETIMEDOUT)
            continue;
        if (p->n == 0) {
            /* half-close: the source is done sending; pass the end on
             * and leave the other direction running */
            shutdown(p->to, SHUT_WR);
            CORO_RETURN(co, 0);
        }
        if (p->n < 0)               /* reset, cancelled (shutdown, twin) ... */
            break;
        conn_touch(c);
        /* a peer that reads nothing for the idle time is idle too */
        CORO_AWAIT(co, coro_write_all(p->to, p->buf, (size_t)p->n, c->f->idle_ns));
        if (CORO_RESULT(co) < 0)
            break;
        conn_touch(c);
    }
    /* idle, or failed: end both directions (cancelling a job that has
     * finished does nothing); the last frame's on_exit closes the sockets */
    coro_cancel(&p->twin->co);
    CORO_RETURN(co, 0);
    CORO_END(co);
}
/* [/pump] */

/* [conn-release] on_exit of all three frames: the last one closes both
 * sockets (close(2): corokit forgets fds that come from coro_accept and
 * that coro_connect started on) and frees the block */
static void conn_release(struct conn *c)
{
    /* seq_cst (acq_rel would do): the last one to drop its reference
     * sees what the other frames wrote before they dropped theirs */
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    close(c->client);
    if (c->upstream >= 0)
        close(c->upstream);
    atomic_fetch_sub(&c->f->conns, 1);
    free(c);
}

static void opener_exit(coro_t *co)
{
    conn_release(CORO_SELF(co, struct conn));
}

static void pump_exit(coro_t *co)
{
    conn_release(CORO_SELF(co, struct pump)->c);
}
/* [/conn-release] */

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* [opener] connect upstream, then start both pumps */
static int opener_body(coro_t *co)
{
    struct conn *c = CORO_SELF(co, struct conn);
    static const coro_spawn_opts_t pump_opts = { .on_exit = pump_exit };
    CORO_BEGIN(co);
    c->upstream = socket(c->f->up.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->upstream < 0)
        CORO_RETURN(co, -errno);
    CORO_AWAIT(co, coro_connect(c->upstream, (struct sockaddr *)&c->f->up, c->f->uplen,
                                c->f->idle_ns));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, CORO_RESULT(co));   /* refused, timed out, cancelled */
    nodelay(c->upstream);
    conn_touch(c);
    c->up = (struct pump){ .c = c, .twin = &c->down, .from = c->client, .to = c->upstream };
    c->down = (struct pump){ .c = c, .twin = &c->up, .from = c->upstream, .to = c->client };
    /* a reference per pump before its spawn: a pump may finish before
     * the next line runs */
    atomic_fetch_add(&c->refs, 1);
    if (coro_spawn(c->f->s, &c->up.co, pump_body, &pump_opts) < 0) {
        atomic_fetch_sub(&c->refs, 1);      /* shutting down: close */
        CORO_RETURN(co, -ESHUTDOWN);
    }
    atomic_fetch_add(&c->refs, 1);
    if (coro_spawn(c->f->s, &c->down.co, pump_body, &pump_opts) < 0) {
        atomic_fetch_sub(&c->refs, 1);
        coro_cancel(&c->up.co);             /* its twin never ran: stop it too */
    }
    CORO_END(co);
}
/* [/opener] */

/* [acceptor] */
struct acceptor {
    coro_t co;
    struct fwd *f;
    int fd;
};

static int acceptor_body(coro_t *co)
{
    struct acceptor *a = CORO_SELF(co, struct acceptor);
    static const coro_spawn_opts_t opener_opts = { .on_exit = opener_exit };
    struct conn *c;
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(a->f->lfd, CORO_FOREVER));
        a->fd = (int)CORO_RESULT(co);
        if (a->fd == -ECANCELED)
            break;                          /* SIGINT: stop accepting */
        if (a->fd < 0) {                    /* out of fds, a connection aborted ... */
            CORO_AWAIT(co, coro_sleep(10 * MS));
            continue;
        }
        nodelay(a->fd);
        if (!(c = calloc(1, sizeof *c))) {
            close(a->fd);
            continue;
        }
        c->f = a->f;
        c->client = a->fd;
        c->upstream = -1;
        atomic_init(&c->refs, 1);
        atomic_fetch_add(&a->f->conns, 1);
        if (coro_spawn(a->f->s, &c->co, opener_body, &opener_opts) < 0) {
            atomic_fetch_sub(&a->f->conns, 1);
            close(a->fd);
            free(c);
        }
    }
    /* coro_close, not close(2): this job waited on the listener, so the
     * scheduler knows the fd and must forget it */
    coro_close(NULL, a->f->lfd);
    CORO_END(co);
}
/* [/acceptor] */

/* [stop-on-signal] one job per signal (an await takes one signal number,
 * and a select has no signal branch); the first to fire sets `quit` */
struct watcher {
    coro_t co;
    int signo;
    coro_event_t *quit;
    atomic_int *fired;
};

static int watcher_body(coro_t *co)
{
    struct watcher *w = CORO_SELF(co, struct watcher);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_signal(w->signo, CORO_FOREVER));
    if (CORO_RESULT(co) == w->signo) {
        int none = 0;
        atomic_compare_exchange_strong(w->fired, &none, w->signo);
        coro_event_set(w->quit);
    }
    CORO_END(co);
}

struct waiter {
    coro_t co;
    coro_event_t *quit;
};

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(w->quit, CORO_FOREVER));
    CORO_END(co);
}

static struct acceptor acc;
static struct watcher sig[2];
static struct waiter main_wait;
static coro_event_t quit;
static atomic_int fired;

/* start accepting on f->lfd and watching for SIGINT and SIGTERM */
static int serve_start(struct fwd *f)
{
    int rc;

    coro_event_init(&quit);
    acc = (struct acceptor){ .f = f };
    sig[0] = (struct watcher){ .signo = SIGINT, .quit = &quit, .fired = &fired };
    sig[1] = (struct watcher){ .signo = SIGTERM, .quit = &quit, .fired = &fired };
    if ((rc = coro_spawn(f->s, &acc.co, acceptor_body, NULL)) < 0 ||
        (rc = coro_spawn(f->s, &sig[0].co, watcher_body, NULL)) < 0 ||
        (rc = coro_spawn(f->s, &sig[1].co, watcher_body, NULL)) < 0)
        return rc;
    return 0;
}

/* serve until SIGINT or SIGTERM, then shut down within f->drain_ns and
 * destroy the scheduler.  0 when every connection ended by itself, 1
 * when some were cancelled, -errno. */
static int serve_until_signal(struct fwd *f)
{
    int rc;

    /* with WORKERS 0 this join is what runs the jobs, on main's thread */
    main_wait = (struct waiter){ .quit = &quit };
    (void)coro_block_on(f->s, &main_wait.co, waiter_body, NULL, &(intptr_t){0});
    /* stop accepting: what was accepted runs on; the watchers go too, so
     * that the drain below waits for connections only */
    coro_cancel(&acc.co);
    coro_cancel(&sig[0].co);
    coro_cancel(&sig[1].co);
    printf("forwarder: %s: %d connection(s) open, draining for up to %lld ms\n",
           strsignal(atomic_load(&fired)), atomic_load(&f->conns), (long long)(f->drain_ns / MS));
    fflush(stdout);
    /* drain up to the bound, then cancel what is left: each pump's pending
     * await ends with -ECANCELED, it cancels its twin, the last frame
     * closes the sockets */
    rc = coro_sched_shutdown_timeout(f->s, f->drain_ns);
    if (rc == -ETIMEDOUT)
        printf("forwarder: cancelled the connections still open after %lld ms\n",
               (long long)(f->drain_ns / MS));
    else if (rc == 0)
        printf("forwarder: every connection ended\n");
    coro_sched_destroy(f->s);
    coro_event_destroy(&quit);
    return rc == -ETIMEDOUT ? 1 : rc;
}
/* [/stop-on-signal] */

static int listen_on(const char *addr, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    socklen_t len = sizeof sa;
    int one = 1, fd;

    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return -EINVAL;
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

/* HOST:PORT (or [V6]:PORT) to f->up, with getaddrinfo: once, at start, on
 * main's thread (in a job it would be a coro_blocking call) */
static int resolve(const char *hostport, struct fwd *f)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
    size_t hl;

    if (!colon || (hl = (size_t)(colon - hostport)) == 0 || hl >= sizeof host)
        return -EINVAL;
    memcpy(host, hostport, hl);
    host[hl] = 0;
    if (host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return -ENOENT;
    memcpy(&f->up, res->ai_addr, res->ai_addrlen);
    f->uplen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* block SIGINT and SIGTERM in every thread - before coro_sched_create,
 * whose threads inherit the mask - so that coro_signal can take them;
 * a forwarder writes to sockets only (MSG_NOSIGNAL), SIGPIPE cannot come */
static void block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* ---- self-test: an echo server and three clients, on a scheduler of their own ---- */

/* the echo server: "hi\n" at once, then everything it reads, sent back
 * only after the client's end of stream: a reply that needs the forwarder
 * to keep one direction open after the other closed */
struct echo {
    coro_t co;
    int fd;
    size_t have;
    char buf[4096];
};

static int echo_body(coro_t *co)
{
    struct echo *e = CORO_SELF(co, struct echo);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_write_all(e->fd, "hi\n", 3, 5000 * MS));
    while (e->have < sizeof e->buf) {
        CORO_AWAIT(co, coro_read(e->fd, e->buf + e->have, sizeof e->buf - e->have, CORO_FOREVER));
        if (CORO_RESULT(co) <= 0)
            break;
        e->have += (size_t)CORO_RESULT(co);
    }
    if (CORO_RESULT(co) == 0)
        CORO_AWAIT(co, coro_write_all(e->fd, e->buf, e->have, 5000 * MS));
    close(e->fd);
    CORO_END(co);
}

struct echo_server {
    coro_t co;
    int lfd;
    struct echo *e;
};

static int echo_server_body(coro_t *co)
{
    struct echo_server *sv = CORO_SELF(co, struct echo_server);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(sv->lfd, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            break;
        sv->e = coro_frame_alloc(coro_sched_current(), sizeof *sv->e);
        if (!sv->e) {
            close((int)CORO_RESULT(co));
            continue;
        }
        sv->e->fd = (int)CORO_RESULT(co);
        if (coro_spawn(coro_sched_current(), &sv->e->co, echo_body, NULL) < 0) {
            close(sv->e->fd);
            coro_frame_free(sv->e);
        }
    }
    coro_close(NULL, sv->lfd);
    CORO_END(co);
}

enum { HALF_CLOSE, IDLE, OPEN_AT_SIGINT };

struct client {
    coro_t co;
    int kind, port, fd;
    int64_t t0;
    size_t got;
    struct sockaddr_in sa;
    char buf[64];
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    static const char msg[] = "hello, then my end";
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    c->sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    c->t0 = coro_now();
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 5000 * MS));
    if (CORO_RESULT(co) < 0)
        goto fail;
    if (c->kind == HALF_CLOSE) {
        CORO_AWAIT(co, coro_write_all(c->fd, msg, sizeof msg - 1, 5000 * MS));
        if (CORO_RESULT(co) < 0)
            goto fail;
        shutdown(c->fd, SHUT_WR);
    }
    if (c->kind == OPEN_AT_SIGINT) {
        /* the banner proves the connection reaches the server; then the
         * forwarder gets SIGINT with this connection open */
        for (c->got = 0; c->got < 3;) {
            CORO_AWAIT(co, coro_read(c->fd, c->buf + c->got, 3 - c->got, 5000 * MS));
            if (CORO_RESULT(co) <= 0)
                goto fail;
            c->got += (size_t)CORO_RESULT(co);
        }
        kill(getpid(), SIGINT);
    }
    /* read to the end: the forwarder must close (or pass the server's end) */
    for (;;) {
        CORO_AWAIT(co, coro_read(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got, 10000 * MS));
        if (CORO_RESULT(co) <= 0)
            break;
        c->got += (size_t)CORO_RESULT(co);
    }
    if (CORO_RESULT(co) < 0)
        goto fail;
    c->buf[c->got] = 0;
    close(c->fd);
    if (c->kind == HALF_CLOSE && strcmp(c->buf, "hi\nhello, then my end") != 0)
        CORO_RETURN(co, -EPROTO);
    if (c->kind == IDLE && (c->got != 3 || coro_now() - c->t0 < 200 * MS))
        CORO_RETURN(co, -EPROTO);   /* closed too early, or got more than the banner */
    CORO_RETURN(co, 0);
fail:
    close(c->fd);
    CORO_RETURN(co, -EIO);
    CORO_END(co);
}

static int self_test(void)
{
    static struct fwd f = { .idle_ns = 200 * MS, .drain_ns = 100 * MS };
    static struct echo_server sv;
    static struct client cl[3];
    coro_sched_t *test;
    int port, eport, bad = 0;

    block_signals();
    if ((sv.lfd = listen_on("127.0.0.1", 0, &eport)) < 0 ||
        (f.lfd = listen_on("127.0.0.1", 0, &port)) < 0)
        return 1;
    struct sockaddr_in up = { .sin_family = AF_INET, .sin_port = htons((uint16_t)eport),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    memcpy(&f.up, &up, sizeof up);
    f.uplen = sizeof up;
    if (coro_sched_create(&test, NULL) < 0 || coro_sched_create(&f.s, NULL) < 0)
        return 1;
    coro_spawn(test, &sv.co, echo_server_body, NULL);
    if (serve_start(&f) < 0)
        return 1;
    /* the half-close and the idle client first; the third raises SIGINT */
    for (int i = 0; i < 2; i++) {
        cl[i] = (struct client){ .kind = i, .port = port };
        coro_spawn(test, &cl[i].co, client_body, NULL);
    }
    for (int i = 0; i < 2; i++) {
        intptr_t res = 0;
        if (coro_join(&cl[i].co, &res) != 0 || res != 0)
            bad |= 1 << i;
    }
    cl[2] = (struct client){ .kind = OPEN_AT_SIGINT, .port = port };
    coro_spawn(test, &cl[2].co, client_body, NULL);
    int rc = serve_until_signal(&f);        /* returns after the SIGINT */
    intptr_t res2 = 0;
    if (coro_join(&cl[2].co, &res2) != 0 || res2 != 0)
        bad |= 4;
    coro_sched_shutdown(test, CORO_CANCEL);
    coro_sched_destroy(test);
    printf("forwarder self-test: half-close %s, idle close %s, SIGINT with a connection "
           "open %s (serve: %d)\n", bad & 1 ? "FAILED" : "ok", bad & 2 ? "FAILED" : "ok",
           bad & 4 ? "FAILED" : "ok", rc);
    /* serve gives 1 when it cancelled the open connection, 0 if that one
     * ended by itself first (its idle time passed: a very slow machine) */
    return bad || rc < 0;
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-b ADDR] [-i IDLE_MS] [-d DRAIN_MS] [-w WORKERS] PORT HOST:PORT\n"
                    "       %s --self-test\n", prog, prog);
    exit(2);
}

int main(int argc, char **argv)
{
    static struct fwd f = { .idle_ns = 60000 * MS, .drain_ns = 5000 * MS };
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    const char *bind_addr = "127.0.0.1";
    long long ms;
    int opt, port, lport, rc;

    if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    while ((opt = getopt(argc, argv, "b:i:d:w:")) != -1) {
        switch (opt) {
        case 'b': bind_addr = optarg; break;
        case 'i':
            if (!sample_arg_num(optarg, 1, INT64_MAX / MS, &ms))
                usage(argv[0]);
            f.idle_ns = ms * MS;
            break;
        case 'd':
            if (!sample_arg_num(optarg, 0, INT64_MAX / MS, &ms))
                usage(argv[0]);
            f.drain_ns = ms * MS;
            break;
        case 'w':
            if (!sample_arg_workers(optarg, &cfg))
                usage(argv[0]);
            break;
        default: usage(argv[0]);
        }
    }
    if (argc - optind != 2 || !sample_arg_port(argv[optind], &lport))
        usage(argv[0]);
    if ((rc = resolve(argv[optind + 1], &f)) < 0) {
        fprintf(stderr, "forwarder: cannot resolve %s\n", argv[optind + 1]);
        return 1;
    }
    if ((f.lfd = listen_on(bind_addr, lport, &port)) < 0) {
        fprintf(stderr, "forwarder: listen on %s:%s: %s\n", bind_addr, argv[optind],
                coro_strerror(f.lfd));
        return 1;
    }
    block_signals();
    if ((rc = coro_sched_create(&f.s, &cfg)) < 0) {
        fprintf(stderr, "forwarder: coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    printf("forwarder: listening on %s:%d -> %s (idle %lld ms, drain %lld ms)\n", bind_addr,
           port, argv[optind + 1], (long long)(f.idle_ns / MS), (long long)(f.drain_ns / MS));
    fflush(stdout);
    if ((rc = serve_start(&f)) < 0) {
        fprintf(stderr, "forwarder: %s\n", coro_strerror(rc));
        return 1;
    }
    rc = serve_until_signal(&f);
    return rc < 0;                          /* cancelled connections are a clean exit */
}
