/* SPDX-License-Identifier: MIT */
/* Generators pulled in jobs (coro_gen_await): async bodies that wait
 * between values, yield-from chains whose leaf waits, a generator awaiting
 * another, cancel of a pulling job, two pullers at once, the adapters in a
 * job, and samples/hello under seeds and workers.  Each runs with 0 and 2
 * workers, and single-threaded under a sweep of seeds. */
#define _GNU_SOURCE
#include "fixture.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

static coro_sched_t *mk_seeded(int workers, uint64_t seed)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.seed = seed;
    return mk_config(&c);
}

/* every configuration a test runs in: 0 and 2 workers, then 0 workers
 * under seeds 1 .. 20 */
#define FOR_EACH_SCHED(s)                                                           \
    for (int cfg__ = 0; cfg__ < 22; cfg__++)                                        \
        for (coro_sched_t *s = mk_seeded(cfg__ == 1 ? 2 : 0, cfg__ >= 2 ? (uint64_t)cfg__ - 1 : 0); \
             s; fin(s), s = NULL)

/* 0 .. n-1, sleeping 0 or 1 us before each (an async generator) */
struct ticks {
    coro_t co;
    int i, n;
    int waited;
};

static int ticks_body(coro_t *co)
{
    struct ticks *g = CORO_SELF(co, struct ticks);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++) {
        CORO_AWAIT(co, coro_sleep(g->i % 2 ? 1000 : 0));
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
        g->waited++;
        CORO_YIELD_VALUE(co, g->i);
    }
    CORO_END(co);
}

struct puller {
    coro_t co;
    coro_t *gen;
    intptr_t v, sum;
    int count;
    intptr_t last;
};

static int puller_body(coro_t *co)
{
    struct puller *p = CORO_SELF(co, struct puller);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(p->gen, &p->v));
        if (CORO_RESULT(co) != 1)
            break;
        p->sum += p->v;
        p->count++;
    }
    p->last = CORO_RESULT(co);
    CORO_RETURN(co, p->sum);
    CORO_END(co);
}

Test(gen_job, a_job_pulls_an_async_generator_that_sleeps_between_values, .timeout = 60)
{
    FOR_EACH_SCHED(s) {
        struct ticks g = { .n = 50 };
        struct puller p = { .gen = &g.co };
        coro_gen_init(&g.co, ticks_body);
        cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), 49 * 50 / 2);
        cr_assert_eq(p.count, 50);
        cr_assert_eq(p.last, 0);
        intptr_t v;
        cr_assert_eq(coro_gen_next(&g.co, &v), 0, "ended for every puller");
    }
}

/* 0 .. n-1 with no wait */
struct count {
    coro_t co;
    int i, n;
};

static int count_body(coro_t *co)
{
    struct count *g = CORO_SELF(co, struct count);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i);
    CORO_END(co);
}

Test(gen_job, values_that_need_no_wait_reach_the_job_with_no_step_of_their_own, .timeout = 30)
{
    coro_sched_t *s = mk(0);
    struct count g = { .n = 1000 };
    struct puller p = { .gen = &g.co };

    coro_gen_init(&g.co, count_body);
    uint64_t before = wstat(s, 0).jobs_run;
    cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), 999 * 1000 / 2);
    uint64_t steps = wstat(s, 0).jobs_run - before;
    cr_assert_leq(steps, 3, "%ju steps for 1,000 values: a queue hop per value?", (uintmax_t)steps);
    fin(s);
}

/* a chain whose leaf waits: 3 levels yielding from each other, the leaf
 * ticks_body */
struct level {
    coro_t co;
    struct level *below;
    struct ticks *leaf;
    int k;
};

static int level_body(coro_t *co)
{
    struct level *g = CORO_SELF(co, struct level);
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1000 + g->k);
    if (g->below) {
        coro_gen_init(&g->below->co, level_body);
        CORO_YIELD_FROM(co, &g->below->co);
    } else {
        coro_gen_init(&g->leaf->co, ticks_body);
        CORO_YIELD_FROM(co, &g->leaf->co);
    }
    CORO_YIELD_VALUE(co, 2000 + g->k);
    CORO_END(co);
}

