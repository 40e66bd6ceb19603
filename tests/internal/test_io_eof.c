/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The end of a stream is never lost, and no job loops on one (docs/io.md,
 * "When a system call is skipped").  A matrix, one loop over its cells:
 *   {socketpair, TCP over loopback, pipe, FIFO}
 * x {last data and close at once, close alone, last data and
 *    shutdown(SHUT_WR) at once, shutdown(SHUT_WR) alone, RST (SO_LINGER 0)}
 * x {coro_read, coro_readable then coro_read(0), a select's readable branch
 *    then coro_read(0)}
 * x {0, 1, 2 workers} x {the end together with the step before, apart}.
 * A plain thread is the peer: it sends chunks, each once the reader has
 * the one before, then the end - "together": right after the last step,
 * while the reader is still busy with it; "apart": once the reader is
 * parked again.  The reader must see the end (0, or an error after an
 * RST) within its 5 s timeout, with every byte before it in order, and in
 * a bounded number of rounds: a read that returns -ETIMEDOUT after a
 * readiness that said "readable" is a round lost (a spin).  The writing
 * side: coro_write_all against a peer that stops reading and goes away.
 * And the smaller promises: a timeout of 0 tries the call, a number
 * closed with close(2) and reused for a regular file starts afresh, and
 * errno is the caller's after every I/O entry point. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt/rt.h"
#include "white_box.h"

#define MS 1000000LL
#define CHUNKS 3
#define CHUNK 300           /* bytes the peer sends per step */
#define RBUF 4096           /* the reader asks for more: every read is short */
#define OP_TIMEOUT (5000 * MS)
#define MAX_ROUNDS 64       /* reader rounds for CHUNKS chunks and an end */

enum transport { T_SOCKETPAIR, T_TCP, T_PIPE, T_FIFO, NTRANSPORTS };
enum end { E_DATA_CLOSE, E_CLOSE, E_DATA_SHUTWR, E_SHUTWR, E_RST, NENDS };
enum mode { M_READ, M_READABLE, M_SELECT, NMODES };

static const char *const tnames[] = { "socketpair", "tcp", "pipe", "fifo" };
static const char *const enames[] = { "data+close", "close", "data+shutwr", "shutwr", "rst" };
static const char *const mnames[] = { "read", "readable+read0", "select+read0" };

static unsigned char pattern(long i)
{
    return (unsigned char)(i * 7 + 3);
}

/* ---- transports ----------------------------------------------------------------------- */

/* a listening socket on loopback and its port */
static int listener(struct sockaddr_in *a)
{
    socklen_t l = sizeof *a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)a, sizeof *a), 0);
    cr_assert_eq(listen(fd, 8), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)a, &l), 0);
    return fd;
}

