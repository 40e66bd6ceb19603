/* SPDX-License-Identifier: MIT */
/* coro_gen_chan_t: the items of a channel as a generator (include/corokit/
 * gen.h).  Layer 4 (sync): its body receives with coro_chan_recv, so a
 * pull from plain code takes an item that is there and gives -EWOULDBLOCK
 * on an empty channel, and a pull in a job waits for one. */
#include <errno.h>

#include "sync/sync.h"

static int gen_chan_body(coro_t *co)
{
    coro_gen_chan_t *g = CORO_SELF(co, coro_gen_chan_t);

    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(g->ch, &g->item, g->timeout));
        if (CORO_RESULT(co) == -EPIPE)  /* closed and drained: the end */
            break;
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
        CORO_YIELD_VALUE(co, g->item);
    }
    CORO_END(co);
}

int coro_gen_chan_init(coro_gen_chan_t *g, coro_chan_t *ch, int64_t timeout_ns)
{
    if (!g || !ch || (timeout_ns < 0 && timeout_ns != CORO_FOREVER))
        return -EINVAL;
    int rc = coro_gen_init(&g->co, gen_chan_body);
    if (rc < 0)
        return rc;
    g->ch = ch;
    g->timeout = timeout_ns;
    return 0;
}
