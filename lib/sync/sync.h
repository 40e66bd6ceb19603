/* SPDX-License-Identifier: MIT */
/* private, layer 4 (sync): events, mutexes, semaphores, channels and
 * select.  Includes io/ and what is below it.  See docs/architecture.md. */
#ifndef COROKIT_SYNC_H_PRIV
#define COROKIT_SYNC_H_PRIV

#include "io/io.h"

/* the selectable operations of sync/ */
extern const struct coro__sync_ops coro__event_wait_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_recv_ops CORO__HIDDEN;
extern const struct coro__sync_ops coro__chan_send_ops CORO__HIDDEN;

#endif
