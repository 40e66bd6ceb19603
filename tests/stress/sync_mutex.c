/* SPDX-License-Identifier: MIT */
/* Scenario: jobs and plain threads increment one counter under a
 * coro_mutex_t; a semaphore and a wait group run beside it; across
 * 1/2/4/8 workers.  Checks the count is exact (TSan sees the counter's
 * accesses ordered by the mutex's hand-off). */
#include <pthread.h>
#include "scenario.h"

enum { JOBS = 64, THREADS = 2 };

struct ctx {
    coro_mutex_t m;
    coro_sem_t sem;
    coro_waitgroup_t wg;
    long counter;
    int iters;
    int inside;     /* atomic: holders of a semaphore unit */
};

struct job {
    coro_t co;
    struct ctx *x;
    int i;
};

static int job_body(coro_t *co)
{
    struct job *f = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->x->iters; f->i++) {
        CORO_AWAIT(co, coro_mutex_lock(&f->x->m, CORO_FOREVER));
        SCEN_CHECK(CORO_RESULT(co) == 0, "lock");
        f->x->counter++;
        if (f->i % 7 == 0)
            CORO_YIELD(co);     /* hold it across a suspension */
        SCEN_CHECK(coro_mutex_unlock(&f->x->m) == 0, "unlock");
        CORO_AWAIT(co, coro_sem_acquire(&f->x->sem, CORO_FOREVER));
        SCEN_CHECK(__atomic_add_fetch(&f->x->inside, 1, __ATOMIC_RELAXED) <= 2, "sem bound");
        __atomic_sub_fetch(&f->x->inside, 1, __ATOMIC_RELAXED);
        SCEN_CHECK(coro_sem_release(&f->x->sem, 1) >= 0, "release");
    }
    coro_waitgroup_done(&f->x->wg);
    CORO_END(co);
}

static void *thread_body(void *arg)
{
    struct ctx *x = arg;
    for (int i = 0; i < x->iters; i++) {
        SCEN_CHECK(coro_mutex_lock_blocking(&x->m, CORO_FOREVER) == 0, "thread lock");
        x->counter++;
        SCEN_CHECK(coro_mutex_unlock(&x->m) == 0, "thread unlock");
    }
    coro_waitgroup_done(&x->wg);
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int iters = SCEN_N(mode, 300, 300, 20000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct ctx x = { .iters = iters };
        struct job *j = calloc(JOBS, sizeof *j);
        pthread_t t[THREADS];

        coro_mutex_init(&x.m);
        coro_sem_init(&x.sem, 2);
        coro_waitgroup_init(&x.wg);
        coro_waitgroup_add(&x.wg, JOBS + THREADS);
        for (int i = 0; i < JOBS; i++) {
            j[i].x = &x;
            SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, NULL) == 0, "spawn");
        }
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, thread_body, &x);
        SCEN_CHECK(coro_waitgroup_wait_blocking(&x.wg, CORO_FOREVER) == 0, "wg");
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < JOBS; i++)
            join_r(&j[i].co);
        SCEN_CHECK(coro_mutex_lock_blocking(&x.m, CORO_FOREVER) == 0, "final lock");
        SCEN_CHECK(x.counter == (long)(JOBS + THREADS) * iters, "%d workers: counter %ld",
                   scen_workers[k], x.counter);
        coro_mutex_unlock(&x.m);
        SCEN_CHECK(coro_mutex_destroy(&x.m) == 0 && coro_sem_destroy(&x.sem) == 0 &&
                   coro_waitgroup_destroy(&x.wg) == 0, "destroy");
        free(j);
        coro_sched_destroy(s);
    }
    return 0;
}
