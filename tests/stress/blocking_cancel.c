/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: coro_blocking calls racing shutdown(CORO_CANCEL).
 * Many jobs each make a few blocking calls on a small pool while the main
 * thread cancels the scheduler at a random moment: every call either ran
 * (its job got fn's result, and fn ran exactly once for it) or ended
 * -ECANCELED without fn running; no job is lost, nothing hangs. */
#include <stdint.h>
#include <unistd.h>

#include "scenario.h"

#define CALLS 4

struct bj {
    coro_t co;
    int i, ran, got, cancelled;
};

static intptr_t touch(void *arg)
{
    struct bj *j = arg;
    __atomic_add_fetch(&j->ran, 1, __ATOMIC_RELAXED);
    if (j->ran % 3 == 0)
        usleep(50);
    return 1;
}

static int body(coro_t *co)
{
    struct bj *j = CORO_SELF(co, struct bj);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < CALLS; j->i++) {
        CORO_AWAIT(co, coro_blocking(touch, j));
        if (CORO_RESULT(co) == 1)
            j->got++;
        else if (CORO_RESULT(co) == -ECANCELED)
            j->cancelled++;
    }
    CORO_END(co);
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    int rounds = SCEN_N(m, 3, 20, 300);
    enum { N = 200 };
    static struct bj j[N];

    srand(42);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < SCEN_NWORKERS; k++) {
            coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
            coro_sched_t *s;
            c.workers = scen_workers[k];
            c.blocking_threads = 4;
            SCEN_CHECK(coro_sched_create(&s, &c) == 0, "create");
            memset(j, 0, sizeof j);
            for (int i = 0; i < N; i++)
                SCEN_CHECK(coro_spawn(s, &j[i].co, body, NULL) == 0, "spawn");
            usleep((useconds_t)(rand() % 2000));
            SCEN_CHECK(coro_sched_shutdown(s, CORO_CANCEL) == 0, "shutdown");
            for (int i = 0; i < N; i++) {
                SCEN_CHECK(j[i].got + j[i].cancelled == CALLS, "job %d: %d + %d", i, j[i].got,
                           j[i].cancelled);
                SCEN_CHECK(j[i].ran == j[i].got, "job %d: fn ran %d times for %d results", i,
                           j[i].ran, j[i].got);
            }
            coro_sched_destroy(s);
        }
    }
    printf("blocking_cancel: %d rounds ok\n", rounds);
    return 0;
}
