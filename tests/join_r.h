/* SPDX-License-Identifier: MIT */
/* join_r / block_on_r: coro_join and coro_block_on folded into one value,
 * the job's result or the call's -errno, for tests whose jobs return
 * values that cannot be mistaken for an error (or that check the error
 * itself).  Programs keep the two apart (coro_join's *result). */
#ifndef COROKIT_TESTS_JOIN_R_H
#define COROKIT_TESTS_JOIN_R_H

#include <corokit.h>

static inline intptr_t join_r(coro_t *co)
{
    intptr_t r = 0;
    int rc = coro_join(co, &r);
    return rc < 0 ? rc : r;
}

static inline intptr_t block_on_r(coro_sched_t *s, coro_t *co, coro_fn fn,
                                  const coro_spawn_opts_t *opts)
{
    intptr_t r = 0;
    int rc = coro_block_on(s, co, fn, opts, &r);
    return rc < 0 ? rc : r;
}

#endif
