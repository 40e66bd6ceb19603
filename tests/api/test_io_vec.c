/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_readv, coro_writev, coro_writev_all, coro_sendfile, coro_splice:
 * transfers over socketpairs, pipes, TCP and files, across waits; the
 * progress a timeout leaves; bad input; cancel; end and reset from a real
 * peer. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "fixture_ioext.h"

#define BIG (4u << 20)

static int sockpair(int sv[2])
{
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
}

/* a small send buffer, so that a large write waits */
static void small_buf(int fd)
{
    int sz = 4096;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
}

static char *pattern(size_t n, unsigned seed)
{
    char *p = malloc(n);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(i * 31 + seed + i / 4099);
    return p;
}

Test(io_vec, writev_then_readv_move_a_vector_over_a_socket_and_a_pipe, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        for (int kind = 0; kind < 2; kind++) {
            int sv[2];
            cr_assert_eq(kind ? pipe2(sv, O_CLOEXEC) : sockpair(sv), 0);
            int rd = sv[0], wr = kind ? sv[1] : sv[1];
            char a[] = "hello, ", b[] = "vectored ", c[] = "world";
            struct iovec out[3] = { { a, 7 }, { b, 9 }, { c, 5 } };
            struct xop x = { .kind = X_WRITEV, .fd = wr, .iov = out, .cnt = 3, .timeout = CORO_FOREVER };
            cr_assert_eq(xrun(s, &x), 21);
            char r1[4], r2[64] = { 0 };
            struct iovec in[2] = { { r1, 4 }, { r2, sizeof r2 } };
            x = (struct xop){ .kind = X_READV, .fd = rd, .iov = in, .cnt = 2, .timeout = CORO_FOREVER };
            cr_assert_eq(xrun(s, &x), 21);
            cr_assert_eq(memcmp(r1, "hell", 4), 0);
            cr_assert_str_eq(r2, "o, vectored world");
            /* nothing there: a timeout of 0 and a short one */
            x.timeout = 0;
            cr_assert_eq(xrun(s, &x), -ETIMEDOUT);
            x.timeout = 10 * MS;
            cr_assert_eq(xrun(s, &x), -ETIMEDOUT);
            /* the writer's end goes: the reader sees the end */
            close(wr);
            x.timeout = CORO_FOREVER;
            cr_assert_eq(xrun(s, &x), 0);
            close(rd);
        }
        fin(s);
    }
}

Test(io_vec, vector_calls_refuse_bad_input, .timeout = 30)
{
    coro_sched_t *s = mk(0);
    int sv[2];
    cr_assert_eq(sockpair(sv), 0);
    char a[4];
    struct iovec ok = { a, sizeof a }, nullent = { NULL, 3 };
    struct iovec many[IOV_MAX + 1];
    for (int i = 0; i <= IOV_MAX; i++)
        many[i] = (struct iovec){ a, 1 };
    struct { int fd; struct iovec *iov; int cnt; int64_t t; int kind; intptr_t want; } cases[] = {
        { -1, &ok, 1, CORO_FOREVER, X_READV, -EBADF },
        { sv[0], NULL, 1, CORO_FOREVER, X_READV, -EINVAL },
        { sv[0], &ok, -1, CORO_FOREVER, X_WRITEV, -EINVAL },
        { sv[0], &nullent, 1, CORO_FOREVER, X_WRITEV, -EINVAL },
        { sv[0], &ok, 1, -5, X_WRITEV_ALL, -EINVAL },
        { sv[0], many, IOV_MAX + 1, CORO_FOREVER, X_WRITEV, -EINVAL },
        { 1000000, &ok, 1, 0, X_READV, -EBADF },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct xop x = { .kind = cases[i].kind, .fd = cases[i].fd, .iov = cases[i].iov,
                         .cnt = cases[i].cnt, .timeout = cases[i].t };
        cr_assert_eq(xrun(s, &x), cases[i].want, "case %zu: %s", i, coro_strerror((int)x.res));
    }
    /* an empty vector is no error */
    struct xop x = { .kind = X_WRITEV_ALL, .fd = sv[0], .iov = NULL, .cnt = 0, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), 0);
    /* writev_all takes more than IOV_MAX entries */
    x = (struct xop){ .kind = X_WRITEV_ALL, .fd = sv[0], .iov = many, .cnt = IOV_MAX + 1,
                      .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &x), 0);
    char got[IOV_MAX + 1];
    x = (struct xop){ .kind = X_READ_EXACT, .fd = sv[1], .buf = got, .len = sizeof got,
                      .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &x), IOV_MAX + 1);
    close(sv[0]);
    close(sv[1]);
    fin(s);
}

