/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The plain-TCP short-read rule (lib/io/io.h READINESS, docs/architecture.md
 * "When a system call is skipped"): a short coro_read of a plain TCP socket
 * clears the fd's read bit and the next coro_read with a timeout parks
 * without its recv - one read a request in a keep-alive exchange, not two.
 * And the events that rule must not lose, each set up so that its edge is
 * counted before the read that meets it (the job sleeps until the fd's
 * readiness word shows it): the FIN or the RST that came with the last
 * bytes, data behind the urgent mark, a unix stream socket's read stopped
 * at an SCM_RIGHTS message, UDP datagrams queued behind the one read; and
 * a timeout of 0 that still makes its call while the word says "empty". */
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io.h"        /* white box: the readiness word, the read counter */
#include "white_box.h"

#define MS 1000000LL

/* fds[0]: the job's end (accepted), fds[1]: the peer's; both TCP_NODELAY */
static void tcp_pair(int fds[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(lfd, 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &l), 0);
    fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_eq(connect(fds[1], (struct sockaddr *)&a, sizeof a), 0);
    fds[0] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    cr_assert_geq(fds[0], 0);
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    close(lfd);
}

/* fds[0]: the job's, fds[1]: the peer's, connected UDP sockets on loopback */
static void udp_pair(int fds[2])
{
    struct sockaddr_in a[2];
    socklen_t l = sizeof a[0];

    for (int i = 0; i < 2; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].sin_family = AF_INET;
        a[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(fds[i], 0);
        cr_assert_eq(bind(fds[i], (struct sockaddr *)&a[i], sizeof a[i]), 0);
        cr_assert_eq(getsockname(fds[i], (struct sockaddr *)&a[i], &l), 0);
    }
    cr_assert_eq(connect(fds[0], (struct sockaddr *)&a[1], sizeof a[1]), 0);
    cr_assert_eq(connect(fds[1], (struct sockaddr *)&a[0], sizeof a[0]), 0);
}

/* fd's readiness word in the calling job's scheduler (0: no entry) */
static uint64_t word_of(coro_sched_t *s, int fd)
{
    return coro__readiness_load(coro__io_readiness_word(coro__sched_io(s), fd));
}

/* ---- the saving: one read a request ----------------------------------------------------- */

#define REQS 200

struct server {
    coro_t co;
    int fd, i;
    intptr_t err;
    char buf[256];
};

/* reads a request (a short read), answers, and reads the next */
static int server_body(coro_t *co)
{
    struct server *v = CORO_SELF(co, struct server);
    CORO_BEGIN(co);
    for (v->i = 0; v->i <= REQS; v->i++) {
        CORO_AWAIT(co, coro_read(v->fd, v->buf, sizeof v->buf, 10000 * MS));
        if (CORO_RESULT(co) != 4) {
            v->err = CORO_RESULT(co) < 0 ? CORO_RESULT(co) : -EPROTO;
            CORO_RETURN(co, -1);
        }
        CORO_AWAIT(co, coro_write_all(v->fd, "ok\n", 3, 10000 * MS));
        if (CORO_RESULT(co) != 0) {
            v->err = CORO_RESULT(co);
            CORO_RETURN(co, -1);
        }
    }
    CORO_END(co);
}

