/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* An idle worker beside a neighbour that wants its CPU (base/spin.c, LATE
 * YIELDS).  A yield beside a busy thread on the same CPU hands it a time
 * slice and comes back late; after one such yield a worker parks after
 * one more look, instead of handing the neighbour a slice at each of its
 * idle looks (CORO__IDLE_LOOKS - CORO__IDLE_PAUSES of them).  A late
 * yield that lent the CPU to a thread of ours spawning there reads in
 * time (sched/sched.h, LENT CPUS). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "white_box.h"

/* the calling thread onto cpu alone: 0 or an errno (asserted by the
 * test's own thread only: Criterion's asserts end the test from there) */
static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* the first CPU the caller may use, the caller pinned to it (*mine: its
 * CPUs before, to restore) */
static int pin_here(cpu_set_t *mine)
{
    cr_assert_eq(sched_getaffinity(0, sizeof *mine, mine), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, mine))
        cpu++;
    cr_assert_eq(pin_to(cpu), 0);
    return cpu;
}

/* a thread pinned to one CPU until told to stop: it never sleeps, or
 * with s it spawns jobs into s and joins each (a thread of ours that
 * makes work there) */
struct neighbour {
    pthread_t t;
    int cpu;
    coro_sched_t *s;
    int running, stop;  /* atomic */
};

static int nothing(coro_t *co);

static void *neighbour_main(void *arg)
{
    struct neighbour *n = arg;
    (void)pin_to(n->cpu);     /* unpinned, it still competes for the CPUs */
    __atomic_store_n(&n->running, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
        if (!n->s)
            continue;
        coro_t co;
        memset(&co, 0, sizeof co);
        if (coro_spawn(n->s, &co, nothing, NULL) == 0)
            join_r(&co);
    }
    return NULL;
}

static void neighbour_start(struct neighbour *n)
{
    cr_assert_eq(pthread_create(&n->t, NULL, neighbour_main, n), 0);
    while (!__atomic_load_n(&n->running, __ATOMIC_ACQUIRE))
        usleep(100);
}

static void neighbour_stop(struct neighbour *n)
{
    __atomic_store_n(&n->stop, 1, __ATOMIC_RELEASE);
    pthread_join(n->t, NULL);
}

static int nothing(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

/* bounded (20 s): until the worker parked more than `than` times */
static void wait_parked(coro_sched_t *s, uint64_t than)
{
    int64_t end = coro_now() + 20000000000LL;
    while (wstat(s, 0).parks <= than) {
        cr_assert_lt(coro_now(), end, "the worker never parked");
        usleep(200);
    }
}

Test(idle_neighbour, a_yield_beside_a_busy_thread_on_its_cpu_comes_back_late, .timeout = 60)
{
    cpu_set_t mine;
    int cpu = pin_here(&mine);
    struct neighbour h = { .cpu = cpu };
    neighbour_start(&h);

    /* the kernel gives the busy thread the CPU at a yield once it is owed it: a
     * slice (at least 0.75 ms), past CORO__YIELD_LATE_NS */
    int late = 0, tries = 0;
    int64_t end = coro_now() + 10000000000LL;
    while (!late && coro_now() < end) {
        tries++;
        late = !coro__idle_yield(NULL);
    }
    neighbour_stop(&h);
    pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
    cr_assert(late, "%d yields beside a busy thread on CPU %d all came back in time", tries, cpu);
}

Test(idle_neighbour, an_idle_worker_parks_after_a_late_yield, .timeout = 60)
{
    enum { ROUNDS = 10 };
    coro_sched_t *s = mk(1);
    __atomic_store_n(&coro__idle_yields_late, true, __ATOMIC_RELAXED);

    /* each round the worker wakes, runs a job and goes idle: one yield,
     * late, then a look and the park (and at most one of the I/O
     * thread's rounds, which stop at a late yield too) */
    uint64_t yields = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t parks = wstat(s, 0).parks;
        uint64_t y0 = __atomic_load_n(&coro__idle_yields, __ATOMIC_RELAXED);
        coro_t co;
        memset(&co, 0, sizeof co);
        cr_assert_eq(coro_spawn(s, &co, nothing, NULL), 0);
        cr_assert_eq(join_r(&co), 0);
        wait_parked(s, parks);
        yields += __atomic_load_n(&coro__idle_yields, __ATOMIC_RELAXED) - y0;
    }
    __atomic_store_n(&coro__idle_yields_late, false, __ATOMIC_RELAXED);
    fin(s);
    cr_assert_leq(yields, 2 * ROUNDS, "%lu idle yields in %d idle phases, each late",
                  (unsigned long)yields, ROUNDS);
}

Test(idle_neighbour, a_late_yield_to_a_thread_of_ours_that_spawns_there_reads_in_time, .timeout = 60)
{
    cpu_set_t mine;
    int cpu = pin_here(&mine);
    coro_sched_t *s = mk(1);
    struct neighbour p = { .cpu = cpu, .s = s };
    neighbour_start(&p);

    /* every yield reads as late; one that let the spawner run on this
     * CPU saw it change the CPU's word (LENT CPUS), and reads in time */
    __atomic_store_n(&coro__idle_yields_late, true, __ATOMIC_RELAXED);
    const uint32_t *word = &s->lent[(unsigned)cpu % CORO__LENT_SLOTS].v;
    bool lent = false;
    int tries = 0;
    int64_t end = coro_now() + 10000000000LL;
    while (!lent && coro_now() < end) {
        tries++;
        lent = coro__idle_yield(word);
    }
    __atomic_store_n(&coro__idle_yields_late, false, __ATOMIC_RELAXED);
    neighbour_stop(&p);
    pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
    fin(s);
    cr_assert(lent, "%d late yields beside a spawning thread on CPU %d: its word never changed",
              tries, cpu);
}