Test(io_vec, writev_all_finishes_a_large_vector_while_a_reader_drains_it, .timeout = 60)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2];
        cr_assert_eq(sockpair(sv), 0);
        small_buf(sv[0]);
        char *src = pattern(BIG, 7), *dst = calloc(1, BIG);
        struct iovec iov[64];
        for (int i = 0; i < 64; i++)
            iov[i] = (struct iovec){ src + (size_t)i * (BIG / 64), BIG / 64 };
        struct xop wr = { .kind = X_WRITEV_ALL, .fd = sv[0], .iov = iov, .cnt = 64,
                          .timeout = CORO_FOREVER };
        struct xop rd = { .kind = X_READ_EXACT, .fd = sv[1], .buf = dst, .len = BIG,
                          .timeout = CORO_FOREVER };
        xspawn(s, &wr);
        xspawn(s, &rd);
        cr_assert_eq(xjoin(&wr), 0);
        cr_assert_eq(xjoin(&rd), (intptr_t)BIG);
        cr_assert_eq(memcmp(src, dst, BIG), 0);
        for (int i = 0; i < 64; i++)
            cr_assert_eq(iov[i].iov_len, 0u);
        free(src);
        free(dst);
        close(sv[0]);
        close(sv[1]);
        fin(s);
    }
}

Test(io_vec, writev_all_timeout_leaves_in_the_array_exactly_what_is_left, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    int sv[2];
    cr_assert_eq(sockpair(sv), 0);
    small_buf(sv[0]);
    size_t n = 1u << 20;
    char *src = pattern(n, 3), *dst = calloc(1, n);
    struct iovec iov[4];
    for (int i = 0; i < 4; i++)
        iov[i] = (struct iovec){ src + (size_t)i * (n / 4), n / 4 };
    struct xop wr = { .kind = X_WRITEV_ALL, .fd = sv[0], .iov = iov, .cnt = 4, .timeout = 20 * MS };
    cr_assert_eq(xrun(s, &wr), -ETIMEDOUT);
    size_t left = 0;
    int first = -1;
    for (int i = 0; i < 4; i++) {
        left += iov[i].iov_len;
        if (first < 0 && iov[i].iov_len)
            first = i;
    }
    cr_assert(left > 0 && left < n, "left %zu", left);
    cr_assert_eq((char *)iov[first].iov_base + iov[first].iov_len, src + (size_t)(first + 1) * (n / 4));
    /* a second call over the same array goes on where the first stopped */
    struct xop rd = { .kind = X_READ_EXACT, .fd = sv[1], .buf = dst, .len = n, .timeout = CORO_FOREVER };
    xspawn(s, &rd);
    wr.timeout = CORO_FOREVER;
    wr.iov = iov;
    cr_assert_eq(xrun(s, &wr), 0);
    cr_assert_eq(xjoin(&rd), (intptr_t)n);
    cr_assert_eq(memcmp(src, dst, n), 0);
    free(src);
    free(dst);
    close(sv[0]);
    close(sv[1]);
    fin(s);
}

Test(io_vec, waits_end_with_ecanceled_when_the_job_is_cancelled, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2], pp[2];
        cr_assert_eq(sockpair(sv), 0);
        cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
        char a[16];
        struct iovec v = { a, sizeof a };
        struct xop x = { .kind = X_READV, .fd = sv[0], .iov = &v, .cnt = 1, .timeout = CORO_FOREVER };
        cr_assert_eq(xcancel(s, w, &x), -ECANCELED);
        /* a splice with nothing to move, then one whose output is full */
        x = (struct xop){ .kind = X_SPLICE, .fd = pp[0], .fd2 = sv[0], .len = 4096, .timeout = CORO_FOREVER };
        cr_assert_eq(xcancel(s, w, &x), -ECANCELED);
        /* writev_all into a full socket */
        small_buf(sv[0]);
        size_t n = 1u << 20;
        char *src = pattern(n, 1);
        struct iovec big = { src, n };
        x = (struct xop){ .kind = X_WRITEV_ALL, .fd = sv[0], .iov = &big, .cnt = 1, .timeout = CORO_FOREVER };
        cr_assert_eq(xcancel(s, w, &x), -ECANCELED);
        cr_assert(big.iov_len < n && big.iov_len > 0);
        free(src);
        close(sv[0]);
        close(sv[1]);
        close(pp[0]);
        close(pp[1]);
        fin(s);
    }
}

