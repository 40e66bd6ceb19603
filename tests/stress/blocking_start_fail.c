/* SPDX-License-Identifier: MIT */
/* Scenario: bursts of coro_blocking calls while pool threads fail to start
 * at random (coro__blocking_spawn_hook): every call ends, with fn's result
 * (fn run once) or -EAGAIN (fn never run) - none waits in the queue with
 * no thread to take it - and the pool is whole afterwards.
 * tests/internal/test_blocking_fail.c holds the ordered cases. */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>
#include "rt/rt.h"      /* white-box: the spawn hook */
#include "scenario.h"

static unsigned fail_pct;       /* atomic: percent of starts that fail */
static unsigned rng = 12345;    /* atomic */

static int flaky_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    unsigned x = __atomic_add_fetch(&rng, 0x9e3779b9u, __ATOMIC_RELAXED);
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    if (x % 100 < __atomic_load_n(&fail_pct, __ATOMIC_RELAXED))
        return EAGAIN;
    return pthread_create(t, a, fn, arg);
}

struct call { coro_t co; intptr_t r; int ran; };

static intptr_t work(void *arg)
{
    struct call *c = arg;
    __atomic_add_fetch(&c->ran, 1, __ATOMIC_RELAXED);
    usleep(50);
    return 5;
}

static int call_body(coro_t *co)
{
    struct call *c = CORO_SELF(co, struct call);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(work, c));
    c->r = CORO_RESULT(co);
    CORO_END(co);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 20, 10, 500);
    static const unsigned pcts[] = { 100, 90, 50, 10 };
    enum { N = 40 };

    coro__blocking_spawn_hook = flaky_create;
    for (int k = 0; k < SCEN_NWORKERS; k++)
        for (int r = 0; r < rounds; r++) {
            coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
            coro_sched_t *s;
            struct call *calls = calloc(N, sizeof *calls);
            c.workers = scen_workers[k];
            c.pin = false;
            c.blocking_threads = 1 + (unsigned)r % 4;
            SCEN_CHECK(coro_sched_create(&s, &c) == 0, "create");
            __atomic_store_n(&fail_pct, pcts[r % 4], __ATOMIC_RELAXED);
            for (int i = 0; i < N; i++)
                SCEN_CHECK(coro_spawn(s, &calls[i].co, call_body, NULL) == 0, "spawn");
            for (int i = 0; i < N; i++) {
                intptr_t res;
                int rc = coro_join_timeout(&calls[i].co, &res, 20 * 1000000000LL);
                SCEN_CHECK(rc == 0, "workers %d round %d: call %d never ended", scen_workers[k], r,
                           i);
                SCEN_CHECK((calls[i].r == 5 && calls[i].ran == 1) ||
                           (calls[i].r == -EAGAIN && calls[i].ran == 0),
                           "call %d: result %ld, fn ran %d times", i, (long)calls[i].r,
                           calls[i].ran);
            }
            /* whole again: with starts working, a call runs */
            __atomic_store_n(&fail_pct, 0, __ATOMIC_RELAXED);
            struct call last = { .r = 0 };
            SCEN_CHECK(block_on_r(s, &last.co, call_body, NULL) == 0 && last.r == 5,
                       "after the failures: %ld", (long)last.r);
            SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
            free(calls);
        }
    printf("blocking_start_fail: ok\n");
    return 0;
}
