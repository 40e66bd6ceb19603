/* SPDX-License-Identifier: MIT */
/* The tracer under concurrency: workers record steps (in runs that share
 * a clock reading), steals, parks and wakes, the I/O thread its polls,
 * SPAWNERS plain threads spawn - the first 16 get rings of their own,
 * registered while the trace is being read, the others share the locked
 * ring (CORO__TRACE_THREAD_RINGS) - while another plain thread writes the
 * trace again and again (the seqlock read side of lib/sched/trace.c).
 * TSan checks that no access races; the check here: every write succeeds
 * and every job runs. */
#include <pthread.h>
#include <unistd.h>

#include "scenario.h"

struct job {
    coro_t co;
    int i;
};

static int body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < 3; j->i++) {
        if (j->i == 1)
            CORO_AWAIT(co, coro_sleep(10000));
        else
            CORO_YIELD(co);
    }
    CORO_END(co);
}

struct spawner {
    coro_sched_t *s;
    struct job *jobs;
    int n;
};

static void *spawn_thread(void *arg)
{
    struct spawner *p = arg;
    for (int i = 0; i < p->n; i++) {
        coro_spawn_opts_t o = { .priority = i % 3 - 1 };
        SCEN_CHECK(coro_spawn(p->s, &p->jobs[i].co, body, &o) == 0, "spawn %d", i);
    }
    for (int i = 0; i < p->n; i++)
        join_r(&p->jobs[i].co);
    return NULL;
}

static uint32_t stop;

static void *write_thread(void *arg)
{
    coro_sched_t *s = arg;
    char path[64];
    int n = 0;

    snprintf(path, sizeof path, "/tmp/corokit-stress-trace-%d.json", (int)getpid());
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || n == 0) {
        int rc = coro_sched_trace_write(s, path);
        SCEN_CHECK(rc == 0, "trace_write: %s", coro_strerror(rc));
        n++;
    }
    unlink(path);
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    enum { SPAWNERS = 18 };
    int n = SCEN_N(m, 500, 2000, 50000) / 8;

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s;
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        c.workers = scen_workers[k];
        c.trace_events = 256;           /* small: the rings wrap while read */
        SCEN_CHECK(coro_sched_create(&s, &c) == 0, "create");
        struct spawner sp[SPAWNERS];
        pthread_t th[SPAWNERS], wt;
        __atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
        pthread_create(&wt, NULL, write_thread, s);
        for (int t = 0; t < SPAWNERS; t++) {
            sp[t] = (struct spawner){ s, calloc((size_t)n, sizeof(struct job)), n };
            pthread_create(&th[t], NULL, spawn_thread, &sp[t]);
        }
        for (int t = 0; t < SPAWNERS; t++) {
            pthread_join(th[t], NULL);
            for (int i = 0; i < n; i++)
                SCEN_CHECK(sp[t].jobs[i].i == 3, "job %d ran to its end", i);
            free(sp[t].jobs);
        }
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        pthread_join(wt, NULL);
        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    }
    printf("trace_write: ok\n");
    return 0;
}
