/* SPDX-License-Identifier: MIT */
/* Misuse: CORO_AWAIT of a plain value (an int, or a function's result that
 * is not a coro_await_t).  Refused: incompatible types in the assignment.
 * expect: incompatible types|assigning to */
#include <corokit.h>

struct f { coro_t co; };

int f_body(coro_t *co);
int f_body(coro_t *co)
{
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    CORO_AWAIT(co, 5);
#else
    CORO_AWAIT(co, coro_ready(5));
#endif
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}
