/* SPDX-License-Identifier: MIT */
/* tools/bench/bench_common.h - helpers shared by the C and C++ twins.
 *
 * Every bench program is called as
 *     PROG SHAPE [WORKERS [ITERS [SIZE]]]      run one shape
 *     PROG list                                print the shapes it implements
 * WORKERS 0 or absent = the CPUs this process may use; ITERS 0 or absent = the
 * shape's default; SIZE 0 or absent = the shape's design.md section 7 size.
 * It runs one untimed warm-up iteration (not for memory), then prints one line
 * per iteration:
 *     bench=<shape> system=<sys> workers=<n> ns=<ns for the iteration> [extra]
 * extra: timers adds p99_late_ns=, memory adds bytes_per_job=.
 * The Go and Rust twins implement the same contract by hand.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define _GNU_SOURCE 1
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* design.md section 7 sizes; every twin uses the same numbers */
#define BENCH_NUM_SPAWN 10000       /* spawn_many_* */
#define BENCH_BUSY_JOBS 8           /* spawn_many_remote_busy background jobs */
#define BENCH_STALL_NS 10000        /* 10 us of work per busy loop turn */
#define BENCH_PINGS 1000            /* ping_pong pairs */
#define BENCH_YIELD_TASKS 200       /* yield_many jobs */
#define BENCH_YIELDS 1000           /* yield_many yields per job */
#define BENCH_CHAIN 1000            /* chained_spawn length */
#define BENCH_FIB_N 27              /* fib(27) */
#define BENCH_IO_TRIPS 10000        /* io_pingpong round trips */
#define BENCH_UDP_BYTES 32          /* udp_pingpong: bytes per datagram */
#define BENCH_IO_PAIRS 64           /* io_pingpong_64: pairs sharing those trips */
#define BENCH_BUSY_PAIRS 32         /* io_busy_H: socketpair pairs... */
#define BENCH_BUSY_TRIPS 200        /* ...round trips each, beside a CPU-bound
                                       job per worker that works H us between
                                       yields (H from the shape's name) */
#define BENCH_TIMED_JOBS 10000      /* timed_waits: jobs (pairs of) ... */
#define BENCH_TIMED_WAITS 100       /* ...each doing this many event waits... */
#define BENCH_TIMED_NS 1000000000LL /* ...with this timeout; the partner sets it */
#define BENCH_TIMERS 10000          /* timers jobs */
#define BENCH_TIMER_MAX_NS 10000000 /* each sleeps 0..10 ms */
#define BENCH_MEM_JOBS 1000000      /* memory: suspended jobs */
#define BENCH_BLOCKING_CALLS 10000  /* blocking_roundtrip(_par): calls in all */
#define BENCH_BLOCKING_JOBS 8       /* blocking_roundtrip_par: jobs at once */
#define BENCH_TIMER_SEED 0x5eedc0c0ULL

static inline int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64: the timers shape draws job i's sleep as
 * bench_mix(SEED + i) % (BENCH_TIMER_MAX_NS + 1) in every twin */
static inline uint64_t bench_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline int64_t bench_timer_ns(int i)
{
    return (int64_t)(bench_mix(BENCH_TIMER_SEED + (uint64_t)i) %
                     (BENCH_TIMER_MAX_NS + 1));
}

/* tokio's stall(): spin until 10 us have passed, yielding the thread */
static inline void bench_stall(void)
{
    int64_t t0 = bench_now_ns();
    while (bench_now_ns() - t0 < BENCH_STALL_NS)
        sched_yield();
}

static inline int bench_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* resident set size in bytes, from /proc/self/statm */
static inline long bench_rss_bytes(void)
{
    long pages = 0, size = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &pages) != 2)
        pages = -1;
    fclose(f);
    return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}

static int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* p99 (nearest rank) of n values; sorts them in place */
static inline int64_t bench_p99(int64_t *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_i64);
    int k = (int)((99LL * n + 99) / 100) - 1;
    return v[k < 0 ? 0 : k];
}

typedef struct bench_args {
    const char *shape;
    int workers;
    int iters;
    long size;
} bench_args_t;

/* parses argv; returns 1 for "list", 0 to run, -1 on a usage error */
static inline int bench_parse(int argc, char **argv, bench_args_t *a)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SHAPE|list [WORKERS [ITERS [SIZE]]]\n", argv[0]);
        return -1;
    }
    a->shape = argv[1];
    if (strcmp(a->shape, "list") == 0)
        return 1;
    a->workers = argc > 2 ? atoi(argv[2]) : 0;
    a->iters = argc > 3 ? atoi(argv[3]) : 0;
    a->size = argc > 4 ? atol(argv[4]) : 0;
    if (a->workers <= 0)
        a->workers = bench_cpus();
    if (a->iters <= 0)
        a->iters = strcmp(a->shape, "memory") == 0 ? 1
                   : strcmp(a->shape, "fib") == 0  ? 3
                                                   : 10;
    return 0;
}

/* the start of every program's main: bench_parse, and for "list" the
 * shapes the program implements, one a line.  -1: a usage error (exit
 * 2); 1: it listed them (exit 0); 0: run a->shape */
static inline int bench_start(int argc, char **argv, bench_args_t *a, const char *const *shapes,
                              size_t n)
{
    int rc = bench_parse(argc, argv, a);
    for (size_t i = 0; rc == 1 && i < n; i++)
        puts(shapes[i]);
    return rc;
}
#define BENCH_START(argc, argv, a, shapes) \
    bench_start(argc, argv, a, shapes, sizeof shapes / sizeof shapes[0])

static inline void bench_report(const char *shape, const char *sys, int workers, int64_t ns)
{
    printf("bench=%s system=%s workers=%d ns=%lld\n", shape, sys, workers, (long long)ns);
    fflush(stdout);
}

#endif
