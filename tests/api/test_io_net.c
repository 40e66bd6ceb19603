/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_listen and coro_dial: "host:port" by name and number, IPv6, unix
 * paths and the abstract namespace, a name that does not resolve, a
 * refused port, bad input, a timeout and a cancel while dialling. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include "fixture_ioext.h"

static int port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&ss, &l), 0);
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

/* dial addr; the connection is accepted on l and one byte crosses it */
static void dial_ok(coro_sched_t *s, int l, const char *addr)
{
    struct xop x = { .kind = X_DIAL, .addr = addr, .timeout = 5000 * MS };
    intptr_t fd = xrun(s, &x);
    cr_assert_geq(fd, 0, "dial %s: %s", addr, coro_strerror((int)fd));
    cr_assert(fcntl((int)fd, F_GETFL) & O_NONBLOCK);
    cr_assert(fcntl((int)fd, F_GETFD) & FD_CLOEXEC);
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    cr_assert_geq(c, 0);
    cr_assert_eq(write(c, "!", 1), 1);
    char b = 0;
    struct xop r = { .kind = X_READ_EXACT, .fd = (int)fd, .buf = &b, .len = 1, .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &r), 1);
    cr_assert_eq(b, '!');
    close(c);
    close((int)fd);
}

Test(io_net, dial_reaches_a_local_server_by_name_by_number_and_over_ipv6, .timeout = 60)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int l = coro_listen(AF_INET, "127.0.0.1:0", 16);
        cr_assert_geq(l, 0, "%s", coro_strerror(l));
        char addr[64];
        snprintf(addr, sizeof addr, "localhost:%d", port_of(l));
        dial_ok(s, l, addr);
        snprintf(addr, sizeof addr, "127.0.0.1:%d", port_of(l));
        dial_ok(s, l, addr);
        close(l);
        l = coro_listen(AF_UNSPEC, "localhost:0", 16);
        cr_assert_geq(l, 0, "%s", coro_strerror(l));
        close(l);
        l = coro_listen(AF_INET6, "[::1]:0", 16);
        if (l >= 0) {
            snprintf(addr, sizeof addr, "[::1]:%d", port_of(l));
            dial_ok(s, l, addr);
            close(l);
        } else {
            cr_assert(l == -EADDRNOTAVAIL || l == -EAFNOSUPPORT, "%s", coro_strerror(l));
            cr_log_warn("no IPv6 loopback here (%s): the IPv6 dial was not tried", coro_strerror(l));
        }
        fin(s);
    }
}

Test(io_net, unix_paths_and_the_abstract_namespace_listen_and_dial, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    char addr[108];
    snprintf(addr, sizeof addr, "unix:/tmp/corokit-net-%d.sock", (int)getpid());
    unlink(addr + 5);
    int l = coro_listen(AF_UNIX, addr, 4);
    cr_assert_geq(l, 0, "%s", coro_strerror(l));
    dial_ok(s, l, addr);
    cr_assert_eq(coro_listen(AF_UNSPEC, addr, 4), -EADDRINUSE);
    close(l);
    unlink(addr + 5);
    snprintf(addr, sizeof addr, "unix:@corokit-net-%d", (int)getpid());
    l = coro_listen(AF_UNSPEC, addr, 4);
    cr_assert_geq(l, 0, "%s", coro_strerror(l));
    dial_ok(s, l, addr);
    close(l);
    /* nobody there */
    struct xop x = { .kind = X_DIAL, .addr = addr, .timeout = 5000 * MS };
    cr_assert_eq(xrun(s, &x), -ECONNREFUSED);
    fin(s);
}

Test(io_net, a_name_that_does_not_resolve_is_enxio_with_a_clear_text, .timeout = 60)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        struct xop x = { .kind = X_DIAL, .addr = "no-such-host.invalid:80", .timeout = 20000 * MS };
        intptr_t r = xrun(s, &x);
        cr_assert(r == -ENXIO || r == -EAGAIN, "%s", coro_strerror((int)r));
        cr_assert(strstr(coro_strerror(-ENXIO), "resolve"));
        cr_assert_str_eq(coro_err_name(-ENXIO), "ENXIO");
        cr_assert_eq(coro_listen(AF_INET, "no-such-host.invalid:0", 1), r);
        fin(s);
    }
}