Test(gen_job, yield_from_in_a_job_whose_innermost_body_waits, .timeout = 60)
{
    FOR_EACH_SCHED(s) {
        struct ticks leaf = { .n = 10 };
        struct level l[3] = { { .below = &l[1], .k = 0 }, { .below = &l[2], .k = 1 },
                              { .leaf = &leaf, .k = 2 } };
        struct puller p = { .gen = &l[0].co };
        coro_gen_init(&l[0].co, level_body);
        intptr_t want = 1000 + 1001 + 1002 + 45 + 2000 + 2001 + 2002;
        cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), want);
        cr_assert_eq(p.count, 16);
    }
}

/* a generator whose body awaits another generator that waits */
struct plus {
    coro_t co;
    struct ticks in;
    intptr_t v;
};

static int plus_body(coro_t *co)
{
    struct plus *g = CORO_SELF(co, struct plus);
    CORO_BEGIN(co);
    coro_gen_init(&g->in.co, ticks_body);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(&g->in.co, &g->v));
        if (CORO_RESULT(co) != 1)
            break;
        CORO_YIELD_VALUE(co, g->v + 100);
    }
    CORO_END(co);
}

Test(gen_job, a_generator_awaiting_another_that_waits, .timeout = 60)
{
    FOR_EACH_SCHED(s) {
        struct plus g = { .in = { .n = 20 } };
        struct puller p = { .gen = &g.co };
        coro_gen_init(&g.co, plus_body);
        cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), 19 * 20 / 2 + 20 * 100);
    }
}

Test(gen_job, a_generator_that_gave_ewouldblock_is_finished_by_a_job, .timeout = 30)
{
    struct ticks g = { .n = 3 };
    intptr_t v;

    coro_gen_init(&g.co, ticks_body);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1, "sleep(0) of the first value completes at once");
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK);
    coro_sched_t *s = mk(2);
    struct puller p = { .gen = &g.co };
    cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), 1 + 2);
    fin(s);
}

/* ---- cancel and two pullers ------------------------------------------------------- */

/* values 1, 2, .. each after its event is set; counts -ECANCELED seen */
struct gated {
    coro_t co;
    coro_event_t *ev;
    coro_event_t *entered;  /* set before each wait: the pull holds it by then */
    int i;
    int canceled;
};

static int gated_body(coro_t *co)
{
    struct gated *g = CORO_SELF(co, struct gated);
    CORO_BEGIN(co);
    for (g->i = 1;; g->i++) {
        if (g->entered)
            coro_event_set(g->entered);
        CORO_AWAIT(co, coro_event_wait(g->ev, CORO_FOREVER));
        if (CORO_RESULT(co) == -ECANCELED)
            g->canceled++;
        coro_event_reset(g->ev);
        CORO_YIELD_VALUE(co, g->i);
    }
    CORO_END(co);
}

struct once {
    coro_t co;
    coro_t *gen;
    intptr_t v;
    coro_event_t *started;
};

