/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_recvfrom, coro_sendto, coro_recvmsg, coro_sendmsg: UDP datagrams
 * with their senders' addresses, an fd passed with SCM_RIGHTS, a refused
 * port, bad input, timeouts and cancel. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include "fixture_ioext.h"

/* a UDP socket bound to a free loopback port; its address in *sa */
static int udp_loopback(coro_sockaddr_t *sa)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&in, sizeof in), 0);
    sa->len = sizeof sa->addr;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa->addr, &sa->len), 0);
    return fd;
}

Test(io_dgram, sendto_and_recvfrom_carry_datagrams_and_the_senders_address, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        coro_sockaddr_t a, b, from;
        int fa = udp_loopback(&a), fb = udp_loopback(&b);
        char buf[64] = { 0 };
        /* the receiver waits first */
        struct xop rx = { .kind = X_RECVFROM, .fd = fb, .buf = buf, .len = sizeof buf, .sa = &from,
                          .timeout = CORO_FOREVER };
        xspawn(s, &rx);
        struct xop tx = { .kind = X_SENDTO, .fd = fa, .buf = "ping", .len = 4, .sa = &b,
                          .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &tx), 4);
        cr_assert_eq(xjoin(&rx), 4);
        cr_assert_eq(memcmp(buf, "ping", 4), 0);
        cr_assert_eq(from.len, a.len);
        cr_assert_eq(memcmp(&from.addr, &a.addr, a.len), 0);
        /* the answer goes back to the address received */
        tx = (struct xop){ .kind = X_SENDTO, .fd = fb, .buf = "pong!", .len = 5, .sa = &from,
                           .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &tx), 5);
        rx = (struct xop){ .kind = X_RECVFROM, .fd = fa, .buf = buf, .len = sizeof buf, .sa = NULL,
                           .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &rx), 5);
        /* an empty datagram is 0; a short buffer truncates */
        tx.len = 0;
        cr_assert_eq(xrun(s, &tx), 0);
        cr_assert_eq(xrun(s, &rx), 0);
        tx.len = 5;
        cr_assert_eq(xrun(s, &tx), 5);
        rx.len = 2;
        cr_assert_eq(xrun(s, &rx), 2);
        /* nothing there */
        rx.len = sizeof buf;
        rx.timeout = 0;
        cr_assert_eq(xrun(s, &rx), -ETIMEDOUT);
        rx.timeout = 10 * MS;
        cr_assert_eq(xrun(s, &rx), -ETIMEDOUT);
        rx.timeout = CORO_FOREVER;
        cr_assert_eq(xcancel(s, w, &rx), -ECANCELED);
        close(fa);
        close(fb);
        fin(s);
    }
}

Test(io_dgram, datagram_calls_refuse_bad_input, .timeout = 30)
{
    coro_sched_t *s = mk(0);
    coro_sockaddr_t a, huge = { .len = sizeof(struct sockaddr_storage) + 1 };
    int fa = udp_loopback(&a);
    char buf[4];
    struct xop x = { .kind = X_RECVFROM, .fd = -1, .buf = buf, .len = 4, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EBADF);
    x = (struct xop){ .kind = X_RECVFROM, .fd = fa, .buf = NULL, .len = 4, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_SENDTO, .fd = fa, .buf = buf, .len = 4, .sa = &huge, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_SENDTO, .fd = fa, .buf = buf, .len = 4, .sa = &a, .timeout = -7 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_SENDTO, .fd = fa, .buf = buf, .len = 4, .sa = NULL, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EDESTADDRREQ);
    x = (struct xop){ .kind = X_RECVMSG, .fd = fa, .msg = NULL, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    int pp[2];
    cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
    x = (struct xop){ .kind = X_RECVFROM, .fd = pp[0], .buf = buf, .len = 4, .timeout = 0 };
    cr_assert_eq(xrun(s, &x), -ENOTSOCK);
    close(pp[0]);
    close(pp[1]);
    close(fa);
    fin(s);
}

Test(io_dgram, a_connected_udp_socket_hears_that_the_port_is_closed, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_sockaddr_t a, gone;
    int fa = udp_loopback(&a), fg = udp_loopback(&gone);
    close(fg);      /* nobody listens on that port now */
    cr_assert_eq(connect(fa, (struct sockaddr *)&gone.addr, gone.len), 0);
    struct xop tx = { .kind = X_SENDTO, .fd = fa, .buf = "x", .len = 1, .timeout = CORO_FOREVER };
    cr_assert_eq(xrun(s, &tx), 1);
    char buf[4];
    struct xop rx = { .kind = X_RECVFROM, .fd = fa, .buf = buf, .len = 4, .timeout = 5000 * MS };
    cr_assert_eq(xrun(s, &rx), -ECONNREFUSED, "%s", coro_strerror((int)rx.res));
    close(fa);
    fin(s);
}

Test(io_dgram, sendmsg_passes_an_fd_with_scm_rights_and_recvmsg_receives_it, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        int sv[2], pp[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
        /* the receiver waits first */
        char data[8] = { 0 };
        union { char b[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } rctl, sctl;
        memset(&rctl, 0, sizeof rctl);
        struct iovec riov = { data, sizeof data };
        struct msghdr rm = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = rctl.b,
                             .msg_controllen = sizeof rctl.b };
        struct xop rx = { .kind = X_RECVMSG, .fd = sv[1], .msg = &rm, .timeout = CORO_FOREVER };
        xspawn(s, &rx);
        struct iovec siov = { "fd", 2 };
        struct msghdr sm = { .msg_iov = &siov, .msg_iovlen = 1, .msg_control = sctl.b,
                             .msg_controllen = sizeof sctl.b };
        struct cmsghdr *c = CMSG_FIRSTHDR(&sm);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pp[1], sizeof(int));
        struct xop tx = { .kind = X_SENDMSG, .fd = sv[0], .msg = &sm, .timeout = CORO_FOREVER };
        cr_assert_eq(xrun(s, &tx), 2);
        cr_assert_eq(xjoin(&rx), 2);
        cr_assert_eq(memcmp(data, "fd", 2), 0);
        struct cmsghdr *rc = CMSG_FIRSTHDR(&rm);
        cr_assert_not_null(rc);
        cr_assert_eq(rc->cmsg_type, SCM_RIGHTS);
        int got;
        memcpy(&got, CMSG_DATA(rc), sizeof got);
        cr_assert_neq(got, pp[1]);
        cr_assert(fcntl(got, F_GETFD) & FD_CLOEXEC);
        /* the passed fd is the pipe's write end: write through it */
        cr_assert_eq(write(got, "z", 1), 1);
        char z = 0;
        cr_assert_eq(read(pp[0], &z, 1), 1);
        cr_assert_eq(z, 'z');
        close(got);
        rm.msg_controllen = sizeof rctl.b;
        rx.timeout = 10 * MS;
        cr_assert_eq(xrun(s, &rx), -ETIMEDOUT);
        rx.timeout = CORO_FOREVER;
        cr_assert_eq(xcancel(s, w, &rx), -ECANCELED);
        close(pp[0]);
        close(pp[1]);
        close(sv[0]);
        close(sv[1]);
        fin(s);
    }
}
