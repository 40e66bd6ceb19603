/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_read_exact and coro_bufreader_t: records assembled across waits,
 * a line longer than the buffer, the end with and without a last
 * delimiter, a reset, and nothing lost on a timeout or a cancel. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include "fixture_ioext.h"

struct late { int fd; const char *s; };

static void late_write(void *arg)
{
    struct late *l = arg;
    size_t n = strlen(l->s);
    /* in two pieces, so the record is assembled across two reads */
    cr_assert_eq(write(l->fd, l->s, n / 2), (ssize_t)(n / 2));
    sleep_ms(5);
    cr_assert_eq(write(l->fd, l->s + n / 2, n - n / 2), (ssize_t)(n - n / 2));
}

Test(io_bufread, lines_come_whole_across_waits_and_the_last_one_without_a_newline, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        char buf[64];
        coro_bufreader_t r;
        cr_assert_eq(coro_bufreader_init(&r, sv[1], buf, sizeof buf), 0);
        struct xop x = { .kind = X_LINE, .r = &r, .timeout = CORO_FOREVER };
        struct late l = { sv[0], "first line\nsecond\nthi" };
        struct xafter a;
        xspawn(s, &x);
        xafter_start(&a, &x, late_write, &l);
        cr_assert_eq(xjoin(&x), 11);
        xafter_end(&a);
        cr_assert_eq(memcmp(x.line, "first line\n", 11), 0);
        cr_assert_eq(xrun(s, &x), 7);
        cr_assert_eq(memcmp(x.line, "second\n", 7), 0);
        cr_assert_eq(coro_bufreader_buffered(&r), 3u);
        /* "thi" waits for its end: a timeout consumes nothing */
        x.timeout = 10 * MS;
        cr_assert_eq(xrun(s, &x), -ETIMEDOUT);
        cr_assert_eq(coro_bufreader_buffered(&r), 3u);
        x.timeout = CORO_FOREVER;
        cr_assert_eq(xcancel(s, w, &x), -ECANCELED);
        cr_assert_eq(coro_bufreader_buffered(&r), 3u);
        /* a delimiter read, then the end: the last bytes without one, then 0 */
        cr_assert_eq(write(sv[0], "rd;fourth", 9), 9);
        x = (struct xop){ .kind = X_UNTIL, .r = &r, .delim = ';', .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &x), 6);
        cr_assert_eq(memcmp(x.line, "third;", 6), 0);
        shutdown(sv[0], SHUT_WR);
        x.kind = X_LINE;
        cr_assert_eq(xrun(s, &x), 6);
        cr_assert_eq(memcmp(x.line, "fourth", 6), 0);
        cr_assert_eq(xrun(s, &x), 0);
        cr_assert_eq(xrun(s, &x), 0);
        close(sv[0]);
        close(sv[1]);
        fin(s);
    }
}

Test(io_bufread, a_line_longer_than_the_buffer_gives_emsgsize_and_the_reader_goes_on, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    char buf[16];
    coro_bufreader_t r;
    cr_assert_eq(coro_bufreader_init(&r, sv[1], buf, sizeof buf), 0);
    const char *in = "0123456789abcdefghijklmnopqrstuvwxyz\nok\n";
    cr_assert_eq(write(sv[0], in, strlen(in)), (ssize_t)strlen(in));
    struct xop x = { .kind = X_LINE, .r = &r, .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &x), -EMSGSIZE);
    cr_assert_eq(memcmp(x.line, "0123456789abcdef", 16), 0);
    cr_assert_eq(xrun(s, &x), -EMSGSIZE);
    cr_assert_eq(memcmp(x.line, "ghijklmnopqrstuv", 16), 0);
    cr_assert_eq(xrun(s, &x), 5);
    cr_assert_eq(memcmp(x.line, "wxyz\n", 5), 0);
    cr_assert_eq(xrun(s, &x), 3);
    cr_assert_eq(memcmp(x.line, "ok\n", 3), 0);
    /* exact records: n bytes at a time, -EPIPE at an end mid-record */
    cr_assert_eq(write(sv[0], "abcdefg", 7), 7);
    x = (struct xop){ .kind = X_EXACT, .r = &r, .len = 3, .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &x), 3);
    cr_assert_eq(memcmp(x.line, "abc", 3), 0);
    cr_assert_eq(xrun(s, &x), 3);
    close(sv[0]);
    cr_assert_eq(xrun(s, &x), -EPIPE);
    cr_assert_eq(coro_bufreader_buffered(&r), 1u);
    /* bad input */
    x.len = 17;
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x.len = 0;
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_UNTIL, .r = &r, .delim = 256, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_LINE, .r = NULL, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    cr_assert_eq(coro_bufreader_init(&r, 3, NULL, 4), -EINVAL);
    cr_assert_eq(coro_bufreader_init(&r, 3, buf, 0), -EINVAL);
    cr_assert_eq(coro_bufreader_init(&r, -1, buf, 4), -EBADF);
    cr_assert_eq(coro_bufreader_buffered(NULL), 0u);
    close(sv[1]);
    fin(s);
}

Test(io_bufread, read_exact_reads_every_byte_and_tells_a_clean_end_from_a_cut_one, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        char buf[32] = { 0 };
        struct xop x = { .kind = X_READ_EXACT, .fd = sv[1], .buf = buf, .len = 22, .timeout = CORO_FOREVER };
        struct late l = { sv[0], "first line\nsecond\nthi+" };
        struct xafter a;
        xspawn(s, &x);
        xafter_start(&a, &x, late_write, &l);
        cr_assert_eq(xjoin(&x), 22);
        xafter_end(&a);
        cr_assert_eq(memcmp(buf, l.s, 22), 0);
        x.timeout = 0;
        cr_assert_eq(xrun(s, &x), -ETIMEDOUT);
        cr_assert_eq(write(sv[0], "abc", 3), 3);
        x.timeout = 10 * MS;
        cr_assert_eq(xrun(s, &x), -ETIMEDOUT);
        close(sv[0]);
        x.timeout = CORO_FOREVER;
        cr_assert_eq(xrun(s, &x), 0);       /* the 3 bytes were taken by the timed-out call */
        x.len = 0;
        cr_assert_eq(xrun(s, &x), 0);
        x = (struct xop){ .kind = X_READ_EXACT, .fd = sv[1], .buf = NULL, .len = 3, .timeout = 0 };
        cr_assert_eq(xrun(s, &x), -EINVAL);
        x.fd = -1;
        cr_assert_eq(xrun(s, &x), -EBADF);
        close(sv[1]);
        /* cut in the middle: -EPIPE; a reset: -ECONNRESET */
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(write(sv[0], "ab", 2), 2);
        close(sv[0]);
        x = (struct xop){ .kind = X_READ_EXACT, .fd = sv[1], .buf = buf, .len = 3, .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &x), -EPIPE);
        close(sv[1]);
        int a1, b1, port = 0, lfd = listen_loopback(&port);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        a1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_eq(connect(a1, (struct sockaddr *)&sa, sizeof sa), 0);
        b1 = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        struct linger lg = { 1, 0 };
        setsockopt(b1, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        x.fd = a1;
        x.len = 4;
        xspawn(s, &x);
        close(b1);
        cr_assert_eq(xjoin(&x), -ECONNRESET);
        close(a1);
        close(lfd);
        fin(s);
    }
}
