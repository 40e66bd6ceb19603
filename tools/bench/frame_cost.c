/* SPDX-License-Identifier: MIT */
/* frame_cost: fire-and-forget jobs whose frames come from coro_frame_alloc
 * or from calloc (freed by on_exit), side by side in one run, ns per job.
 *   frame_cost WORKERS SIZE [rounds] [from]
 *     SIZE   the frame's bytes (a 69 KiB frame is a file-hashing job's
 *            buffer; 128 B is an empty job's)
 *     from   "job" (default: a job spawns them, as a server's accept loop
 *            does) or "thread" (a plain thread spawns them)
 * Each round spawns 5,000 jobs that touch their frame's first and last
 * byte and count down, at most 64 alive at once (the spawner yields, or a
 * plain thread calls sched_yield, while 64 are); the rounds alternate pool
 * and calloc.  Prints every
 * round and the medians.  Build: make tools. */
#define _GNU_SOURCE
#include <corokit.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 5000, WINDOW = 64 };

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct job {
    coro_t co;
    long *left;
    coro_event_t *ev;
    size_t size;
};

static int job_fn(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    ((volatile char *)j)[j->size - 1] = 1;
    if (__atomic_sub_fetch(j->left, 1, __ATOMIC_ACQ_REL) == 0)
        coro_event_set(j->ev);
    CORO_END(co);
}

static void free_exit(coro_t *co)
{
    free(CORO_SELF(co, struct job));
}

struct round {
    coro_sched_t *s;
    size_t size;
    bool pool;
    long left;
    coro_event_t ev;
};

/* jobs spawned and not finished */
static long in_flight(struct round *r, int spawned)
{
    return spawned - (N - __atomic_load_n(&r->left, __ATOMIC_ACQUIRE));
}

/* spawn jobs from *i on, until N or until WINDOW are alive; 0 or -1 */
static int spawn_some(struct round *r, int *i)
{
    static const coro_spawn_opts_t by_calloc = { .on_exit = free_exit };
    for (; *i < N && in_flight(r, *i) < WINDOW; ++*i) {
        struct job *j = r->pool ? coro_frame_alloc(r->s, r->size) : calloc(1, r->size);
        if (!j)
            return -1;
        j->left = &r->left;
        j->ev = &r->ev;
        j->size = r->size;
        if (coro_spawn(r->s, &j->co, job_fn, r->pool ? NULL : &by_calloc) != 0)
            return -1;
    }
    return 0;
}

struct spawner {
    coro_t co;
    struct round *r;
    int i;
};

static int spawner_fn(coro_t *co)
{
    struct spawner *sp = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    while (sp->i < N) {
        if (spawn_some(sp->r, &sp->i) != 0)
            CORO_RETURN(co, -1);
        if (sp->i < N)
            CORO_YIELD(co);
    }
    CORO_AWAIT(co, coro_event_wait(&sp->r->ev, CORO_FOREVER));
    CORO_END(co);
}

static double one_round(coro_sched_t *s, size_t size, bool pool, bool from_job)
{
    struct round r = { .s = s, .size = size, .pool = pool, .left = N };
    coro_event_init(&r.ev);
    double t0 = now_ns();
    if (from_job) {
        struct spawner sp = { .r = &r };
        if (coro_block_on(s, &sp.co, spawner_fn, NULL, &(intptr_t){0}) != 0)
            return -1;
    } else {
        for (int i = 0; i < N;) {
            if (spawn_some(&r, &i) != 0)
                return -1;
            if (i < N)
                sched_yield();
        }
        if (coro_event_wait_blocking(&r.ev, CORO_FOREVER) != 0)
            return -1;
    }
    double t = (now_ns() - t0) / N;
    coro_event_destroy(&r.ev);
    return t;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: frame_cost WORKERS SIZE [rounds] [job|thread]\n");
        return 2;
    }
    int workers = atoi(argv[1]);
    size_t size = strtoul(argv[2], NULL, 0);
    int rounds = argc > 3 ? atoi(argv[3]) : 9;
    bool from_job = !(argc > 4 && strcmp(argv[4], "thread") == 0);
    if (size < sizeof(struct job))
        size = sizeof(struct job);
    if (workers < 1 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "frame_cost: WORKERS >= 1, rounds 1..1000\n");
        return 2;
    }
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    coro_sched_t *s;
    int rc = coro_sched_create(&s, &c);
    if (rc < 0) {
        fprintf(stderr, "create: %s\n", coro_strerror(rc));
        return 1;
    }
    double *tp = calloc(rounds, sizeof *tp), *tc = calloc(rounds, sizeof *tc);
    one_round(s, size, true, from_job);     /* warm both up */
    one_round(s, size, false, from_job);
    for (int i = 0; i < rounds; i++) {
        tp[i] = one_round(s, size, true, from_job);
        tc[i] = one_round(s, size, false, from_job);
        printf("round %d: pool %.0f ns/job, calloc %.0f ns/job\n", i, tp[i], tc[i]);
        if (tp[i] < 0 || tc[i] < 0) {
            fprintf(stderr, "frame_cost: a spawn failed\n");
            return 1;
        }
    }
    qsort(tp, rounds, sizeof *tp, cmp);
    qsort(tc, rounds, sizeof *tc, cmp);
    printf("workers %d, frame %zu B, from a %s: pool %.0f ns/job, calloc %.0f ns/job (medians of "
           "%d), pool/calloc %.2f\n",
           workers, size, from_job ? "job" : "plain thread", tp[rounds / 2], tc[rounds / 2], rounds,
           tp[rounds / 2] / tc[rounds / 2]);
    coro_sched_destroy(s);
    free(tp);
    free(tc);
    return 0;
}
