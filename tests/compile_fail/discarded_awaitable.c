/* SPDX-License-Identifier: MIT */
/* Misuse: an awaitable built and thrown away.  coro_read as a statement does
 * nothing at all (only CORO_AWAIT runs it); the reader meant to await it.
 * Refused: CORO_NODISCARD (warn_unused_result) under -Werror.
 * expect: warn_unused_result|ignoring return value */
#include <corokit.h>

struct reader { coro_t co; int fd; char buf[1]; };

int reader_body(coro_t *co);
int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
#ifdef CORO_CF_MISUSE
    coro_read(r->fd, r->buf, 1, CORO_FOREVER);
#else
    CORO_AWAIT(co, coro_read(r->fd, r->buf, 1, CORO_FOREVER));
#endif
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}
