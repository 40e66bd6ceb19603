/* SPDX-License-Identifier: MIT */
/* io_floor - the floor of the io_busy_H shapes (make bench, system
 * "floor"): the system calls that any runtime makes for them, alone, to
 * tell what corokit, tokio and Go could reach on this machine.
 *
 * io_busy_H moves BENCH_BUSY_PAIRS x BENCH_BUSY_TRIPS round trips of 8
 * bytes over socketpairs beside one CPU-bound job per worker.  Each hop
 * (one message) costs, in corokit's and tokio's twins alike (strace, perf
 * stat: docs/benchmarks.md), one send and two receives: the one that
 * brings the 8 bytes, and the one that gets EAGAIN before the reader
 * parks - the only way to know the socket is empty, since the readiness a
 * runtime keeps cannot know of an fd number closed and reused.  Here
 * WORKERS threads split the pairs, each moving its own pairs' messages
 * with exactly those three calls per hop, both ends in turn, with the fds
 * registered edge-triggered in one epoll set as a runtime registers them
 * (so each send pays the kernel's epoll callback).  Nothing else: no
 * epoll_wait, no wake-up, no scheduler, no CPU-bound jobs (a runtime may
 * starve them while the pairs run: the shape only times the pairs), and
 * each socket's two ends on one CPU.  So no runtime making those calls
 * can take less time; H does not change the floor.
 *
 *   io_floor list | io_floor io_busy_H [WORKERS [ITERS]]
 *
 * Not a runtime: a measuring stick, printed beside the others. */
#include "bench_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const shapes[] = { "io_busy_50", "io_busy_500", "io_busy_2000" };

static int sv[BENCH_BUSY_PAIRS][2];
static int nthreads;
static pthread_barrier_t start;

static void die(const char *what)
{
    fprintf(stderr, "io_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* one hop: 8 bytes from fd a to its peer b, and b found empty again */
static inline void hop(int a, int b, int64_t *msg)
{
    if (send(a, msg, sizeof *msg, 0) != (ssize_t)sizeof *msg)
        die("send");
    if (recv(b, msg, sizeof *msg, 0) != (ssize_t)sizeof *msg)
        die("recv");
    if (recv(b, msg, sizeof *msg, 0) != -1 || errno != EAGAIN)
        die("recv (EAGAIN expected)");
}

/* thread t moves pairs t, t + nthreads, ...: BENCH_BUSY_TRIPS round trips each */
static void *mover(void *arg)
{
    int t = (int)(intptr_t)arg;
    int64_t msg = 0;

    pthread_barrier_wait(&start);
    for (int i = 0; i < BENCH_BUSY_TRIPS; i++)
        for (int p = t; p < BENCH_BUSY_PAIRS; p += nthreads) {
            msg = bench_now_ns();
            hop(sv[p][0], sv[p][1], &msg);
            msg = bench_now_ns();
            hop(sv[p][1], sv[p][0], &msg);
        }
    pthread_barrier_wait(&start);
    return NULL;
}

static int64_t io_busy_floor(void)
{
    pthread_t th[BENCH_BUSY_PAIRS];

    if (pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1) != 0)
        die("pthread_barrier_init");
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, mover, (void *)(intptr_t)t) != 0)
            die("pthread_create");
    pthread_barrier_wait(&start);
    int64_t t0 = bench_now_ns();
    pthread_barrier_wait(&start);
    int64_t t = bench_now_ns() - t0;
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    return t;
}

int main(int argc, char **argv)
{
    bench_args_t a;
    int rc = BENCH_START(argc, argv, &a, shapes);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    size_t k = 0;
    while (k < sizeof shapes / sizeof shapes[0] && strcmp(a.shape, shapes[k]) != 0)
        k++;
    if (k == sizeof shapes / sizeof shapes[0]) {
        fprintf(stderr, "io_floor: shape %s not implemented\n", a.shape);
        return 2;
    }
    nthreads = a.workers < BENCH_BUSY_PAIRS ? a.workers : BENCH_BUSY_PAIRS;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    for (int p = 0; p < BENCH_BUSY_PAIRS; p++) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv[p]) != 0)
            die("socketpair");
        for (int e = 0; e < 2; e++) {
            /* as corokit registers a socket only read (lib/io/fd_wait.c) */
            struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                                      .data.u64 = (uint64_t)sv[p][e] };
            if (epoll_ctl(ep, EPOLL_CTL_ADD, sv[p][e], &ev) != 0)
                die("epoll_ctl");
        }
    }
    io_busy_floor(); /* warm-up */
    for (int i = 0; i < a.iters; i++)
        bench_report(a.shape, "floor", a.workers, io_busy_floor());
    return 0;
}
