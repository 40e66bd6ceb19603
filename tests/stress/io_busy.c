/* SPDX-License-Identifier: MIT */
/* Busy workers look at epoll (sched/worker.c, BUSY LOOKS and DEFERRED
 * YIELDS): one job per worker, pinned to that worker's CPU, works a little
 * between yields, so that no worker runs out of work, while socketpair
 * pairs ping-pong beside them; every round trip completes, on 0, 1, 2, 4
 * and 8 workers.  Under TSan: the look with the poll token, the looks
 * after what it woke ran, the yielder kept aside - each racing the I/O
 * thread and the other workers. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scenario.h"

#define PAIRS 8
#define HOG_NS 100000LL         /* a busy job's step */

struct hog {
    coro_t co;
    atomic_int *stop;
};

static int hog_fn(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    while (!atomic_load(h->stop)) {
        {
            int64_t t0 = coro_now();
            while (coro_now() - t0 < HOG_NS)
                ;
        }
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct end {
    coro_t co;
    int fd, first, i, n;
    char b;
};

static int end_fn(coro_t *co)
{
    struct end *x = CORO_SELF(co, struct end);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->first) {
            CORO_AWAIT(co, coro_write(x->fd, &x->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
        CORO_AWAIT(co, coro_read(x->fd, &x->b, 1, CORO_FOREVER));
        if (CORO_RESULT(co) != 1)
            CORO_RETURN(co, -2);
        if (!x->first) {
            CORO_AWAIT(co, coro_write(x->fd, &x->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static void run(int workers, int trips)
{
    static struct hog hogs[8];
    static struct end ends[2 * PAIRS];
    int fds[2 * PAIRS];
    atomic_int stop = 0;
    coro_sched_t *s = scen_sched(workers);
    int nh = workers > 0 ? workers : 1;

    for (int i = 0; i < nh; i++) {
        coro_worker_stats_t ws;
        coro_cpuset_t cpu;
        coro_spawn_opts_t o = { 0 };
        if (workers > 0) {
            SCEN_CHECK(coro_sched_worker_stats(s, i, &ws) == 0, "stats %d", i);
            coro_cpuset_zero(&cpu);
            coro_cpuset_add(&cpu, ws.cpu);
            o.affinity = &cpu;
        }
        hogs[i].stop = &stop;
        int rc = coro_spawn(s, &hogs[i].co, hog_fn, &o);
        SCEN_CHECK(rc == 0, "spawn hog: %s", coro_strerror(rc));
    }
    for (int p = 0; p < PAIRS; p++) {
        SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                              &fds[2 * p]) == 0, "socketpair");
        ends[2 * p] = (struct end){ .fd = fds[2 * p], .first = 1, .n = trips };
        ends[2 * p + 1] = (struct end){ .fd = fds[2 * p + 1], .first = 0, .n = trips };
    }
    for (int i = 0; i < 2 * PAIRS; i++) {
        int rc = coro_spawn(s, &ends[i].co, end_fn, NULL);
        SCEN_CHECK(rc == 0, "spawn end: %s", coro_strerror(rc));
    }
    for (int i = 0; i < 2 * PAIRS; i++) {
        intptr_t r = join_r(&ends[i].co);
        SCEN_CHECK(r == 0, "end %d of %d workers: %ld", i, workers, (long)r);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < nh; i++)
        SCEN_CHECK(join_r(&hogs[i].co) == 0, "hog %d", i);
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    for (int i = 0; i < 2 * PAIRS; i++)
        close(fds[i]);
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    int trips = SCEN_N(m, 50, 200, 2000);

    run(0, trips);
    for (int k = 0; k < SCEN_NWORKERS; k++)
        run(scen_workers[k], trips);
    puts("io_busy: ok");
    return 0;
}
