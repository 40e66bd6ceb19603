/* SPDX-License-Identifier: MIT */
/* latency - a periodic job that must wake on time, beside CPU hogs.
 * docs/recipes.md, "A latency-sensitive job beside CPU hogs", explains
 * the figures.
 *
 *   latency [-p PERIOD_US] [-n COUNT] [-c CHUNK_US] [-H HOGS]
 *       run the same load twice and print, for each, how late the periodic
 *       job woke (p50, p99 and max of COUNT wake-ups, in µs):
 *         naive:    the ticker and the hogs at NORMAL priority, any CPU;
 *         isolated: the hogs at LOW priority on every CPU but the last,
 *                   the ticker at HIGH priority on the last CPU alone
 *                   (on one CPU: all on it, the priorities alone).
 *       The ticker sleeps until each deadline of a fixed period
 *       (coro_sleep_until), PERIOD_US apart (default 1,000), COUNT times
 *       (default 500).  Each hog computes in steps of CHUNK_US (default
 *       200) and yields between them, until it is cancelled; HOGS per
 *       CPU (default 2: every worker stays busy; 0: the machine's floor).
 *   latency --self-test
 *       both runs, short (50 wake-ups); exits 0 when each printed sane
 *       figures (no timing bound: the machine may be loaded).
 *
 * A worker runs one step of a job at a time and is never pre-empted: a
 * woken ticker waits for the step under way on its worker to end.  So
 * the lateness is bounded by the hogs' chunk (when they share its worker),
 * by the queue in front of it (its priority), and by nothing of theirs
 * when no hog may run on its worker (the masks). */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define US 1000LL

/* [hog] CPU-bound work in chunks; a yield between chunks is where the
 * worker may run something else */
struct hog {
    coro_t co;
    int64_t chunk_ns;
    uint64_t x, chunks;
};

static int hog_body(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    /* CORO_YIELD is not a cancellation point: ask coro_cancelled */
    while (!coro_cancelled()) {
        {
            int64_t end = coro_now() + h->chunk_ns;     /* dead before the yield */
            do {
                for (int i = 0; i < 256; i++)           /* xorshift: real work */
                    h->x ^= h->x << 13, h->x ^= h->x >> 7, h->x ^= h->x << 17;
            } while (coro_now() < end);
        }
        h->chunks++;
        CORO_YIELD(co);
    }
    CORO_END(co);
}
/* [/hog] */

/* [ticker] wake at each deadline of a fixed period, record how late */
struct ticker {
    coro_t co;
    int64_t period_ns, next;
    int i, n;
    int64_t *late;                  /* n lateness values, ns */
};

static int ticker_body(coro_t *co)
{
    struct ticker *t = CORO_SELF(co, struct ticker);
    CORO_BEGIN(co);
    t->next = coro_now() + t->period_ns;
    for (t->i = 0; t->i < t->n; t->i++) {
        CORO_AWAIT(co, coro_sleep_until(t->next));
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
        int64_t now = coro_now();
        t->late[t->i] = now - t->next;
        /* a wake-up later than a period skips the deadlines it missed */
        do
            t->next += t->period_ns;
        while (t->next <= now);
    }
    CORO_END(co);
}
/* [/ticker] */

