/* SPDX-License-Identifier: MIT */
/* priority: HIGH jobs overtake queued NORMAL and LOW ones, and a bound
 * keeps the lower levels from starving.  One worker, kept busy while the
 * jobs queue up, then released. */
#include <corokit.h>
#include <stdio.h>
#include <unistd.h>

static long order;                 /* the n-th job to run gets n */

struct job {
    coro_t co;
    long ran_as;
};

static int record(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    j->ran_as = __atomic_fetch_add(&order, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

struct gate {
    coro_t co;
    volatile int open;
};

static int hold(coro_t *co)
{
    struct gate *g = CORO_SELF(co, struct gate);
    CORO_BEGIN(co);
    while (!g->open)
        usleep(100);               /* a job that never awaits keeps its worker */
    CORO_END(co);
}

int main(void)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct gate g = { 0 };
    struct job low[3] = { 0 }, normal[3] = { 0 }, high[3] = { 0 };
    static const char *names[] = { "LOW", "NORMAL", "HIGH" };
    struct job *by[] = { low, normal, high };

    cfg.workers = 1;
    if (coro_sched_create(&s, &cfg) < 0)
        return 1;
    coro_spawn(s, &g.co, hold, NULL);
    usleep(10000);
    /* [priority] */
    for (int i = 0; i < 3; i++) {
        coro_spawn_opts_t lo = { .priority = CORO_PRIO_LOW };
        coro_spawn_opts_t no = { .priority = CORO_PRIO_NORMAL };
        coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };
        coro_spawn(s, &low[i].co, record, &lo);
        coro_spawn(s, &normal[i].co, record, &no);
        coro_spawn(s, &high[i].co, record, &hi);
    }
    /* [priority] */
    g.open = 1;
    coro_sched_shutdown(s, CORO_DRAIN);
    int ok = 1;
    for (int p = 2; p >= 0; p--)
        for (int i = 0; i < 3; i++) {
            printf("%-6s job %d ran as number %ld\n", names[p], i, by[p][i].ran_as);
            /* spawned interleaved, they run HIGH first, then NORMAL, then LOW */
            ok &= by[p][i].ran_as == (2 - p) * 3 + i;
        }
    coro_sched_destroy(s);
    return ok ? 0 : 1;
}
