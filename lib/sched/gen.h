/* SPDX-License-Identifier: MIT */
/* The generators' private parts shared by lib/sched/gen.c (the pulls) and
 * lib/sched/gen_self.c (the threads' records: gen.c WHO PULLS, Records).
 * Layer 1 (scheduling). */
#ifndef COROKIT_SCHED_GEN_H
#define COROKIT_SCHED_GEN_H

#include "sched/sched.h"

/* the record of a thread that has none: slot[0] is never free, so that
 * gen.h's inline pulls go out of line; nobody writes it */
extern struct coro__gen_self coro__gen_none;

/* the calling thread's record (gen.h, set by coro__gen_record) */
extern __thread struct coro__gen_self *coro__gen_me __attribute__((tls_model("initial-exec")));

/* the calling thread's record, made at its first call; NULL where
 * membarrier(2) is missing or memory ran out (its pulls then hold).  Any
 * thread; takes a lock only at a thread's first call. */
struct coro__gen_self *coro__gen_record(void);

#endif
