/* SPDX-License-Identifier: MIT */
/* corokit: the built-in tracer - a flight recorder of what the scheduler
 * did, written as a Chrome trace (docs/observability.md). */
#ifndef COROKIT_TRACE_H
#define COROKIT_TRACE_H

#include "sched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tracer is on when the scheduler was created with
 * coro_sched_config_t.trace_events > 0, or with COROKIT_TRACE=FILE in the
 * environment; then coro_sched_destroy also writes the trace to FILE (a
 * failure is reported on stderr).  Each worker, the I/O thread and the
 * plain threads (one shared ring) keep their last N events: spawns, job
 * steps (body, priority, affinity class, why the step ended: done, yield,
 * the await it suspended on), wakes and where they came from, steals,
 * parks and unparks, the I/O thread's epoll_wait calls. */

/* coro_sched_trace_write - write what s's tracer holds now to path as a
 * Chrome trace JSON (Perfetto and chrome://tracing open it; tools/timeline
 * draws it): one lane per worker named as its thread (coro-w<cpu>), one
 * for the I/O thread (coro-io), one for the plain threads; job steps as
 * complete ("X") events named by the body's symbol, wakes, steals and
 * unparks as instant events.  The workers keep running: events recorded
 * while the rings are read may be missing.  Returns 0, -EINVAL (NULL s,
 * NULL or empty path), -EOPNOTSUPP (ENOTSUP, the same code on Linux:
 * tracing is off for s), -ENOMEM, -EIO (writing failed), or the -errno of opening or writing the
 * file.  Any thread, jobs included
 * (it blocks on the file). */
CORO_EXTERN int coro_sched_trace_write(coro_sched_t *s, const char *path);

#ifdef __cplusplus
}
#endif

#endif
