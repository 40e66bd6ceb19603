/* SPDX-License-Identifier: MIT */
/* tools/check-locals.sh --self-test: each function named on a "planted:"
 * line keeps the C local in parentheses across a suspension; the check
 * must report each.
 * Never compiled into the library or the tests. */
#include <corokit.h>

struct f { coro_t co; int i; };

/* planted: across_await (n) - declared before CORO_BEGIN, set, awaited, read */
int across_await(coro_t *co);
int across_await(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    int n;
    CORO_BEGIN(co);
    n = x->i * 2;
    CORO_AWAIT(co, coro_sleep(1000));
    x->i = n;
    CORO_END(co);
}

/* planted: across_yield (m) - declared with an initializer inside the body */
int across_yield(coro_t *co);
int across_yield(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    int m = x->i + 1;
    CORO_YIELD(co);
    x->i = m;
    CORO_END(co);
}

/* planted: loop_counter (k) - a `for` counter that lives across its yields */
int loop_counter(coro_t *co);
int loop_counter(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    for (int k = 0; k < 3; k++)
        CORO_YIELD(co);
    x->i = 3;
    CORO_END(co);
}

/* planted: buffer_across_await (buf) - a stack buffer filled, then awaited */
int buffer_across_await(coro_t *co);
int buffer_across_await(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    {
        char buf[8];
        buf[0] = (char)x->i;
        CORO_YIELD(co);
        x->i = buf[0];
    }
    CORO_END(co);
}
