/* SPDX-License-Identifier: MIT */
/* Misuse: a typed channel of a value bigger than a pointer
 * (CORO_CHAN_TYPED): refused at compile time; send a pointer to it.
 * expect: bigger than a pointer */
#include <corokit.h>

struct big { char name[32]; };

#ifdef CORO_CF_MISUSE
CORO_CHAN_TYPED(bigchan, struct big);
#else
CORO_CHAN_TYPED(bigchan, struct big *);
#endif
