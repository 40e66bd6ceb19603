/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: a look at epoll that wakes many jobs at once.
 *
 * A plain thread writes one byte to each of N pipes back to back, so that
 * one epoll_wait (an idle worker's look, a parked worker's wait, a busy
 * worker's look or the I/O thread's) finds many of them ready: the worker
 * that looked runs the first job it woke itself, queues the others with one
 * notify for the batch (sched/worker.c IDLE, sched/park.c WOKEN BY ITS OWN
 * EVENTS), and the other workers must still get to them.  Every fourth
 * reader is HIGH (the caught job then goes back to the queues, picked in
 * priority order), every eighth may run on the first worker's CPU only (a
 * class queue: notified on its own), and some yield after they read.  Each
 * job answers on a shared pipe; the plain thread waits for all N answers of
 * a round with a generous bound, which only a lost wake-up can exceed.
 * Plain program (Criterion cannot run under ThreadSanitizer). */
#define _GNU_SOURCE
#include "scenario.h"
#include <poll.h>
#include <sched.h>
#include <unistd.h>

struct reader {
    coro_t co;
    int fd, done_fd, rounds, i;
    char b;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->rounds; r->i++) {
        CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, 60 * 1000000000LL));
        if (CORO_RESULT(co) != 1 || r->b != (char)r->i)
            CORO_RETURN(co, -1);
        if (r->i % 3 == 0)
            CORO_YIELD(co);
        CORO_AWAIT(co, coro_write(r->done_fd, &r->b, 1, CORO_FOREVER));
        if (CORO_RESULT(co) != 1)
            CORO_RETURN(co, -2);
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

/* read n bytes from fd within 30 s: false when they did not come */
static bool collect(int fd, int n)
{
    char buf[256];
    while (n > 0) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 30000) != 1)
            return false;
        ssize_t r = read(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf);
        if (r <= 0)
            return false;
        n -= (int)r;
    }
    return true;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 16, 48, 128), rounds = SCEN_N(mode, 100, 400, 5000);
    cpu_set_t mine;
    int cpu0 = -1;

    SCEN_CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity");
    for (int c = 0; c < CPU_SETSIZE && cpu0 < 0; c++)
        if (CPU_ISSET(c, &mine))
            cpu0 = c;
    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct reader *r = calloc((size_t)n, sizeof *r);
        int (*p)[2] = calloc((size_t)n, sizeof *p), done[2];
        coro_cpuset_t one;

        coro_cpuset_zero(&one);
        coro_cpuset_add(&one, cpu0);
        SCEN_CHECK(r && p && pipe(done) == 0, "alloc");
        for (int i = 0; i < n; i++) {
            SCEN_CHECK(pipe(p[i]) == 0, "pipe");
            r[i] = (struct reader){ .fd = p[i][0], .done_fd = done[1], .rounds = rounds };
            coro_spawn_opts_t o = { .priority = i % 4 == 1 ? CORO_PRIO_HIGH : CORO_PRIO_NORMAL,
                                    .affinity = i % 8 == 3 ? &one : NULL };
            SCEN_CHECK(coro_spawn(s, &r[i].co, reader_body, &o) == 0, "spawn %d", i);
        }
        for (int round = 0; round < rounds; round++) {
            char b = (char)round;
            for (int i = 0; i < n; i++)
                SCEN_CHECK(write(p[i][1], &b, 1) == 1, "write");
            SCEN_CHECK(collect(done[0], n), "%d workers, round %d: not every job answered in 30 s "
                       "(a lost wake-up)", scen_workers[k], round);
        }
        for (int i = 0; i < n; i++)
            SCEN_CHECK(join_r(&r[i].co) == 0, "reader %d failed: %ld", i, (long)r[i].co.result);
        SCEN_CHECK(coro_sched_shutdown(s, CORO_DRAIN) == 0, "shutdown");
        coro_sched_destroy(s);
        for (int i = 0; i < n; i++) {
            close(p[i][0]);
            close(p[i][1]);
        }
        close(done[0]);
        close(done[1]);
        free(r);
        free(p);
    }
    printf("io_batch: ok\n");
    return 0;
}
