/* SPDX-License-Identifier: MIT */
/* Bodies of coro_gen_next_of's tests, compiled on the back end of the file
 * that includes this (test_gen_next_of.c: labels; test_gen_next_of_switch.c:
 * switch, where the named body is inlined into the pull): a count and its
 * whole pull, a body that pulls its own generator, and one that stops
 * inside its pull until the test lets it go on (a second puller's
 * window). */
#ifndef GEN_NEXT_OF_BODIES_H
#define GEN_NEXT_OF_BODIES_H

#include <semaphore.h>

/* 0, 1, .. n - 1; ends with err when err < 0 */
struct count {
    coro_t co;
    intptr_t i, n;
    int err;
};

static int count_body(coro_t *co)
{
    struct count *g = CORO_SELF(co, struct count);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i);
    if (g->err < 0)
        CORO_RETURN(co, g->err);
    CORO_END(co);
}

/* a count of n pulled with its body named: every value in order, then 0,
 * and 0 again from either pull */
static void pull_all_of(intptr_t n)
{
    struct count g = { .n = n };
    intptr_t v, sum = 0;
    int r, k = 0;

    cr_assert_eq(coro_gen_init(&g.co, count_body), 0);
    while ((r = coro_gen_next_of(&g.co, count_body, &v)) == 1) {
        cr_assert_eq(v, k++);
        sum += v;
    }
    cr_assert_eq(r, 0);
    cr_assert_eq(k, n);
    cr_assert_eq(sum, (n - 1) * n / 2);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(coro_gen_next_of(&g.co, count_body, &v), 0);
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
}

struct self_pull {
    coro_t co;
    int got;        /* its pull of itself */
};

static int self_pull_body(coro_t *co)
{
    struct self_pull *g = CORO_SELF(co, struct self_pull);
    intptr_t x;
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1);
    g->got = coro_gen_next_of(co, self_pull_body, &x);
    CORO_YIELD_VALUE(co, 2);
    CORO_END(co);
}

/* a body that stops inside its pull until the test lets it go on */
struct stops {
    coro_t co;
    sem_t in, go;
};

static int stops_body(coro_t *co)
{
    struct stops *g = CORO_SELF(co, struct stops);
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1);
    sem_post(&g->in);
    sem_wait(&g->go);
    CORO_YIELD_VALUE(co, 2);
    CORO_END(co);
}

/* a thread's pull of a stops generator: the value, or -1000 + its error */
static void *pull_stops(void *arg)
{
    struct stops *g = arg;
    intptr_t v = 0;
    int r = coro_gen_next_of(&g->co, stops_body, &v);
    return (void *)(intptr_t)(r == 1 ? v : -1000 + r);
}

#endif
