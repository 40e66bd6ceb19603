/* SPDX-License-Identifier: MIT */
/* proxy - an HTTP/1.1 reverse proxy to start from: keep-alive to the
 * clients and a pool of kept-alive connections to one upstream,
 * pipelined requests answered in order, a 502 that says why when the
 * upstream cannot be reached or fails before it answers, no cache.
 *
 *   proxy PORT UPSTREAM [WORKERS]  serve on 0.0.0.0:PORT, forwarding to
 *                                  UPSTREAM (IPv4 "ADDR:PORT", or a port
 *                                  on 127.0.0.1), with WORKERS worker
 *                                  threads (default: one per CPU) until
 *                                  SIGINT or SIGTERM
 *   proxy --self-test              a backend, the proxy and clients in one
 *                                  process: keep-alive, pipelining, a
 *                                  chunked answer, a 502; exit 0 if right
 *
 * One job per client connection reads a request (head up to
 * sizeof conn.in, a body of Content-Length bytes; chunked request bodies
 * are refused with 501), takes an upstream connection from the pool (or
 * connects one), sends the request as it came, and relays the answer:
 * Content-Length, chunked, or until the upstream closes.  Headers pass
 * unchanged (a real proxy would drop the hop-by-hop ones and add
 * X-Forwarded-For: see forward_head).  An upstream connection whose
 * answer ended cleanly goes back to the pool; a pooled one that the
 * upstream closed meanwhile fails before any byte of the answer, and the
 * request, if it was whole in memory, is sent once more on a new one. */
#define _GNU_SOURCE
#include <corokit.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEC 1000000000LL
#define CLIENT_IDLE_NS (30 * SEC)   /* a kept-alive client may say nothing this long */
#define UPSTREAM_NS (30 * SEC)      /* the upstream may take this long to answer */
#define CONNECT_NS (5 * SEC)
#define POOL_MAX 1024               /* idle upstream connections kept */

/* [pool] idle upstream connections, shared by every worker: a mutex held
 * for a push or a pop, never across an await */
struct pool {
    pthread_mutex_t mu;
    int n;
    int fd[POOL_MAX];
    struct sockaddr_in addr;
    char name[32];                  /* "ADDR:PORT", for the 502's text */
};

static int pool_get(struct pool *p)
{
    int fd = -1;
    pthread_mutex_lock(&p->mu);
    if (p->n > 0)
        fd = p->fd[--p->n];
    pthread_mutex_unlock(&p->mu);
    return fd;
}

/* keep fd for the next request, or close it when the pool is full */
static void pool_put(struct pool *p, int fd)
{
    pthread_mutex_lock(&p->mu);
    bool kept = p->n < POOL_MAX;
    if (kept)
        p->fd[p->n++] = fd;
    pthread_mutex_unlock(&p->mu);
    if (!kept)
        coro_close(NULL, fd);
}
/* [/pool] */

/* ---- parsing ------------------------------------------------------------------- */

/* the value of header `name` in the head [p, end) (request or status line
 * first), or NULL */
static const char *header(const char *p, const char *end, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *line = memchr(p, '\n', (size_t)(end - p));

    while (line && ++line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        line = eol;
    }
    return NULL;
}

/* does header `name` hold `token` (case-insensitive, as in "keep-alive, close") */
static bool header_has(const char *p, const char *end, const char *name, const char *token)
{
    size_t vlen, tl = strlen(token);
    const char *v = header(p, end, name, &vlen);

    for (size_t i = 0; v && i + tl <= vlen; i++)
        if (strncasecmp(v + i, token, tl) == 0)
            return true;
    return false;
}