struct run {
    const char *name;
    int64_t period_ns, chunk_ns;
    int count, hogs_per_cpu;
    bool isolated;
    /* results */
    int64_t p50, p99, max;
    uint64_t chunks;
};

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* [setup] the CPUs the process may use; the ticker's mask and the hogs' */
static int run_once(struct run *r)
{
    cpu_set_t os;
    coro_cpuset_t all, tick_cpus, hog_cpus;
    int cpus[CPU_SETSIZE], ncpu = 0, rc;

    if (sched_getaffinity(0, sizeof os, &os) < 0)
        return -errno;
    coro_cpuset_zero(&all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &os) && c < CORO_MAX_CPUS) {
            cpus[ncpu++] = c;
            coro_cpuset_add(&all, c);
        }
    hog_cpus = all;
    tick_cpus = all;
    if (r->isolated && ncpu > 1) {
        /* the last CPU is the ticker's alone: no hog may run there */
        coro_cpuset_zero(&tick_cpus);
        coro_cpuset_add(&tick_cpus, cpus[ncpu - 1]);
        coro_cpuset_zero(&hog_cpus);
        for (int i = 0; i < ncpu - 1; i++)
            coro_cpuset_add(&hog_cpus, cpus[i]);
    }
    coro_spawn_opts_t hog_opts = {
        .affinity = &hog_cpus,
        .priority = r->isolated ? CORO_PRIO_LOW : CORO_PRIO_NORMAL,
    };
    coro_spawn_opts_t tick_opts = {
        .affinity = &tick_cpus,
        .priority = r->isolated ? CORO_PRIO_HIGH : CORO_PRIO_NORMAL,
    };
    /* [/setup] */
    coro_sched_t *s;
    coro_group_t hogs;
    int nhogs = r->hogs_per_cpu * ncpu;
    struct hog *h = calloc((size_t)nhogs + 1, sizeof *h);
    struct ticker t = { .period_ns = r->period_ns, .n = r->count };

    t.late = calloc((size_t)r->count, sizeof *t.late);
    if (!h || !t.late) {
        free(h);
        free(t.late);
        return -ENOMEM;
    }
    if ((rc = coro_sched_create(&s, NULL)) < 0) {   /* a pinned worker per CPU */
        free(h);
        free(t.late);
        return rc;
    }
    coro_group_init(&hogs);
    hog_opts.group = &hogs;
    for (int i = 0; i < nhogs; i++) {
        h[i].chunk_ns = r->chunk_ns;
        h[i].x = (uint64_t)i + 1;
        coro_spawn(s, &h[i].co, hog_body, &hog_opts);
    }
    intptr_t res = 0;
    rc = coro_block_on(s, &t.co, ticker_body, &tick_opts, &res);
    if (rc == 0)
        rc = (int)res;
    /* the ticker is done: stop the hogs, and wait until they stopped */
    coro_group_cancel(&hogs);
    coro_group_wait_blocking(&hogs, CORO_FOREVER);
    coro_sched_destroy(s);
    coro_group_destroy(&hogs);
    r->chunks = 0;
    for (int i = 0; i < nhogs; i++)
        r->chunks += h[i].chunks;
    if (rc == 0) {
        qsort(t.late, (size_t)r->count, sizeof *t.late, cmp64);
        r->p50 = t.late[r->count / 2];
        r->p99 = t.late[(r->count * 99) / 100];
        r->max = t.late[r->count - 1];
    }
    free(h);
    free(t.late);
    return rc;
}

static int report(struct run *r)
{
    int rc = run_once(r);

    if (rc < 0) {
        fprintf(stderr, "latency: %s: %s\n", r->name, coro_strerror(rc));
        return rc;
    }
    printf("%-8s %d wake-ups every %lld us: late p50 %lld us, p99 %lld us, max %lld us "
           "(hogs ran %llu chunks of %lld us)\n",
           r->name, r->count, (long long)(r->period_ns / US), (long long)(r->p50 / US),
           (long long)(r->p99 / US), (long long)(r->max / US), (unsigned long long)r->chunks,
           (long long)(r->chunk_ns / US));
    return 0;
}

int main(int argc, char **argv)
{
    struct run naive = { .name = "naive", .period_ns = 1000 * US, .chunk_ns = 200 * US,
                         .count = 500, .hogs_per_cpu = 2 };
    long long us;
    int opt;
    bool self_test = argc == 2 && strcmp(argv[1], "--self-test") == 0;

    if (self_test) {
        naive.count = 50;
    } else {
        while ((opt = getopt(argc, argv, "p:n:c:H:")) != -1) {
            switch (opt) {
            case 'p':
                if (!sample_arg_num(optarg, 1, INT64_MAX / US, &us))
                    goto usage;
                naive.period_ns = us * US;
                break;
            case 'n':
                if (!sample_arg_int(optarg, 1, INT_MAX, &naive.count))
                    goto usage;
                break;
            case 'c':
                if (!sample_arg_num(optarg, 0, INT64_MAX / US, &us))
                    goto usage;
                naive.chunk_ns = us * US;
                break;
            case 'H':
                if (!sample_arg_int(optarg, 0, 1000, &naive.hogs_per_cpu))
                    goto usage;
                break;
            default: goto usage;
            }
        }
        if (optind != argc || naive.period_ns <= 0 || naive.count < 1 || naive.chunk_ns < 0 ||
            naive.hogs_per_cpu < 0) {
usage:
            fprintf(stderr, "usage: %s [-p PERIOD_US] [-n COUNT] [-c CHUNK_US] [-H HOGS] | --self-test\n",
                    argv[0]);
            return 2;
        }
    }
    struct run isolated = naive;
    isolated.name = "isolated";
    isolated.isolated = true;
    if (report(&naive) < 0 || report(&isolated) < 0)
        return 1;
    if (self_test) {
        /* sane, not fast: ordered figures, none negative or absurd (a
         * wake-up can only be late), and hogs that ran beside the ticker */
        for (struct run *r = &naive; r; r = r == &naive ? &isolated : NULL)
            if (r->p50 < 0 || r->p50 > r->p99 || r->p99 > r->max || r->max > 10000000000LL ||
                r->chunks == 0)
                return 1;
    }
    return 0;
}
