/* SPDX-License-Identifier: MIT */
/* affinity: jobs with CPU masks.  Each job records where it ran; a job
 * never runs outside its mask, and coro_reschedule moves a running job to
 * other CPUs (Coop's suspend(mask, prio)). */
#define _GNU_SOURCE
#include <corokit.h>
#include <sched.h>
#include <stdio.h>

struct hop {
    coro_t co;
    int first, later;
    int cpu_a, cpu_b;
};

/* [reschedule] */
static int hop(coro_t *co)
{
    struct hop *h = CORO_SELF(co, struct hop);
    coro_cpuset_t to;                     /* a C local is fine: it is read at once */

    CORO_BEGIN(co);
    h->first = sched_getcpu();            /* inside the spawn mask */
    coro_cpuset_zero(&to);
    coro_cpuset_add(&to, h->cpu_b);
    CORO_AWAIT(co, coro_reschedule(&to, CORO_PRIO_NORMAL));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, CORO_RESULT(co));
    h->later = sched_getcpu();            /* now on cpu_b */
    CORO_END(co);
}
/* [reschedule] */

int main(void)
{
    coro_sched_t *s;
    cpu_set_t os;
    int cpus[2], n = 0, bad = 0, rc;

    sched_getaffinity(0, sizeof os, &os);
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &os))
            cpus[n++] = c;
    if (n == 1)
        cpus[1] = cpus[0];                /* one CPU: the hop stays put */
    if ((rc = coro_sched_create(&s, NULL)) < 0) {   /* one pinned worker per CPU */
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    /* [spawn] */
    coro_cpuset_t first;
    coro_cpuset_zero(&first);
    coro_cpuset_add(&first, cpus[0]);
    coro_spawn_opts_t opts = { .affinity = &first, .priority = CORO_PRIO_NORMAL };

    struct hop jobs[8] = { 0 };
    for (int i = 0; i < 8; i++) {
        jobs[i].cpu_a = cpus[0];
        jobs[i].cpu_b = cpus[1];
        coro_spawn(s, &jobs[i].co, hop, &opts);
    }
    /* [spawn] */
    for (int i = 0; i < 8; i++) {
        intptr_t r;
        if (coro_join(&jobs[i].co, &r) != 0)
            return 1;
        printf("job %d: started on CPU %d (mask {%d}), continued on CPU %d (mask {%d})\n", i,
               jobs[i].first, cpus[0], jobs[i].later, cpus[1]);
        bad += jobs[i].first != cpus[0] || jobs[i].later != cpus[1];
    }
    /* a mask that holds no worker's CPU is refused at once, never a hang */
    coro_cpuset_t nowhere;
    coro_cpuset_zero(&nowhere);
    coro_cpuset_add(&nowhere, CORO_MAX_CPUS - 1);
    struct hop h = { 0 };
    coro_spawn_opts_t o = { .affinity = &nowhere };
    rc = coro_spawn(s, &h.co, hop, &o);
    printf("spawn with mask {%d}: %s\n", CORO_MAX_CPUS - 1, coro_strerror(rc));
    coro_sched_destroy(s);
    return bad || rc != -EINVAL;
}
