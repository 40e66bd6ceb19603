/* SPDX-License-Identifier: MIT */
/* Select branches in fd slots: a select's readable/writable branch waits
 * in the fd's slot as a job would (lib/sync/select.c makes the record;
 * the readiness event's part is proxy_fire in lib/io/io_impl.h).
 *
 * The branch parks its record (CORO__FL_PROXY) in the fd's slot like a
 * job, without a timer (the select's own wait has it).  Whoever takes a
 * record off a slot claims its select under the entry lock (the record's
 * hook takes the select's lot bucket next: entry lock, then that bucket;
 * nothing takes them the other way round), and the owner's
 * coro_select_end unlinks the record under the same entry lock: once it
 * has, no claim runs or starts, so the record may go.  A claim that fails
 * (another branch won) gives the edge back (the ready bit is set again).
 * Strictly the next waiter would not need it - every wait tries its
 * operation before it parks - but an edge taken by nobody stays as if the
 * record had never been there.
 */
#include "io/io_impl.h"

int coro__io_sel_link(struct coro__io *io, coro_t *p, int fd, int dir)
{
    CORO__IO_KEEP_ERRNO();
    struct fd_entry *e = ent_get(io, fd, true);
    int rc = 0;

    if (!e)
        return fd < 0 || (uint32_t)fd >= MAX_FDS ? -EBADF : -ENOMEM;
    ent_lock(e);
    uint8_t bit = dir == CORO__DIR_RD ? RD_BIT : WR_BIT;
    if (!(e->dirs & bit) || !e->reg)
        rc = coro__io_ent_register(io, e, fd, bit);
    if (rc == 0 && e->w[dir])
        rc = -EBUSY;        /* one reader and one writer per fd */
    if (rc == 0) {
        e->w[dir] = p;
        waiters_add(io, 1);
    }
    ent_unlock(e);
    return rc;
}

void coro__io_sel_unlink(struct coro__io *io, coro_t *p, int fd, int dir)
{
    struct fd_entry *e = ent_get(io, fd, false);

    if (!e)
        return;
    ent_lock(e);
    if (e->w[dir] == p) {
        e->w[dir] = NULL;
        waiters_add(io, -1);
    }
    ent_unlock(e);
}