/* Content-Length: -1 when absent, -2 when not a number */
static long long content_length(const char *p, const char *end)
{
    size_t vlen;
    const char *v = header(p, end, "Content-Length", &vlen);
    long long n = 0;

    if (!v)
        return -1;
    if (vlen == 0 || vlen > 18)
        return -2;
    for (size_t i = 0; i < vlen; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -2;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

/* a chunked body's end, found as its bytes go by */
struct chunks {
    enum { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_END, CK_TRAILER, CK_TRAILER_LINE } st;
    unsigned long long left;
};

/* feed n bytes: how many belong to the body (n unless it ended inside
 * them), *done once the last chunk and the trailer went by; -1 if the
 * framing is bad */
static long chunks_feed(struct chunks *k, const char *p, size_t n, bool *done)
{
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        switch (k->st) {
        case CK_SIZE:
            if (isxdigit((unsigned char)ch)) {
                if (k->left >> 56)
                    return -1;
                k->left = k->left * 16 + (unsigned)(isdigit((unsigned char)ch) ? ch - '0'
                                                                                 : (ch | 0x20) - 'a' + 10);
                break;
            }
            if (ch != '\n') {
                if (ch != '\r' && ch != ';' && ch != ' ' && ch != '\t')
                    return -1;
                k->st = CK_EXT;
                break;
            }
            /* fallthrough */
        case CK_EXT:
            if (ch == '\n')
                k->st = k->left ? CK_DATA : CK_TRAILER;
            break;
        case CK_DATA: {
            size_t take = n - i < k->left ? n - i : (size_t)k->left;
            k->left -= take;
            i += take - 1;
            if (!k->left)
                k->st = CK_DATA_END;
            break;
        }
        case CK_DATA_END:
            if (ch == '\n')
                k->st = CK_SIZE;
            else if (ch != '\r')
                return -1;
            break;
        case CK_TRAILER:
            if (ch == '\n') {
                *done = true;
                return (long)(i + 1);
            }
            if (ch != '\r')
                k->st = CK_TRAILER_LINE;
            break;
        case CK_TRAILER_LINE:
            if (ch == '\n')
                k->st = CK_TRAILER;
            break;
        }
    }
    return (long)n;
}

/* ---- one client connection ------------------------------------------------------- */

/* how an upstream answer's body ends */
enum framing { NO_BODY, BY_LENGTH, BY_CHUNKS, BY_CLOSE };

/* [conn] */
struct conn {
    coro_t co;
    struct pool *pool;
    int fd;                         /* the client */
    int up;                         /* the upstream connection, -1 none */
    bool reused;                    /* up came from the pool */
    bool tried;                     /* this request was sent once already */
    bool close_after;               /* the client asked to close, or HTTP/1.0 */
    bool head_req;                  /* a HEAD: no body in the answer */
    size_t have;                    /* bytes in in[] */
    size_t req_head;                /* the request's head, at in[0] */
    size_t req_in;                  /* the bytes of the request in in[] */
    unsigned long long body_left;   /* request body bytes still at the client */
    size_t got, resp_head;          /* bytes in out[], the answer's head */
    enum framing framing;
    bool up_ok;                     /* up may go back to the pool */
    unsigned long long resp_left;   /* BY_LENGTH: body bytes still to come */
    struct chunks ck;
    int status;                     /* the answer's status code */
    ssize_t n;
    char in[16384];
    char out[16384];
};

static void up_drop(struct conn *c)
{
    if (c->up >= 0)
        coro_close(NULL, c->up);
    c->up = -1;
}

/* the request at in[0]: its head is complete (ends at c->req_head); false
 * when it cannot be forwarded (the answer is then in out[0..got]) */
static bool parse_request(struct conn *c)
{
    const char *p = c->in, *end = c->in + c->req_head;
    static const char not_impl[] = "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
    static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                              "Connection: close\r\n\r\n";
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    long long cl = content_length(p, end);

    c->head_req = end - p > 5 && memcmp(p, "HEAD ", 5) == 0;
    bool v10 = eol && eol - p > 9 && memcmp(eol - 9, "HTTP/1.0", 8) == 0;
    c->close_after = header_has(p, end, "Connection", "close") ||
                     (v10 && !header_has(p, end, "Connection", "keep-alive"));
    if (header(p, end, "Transfer-Encoding", &(size_t){ 0 })) {
        memcpy(c->out, not_impl, sizeof not_impl - 1);
        c->got = sizeof not_impl - 1;
        return false;
    }
    if (cl == -2 || !eol) {
        memcpy(c->out, bad, sizeof bad - 1);
        c->got = sizeof bad - 1;
        return false;
    }
    unsigned long long body = cl > 0 ? (unsigned long long)cl : 0;
    size_t in_buf = c->have - c->req_head;
    c->req_in = c->req_head + (in_buf < body ? in_buf : (size_t)body);
    c->body_left = body - (c->req_in - c->req_head);
    return true;
}

/* the answer's head is complete in out[0..resp_head]: how its body ends */
static void parse_response(struct conn *c)
{
    const char *p = c->out, *end = c->out + c->resp_head;
    long long cl = content_length(p, end);

    c->status = c->resp_head > 12 ? atoi(c->out + 9) : 0;
    c->up_ok = !header_has(p, end, "Connection", "close") &&
               memcmp(c->out, "HTTP/1.0", 8) != 0;
    c->ck = (struct chunks){ 0 };
    if (c->head_req || c->status / 100 == 1 || c->status == 204 || c->status == 304) {
        c->framing = NO_BODY;
    } else if (header_has(p, end, "Transfer-Encoding", "chunked")) {
        c->framing = BY_CHUNKS;
    } else if (cl >= 0) {
        c->framing = BY_LENGTH;
        c->resp_left = (unsigned long long)cl;
    } else {
        c->framing = BY_CLOSE;          /* the client learns the end by our close */
        c->up_ok = false;
        c->close_after = true;
    }
}

/* out[from..got] holds answer bytes past the head: count them against the
 * framing; how many belong to this answer (bytes past its end are the
 * upstream's error: the connection is not reused) */
static size_t body_seen(struct conn *c, size_t from, bool *ended)
{
    size_t n = c->got - from;
    *ended = false;
    switch (c->framing) {
    case NO_BODY:
        *ended = true;
        n = 0;
        break;
    case BY_LENGTH:
        if (n >= c->resp_left) {
            n = (size_t)c->resp_left;
            *ended = true;
        }
        c->resp_left -= n;
        break;
    case BY_CHUNKS: {
        long k = chunks_feed(&c->ck, c->out + from, n, ended);
        if (k < 0) {                    /* bad framing: send what we have, then close */
            c->up_ok = false;
            c->close_after = true;
            *ended = true;
        } else {
            n = (size_t)k;
        }
        break;
    }
    case BY_CLOSE:
        break;
    }
    if (*ended && from + n != c->got)
        c->up_ok = false;
    return n;
}

/* a 502 (or 504) in out[]: the client may go on with its next request */
static void bad_gateway(struct conn *c, long err)
{
    char body[160];
    bool timeout = err == -ETIMEDOUT;
    int blen = snprintf(body, sizeof body, "%s: upstream %s: %s\n",
                        timeout ? "504 Gateway Timeout" : "502 Bad Gateway", c->pool->name,
                        err ? coro_strerror((int)err) : "closed before it answered");
    c->got = (size_t)snprintf(c->out, sizeof c->out,
                              "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                              "Connection: %s\r\n\r\n%s",
                              timeout ? "504 Gateway Timeout" : "502 Bad Gateway", blen,
                              c->close_after || c->body_left ? "close" : "keep-alive", body);
    if (c->body_left)
        c->close_after = true;          /* the rest of its body is still unread */
}

/* end of the head in buf[0..n] (the index after "\r\n\r\n"), or 0 */
static size_t head_end(const char *buf, size_t n)
{
    const char *e = memmem(buf, n, "\r\n\r\n", 4);
    return e ? (size_t)(e - buf) + 4 : 0;
}

static int conn_body(coro_t *co)
{
    struct conn *c = CORO_SELF(co, struct conn);
    CORO_BEGIN(co);
    for (;;) {
        /* a whole request head at in[0]: pipelined ones may be there already */
        while (!(c->req_head = head_end(c->in, c->have))) {
            if (c->have == sizeof c->in)
                goto out;               /* a head this big: not served */
            CORO_AWAIT(co, coro_read(c->fd, c->in + c->have, sizeof c->in - c->have,
                                     CLIENT_IDLE_NS));
            if (CORO_RESULT(co) <= 0)
                goto out;               /* closed (half-closed too), reset or idle */
            c->have += (size_t)CORO_RESULT(co);
        }
        if (!parse_request(c)) {
            c->close_after = true;
            goto answer;
        }
        c->tried = false;
    send:
        /* an upstream connection: a pooled one, else a new one */
        c->got = 0;
        c->up = pool_get(c->pool);
        c->reused = c->up >= 0;
        if (!c->reused) {
            c->up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (c->up < 0) {
                bad_gateway(c, -errno);
                goto answer;
            }
            setsockopt(c->up, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
            CORO_AWAIT(co, coro_connect(c->up, (struct sockaddr *)&c->pool->addr,
                                        sizeof c->pool->addr, CONNECT_NS));
            if (CORO_RESULT(co) < 0) {
                c->n = CORO_RESULT(co);
                up_drop(c);
                bad_gateway(c, (long)c->n);
                goto answer;
            }
        }
        /* [forward] the request as it came: head and what of its body we hold */
        CORO_AWAIT(co, coro_write_all(c->up, c->in, c->req_in, UPSTREAM_NS));
        if (CORO_RESULT(co) < 0)
            goto up_failed;
        /* a body longer than what we hold: relay the rest through out[] */
        while (c->body_left) {
            CORO_AWAIT(co, coro_read(c->fd, c->out,
                                     c->body_left < sizeof c->out ? c->body_left : sizeof c->out,
                                     CLIENT_IDLE_NS));
            if (CORO_RESULT(co) <= 0) {
                up_drop(c);             /* half a request went up */
                goto out;
            }
            c->n = CORO_RESULT(co);
            c->body_left -= (unsigned long long)c->n;
            CORO_AWAIT(co, coro_write_all(c->up, c->out, (size_t)c->n, UPSTREAM_NS));
            if (CORO_RESULT(co) < 0) {
                c->tried = true;        /* the body is gone: no second try */
                goto up_failed;
            }
        }
        /* [/forward] */
        /* the answer's head */
        while (!(c->resp_head = head_end(c->out, c->got))) {
            if (c->got == sizeof c->out) {
                c->n = -EMSGSIZE;
                goto up_failed;
            }
            CORO_AWAIT(co, coro_read(c->up, c->out + c->got, sizeof c->out - c->got, UPSTREAM_NS));
            if (CORO_RESULT(co) <= 0)
                goto up_failed;
            c->got += (size_t)CORO_RESULT(co);
        }
        parse_response(c);
        {
            bool ended;
            size_t n = body_seen(c, c->resp_head, &ended);
            c->got = c->resp_head + n;
            c->n = ended;
        }
        /* the head and what came with it; then the rest as it comes */
        for (;;) {
            CORO_AWAIT(co, coro_write_all(c->fd, c->out, c->got, CLIENT_IDLE_NS));
            if (CORO_RESULT(co) < 0) {
                if (!c->n)
                    up_drop(c);         /* its answer is still coming */
                goto out;
            }
            if (c->n)
                break;
            CORO_AWAIT(co, coro_read(c->up, c->out, sizeof c->out, UPSTREAM_NS));
            if (CORO_RESULT(co) <= 0) {
                /* BY_CLOSE ends so; any other answer was cut short, and the
                 * client sees it by our close */
                up_drop(c);
                c->close_after = true;
                goto done;
            }
            c->got = (size_t)CORO_RESULT(co);
            {
                bool ended;
                c->got = body_seen(c, 0, &ended);
                c->n = ended;
            }
        }
        if (c->up_ok)
            pool_put(c->pool, c->up);
        else
            up_drop(c);
        c->up = -1;
    done:
        /* the next request, pipelined or not */
        c->have -= c->req_in;
        memmove(c->in, c->in + c->req_in, c->have);
        if (c->close_after)
            goto out;
        continue;
    up_failed:
        /* no byte of the answer went to the client yet */
        c->n = CORO_RESULT(co);
        up_drop(c);
        if (c->reused && !c->tried && c->got == 0 && c->body_left == 0) {
            /* a pooled connection the upstream had closed: once more, on a
             * new one (the request is whole in in[]) */
            c->tried = true;
            goto send;
        }
        bad_gateway(c, c->n < 0 ? (long)c->n : 0);
    answer:
        /* an answer of our own (502, 400 ...) in out[0..got] */
        CORO_AWAIT(co, coro_write_all(c->fd, c->out, c->got, CLIENT_IDLE_NS));
        if (CORO_RESULT(co) < 0)
            goto out;
        if (c->close_after)
            goto out;
        c->have -= c->req_in;
        memmove(c->in, c->in + c->req_in, c->have);
    }
out:
    up_drop(c);
    coro_close(NULL, c->fd);
    CORO_RETURN(co, 0);
    CORO_END(co);
}
/* [/conn] */

/* ---- the listener ----------------------------------------------------------------- */

struct server {
    coro_t co;
    coro_sched_t *s;
    struct pool *pool;
    int lfd, fd;
};

static int server_body(coro_t *co)
{
    struct server *sv = CORO_SELF(co, struct server);
    struct conn *c;
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(sv->lfd, CORO_FOREVER));
        sv->fd = (int)CORO_RESULT(co);
        if (sv->fd == -ECANCELED || sv->fd == -EBADF || sv->fd == -EINVAL)
            break;
        if (sv->fd < 0) {               /* out of fds or memory: wait a little */
            CORO_AWAIT(co, coro_sleep(SEC / 1000));
            continue;
        }
        setsockopt(sv->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
        /* a pool frame: the library gives it back when the job ends */
        if (!(c = coro_frame_alloc(sv->s, sizeof *c))) {
            close(sv->fd);
            continue;
        }
        c->pool = sv->pool;
        c->fd = sv->fd;
        c->up = -1;
        if (coro_spawn(sv->s, &c->co, conn_body, NULL) < 0) {
            close(c->fd);
            coro_frame_free(c);
        }
    }
    CORO_END(co);
}

static int listen_on(in_addr_t addr, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = addr };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
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

/* "ADDR:PORT" or "PORT" (on 127.0.0.1) */
static int pool_init(struct pool *p, const char *upstream)
{
    const char *colon = strrchr(upstream, ':');
    char host[INET_ADDRSTRLEN] = "127.0.0.1";
    char *end;

    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->addr.sin_family = AF_INET;
    if (colon) {
        if ((size_t)(colon - upstream) >= sizeof host)
            return -EINVAL;
        memcpy(host, upstream, (size_t)(colon - upstream));
        host[colon - upstream] = 0;
        upstream = colon + 1;
    }
    long port = strtol(upstream, &end, 10);
    if (*upstream == 0 || *end || port <= 0 || port > 65535 ||
        inet_pton(AF_INET, host, &p->addr.sin_addr) != 1)
        return -EINVAL;
    p->addr.sin_port = htons((uint16_t)port);
    snprintf(p->name, sizeof p->name, "%s:%ld", host, port);
    return 0;
}

static void pool_destroy(struct pool *p)
{
    for (int i = 0; i < p->n; i++)
        close(p->fd[i]);
    p->n = 0;
    pthread_mutex_destroy(&p->mu);
}

/* ---- self-test: a backend, the proxy and clients in one process ----------------------- */

/* the backend: "/" gets "hello" by length, "/chunked" the same in two chunks */
struct backend {
    coro_t co;
    int fd;
    size_t have, head;
    char in[1024];
};

static const char BACK_LEN[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
static const char BACK_CHUNKED[] =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3;x=y\r\nllo\r\n0\r\n\r\n";

static int backend_body(coro_t *co)
{
    struct backend *b = CORO_SELF(co, struct backend);
    CORO_BEGIN(co);
    for (;;) {
        while (!(b->head = head_end(b->in, b->have))) {
            CORO_AWAIT(co, coro_read(b->fd, b->in + b->have, sizeof b->in - b->have, 10 * SEC));
            if (CORO_RESULT(co) <= 0 || b->have + (size_t)CORO_RESULT(co) == sizeof b->in)
                goto out;
            b->have += (size_t)CORO_RESULT(co);
        }
        if (memmem(b->in, b->head, "/chunked", 8))
            CORO_AWAIT(co, coro_write_all(b->fd, BACK_CHUNKED, sizeof BACK_CHUNKED - 1, 10 * SEC));
        else
            CORO_AWAIT(co, coro_write_all(b->fd, BACK_LEN, sizeof BACK_LEN - 1, 10 * SEC));
        if (CORO_RESULT(co) < 0)
            goto out;
        b->have -= b->head;
        memmove(b->in, b->in + b->head, b->have);
    }
out:
    coro_close(NULL, b->fd);
    CORO_END(co);
}

struct backend_server {
    coro_t co;
    coro_sched_t *s;
    int lfd, fd;
};

static int backend_server_body(coro_t *co)
{
    struct backend_server *sv = CORO_SELF(co, struct backend_server);
    struct backend *b;
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(sv->lfd, CORO_FOREVER));
        sv->fd = (int)CORO_RESULT(co);
        if (sv->fd < 0)
            break;
        if (!(b = coro_frame_alloc(sv->s, sizeof *b))) {
            close(sv->fd);
            continue;
        }
        b->fd = sv->fd;
        if (coro_spawn(sv->s, &b->co, backend_body, NULL) < 0) {
            close(sv->fd);
            coro_frame_free(b);
        }
    }
    CORO_END(co);
}

