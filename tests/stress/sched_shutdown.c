/* SPDX-License-Identifier: MIT */
/* Scenario: shutdown (DRAIN and CANCEL) while plain threads spawn and jobs
 * wait on each other; no lost wake-up on submit-to-parked-worker. */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "scenario.h"

struct job {
    coro_t co;
    coro_t *gate;
    long *ran;
    intptr_t got;
};

static int count_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    CORO_YIELD(co);
    __atomic_add_fetch(j->ran, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

static int wait_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done(j->gate));
    j->got = CORO_RESULT(co);
    __atomic_add_fetch(j->ran, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

struct spawner {
    coro_sched_t *s;
    struct job *jobs;
    int n, ok, refused;
    long *ran;
};

static void *spawn_loop(void *arg)
{
    struct spawner *t = arg;
    for (int i = 0; i < t->n; i++) {
        t->jobs[i].ran = t->ran;
        int rc = coro_spawn(t->s, &t->jobs[i].co, count_body, NULL);
        SCEN_CHECK(rc == 0 || rc == -ESHUTDOWN, "spawn: %s", coro_strerror(rc));
        if (rc == 0)
            t->ok++;
        else if (++t->refused > 50)
            break;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 20000, 20000, 200000);
    int rounds = SCEN_N(mode, 2000, 5000, 100000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        int workers = scen_workers[k];
        for (int mode_i = 0; mode_i < 2; mode_i++) {
            coro_sched_t *s = scen_sched(workers), *idle;
            coro_sched_config_t c = { .workers = 0 };
            SCEN_CHECK(coro_sched_create(&idle, &c) == 0, "create idle");
            long ran = 0, gate_ran = 0;
            struct job gate = { .ran = &gate_ran };
            SCEN_CHECK(coro_spawn(idle, &gate.co, count_body, NULL) == 0, "gate");
            struct job *waiters = calloc(1000, sizeof *waiters);
            for (int i = 0; i < 1000; i++) {
                waiters[i].gate = &gate.co;
                waiters[i].ran = &ran;
                SCEN_CHECK(coro_spawn(s, &waiters[i].co, wait_body, NULL) == 0, "spawn waiter");
            }
            struct spawner sp[4];
            pthread_t th[4];
            for (int t = 0; t < 4; t++) {
                sp[t] = (struct spawner){ .s = s, .n = n, .ran = &ran };
                sp[t].jobs = calloc(n, sizeof(struct job));
                pthread_create(&th[t], NULL, spawn_loop, &sp[t]);
            }
            usleep(2000);
            int how = mode_i ? CORO_CANCEL : CORO_DRAIN;
            if (how == CORO_DRAIN) {
                /* drain needs the gate to finish: drive it from here */
                SCEN_CHECK(coro_sched_run(idle) >= 0, "run idle");
            }
            SCEN_CHECK(coro_sched_shutdown(s, how) == 0, "shutdown");
            long ok = 0;
            for (int t = 0; t < 4; t++) {
                pthread_join(th[t], NULL);
                ok += sp[t].ok;
                free(sp[t].jobs);
            }
            SCEN_CHECK(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == ok + 1000,
                       "ran %ld, accepted %ld + 1000 waiters", ran, ok);
            for (int i = 0; i < 1000; i++)
                SCEN_CHECK(how == CORO_DRAIN || waiters[i].got == -ECANCELED, "waiter got %ld",
                           (long)waiters[i].got);
            SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
            SCEN_CHECK(coro_sched_destroy(idle) == 0, "destroy idle");
            free(waiters);
        }
        /* submit to a parked worker, many times */
        coro_sched_t *s = scen_sched(workers);
        long ran = 0;
        for (int r = 0; r < rounds; r++) {
            struct job j = { .ran = &ran };
            SCEN_CHECK(coro_block_on(s, &j.co, count_body, NULL) == 0, "block_on");
            if (r % 500 == 0)
                usleep(1000);
        }
        SCEN_CHECK(ran == rounds, "ran %ld of %d", ran, rounds);
        coro_sched_destroy(s);
        printf("sched_shutdown: %d workers ok\n", workers);
    }
    return 0;
}
