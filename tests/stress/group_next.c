/* SPDX-License-Identifier: MIT */
/* coro_group_next under races: members finish on every worker while two
 * jobs and a plain thread collect from one group at once.  Each member
 * must be given exactly once (no wake lost, none given twice), and every
 * collector must end with -ENOENT once the group is empty.  A gate member
 * keeps the group live until every member was spawned. */
#include <pthread.h>
#include <stdint.h>

#include "scenario.h"

struct member { coro_t co; coro_event_t *gate; int steps; intptr_t id; };

static int member_body(coro_t *co)
{
    struct member *m = CORO_SELF(co, struct member);
    CORO_BEGIN(co);
    if (m->gate)
        CORO_AWAIT(co, coro_event_wait(m->gate, CORO_FOREVER));
    while (m->steps-- > 0)
        CORO_YIELD(co);
    CORO_RETURN(co, m->id);
    CORO_END(co);
}

static unsigned char *seen;     /* per member id: how many times given */
static long given;

static void take(intptr_t id)
{
    __atomic_add_fetch(&seen[id], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&given, 1, __ATOMIC_RELAXED);
}

struct collector { coro_t co; coro_group_t *g; coro_t *last; intptr_t r, rc; };

static int collect_body(coro_t *co)
{
    struct collector *c = CORO_SELF(co, struct collector);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_group_next(c->g, &c->last, &c->r, CORO_FOREVER));
        c->rc = CORO_RESULT(co);
        if (c->rc < 0)
            break;
        take(c->r);
    }
    CORO_END(co);
}

struct tcollector { coro_group_t *g; int rc; };

static void *thread_main(void *arg)
{
    struct tcollector *t = arg;
    coro_t *co;
    intptr_t r;
    while ((t->rc = coro_group_next_blocking(t->g, &co, &r, CORO_FOREVER)) == 0)
        take(r);
    return NULL;
}

static void run(int workers, int n)
{
    coro_sched_t *s = scen_sched(workers);
    coro_group_t g;
    coro_event_t gate;
    struct member *m = calloc((size_t)n + 1, sizeof *m);
    struct collector c[2];
    struct tcollector t = { .g = &g };
    pthread_t th;
    coro_spawn_opts_t o = { .group = &g };

    SCEN_CHECK(m != NULL, "calloc");
    seen = calloc((size_t)n + 1, 1);
    SCEN_CHECK(seen != NULL, "calloc");
    given = 0;
    SCEN_CHECK(coro_group_init_collect(&g) == 0, "init");
    coro_event_init(&gate);
    m[n].gate = &gate;              /* the gate member, id n */
    m[n].id = n;
    SCEN_CHECK(coro_spawn(s, &m[n].co, member_body, &o) == 0, "spawn gate");
    for (int i = 0; i < 2; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].g = &g;
        SCEN_CHECK(coro_spawn(s, &c[i].co, collect_body, NULL) == 0, "spawn collector");
    }
    SCEN_CHECK(pthread_create(&th, NULL, thread_main, &t) == 0, "pthread_create");
    for (int i = 0; i < n; i++) {
        m[i].steps = i % 3;
        m[i].id = i;
        SCEN_CHECK(coro_spawn(s, &m[i].co, member_body, &o) == 0, "spawn %d", i);
    }
    coro_event_set(&gate);
    for (int i = 0; i < 2; i++) {
        join_r(&c[i].co);
        SCEN_CHECK(c[i].rc == -ENOENT, "collector %d ended with %ld", i, (long)c[i].rc);
    }
    pthread_join(th, NULL);
    SCEN_CHECK(t.rc == -ENOENT, "the thread ended with %d", t.rc);
    SCEN_CHECK(given == n + 1, "%d workers: given %ld of %d", workers, given, n + 1);
    for (int i = 0; i <= n; i++)
        SCEN_CHECK(seen[i] == 1, "%d workers: member %d given %d times", workers, i, seen[i]);
    SCEN_CHECK(coro_group_destroy(&g) == 0, "destroy");
    coro_sched_destroy(s);
    free(seen);
    free(m);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 10, 200);
    int n = SCEN_N(mode, 200, 500, 2000);

    for (int r = 0; r < rounds; r++)
        for (int w = 0; w < SCEN_NWORKERS; w++)
            run(scen_workers[w], n);
    printf("group_next: %d rounds x %d members, each given once\n", rounds, n);
    return 0;
}
