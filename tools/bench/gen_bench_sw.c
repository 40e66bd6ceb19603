/* SPDX-License-Identifier: MIT */
/* tools/bench/gen_bench_sw.c - gen_bench's `plain` shape written as the
 * guide shows a hot generator pulled from plain code: the body in a file
 * that uses the switch back end, pulled in that file with coro_gen_next_of
 * naming the body, so that the compiler inlines the body into the loop (it
 * never inlines a function with a computed goto: the labels back end).
 * gen_bench.c's `plain_of` and `plain_next` shapes pull the same counter
 * compiled with the default (labels) back end. */
#define CORO_USE_SWITCH 1
#include <string.h>
#include <corokit.h>

struct count_sw {
    coro_t co;
    intptr_t i, n;
};

static int count_sw_body(coro_t *co)
{
    struct count_sw *g = CORO_SELF(co, struct count_sw);
    CORO_BEGIN(co);
    for (g->i = 0; g->i < g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i);
    CORO_END(co);
}

static struct count_sw counter;

coro_t *gen_bench_sw_make(intptr_t n);
intptr_t gen_bench_sw_pull(coro_t *g);

/* 0, 1, .. n - 1 */
coro_t *gen_bench_sw_make(intptr_t n)
{
    memset(&counter, 0, sizeof counter);
    counter.n = n;
    coro_gen_init(&counter.co, count_sw_body);
    return &counter.co;
}

intptr_t gen_bench_sw_pull(coro_t *g)
{
    intptr_t v, sum = 0;
    while (coro_gen_next_of(g, count_sw_body, &v) == 1)
        sum += v;
    return sum;
}
