/* SPDX-License-Identifier: MIT */
/* Scenario: pullers of one generator at once (lib/sched/gen.c OWNERS), and
 * cancel of jobs that pull (CANCEL).
 *   1. Two plain threads pull one counting generator as fast as they can:
 *      every pull gives a value or -EBUSY, never a value twice or a value
 *      lost (the counts and sums add up, each thread's values increase),
 *      and both see the end.  Once with a pause every 64 values (the
 *      generator mostly kept by one thread, taken over at the other's
 *      turn), once with none (a takeover attempt at every refused pull,
 *      while the keeper's marked pulls run).  Again with coro_gen_next_of
 *      (the body called by name), and as many short generators, so that
 *      the keeper's pull that meets the end (and frees the generator
 *      before its mark's end) races the other's takeover.
 *   2. Jobs on 1/2/4/8 workers and a plain thread pull one generator whose
 *      body waits (a sleep of 0) between values: the same checks.
 *   3. A job pulls a generator waiting on an event while the main thread
 *      sets the event and cancels the job at once: the pull gives the value
 *      or -ECANCELED, and the generator can always be closed after.
 * Under TSan: the frames' fields against gen_run's CAS and release, and
 * coro_cancel's look at the job's innermost frame against the step that
 * moves it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "scenario.h"

struct count {
    coro_t co;
    intptr_t i, n;
    int wait;       /* sleep 0 between values */
    int work;       /* a little work per value: pulls overlap more */
};

static volatile unsigned sink;

static int count_body(coro_t *co)
{
    struct count *g = CORO_SELF(co, struct count);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++) {
        if (g->wait)
            CORO_AWAIT(co, coro_sleep(0));
        for (int k = 0; k < g->work; k++)
            sink = sink + 1;
        CORO_YIELD_VALUE(co, g->i);
    }
    CORO_END(co);
}

struct tally {
    long count;
    intptr_t sum;
    long busy;
};

static void add(struct tally *t, intptr_t v, intptr_t *last)
{
    SCEN_CHECK(v > *last, "value %jd after %jd", (intmax_t)v, (intmax_t)*last);
    *last = v;
    t->count++;
    t->sum += v;
}

/* ---- 1. plain threads ---------------------------------------------------------------- */

struct plain_puller {
    pthread_t t;
    coro_t *g;
    pthread_barrier_t *start;
    int nopause;    /* no sched_yield every 64 values */
    int named;      /* pull with coro_gen_next_of */
    struct tally t_;
};

static void *plain_main(void *arg)
{
    struct plain_puller *p = arg;
    intptr_t v, last = -1;
    int r;

    if (p->start)
        pthread_barrier_wait(p->start);
    while ((r = p->named ? coro_gen_next_of(p->g, count_body, &v) : coro_gen_next(p->g, &v)) != 0) {
        if (r == 1) {
            add(&p->t_, v, &last);
            if (!p->nopause && p->t_.count % 64 == 0)
                sched_yield();      /* the other thread's turn */
        } else {
            SCEN_CHECK(r == -EBUSY || r == -EWOULDBLOCK, "pull: %s", coro_strerror(r));
            p->t_.busy++;
            if (r == -EWOULDBLOCK)  /* a job's pull left it waiting: let it finish */
                sched_yield();
        }
    }
    return NULL;
}

static void plain_threads(long n, int nopause, int named, int quiet)
{
    struct count g = { .n = n, .work = 200 };
    pthread_barrier_t start;
    struct plain_puller a = { .g = &g.co, .start = &start, .nopause = nopause, .named = named },
                        b = { .g = &g.co, .start = &start, .nopause = nopause, .named = named };

    pthread_barrier_init(&start, NULL, 2);
    coro_gen_init(&g.co, count_body);
    pthread_create(&a.t, NULL, plain_main, &a);
    pthread_create(&b.t, NULL, plain_main, &b);
    pthread_join(a.t, NULL);
    pthread_join(b.t, NULL);
    pthread_barrier_destroy(&start);
    SCEN_CHECK(a.t_.count + b.t_.count == n, "%ld + %ld values of %ld", a.t_.count, b.t_.count, n);
    SCEN_CHECK(a.t_.sum + b.t_.sum == (intptr_t)(n - 1) * n / 2, "sums");
    SCEN_CHECK(coro_gen_close(&g.co) == 0, "close after the end");
    if (!quiet)
        printf("  plain threads%s%s: %ld + %ld values, %ld + %ld refused\n",
               nopause ? ", no pause" : "", named ? ", named body" : "", a.t_.count, b.t_.count,
               a.t_.busy, b.t_.busy);
}

/* ---- 2. jobs and a thread -------------------------------------------------------------- */

struct job_puller {
    coro_t co;
    coro_t *g;
    intptr_t v, last;
    struct tally t_;
};