/* a client: `reqs` requests on one connection, `batch` of them written
 * together (pipelined); every answer must be the one expected */
struct client {
    coro_t co;
    int port, fd, i, reqs, batch;
    size_t want, got, sent;
    const char *expect;             /* NULL: the backend's answers */
    char req[512], buf[2048], exp[2048];
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&sa, sizeof sa, 5 * SEC));
    if (CORO_RESULT(co) < 0)
        goto fail;
    for (c->i = 0; c->i < c->reqs; c->i += c->batch) {
        c->sent = 0;
        c->want = 0;
        for (int k = 0; k < c->batch; k++) {
            bool chunked = (c->i + k) % 2;
            const char *exp = c->expect ? c->expect : chunked ? BACK_CHUNKED : BACK_LEN;
            c->sent += (size_t)snprintf(c->req + c->sent, sizeof c->req - c->sent,
                                        "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n",
                                        chunked ? "chunked" : "");
            memcpy(c->exp + c->want, exp, strlen(exp));
            c->want += strlen(exp);
        }
        CORO_AWAIT(co, coro_write_all(c->fd, c->req, c->sent, 5 * SEC));
        if (CORO_RESULT(co) < 0)
            goto fail;
        for (c->got = 0; c->got < c->want;) {
            CORO_AWAIT(co, coro_read(c->fd, c->buf + c->got, c->want - c->got, 5 * SEC));
            if (CORO_RESULT(co) <= 0)
                goto fail;
            c->got += (size_t)CORO_RESULT(co);
        }
        if (memcmp(c->buf, c->exp, c->want) != 0)
            goto fail;
    }
    coro_close(NULL, c->fd);
    CORO_RETURN(co, 0);
