/* SPDX-License-Identifier: MIT */
/* coro_gen_next_of (include/corokit/gen.h): the pull with the generator's
 * body named, its bodies here on the default (labels) back end, where the
 * named body is called directly.  It keeps every promise of coro_gen_next:
 * the values, the end and the error, the refusals, a wrong or NULL body
 * named, yield-from chains of other bodies, one puller at a time, a body
 * that awaits, close through a chain, and threads that take turns.  The
 * inlined pull (the switch back end) is test_gen_next_of_switch.c. */
#define _GNU_SOURCE
#include "fixture.h"
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include "gen_next_of_bodies.h"

static int other_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, -1);
    CORO_END(co);
}

Test(gen_next_of, gives_every_value_then_0_forever, .timeout = 10)
{
    pull_all_of(100);
}

Test(gen_next_of, a_body_that_ends_with_an_error_gives_it_once_then_0, .timeout = 10)
{
    struct count g = { .n = 1, .err = -EIO };
    intptr_t v;

    coro_gen_init(&g.co, count_body);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 1);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), -EIO);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 0);
}

Test(gen_next_of, refuses_null_and_frames_that_are_not_generators, .timeout = 10)
{
    struct count g = { .n = 1 };
    coro_t plain = { 0 };
    intptr_t v = 77;

    cr_assert_eq(coro_gen_next_of(NULL, count_body, &v), -EINVAL);
    cr_assert_eq(coro_gen_next_of(&plain, count_body, &v), -EINVAL);
    coro_gen_init(&g.co, count_body);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, NULL), -EINVAL);
    cr_assert_eq(v, 77);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 1, "the refusals left it as it was");
    cr_assert_eq(v, 0);
}

Test(gen_next_of, a_wrong_or_null_body_named_pulls_as_coro_gen_next_does, .timeout = 10)
{
    struct count g = { .n = 10 };
    intptr_t v, k = 0;
    int r;

    coro_gen_init(&g.co, count_body);
    for (;;) {
        /* the hint changes from pull to pull: never trusted */
        coro_fn hint = k % 3 == 0 ? other_body : k % 3 == 1 ? NULL : count_body;
        if ((r = coro_gen_next_of(&g.co, hint, &v)) != 1)
            break;
        cr_assert_eq(v, k++);
    }
    cr_assert_eq(r, 0);
    cr_assert_eq(k, 10);
}

/* ---- yield-from chains ------------------------------------------------------------------- */

/* a level of a chain: every value of the one below (a level or the counter) */
struct level {
    coro_t co;
    struct level *below;
    struct count *leaf;
};

static int level_body(coro_t *co)
{
    struct level *g = CORO_SELF(co, struct level);
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1000);
    if (g->below) {
        coro_gen_init(&g->below->co, level_body);
        CORO_YIELD_FROM(co, &g->below->co);
    } else {
        CORO_YIELD_FROM(co, &g->leaf->co);
    }
    CORO_END(co);
}

Test(gen_next_of, pulls_through_a_yield_from_chain_whichever_body_is_named, .timeout = 10)
{
    struct level lv[3];
    struct count leaf = { .n = 20 };
    coro_fn hints[] = { level_body, count_body, NULL, other_body };

    for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++) {
        intptr_t v, sum = 0;
        int r, n = 0;
        memset(lv, 0, sizeof lv);
        memset(&leaf, 0, sizeof leaf);
        leaf.n = 20;
        coro_gen_init(&leaf.co, count_body);
        for (int k = 0; k < 3; k++) {
            lv[k].below = k + 1 < 3 ? &lv[k + 1] : NULL;
            lv[k].leaf = &leaf;
        }
        coro_gen_init(&lv[0].co, level_body);
        while ((r = coro_gen_next_of(&lv[0].co, hints[h], &v)) == 1) {
            sum += v;
            n++;
        }
        cr_assert_eq(r, 0, "hint %zu: %d", h, r);
        cr_assert_eq(n, 3 + 20, "hint %zu", h);
        cr_assert_eq(sum, 3 * 1000 + 19 * 20 / 2, "hint %zu", h);
    }
}

Test(gen_next_of, close_through_a_yield_from_chain_ends_every_level, .timeout = 10)
{
    struct level lv[3] = { 0 };
    struct count leaf = { .n = 20 };
    intptr_t v;

    coro_gen_init(&leaf.co, count_body);
    for (int k = 0; k < 3; k++) {
        lv[k].below = k + 1 < 3 ? &lv[k + 1] : NULL;
        lv[k].leaf = &leaf;
    }
    coro_gen_init(&lv[0].co, level_body);
    for (int i = 0; i < 5; i++)         /* 3 levels' 1000s, then 0 and 1 of the counter */
        cr_assert_eq(coro_gen_next_of(&lv[0].co, count_body, &v), 1);
    cr_assert_eq(v, 1);
    cr_assert_eq(coro_gen_close(&lv[0].co), 0);
    cr_assert_eq(coro_gen_next_of(&lv[0].co, count_body, &v), 0);
    cr_assert_eq(coro_gen_next_of(&leaf.co, count_body, &v), 0, "the innermost is closed too");
    cr_assert_eq(coro_gen_next_of(&lv[2].co, level_body, &v), 0);
}

