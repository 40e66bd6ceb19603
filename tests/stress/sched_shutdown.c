/* SPDX-License-Identifier: MIT */
/* Scenario: shutdown (DRAIN and CANCEL) while plain threads and jobs spawn
 * and jobs wait on each other; no lost wake-up on submit-to-parked-worker.
 * The jobs' spawns take their workers' spare units of the live count
 * (lib/rt/spawn.c SPARE UNITS): each accepted job must still run before
 * shutdown returns, and none may be accepted after a refusal. */
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

/* a job that spawns fire-and-forget jobs on pool frames until refused */
struct forker {
    coro_t co;
    coro_sched_t *s;
    long *ran;
    int i, n, ok, refused, after;
};

static int fork_body(coro_t *co)
{
    struct forker *f = CORO_SELF(co, struct forker);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        struct job *j = coro_frame_alloc(f->s, sizeof *j);
        SCEN_CHECK(j, "coro_frame_alloc");
        j->ran = f->ran;
        int rc = coro_spawn(f->s, &j->co, count_body, NULL);
        SCEN_CHECK(rc == 0 || rc == -ESHUTDOWN, "spawn from a job: %s", coro_strerror(rc));
        if (rc == 0) {
            f->ok++;
            if (f->refused)
                f->after++;     /* accepted after a refusal: must not be */
        } else {
            coro_frame_free(j);
            if (++f->refused > 50)
                break;
        }
        if (f->i % 16 == 15)
            CORO_YIELD(co);
    }
    CORO_END(co);
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
            struct forker fk[4];
            for (int t = 0; t < 4; t++) {
                fk[t] = (struct forker){ .s = s, .n = n, .ran = &ran };
                SCEN_CHECK(coro_spawn(s, &fk[t].co, fork_body, NULL) == 0, "spawn forker");
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
            long fok = 0;
            for (int t = 0; t < 4; t++) {
                SCEN_CHECK(fk[t].after == 0, "forker %d: %d spawns accepted after a refusal", t,
                           fk[t].after);
                fok += fk[t].ok;
            }
            SCEN_CHECK(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == ok + fok + 1000,
                       "ran %ld, accepted %ld from threads + %ld from jobs + 1000 waiters", ran,
                       ok, fok);
            coro_sched_stats_t st;
            coro_sched_stats(s, &st);
            SCEN_CHECK(st.live_jobs == 0, "live_jobs %lld after shutdown", (long long)st.live_jobs);
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
            SCEN_CHECK(block_on_r(s, &j.co, count_body, NULL) == 0, "block_on");
            if (r % 500 == 0)
                usleep(1000);
        }
        SCEN_CHECK(ran == rounds, "ran %ld of %d", ran, rounds);
        coro_sched_destroy(s);
        printf("sched_shutdown: %d workers ok\n", workers);
    }
    return 0;
}