/* a file of n pattern bytes, unlinked; its fd */
static int temp_file(const char *src, size_t n)
{
    char path[] = "/tmp/corokit-vec-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    cr_assert_eq(write(fd, src, n), (ssize_t)n);
    return fd;
}

Test(io_vec, sendfile_sends_a_whole_file_across_waits_and_says_where_it_stopped, .timeout = 60)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        size_t n = 1u << 20;
        char *src = pattern(n, 9), *dst = calloc(1, n + 16);
        int f = temp_file(src, n);
        int sv[2];
        cr_assert_eq(sockpair(sv), 0);
        small_buf(sv[0]);
        off_t off = 0;
        struct xop sf = { .kind = X_SENDFILE, .fd = sv[0], .fd2 = f, .offp = &off, .len = n,
                          .timeout = CORO_FOREVER };
        struct xop rd = { .kind = X_READ_EXACT, .fd = sv[1], .buf = dst, .len = n, .timeout = CORO_FOREVER };
        xspawn(s, &sf);
        xspawn(s, &rd);
        cr_assert_eq(xjoin(&sf), 0);
        cr_assert_eq(xjoin(&rd), (intptr_t)n);
        cr_assert_eq(off, (off_t)n);
        cr_assert_eq(memcmp(src, dst, n), 0);
        /* no reader: a timeout, and the offset says how far it got */
        off = 0;
        sf.timeout = 20 * MS;
        cr_assert_eq(xrun(s, &sf), -ETIMEDOUT);
        cr_assert(off > 0 && off < (off_t)n, "off %lld", (long long)off);
        /* the rest, once a reader drains the socket */
        size_t rest = n - (size_t)off;
        off_t at = off;
        rd = (struct xop){ .kind = X_READ_EXACT, .fd = sv[1], .buf = dst, .len = n, .timeout = CORO_FOREVER };
        xspawn(s, &rd);
        sf.len = rest;
        sf.timeout = CORO_FOREVER;
        cr_assert_eq(xrun(s, &sf), 0);
        cr_assert_eq(xjoin(&rd), (intptr_t)n);
        cr_assert_eq(memcmp(dst, src, (size_t)at), 0);
        cr_assert_eq(memcmp(dst + at, src + at, rest), 0);
        /* no reader, no timeout: a cancel ends it, the offset says how far */
        off = 0;
        sf.len = n;
        cr_assert_eq(xcancel(s, w, &sf), -ECANCELED);
        cr_assert(off > 0 && off < (off_t)n, "off %lld", (long long)off);
        rd = (struct xop){ .kind = X_READ_EXACT, .fd = sv[1], .buf = dst, .len = (size_t)off,
                           .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &rd), (intptr_t)off);     /* drain what it sent */
        /* past the end of the file */
        off = (off_t)n - 10;
        sf.len = 20;
        cr_assert_eq(xrun(s, &sf), -ENODATA);
        cr_assert_eq(off, (off_t)n);
        /* bad input */
        sf = (struct xop){ .kind = X_SENDFILE, .fd = sv[0], .fd2 = -1, .offp = &off, .len = 1, .timeout = 0 };
        cr_assert_eq(xrun(s, &sf), -EBADF);
        off = -1;
        sf.fd2 = f;
        cr_assert_eq(xrun(s, &sf), -EINVAL);
        free(src);
        free(dst);
        close(f);
        close(sv[0]);
        close(sv[1]);
        fin(s);
    }
}

static char drained_tail[4];

/* read the socket (made non-blocking by the splice before) until the
 * bytes "more" came last */