static int job_body(coro_t *co)
{
    struct job_puller *p = CORO_SELF(co, struct job_puller);
    CORO_BEGIN(co);
    p->last = -1;
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(p->g, &p->v));
        if (CORO_RESULT(co) == 0)
            break;
        if (CORO_RESULT(co) == 1)
            add(&p->t_, p->v, &p->last);
        else {
            SCEN_CHECK(CORO_RESULT(co) == -EBUSY, "await: %s", coro_strerror((int)CORO_RESULT(co)));
            p->t_.busy++;
            CORO_YIELD(co);
        }
    }
    CORO_END(co);
}

enum { JOBS = 4 };

static void jobs_and_a_thread(int workers, long n)
{
    coro_sched_t *s = scen_sched(workers);
    struct count g = { .n = n, .wait = 1 };
    struct job_puller j[JOBS];
    struct plain_puller t = { .g = &g.co };

    memset(j, 0, sizeof j);
    coro_gen_init(&g.co, count_body);
    for (int i = 0; i < JOBS; i++) {
        j[i].g = &g.co;
        SCEN_CHECK(coro_spawn(s, &j[i].co, job_body, NULL) == 0, "spawn");
    }
    pthread_create(&t.t, NULL, plain_main, &t);
    long count = 0;
    intptr_t sum = 0;
    for (int i = 0; i < JOBS; i++) {
        join_r(&j[i].co);
        count += j[i].t_.count;
        sum += j[i].t_.sum;
    }
    pthread_join(t.t, NULL);
    count += t.t_.count;
    sum += t.t_.sum;
    SCEN_CHECK(count == n, "workers %d: %ld values of %ld", workers, count, n);
    SCEN_CHECK(sum == (intptr_t)(n - 1) * n / 2, "workers %d: sums", workers);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
}

/* ---- 3. cancel against the value ------------------------------------------------------------- */

struct gated {
    coro_t co;
    coro_event_t ev;
    int i;
};

static int gated_body(coro_t *co)
{
    struct gated *g = CORO_SELF(co, struct gated);
    CORO_BEGIN(co);
    for (g->i = 1;; g->i++) {
        CORO_AWAIT(co, coro_event_wait(&g->ev, CORO_FOREVER));
        CORO_YIELD_VALUE(co, g->i);
    }
    CORO_END(co);
}

struct once {
    coro_t co;
    coro_t *g;
    intptr_t v;
};

static int once_body(coro_t *co)
{
    struct once *o = CORO_SELF(co, struct once);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_gen_await(o->g, &o->v));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static void cancel_rounds(int workers, int rounds)
{
    coro_sched_t *s = scen_sched(workers);
    int got = 0, cancelled = 0;

    for (int r = 0; r < rounds; r++) {
        struct gated g = { 0 };
        struct once o = { .g = &g.co };
        coro_event_init(&g.ev);
        coro_gen_init(&g.co, gated_body);
        SCEN_CHECK(coro_spawn(s, &o.co, once_body, NULL) == 0, "spawn");
        if (r & 1) {
            coro_cancel(&o.co);
            coro_event_set(&g.ev);
        } else {
            coro_event_set(&g.ev);
            coro_cancel(&o.co);
        }
        intptr_t res = join_r(&o.co);
        SCEN_CHECK(res == 1 || res == -ECANCELED, "round %d: %jd", r, (intmax_t)res);
        if (res == 1) {
            SCEN_CHECK(o.v == 1, "value %jd", (intmax_t)o.v);
            got++;
        } else {
            cancelled++;
        }
        int rc = coro_gen_close(&g.co);
        SCEN_CHECK(rc == 0, "round %d: close: %s", r, coro_strerror(rc));
        coro_event_destroy(&g.ev);
    }
    printf("  cancel, %d workers: %d values, %d cancelled\n", workers, got, cancelled);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long n = SCEN_N(mode, 20000, 200000, 2000000);
    int rounds = SCEN_N(mode, 200, 2000, 20000);

    printf("gen_pullers\n");
    plain_threads(n, 0, 0, 0);
    plain_threads(n / 4, 1, 0, 0);
    plain_threads(n / 4, 1, 1, 0);
    for (int i = 0; i < rounds; i++)    /* short ones: the end races a takeover */
        plain_threads(20, 1, i & 1, 1);
    printf("  %d short generators pulled by 2 threads: ok\n", rounds);
    for (int i = 0; i < SCEN_NWORKERS; i++)
        jobs_and_a_thread(scen_workers[i], n / 10);
    for (int i = 0; i < SCEN_NWORKERS; i++)
        cancel_rounds(scen_workers[i], rounds);
    printf("gen_pullers: ok\n");
    return 0;
}