fail:
    coro_close(NULL, c->fd);
    CORO_RETURN(co, -EIO);
    CORO_END(co);
}

static int self_test(void)
{
    enum { N = 20 };
    static struct server px, px_down;
    static struct backend_server back;
    static struct pool pool, pool_down;
    static struct client cl[N + 2];
    static char bad_gw[256];
    coro_sched_t *s;
    int port, pport, dport, down_port, bad = 0;
    int blfd = listen_on(htonl(INADDR_LOOPBACK), 0, &port);
    int plfd = listen_on(htonl(INADDR_LOOPBACK), 0, &pport);
    int dlfd = listen_on(htonl(INADDR_LOOPBACK), 0, &dport);
    int gone = listen_on(htonl(INADDR_LOOPBACK), 0, &down_port);   /* a port nobody serves */
    char up[32];

    if (blfd < 0 || plfd < 0 || dlfd < 0 || gone < 0 || coro_sched_create(&s, NULL) < 0)
        return 1;
    close(gone);
    snprintf(up, sizeof up, "127.0.0.1:%d", port);
    if (pool_init(&pool, up) < 0)
        return 1;
    snprintf(up, sizeof up, "%d", down_port);
    if (pool_init(&pool_down, up) < 0)
        return 1;
    back = (struct backend_server){ .s = s, .lfd = blfd };
    px = (struct server){ .s = s, .pool = &pool, .lfd = plfd };
    px_down = (struct server){ .s = s, .pool = &pool_down, .lfd = dlfd };
    coro_spawn(s, &back.co, backend_server_body, NULL);
    coro_spawn(s, &px.co, server_body, NULL);
    coro_spawn(s, &px_down.co, server_body, NULL);
    /* N clients of 10 requests one at a time, one of 10 pipelined by 5,
     * and one that meets the 502 twice on the same connection */
    static const char body502[] = "502 Bad Gateway: upstream 127.0.0.1:%d: %s\n";
    char text[128];
    int tl = snprintf(text, sizeof text, body502, down_port, coro_strerror(-ECONNREFUSED));
    snprintf(bad_gw, sizeof bad_gw,
             "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
             "Connection: keep-alive\r\n\r\n%s", tl, text);
    for (int i = 0; i < N + 2; i++) {
        cl[i] = (struct client){ .port = pport, .reqs = 10, .batch = 1 };
        if (i == N)
            cl[i].batch = 5;
        if (i == N + 1)
            cl[i] = (struct client){ .port = dport, .reqs = 2, .batch = 1, .expect = bad_gw };
        if (coro_spawn(s, &cl[i].co, client_body, NULL) < 0)
            bad++;
    }
    for (int i = 0; i < N + 2; i++) {
        intptr_t r;
        if (coro_join(&cl[i].co, &r) != 0 || r != 0) {
            fprintf(stderr, "proxy self-test: client %d failed\n", i);
            bad++;
        }
    }
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    close(blfd);
    close(plfd);
    close(dlfd);
    pool_destroy(&pool);
    pool_destroy(&pool_down);
    printf("proxy self-test: %d clients, %d bad\n", N + 2, bad);
    return bad ? 1 : 0;
}

