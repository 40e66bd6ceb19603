/* SPDX-License-Identifier: MIT */
/* spawn_threads: many plain threads spawning into a few workers, more
 * threads than CPUs (the shared queues' producers, lib/base/queues.c).
 *   spawn_threads THREADS WORKERS MODE [rounds]
 * MODE: high   HIGH jobs: a plain thread's go to the workers' inboxes
 *       class  NORMAL jobs pinned to the first worker's CPU: that affinity
 *              class's queue
 *       normal NORMAL "any CPU" jobs: each thread's own submission ring
 * Each round: a new scheduler; the threads start together and each spawns
 * PER empty jobs in pool frames, fire and forget; the last job to run sets
 * an event.  Prints per round the jobs per second (from the start to the
 * last job's end) and the 99th and 99.9th percentile and the longest time
 * of one coro_spawn call (log2 buckets: the upper bound of the bucket),
 * then the medians.  Build: make tools. */
#define _GNU_SOURCE
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PER = 2000, BUCKETS = 40 };

static coro_sched_t *sched;
static coro_spawn_opts_t opts;
static coro_event_t all_ran;
static long left;                   /* atomic: jobs not yet run */
static pthread_barrier_t start;
static unsigned long hist[BUCKETS]; /* atomic adds at each thread's end */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int job(coro_t *co)
{
    CORO_BEGIN(co);
    if (__atomic_sub_fetch(&left, 1, __ATOMIC_ACQ_REL) == 0)
        coro_event_set(&all_ran);
    CORO_END(co);
}

static void *spawner(void *a)
{
    unsigned long h[BUCKETS] = { 0 };

    (void)a;
    pthread_barrier_wait(&start);
    for (int i = 0; i < PER; i++) {
        coro_t *f = coro_frame_alloc(sched, sizeof(coro_t));
        int64_t t0 = now_ns();
        if (!f || coro_spawn(sched, f, job, &opts) != 0) {
            fprintf(stderr, "spawn failed\n");
            exit(1);
        }
        int64_t d = now_ns() - t0;
        int b = d < 2 ? 0 : 63 - __builtin_clzll((unsigned long long)d);
        h[b < BUCKETS ? b : BUCKETS - 1]++;
    }
    for (int b = 0; b < BUCKETS; b++)
        __atomic_add_fetch(&hist[b], h[b], __ATOMIC_RELAXED);
    return NULL;
}

/* the upper bound (ns) of the bucket holding quantile q */
static double quantile(const unsigned long *h, unsigned long n, double q)
{
    unsigned long want = (unsigned long)(q * (double)n), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += h[b];
        if (seen > want)
            return (double)(2ull << b);
    }
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: spawn_threads THREADS WORKERS high|class|normal [rounds]\n");
        return 2;
    }
    int threads = atoi(argv[1]), rounds = argc > 4 ? atoi(argv[4]) : 5;
    const char *mode = argv[3];
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    cfg.workers = atoi(argv[2]);
    if (threads < 1 || rounds < 1 || rounds > 100)
        return 2;
    double rate[100], p99[100], p999[100], top[100];
    pthread_t *t = calloc((size_t)threads, sizeof *t);

    for (int r = 0; r < rounds; r++) {
        coro_cpuset_t one;
        if (coro_sched_create(&sched, &cfg) != 0)
            return 1;
        memset(&opts, 0, sizeof opts);
        if (!strcmp(mode, "high")) {
            opts.priority = CORO_PRIO_HIGH;
        } else if (!strcmp(mode, "class")) {
            cpu_set_t cs;
            sched_getaffinity(0, sizeof cs, &cs);
            coro_cpuset_zero(&one);
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &cs)) {
                    coro_cpuset_add(&one, c);
                    break;
                }
            opts.affinity = &one;
        } else if (strcmp(mode, "normal")) {
            fprintf(stderr, "mode: high, class or normal\n");
            return 2;
        }
        coro_event_init(&all_ran);
        memset(hist, 0, sizeof hist);
        left = (long)threads * PER;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        for (int i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, spawner, NULL);
        pthread_barrier_wait(&start);
        int64_t t0 = now_ns();
        coro_event_wait_blocking(&all_ran, CORO_FOREVER);
        int64_t el = now_ns() - t0;
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&start);
        unsigned long n = (unsigned long)threads * PER;
        rate[r] = (double)n / ((double)el / 1e9);
        p99[r] = quantile(hist, n, 0.99);
        p999[r] = quantile(hist, n, 0.999);
        top[r] = quantile(hist, n, 1.0 - 1e-9);
        printf("round %d: %.0f jobs/s, spawn p99 < %.0f ns, p99.9 < %.0f ns, max < %.0f ns\n", r,
               rate[r], p99[r], p999[r], top[r]);
        coro_sched_shutdown(sched, CORO_DRAIN);
        coro_sched_destroy(sched);
        coro_event_destroy(&all_ran);
    }
    qsort(rate, (size_t)rounds, sizeof *rate, cmp);
    qsort(p99, (size_t)rounds, sizeof *p99, cmp);
    qsort(p999, (size_t)rounds, sizeof *p999, cmp);
    qsort(top, (size_t)rounds, sizeof *top, cmp);
    printf("median: %s %d threads %d workers: %.0f jobs/s, spawn p99 < %.0f ns, p99.9 < %.0f ns, "
           "max < %.0f ns\n",
           mode, threads, cfg.workers, rate[rounds / 2], p99[rounds / 2], p999[rounds / 2],
           top[rounds / 2]);
    free(t);
    return 0;
}
