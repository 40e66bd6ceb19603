/* SPDX-License-Identifier: MIT */
/* Misuse: a body without CORO_END.  Besides the unbalanced brace, the
 * compiler names the mistake: label 'coro__this_body_lacks_CORO_END__'.
 * expect: coro__this_body_lacks_CORO_END__ */
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
