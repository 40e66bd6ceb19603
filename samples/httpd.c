/* SPDX-License-Identifier: MIT */
/* httpd - a minimal HTTP/1.1 server answering "hello" to every request,
 * with keep-alive and pipelining: enough for wrk or ab to load it.  With
 * HTTPD_FILE=PATH in the environment, "GET /file" is answered with that
 * file's bytes, sent by coro_sendfile: from the page cache to the socket,
 * with no copy through the server's memory.
 *
 *   httpd PORT [WORKERS] serve on 0.0.0.0:PORT until SIGINT/SIGTERM, with
 *                       WORKERS worker threads (default: one per CPU;
 *                       0: single-threaded, on main's thread)
 *   httpd --self-test   serve on a loopback port, send 50 keep-alive
 *                       clients x 20 requests at it, check, exit 0 */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static const char RESPONSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
#define RESP_LEN (sizeof RESPONSE - 1)

/* HTTPD_FILE: the file "GET /file" answers with (fd -1: none), opened once
 * and shared: coro_sendfile reads it at an offset of each connection's own,
 * so its file position is never used */
static int file_fd = -1;
static off_t file_size;
static const char FILE_REQ[] = "GET /file ";

/* [http-conn] one connection: parse requests, answer each, keep alive */
struct http_conn {
    coro_t co;
    int fd;
    size_t have;            /* bytes in in[] */
    size_t outlen;
    bool close_after;
    bool file_req;          /* the next answer is the file */
    off_t off;              /* how far coro_sendfile got */
    struct iovec hv;        /* the file's header, sent with MSG_MORE */
    struct msghdr hm;
    char hdr[128];
    char in[8192];
    char out[32 * RESP_LEN];
};

/* move every complete request of c->in to answers in c->out; false on a
 * request too big or malformed */
static bool http_parse(struct http_conn *c)
{
    char *p = c->in, *end = c->in + c->have, *hdr_end;

    c->outlen = 0;
    c->file_req = false;
    while (c->outlen + RESP_LEN <= sizeof c->out &&
           (hdr_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4)) != NULL) {
        /* the file: answered alone, after the answers before it */
        bool file = file_fd >= 0 && (size_t)(hdr_end - p) >= sizeof FILE_REQ - 1 &&
                    memcmp(p, FILE_REQ, sizeof FILE_REQ - 1) == 0;
        if (file && c->outlen)
            break;
        /* "HTTP/1.0" without keep-alive, or "Connection: close": close after */
        if (memmem(p, (size_t)(hdr_end - p), "Connection: close", 17) ||
            (memmem(p, (size_t)(hdr_end - p), "HTTP/1.0", 8) &&
             !memmem(p, (size_t)(hdr_end - p), "Keep-Alive", 10)))
            c->close_after = true;
        if (file) {
            c->file_req = true;
            p = hdr_end + 4;
            break;
        }
        memcpy(c->out + c->outlen, RESPONSE, RESP_LEN);
        c->outlen += RESP_LEN;
        p = hdr_end + 4;            /* bodies are not expected (GET) */
        if (c->close_after)
            break;
    }
    c->have = (size_t)(end - p);
    memmove(c->in, p, c->have);
    return c->have < sizeof c->in;
}

static int http_conn_body(coro_t *co)
{
    struct http_conn *c = CORO_SELF(co, struct http_conn);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_read(c->fd, c->in + c->have, sizeof c->in - c->have,
                                 30 * 1000000000LL));       /* idle keep-alive: 30 s */
        if (CORO_RESULT(co) <= 0)
            break;
        c->have += (size_t)CORO_RESULT(co);
        /* every answer the buffered requests call for, then read again */
        for (;;) {
            if (!http_parse(c))
                goto out;
            if (!c->outlen && !c->file_req)
                break;
            if (c->outlen) {
                CORO_AWAIT(co, coro_write_all(c->fd, c->out, c->outlen, 30 * 1000000000LL));
                if (CORO_RESULT(co) < 0)
                    goto out;
            }
            if (c->file_req) {
                /* [sendfile] the header, with MSG_MORE: the kernel holds it
                 * to go out in one segment with the file's first bytes */
                c->hv.iov_base = c->hdr;
                c->hv.iov_len = (size_t)snprintf(c->hdr, sizeof c->hdr,
                         "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         "Content-Length: %lld\r\n\r\n", (long long)file_size);
                c->hm = (struct msghdr){ .msg_iov = &c->hv, .msg_iovlen = 1 };
                CORO_AWAIT(co, coro_sendmsg(c->fd, &c->hm, MSG_MORE, 30 * 1000000000LL));
                if (CORO_RESULT(co) != (intptr_t)c->hv.iov_len)
                    goto out;       /* a header of 100 bytes is never sent in part */
                /* then the file, from the page cache */
                c->off = 0;
                CORO_AWAIT(co, coro_sendfile(c->fd, file_fd, &c->off, (size_t)file_size,
                                             30 * 1000000000LL));
                if (CORO_RESULT(co) < 0)
                    goto out;
                /* [/sendfile] */
            }
            if (c->close_after)
                goto out;
        }
    }
