/* SPDX-License-Identifier: MIT */
/* Scenario: spawning from plain threads and from jobs, joins, coro_done,
 * yields, random masks and priorities, reschedule, across 1/2/4/8
 * workers.  Checks every job ran exactly once, inside its mask. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include "scenario.h"

struct job {
    coro_t co;
    coro_sched_t *s;
    const coro_cpuset_t *mask;
    int runs, wrong, kids, i;
    struct job *child;
    coro_cpuset_t hop;
};

static int leaf(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    __atomic_add_fetch(&j->runs, 1, __ATOMIC_RELAXED);
    if (j->mask && !coro_cpuset_has(j->mask, sched_getcpu()))
        j->wrong = 1;
    CORO_YIELD(co);
    if (j->mask && !coro_cpuset_has(j->mask, sched_getcpu()))
        j->wrong = 1;
    CORO_END(co);
}

/* spawns its children, awaits them, hops CPUs */
static int parent(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < j->kids; j->i++) {
        coro_spawn_opts_t o = { .priority = j->i % 3 - 1, .affinity = j->mask };
        j->child[j->i].mask = j->mask;
        SCEN_CHECK(coro_spawn(j->s, &j->child[j->i].co, leaf, &o) == 0, "spawn from job");
    }
    for (j->i = 0; j->i < j->kids; j->i++)
        CORO_AWAIT(co, coro_done(&j->child[j->i].co));
    CORO_AWAIT(co, coro_reschedule(&j->hop, CORO_PRIO_HIGH));
    SCEN_CHECK(CORO_RESULT(co) == 0, "reschedule");
    if (!coro_cpuset_has(&j->hop, sched_getcpu()))
        j->wrong = 1;
    CORO_END(co);
}

struct thread_arg {
    coro_sched_t *s;
    struct job *jobs;
    int n;
    coro_cpuset_t *masks;
    int nmasks;
};

static void *remote(void *arg)
{
    struct thread_arg *t = arg;
    for (int i = 0; i < t->n; i++) {
        const coro_cpuset_t *m = (i % 4) ? &t->masks[i % t->nmasks] : NULL;
        coro_spawn_opts_t o = { .affinity = m, .priority = i % 3 - 1 };
        t->jobs[i].mask = m;
        SCEN_CHECK(coro_spawn(t->s, &t->jobs[i].co, leaf, &o) == 0, "remote spawn");
        if (i % 64 == 0)
            SCEN_CHECK(join_r(&t->jobs[i].co) == 0, "join");
    }
    for (int i = 0; i < t->n; i++)
        SCEN_CHECK(join_r(&t->jobs[i].co) == 0, "join");
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 20000, 20000, 500000);
    int parents = SCEN_N(mode, 20, 20, 200), kids = 50;
    cpu_set_t os;
    int cpus[CORO_MAX_CPUS], ncpu = 0;

    sched_getaffinity(0, sizeof os, &os);
    for (int c = 0; c < CPU_SETSIZE && ncpu < CORO_MAX_CPUS; c++)
        if (CPU_ISSET(c, &os))
            cpus[ncpu++] = c;
    for (int k = 0; k < SCEN_NWORKERS; k++) {
        int workers = scen_workers[k];
        int nwc = workers < ncpu ? workers : ncpu;
        coro_sched_t *s = scen_sched(workers);
        coro_cpuset_t masks[4];
        for (int m = 0; m < 4; m++) {
            coro_cpuset_zero(&masks[m]);
            coro_cpuset_add(&masks[m], cpus[m % nwc]);
            if (m & 1)
                coro_cpuset_add(&masks[m], cpus[(m + 1) % nwc]);
        }
        /* two plain threads spawn remotely while jobs spawn locally */
        struct thread_arg ta[2];
        pthread_t th[2];
        for (int t = 0; t < 2; t++) {
            ta[t] = (struct thread_arg){ .s = s, .n = n, .masks = masks, .nmasks = 4 };
            ta[t].jobs = calloc(n, sizeof(struct job));
            pthread_create(&th[t], NULL, remote, &ta[t]);
        }
        struct job *ps = calloc(parents, sizeof *ps);
        for (int p = 0; p < parents; p++) {
            ps[p].s = s;
            ps[p].kids = kids;
            ps[p].mask = (p % 2) ? &masks[p % 4] : NULL;
            ps[p].child = calloc(kids, sizeof(struct job));
            coro_cpuset_zero(&ps[p].hop);
            coro_cpuset_add(&ps[p].hop, cpus[p % nwc]);
            SCEN_CHECK(coro_spawn(s, &ps[p].co, parent, NULL) == 0, "spawn parent");
        }
        for (int p = 0; p < parents; p++)
            SCEN_CHECK(join_r(&ps[p].co) == 0, "join parent");
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
        for (int t = 0; t < 2; t++) {
            for (int i = 0; i < n; i++) {
                SCEN_CHECK(ta[t].jobs[i].runs == 1, "job ran %d times", ta[t].jobs[i].runs);
                SCEN_CHECK(!ta[t].jobs[i].wrong, "job ran outside its mask");
            }
            free(ta[t].jobs);
        }
        for (int p = 0; p < parents; p++) {
            SCEN_CHECK(!ps[p].wrong, "parent ran outside its mask");
            for (int i = 0; i < kids; i++) {
                SCEN_CHECK(ps[p].child[i].runs == 1, "child ran %d times", ps[p].child[i].runs);
                SCEN_CHECK(!ps[p].child[i].wrong, "child ran outside its mask");
            }
            free(ps[p].child);
        }
        free(ps);
        printf("sched_spawn: %d workers ok\n", workers);
    }
    return 0;
}
