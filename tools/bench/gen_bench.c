/* SPDX-License-Identifier: MIT */
/* tools/bench/gen_bench.c - corokit's generators, values per second
 * (docs/benchmarks.md, "Generators"; tools/bench/gen.sh runs it beside its
 * C++20 twin, gen_twin.cpp).
 *
 *   gen_bench plain N    N values of a counting generator, pulled from
 *                        plain code with coro_gen_next_of naming its body,
 *                        the body in a file of the switch back end
 *                        (gen_bench_sw.c: the compiler inlines it)
 *   gen_bench plain_of N the same with the body in this file (the labels
 *                        back end: called directly, not inlined)
 *   gen_bench plain_next N  the same pulled with coro_gen_next
 *   gen_bench job N      the same pulled by a job with coro_gen_await
 *                        (a scheduler with 1 worker, coro_block_on)
 *   gen_bench from1 N    plain pulls through 1 level of CORO_YIELD_FROM
 *   gen_bench from64 N   plain pulls through 64 levels
 *   gen_bench job64 N    a job's pulls through 64 levels
 *
 * Prints one line: "mode values ns_per_value values_per_s sum".
 * Build: make; cc -O2 -Iinclude tools/bench/gen_bench.c tools/bench/gen_bench_sw.c
 *        build/libcorokit.a -lck -pthread
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <corokit.h>

#define MAX_DEPTH 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the leaf: 0, 1, .. n - 1 */
struct count {
    coro_t co;
    intptr_t i, n;
};

static int count_body(coro_t *co)
{
    struct count *g = CORO_SELF(co, struct count);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i);
    CORO_END(co);
}

/* one level: every value of the level below it */
struct level {
    coro_t co;
    struct level *below;    /* NULL: the leaf is below */
    struct count *leaf;
};

static int level_body(coro_t *co)
{
    struct level *g = CORO_SELF(co, struct level);
    CORO_BEGIN(co);
    if (g->below) {
        coro_gen_init(&g->below->co, level_body);
        CORO_YIELD_FROM(co, &g->below->co);
    } else {
        coro_gen_init(&g->leaf->co, count_body);
        CORO_YIELD_FROM(co, &g->leaf->co);
    }
    CORO_END(co);
}

static struct level levels[MAX_DEPTH];
static struct count leaf;

/* the generator to pull: the leaf alone (depth 0) or depth levels above it */
static coro_t *make(int depth, intptr_t n)
{
    memset(levels, 0, sizeof levels);
    memset(&leaf, 0, sizeof leaf);
    leaf.n = n;
    if (depth == 0) {
        coro_gen_init(&leaf.co, count_body);
        return &leaf.co;
    }
    for (int k = 0; k < depth; k++) {
        levels[k].below = k + 1 < depth ? &levels[k + 1] : NULL;
        levels[k].leaf = &leaf;
    }
    coro_gen_init(&levels[0].co, level_body);
    return &levels[0].co;
}

/* gen_bench_sw.c */
coro_t *gen_bench_sw_make(intptr_t n);
intptr_t gen_bench_sw_pull(coro_t *g);

static intptr_t pull_plain(coro_t *g)
{
    intptr_t v, sum = 0;
    while (coro_gen_next(g, &v) == 1)
        sum += v;
    return sum;
}

static intptr_t pull_plain_of(coro_t *g)
{
    intptr_t v, sum = 0;
    while (coro_gen_next_of(g, count_body, &v) == 1)
        sum += v;
    return sum;
}

struct puller {
    coro_t co;
    coro_t *gen;
    intptr_t v, sum;
};

static int puller_body(coro_t *co)
{
    struct puller *p = CORO_SELF(co, struct puller);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(p->gen, &p->v));
        if (CORO_RESULT(co) != 1)
            break;
        p->sum += p->v;
    }
    CORO_END(co);
}

static intptr_t pull_job(coro_t *g)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    static struct puller p;
    intptr_t r;

    cfg.workers = 1;
    cfg.pin = false;        /* as the twin's thread: no CPU of its own on a shared machine */
    if (coro_sched_create(&s, &cfg) != 0) {
        fprintf(stderr, "gen_bench: coro_sched_create failed\n");
        exit(1);
    }
    memset(&p, 0, sizeof p);
    p.gen = g;
    if (coro_block_on(s, &p.co, puller_body, NULL, &r) != 0) {
        fprintf(stderr, "gen_bench: coro_block_on failed\n");
        exit(1);
    }
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    return p.sum;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "list") == 0) {
        puts("plain\nplain_of\nplain_next\njob\nfrom1\nfrom64\njob64");
        return 0;
    }
    const char *mode = argv[1];
    intptr_t n = argc > 2 ? strtol(argv[2], NULL, 10) : 10000000;
    int depth = 0, plain = 0;
    bool job = false;

    if (strcmp(mode, "plain") == 0)
        plain = 2;
    else if (strcmp(mode, "plain_of") == 0)
        plain = 1;
    else if (strcmp(mode, "plain_next") == 0)
        ;
    else if (strcmp(mode, "job") == 0)
        job = true;
    else if (strcmp(mode, "from1") == 0)
        depth = 1;
    else if (strcmp(mode, "from64") == 0)
        depth = 64;
    else if (strcmp(mode, "job64") == 0)
        job = true, depth = 64;
    else {
        fprintf(stderr, "gen_bench: unknown mode %s (list)\n", mode);
        return 2;
    }
    coro_t *g = plain == 2 ? gen_bench_sw_make(n) : make(depth, n);
    double t0 = now_s();
    intptr_t sum = job ? pull_job(g)
                   : plain == 2 ? gen_bench_sw_pull(g)
                   : plain == 1 ? pull_plain_of(g)
                                : pull_plain(g);
    double dt = now_s() - t0;
    if (sum != (intptr_t)((n - 1) * n / 2)) {
        fprintf(stderr, "gen_bench: %s: sum %jd, expected %jd\n", mode, (intmax_t)sum,
                (intmax_t)((n - 1) * n / 2));
        return 1;
    }
    printf("%s %jd %.3f %.0f %jd\n", mode, (intmax_t)n, dt * 1e9 / (double)n, (double)n / dt,
           (intmax_t)sum);
    return 0;
}