out:
    /* close(2), not coro_close: this fd came from coro_accept, and corokit
     * forgets its registration when accept returns the number again */
    close(c->fd);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static void http_conn_free(coro_t *co)
{
    free(CORO_SELF(co, struct http_conn));
}
/* [/http-conn] */

struct http_server {
    coro_t co;
    coro_sched_t *s;
    int lfd, fd;
};

static int http_server_body(coro_t *co)
{
    struct http_server *sv = CORO_SELF(co, struct http_server);
    static const coro_spawn_opts_t opts = { .on_exit = http_conn_free };
    struct http_conn *c;
    int one = 1;
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(sv->lfd, CORO_FOREVER));
        sv->fd = (int)CORO_RESULT(co);
        if (sv->fd == -ECANCELED || sv->fd == -EBADF || sv->fd == -EINVAL)
            break;
        if (sv->fd < 0) {
            CORO_AWAIT(co, coro_sleep(1000000));
            continue;
        }
        setsockopt(sv->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (!(c = malloc(sizeof *c))) {
            close(sv->fd);
            continue;
        }
        memset(&c->co, 0, sizeof c->co);
        c->fd = sv->fd;
        c->have = 0;
        c->close_after = false;
        if (coro_spawn(sv->s, &c->co, http_conn_body, &opts) < 0) {
            close(c->fd);
            free(c);
        }
    }
    CORO_END(co);
}

static int http_listen(in_addr_t addr, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    socklen_t len = sizeof sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    sa.sin_addr.s_addr = addr;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4096) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (bound)
        *bound = ntohs(sa.sin_port);
    return fd;
}

/* HTTPD_FILE: open it once (NULL: no file); 0 or -1 */
static int open_file(const char *path)
{
    struct stat st;

    if (!path)
        return 0;
    file_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (file_fd < 0 || fstat(file_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "httpd: HTTPD_FILE %s: not a regular file we can open\n", path);
        return -1;
    }
    file_size = st.st_size;
    return 0;
}

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

/* ---- self-test ------------------------------------------------------------------ */
struct client {
    coro_t co;
    int port, fd, i;
    size_t got;
    struct sockaddr_in sa;
    char buf[4 * RESP_LEN];
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    c->sa.sin_family = AF_INET;
    c->sa.sin_port = htons((uint16_t)c->port);
    c->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 5000000000));
    if (CORO_RESULT(co) < 0)
        goto fail;
    for (c->i = 0; c->i < 20; c->i++) {
        CORO_AWAIT(co, coro_write_all(c->fd, req, sizeof req - 1, 5000000000));
        if (CORO_RESULT(co) < 0)
            goto fail;
        for (c->got = 0; c->got < RESP_LEN;) {
            CORO_AWAIT(co, coro_read(c->fd, c->buf + c->got, RESP_LEN - c->got, 5000000000));
            if (CORO_RESULT(co) <= 0)
                goto fail;
            c->got += (size_t)CORO_RESULT(co);
        }
        if (memcmp(c->buf, RESPONSE, RESP_LEN) != 0)
            goto fail;
    }
    close(c->fd);
    CORO_RETURN(co, 0);
fail:
    close(c->fd);
    CORO_RETURN(co, -EIO);
    CORO_END(co);
}

/* a client of the file: one request with Connection: close, then read to
 * the end and compare with the file's bytes */
enum { FILE_BYTES = 1 << 20, FILE_CLIENTS = 4 };
static char *file_bytes;

struct file_client {
    coro_t co;
    int port, fd;
    size_t got;
    struct sockaddr_in sa;
    char *buf;
};

