/* SPDX-License-Identifier: MIT */
/* Scenario: jobs and plain threads share a coro_rwlock_t - readers check
 * that a writer's two stores are never seen half done, writers count -
 * with waits that end every way (granted, timed out, given up at once),
 * so that the leave path (a writer that stops waiting admits the readers
 * behind it) races hand-offs and unlocks; across 1/2/4/8 workers.
 * Checks the count is exact and the lock is free at the end. */
#include <pthread.h>
#include "scenario.h"

enum { JOBS = 32, THREADS = 2 };

struct ctx {
    coro_rwlock_t rw;
    coro_waitgroup_t wg;
    long a, b;          /* a writer sets both; readers see them equal */
    long writes;        /* atomic: writes done */
    int iters;
};

struct job {
    coro_t co;
    struct ctx *x;
    int i, id;
};

static int64_t timeout_of(int i)
{
    return i % 5 == 0 ? 0 : i % 5 == 1 ? 200000 : CORO_FOREVER;   /* 0, 0.2 ms, none */
}

static int job_body(coro_t *co)
{
    struct job *f = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->x->iters; f->i++) {
        if ((f->i + f->id) % 3 == 0) {
            CORO_AWAIT(co, coro_rwlock_write_lock(&f->x->rw, timeout_of(f->i)));
            if (CORO_RESULT(co) != 0) {
                SCEN_CHECK(CORO_RESULT(co) == -ETIMEDOUT, "write lock: %ld", (long)CORO_RESULT(co));
                continue;
            }
            f->x->a++;
            if (f->i % 4 == 0)
                CORO_YIELD(co);
            f->x->b = f->x->a;
            __atomic_add_fetch(&f->x->writes, 1, __ATOMIC_RELAXED);
            SCEN_CHECK(coro_rwlock_write_unlock(&f->x->rw) == 0, "write unlock");
        } else {
            CORO_AWAIT(co, coro_rwlock_read_lock(&f->x->rw, timeout_of(f->i)));
            if (CORO_RESULT(co) != 0) {
                SCEN_CHECK(CORO_RESULT(co) == -ETIMEDOUT, "read lock: %ld", (long)CORO_RESULT(co));
                continue;
            }
            SCEN_CHECK(f->x->a == f->x->b, "a half-done write was seen");
            if (f->i % 4 == 1)
                CORO_YIELD(co);
            SCEN_CHECK(coro_rwlock_read_unlock(&f->x->rw) == 0, "read unlock");
        }
    }
    coro_waitgroup_done(&f->x->wg);
    CORO_END(co);
}

static void *thread_body(void *arg)
{
    struct ctx *x = arg;
    for (int i = 0; i < x->iters; i++) {
        int64_t t = timeout_of(i);
        if (i % 2 == 0) {
            int rc = coro_rwlock_write_lock_blocking(&x->rw, t);
            SCEN_CHECK(rc == 0 || rc == -ETIMEDOUT, "thread write lock: %d", rc);
            if (rc)
                continue;
            x->a++;
            x->b = x->a;
            __atomic_add_fetch(&x->writes, 1, __ATOMIC_RELAXED);
            SCEN_CHECK(coro_rwlock_write_unlock(&x->rw) == 0, "thread write unlock");
        } else {
            int rc = coro_rwlock_read_lock_blocking(&x->rw, t);
            SCEN_CHECK(rc == 0 || rc == -ETIMEDOUT, "thread read lock: %d", rc);
            if (rc)
                continue;
            SCEN_CHECK(x->a == x->b, "a thread saw a half-done write");
            SCEN_CHECK(coro_rwlock_read_unlock(&x->rw) == 0, "thread read unlock");
        }
    }
    coro_waitgroup_done(&x->wg);
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int iters = SCEN_N(mode, 200, 200, 20000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct ctx x = { .iters = iters };
        struct job *j = calloc(JOBS, sizeof *j);
        pthread_t t[THREADS];

        coro_rwlock_init(&x.rw);
        coro_waitgroup_init(&x.wg);
        coro_waitgroup_add(&x.wg, JOBS + THREADS);
        for (int i = 0; i < JOBS; i++) {
            j[i].x = &x;
            j[i].id = i;
            SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, NULL) == 0, "spawn");
        }
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, thread_body, &x);
        SCEN_CHECK(coro_waitgroup_wait_blocking(&x.wg, CORO_FOREVER) == 0, "wg");
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < JOBS; i++)
            join_r(&j[i].co);
        SCEN_CHECK(coro_rwlock_try_write_lock(&x.rw) == 0, "the lock is free at the end");
        SCEN_CHECK(x.a == x.writes && x.b == x.a, "%d workers: %ld of %ld writes",
                   scen_workers[k], x.a, x.writes);
        SCEN_CHECK(coro_rwlock_write_unlock(&x.rw) == 0, "final unlock");
        SCEN_CHECK(coro_rwlock_destroy(&x.rw) == 0 && coro_waitgroup_destroy(&x.wg) == 0,
                   "destroy");
        free(j);
        coro_sched_destroy(s);
    }
    return 0;
}