static void keep_alive(int workers)
{
    coro_sched_t *s = mk(workers);
    int fds[2];
    char b[8];
    struct joiner j;
    uint64_t before = 0;

    tcp_pair(fds);
    struct server v = { .fd = fds[0] };
    cr_assert_eq(coro_spawn(s, &v.co, server_body, NULL), 0);
    join_start(&j, &v.co);
    /* each request once the server waits for it (parked, or on its way):
     * its read finds nothing, as a client's think time makes it */
    for (int i = 0; i <= REQS; i++) {
        wait_suspended(&v.co);
        if (i == 1)     /* the first read registered the fd: count from here */
            before = __atomic_load_n(&coro__io_read_calls, __ATOMIC_RELAXED);
        cr_assert_eq(write(fds[1], "req\n", 4), 4);
        cr_assert_eq(read(fds[1], b, 3), 3, "request %d: no answer (%s)", i,
                     coro_strerror((int)v.err));
    }
    uint64_t calls = __atomic_load_n(&coro__io_read_calls, __ATOMIC_RELAXED) - before;
    cr_assert_eq(join_end(&j), 0, "%s", coro_strerror((int)v.err));
    cr_assert(word_of(s, fds[0]) & CORO__RDY_TCP, "the accepted socket is not taken for plain TCP");
    /* one recv a request (the woken job's); the old rule made two: the
     * constructor's, which got EAGAIN, then the woken job's */
    cr_assert_leq(calls, REQS + REQS / 4, "%d workers: %lu reads for %d requests", workers,
                  (unsigned long)calls, REQS);
    close(fds[0]);
    close(fds[1]);
    fin(s);
}

Test(io_tcp_short, a_keep_alive_exchange_makes_one_read_a_request, .timeout = 120)
{
    for (int w = 0; w <= 2; w++)
        keep_alive(w);
}

/* ---- what the rule must not lose ---------------------------------------------------------
 * The job reads a first message (its wait registers the fd), then lets
 * the peer send a burst and sleeps until the peer is done and the fd's
 * word shows `want` (the burst's edges counted), then reads with a 2 s
 * timeout until `expect` bytes came and, with `to_end`, the end.  A read
 * the rule wrongly parks shows as -ETIMEDOUT. */
struct prober {
    coro_t co;
    int fd;
    uint64_t want;          /* the word's bits to wait for */
    size_t expect;          /* bytes of the burst to read */
    bool to_end;            /* then read until 0 or an error */
    int phase;              /* atomic: 1 the job read its first message, 2 the peer sent */
    int64_t until;
    uint64_t word;          /* the word before the burst's first read */
    intptr_t first;         /* the burst's first read */
    intptr_t last;          /* the last read's result */
    size_t got;
    char buf[64], data[256];
};

static int prober_body(coro_t *co)
{
    struct prober *p = CORO_SELF(co, struct prober);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(p->fd, p->buf, sizeof p->buf, 10000 * MS));
    p->last = CORO_RESULT(co);
    if (p->last != 1)
        CORO_RETURN(co, -1);
    __atomic_store_n(&p->phase, 1, __ATOMIC_RELEASE);      /* the peer's burst may come */
    for (p->until = coro_now() + 20000 * MS;
         __atomic_load_n(&p->phase, __ATOMIC_ACQUIRE) != 2 ||
         (word_of(coro_sched_current(), p->fd) & p->want) != p->want;) {
        if (coro_now() > p->until)
            CORO_RETURN(co, -2);
        CORO_AWAIT(co, coro_sleep(2 * MS));
    }
    p->word = word_of(coro_sched_current(), p->fd);
    p->first = 0;
    for (;;) {
        CORO_AWAIT(co, coro_read(p->fd, p->buf, sizeof p->buf, 2000 * MS));
        p->last = CORO_RESULT(co);
        if (p->first == 0)
            p->first = p->last;
        if (p->last <= 0)
            break;
        if (p->got + (size_t)p->last <= sizeof p->data)
            memcpy(p->data + p->got, p->buf, (size_t)p->last);
        p->got += (size_t)p->last;
        if (!p->to_end && p->got >= p->expect)
            break;
    }
    CORO_END(co);
}

/* run p's job on a scheduler of `workers`: send(peer) once the job has its
 * first message; the job's result */