static void drain(void *arg)
{
    int fd = *(int *)arg;
    static char sink[1 << 16];
    char tail[4] = { 0 };
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        cr_assert_eq(poll(&p, 1, -1), 1);
        ssize_t k = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (k < 0 && errno == EAGAIN)
            continue;
        cr_assert_gt(k, 0);
        for (ssize_t i = 0; i < k; i++) {
            memmove(tail, tail + 1, 3);
            tail[3] = sink[i];
        }
        if (memcmp(tail, "more", 4) == 0) {
            memcpy(drained_tail, tail, 4);
            return;
        }
    }
}

Test(io_vec, splice_moves_bytes_between_a_pipe_and_a_socket_waiting_on_either_side, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2], pp[2];
        cr_assert_eq(sockpair(sv), 0);
        cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
        /* socket -> pipe, waiting for the socket to have data */
        struct xop sp = { .kind = X_SPLICE, .fd = sv[1], .fd2 = pp[1], .len = 65536, .timeout = CORO_FOREVER };
        xspawn(s, &sp);
        cr_assert_eq(write(sv[0], "spliced", 7), 7);
        cr_assert_eq(xjoin(&sp), 7);
        char got[16] = { 0 };
        cr_assert_eq(read(pp[0], got, sizeof got), 7);
        cr_assert_str_eq(got, "spliced");
        /* pipe -> socket whose buffer is full: waits on the socket */
        small_buf(sv[0]);
        char junk[4096] = { 0 };
        while (send(sv[0], junk, sizeof junk, MSG_DONTWAIT) > 0)
            ;
        cr_assert_eq(write(pp[1], "more", 4), 4);
        sp = (struct xop){ .kind = X_SPLICE, .fd = pp[0], .fd2 = sv[0], .len = 4, .timeout = 20 * MS };
        cr_assert_eq(xrun(s, &sp), -ETIMEDOUT);
        /* drain the peer from a plain thread: the waiting splice then moves the 4 bytes */
        struct xafter dr;
        sp.timeout = CORO_FOREVER;
        xspawn(s, &sp);
        xafter_start(&dr, &sp, drain, &sv[1]);
        cr_assert_eq(xjoin(&sp), 4);
        xafter_end(&dr);
        cr_assert_eq(memcmp(drained_tail, "more", 4), 0);
        /* the end of the input */
        close(pp[1]);
        sp = (struct xop){ .kind = X_SPLICE, .fd = pp[0], .fd2 = sv[0], .len = 4, .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &sp), 0);
        /* neither a pipe */
        sp = (struct xop){ .kind = X_SPLICE, .fd = sv[0], .fd2 = sv[1], .len = 4, .timeout = 0 };
        cr_assert_eq(xrun(s, &sp), -EINVAL);
        sp.fd = -1;
        cr_assert_eq(xrun(s, &sp), -EBADF);
        close(pp[0]);
        close(sv[0]);
        close(sv[1]);
        fin(s);
    }
}

/* a TCP connection over loopback: *a the client, *b the accepted end */
static void tcp_pair(int *a, int *b)
{
    int port = 0, l = listen_loopback(&port);
    cr_assert_geq(l, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_eq(connect(*a, (struct sockaddr *)&sa, sizeof sa), 0);
    *b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    cr_assert_geq(*b, 0);
    close(l);
}

Test(io_vec, readv_and_writev_see_the_end_and_a_reset_from_a_tcp_peer, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int a, b;
        tcp_pair(&a, &b);
        char buf[32];
        struct iovec v = { buf, sizeof buf };
        struct xop x = { .kind = X_READV, .fd = a, .iov = &v, .cnt = 1, .timeout = CORO_FOREVER };
        xspawn(s, &x);
        shutdown(b, SHUT_WR);
        cr_assert_eq(xjoin(&x), 0);
        /* a reset: close with a zero linger */
        struct linger lg = { 1, 0 };
        setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(b);
        char one = 'x';
        struct iovec o = { &one, 1 };
        x = (struct xop){ .kind = X_WRITEV, .fd = a, .iov = &o, .cnt = 1, .timeout = CORO_FOREVER };
        intptr_t r = xrun(s, &x);
        cr_assert(r == -ECONNRESET || r == -EPIPE, "%s", coro_strerror((int)r));
        close(a);
        fin(s);
    }
}
