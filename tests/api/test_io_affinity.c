/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* After each I/O wake-up a job runs inside its affinity mask. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fixture_io.h"

/* ---- affinity after wake-ups ------------------------------------------------------------- */

struct pinned {
    coro_t co;
    int cpu;
    int p;              /* a pipe read end */
    int wrong, n;
    char b;
};

static int pinned_body(coro_t *co)
{
    struct pinned *j = CORO_SELF(co, struct pinned);
    CORO_BEGIN(co);
    for (j->n = 0; j->n < 20; j->n++) {
        CORO_AWAIT(co, coro_sleep(MS / 2));
        if (sched_getcpu() != j->cpu)
            j->wrong++;
        CORO_AWAIT(co, coro_read(j->p, &j->b, 1, 5000 * MS));
        if (CORO_RESULT(co) != 1 || sched_getcpu() != j->cpu)
            j->wrong++;
    }
    CORO_END(co);
}

Test(io_affinity, after_each_wake_up_the_job_runs_inside_its_mask, .timeout = 60)
{
    int cpus[CORO_MAX_CPUS], n = 0;
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    for (int i = 0; i < CPU_SETSIZE && n < 8; i++)
        if (CPU_ISSET(i, &set))
            cpus[n++] = i;
    int counts[] = { 1, 4 };
    for (int k = 0; k < 2; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_sched_stats_t *st = malloc(sizeof *st);
        /* the workers pin themselves as they start: give them a moment */
        bool all = false;
        for (int t = 0; t < 1000 && !all; t++) {
            coro_sched_stats(s, st);
            all = true;
            for (int i = 0; i < st->workers; i++)
                all = all && wstat(s, i).pinned;
            if (!all)
                sleep_ms(1);
        }
        if (!all)
            cr_skip_test("workers cannot be pinned here: affinity cannot be checked");
        struct pinned j[8];
        int p[8][2];
        coro_cpuset_t m[8];
        int nj = counts[k] == 1 ? 1 : n;
        for (int i = 0; i < nj; i++) {
            memset(&j[i], 0, sizeof j[i]);
            cr_assert_eq(pipe(p[i]), 0);
            j[i].cpu = counts[k] == 1 ? wstat(s, 0).cpu : cpus[i];
            j[i].p = p[i][0];
            coro_cpuset_zero(&m[i]);
            coro_cpuset_add(&m[i], j[i].cpu);
            coro_spawn_opts_t o = { .affinity = &m[i] };
            cr_assert_eq(coro_spawn(s, &j[i].co, pinned_body, &o), 0);
        }
        for (int r = 0; r < 20; r++) {
            sleep_ms(2);
            for (int i = 0; i < nj; i++)
                cr_assert_eq(write(p[i][1], "x", 1), 1);
        }
        for (int i = 0; i < nj; i++) {
            join_r(&j[i].co);
            cr_assert_eq(j[i].wrong, 0, "job on cpu %d ran elsewhere %d times", j[i].cpu,
                         j[i].wrong);
            close(p[i][0]);
            close(p[i][1]);
        }
        free(st);
        coro_sched_destroy(s);
    }
}