static intptr_t probe(int workers, struct prober *p, int peer, void (*send_burst)(int peer))
{
    coro_sched_t *s = mk(workers);
    struct joiner j;

    cr_assert_eq(coro_spawn(s, &p->co, prober_body, NULL), 0);
    join_start(&j, &p->co);
    wait_suspended(&p->co);
    cr_assert_eq(write(peer, "x", 1), 1);
    for (int64_t end = coro_now() + 20000 * MS; __atomic_load_n(&p->phase, __ATOMIC_ACQUIRE) != 1;) {
        cr_assert_lt(coro_now(), end, "the job never read its first message (%ld)", (long)p->last);
        sched_yield();
    }
    send_burst(peer);
    __atomic_store_n(&p->phase, 2, __ATOMIC_RELEASE);
    intptr_t res = join_end(&j);
    cr_assert_eq(coro_close(s, p->fd), 0);
    fin(s);
    return res;
}

static void send_last_and_fin(int peer)
{
    cr_assert_eq(write(peer, "last", 4), 4);
    cr_assert_eq(shutdown(peer, SHUT_WR), 0);
}

Test(io_tcp_short, a_fin_that_came_with_the_last_bytes_is_still_read_as_the_end, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        int fds[2];
        tcp_pair(fds);
        struct prober p = { .fd = fds[0], .want = CORO__RDY_RD_CLOSED, .to_end = true };
        cr_assert_eq(probe(w, &p, fds[1], send_last_and_fin), 0, "%d workers: %ld", w, (long)p.last);
        cr_assert(p.word & CORO__RDY_TCP);
        cr_assert_eq(p.first, 4, "%d workers: the last bytes: %ld", w, (long)p.first);
        cr_assert_eq(p.last, 0, "%d workers: after the last bytes: %s (the end was lost)", w,
                     coro_strerror((int)p.last));
        close(fds[1]);
    }
}

static void send_last_and_rst(int peer)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };
    cr_assert_eq(write(peer, "last", 4), 4);
    cr_assert_eq(setsockopt(peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    cr_assert_eq(close(peer), 0);      /* an RST */
}

Test(io_tcp_short, an_rst_that_came_with_the_last_bytes_ends_the_reads, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        int fds[2];
        tcp_pair(fds);
        struct prober p = { .fd = fds[0], .want = CORO__RDY_RD_CLOSED, .to_end = true };
        cr_assert_eq(probe(w, &p, fds[1], send_last_and_rst), 0, "%d workers: %ld", w, (long)p.last);
        cr_assert(p.word & CORO__RDY_TCP);
        /* the bytes, then -ECONNRESET or 0; or the error at once */
        cr_assert(p.last == 0 || p.last == -ECONNRESET, "%d workers: %s (the end was lost)", w,
                  coro_strerror((int)p.last));
    }
}

static void send_urgent(int peer)
{
    cr_assert_eq(send(peer, "abc", 3, 0), 3);
    cr_assert_eq(send(peer, "U", 1, MSG_OOB), 1);   /* the mark: the next read stops at it */
    cr_assert_eq(send(peer, "def", 3, 0), 3);
}

Test(io_tcp_short, data_behind_the_urgent_mark_is_read_without_a_new_edge, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        int fds[2];
        tcp_pair(fds);
        /* the peer stays open: only the rule's own edges can wake the job */
        struct prober p = { .fd = fds[0], .want = CORO__RDY_URG | CORO__RDY_RD, .expect = 6 };
        cr_assert_eq(probe(w, &p, fds[1], send_urgent), 0, "%d workers: %ld", w, (long)p.last);
        cr_assert(p.word & CORO__RDY_TCP);
        cr_assert_eq(p.first, 3, "%d workers: the read did not stop at the mark (%ld)", w,
                     (long)p.first);
        cr_assert_eq(p.got, 6, "%d workers: %zu bytes, the last read %s", w, p.got,
                     coro_strerror((int)p.last));
        cr_assert_eq(memcmp(p.data, "abcdef", 6), 0);
        close(fds[1]);
    }
}

static void send_with_fd(int peer)
{
    int pfd[2];
    cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { .iov_base = "abc", .iov_len = 3 };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf };
    memset(cbuf, 0, sizeof cbuf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pfd[0], sizeof(int));
    cr_assert_eq(sendmsg(peer, &m, 0), 3);
    cr_assert_eq(send(peer, "def", 3, 0), 3);
    close(pfd[0]);
    close(pfd[1]);
}