/* [stop-on-signal] SIGINT or SIGTERM ends the proxy (as samples/httpd) */
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
/* [/stop-on-signal] */

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s PORT UPSTREAM [WORKERS] | --self-test\n"
                        "  UPSTREAM: ADDR:PORT (IPv4) or PORT on 127.0.0.1\n", argv[0]);
        return 2;
    }
    static struct pool pool;
    if (pool_init(&pool, argv[2]) < 0) {
        fprintf(stderr, "proxy: bad upstream '%s'\n", argv[2]);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);     /* before the workers inherit the mask */
    signal(SIGPIPE, SIG_IGN);

    int lfd = listen_on(htonl(INADDR_ANY), atoi(argv[1]), NULL);
    if (lfd < 0) {
        fprintf(stderr, "proxy: listen: %s\n", coro_strerror(lfd));
        return 1;
    }
    coro_sched_t *s;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    if (argc == 4)
        cfg.workers = atoi(argv[3]);
    if (cfg.workers < 0 || coro_sched_create(&s, &cfg) < 0) {
        fprintf(stderr, "proxy: cannot start %d workers\n", cfg.workers);
        return 1;
    }
    static struct server sv;
    static coro_event_t quit;
    static struct stopper sig[2], waiter;
    sv = (struct server){ .s = s, .pool = &pool, .lfd = lfd };
    coro_spawn(s, &sv.co, server_body, NULL);
    coro_event_init(&quit);
    sig[0] = (struct stopper){ .signo = SIGINT, .quit = &quit };
    sig[1] = (struct stopper){ .signo = SIGTERM, .quit = &quit };
    waiter = (struct stopper){ .quit = &quit };
    coro_spawn(s, &sig[0].co, stopper_body, NULL);
    coro_spawn(s, &sig[1].co, stopper_body, NULL);
    intptr_t r;
    (void)coro_block_on(s, &waiter.co, stopper_body, NULL, &r);
    coro_sched_shutdown(s, CORO_CANCEL);
    coro_sched_destroy(s);
    close(lfd);
    pool_destroy(&pool);
    return 0;
}
