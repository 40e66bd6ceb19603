/* SPDX-License-Identifier: MIT */
/* corokit - stackless coroutines on pinned workers, with per-job CPU
 * affinity and priority, and a dedicated I/O thread.  The one header users
 * include.  See docs/guide.md. */
#ifndef COROKIT_H
#define COROKIT_H

#include "corokit/version.h"
#include "corokit/error.h"
#include "corokit/cpuset.h"
#include "corokit/coro.h"
#include "corokit/sched.h"
#include "corokit/trace.h"
#include "corokit/io.h"
#include "corokit/sync.h"
#include "corokit/gen.h"

#endif