Test(io_net, listen_and_dial_refuse_bad_input, .timeout = 30)
{
    coro_sched_t *s = mk(0);
    const char *bad[] = { NULL, "", "nocolon", "127.0.0.1:", "[::1:80", "[::1]80", "unix:" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(coro_listen(AF_INET, bad[i], 1), -EINVAL, "%s", bad[i] ? bad[i] : "NULL");
        struct xop x = { .kind = X_DIAL, .addr = bad[i], .timeout = 0 };
        cr_assert_eq(xrun(s, &x), -EINVAL, "%s", bad[i] ? bad[i] : "NULL");
    }
    cr_assert_eq(coro_listen(AF_INET, "127.0.0.1:0", -1), -EINVAL);
    cr_assert_eq(coro_listen(AF_UNIX, "127.0.0.1:0", 1), -EAFNOSUPPORT);
    cr_assert_eq(coro_listen(AF_INET, "unix:/tmp/x", 1), -EAFNOSUPPORT);
    cr_assert_eq(coro_listen(AF_INET, "127.0.0.1:notaservice", 1), -EINVAL);
    cr_assert_eq(coro_listen(AF_INET6, "127.0.0.1:0", 1), -ENXIO);
    struct xop x = { .kind = X_DIAL, .addr = "127.0.0.1:1", .timeout = -3 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    /* a port nobody listens on */
    int l = coro_listen(AF_INET, "127.0.0.1:0", 1);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port_of(l));
    close(l);
    x = (struct xop){ .kind = X_DIAL, .addr = addr, .timeout = 5000 * MS };
    cr_assert_eq(xrun(s, &x), -ECONNREFUSED);
    fin(s);
}

Test(io_net, a_dial_cancelled_before_during_or_after_resolving_leaves_nothing_open, .timeout = 60)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int l = coro_listen(AF_INET, "127.0.0.1:0", 16);
        char addr[64];
        snprintf(addr, sizeof addr, "localhost:%d", port_of(l));
        /* cancelled before the pool starts it */
        struct xop x = { .kind = X_DIAL, .addr = addr, .timeout = CORO_FOREVER, .self_cancel = true };
        cr_assert_eq(xrun(s, &x), -ECANCELED);
        /* cancelled at some point of the dial: either it got through
         * first (an fd) or it ends -ECANCELED; ASan's leak check and the
         * fd count say nothing is left */
        int before = open("/dev/null", O_RDONLY);
        close(before);
        for (int i = 0; i < 20; i++) {
            x = (struct xop){ .kind = X_DIAL, .addr = i % 2 ? addr : "no-such-host.invalid:80",
                              .timeout = CORO_FOREVER };
            intptr_t r = xcancel(s, w, &x);
            if (r >= 0)
                close((int)r);
            else
                cr_assert(r == -ECANCELED || r == -ENXIO || r == -EAGAIN, "%s", coro_strerror((int)r));
            int c;
            while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0)
                close(c);
        }
        int after = open("/dev/null", O_RDONLY);
        close(after);
        cr_assert_eq(after, before, "an fd was left open");
        close(l);
        fin(s);
    }
}

Test(io_net, a_dial_to_a_server_that_never_answers_times_out, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    /* a listener whose queue is full: its kernel drops new SYNs */
    int l = coro_listen(AF_INET, "127.0.0.1:0", 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port_of(l));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port_of(l)),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fill[8], nfill = 0;
    for (; nfill < 8; nfill++) {
        fill[nfill] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        connect(fill[nfill], (struct sockaddr *)&sa, sizeof sa);
    }
    struct xop x = { .kind = X_DIAL, .addr = addr, .timeout = 100 * MS };
    intptr_t r = xrun(s, &x);
    if (r >= 0) {
        close((int)r);
        cr_log_warn("this kernel accepted past a full queue: the timeout was not reached");
    } else {
        cr_assert_eq(r, -ETIMEDOUT, "%s", coro_strerror((int)r));
        x.timeout = CORO_FOREVER;
        cr_assert_eq(xcancel(s, 2, &x), -ECANCELED);
    }
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    close(l);
    fin(s);
}
