/* SPDX-License-Identifier: MIT */
/* Scenario: two threads shut one scheduler down at once, every pair of
 * CORO_DRAIN, CORO_CANCEL, coro_sched_shutdown_timeout (0 to 2 ms) and
 * coro_sched_destroy, started without any ordering between them, while
 * jobs wait on an event, sleep and yield.  Both calls return (a timed call
 * 0 or -ETIMEDOUT, the others 0), every job finishes, and destroy frees
 * the scheduler only after the other call has left it (ASan, TSan).
 * tests/internal/test_shutdown_pairs.c holds the ordered cases. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include "rt/rt.h"      /* white-box: s->shut_users, both calls inside */
#include "scenario.h"

enum kind { DRAIN, CANCEL, TIMEOUT, DESTROY };

struct call {
    pthread_t t;
    coro_sched_t *s;
    enum kind kind;
    int64_t timeout;
    int rc;
};

static void *call_main(void *arg)
{
    struct call *c = arg;
    switch (c->kind) {
    case DRAIN:   c->rc = coro_sched_shutdown(c->s, CORO_DRAIN); break;
    case CANCEL:  c->rc = coro_sched_shutdown(c->s, CORO_CANCEL); break;
    case TIMEOUT: c->rc = coro_sched_shutdown_timeout(c->s, c->timeout); break;
    case DESTROY: c->rc = coro_sched_destroy(c->s); break;
    }
    return NULL;
}

struct job { coro_t co; coro_event_t *ev; int *go; int kind, i; intptr_t r; };

static int job_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    if (j->kind == 0) {
        CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
        j->r = CORO_RESULT(co);
    } else if (j->kind == 1) {
        CORO_AWAIT(co, coro_sleep(500000));
        j->r = CORO_RESULT(co);
    } else if (j->kind == 2) {
        for (j->i = 0; j->i < 50; j->i++)
            CORO_YIELD(co);     /* a yield is never cancelled */
        j->r = 0;
    } else {
        /* the setter: the event is set from a job of s, which is live
         * while it sets it, so no shutdown ends (nor destroy frees s)
         * under a wake still in progress - a plain thread's wake may
         * touch s after the woken job could have run */
        while (!__atomic_load_n(j->go, __ATOMIC_ACQUIRE)) {
            CORO_AWAIT(co, coro_sleep(100000));
            if (CORO_RESULT(co) == -ECANCELED)
                break;
        }
        if (__atomic_load_n(j->go, __ATOMIC_ACQUIRE))
            coro_event_set(j->ev);
        j->r = 0;
    }
    CORO_END(co);
}

static uint32_t users(coro_sched_t *s)
{
    pthread_mutex_lock(&s->shut_lock);
    uint32_t n = s->shut_users;
    pthread_mutex_unlock(&s->shut_lock);
    return n;
}

enum { NJOBS = 12 };

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 20, 20, 1000);
    static const int workers[] = { 0, 1, 2, 4 };
    unsigned seed = 1;

    for (int r = 0; r < rounds; r++)
        for (int wi = 0; wi < 4; wi++)
            for (int a = DRAIN; a <= DESTROY; a++)
                for (int b = DRAIN; b <= DESTROY; b++) {
                    if (a == DESTROY && b == DESTROY)
                        continue;       /* destroy is called once */
                    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
                    coro_sched_t *s;
                    coro_event_t ev;
                    struct job *jobs = calloc(NJOBS, sizeof *jobs);
                    c.workers = workers[wi];
                    c.pin = false;
                    SCEN_CHECK(coro_sched_create(&s, &c) == 0, "create");
                    coro_event_init(&ev);
                    int go = 0;
                    for (int i = 0; i < NJOBS; i++) {
                        jobs[i].ev = &ev;
                        jobs[i].go = &go;
                        jobs[i].kind = i == NJOBS - 1 ? 3 : i % 3;
                        jobs[i].r = 1;
                        SCEN_CHECK(coro_spawn(s, &jobs[i].co, job_body, NULL) == 0, "spawn");
                    }
                    struct call x = { .s = s, .kind = a }, y = { .s = s, .kind = b };
                    x.timeout = (int64_t)(rand_r(&seed) % 2000000);
                    y.timeout = (int64_t)(rand_r(&seed) % 2000000);
                    pthread_create(&x.t, NULL, call_main, &x);
                    pthread_create(&y.t, NULL, call_main, &y);
                    bool cancels = a == CANCEL || a == TIMEOUT || b == CANCEL || b == TIMEOUT;
                    if (!cancels) {
                        /* only drains: the event ends the waits; with a
                         * destroy, only once both are inside (after that
                         * destroy may free s before the other call starts) */
                        if (a == DESTROY || b == DESTROY)
                            while (users(s) < 2)
                                sched_yield();
                        __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
                    }
                    pthread_join(x.t, NULL);
                    pthread_join(y.t, NULL);
                    SCEN_CHECK(x.rc == 0 || (a == TIMEOUT && x.rc == -ETIMEDOUT),
                               "pair %d,%d workers %d: first %d", a, b, workers[wi], x.rc);
                    SCEN_CHECK(y.rc == 0 || (b == TIMEOUT && y.rc == -ETIMEDOUT),
                               "pair %d,%d workers %d: second %d", a, b, workers[wi], y.rc);
                    for (int i = 0; i < NJOBS; i++)
                        SCEN_CHECK(jobs[i].r == 0 || (cancels && jobs[i].r == -ECANCELED),
                                   "pair %d,%d: job %d kind %d: %ld", a, b, i, jobs[i].kind,
                                   (long)jobs[i].r);
                    if (a != DESTROY && b != DESTROY)
                        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
                    coro_event_destroy(&ev);
                    free(jobs);
                }
    printf("shutdown_pairs: %d rounds of 15 pairs x 4 worker counts ok\n", rounds);
    return 0;
}
