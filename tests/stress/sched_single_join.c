/* SPDX-License-Identifier: MIT */
/* Scenario: single-threaded mode (workers = 0) with several threads in
 * coro_join at once (issue 9, item 8).  Each thread spawns jobs that yield,
 * sleep a little and return a value, and joins them; the joins hand the
 * drive from thread to thread.  One job yields in a loop until a 1 ms sleep
 * of another job has fired (the driver polls timers every 61 steps).  A
 * shutdown from yet another thread waits its turn without spinning.
 * Checks: every join returns its job's value, nothing hangs. */
#define _GNU_SOURCE
#include <pthread.h>
#include "scenario.h"

#define PER_THREAD 16

struct job {
    coro_t co;
    int id, k;
    int64_t ns;
};

static int job_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (j->k = 0; j->k < j->id % 5; j->k++)
        CORO_YIELD(co);
    if (j->ns) {
        CORO_AWAIT(co, coro_sleep(j->ns));
        SCEN_CHECK(CORO_RESULT(co) == 0, "sleep: %s", coro_err_name((int)CORO_RESULT(co)));
    }
    CORO_RETURN(co, j->id);
    CORO_END(co);
}

struct spin {
    coro_t co;
    int *stop;
};

static int spin_body(coro_t *co)
{
    struct spin *p = CORO_SELF(co, struct spin);
    CORO_BEGIN(co);
    while (!__atomic_load_n(p->stop, __ATOMIC_ACQUIRE))
        CORO_YIELD(co);
    CORO_END(co);
}

struct stopper {
    coro_t co;
    int *stop;
};

static int stopper_body(coro_t *co)
{
    struct stopper *p = CORO_SELF(co, struct stopper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(1000000));
    __atomic_store_n(p->stop, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

struct targ {
    coro_sched_t *s;
    int base;
    unsigned seed;
};

static void *joiner(void *arg)
{
    struct targ *t = arg;
    struct job jobs[PER_THREAD];

    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < PER_THREAD; i++) {
        jobs[i].id = t->base + i;
        jobs[i].ns = (rand_r(&t->seed) % 4) ? (int64_t)(rand_r(&t->seed) % 500) * 1000 : 0;
        SCEN_CHECK(coro_spawn(t->s, &jobs[i].co, job_body, NULL) == 0, "spawn");
    }
    for (int i = PER_THREAD - 1; i >= 0; i--) {
        intptr_t r = join_r(&jobs[i].co);
        SCEN_CHECK(r == jobs[i].id, "join of job %d returned %ld", jobs[i].id, (long)r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 30, 40, 2000);
    enum { T = 4 };

    for (int r = 0; r < rounds; r++) {
        coro_sched_t *s = scen_sched(0);
        struct targ t[T];
        pthread_t th[T];
        int stop = 0;
        struct spin sp = { .stop = &stop };
        struct stopper st = { .stop = &stop };

        SCEN_CHECK(coro_spawn(s, &sp.co, spin_body, NULL) == 0, "spawn");
        SCEN_CHECK(coro_spawn(s, &st.co, stopper_body, NULL) == 0, "spawn");
        for (int i = 0; i < T; i++) {
            t[i] = (struct targ){ .s = s, .base = 1000 * (i + 1), .seed = (unsigned)(r * T + i) };
            SCEN_CHECK(pthread_create(&th[i], NULL, joiner, &t[i]) == 0, "thread");
        }
        SCEN_CHECK(join_r(&sp.co) == 0, "spinner");
        for (int i = 0; i < T; i++)
            pthread_join(th[i], NULL);
        SCEN_CHECK(coro_sched_shutdown(s, r % 2 ? CORO_CANCEL : CORO_DRAIN) == 0, "shutdown");
        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    }
    printf("ok: %d rounds of %d joining threads\n", rounds, T);
    return 0;
}
