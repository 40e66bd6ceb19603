/* SPDX-License-Identifier: MIT */
/* Generators and the threads that pull them (include/corokit/gen.h, WHO
 * PULLS): the thread that pulled last keeps a generator and another takes
 * it over; pulls handed from thread to thread at every value, threads
 * that end, pulls nested deeper than a thread's marks, and the same with
 * membarrier(2) turned off (COROKIT_MEMBARRIER=0: every pull holds the
 * generator).  Races of pullers at once are in tests/stress/gen_pullers.c. */
#define _GNU_SOURCE
#include "fixture.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* 0, 1, .. n - 1 */
struct count {
    coro_t co;
    intptr_t i, n;
};

static int count_body(coro_t *co)
{
    struct count *g = CORO_SELF(co, struct count);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i);
    CORO_END(co);
}

/* ---- turns: threads that pull one value each in turn ---------------------------------- */

enum { TURNS = 3, TURN_VALUES = 3000 };

struct turns {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int turn;               /* whose pull is next */
    intptr_t next;          /* the value it must get */
    int bad;                /* a pull that gave anything but the next value */
    struct count g;
};

struct turn_thread {
    pthread_t t;
    int me;
    struct turns *s;
};

static void *turn_main(void *arg)
{
    struct turn_thread *tt = arg;
    struct turns *s = tt->s;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->turn != tt->me && s->next < TURN_VALUES)
            pthread_cond_wait(&s->cv, &s->lock);
        if (s->next >= TURN_VALUES)
            break;
        /* ordered after the last pull by the lock, as the rules ask */
        intptr_t v = -1;
        int r = coro_gen_next(&s->g.co, &v);
        if (r != 1 || v != s->next)
            s->bad++;
        s->next++;
        s->turn = (s->turn + 1) % TURNS;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* TURNS threads pull one value each in turn: every pull gives the next
 * value (a thread that takes the generator over never finds the last
 * one's pull still marked) */
static void take_turns(void)
{
    struct turns s = { .g.n = TURN_VALUES };
    struct turn_thread t[TURNS];
    intptr_t v;

    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.cv, NULL);
    cr_assert_eq(coro_gen_init(&s.g.co, count_body), 0);
    for (int i = 0; i < TURNS; i++) {
        t[i] = (struct turn_thread){ .me = i, .s = &s };
        cr_assert_eq(pthread_create(&t[i].t, NULL, turn_main, &t[i]), 0);
    }
    for (int i = 0; i < TURNS; i++)
        pthread_join(t[i].t, NULL);
    cr_assert_eq(s.bad, 0, "%d pulls out of turn", s.bad);
    cr_assert_eq(s.next, TURN_VALUES);
    cr_assert_eq(coro_gen_next(&s.g.co, &v), 0);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.lock);
}

Test(gen_threads, threads_that_pull_in_turn_each_get_the_next_value, .timeout = 60)
{
    take_turns();
}

/* ---- threads that end ---------------------------------------------------------------------- */

struct pull_n {
    pthread_t t;
    coro_t *g;
    int n;
    intptr_t sum;
    int bad;
};

static void *pull_n_main(void *arg)
{
    struct pull_n *p = arg;
    intptr_t v;

    for (int i = 0; i < p->n; i++) {
        if (coro_gen_next(p->g, &v) == 1)
            p->sum += v;
        else
            p->bad++;
    }
    return NULL;
}

Test(gen_threads, a_generator_kept_by_a_thread_that_ended_is_pulled_by_the_next, .timeout = 60)
{
    struct count g = { .n = 1000 };
    intptr_t v, sum = 0;

    cr_assert_eq(coro_gen_init(&g.co, count_body), 0);
    /* each thread ends keeping the generator; the next one (whose record
     * may be the ended thread's) and the main thread pull on */
    for (int k = 0; k < 8; k++) {
        struct pull_n p = { .g = &g.co, .n = 100 };
        cr_assert_eq(pthread_create(&p.t, NULL, pull_n_main, &p), 0);
        pthread_join(p.t, NULL);
        cr_assert_eq(p.bad, 0, "thread %d: %d pulls refused", k, p.bad);
        sum += p.sum;
        for (int i = 0; i < 25; i++) {
            cr_assert_eq(coro_gen_next(&g.co, &v), 1);
            sum += v;
        }
    }
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    cr_assert_eq(sum, 999 * 1000 / 2);
}