Test(io_tcp_short, a_unix_stream_read_stopped_at_passed_fds_keeps_its_readiness, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        int fds[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct prober p = { .fd = fds[0], .want = CORO__RDY_RD, .expect = 6 };
        cr_assert_eq(probe(w, &p, fds[1], send_with_fd), 0, "%d workers: %ld", w, (long)p.last);
        cr_assert_eq(p.word & CORO__RDY_TCP, 0, "a unix socket taken for plain TCP");
        cr_assert_eq(p.first, 3, "%d workers: the read did not stop at the fds (%ld)", w,
                     (long)p.first);
        cr_assert_eq(p.got, 6, "%d workers: %zu bytes, the last read %s", w, p.got,
                     coro_strerror((int)p.last));
        close(fds[1]);
    }
}

static void send_two_datagrams(int peer)
{
    cr_assert_eq(send(peer, "a1", 2, 0), 2);
    cr_assert_eq(send(peer, "b2", 2, 0), 2);
}

Test(io_tcp_short, a_short_udp_read_keeps_readiness_for_the_next_datagram, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        int fds[2];
        udp_pair(fds);
        struct prober p = { .fd = fds[0], .want = CORO__RDY_RD, .expect = 4 };
        cr_assert_eq(probe(w, &p, fds[1], send_two_datagrams), 0, "%d workers: %ld", w,
                     (long)p.last);
        cr_assert_eq(p.word & CORO__RDY_TCP, 0, "a UDP socket taken for plain TCP");
        cr_assert_eq(p.first, 2);
        cr_assert_eq(p.got, 4, "%d workers: %zu bytes, the last read %s", w, p.got,
                     coro_strerror((int)p.last));
        cr_assert_eq(memcmp(p.data, "a1b2", 4), 0);
        close(fds[1]);
    }
}

/* ---- a timeout of 0 always calls ------------------------------------------------------------
 * The job reads a byte (a short read: the word's read bit goes), the peer
 * sends the next, and the job, without yielding, waits until poll(2) sees
 * it queued; while the word still says "empty" (the edge not yet counted)
 * its coro_read with a timeout of 0 - or, after coro_readable said
 * readable, with a timeout of 1 ns - must make the call and get the byte. */
#define ROUNDS0 200

struct zero {
    coro_t co;
    int fd, i;              /* i: written by the job, read by the peer (relaxed) */
    bool readable;          /* coro_readable first, then a read of a 1 ns timeout */
    int sent;               /* atomic: bytes the peer sent */
    int tried;              /* rounds read while the word said "skip" */
    intptr_t err;
    char buf[64];
};

static int zero_body(coro_t *co)
{
    struct zero *z = CORO_SELF(co, struct zero);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(z->fd, z->buf, sizeof z->buf, 10000 * MS));
    if (CORO_RESULT(co) != 1)
        CORO_RETURN(co, -1);
    for (__atomic_store_n(&z->i, 1, __ATOMIC_RELAXED); z->i <= ROUNDS0;
         __atomic_store_n(&z->i, z->i + 1, __ATOMIC_RELAXED)) {
        /* wait (no yield) for the peer's byte i to be queued */
        for (int64_t end = coro_now() + 10000 * MS;;) {
            struct pollfd pf = { .fd = z->fd, .events = POLLIN };
            if (__atomic_load_n(&z->sent, __ATOMIC_ACQUIRE) >= z->i && poll(&pf, 1, 0) == 1)
                break;
            if (coro_now() > end)
                CORO_RETURN(co, -2);
        }
        if (coro__readiness_skip(word_of(coro_sched_current(), z->fd)))
            z->tried++;
        if (z->readable) {
            CORO_AWAIT(co, coro_readable(z->fd, 10000 * MS));
            if (CORO_RESULT(co) != 0) {
                __atomic_store_n(&z->err, CORO_RESULT(co), __ATOMIC_RELAXED);
                CORO_RETURN(co, -4);
            }
        }
        CORO_AWAIT(co, coro_read(z->fd, z->buf, sizeof z->buf, z->readable ? 1 : 0));
        if (CORO_RESULT(co) != 1) {
            __atomic_store_n(&z->err, CORO_RESULT(co) ? CORO_RESULT(co) : -EPIPE, __ATOMIC_RELAXED);
            CORO_RETURN(co, -3);
        }
    }
    CORO_END(co);
}

