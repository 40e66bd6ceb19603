/* SPDX-License-Identifier: MIT */
/* Misuse: a channel receive discarded as a statement (the sync awaitables
 * carry the attribute too).  Refused under -Werror.
 * expect: warn_unused_result|ignoring return value */
#include <corokit.h>

struct rx { coro_t co; coro_chan_t *ch; void *item; };

int rx_body(coro_t *co);
int rx_body(coro_t *co)
{
    struct rx *r = CORO_SELF(co, struct rx);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    coro_chan_recv(r->ch, &r->item, CORO_FOREVER);
#else
    CORO_AWAIT(co, coro_chan_recv(r->ch, &r->item, CORO_FOREVER));
#endif
    CORO_END(co);
}
