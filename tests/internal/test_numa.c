/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* NUMA (sched/worker.c NUMA, rt/runtime.c FIRST TOUCH): a thief visits the
 * busy workers of its own node before the others, and each worker's struct
 * is allocated by the worker's own thread.  This machine may have one
 * node: the hooks coro__test_numa_nodes (CPU c on node c % n) and
 * coro__test_ncpus (a machine of n CPUs) make a 2- and a 4-node map. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/rt.h"
#include "white_box.h"

#define NW 8

static coro_sched_t *mk_nodes(int nodes, int workers)
{
    __atomic_store_n(&coro__test_ncpus, workers, __ATOMIC_RELAXED);
    __atomic_store_n(&coro__test_numa_nodes, nodes, __ATOMIC_RELAXED);
    coro_sched_t *s = mk(workers);     /* unpinned: the CPUs are made up */
    __atomic_store_n(&coro__test_ncpus, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&coro__test_numa_nodes, 0, __ATOMIC_RELAXED);
    return s;
}

/* every worker's steal order, many times: the others of its node (CPU i
 * on node i % nodes) come first, each of the others exactly once, and
 * over the draws each near victim is visited first at least once (the
 * start among them is random) */
static void check_order(int nodes)
{
    coro_sched_t *s = mk_nodes(nodes, NW);
    int vic[CORO_MAX_WORKERS];
    int nnear = NW / nodes - 1;

    for (int w = 0; w < NW; w++) {
        bool first_seen[NW] = { false };
        for (int round = 0; round < 64; round++) {
            int n = coro__test_steal_order(s, w, vic);
            cr_assert_eq(n, NW - 1, "worker %d: %d victims", w, n);
            bool seen[NW] = { false };
            for (int i = 0; i < n; i++) {
                cr_assert(vic[i] >= 0 && vic[i] < NW && vic[i] != w && !seen[vic[i]],
                          "worker %d: victim %d at %d", w, vic[i], i);
                seen[vic[i]] = true;
                bool near = vic[i] % nodes == w % nodes;
                cr_assert_eq(near, i < nnear,
                             "worker %d (node %d): victim %d (node %d) visited %dth", w,
                             w % nodes, vic[i], vic[i] % nodes, i);
            }
            if (nnear > 0)
                first_seen[vic[0]] = true;
        }
        for (int v = 0; v < NW; v++)
            if (v != w && v % nodes == w % nodes && nnear > 1)
                cr_assert(first_seen[v], "worker %d never visited %d first", w, v);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(numa, a_thief_visits_its_own_node_first_with_two_nodes, .timeout = 20)
{
    check_order(2);
}

Test(numa, a_thief_visits_its_own_node_first_with_four_nodes, .timeout = 20)
{
    check_order(4);
}

/* one node (this machine's map, or a fake one): every other worker, in a
 * rotation from a random start */
Test(numa, one_node_keeps_the_random_rotation, .timeout = 20)
{
    coro_sched_t *s = mk_nodes(1, NW);
    int vic[CORO_MAX_WORKERS];
    bool first_seen[NW] = { false };
    for (int round = 0; round < 128; round++) {
        int n = coro__test_steal_order(s, 0, vic);
        cr_assert_eq(n, NW - 1);
        for (int i = 1; i < n; i++)
            cr_assert_eq(vic[i], vic[0] + i < NW ? vic[0] + i : vic[0] + i - NW + 1,
                         "not a rotation of 1..%d", NW - 1);
        first_seen[vic[0]] = true;
    }
    for (int v = 1; v < NW; v++)
        cr_assert(first_seen[v], "worker %d never came first", v);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* the real map: /sys's node of each CPU this process may use */
Test(numa, the_node_map_is_the_one_sys_lists, .timeout = 20)
{
    cpu_set_t os;
    CPU_ZERO(&os);
    cr_assert_eq(sched_getaffinity(0, sizeof os, &os), 0);
    for (int c = 0; c < CPU_SETSIZE && c < CORO_MAX_CPUS; c++) {
        if (!CPU_ISSET(c, &os))
            continue;
        int want = 0;
        for (int n = 0; n < 64; n++) {
            char path[128], list[4096];
            snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            size_t len = fread(list, 1, sizeof list - 1, f);
            fclose(f);
            list[len] = 0;
            list[strcspn(list, "\n")] = 0;
            coro_cpuset_t set;
            if (coro_cpuset_parse(&set, list) == 0 && coro_cpuset_has(&set, c))
                want = n;
        }
        cr_assert_eq(coro__numa_node(c), want, "cpu %d", c);
    }
    cr_assert_eq(coro__numa_node(-1), 0);
    cr_assert_eq(coro__numa_node(CORO_MAX_CPUS), 0);
}

/* ---- first touch ----------------------------------------------------------------- */

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t rec_thread[64];
static int nrec;
static size_t rec_size;

static void *rec_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (n == rec_size) {
        pthread_mutex_lock(&rec_lock);
        if (nrec < 64)
            rec_thread[nrec++] = pthread_self();
        pthread_mutex_unlock(&rec_lock);
    }
    return malloc(n);
}

static void rec_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

Test(numa, each_worker_allocates_its_own_struct_on_its_own_thread, .timeout = 20)
{
    static const coro_alloc_t rec = { .alloc = rec_malloc, .free = rec_free };
    /* a worker struct's block (rt/runtime.c worker_size, plus
     * coro__alloc_aligned's line and pointer) */
    rec_size = sizeof(struct coro__worker) +
               CORO__NPRIO * 2 * CORO__LOCAL_SIZE * sizeof(ck_ring_buffer_t) +
               CORO__NPRIO * CORO__INBOX_SIZE * sizeof(struct coro__sharedq_slot) +
               CORO__CACHELINE + sizeof(void *);
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 4;
    c.pin = false;
    c.alloc = &rec;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    pthread_mutex_lock(&rec_lock);
    int n = nrec;
    pthread_t t[64];
    memcpy(t, rec_thread, sizeof t);
    pthread_mutex_unlock(&rec_lock);
    /* the workers' four, then the caller's seat's (sched/seat.c), which
     * has no thread of its own: create makes it */
    cr_assert_eq(n, 5, "%d worker structs made", n);
    cr_assert(pthread_equal(t[4], pthread_self()), "the seat's struct made by a worker");
    n = 4;
    for (int i = 0; i < n; i++) {
        cr_assert(!pthread_equal(t[i], pthread_self()), "struct %d made by the creator", i);
        for (int j = 0; j < i; j++)
            cr_assert(!pthread_equal(t[i], t[j]), "structs %d and %d made by one thread", j, i);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}
