/* SPDX-License-Identifier: MIT */
/* Misuse: CORO_AWAIT in a helper that is not a coroutine body (no
 * CORO_BEGIN) on the switch back end.  It would save a resume point into the
 * helper and return a status word as the helper's value; refused because
 * only CORO_BEGIN declares the name every suspending macro uses.  The twin
 * makes the helper a body the caller runs with coro_call.
 * expect: coro__await_outside_a_coroutine_body__ */
#define CORO_USE_SWITCH 1
#include <corokit.h>

struct f { coro_t co; coro_t child; int i; };

#ifdef CORO_CF_MISUSE
static int helper(coro_t *co)
{
    CORO_AWAIT(co, coro_sleep(1000));
    return 1;
}
#else
static int helper(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(1000));
    CORO_RETURN(co, 1);
    CORO_END(co);
}
#endif

int f_body(coro_t *co);
int f_body(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    x->i = helper(co);
#else
    CORO_AWAIT(co, coro_call(&x->child, helper));
    x->i = (int)CORO_RESULT(co);
#endif
    CORO_RETURN(co, x->i);
    CORO_END(co);
}
