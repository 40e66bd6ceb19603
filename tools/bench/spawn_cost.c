/* SPDX-License-Identifier: MIT */
/* spawn_cost: the cost of one spawn+run of an empty job, ns per job.
 *   spawn_cost st [rounds]              single-threaded: spawn 10,000 empty
 *                                       jobs from the driving thread, run them
 *   spawn_cost local WORKERS [rounds]   spawn_many_local: inside a job, spawn
 *                                       10,000 jobs that decrement a counter;
 *                                       the last one signals
 *   spawn_cost remote WORKERS [rounds]  spawn_many_remote: a plain thread
 *                                       spawns 10,000 empty jobs, joins each
 *   spawn_cost split WORKERS [rounds]   spawn_many_remote as make bench runs
 *                                       it (pool frames, fire and forget, a
 *                                       counter and an event), one line per
 *                                       round: the wall time, the spawn loop's
 *                                       wall and CPU time, the spawner's CPU,
 *                                       the jobs each worker ran - where the
 *                                       shape's bimodal times come from;
 *                                       PIN=CPU pins the spawning thread
 * Prints every round and the median.  Build: make tools (or see Makefile). */
#define _GNU_SOURCE
#include <corokit.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* one worker's counters (coro_sched_worker_stats) */
static coro_worker_stats_t wstat(const coro_sched_t *s, int i)
{
    coro_worker_stats_t w;
    coro_sched_worker_stats(s, i, &w);
    return w;
}

enum { N = 10000 };

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int empty(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

struct dec {
    coro_t co;
    long *left;
    coro_t *signal_to;
};

static coro_t done_marker;

static int dec_body(coro_t *co)
{
    struct dec *d = CORO_SELF(co, struct dec);
    CORO_BEGIN(co);
    __atomic_sub_fetch(d->left, 1, __ATOMIC_ACQ_REL);
    CORO_END(co);
}

struct root {
    coro_t co;
    coro_sched_t *s;
    struct dec *kids;
    long left;
    int i;
};

static int root_body(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    CORO_BEGIN(co);
    r->left = N;
    for (r->i = 0; r->i < N; r->i++) {
        r->kids[r->i].left = &r->left;
        coro_spawn(r->s, &r->kids[r->i].co, dec_body, NULL);
    }
    /* the last one signals: wait until the counter reaches zero */
    while (__atomic_load_n(&r->left, __ATOMIC_ACQUIRE) != 0)
        CORO_YIELD(co);
    CORO_END(co);
}

/* split: the counter and the event of a round */
static long split_left;
static coro_event_t split_done;

static int split_body(coro_t *co)
{
    CORO_BEGIN(co);
    if (__atomic_sub_fetch(&split_left, 1, __ATOMIC_RELAXED) == 0)
        coro_event_set(&split_done);
    CORO_END(co);
}

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double split_round(coro_sched_t *s, int workers)
{
    uint64_t before[CORO_MAX_WORKERS], woken[CORO_MAX_WORKERS];
    for (int i = 0; i < workers; i++) {
        before[i] = wstat(s, i).jobs_run;
        woken[i] = wstat(s, i).wakeups;
    }
    split_left = N;
    coro_event_init(&split_done);
    double t0 = now_ns(), c0 = thread_cpu_ns();
    for (int i = 0; i < N; i++) {
        coro_t *k = coro_frame_alloc(s, sizeof *k);
        if (!k || coro_spawn(s, k, split_body, NULL) != 0) {
            fprintf(stderr, "spawn_cost: spawn failed\n");
            exit(1);
        }
    }
    double loop = now_ns() - t0, cpu = thread_cpu_ns() - c0;
    int on = sched_getcpu();
    coro_event_wait_blocking(&split_done, CORO_FOREVER);
    double wall = now_ns() - t0;
    coro_event_destroy(&split_done);
    printf("wall %6.0f us  spawn loop %6.0f us (cpu %6.0f us) on CPU %d  jobs run:", wall / 1e3,
           loop / 1e3, cpu / 1e3, on);
    for (int i = 0; i < workers; i++)
        printf(" w%d (CPU %d) %5lu (woken %lu)", i, wstat(s, i).cpu,
               (unsigned long)(wstat(s, i).jobs_run - before[i]),
               (unsigned long)(wstat(s, i).wakeups - woken[i]));
    printf("\n");
    return wall;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "st";
    int workers = argc > 2 ? atoi(argv[2]) : 2;
    int rounds = argc > 3 ? atoi(argv[3]) : 9;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    coro_t *frames = calloc(N, sizeof *frames);
    struct dec *kids = calloc(N, sizeof *kids);
    double *t;

    (void)done_marker;
    if (strcmp(mode, "st") == 0) {
        workers = 0;
        if (argc > 2)
            rounds = atoi(argv[2]);
    }
    if (rounds < 1 || !frames || !kids) {
        fprintf(stderr, "usage: spawn_cost st [rounds] | local|remote|split WORKERS [rounds] (rounds >= 1)\n");
        return 2;
    }
    /* after the mode's arguments: "st 20" reads its round count above (the
     * array was sized from the default once and overflowed) */
    t = calloc((size_t)rounds, sizeof *t);
    if (!t)
        return 1;
    cfg.workers = workers;
    if (coro_sched_create(&s, &cfg) < 0)
        return 1;
    if (getenv("PIN")) {        /* the spawning thread's placement, fixed */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(getenv("PIN")), &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            perror("spawn_cost: PIN");
    }
    for (int r = 0; r < rounds + 1; r++) {      /* round 0 warms up */
        double t0 = now_ns(), took = -1;   /* split: the round's own wall time, no printf */
        if (strcmp(mode, "st") == 0) {
            for (int i = 0; i < N; i++)
                coro_spawn(s, &frames[i], empty, NULL);
            coro_sched_run(s);
        } else if (strcmp(mode, "local") == 0) {
            struct root root = { .s = s, .kids = kids };
            coro_block_on(s, &root.co, root_body, NULL, &(intptr_t){0});
        } else if (strcmp(mode, "split") == 0) {
            took = split_round(s, workers);     /* round 0 too: printed, not counted */
        } else {
            for (int i = 0; i < N; i++)
                coro_spawn(s, &frames[i], empty, NULL);
            for (int i = 0; i < N; i++)
                coro_join(&frames[i], &(intptr_t){0});
        }
        if (r > 0)
            t[r - 1] = (took >= 0 ? took : now_ns() - t0) / N;
    }
    qsort(t, rounds, sizeof *t, cmp);
    printf("spawn_cost %s workers=%d: median %.0f ns/job (min %.0f, max %.0f, %d rounds of %d)\n",
           mode, workers, t[rounds / 2], t[0], t[rounds - 1], rounds, N);
    if (getenv("STATS") && workers > 0) {
        coro_sched_stats_t *st = malloc(sizeof *st);
        coro_sched_stats(s, st);
        printf("worker cpu pinned jobs_run steals stolen parks wakeups depth\n");
        for (int i = 0; i < st->workers; i++)
            printf("%6d %3d %6d %8lu %6lu %6lu %5lu %7lu %5lu\n", i, wstat(s, i).cpu,
                   wstat(s, i).pinned, (unsigned long)wstat(s, i).jobs_run,
                   (unsigned long)wstat(s, i).steals, (unsigned long)wstat(s, i).stolen,
                   (unsigned long)wstat(s, i).parks, (unsigned long)wstat(s, i).wakeups,
                   (unsigned long)wstat(s, i).queue_depth);
        free(st);
    }
    coro_sched_destroy(s);
    free(frames);
    free(kids);
    free(t);
    return 0;
}
