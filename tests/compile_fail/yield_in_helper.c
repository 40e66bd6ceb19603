/* SPDX-License-Identifier: MIT */
/* Misuse: CORO_YIELD in a plain helper function (no CORO_BEGIN), on the
 * default back end; the twin yields in the body itself.
 * expect: coro__await_outside_a_coroutine_body__ */
#include <corokit.h>

struct f { coro_t co; int i; };

#ifdef CORO_CF_MISUSE
static void helper(coro_t *co)
{
    do {
        CORO_YIELD(co);
    } while (0);
}
#endif

int f_body(coro_t *co);
int f_body(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    helper(co);
#else
    CORO_YIELD(co);
#endif
    x->i = 1;
    CORO_RETURN(co, x->i);
    CORO_END(co);
}
