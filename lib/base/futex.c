/* SPDX-License-Identifier: MIT */
/* futex wait and wake, leaving the caller's errno alone. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

int coro__futex_wait(uint32_t *addr, uint32_t expect, int64_t deadline_ns)
{
    struct timespec ts, *tp = NULL;

    if (deadline_ns >= 0) {
        ts.tv_sec = deadline_ns / 1000000000;
        ts.tv_nsec = deadline_ns % 1000000000;
        tp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline.  errno
     * is the caller's (the thread may be a user's, or run jobs): the
     * syscall's is read, then the caller's put back */
    int e = errno;
    long r = syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, expect, tp, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    int rc = r == 0 || errno != ETIMEDOUT ? 0 : -ETIMEDOUT;  /* EAGAIN, EINTR: look again */
    errno = e;
    return rc;
}

void coro__futex_wake(uint32_t *addr, int n)
{
    int e = errno;      /* the caller's, as above */
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
    errno = e;
}
