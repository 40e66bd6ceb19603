/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The summary of the parked workers (sched/worker.c IDLE SUMMARY): a
 * 16-bit count per word of the idle set, which a notify reads before the
 * words.  With every worker parked each count equals its word's bits, and
 * a job that only the last worker may run - its word counted in the
 * second summary word - wakes that worker.  300 workers (the hook
 * coro__test_ncpus: a machine of 300 CPUs), so the set has 5 words and
 * the summary 2. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdlib.h>
#include <unistd.h>

#include "rt/rt.h"
#include "white_box.h"

#define NW 300

/* bounded (20 s): until every worker's idle bit is set */
static void wait_all_parked(coro_sched_t *s)
{
    int64_t end = coro_now() + 20000000000LL;
    for (;;) {
        int n = 0;
        for (int k = 0; k < CORO__WMASK_USED(s); k++)
            n += __builtin_popcountll(__atomic_load_n(&s->idle[k], __ATOMIC_ACQUIRE));
        if (n == s->nworkers)
            return;
        cr_assert_lt(coro_now(), end, "only %d of %d workers parked", n, s->nworkers);
        usleep(1000);
    }
}

static void check_sums(coro_sched_t *s)
{
    for (int k = 0; k < CORO__WMASK_USED(s); k++) {
        uint64_t sum = __atomic_load_n(&s->idle_sum[k / 4], __ATOMIC_ACQUIRE);
        unsigned field = (unsigned)(sum >> (16 * (k % 4))) & 0xffff;
        int bits = __builtin_popcountll(__atomic_load_n(&s->idle[k], __ATOMIC_ACQUIRE));
        cr_assert_eq(field, (unsigned)bits, "word %d: counted %u, %d bits", k, field, bits);
    }
    for (int k = CORO__WMASK_USED(s); k < CORO__WMASK_WORDS; k++)
        cr_assert_eq((s->idle_sum[k / 4] >> (16 * (k % 4))) & 0xffff, 0u, "word %d", k);
}

struct job {
    coro_t co;
    int *where;
};

static int where_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    *j->where = coro__tls_worker ? coro__tls_worker->idx : -1;
    CORO_END(co);
}

Test(idle_sum, counts_match_the_parked_workers_and_wake_the_last_word, .timeout = 60)
{
    __atomic_store_n(&coro__test_ncpus, NW, __ATOMIC_RELAXED);
    coro_sched_t *s = mk(CORO_WORKERS_AUTO);
    __atomic_store_n(&coro__test_ncpus, 0, __ATOMIC_RELAXED);
    cr_assert_eq(coro_sched_workers(s), NW);
    wait_all_parked(s);
    check_sums(s);

    coro_cpuset_t last;
    coro_cpuset_zero(&last);
    coro_cpuset_add(&last, NW - 1);
    coro_spawn_opts_t o = { .affinity = &last, .priority = CORO_PRIO_NORMAL };
    for (int round = 0; round < 3; round++) {
        int where = -1;
        struct job j = { .where = &where };
        cr_assert_eq(coro_spawn(s, &j.co, where_body, &o), 0);
        cr_assert_eq(join_r(&j.co), 0);
        cr_assert_eq(where, NW - 1);
        wait_all_parked(s);
        check_sums(s);
    }
    /* a burst any worker may run: many woken, all parked again */
    struct job *b = calloc(200, sizeof *b);
    int sink[200];
    for (int i = 0; i < 200; i++) {
        b[i].where = &sink[i];
        cr_assert_eq(coro_spawn(s, &b[i].co, where_body, NULL), 0);
    }
    for (int i = 0; i < 200; i++)
        cr_assert_eq(join_r(&b[i].co), 0);
    wait_all_parked(s);
    check_sums(s);
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(b);
}
