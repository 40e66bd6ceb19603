/* SPDX-License-Identifier: MIT */
/* Scenario: pool frames allocated on workers and on plain threads, spawned
 * and finished anywhere (cross-worker remote frees), never-spawned frames
 * handed between threads and freed there (cross-thread frees), plain
 * threads that exit with frames still out (their caches adopted), the
 * full slabs of a thread's cache released by whoever frees their last
 * frame, a thread cache's empty slabs given back by a worker going idle
 * while the thread may be drawing on them (lib/sched/frame_sched.c TRIM),
 * big frames back to the pool that allocated them, across
 * 1/2/4/8 workers.  Checks every job ran once and the config allocator
 * has nothing outstanding after coro_sched_destroy. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include "scenario.h"

static long live_blocks;
static void *cnt_malloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = malloc(n);
    if (p)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}
static void cnt_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}
static coro_alloc_t counting = { .alloc = cnt_malloc, .free = cnt_free };

static long ran;
static coro_sched_t *S;

struct job {
    coro_t co;
    long depth;
    char pad[100];
};

static int job_fn(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    if (j->depth > 0) {         /* a child from this worker's pool */
        struct job *k = coro_frame_alloc(S, j->depth % 3 ? sizeof *k : 3000);
        SCEN_CHECK(k != NULL, "alloc in job");
        k->depth = j->depth - 1;
        SCEN_CHECK(coro_spawn(S, &k->co, job_fn, NULL) == 0, "spawn in job");
    }
    if (j->depth % 2)
        CORO_YIELD(co);         /* finish on whichever worker steals it */
    CORO_END(co);
}

/* frames a producer allocates and a consumer frees, never spawned */
#define HAND 256
struct hand {
    void *slot[HAND];
    long n;
};

static void *producer(void *arg)
{
    struct hand *h = arg;
    for (long i = 0; i < h->n; i++) {
        /* now and then a big frame (its own slab, back to this cache) */
        struct job *j = coro_frame_alloc(S, i % 16 == 1 ? 70000 : sizeof *j);
        SCEN_CHECK(j != NULL, "alloc on thread");
        if (i % 2) {
            j->depth = 3;
            SCEN_CHECK(coro_spawn(S, &j->co, job_fn, NULL) == 0, "spawn from thread");
            continue;
        }
        void *none = NULL;
        /* hand it over: spin until the slot is empty */
        while (!__atomic_compare_exchange_n(&h->slot[i % HAND], &none, j, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            none = NULL;
            sched_yield();
        }
    }
    return NULL;    /* exits with frames still out: its cache is adopted */
}

static void *consumer(void *arg)
{
    struct hand *h = arg;
    for (long i = 0; i < h->n; i += 2) {
        void *j;
        while (!(j = __atomic_exchange_n(&h->slot[i % HAND], NULL, __ATOMIC_ACQ_REL)))
            sched_yield();
        coro_frame_free(j);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long n = SCEN_N(mode, 2000, 20000, 400000);
    for (int wi = 0; wi < SCEN_NWORKERS; wi++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        c.workers = scen_workers[wi];
        c.alloc = &counting;
        SCEN_CHECK(coro_sched_create(&S, &c) == 0, "create");
        ran = 0;
        for (int round = 0; round < 3; round++) {
            struct hand *h = calloc(1, sizeof *h);
            h->n = n;
            pthread_t p, q;
            pthread_create(&p, NULL, producer, h);
            pthread_create(&q, NULL, consumer, h);
            pthread_join(p, NULL);
            pthread_join(q, NULL);
            free(h);
        }
        long expect = 3 * (n / 2) * 4;      /* each spawned chain: 4 jobs */
        /* the chains spawn as they go: wait for them before closing */
        while (__atomic_load_n(&ran, __ATOMIC_RELAXED) < expect)
            sched_yield();
        SCEN_CHECK(coro_sched_shutdown(S, CORO_DRAIN) == 0, "shutdown");
        SCEN_CHECK(ran == expect, "workers %d: ran %ld, expected %ld", c.workers, ran, expect);
        SCEN_CHECK(coro_sched_destroy(S) == 0, "destroy");
        SCEN_CHECK(live_blocks == 0, "workers %d: %ld blocks left", c.workers, live_blocks);
    }
    printf("frame_frees: ok\n");
    return 0;
}
