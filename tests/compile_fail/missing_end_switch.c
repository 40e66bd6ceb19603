/* SPDX-License-Identifier: MIT */
/* Misuse: a body without CORO_END, on the switch back end.  Besides the
 * unbalanced brace, the compiler names the mistake: label
 * 'coro__this_body_lacks_CORO_END__'.
 * expect: coro__this_body_lacks_CORO_END__ */
#define CORO_USE_SWITCH 1
#include <corokit.h>

struct f { coro_t co; int i; };

int f_body(coro_t *co);
int f_body(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    x->i = 1;
    CORO_YIELD(co);
    CORO_RETURN(co, x->i);
#ifndef CORO_CF_MISUSE
    CORO_END(co);
#endif
}
