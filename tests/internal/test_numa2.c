/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* FIRST TOUCH beyond the worker struct (rt/runtime.c): each worker's
 * served list (sched/affinity.c SERVED) and trace ring (sched/trace.c) are
 * allocated by the worker's own thread, the one that made its struct, so
 * that on a NUMA machine they sit on its node.  A recording allocator
 * says which thread made each block; the blocks are found by the
 * addresses the worker keeps. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "rt/rt.h"
#include "sched/trace.h"
#include "white_box.h"

enum { MAXREC = 4096 };

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec {
    uintptr_t p;
    size_t n;
    pthread_t by;
} recs[MAXREC];
static int nrecs;

static void *rec_malloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = malloc(n);
    pthread_mutex_lock(&rec_lock);
    if (p && nrecs < MAXREC)
        recs[nrecs++] = (struct rec){ (uintptr_t)p, n, pthread_self() };
    pthread_mutex_unlock(&rec_lock);
    return p;
}

static void rec_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    pthread_mutex_lock(&rec_lock);
    for (int i = 0; i < nrecs; i++)
        if (recs[i].p == (uintptr_t)p) {
            recs[i] = recs[--nrecs];
            break;
        }
    pthread_mutex_unlock(&rec_lock);
    free(p);
}

/* the thread that allocated the live block holding address a */
static pthread_t maker_of(const void *a)
{
    uintptr_t x = (uintptr_t)a;
    pthread_t by = pthread_self();
    int found = 0;

    pthread_mutex_lock(&rec_lock);
    for (int i = 0; i < nrecs; i++)
        if (x >= recs[i].p && x < recs[i].p + recs[i].n) {
            by = recs[i].by;
            found++;
        }
    pthread_mutex_unlock(&rec_lock);
    cr_assert_eq(found, 1, "no single recorded block holds %p", a);
    return by;
}

static int nop(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

Test(numa2, each_workers_served_list_and_trace_ring_are_made_on_its_own_thread, .timeout = 20)
{
    static const coro_alloc_t rec = { .alloc = rec_malloc, .free = rec_free };
    enum { NW = 4 };
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = NW;
    c.pin = false;
    c.alloc = &rec;
    c.trace_events = 1024;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    pthread_t made[NW];
    for (int i = 0; i < NW; i++) {
        struct coro__worker *w = s->w[i];
        cr_assert_not_null(w->served, "worker %d has no served list", i);
        cr_assert_not_null(w->trace_ring, "worker %d has no trace ring", i);
        made[i] = maker_of(w);
        cr_assert(!pthread_equal(made[i], pthread_self()), "struct %d made by the creator", i);
        cr_assert(pthread_equal(maker_of(w->served), made[i]),
                  "worker %d's served list made by another thread", i);
        cr_assert(pthread_equal(maker_of(w->trace_ring), made[i]),
                  "worker %d's trace ring made by another thread", i);
        for (int j = 0; j < i; j++)
            cr_assert(!pthread_equal(made[i], made[j]), "workers %d and %d made by one thread",
                      j, i);
    }
    /* the lists still grow and serve: a job on one worker's CPU runs */
    coro_cpuset_t one;
    coro_cpuset_zero(&one);
    coro_cpuset_add(&one, s->w[0]->cpu);
    coro_spawn_opts_t o = { .affinity = &one };
    coro_t job = { 0 };
    cr_assert_eq(coro_spawn(s, &job, nop, &o), 0);
    cr_assert_eq(join_r(&job), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(nrecs, 0, "%d blocks not given back", nrecs);
}

Test(numa2, a_single_threaded_scheduler_has_its_served_list_and_trace_ring, .timeout = 20)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 0;
    c.trace_events = 64;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_not_null(s->w[0]->served);
    cr_assert_not_null(s->w[0]->trace_ring);
    coro_t job = { 0 };
    cr_assert_eq(coro_spawn(s, &job, nop, NULL), 0);
    cr_assert_eq(join_r(&job), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
