/* SPDX-License-Identifier: MIT */
/* Scenario: the caller's seat (lib/sched/seat.c) under contention - three
 * plain threads call coro_block_on at once, over and over; one at a time
 * holds the seat, the others wait as joiners.  Each root spawns a chain
 * (LIFO slot, each link awaiting the next), a fan of children (the seat's ring, stolen by idle
 * workers), a job that sleeps past the root's end (a timer begun on the
 * seat, fired from the scheduler's heap), and awaits the chain and the
 * fan but not the sleeper, which the caller joins after the call returned.
 * Across 1/2/4/8 workers; under TSan (make check-tsan) the seat's take,
 * leave and the thieves' steals are what it checks.  Sizes: quick 200
 * calls per thread, full 60, stress 5,000. */
#include <pthread.h>
#include <stdatomic.h>
#include "scenario.h"

#define CHAIN 16
#define FAN 6

struct leaf {
    coro_t co;
    atomic_int *count;
    int depth;
    struct leaf *next;      /* the chain's next link (NULL: the end) */
};

static int leaf_fn(coro_t *co)
{
    struct leaf *l = CORO_SELF(co, struct leaf);
    CORO_BEGIN(co);
    atomic_fetch_add(l->count, 1);
    if (l->next) {
        int rc = coro_spawn(coro_sched_current(), &l->next->co, leaf_fn, NULL);
        SCEN_CHECK(rc == 0, "spawn link: %s", coro_strerror(rc));
        /* the chain's first link ends after its last */
        CORO_AWAIT(co, coro_done(&l->next->co));
    }
    CORO_END(co);
}

struct sleeper {
    coro_t co;
};

static int sleeper_fn(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(200000));     /* 0.2 ms, begun where it was spawned */
    CORO_RETURN(co, CORO_RESULT(co) == 0 ? 9 : CORO_RESULT(co));
    CORO_END(co);
}

struct root {
    coro_t co;
    atomic_int count;
    struct leaf chain[CHAIN];
    struct leaf fan[FAN];
    struct sleeper z;
    int i;
};

static int root_fn(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    for (int i = 0; i < CHAIN; i++) {
        r->chain[i].count = &r->count;
        r->chain[i].next = i + 1 < CHAIN ? &r->chain[i + 1] : NULL;
    }
    int rc = coro_spawn(s, &r->chain[0].co, leaf_fn, NULL);
    SCEN_CHECK(rc == 0, "spawn chain: %s", coro_strerror(rc));
    for (int i = 0; i < FAN; i++) {
        r->fan[i].count = &r->count;
        rc = coro_spawn(s, &r->fan[i].co, leaf_fn, NULL);
        SCEN_CHECK(rc == 0, "spawn fan: %s", coro_strerror(rc));
    }
    rc = coro_spawn(s, &r->z.co, sleeper_fn, NULL);
    SCEN_CHECK(rc == 0, "spawn sleeper: %s", coro_strerror(rc));
    for (r->i = 0; r->i < FAN; r->i++)
        CORO_AWAIT(co, coro_done(&r->fan[r->i].co));
    CORO_AWAIT(co, coro_done(&r->chain[0].co));
    CORO_RETURN(co, atomic_load(&r->count));
    CORO_END(co);
}

struct caller {
    pthread_t t;
    coro_sched_t *s;
    long calls;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    struct root *r = calloc(1, sizeof *r);
    SCEN_CHECK(r != NULL, "calloc");
    for (long k = 0; k < c->calls; k++) {
        memset(r, 0, sizeof *r);
        intptr_t v = block_on_r(c->s, &r->co, root_fn, NULL);
        SCEN_CHECK(v == CHAIN + FAN, "block_on: %ld", (long)v);
        intptr_t zv = join_r(&r->z.co);
        SCEN_CHECK(zv == 9, "sleeper: %ld", (long)zv);
    }
    free(r);
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long calls = SCEN_N(mode, 200, 60, 5000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct caller c[3];
        for (int i = 0; i < 3; i++) {
            c[i] = (struct caller){ .s = s, .calls = calls };
            SCEN_CHECK(pthread_create(&c[i].t, NULL, caller_main, &c[i]) == 0, "pthread_create");
        }
        for (int i = 0; i < 3; i++)
            pthread_join(c[i].t, NULL);
        coro_sched_stats_t st;
        SCEN_CHECK(coro_sched_stats(s, &st) == 0, "stats");
        /* the seat has no index: its steps are the totals' less the workers' */
        coro_worker_stats_t seat = { .jobs_run = st.jobs_run }, wst;
        for (int i = 0; i < st.workers; i++) {
            SCEN_CHECK(coro_sched_worker_stats(s, i, &wst) == 0, "a worker's stats");
            seat.jobs_run -= wst.jobs_run;
        }
        SCEN_CHECK(coro_sched_worker_stats(s, st.workers, &wst) == -ERANGE, "no index past the workers");
        printf("%d workers: %ld calls x 3 threads, the callers ran %llu of %llu steps, %llu stolen\n",
               scen_workers[k], calls, (unsigned long long)seat.jobs_run,
               (unsigned long long)st.jobs_run, (unsigned long long)st.stolen);
        SCEN_CHECK(coro_sched_shutdown(s, CORO_DRAIN) == 0, "shutdown");
        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    }
    return 0;
}
