/* SPDX-License-Identifier: MIT */
/* Misuse: CORO_SELF on a frame struct whose header is not a member named
 * `co` (here `hdr`).  Refused: offsetof names no such member.  The twin
 * names its body's parameter `self`: the member is `co` whatever the
 * pointer passed to CORO_SELF is called.
 * expect: no member named|has no member */
#include <corokit.h>

#ifdef CORO_CF_MISUSE
struct f { coro_t hdr; int i; };
#else
struct f { coro_t co; int i; };
#endif

int f_body(coro_t *self);
int f_body(coro_t *self)
{
    struct f *x = CORO_SELF(self, struct f);
    CORO_BEGIN(self);
    CORO_RETURN(self, x->i);
    CORO_END(self);
}
