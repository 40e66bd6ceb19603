/* SPDX-License-Identifier: MIT */
/* Misuse: CORO_SELF on a frame struct whose header is not a member named
 * `co` (here `hdr`).  Refused: offsetof names no such member.
 * expect: no member named|has no member */
#include <corokit.h>

#ifdef CORO_CF_MISUSE
struct f { coro_t hdr; int i; };
#else
struct f { coro_t co; int i; };
#endif

int f_body(coro_t *co);
int f_body(coro_t *co)
{
    struct f *x = CORO_SELF(co, struct f);
    CORO_BEGIN(co);
    CORO_RETURN(co, x->i);
    CORO_END(co);
}
