/* SPDX-License-Identifier: MIT */
/* Scenario: coro_cancel of one job reaching its wait through its own
 * awaitable (lib/wait/parklot.c CANCEL ONE) races the arm and the other ends
 * of that wait, for the waits that it reaches without a sweep since the
 * sweep went: a select (an event branch, a timer branch), a group wait
 * with a timeout, a call for the blocking pool, coro_done of a job that
 * outlives the round (its joiner slot, and the lot for the later
 * awaiters).  Across 1/2/4/8 workers the main thread cancels the jobs one
 * by one while it sets the event.  Checks: every job ends with -ECANCELED
 * (exactly once: a double wake would corrupt a queue or trip TSan), and
 * every other wait ended by its own cause or timed out.  Under TSan: the
 * bucket, registry-list and pool locks against the arms that check the
 * job's flag under them. */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <unistd.h>
#include "scenario.h"

enum { JOBS = 24 };

struct ctx {
    coro_event_t ev, quit;
    coro_group_t g;         /* holds one member until the round ends */
    coro_t holder;          /* awaited by coro_done */
};

struct job {
    coro_t co;
    struct ctx *x;
    coro_select_t sel;
    int i;
    intptr_t end;
};

static int holder_body(coro_t *co)
{
    struct ctx *x = (struct ctx *)(void *)((char *)co - offsetof(struct ctx, holder));
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(&x->quit, CORO_FOREVER));
    CORO_END(co);
}

struct member { coro_t co; struct ctx *x; };

static int member_body(coro_t *co)
{
    struct member *m = CORO_SELF(co, struct member);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(&m->x->quit, CORO_FOREVER));
    CORO_END(co);
}

static intptr_t short_call(void *arg)
{
    (void)arg;
    sched_yield();
    return 0;
}

static int job_body(coro_t *co)
{
    struct job *f = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (;;) {
        f->i++;
        switch (f->i % 4) {
        case 0:
            coro_select_init(&f->sel);
            coro_select_event(&f->sel, &f->x->ev);
            coro_select_timer(&f->sel, coro_now() + (f->i % 3) * 1000000);
            CORO_SELECT(co, &f->sel, f->i % 2 ? 2000000 : CORO_FOREVER);
            break;
        case 1:
            CORO_AWAIT(co, coro_group_wait(&f->x->g, (f->i % 5) * 500000));
            break;
        case 2:
            CORO_AWAIT(co, coro_blocking(short_call, NULL));
            break;
        default:
            CORO_AWAIT(co, coro_done(&f->x->holder));
            break;
        }
        if (CORO_RESULT(co) == -ECANCELED)
            break;
        SCEN_CHECK(CORO_RESULT(co) >= 0 || CORO_RESULT(co) == -ETIMEDOUT, "wait ended %ld",
                   (long)CORO_RESULT(co));
    }
    f->end = CORO_RESULT(co);
    CORO_RETURN(co, 1);
    CORO_END(co);
}

static void round_(int workers, int r)
{
    coro_sched_t *s = scen_sched(workers);
    struct ctx x;
    struct member m = { .x = &x };
    struct job *j = calloc(JOBS, sizeof *j);

    memset(&x.holder, 0, sizeof x.holder);
    SCEN_CHECK(coro_event_init(&x.ev) == 0 && coro_event_init(&x.quit) == 0, "init");
    SCEN_CHECK(coro_group_init(&x.g) == 0, "group");
    SCEN_CHECK(coro_spawn(s, &x.holder, holder_body, NULL) == 0, "holder");
    SCEN_CHECK(coro_spawn(s, &m.co, member_body, &(coro_spawn_opts_t){ .group = &x.g }) == 0,
               "member");
    for (int i = 0; i < JOBS; i++) {
        j[i].x = &x;
        j[i].i = i + r;
        SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, NULL) == 0, "spawn");
    }
    for (int i = 0; i < JOBS; i++) {
        for (int k = 0; k < (i + r) % 4; k++) {
            coro_event_set(&x.ev);
            coro_event_reset(&x.ev);
            if ((k + r) % 3 == 0)
                sched_yield();
        }
        SCEN_CHECK(coro_cancel(&j[i].co) == 0, "cancel");
    }
    for (int i = 0; i < JOBS; i++) {
        SCEN_CHECK(join_r(&j[i].co) == 1, "job");
        SCEN_CHECK(j[i].end == -ECANCELED, "job %d ended %ld", i, (long)j[i].end);
    }
    coro_event_set(&x.quit);
    SCEN_CHECK(join_r(&x.holder) == 0 && join_r(&m.co) == 0, "holder");
    SCEN_CHECK(coro_group_destroy(&x.g) == 0, "group destroy");
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    coro_event_destroy(&x.ev);
    coro_event_destroy(&x.quit);
    free(j);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 10, 200);

    alarm(600);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < SCEN_NWORKERS; k++)
            round_(scen_workers[k], r);
    printf("cancel_one: %d rounds x %d worker counts\n", rounds, SCEN_NWORKERS);
    return 0;
}
