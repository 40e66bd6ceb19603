/* SPDX-License-Identifier: MIT */
/* Misuse: coro_mutex_trylock, the deprecated old name of
 * coro_mutex_try_lock (still declared and exported), used in new code.
 * Refused under -Werror with the deprecation message.
 * expect: coro_mutex_trylock.*is deprecated: use coro_mutex_try_lock */
#include <corokit.h>

int take(coro_mutex_t *m);
int take(coro_mutex_t *m)
{
#ifdef CORO_CF_MISUSE
    return coro_mutex_trylock(m, NULL);
#else
    return coro_mutex_try_lock(m);
#endif
}
