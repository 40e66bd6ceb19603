/* SPDX-License-Identifier: MIT */
/* private, layer 4 (sync): what the files of sync/ share - the selectable
 * operations of events, channels, semaphores and rwlocks, the text that
 * names a holder, the destroy of an object waited on under its address.
 * Includes io/ and what is below it.  See docs/architecture.md. */
#ifndef COROKIT_SYNC_H_PRIV
#define COROKIT_SYNC_H_PRIV

#include "io/io.h"

/* the selectable operations of sync/ */
extern const struct coro__sync_ops coro__event_wait_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_recv_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_send_ops CORO__HIDDEN;

/* the text naming an owner (a job's root frame or a thread token,
 * coro__thread_token) for coro_sched_dump: "held by job" and its address,
 * or "held by a plain thread"; empty for 0 */
CORO__HIDDEN void coro__sync_holder_text(uintptr_t owner, char *buf, size_t len);

/* the selectable operations of sync/sem.c and sync/rwlock.c */
extern const struct coro__sync_ops coro__sem_acquire_ops CORO__HIDDEN;
extern const struct coro__held_ops coro__rwlock_read_ops CORO__HIDDEN;
extern const struct coro__held_ops coro__rwlock_write_ops CORO__HIDDEN;
/* a select's rwlock branch binds the identity of who selects (a job's root
 * frame, a thread token) in its record's arg[1].i */
CORO__HIDDEN bool coro__rwlock_ok(const coro_rwlock_t *rw);

/* the destroy of an object whose waiters park under its address: 0 and
 * the magic cleared when no job waits on it, -EBUSY otherwise.  Both
 * happen under the bucket's lock, which a waiter holds while it parks:
 * the check sees every job parked before it. */
static inline int coro__sync_retire(const void *key, uint32_t *magic)
{
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    bool busy = coro__parklot_waiting(b, key);
    if (!busy)
        *magic = 0;
    coro__parklot_unlock(b);
    return busy ? -EBUSY : 0;
}

#endif