static void zero_rounds(bool readable)
{
    coro_sched_t *s = mk(1);
    int fds[2];
    struct joiner j;

    tcp_pair(fds);
    struct zero z = { .fd = fds[0], .readable = readable };
    cr_assert_eq(coro_spawn(s, &z.co, zero_body, NULL), 0);
    join_start(&j, &z.co);
    wait_suspended(&z.co);
    cr_assert_eq(write(fds[1], "x", 1), 1);
    for (int i = 1; i <= ROUNDS0 && !__atomic_load_n(&z.err, __ATOMIC_RELAXED); i++) {
        /* the byte before: read (or the job gave up: its error is asserted below) */
        for (int64_t end = coro_now() + 20000 * MS;
             __atomic_load_n(&z.i, __ATOMIC_RELAXED) < i && !__atomic_load_n(&z.err, __ATOMIC_RELAXED);) {
            cr_assert_lt(coro_now(), end, "round %d never began", i);
            sched_yield();
        }
        cr_assert_eq(write(fds[1], "y", 1), 1);
        __atomic_store_n(&z.sent, i, __ATOMIC_RELEASE);
    }
    intptr_t res = join_end(&j);
    cr_assert_eq(res, 0, "round %d: %s", z.i, coro_strerror((int)z.err));
    cr_assert_gt(z.tried, 0, "no round found the word saying empty: the test proves nothing");
    cr_assert_eq(coro_close(s, fds[0]), 0);
    close(fds[1]);
    fin(s);
}

Test(io_tcp_short, a_read_with_a_timeout_of_0_calls_while_the_word_says_empty, .timeout = 120)
{
    zero_rounds(false);
}

/* coro_readable's report (poll) sets the word's read bit: the read after
 * it calls, however short its timeout, before the edge is counted */
Test(io_tcp_short, a_read_after_a_readable_report_calls_whatever_its_timeout, .timeout = 120)
{
    zero_rounds(true);
}

/* ---- a listening socket is not plain TCP for the rule ------------------------------------
 * Its registration for reading (a readable wait that times out) leaves
 * the word "registered, not ready"; a coro_read of it must still fail at
 * once with recv's -ENOTCONN, not wait for a connection. */
struct lread {
    coro_t co;
    int fd;
    intptr_t waited, read;
    int64_t took;
    char buf[8];
};

static int lread_body(coro_t *co)
{
    struct lread *r = CORO_SELF(co, struct lread);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_readable(r->fd, 1 * MS));
    r->waited = CORO_RESULT(co);
    r->took = coro_now();
    CORO_AWAIT(co, coro_read(r->fd, r->buf, sizeof r->buf, 3000 * MS));
    r->read = CORO_RESULT(co);
    r->took = coro_now() - r->took;
    CORO_END(co);
}

Test(io_tcp_short, a_read_of_a_listening_socket_fails_at_once_with_enotconn, .timeout = 60)
{
    coro_sched_t *s = mk(1);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(lfd, 0);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    struct lread r = { .fd = lfd };
    cr_assert_eq(coro_spawn(s, &r.co, lread_body, NULL), 0);
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(r.waited, -ETIMEDOUT);
    cr_assert_eq(word_of(s, lfd) & CORO__RDY_TCP, 0, "a listening socket taken for plain TCP");
    cr_assert_eq(r.read, -ENOTCONN, "%s", coro_strerror((int)r.read));
    cr_assert_lt(r.took, 2000 * MS, "the read waited before failing");
    cr_assert_eq(coro_close(s, lfd), 0);
    fin(s);
}
