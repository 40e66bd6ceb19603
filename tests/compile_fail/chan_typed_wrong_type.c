/* SPDX-License-Identifier: MIT */
/* Misuse: a typed channel of int given to the send of a channel of
 * pointers (CORO_CHAN_TYPED): the wrappers are type-checked.  Refused
 * under -Werror.
 * expect: incompatible|incompatible-pointer-types */
#include <corokit.h>

CORO_CHAN_TYPED(fdchan, int);
CORO_CHAN_TYPED(msgchan, const char *);

struct tx { coro_t co; fdchan_t *fds; msgchan_t *msgs; };

int tx_body(coro_t *co);
int tx_body(coro_t *co)
{
    struct tx *t = CORO_SELF(co, struct tx);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    CORO_AWAIT(co, msgchan_send(t->fds, "hello", CORO_FOREVER));
#else
    CORO_AWAIT(co, msgchan_send(t->msgs, "hello", CORO_FOREVER));
#endif
    CORO_END(co);
}