/* ---- pulls nested deeper than a thread's marks ------------------------------------------- */

enum { NEST = 10 };

/* level k pulls level k + 1 with coro_gen_next for each value; the last
 * pulls the counter; at its third value the innermost pulls the outermost
 * (its own generator, NEST levels up) */
struct nest {
    coro_t co;
    struct nest *below;
    struct count *leaf;
    struct nest *top;
    intptr_t v;
    int r;
    int self_pull;          /* the innermost's pull of the outermost */
};

static int nest_body(coro_t *co)
{
    struct nest *g = CORO_SELF(co, struct nest);
    CORO_BEGIN(co);
    for (;;) {
        g->r = g->below ? coro_gen_next(&g->below->co, &g->v) : coro_gen_next(&g->leaf->co, &g->v);
        if (g->r != 1)
            break;
        if (!g->below && g->v == 2) {
            intptr_t x;
            g->self_pull = coro_gen_next(&g->top->co, &x);
        }
        CORO_YIELD_VALUE(co, g->v);
    }
    CORO_RETURN(co, g->r);
    CORO_END(co);
}

static void nested_pulls(void)
{
    struct nest lv[NEST];
    struct count leaf = { .n = 100 };
    intptr_t v, sum = 0;
    int r;

    memset(lv, 0, sizeof lv);
    cr_assert_eq(coro_gen_init(&leaf.co, count_body), 0);
    for (int k = 0; k < NEST; k++) {
        lv[k].below = k + 1 < NEST ? &lv[k + 1] : NULL;
        lv[k].leaf = &leaf;
        lv[k].top = &lv[0];
        cr_assert_eq(coro_gen_init(&lv[k].co, nest_body), 0);
    }
    for (int round = 0; round < 2; round++) {   /* the second: all kept by this thread */
        while ((r = coro_gen_next(&lv[0].co, &v)) == 1)
            sum += v;
        cr_assert_eq(r, 0);
        if (round == 0) {
            cr_assert_eq(lv[NEST - 1].self_pull, -EBUSY, "%d", lv[NEST - 1].self_pull);
            cr_assert_eq(sum, 99 * 100 / 2);
            /* again, now that every level is kept by this thread */
            memset(lv, 0, sizeof lv);
            memset(&leaf, 0, sizeof leaf);
            leaf.n = 100;
            cr_assert_eq(coro_gen_init(&leaf.co, count_body), 0);
            for (int k = 0; k < NEST; k++) {
                lv[k].below = k + 1 < NEST ? &lv[k + 1] : NULL;
                lv[k].leaf = &leaf;
                lv[k].top = &lv[0];
                cr_assert_eq(coro_gen_init(&lv[k].co, nest_body), 0);
            }
            sum = 0;
        }
    }
    cr_assert_eq(lv[NEST - 1].self_pull, -EBUSY, "%d", lv[NEST - 1].self_pull);
    cr_assert_eq(sum, 99 * 100 / 2);
}

Test(gen_threads, pulls_nested_deeper_than_a_thread_s_marks_still_refuse_a_body_pulling_itself,
     .timeout = 30)
{
    nested_pulls();
}

/* ---- membarrier(2) off ------------------------------------------------------------------------- */

/* each test runs in its own process: the first pull reads the variable */
Test(gen_threads, with_membarrier_off_every_pull_holds_and_the_rules_stay, .timeout = 60)
{
    cr_assert_eq(setenv("COROKIT_MEMBARRIER", "0", 1), 0);
    take_turns();
    nested_pulls();

    struct count g = { .n = 1000 };
    struct pull_n a = { .g = &g.co, .n = 400 }, b = { .g = &g.co, .n = 400 };
    intptr_t v, sum = 0;
    cr_assert_eq(coro_gen_init(&g.co, count_body), 0);
    pthread_create(&a.t, NULL, pull_n_main, &a);
    pthread_join(a.t, NULL);
    pthread_create(&b.t, NULL, pull_n_main, &b);
    pthread_join(b.t, NULL);
    cr_assert_eq(a.bad + b.bad, 0);
    while (coro_gen_next(&g.co, &v) == 1)
        sum += v;
    cr_assert_eq(a.sum + b.sum + sum, 999 * 1000 / 2);
}
