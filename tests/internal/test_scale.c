/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Machine size: a scheduler made as a machine of CORO_MAX_CPUS CPUs would
 * make it (CORO_WORKERS_AUTO, one worker per usable CPU), here on a few
 * real CPUs through the test hook coro__test_ncpus.  Every worker index
 * is a bit of the worker sets (the idle set, the classes' sets), so a set
 * too small for them is written out of bounds at create and at each wake:
 * run under `make check-asan` too. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdlib.h>

#include "rt/rt.h"
#include "white_box.h"

struct leaf {
    coro_t co;
    int *count;
};

static int leaf_fn(coro_t *co)
{
    struct leaf *l = CORO_SELF(co, struct leaf);
    CORO_BEGIN(co);
    CORO_YIELD(co);
    __atomic_add_fetch(l->count, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

/* a job that fans out n leaves and awaits them all */
struct fan {
    coro_t co;
    coro_sched_t *s;
    int n, i, count;
    struct leaf *leaves;
};

static int fan_fn(coro_t *co)
{
    struct fan *f = CORO_SELF(co, struct fan);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        f->leaves[f->i].count = &f->count;
        if (coro_spawn(f->s, &f->leaves[f->i].co, leaf_fn, NULL) != 0)
            CORO_RETURN(co, -1);
    }
    for (f->i = 0; f->i < f->n; f->i++)
        CORO_AWAIT(co, coro_done(&f->leaves[f->i].co));
    CORO_RETURN(co, f->count);
    CORO_END(co);
}

static void fake_cpus(int n)
{
    __atomic_store_n(&coro__test_ncpus, n, __ATOMIC_RELAXED);
}

Test(scale, auto_on_a_machine_of_max_cpus_makes_one_worker_per_cpu_runs_and_destroys_clean,
     .timeout = 240)
{
    fake_cpus(CORO_MAX_CPUS);
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = CORO_WORKERS_AUTO;
    c.pin = false;
    coro_sched_t *s = NULL;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    fake_cpus(0);
    coro_sched_stats_t st;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    cr_assert_eq(st.workers, CORO_MAX_CPUS);

    /* from a plain thread: jobs on any worker, each waking parked ones */
    enum { N = 4096 };
    struct leaf *l = calloc(N, sizeof *l);
    int count = 0;
    cr_assert_not_null(l);
    for (int i = 0; i < N; i++) {
        l[i].count = &count;
        cr_assert_eq(coro_spawn(s, &l[i].co, leaf_fn, NULL), 0);
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(join_r(&l[i].co), 0);
    cr_assert_eq(__atomic_load_n(&count, __ATOMIC_RELAXED), N);

    /* jobs whose masks name the last workers (bits past the first 256)
     * and one CPU each, spawned from a job too */
    coro_cpuset_t hi;
    coro_cpuset_zero(&hi);
    for (int cpu = CORO_MAX_CPUS - 70; cpu < CORO_MAX_CPUS; cpu++)
        coro_cpuset_add(&hi, cpu);
    coro_spawn_opts_t o = { .affinity = &hi };
    count = 0;
    for (int i = 0; i < 256; i++) {
        cr_assert_eq(coro_spawn(s, &l[i].co, leaf_fn, &o), 0);
    }
    coro_cpuset_t one;
    for (int i = 256; i < 512; i++) {
        coro_cpuset_zero(&one);
        coro_cpuset_add(&one, CORO_MAX_CPUS - 1 - (i % 300));
        coro_spawn_opts_t o1 = { .affinity = &one };
        cr_assert_eq(coro_spawn(s, &l[i].co, leaf_fn, &o1), 0);
    }
    for (int i = 0; i < 512; i++)
        cr_assert_eq(join_r(&l[i].co), 0);
    cr_assert_eq(count, 512);

    struct fan f = { .s = s, .n = 2048, .leaves = l };
    cr_assert_eq(block_on_r(s, &f.co, fan_fn, NULL), 2048);

    cr_assert_eq(coro_sched_destroy(s), 0);
    free(l);
}

Test(scale, more_workers_than_cpus_up_to_the_maximum_are_made_and_more_are_refused,
     .timeout = 240)
{
    coro_sched_t *s = mk(CORO_MAX_WORKERS);
    struct leaf l = { 0 };
    int count = 0;
    l.count = &count;
    cr_assert_eq(block_on_r(s, &l.co, leaf_fn, NULL), 0);
    cr_assert_eq(count, 1);
    cr_assert_eq(coro_sched_destroy(s), 0);

    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = CORO_MAX_WORKERS + 1;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
}
