/* SPDX-License-Identifier: MIT */
/* Misuse: coro_call of a function that is not a body (it returns void and
 * takes the user's frame).  Refused: incompatible pointer types.
 * expect: incompatible */
#include <corokit.h>

struct child { coro_t co; int n; };
struct parent { coro_t co; struct child c; };

void not_a_body(struct child *c);
void not_a_body(struct child *c) { c->n++; }

int child_body(coro_t *co);
int child_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

int parent_body(coro_t *co);
int parent_body(coro_t *co)
{
    struct parent *p = CORO_SELF(co, struct parent);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    CORO_AWAIT(co, coro_call(&p->c.co, not_a_body));
#else
    CORO_AWAIT(co, coro_call(&p->c.co, child_body));
#endif
    CORO_END(co);
}
