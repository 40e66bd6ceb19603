/* SPDX-License-Identifier: MIT */
/* lib/base/sys.h: the hot system calls made without libc's cancellation
 * wrappers behave as libc's functions do - results, -1 with errno on
 * failure (the _r forms: -errno, errno untouched) - on the raw path and on
 * the libc path that tests and sanitizer builds take (coro__sys_libc). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sys.h"

static void calls(bool via_libc)
{
    int sv[2], p[2];
    char b[4] = { 0 };

    coro__sys_libc = via_libc;  /* this test's process only (Criterion forks each) */
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);

    /* nothing to read: -1 EAGAIN; the _r form -EAGAIN and errno untouched */
    errno = 0;
    cr_assert_eq(coro__recv(sv[0], b, sizeof b, MSG_DONTWAIT), -1);
    cr_assert_eq(errno, EAGAIN);
    errno = 1234;
    cr_assert_eq(coro__recv_r(sv[0], b, sizeof b, MSG_DONTWAIT), -EAGAIN);
    cr_assert_eq(errno, 1234, "the raw form wrote errno");

    /* data both ways, with the flags passed through (MSG_NOSIGNAL, DONTWAIT) */
    cr_assert_eq(coro__send(sv[1], "abc", 3, MSG_DONTWAIT | MSG_NOSIGNAL), 3);
    cr_assert_eq(coro__recv(sv[0], b, 2, MSG_DONTWAIT), 2);
    cr_assert_eq(memcmp(b, "ab", 2), 0);
    cr_assert_eq(coro__send_r(sv[0], "xy", 2, MSG_NOSIGNAL), 2);
    cr_assert_eq(coro__recv_r(sv[1], b, sizeof b, 0), 2);
    cr_assert_eq(memcmp(b, "xy", 2), 0);
    cr_assert_eq(coro__read(sv[0], b, sizeof b), 1);
    cr_assert_eq(b[0], 'c');

    /* epoll: nothing ready, then the edge of a write */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 0x1234567890ull }, out[4];
    cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev), 0);
    cr_assert_eq(coro__epoll_wait(ep, out, 4, 0), 0);
    cr_assert_eq(coro__write(sv[1], "z", 1), 1);
    cr_assert_eq(coro__epoll_wait(ep, out, 4, 1000), 1);
    cr_assert_eq(out[0].data.u64, 0x1234567890ull);
    cr_assert(out[0].events & EPOLLIN);
    errno = 0;
    cr_assert_eq(coro__epoll_wait(-1, out, 4, 0), -1);
    cr_assert_eq(errno, EBADF);

    /* a pipe: read/write, and EBADF on a closed fd */
    cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
    cr_assert_eq(coro__write(p[1], "q", 1), 1);
    cr_assert_eq(coro__read(p[0], b, sizeof b), 1);
    cr_assert_eq(b[0], 'q');
    close(p[0]);
    errno = 0;
    cr_assert_eq(coro__read(p[0], b, 1), -1);
    cr_assert_eq(errno, EBADF);
    cr_assert_eq(coro__recv_r(p[1], b, 1, 0), -ENOTSOCK);
    close(p[1]);

    /* accept4: EINVAL on a socket that does not listen, then a real one */
    errno = 0;
    cr_assert_eq(coro__accept4(sv[0], NULL, NULL, SOCK_NONBLOCK), -1);
    cr_assert(errno == EINVAL || errno == EOPNOTSUPP, "errno %d", errno);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(l, 4), 0);
    cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
    errno = 0;
    cr_assert_eq(coro__accept4(l, NULL, NULL, SOCK_NONBLOCK), -1);
    cr_assert_eq(errno, EAGAIN);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    int s = -1;
    for (int i = 0; i < 1000 && s < 0; i++) {
        s = coro__accept4(l, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0)
            usleep(1000);   /* a bound on a retry, not an ordering */
    }
    cr_assert_geq(s, 0, "accept4: %s", strerror(errno));
    cr_assert_eq(pl, sizeof peer);
    cr_assert_eq(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    cr_assert(fcntl(s, F_GETFL) & O_NONBLOCK);
    cr_assert(fcntl(s, F_GETFD) & FD_CLOEXEC);
    close(s);
    close(c);
    close(l);
    close(ep);
    close(sv[0]);
    close(sv[1]);
}

Test(io_sys, the_raw_calls_return_and_fail_as_libcs_functions_do)
{
    calls(false);
}

Test(io_sys, the_libc_path_of_the_same_wrappers_behaves_the_same)
{
    calls(true);
}
