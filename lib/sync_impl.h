/* SPDX-License-Identifier: MIT */
/* private: what lib/sync_*.c share with the parking lot (lib/lot.c). */
#ifndef COROKIT_SYNC_IMPL_H
#define COROKIT_SYNC_IMPL_H

#include "internal.h"

/* coro_t.flags: a select branch's record (a node of a coro_select_t).
 * Its args are in node->aw (arg[2].p = the coro_select_t), its own
 * result in node->result, its branch index in node->cls, and its claim
 * hook in node->fn: called by coro__lot_take under the record's bucket
 * lock, 0 = claimed (node->parent then is the select's owner to wake, or
 * NULL when the select was still arming), -1 = the select is over. */
#define CORO__FL_PROXY 2u

/* ---- the lot under its lock ------------------------------------------------
 *
 * Every sync object keeps its state under the lot bucket lock of its own
 * address, so that "look at the state, then wait" and "change the state,
 * then take a waiter" are atomic with the wait lists.  Keys k and k + 2
 * (k 8-aligned) share a bucket: a channel keeps its receivers on ch and its
 * senders on ch + 2.  Odd keys (a select's own key, sel + 1) live in a
 * separate set of buckets taken only after an even one (lock order: even
 * bucket -> odd bucket; never two of one kind).
 */
typedef struct coro__lotb coro__lotb_t;

CORO__HIDDEN coro__lotb_t *coro__lot_lock(const void *key);
CORO__HIDDEN void coro__lot_unlock(coro__lotb_t *b);

/* A wake list: waiters taken under a lock, woken after it. */
typedef struct coro__wl {
    coro_t *head, **tail;
} coro__wl_t;

static inline void coro__wl_init(coro__wl_t *wl)
{
    wl->head = NULL;
    wl->tail = &wl->head;
}

/* under b (NULL: key's bucket, which the caller holds): unlink the oldest
 * waiter of key that may still be woken and return it (NULL: none); its
 * timer goes with it.  A select branch's record is claimed through its
 * hook on the way; one whose select has already completed is dropped. */
CORO__HIDDEN coro_t *coro__lot_take(coro__lotb_t *b, const void *key);
/* under b: is anything (even a stale stand-in) waiting on key? */
CORO__HIDDEN bool coro__lot_waiting(coro__lotb_t *b, const void *key);
/* under b: append w (a thread's or a branch's record) to key's list */
CORO__HIDDEN void coro__lot_link(coro__lotb_t *b, const void *key, coro_t *w);
/* under b: park job on key with a timer at the absolute deadline (-1
 * none); registered for CORO_CANCEL.  0 (linked), or -ECANCELED (the
 * scheduler is cancelling), -ENOMEM (no memory for the timer), -ENOSYS
 * (no I/O layer); nothing linked then. */
CORO__HIDDEN int coro__lot_park(coro__lotb_t *b, const void *key, coro_t *job, int64_t deadline);
/* under b: unlink w from key's list if it is there; true if it was */
CORO__HIDDEN bool coro__lot_unlink(coro__lotb_t *b, const void *key, coro_t *w);
/* under b: unlink and return the first waiter of key, no claims (a
 * select's own key has one waiter: its owner) */
CORO__HIDDEN coro_t *coro__lot_pop_raw(coro__lotb_t *b, const void *key);
/* the waiter's operation arguments (job: its innermost frame's awaitable) */
CORO__HIDDEN coro_await_t *coro__lot_args(coro_t *w);
/* under the lock that took w: record w's result res and queue its wake-up */
CORO__HIDDEN void coro__wl_add(coro__wl_t *wl, coro_t *w, intptr_t res);
/* after unlocking: wake everyone on wl */
CORO__HIDDEN void coro__wl_wake(coro__wl_t *wl);
/* link stand-in me (zeroed, flags THREAD, aw = the args) on key under b
 * (locked by the caller), unlock b, and block until woken (its result) or
 * the absolute deadline (-1 none) passes: -ETIMEDOUT. */
CORO__HIDDEN intptr_t coro__lot_wait_thread(coro__lotb_t *b, const void *key, coro_t *me,
                                            int64_t deadline);

/* ---- sync operations --------------------------------------------------------
 *
 * One table per waitable operation.  try runs under the bucket lock of
 * key(args): it completes the operation (1, *res set, waiters it satisfied
 * added to wl) or says it must wait (0).  proxy, when not NULL, is the
 * select stand-in doing it: try then claims the select (coro__sel_claim_self)
 * before any side effect, and returns -1 when another branch already won.
 */
struct coro__sync_ops {
    struct coro_await_ops base;     /* first: aw->ops points here */
    const void *(*key)(const coro_await_t *args);
    int (*try)(coro_await_t *args, intptr_t *res, coro__wl_t *wl, coro_t *proxy);
};

static inline const struct coro__sync_ops *coro__sync_ops_of(const coro_await_t *aw)
{
    return (const struct coro__sync_ops *)(const void *)aw->ops;
}

/* the selectable operations */
extern const struct coro__sync_ops coro__event_wait_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_recv_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_send_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__done_sel_ops CORO__HIDDEN;   /* a job's end (coro.c) */

/* the arm of every sync awaitable (timeouts, cancel, park) */
CORO__HIDDEN int coro__sync_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);
/* the in-body part of a sync awaitable: try now; complete, or return aw to
 * be armed (timeout 0 and not ready: -ETIMEDOUT; a negative timeout other
 * than CORO_FOREVER: -EINVAL) */
CORO__HIDDEN coro_await_t coro__sync_await(coro_await_t aw);
/* the plain-thread blocking form; -EDEADLK inside a job */
CORO__HIDDEN intptr_t coro__sync_block(coro_await_t *args, int64_t timeout);
/* deadline from a relative timeout (-1: none) */
CORO__HIDDEN int64_t coro__deadline(int64_t timeout);

/* select (lib/sync_select.c): a select trying its own branch while
 * arming claims it first (under the branch's bucket lock); 0 or -1 (over) */
CORO__HIDDEN int coro__sel_claim_self(coro_t *proxy);
/* the timeout rule, shared by every sync call: CORO_FOREVER, 0 or > 0 */
static inline bool coro__timeout_ok(int64_t timeout)
{
    return timeout >= 0 || timeout == CORO_FOREVER;
}

/* identity of a plain thread for mutex ownership (odd, never a job) */
CORO__HIDDEN uintptr_t coro__thread_token(void);

#endif
