/* SPDX-License-Identifier: MIT */
/* tools/check-locals.sh --self-test: the correct twins of bad.c (state in
 * the frame; C locals only between two suspension points) must pass. */
#include <corokit.h>

struct f { coro_t co; int i, n, k; char buf[8]; };

int across_await(coro_t *co);
int across_await(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    x->n = x->i * 2;
    CORO_AWAIT(co, coro_sleep(1000));
    x->i = x->n;
    CORO_END(co);
}

int between(coro_t *co);
int between(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    for (x->k = 0; x->k < 3; x->k++) {
        int m = x->i + x->k;    /* used before the next suspension only */
        x->buf[x->k] = (char)m;
        CORO_YIELD(co);
    }
    x->i = x->buf[0];
    CORO_END(co);
}
