/* SPDX-License-Identifier: MIT */
/* io_latency - the I/O figures of docs/io.md.
 *
 *   io_latency pingpong [ROUNDS] [WORKERS]  two jobs bounce one byte over a
 *       Unix socketpair ROUNDS times (10,000); prints us per round trip
 *   io_latency wakeup [SAMPLES] [WORKERS]   a plain thread writes an eventfd a
 *       job awaits; prints the delay until the job runs (p50, p99, us)
 *
 * Build: make (tools/bench is built by `make bench`), or
 *   cc -O2 -Iinclude tools/bench/io_latency.c build/libcorokit.a -lck -pthread */
#define _GNU_SOURCE
#include <corokit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct pp {
    coro_t co;
    int fd, rounds, i;
    bool starts;
    char b;
};

static int pp_body(coro_t *co)
{
    struct pp *p = CORO_SELF(co, struct pp);
    CORO_BEGIN(co);
    for (p->i = 0; p->i < p->rounds; p->i++) {
        if (p->starts) {
            CORO_AWAIT(co, coro_write(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
            CORO_AWAIT(co, coro_read(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        } else {
            CORO_AWAIT(co, coro_read(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
            CORO_AWAIT(co, coro_write(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static coro_sched_t *mk(int workers)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    if (coro_sched_create(&s, &c) < 0)
        exit(2);
    return s;
}

static int pingpong(int rounds, int workers)
{
    int sv[2];
    static struct pp a, b;
    coro_sched_t *s = mk(workers);

    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv);
    a = (struct pp){ .fd = sv[0], .rounds = rounds, .starts = true };
    b = (struct pp){ .fd = sv[1], .rounds = rounds };
    int64_t t0 = coro_now();
    coro_spawn(s, &b.co, pp_body, NULL);
    coro_spawn(s, &a.co, pp_body, NULL);
    intptr_t ra = -1, rb = -1;
    coro_join(&a.co, &ra);
    coro_join(&b.co, &rb);
    int64_t t = coro_now() - t0;
    coro_sched_destroy(s);
    close(sv[0]);
    close(sv[1]);
    if (ra || rb)
        return 1;
    printf("io_pingpong: %d round trips, %d workers: %.2f us per round trip\n", rounds, workers,
           t / 1e3 / rounds);
    return 0;
}

struct waker {
    coro_t co;
    int fd, n, i;
    uint64_t v;
    int64_t *t_write;           /* written by the plain thread before its write */
    int64_t *lat;
    volatile int *seen;
};

static int waker_body(coro_t *co)
{
    struct waker *w = CORO_SELF(co, struct waker);
    CORO_BEGIN(co);
    for (w->i = 0; w->i < w->n; w->i++) {
        CORO_AWAIT(co, coro_read(w->fd, &w->v, sizeof w->v, CORO_FOREVER));
        w->lat[w->i] = coro_now() - __atomic_load_n(w->t_write, __ATOMIC_ACQUIRE);
        __atomic_store_n(w->seen, w->i + 1, __ATOMIC_RELEASE);
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

static int cmp64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int wakeup(int n, int workers)
{
    static struct waker w;
    static int64_t t_write;
    static volatile int seen;
    int64_t *lat = calloc((size_t)n, sizeof *lat);
    coro_sched_t *s = mk(workers);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

    w = (struct waker){ .fd = efd, .n = n, .t_write = &t_write, .lat = lat, .seen = &seen };
    coro_spawn(s, &w.co, waker_body, NULL);
    for (int i = 0; i < n; i++) {
        struct timespec ts = { 0, 200000 + rand() % 100000 };  /* let everyone settle */
        nanosleep(&ts, NULL);
        uint64_t one = 1;
        __atomic_store_n(&t_write, coro_now(), __ATOMIC_RELEASE);
        if (write(efd, &one, sizeof one) != sizeof one)
            return 1;
        while (__atomic_load_n(&seen, __ATOMIC_ACQUIRE) < i + 1)
            ;
    }
    coro_join(&w.co, &(intptr_t){0});
    coro_sched_destroy(s);
    close(efd);
    qsort(lat, (size_t)n, sizeof *lat, cmp64);
    printf("wakeup (eventfd write -> job runs): %d samples, %d workers: p50 %.1f us, p99 %.1f us\n",
           n, workers, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3);
    free(lat);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "pingpong";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int workers = argc > 3 ? atoi(argv[3]) : 2;

    if (workers < 1 && strcmp(what, "wakeup") == 0) {
        fprintf(stderr, "io_latency: needs workers >= 1 (a plain thread drives the wake-ups)\n");
        return 2;
    }

    if (strcmp(what, "pingpong") == 0)
        return pingpong(n > 0 ? n : 10000, workers);
    if (strcmp(what, "wakeup") == 0)
        return wakeup(n > 0 ? n : 2000, workers);
    fprintf(stderr, "usage: %s pingpong|wakeup [N] [WORKERS]\n", argv[0]);
    return 2;
}
