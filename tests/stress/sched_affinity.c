/* SPDX-License-Identifier: MIT */
/* Scenario: a job pinned to a blocked worker's CPU waits, an any-CPU job
 * (even one in the blocked worker's LIFO slot) is stolen; HIGH overtakes
 * queued NORMAL jobs; reschedule hops between CPUs. */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

struct job {
    coro_t co;
    long *seq;
    long at;
    int cpu;
};

static int record(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    j->at = __atomic_fetch_add(j->seq, 1, __ATOMIC_ACQ_REL);
    j->cpu = sched_getcpu();
    CORO_END(co);
}

struct blocker {
    coro_t co;
    int started, release;
    struct job *child;
};

static int block_body(coro_t *co)
{
    struct blocker *b = CORO_SELF(co, struct blocker);
    CORO_BEGIN(co);
    if (b->child)
        coro_spawn(coro_sched_current(), &b->child->co, record, NULL);
    __atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&b->release, __ATOMIC_ACQUIRE))
        usleep(50);
    CORO_END(co);
}

struct hopper {
    coro_t co;
    int a, b, i, bad;
};

static int hop_body(coro_t *co)
{
    struct hopper *h = CORO_SELF(co, struct hopper);
    coro_cpuset_t set;
    CORO_BEGIN(co);
    for (h->i = 0; h->i < 20; h->i++) {
        coro_cpuset_zero(&set);
        coro_cpuset_add(&set, (h->i & 1) ? h->a : h->b);
        CORO_AWAIT(co, coro_reschedule(&set, h->i % 3 - 1));
        if (CORO_RESULT(co) != 0 || sched_getcpu() != ((h->i & 1) ? h->a : h->b))
            h->bad++;
    }
    CORO_END(co);
}

static void wait_flag(int *p)
{
    for (int i = 0; i < 100000 && !__atomic_load_n(p, __ATOMIC_ACQUIRE); i++)
        usleep(100);
    SCEN_CHECK(__atomic_load_n(p, __ATOMIC_ACQUIRE), "timed out");
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 10, 200);
    cpu_set_t os;
    int cpus[2], n = 0;

    sched_getaffinity(0, sizeof os, &os);
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &os))
            cpus[n++] = c;
    for (int r = 0; r < rounds; r++) {
        /* HIGH overtakes queued NORMAL jobs on one busy worker */
        coro_sched_t *s = scen_sched(1);
        long seq = 0;
        struct blocker b = { 0 };
        struct job normal[20], high = { .seq = &seq };
        memset(normal, 0, sizeof normal);
        SCEN_CHECK(coro_spawn(s, &b.co, block_body, NULL) == 0, "spawn");
        wait_flag(&b.started);
        for (int i = 0; i < 20; i++) {
            normal[i].seq = &seq;
            coro_spawn(s, &normal[i].co, record, NULL);
        }
        coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };
        coro_spawn(s, &high.co, record, &hi);
        __atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
        join_r(&high.co);
        for (int i = 0; i < 20; i++)
            join_r(&normal[i].co);
        SCEN_CHECK(high.at == 0, "HIGH ran as %ld", high.at);
        coro_sched_destroy(s);

        if (n < 2)
            continue;
        /* a pinned job waits for its blocked CPU; any-CPU jobs are stolen */
        for (int w = 2; w <= 8; w *= 2) {
            s = scen_sched(w);
            coro_cpuset_t one;
            coro_cpuset_zero(&one);
            coro_cpuset_add(&one, cpus[1]);
            coro_spawn_opts_t pin = { .affinity = &one };
            seq = 0;
            struct job child = { .seq = &seq }, pinned = { .seq = &seq }, any = { .seq = &seq };
            struct blocker bl = { .child = &child };
            if (w == 2) {
                SCEN_CHECK(coro_spawn(s, &bl.co, block_body, &pin) == 0, "spawn blocker");
                wait_flag(&bl.started);
                coro_spawn(s, &pinned.co, record, &pin);
                coro_spawn(s, &any.co, record, NULL);
                SCEN_CHECK(join_r(&any.co) == 0 && join_r(&child.co) == 0, "join");
                SCEN_CHECK(any.cpu != cpus[1] && child.cpu != cpus[1], "stolen jobs ran on %d/%d",
                           any.cpu, child.cpu);
                usleep(20000);
                SCEN_CHECK(__atomic_load_n(&seq, __ATOMIC_ACQUIRE) == 2, "pinned job ran early");
                __atomic_store_n(&bl.release, 1, __ATOMIC_RELEASE);
                join_r(&pinned.co);
                SCEN_CHECK(pinned.cpu == cpus[1], "pinned job ran on %d", pinned.cpu);
            }
            struct hopper h[8];
            for (int i = 0; i < 8; i++) {
                h[i] = (struct hopper){ .a = cpus[0], .b = cpus[1] };
                coro_spawn(s, &h[i].co, hop_body, NULL);
            }
            for (int i = 0; i < 8; i++) {
                join_r(&h[i].co);
                SCEN_CHECK(h[i].bad == 0, "hopper landed on a wrong CPU %d times", h[i].bad);
            }
            coro_sched_destroy(s);
        }
    }
    printf("sched_affinity: ok\n");
    return 0;
}
