/* SPDX-License-Identifier: MIT */
/* Bodies of coro_gen_next_of's tests, compiled on the back end of the file
 * that includes this (test_gen_next_of.c: labels; test_gen_next_of_switch.c:
 * switch, where the named body is inlined into the pull): a body that pulls
 * its own generator, and one that stops inside its pull until the test lets
 * it go on (a second puller's window). */
#ifndef GEN_NEXT_OF_BODIES_H
#define GEN_NEXT_OF_BODIES_H

#include <semaphore.h>

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
