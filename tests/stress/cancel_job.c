/* SPDX-License-Identifier: MIT */
/* Scenario: coro_cancel(job) races every way a wait ends - timeouts (lot
 * timers firing, I/O sleeps), sync wakes (items sent, an event set), I/O
 * (bytes written to the job's pipe) - across 1/2/4/8 workers, while the
 * main thread cancels the jobs one by one, from a plain thread and from a
 * job.  Checks: every job ends with -ECANCELED seen (exactly one waker: a
 * double wake would corrupt a queue or trip TSan), no item and no byte is
 * lost (taken + left == put), no lot timer is left.  Under TSan: the
 * cancel sweep's bucket and registry locks against parkers, the I/O
 * context's per-job sweep against its registrations; the group lock (the
 * members join with .group and a far .deadline, half are cancelled one by
 * one, the rest by coro_group_cancel) against members finishing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

enum { JOBS = 24 };

struct ctx {
    coro_event_t ev;
    coro_chan_t ch;
    void *buf[8];
};

struct job {
    coro_t co;
    struct ctx *x;
    int fd[2];
    int i;
    long items, bytes;
    void *item;
    char buf[16];
    intptr_t end;
};

static int job_body(coro_t *co)
{
    struct job *f = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    for (;;) {
        f->i++;
        switch (f->i % 5) {
        case 0:
            CORO_AWAIT(co, coro_event_wait(&f->x->ev, f->i % 2 ? (f->i % 7) * 1000 : CORO_FOREVER));
            break;
        case 1:
            CORO_AWAIT(co, coro_chan_recv(&f->x->ch, &f->item, f->i % 3 ? 2000 : CORO_FOREVER));
            if (CORO_RESULT(co) == 0)
                f->items++;
            break;
        case 2:
            CORO_AWAIT(co, coro_read(f->fd[0], f->buf, sizeof f->buf, f->i % 3 ? 3000 : CORO_FOREVER));
            if (CORO_RESULT(co) > 0)
                f->bytes += CORO_RESULT(co);
            break;
        case 3:
            CORO_AWAIT(co, coro_sleep((f->i % 4) * 1000));
            break;
        default:
            CORO_AWAIT(co, coro_readable(f->fd[0], f->i % 2 ? 1000 : CORO_FOREVER));
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

struct canceller { coro_t co; coro_t *victim; };

static int canceller_body(coro_t *co)
{
    struct canceller *c = CORO_SELF(co, struct canceller);
    CORO_BEGIN(co);
    SCEN_CHECK(coro_cancel(c->victim) == 0, "cancel from a job");
    CORO_END(co);
}

static void round_(int workers, int r)
{
    coro_sched_t *s = scen_sched(workers);
    struct ctx x;
    struct job *j = calloc(JOBS, sizeof *j);
    struct canceller *c = calloc(JOBS, sizeof *c);
    long sent = 0, written = 0, items = 0, bytes = 0;
    char chunk[11] = "0123456789";

    SCEN_CHECK(coro_event_init(&x.ev) == 0, "init");
    SCEN_CHECK(coro_chan_init(&x.ch, x.buf, 8) == 0, "init");
    coro_group_t g;
    SCEN_CHECK(coro_group_init(&g) == 0, "group");
    for (int i = 0; i < JOBS; i++) {
        SCEN_CHECK(pipe2(j[i].fd, O_NONBLOCK) == 0, "pipe");
        j[i].x = &x;
        j[i].i = i + r;
        /* every job in the group; odd ones with a far deadline (the
         * record, deadline-bounded timers) */
        coro_spawn_opts_t o = { .group = &g, .deadline = i % 2 ? coro_now() + 60000000000LL : 0 };
        SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, &o) == 0, "spawn");
    }
    for (int i = 0; i < JOBS; i++) {
        for (int k = 0; k < (i + r) % 6; k++) {
            if (coro_chan_try_send(&x.ch, &x) == 0)
                sent++;
            for (int m = i; m < JOBS; m += 3)
                if (write(j[m].fd[1], chunk, 10) == 10)
                    written += 10;
            coro_event_set(&x.ev);
            coro_event_reset(&x.ev);
            if ((k + r) % 3 == 0)
                sched_yield();
        }
        c[i].victim = &j[i].co;
        if (i >= JOBS / 2 + (r % 4)) {
            /* the rest at once: the group cancel races the last wakes */
            SCEN_CHECK(coro_group_cancel(&g) >= 0, "group cancel");
            break;
        }
        if ((i + r) % 2)
            SCEN_CHECK(coro_cancel(&j[i].co) == 0, "cancel");
        else
            SCEN_CHECK(block_on_r(s, &c[i].co, canceller_body,
                                     &(coro_spawn_opts_t){ .priority = CORO_PRIO_HIGH }) == 0,
                       "canceller");
    }
    SCEN_CHECK(coro_group_wait_blocking(&g, CORO_FOREVER) == 0, "group wait");
    SCEN_CHECK(coro_group_destroy(&g) == 0, "group destroy");
    for (int i = 0; i < JOBS; i++) {
        SCEN_CHECK(join_r(&j[i].co) == 1, "job");
        SCEN_CHECK(j[i].end == -ECANCELED, "job %d ended %ld", i, (long)j[i].end);
        items += j[i].items;
        bytes += j[i].bytes;
        ssize_t n;
        char buf[4096];
        while ((n = read(j[i].fd[0], buf, sizeof buf)) > 0)
            bytes += n;
        close(j[i].fd[0]);
        close(j[i].fd[1]);
    }
    void *it;
    while (coro_chan_try_recv(&x.ch, &it) == 0)
        items++;
    SCEN_CHECK(items == sent, "items %ld != sent %ld", items, sent);
    SCEN_CHECK(bytes == written, "bytes %ld != written %ld", bytes, written);
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    coro_event_destroy(&x.ev);
    free(j);
    free(c);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 10, 200);

    alarm(600);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < SCEN_NWORKERS; k++)
            round_(scen_workers[k], r);
    printf("cancel_job: %d rounds x %d worker counts\n", rounds, SCEN_NWORKERS);
    return 0;
}