static int once_body(coro_t *co)
{
    struct once *o = CORO_SELF(co, struct once);
    CORO_BEGIN(co);
    if (o->started)
        coro_event_set(o->started);
    CORO_AWAIT(co, coro_gen_await(o->gen, &o->v));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* wait (from the test's thread) until a job's pull runs the body up to its
 * wait: from then on the pull holds the generator (taken at its start),
 * whether the job has suspended yet or not.  A probe by a plain pull would
 * run the body itself, and take the generator from the job */
static void wait_entered(coro_event_t *entered)
{
    cr_assert_eq(coro_event_wait_blocking(entered, CORO_FOREVER), 0);
}

Test(gen_job, cancel_of_a_pulling_job_ends_the_pull_and_leaves_the_generator_closable, .timeout = 60)
{
    for (int w = 0; w <= 2; w += 2) {
        coro_sched_t *s = mk(w);
        coro_event_t ev, entered;
        struct gated g = { .ev = &ev, .entered = &entered };
        struct once o = { .gen = &g.co };
        intptr_t r;

        coro_event_init(&ev);
        coro_event_init(&entered);
        coro_gen_init(&g.co, gated_body);
        cr_assert_eq(coro_spawn(s, &o.co, once_body, NULL), 0);
        if (w == 0)
            coro_sched_run(s);
        else
            wait_entered(&entered);
        cr_assert_eq(coro_cancel(&o.co), 0);
        cr_assert_eq(coro_join(&o.co, &r), 0);
        cr_assert_eq(r, -ECANCELED, "workers %d", w);
        cr_assert_eq(g.canceled, 0, "the body is not resumed by the cancel");

        /* pulled again, the body finds its wait cancelled and goes on */
        struct once o2 = { .gen = &g.co };
        cr_assert_eq(block_on_r(s, &o2.co, once_body, NULL), 1);
        cr_assert_eq(o2.v, 1);
        cr_assert_eq(g.canceled, 1);
        cr_assert_eq(coro_gen_close(&g.co), 0);
        struct once o3 = { .gen = &g.co };
        cr_assert_eq(block_on_r(s, &o3.co, once_body, NULL), 0, "closed");
        coro_event_destroy(&ev);
        coro_event_destroy(&entered);
        fin(s);
    }
}

/* every value of another generator */
struct from {
    coro_t co;
    coro_t *in;
};

static int from_body(coro_t *co)
{
    struct from *f = CORO_SELF(co, struct from);
    CORO_BEGIN(co);
    CORO_YIELD_FROM(co, f->in);
    CORO_END(co);
}

Test(gen_job, a_cancelled_job_leaves_every_generator_of_a_chain_closable, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    coro_event_t ev, entered;
    struct gated leaf = { .ev = &ev, .entered = &entered };
    struct from f = { .in = &leaf.co };
    struct once o = { .gen = &f.co };
    intptr_t r, v;

    coro_event_init(&ev);
    coro_event_init(&entered);
    coro_gen_init(&leaf.co, gated_body);
    coro_event_set(&ev);
    cr_assert_eq(coro_gen_next(&leaf.co, &v), 1, "the leaf is past its first value");
    coro_event_reset(&entered);
    cr_assert_eq(coro_gen_init(&f.co, from_body), 0);
    cr_assert_eq(coro_spawn(s, &o.co, once_body, NULL), 0);
    wait_entered(&entered);
    cr_assert_eq(coro_cancel(&o.co), 0);
    cr_assert_eq(coro_join(&o.co, &r), 0);
    cr_assert_eq(r, -ECANCELED);
    cr_assert_eq(coro_gen_close(&f.co), 0);
    cr_assert_eq(coro_gen_next(&leaf.co, &v), 0, "the inner was closed with it");
    coro_event_destroy(&ev);
    coro_event_destroy(&entered);
    fin(s);
}

Test(gen_job, a_second_puller_while_a_pull_waits_gets_ebusy, .timeout = 60)
{
    for (int w = 0; w <= 2; w += 2) {
        coro_sched_t *s = mk(w);
        coro_event_t ev, entered;
        struct gated g = { .ev = &ev, .entered = &entered };
        struct once a = { .gen = &g.co }, b = { .gen = &g.co };
        intptr_t ra, rb;

        coro_event_init(&ev);
        coro_event_init(&entered);
        coro_gen_init(&g.co, gated_body);
        cr_assert_eq(coro_spawn(s, &a.co, once_body, NULL), 0);
        if (w == 0)
            coro_sched_run(s);
        else
            wait_entered(&entered);
        cr_assert_eq(coro_spawn(s, &b.co, once_body, NULL), 0);
        cr_assert_eq(coro_join(&b.co, &rb), 0);
        cr_assert_eq(rb, -EBUSY, "workers %d", w);
        cr_assert_eq(coro_gen_close(&g.co), -EBUSY);
        intptr_t v;
        cr_assert_eq(coro_gen_next(&g.co, &v), -EBUSY);
        coro_event_set(&ev);
        cr_assert_eq(coro_join(&a.co, &ra), 0);
        cr_assert_eq(ra, 1);
        cr_assert_eq(a.v, 1);
        cr_assert_eq(coro_gen_close(&g.co), 0);
        coro_event_destroy(&ev);
        coro_event_destroy(&entered);
        fin(s);
    }
}

Test(gen_job, shutdown_with_cancel_ends_a_waiting_pull_with_ecanceled, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    coro_event_t ev, entered;
    struct gated g = { .ev = &ev, .entered = &entered };
    struct once o = { .gen = &g.co };

    coro_event_init(&ev);
    coro_event_init(&entered);
    coro_gen_init(&g.co, gated_body);
    cr_assert_eq(coro_spawn(s, &o.co, once_body, NULL), 0);
    wait_entered(&entered);
    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(o.co.result, -ECANCELED);
    cr_assert_eq(coro_gen_close(&g.co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
    coro_event_destroy(&entered);
}

/* ---- the adapters in a job ------------------------------------------------------------ */

struct writer {
    pthread_t t;
    int fd;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (int i = 0; i < 100; i++) {
        char line[16];
        int n = snprintf(line, sizeof line, "%d\n", i);
        if (write(w->fd, line, (size_t)n) != n)
            break;
        if (i % 10 == 0)
            sleep_ms(1);    /* lets the reader find the pipe empty: not for order */
    }
    close(w->fd);
    return NULL;
}

struct line_sum {
    coro_t co;
    coro_gen_lines_t *g;
    intptr_t v;
    long sum;
    int lines;
};

static int line_sum_body(coro_t *co)
{
    struct line_sum *p = CORO_SELF(co, struct line_sum);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(&p->g->co, &p->v));
        if (CORO_RESULT(co) != 1)
            break;
        p->sum += atol((char *)p->v);
        p->lines++;
    }
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(gen_job, a_job_reads_the_lines_of_a_nonblocking_pipe, .timeout = 60)
{
    for (int w = 0; w <= 2; w += 2) {
        coro_sched_t *s = mk(w);
        int p[2];
        char buf[64];
        coro_gen_lines_t g = { 0 };
        struct writer wr;
        struct line_sum j = { .g = &g };

        cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
        wr.fd = p[1];
        cr_assert_eq(coro_gen_lines_init(&g, p[0], buf, sizeof buf, CORO_FOREVER), 0);
        pthread_create(&wr.t, NULL, writer_main, &wr);
        cr_assert_eq(block_on_r(s, &j.co, line_sum_body, NULL), 0);
        pthread_join(wr.t, NULL);
        cr_assert_eq(j.lines, 100);
        cr_assert_eq(j.sum, 99 * 100 / 2);
        close(p[0]);
        fin(s);
    }
}

struct producer {
    coro_t co;
    coro_chan_t *ch;
    int i;
};

static int producer_body(coro_t *co)
{
    struct producer *p = CORO_SELF(co, struct producer);
    CORO_BEGIN(co);
    for (p->i = 1; p->i <= 200; p->i++)
        CORO_AWAIT(co, coro_chan_send(p->ch, (void *)(intptr_t)p->i, CORO_FOREVER));
    coro_chan_close(p->ch);
    CORO_END(co);
}

Test(gen_job, a_job_pulls_the_items_of_a_channel_until_it_closes, .timeout = 60)
{
    FOR_EACH_SCHED(s) {
        coro_chan_t ch;
        void *slots[4];
        coro_gen_chan_t g = { 0 };
        struct producer pr = { .ch = &ch };
        struct puller p = { .gen = &g.co };

        coro_chan_init(&ch, slots, 4);
        cr_assert_eq(coro_gen_chan_init(&g, &ch, CORO_FOREVER), 0);
        cr_assert_eq(coro_spawn(s, &pr.co, producer_body, NULL), 0);
        cr_assert_eq(block_on_r(s, &p.co, puller_body, NULL), 200 * 201 / 2);
        cr_assert_eq(join_r(&pr.co), 0);
        cr_assert_eq(coro_chan_destroy(&ch), 0);
    }
}

/* ---- samples/hello ------------------------------------------------------------------- */

/* the child: hello with two arguments */
static void hello_child(void *arg)
{
    const char **a = arg;
    execl(CORO_BUILD_DIR "/samples/hello", "hello", a[0], a[1], (char *)NULL);
    _exit(127);
}

/* run hello with args; its stdout into out */
static int run_hello(const char *a1, const char *a2, char *out, size_t cap)
{
    const char *a[2] = { a1, a2 };
    return in_child(hello_child, a, 1, out, cap);
}

Test(gen_job, hello_prints_the_same_squares_under_20_seeds_and_2_workers, .timeout = 120)
{
    const char *want = "1 4 9 16 25 36 49 64 81 100 \n"
                       "sum of the first 10 squares: 385\n"
                       "pulled from plain code: 385\n";
    char out[512], seed[16];

    for (int k = 0; k <= 20; k++) {
        snprintf(seed, sizeof seed, "%d", k);
        int st = k == 0 ? run_hello("--workers", "2", out, sizeof out)
                        : run_hello("--seed", seed, out, sizeof out);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "seed %d: status %#x", k, st);
        cr_assert_str_eq(out, want, "seed %d", k);
    }
}