/* fds[0]: the job's end, fds[1]: the peer's */
static void mk_transport(enum transport t, int fds[2])
{
    switch (t) {
    case T_SOCKETPAIR:
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        break;
    case T_TCP: {
        struct sockaddr_in a;
        int l = listener(&a);
        fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_eq(connect(fds[1], (struct sockaddr *)&a, sizeof a), 0);
        fds[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(fds[0], 0);
        int one = 1;
        setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        close(l);
        break;
    }
    case T_PIPE:
        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        break;
    case T_FIFO: {
        char path[64];
        snprintf(path, sizeof path, "/tmp/corokit-eof-%d", (int)getpid());
        unlink(path);
        cr_assert_eq(mkfifo(path, 0600), 0);
        fds[0] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        cr_assert_geq(fds[0], 0);
        fds[1] = open(path, O_WRONLY | O_CLOEXEC);
        cr_assert_geq(fds[1], 0);
        unlink(path);
        break;
    }
    default:
        cr_assert_fail();
    }
}

static bool end_applies(enum transport t, enum end e)
{
    bool sock = t == T_SOCKETPAIR || t == T_TCP;
    if (e == E_DATA_SHUTWR || e == E_SHUTWR)
        return sock;
    if (e == E_RST)
        return t == T_TCP;
    return true;
}

/* ---- the reader -------------------------------------------------------------------------- */

struct reader {
    coro_t co;
    coro_select_t sel;
    enum mode mode;
    int fd;
    long got;           /* atomic: bytes in order so far */
    int rounds;
    int spins;          /* reads that said -ETIMEDOUT after "readable" */
    intptr_t end;       /* 0, or the error that ended the stream */
    intptr_t fail;      /* a wait that timed out, a wrong byte, too many rounds */
    unsigned char buf[RBUF];
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    if (r->mode == M_SELECT) {
        coro_select_init(&r->sel);
        coro_select_readable(&r->sel, NULL, r->fd);
    }
    for (;;) {
        if (++r->rounds > MAX_ROUNDS) {
            r->fail = -ELOOP;
            CORO_RETURN(co, -1);
        }
        if (r->mode == M_READ) {
            CORO_AWAIT(co, coro_read(r->fd, r->buf, RBUF, OP_TIMEOUT));
        } else {
            if (r->mode == M_READABLE) {
                CORO_AWAIT(co, coro_readable(r->fd, OP_TIMEOUT));
            } else {
                CORO_SELECT(co, &r->sel, OP_TIMEOUT);
            }
            if (CORO_RESULT(co) != 0) {
                r->fail = CORO_RESULT(co);      /* -ETIMEDOUT: the end was lost */
                CORO_RETURN(co, -1);
            }
            /* "readable" promises that this read calls the kernel and finds
             * data, the end, or an error */
            CORO_AWAIT(co, coro_read(r->fd, r->buf, RBUF, 0));
            if (CORO_RESULT(co) == -ETIMEDOUT) {
                r->spins++;
                continue;
            }
        }
        intptr_t n = CORO_RESULT(co);
        if (n == -ETIMEDOUT) {
            r->fail = n;
            CORO_RETURN(co, -1);
        }
        if (n <= 0) {
            r->end = n;
            break;
        }
        for (intptr_t i = 0; i < n; i++)
            if (r->buf[i] != pattern(r->got + i)) {
                r->fail = -EILSEQ;
                CORO_RETURN(co, -1);
            }
        /* release: the bytes counted before the peer acts on the count */
        __atomic_store_n(&r->got, r->got + n, __ATOMIC_RELEASE);
    }
    CORO_END(co);
}

/* ---- the peer ------------------------------------------------------------------------------ */

struct peer {
    pthread_t t;
    struct reader *r;
    enum end end;
    bool apart;
    int fd;
    long sent;
};

/* bounded (10 s): until the reader has n bytes (and, if parked, is parked again) */
static void await_reader(struct peer *p, long n, bool parked)
{
    int64_t until = coro_now() + 10000 * MS;
    /* acquire: pairs with the reader's release of got */
    while (__atomic_load_n(&p->r->got, __ATOMIC_ACQUIRE) < n ||
           (parked && !suspended(&p->r->co))) {
        if (coro_now() > until ||
            (__atomic_load_n(&p->r->co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_DONE)
            return;     /* the reader failed: it reports */
        sched_yield();
    }
}

static void send_chunk(struct peer *p)
{
    unsigned char b[CHUNK];
    for (int i = 0; i < CHUNK; i++)
        b[i] = pattern(p->sent + i);
    if (write(p->fd, b, CHUNK) != CHUNK)
        abort();        /* not cr_assert: this is not the test's thread */
    p->sent += CHUNK;
}

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    bool data = p->end == E_DATA_CLOSE || p->end == E_DATA_SHUTWR;
    int steps = data ? CHUNKS - 1 : CHUNKS;

    await_reader(p, 0, true);       /* the reader waits: the first chunk wakes it */
    for (int i = 0; i < steps; i++) {
        send_chunk(p);
        await_reader(p, p->sent, false);
    }
    if (data)
        send_chunk(p);
    if (p->apart)
        await_reader(p, p->sent, true);
    switch (p->end) {
    case E_DATA_CLOSE:
    case E_CLOSE:
        close(p->fd);
        break;
    case E_DATA_SHUTWR:
    case E_SHUTWR:
        shutdown(p->fd, SHUT_WR);
        break;
    case E_RST: {
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(p->fd);
        break;
    }
    default:
        break;
    }
    return NULL;
}

static void one_cell(coro_sched_t *s, int workers, enum transport t, enum end e, enum mode m,
                     bool apart)
{
    int fds[2];
    struct reader *r = calloc(1, sizeof *r);

    mk_transport(t, fds);
    r->mode = m;
    r->fd = fds[0];
    struct peer p = { .r = r, .end = e, .apart = apart, .fd = fds[1] };
    cr_assert_eq(coro_spawn(s, &r->co, reader_body, NULL), 0);
    cr_assert_eq(pthread_create(&p.t, NULL, peer_main, &p), 0);
    intptr_t res = join_r(&r->co);
    pthread_join(p.t, NULL);
    cr_assert_eq(res, 0,
                 "%d workers, %s, %s, %s, %s: %s after %ld of %ld bytes, %d rounds, %d spins",
                 workers, tnames[t], enames[e], mnames[m], apart ? "apart" : "together",
                 r->fail == -ELOOP ? "too many rounds (a loop)" : coro_strerror((int)r->fail),
                 r->got, p.sent, r->rounds, r->spins);
    cr_assert_eq(r->spins, 0, "%d workers, %s, %s, %s: %d reads after \"readable\" timed out",
                 workers, tnames[t], enames[e], mnames[m], r->spins);
    if (e == E_RST) {
        /* TCP may drop what was unread when the RST comes: a prefix */
        cr_assert(r->end == 0 || r->end == -ECONNRESET, "rst: %s", coro_strerror((int)r->end));
        cr_assert_leq(r->got, p.sent);
    } else {
        cr_assert_eq(r->end, 0, "%s, %s: %s", tnames[t], enames[e], coro_strerror((int)r->end));
        cr_assert_eq(r->got, p.sent, "%d workers, %s, %s, %s: %ld of %ld bytes", workers,
                     tnames[t], enames[e], mnames[m], r->got, p.sent);
    }
    coro_close(s, fds[0]);
    if (e == E_DATA_SHUTWR || e == E_SHUTWR)
        close(fds[1]);
    free(r);
}

static void matrix(enum transport t)
{
    static const int counts[] = { 0, 1, 2 };

    for (int k = 0; k < 3; k++) {
        coro_sched_t *s = mk(counts[k]);
        for (int e = 0; e < NENDS; e++)
            for (int m = 0; m < NMODES; m++)
                for (int apart = 0; apart < 2; apart++)
                    if (end_applies(t, (enum end)e))
                        one_cell(s, counts[k], t, (enum end)e, (enum mode)m, apart);
        coro_sched_destroy(s);
    }
}

Test(io_eof, every_end_of_a_socketpair_is_seen_with_every_byte_before_it, .timeout = 120)
{
    matrix(T_SOCKETPAIR);
}

Test(io_eof, every_end_of_a_tcp_connection_is_seen_with_every_byte_before_it, .timeout = 120)
{
    matrix(T_TCP);
}

Test(io_eof, every_end_of_a_pipe_is_seen_with_every_byte_before_it, .timeout = 120)
{
    matrix(T_PIPE);
}

Test(io_eof, every_end_of_a_fifo_is_seen_with_every_byte_before_it, .timeout = 120)
{
    matrix(T_FIFO);
}

/* ---- the writing side: coro_write_all against a peer that goes away -------------------------
 * The job writes 32 MiB (more than any buffer holds) while the peer reads
 * a little and then closes (on TCP also with an RST): the job ends with an
 * error - EPIPE, ECONNRESET - within its timeout, never waits for good. */
struct bigwriter {
    coro_t co;
    int fd;
    intptr_t res;
    char *buf;
};

#define WBIG (32u << 20)     /* more than TCP's largest buffers hold */

static int bigwriter_body(coro_t *co)
{
    struct bigwriter *w = CORO_SELF(co, struct bigwriter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_write_all(w->fd, w->buf, WBIG, OP_TIMEOUT));
    w->res = CORO_RESULT(co);
    CORO_END(co);
}

struct goer {
    pthread_t t;
    struct bigwriter *w;
    int fd;
    bool rst;
};

/* the peer: once the job waits (its buffer full), read a little and go */
static void *goer_main(void *arg)
{
    struct goer *g = arg;
    char sink[1024];
    int64_t until = coro_now() + 20000 * MS;

    while (!suspended(&g->w->co) && coro_now() < until)
        sched_yield();
    if (read(g->fd, sink, sizeof sink) <= 0)
        abort();        /* not cr_assert: this is not the test's thread */
    if (g->rst) {
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(g->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(g->fd);
    return NULL;
}

static void writer_cell(coro_sched_t *s, int workers, enum transport t, bool rst)
{
    int fds[2];
    struct bigwriter w = { .buf = calloc(1, WBIG) };

    mk_transport(t, fds);
    /* the job writes into fds[1] (the peer's end above), the peer reads fds[0] */
    w.fd = fds[1];
    struct goer g = { .w = &w, .fd = fds[0], .rst = rst };
    cr_assert_eq(coro_spawn(s, &w.co, bigwriter_body, NULL), 0);
    cr_assert_eq(pthread_create(&g.t, NULL, goer_main, &g), 0);
    cr_assert_eq(join_r(&w.co), 0);
    pthread_join(g.t, NULL);
    cr_assert(w.res == -EPIPE || w.res == -ECONNRESET, "%d workers, %s%s: write_all %s",
              workers, tnames[t], rst ? " (rst)" : "", coro_strerror((int)w.res));
    coro_close(s, fds[1]);
    free(w.buf);
}

Test(io_eof, write_all_ends_with_an_error_when_the_reader_goes_away, .timeout = 120)
{
    static const int counts[] = { 0, 1, 2 };

    signal(SIGPIPE, SIG_IGN);   /* a pipe's writer gets EPIPE, not the signal */
    for (int k = 0; k < 3; k++) {
        coro_sched_t *s = mk(counts[k]);
        for (int t = 0; t < NTRANSPORTS; t++) {
            writer_cell(s, counts[k], (enum transport)t, false);
            if (t == T_TCP)
                writer_cell(s, counts[k], T_TCP, true);
        }
        coro_sched_destroy(s);
    }
}

/* ---- a timeout of 0 tries the call ------------------------------------------------------------
 * Single-threaded, nothing handles events while the job runs: the job's
 * fd is registered and was last seen not ready (a read timed out), then
 * the job itself writes into the peer.  coro_read(..., 0) must find the
 * bytes, though no event has told the library of them. */
struct zero {
    coro_t co;
    int fd, peer;
    intptr_t first, second;
    char buf[64];
};

static int zero_body(coro_t *co)
{
    struct zero *z = CORO_SELF(co, struct zero);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(z->fd, z->buf, sizeof z->buf, 1 * MS));
    z->first = CORO_RESULT(co);
    if (write(z->peer, "hello", 5) != 5)
        CORO_RETURN(co, -1);
    CORO_AWAIT(co, coro_read(z->fd, z->buf, sizeof z->buf, 0));
    z->second = CORO_RESULT(co);
    CORO_END(co);
}

Test(io_eof, a_read_with_timeout_0_tries_the_call_whatever_readiness_says, .timeout = 30)
{
    for (int t = 0; t < NTRANSPORTS; t++) {
        coro_sched_t *s = mk(0);
        int fds[2];
        mk_transport((enum transport)t, fds);
        struct zero z = { .fd = fds[0], .peer = fds[1] };
        cr_assert_eq(block_on_r(s, &z.co, zero_body, NULL), 0);
        cr_assert_eq(z.first, -ETIMEDOUT, "%s: %s", tnames[t], coro_strerror((int)z.first));
        cr_assert_eq(z.second, 5, "%s: %s", tnames[t], coro_strerror((int)z.second));
        coro_close(s, fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- a number closed with close(2) and reused --------------------------------------------------
 * A pipe is waited on (registered), read short, and closed with close(2);
 * a regular file then gets the same number: coro_read of the file returns
 * its bytes at once (nothing inherited from the pipe). */
struct reuse {
    coro_t co;
    int fd, peer;
    intptr_t waited, shortread, fileread;
    char buf[64];
};

static int reuse_body(coro_t *co)
{
    struct reuse *u = CORO_SELF(co, struct reuse);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(u->fd, u->buf, sizeof u->buf, 1 * MS));
    u->waited = CORO_RESULT(co);
    if (write(u->peer, "ab", 2) != 2)
        CORO_RETURN(co, -1);
    CORO_AWAIT(co, coro_read(u->fd, u->buf, sizeof u->buf, 1000 * MS));
    u->shortread = CORO_RESULT(co);
    {
        char path[] = "/tmp/corokit-reuse-XXXXXX";
        int f = mkstemp(path);
        if (f < 0 || write(f, "file!", 5) != 5 || lseek(f, 0, SEEK_SET) != 0)
            CORO_RETURN(co, -2);
        unlink(path);
        close(u->fd);           /* behind the library's back */
        if (f != u->fd) {
            if (dup2(f, u->fd) != u->fd)
                CORO_RETURN(co, -3);
            close(f);
        }
    }
    CORO_AWAIT(co, coro_read(u->fd, u->buf, sizeof u->buf, 1000 * MS));
    u->fileread = CORO_RESULT(co);
    CORO_END(co);
}

Test(io_eof, a_number_closed_with_close_and_reused_for_a_file_inherits_nothing, .timeout = 30)
{
    static const int counts[] = { 0, 1, 2 };

    for (int k = 0; k < 3; k++) {
        coro_sched_t *s = mk(counts[k]);
        int fds[2];
        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        struct reuse u = { .fd = fds[0], .peer = fds[1] };
        cr_assert_eq(block_on_r(s, &u.co, reuse_body, NULL), 0);
        cr_assert_eq(u.waited, -ETIMEDOUT);
        cr_assert_eq(u.shortread, 2);
        cr_assert_eq(u.fileread, 5, "%d workers: the file read %s", counts[k],
                     coro_strerror((int)u.fileread));
        cr_assert_eq(memcmp(u.buf, "file!", 5), 0);
        close(fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- errno is the caller's ---------------------------------------------------------------------
 * Single-threaded, so the job runs on one thread throughout: errno, set
 * before each I/O call and await, is the same after it, whatever the
 * library's system calls said on the way (ENOTSOCK, EAGAIN, EBADF ...). */
struct keeper {
    coro_t co;
    int pipe[2], sv[2], lsn, bad;
    struct sockaddr_in refused;
    int step;           /* the first step that changed errno, or 0 */
    char buf[16];
};

#define KEEP(co, k, n, aw)                                                  \
    do {                                                                    \
        errno = 4242;                                                       \
        CORO_AWAIT(co, aw);                                                 \
        if (errno != 4242 && !(k)->step)                                    \
            (k)->step = (n);                                                \
    } while (0)

static int keeper_body(coro_t *co)
{
    struct keeper *k = CORO_SELF(co, struct keeper);
    CORO_BEGIN(co);
    KEEP(co, k, 1, coro_read(k->pipe[0], k->buf, sizeof k->buf, 1 * MS));  /* ENOTSOCK, EAGAIN */
    KEEP(co, k, 2, coro_write(k->pipe[1], "x", 1, 1 * MS));
    KEEP(co, k, 3, coro_read(k->pipe[0], k->buf, sizeof k->buf, 1 * MS));
    KEEP(co, k, 4, coro_readable(k->pipe[0], 1 * MS));
    KEEP(co, k, 5, coro_writable(k->sv[0], 1 * MS));
    KEEP(co, k, 6, coro_read(k->sv[0], k->buf, sizeof k->buf, 0));
    KEEP(co, k, 7, coro_read(k->bad, k->buf, sizeof k->buf, 1 * MS));     /* EBADF */
    KEEP(co, k, 8, coro_write_all(k->sv[0], "abc", 3, 1 * MS));
    KEEP(co, k, 9, coro_accept(k->sv[0], 1 * MS));                       /* EINVAL */
    KEEP(co, k, 10, coro_accept(k->lsn, 1 * MS));                        /* EAGAIN, timeout */
    {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        k->bad = c;
    }
    KEEP(co, k, 11, coro_connect(k->bad, (struct sockaddr *)&k->refused, sizeof k->refused,
                                 1000 * MS));
    errno = 4242;
    coro_close(NULL, k->bad);
    coro_close(NULL, k->bad);       /* EBADF */
    if (errno != 4242 && !k->step)
        k->step = 12;
    KEEP(co, k, 13, coro_sleep(1 * MS));
    CORO_END(co);
}

Test(io_eof, no_io_entry_point_or_await_changes_errno, .timeout = 30)
{
    coro_sched_t *s = mk(0);
    struct keeper k = { .bad = 1000 };

    cr_assert_eq(pipe2(k.pipe, O_CLOEXEC), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k.sv), 0);
    k.lsn = listener(&k.refused);
    /* a port nobody listens on: the listener's, once closed */
    int tmp = listener(&k.refused);
    close(tmp);
    cr_assert_eq(block_on_r(s, &k.co, keeper_body, NULL), 0);
    cr_assert_eq(k.step, 0, "step %d changed errno", k.step);
    errno = 4242;
    cr_assert_eq(coro_close(s, k.pipe[0]), 0);
    cr_assert_eq(coro_close(s, k.pipe[0]), -EBADF);
    cr_assert_eq(coro_close(NULL, k.pipe[0]), -EBADF);
    cr_assert_eq(errno, 4242, "coro_close left errno %d", errno);
    close(k.pipe[1]);
    coro_close(s, k.sv[0]);
    close(k.sv[1]);
    close(k.lsn);
    coro_sched_destroy(s);
}

/* ---- a job whose fd always has data still sees its cancel ------------------------------
 * A constructor always makes its call, so a reader fed faster than it
 * reads (a byte a read, from a pipe kept full) never parks, and no arm
 * would tell it of a cancel (the forced yield keeps a completed result):
 * the constructor asks once its budget of immediate completions is spent
 * (coro__cancel_due).  A plain thread keeps the pipe full until the
 * reader has ended; the reader must end with -ECANCELED after coro_cancel
 * and after coro_sched_shutdown(CORO_CANCEL), at 0, 1 and 2 workers. */
struct fed {
    coro_t co;
    int fd;
    char buf[1];            /* one byte a read: the feeder stays far ahead */
    long reads;
    intptr_t last;
};

static int fed_reader(coro_t *co)
{
    struct fed *f = CORO_SELF(co, struct fed);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_read(f->fd, f->buf, sizeof f->buf, CORO_FOREVER));
        f->last = CORO_RESULT(co);
        if (f->last <= 0)
            break;
        __atomic_store_n(&f->reads, f->reads + 1, __ATOMIC_RELEASE);
    }
    CORO_RETURN(co, f->last);
    CORO_END(co);
}

struct feeder {
    int fd;
    int stop;
};

static void *fed_feed(void *arg)
{
    struct feeder *fe = arg;
    char buf[4096];

    memset(buf, 'f', sizeof buf);
    while (!__atomic_load_n(&fe->stop, __ATOMIC_ACQUIRE))
        if (write(fe->fd, buf, sizeof buf) < 0)
            sched_yield();      /* full (O_NONBLOCK): the reader is behind */
    return NULL;
}

static void fed_round(int workers, bool whole_sched)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct fed f = { 0 };
    struct feeder fe = { 0 };
    pthread_t th;
    int p[2];

    c.workers = workers;
    cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
    fe.fd = p[1];
    f.fd = p[0];
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(pthread_create(&th, NULL, fed_feed, &fe), 0);
    cr_assert_eq(coro_spawn(s, &f.co, fed_reader, NULL), 0);
    if (workers > 0) {
        /* bounded (10 s): until the reader has read a while, data always there */
        for (int i = 0; __atomic_load_n(&f.reads, __ATOMIC_ACQUIRE) < 1000; i++) {
            cr_assert_lt(i, 10000, "%d workers: the reader never read", workers);
            usleep(1000);
        }
    }
    if (whole_sched) {
        cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    } else {
        cr_assert_eq(coro_cancel(&f.co), 0);
    }
    intptr_t r = 0;
    int rc = coro_join_timeout(&f.co, &r, 10000 * MS);
    __atomic_store_n(&fe.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    cr_assert_eq(rc, 0, "%d workers, %s: the reader of an fd that always has data never saw "
                 "its cancel (%s)", workers, whole_sched ? "shutdown" : "coro_cancel",
                 coro_strerror(rc));
    cr_assert_eq(r, -ECANCELED, "%d workers: %ld", workers, (long)r);
    cr_assert_eq(coro_sched_destroy(s), 0);
    close(p[0]);
    close(p[1]);
}

Test(io_eof, a_job_whose_fd_always_has_data_sees_its_cancel, .timeout = 120)
{
    for (int workers = 0; workers <= 2; workers++) {
        fed_round(workers, false);
        fed_round(workers, true);
    }
}
