/* SPDX-License-Identifier: MIT */
/* Scenario: coro_cancel of a job whose innermost frame keeps moving.
 * Each job loops over coro_call children, and each child awaits an I/O
 * wait that often completes at once (a readable pipe, a sleep of 0 or
 * 1 ns) or a call for the blocking pool, then returns: every step moves
 * the job's innermost frame (coro_t.top) twice, and many arms complete
 * while the job is SUSPENDED for an instant.  A plain thread cancels the
 * jobs one by one at random moments, so the cancel reads top (to find
 * the wait: lib/wait/done.c, lib/io/cancel.c, lib/io/blocking.c) while a
 * worker's step may be moving it.  Across 1/2/4/8 workers.  Checks: every
 * job sees -ECANCELED and ends (no lost wake, no double wake).  Under
 * TSan: each of those reads against the step loop's stores of top
 * (lib/sched/run.c set_top). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

enum { JOBS = 16 };

struct child {
    coro_t co;
    int fd, kind;
};

struct job {
    coro_t co;
    struct child ch;
    int fd[2];
    long steps;
    intptr_t end;
};

static intptr_t nothing(void *arg)
{
    (void)arg;
    return 0;
}

static int child_body(coro_t *co)
{
    struct child *c = CORO_SELF(co, struct child);
    CORO_BEGIN(co);
    switch (c->kind) {
    case 0:
        CORO_AWAIT(co, coro_readable(c->fd, CORO_FOREVER));
        break;
    case 1:
        CORO_AWAIT(co, coro_sleep(0));
        break;
    case 2:
        CORO_AWAIT(co, coro_sleep(1));
        break;
    default:
        CORO_AWAIT(co, coro_blocking(nothing, NULL));
        break;
    }
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static int job_body(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (;;) {
        j->ch.kind = (int)(j->steps++ % 4);
        j->ch.fd = j->fd[0];
        CORO_AWAIT(co, coro_call(&j->ch.co, child_body));
        if (CORO_RESULT(co) == -ECANCELED)
            break;
        SCEN_CHECK(CORO_RESULT(co) >= 0 || CORO_RESULT(co) == -ETIMEDOUT, "wait ended %ld",
                   (long)CORO_RESULT(co));
    }
    j->end = -ECANCELED;
    CORO_RETURN(co, 1);
    CORO_END(co);
}

/* a few hundred ns to a few us of nothing: the cancel lands anywhere */
static void spin(unsigned *seed)
{
    for (volatile unsigned k = (unsigned)rand_r(seed) % 2000; k; k--)
        ;
}

static void round_(int workers, int r)
{
    coro_sched_t *s = scen_sched(workers);
    struct job *j = calloc(JOBS, sizeof *j);
    unsigned seed = (unsigned)(r * 131 + workers);

    SCEN_CHECK(j != NULL, "calloc");
    for (int i = 0; i < JOBS; i++) {
        SCEN_CHECK(pipe2(j[i].fd, O_NONBLOCK) == 0, "pipe");
        SCEN_CHECK(write(j[i].fd[1], "x", 1) == 1, "write");     /* readable for good */
        SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, NULL) == 0, "spawn");
    }
    for (int i = 0; i < JOBS; i++) {
        spin(&seed);
        SCEN_CHECK(coro_cancel(&j[i].co) == 0, "cancel");
    }
    for (int i = 0; i < JOBS; i++) {
        SCEN_CHECK(join_r(&j[i].co) == 1, "job %d", i);
        SCEN_CHECK(j[i].end == -ECANCELED, "job %d ended %ld", i, (long)j[i].end);
        close(j[i].fd[0]);
        close(j[i].fd[1]);
    }
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    free(j);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 20, 400);

    alarm(600);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < SCEN_NWORKERS; k++)
            round_(scen_workers[k], r);
    printf("cancel_top: %d rounds x %d worker counts\n", rounds, SCEN_NWORKERS);
    return 0;
}