/* ---- one puller at a time ---------------------------------------------------------------- */

Test(gen_next_of, a_body_that_pulls_its_own_generator_gets_EBUSY, .timeout = 10)
{
    struct self_pull g = { 0 };
    intptr_t v;

    coro_gen_init(&g.co, self_pull_body);
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 1);   /* kept from now on */
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 1);
    cr_assert_eq(v, 2);
    cr_assert_eq(g.got, -EBUSY);
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 0);
}

Test(gen_next_of, a_second_puller_while_a_pull_runs_gets_EBUSY_and_the_pull_goes_on,
     .timeout = 30)
{
    struct stops g = { 0 };
    pthread_t t;
    intptr_t v;
    void *res;

    sem_init(&g.in, 0, 0);
    sem_init(&g.go, 0, 0);
    coro_gen_init(&g.co, stops_body);
    cr_assert_eq(coro_gen_next_of(&g.co, stops_body, &v), 1);   /* this thread keeps it */
    cr_assert_eq(pthread_create(&t, NULL, pull_stops, &g), 0);  /* takes it over, stops */
    sem_wait(&g.in);
    cr_assert_eq(coro_gen_next_of(&g.co, stops_body, &v), -EBUSY);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EBUSY);
    cr_assert_eq(coro_gen_close(&g.co), -EBUSY);
    sem_post(&g.go);
    pthread_join(t, &res);
    cr_assert_eq((intptr_t)res, 2);
    cr_assert_eq(coro_gen_next_of(&g.co, stops_body, &v), 0);
    sem_destroy(&g.in);
    sem_destroy(&g.go);
}

/* ---- threads ---------------------------------------------------------------------------- */

struct pull_n {
    pthread_t t;
    coro_t *g;
    int n, got, last;
    intptr_t sum;
};

static void *pull_n_main(void *arg)
{
    struct pull_n *p = arg;
    intptr_t v;
    for (p->got = 0; p->got < p->n; p->got++) {
        if ((p->last = coro_gen_next_of(p->g, count_body, &v)) != 1)
            break;
        p->sum += v;
    }
    return NULL;
}

Test(gen_next_of, a_generator_that_ended_in_one_thread_gives_0_in_the_next, .timeout = 30)
{
    struct count g = { .n = 50 };
    struct pull_n a = { .g = &g.co, .n = 1000 }, b = { .g = &g.co, .n = 10 };
    intptr_t v;

    coro_gen_init(&g.co, count_body);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 1);   /* kept by this thread */
    cr_assert_eq(pthread_create(&a.t, NULL, pull_n_main, &a), 0);
    pthread_join(a.t, NULL);
    cr_assert_eq(a.got, 49, "%d", a.got);
    cr_assert_eq(a.last, 0, "it ended in that thread");
    cr_assert_eq(a.sum, 49 * 50 / 2);
    cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 0);
    cr_assert_eq(pthread_create(&b.t, NULL, pull_n_main, &b), 0);
    pthread_join(b.t, NULL);
    cr_assert_eq(b.got, 0);
    cr_assert_eq(b.last, 0);
    cr_assert_eq(coro_gen_close(&g.co), 0);
}

/* ---- a body that awaits ------------------------------------------------------------------ */

struct waits {
    coro_t co;
    coro_event_t *ev;
};

static int waits_body(coro_t *co)
{
    struct waits *g = CORO_SELF(co, struct waits);
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1);
    CORO_AWAIT(co, coro_event_wait(g->ev, CORO_FOREVER));
    CORO_YIELD_VALUE(co, 2);
    CORO_END(co);
}

Test(gen_next_of, a_body_that_awaits_gives_EWOULDBLOCK_until_closed, .timeout = 10)
{
    coro_event_t ev;
    struct waits g = { .ev = &ev };
    intptr_t v;

    coro_event_init(&ev);
    coro_gen_init(&g.co, waits_body);
    cr_assert_eq(coro_gen_next_of(&g.co, waits_body, &v), 1);
    cr_assert_eq(coro_gen_next_of(&g.co, waits_body, &v), -EWOULDBLOCK);
    cr_assert_eq(coro_gen_next_of(&g.co, waits_body, &v), -EWOULDBLOCK, "it stays where it was");
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK);
    cr_assert_eq(coro_gen_close(&g.co), 0);
    cr_assert_eq(coro_gen_next_of(&g.co, waits_body, &v), 0);
    coro_event_destroy(&ev);
}
