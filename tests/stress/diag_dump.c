/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: coro_sched_dump from a plain thread and from a job
 * while the workers run jobs that wait on every kind of thing (events,
 * sleeps with timers, coro_done, blocking calls, yields) and finish, with
 * the diagnostics on (.histograms, .stall_ns): the dump walks the wait
 * structures under their locks while jobs enter and leave them, and must
 * neither crash nor race (TSan) nor lose a wake-up.  The histograms must
 * count every step.  Plain program (Criterion cannot run under TSan). */
#define _GNU_SOURCE
#include "scenario.h"
#include <pthread.h>
#include <unistd.h>

struct pair {
    coro_t co;
    coro_event_t *ev;
    coro_t *peer;
    int kind, i, rounds;
};

static intptr_t nap(void *arg)
{
    (void)arg;
    return 7;
}

static int pair_body(coro_t *co)
{
    struct pair *p = CORO_SELF(co, struct pair);
    CORO_BEGIN(co);
    for (p->i = 0; p->i < p->rounds; p->i++) {
        switch (p->kind) {
        case 0:
            CORO_AWAIT(co, coro_event_wait(p->ev, 1000000));
            break;
        case 1:
            coro_event_set(p->ev);
            CORO_AWAIT(co, coro_sleep(20000));
            break;
        case 2:
            CORO_AWAIT(co, coro_blocking(nap, NULL));
            if (CORO_RESULT(co) != 7)
                CORO_RETURN(co, -1);
            break;
        default:
            CORO_YIELD(co);
            break;
        }
    }
    if (p->peer)
        CORO_AWAIT(co, coro_done(p->peer));
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct dumper {
    coro_t co;
    FILE *f;
    int *stop, i;
};

static int dumper_body(coro_t *co)
{
    struct dumper *d = CORO_SELF(co, struct dumper);
    CORO_BEGIN(co);
    while (!__atomic_load_n(d->stop, __ATOMIC_ACQUIRE)) {
        if (coro_sched_dump(coro_sched_current(), d->f) < 0)
            CORO_RETURN(co, -1);
        CORO_AWAIT(co, coro_sleep(200000));
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct thr {
    coro_sched_t *s;
    FILE *f;
    int *stop;
    long dumps;
};

static void *dump_thread(void *arg)
{
    struct thr *t = arg;
    while (!__atomic_load_n(t->stop, __ATOMIC_ACQUIRE)) {
        SCEN_CHECK(coro_sched_dump(t->s, t->f) >= 0, "dump failed");
        t->dumps++;
        /* a pace, not an order: a thread dumping in a tight loop takes
         * the timer lock so often that the unfair mutex starves the I/O
         * thread (docs/diagnostics.md) */
        usleep(50);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int njobs = SCEN_N(mode, 64, 256, 1024), rounds = SCEN_N(mode, 20, 50, 200);

    for (int wi = 0; wi < SCEN_NWORKERS; wi++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_sched_t *s;
        c.workers = scen_workers[wi];
        c.histograms = true;
        c.stall_ns = 10 * 1000000000LL;     /* on, never reached */
        SCEN_CHECK(coro_sched_create(&s, &c) == 0, "create");
        FILE *f = fopen("/dev/null", "w");
        SCEN_CHECK(f, "/dev/null");
        int stop = 0;
        struct thr t = { s, f, &stop, 0 };
        pthread_t th;
        SCEN_CHECK(pthread_create(&th, NULL, dump_thread, &t) == 0, "thread");
        struct dumper d = { .f = f, .stop = &stop };
        SCEN_CHECK(coro_spawn(s, &d.co, dumper_body, NULL) == 0, "spawn dumper");
        coro_event_t *evs = calloc((size_t)njobs / 2 + 1, sizeof *evs);
        struct pair *p = calloc((size_t)njobs, sizeof *p);
        for (int i = 0; i < njobs; i++) {
            coro_event_init(&evs[i / 2]);
            p[i].ev = &evs[i / 2];
            p[i].kind = i % 4;
            p[i].rounds = rounds;
            p[i].peer = i % 8 == 7 ? &p[i - 1].co : NULL;
        }
        for (int i = 0; i < njobs; i++) {
            coro_spawn_opts_t o = { .name = "pair", .priority = i % 3 - 1 };
            SCEN_CHECK(coro_spawn(s, &p[i].co, pair_body, &o) == 0, "spawn %d", i);
        }
        for (int i = 0; i < njobs; i++)
            SCEN_CHECK(join_r(&p[i].co) == 0, "job %d failed", i);
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
        SCEN_CHECK(join_r(&d.co) == 0, "dumper failed");
        SCEN_CHECK(coro_sched_shutdown(s, CORO_DRAIN) == 0, "shutdown");
        coro_sched_stats_t st;
        coro_sched_stats(s, &st);
        uint64_t steps = 0;
        for (int b = 0; b < CORO_HIST_BUCKETS; b++)
            steps += st.hist_step[b];
        SCEN_CHECK(steps == st.jobs_run, "%d workers: %llu steps in the histogram, %llu run",
                   c.workers, (unsigned long long)steps, (unsigned long long)st.jobs_run);
        printf("%d workers: %llu steps, %ld dumps from a thread\n", c.workers,
               (unsigned long long)steps, t.dumps);
        coro_sched_destroy(s);
        fclose(f);
        free(p);
        free(evs);
    }
    return 0;
}