static int file_client_body(coro_t *co)
{
    struct file_client *c = CORO_SELF(co, struct file_client);
    static const char req[] = "GET /file HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    const char *body;
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    c->sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 5000000000));
    if (CORO_RESULT(co) < 0)
        goto fail;
    CORO_AWAIT(co, coro_write_all(c->fd, req, sizeof req - 1, 5000000000));
    if (CORO_RESULT(co) < 0)
        goto fail;
    for (c->got = 0;;) {
        CORO_AWAIT(co, coro_read(c->fd, c->buf + c->got, FILE_BYTES + 256 - c->got, 5000000000));
        if (CORO_RESULT(co) < 0)
            goto fail;
        if (CORO_RESULT(co) == 0)
            break;
        c->got += (size_t)CORO_RESULT(co);
    }
    body = memmem(c->buf, c->got, "\r\n\r\n", 4);
    if (!body || c->buf + c->got - (body + 4) != FILE_BYTES || memcmp(body + 4, file_bytes, FILE_BYTES))
        goto fail;
    close(c->fd);
    CORO_RETURN(co, 0);
fail:
    close(c->fd);
    CORO_RETURN(co, -EIO);
    CORO_END(co);
}

/* a 1 MiB file of known bytes, unlinked, served as HTTPD_FILE */
static int make_file(void)
{
    char path[] = "/tmp/httpd-self-test-XXXXXX";
    int fd = mkstemp(path);

    if (fd < 0 || !(file_bytes = malloc(FILE_BYTES)))
        return -1;
    unlink(path);
    for (int i = 0; i < FILE_BYTES; i++)
        file_bytes[i] = (char)(i * 7 + i / 1000);
    if (write(fd, file_bytes, FILE_BYTES) != FILE_BYTES)
        return -1;
    file_fd = fd;
    file_size = FILE_BYTES;
    return 0;
}

static int self_test(void)
{
    enum { N = 50 };
    static struct http_server sv;
    static struct client cl[N];
    static struct file_client fc[FILE_CLIENTS];
    coro_sched_t *s;
    int port, bad = 0;
    int lfd = http_listen(htonl(INADDR_LOOPBACK), 0, &port);

    if (lfd < 0 || make_file() < 0 || coro_sched_create(&s, NULL) < 0)
        return 1;
    sv.s = s;
    sv.lfd = lfd;
    coro_spawn(s, &sv.co, http_server_body, NULL);
    for (int i = 0; i < N; i++) {
        cl[i].port = port;
        if (coro_spawn(s, &cl[i].co, client_body, NULL) < 0)
            bad++;
    }
    for (int i = 0; i < FILE_CLIENTS; i++) {
        fc[i].port = port;
        if (!(fc[i].buf = malloc(FILE_BYTES + 256)) ||
            coro_spawn(s, &fc[i].co, file_client_body, NULL) < 0)
            return 1;
    }
    for (int i = 0; i < N; i++) {
        intptr_t r;
        if (coro_join(&cl[i].co, &r) != 0 || r != 0)
            bad++;
    }
    for (int i = 0; i < FILE_CLIENTS; i++) {
        intptr_t r;
        if (coro_join(&fc[i].co, &r) != 0 || r != 0)
            bad++;
        free(fc[i].buf);
    }
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    close(lfd);
    close(file_fd);
    free(file_bytes);
    printf("httpd self-test: %d clients x 20 requests, %d clients of a 1 MiB file, %d bad\n", N,
           FILE_CLIENTS, bad);
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
    signal(SIGPIPE, SIG_IGN);

    static struct http_server sv;
    coro_sched_t *s;
    if (open_file(getenv("HTTPD_FILE")) < 0)
        return 1;
    int lfd = http_listen(htonl(INADDR_ANY), port, &bound);
    if (lfd < 0) {
        fprintf(stderr, "httpd: listen on port %d: %s\n", port, coro_strerror(lfd));
        return 1;
    }
    if ((rc = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "httpd: coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    /* the port bound (PORT 0: the one the kernel chose), for whoever
     * started us: a script or a test connects there */
    printf("httpd: listening on port %d, %d worker(s)\n", bound, coro_sched_workers(s));
    fflush(stdout);
    sv.s = s;
    sv.lfd = lfd;
    coro_spawn(s, &sv.co, http_server_body, NULL);
    serve_until_signal(s);
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    close(lfd);
    return 0;
}
