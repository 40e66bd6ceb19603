/* SPDX-License-Identifier: MIT */
/* The I/O layer's hooks while corokit is built without one: nothing ever
 * waits on I/O.  Replaced by lib/io_epoll.c. */
#include "internal.h"

int coro__io_create(coro_sched_t *s, struct coro__io **out)
{
    (void)s;
    *out = NULL;
    return 0;
}

void coro__io_cancel_all(struct coro__io *io) { (void)io; }
void coro__io_cancel_jobs(struct coro__io *io) { (void)io; }
void coro__io_destroy(struct coro__io *io) { (void)io; }
void coro__io_kick(struct coro__io *io) { (void)io; }
bool coro__io_pending(struct coro__io *io) { (void)io; return false; }

int coro__io_poll(struct coro__io *io, int64_t timeout_ns)
{
    (void)io;
    (void)timeout_ns;
    return -EAGAIN;
}
int coro__io_dump(struct coro__io *io, struct coro__dump *d) { (void)io; (void)d; return 0; }
