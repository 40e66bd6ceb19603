/* SPDX-License-Identifier: MIT */
/* futex wait/wake, the monotonic clock, deadlines and timerfds. */
#include <errno.h>
#include <stdlib.h>
#if defined(__x86_64__) && defined(__GNUC__)
# include <cpuid.h>
#endif
#include <string.h>
#include <linux/futex.h>
#if defined(__has_include)
# if __has_include(<linux/membarrier.h>)
#  include <linux/membarrier.h>
#  define CORO__HAVE_MEMBARRIER 1
# endif
#endif
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

__thread const int64_t *coro__tls_vclock;

int64_t coro__now(void)
{
    struct timespec ts;

    /* one thread-local load and a branch laid out as not taken: a
     * virtual clock is for tests */
    const int64_t *v = coro__tls_vclock;
    if (CORO__UNLIKELY(v != NULL))
        return __atomic_load_n(v, __ATOMIC_RELAXED);     /* written by its driver only */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

bool coro__membarrier_fail;
bool coro__has_prefetchw;

void coro__cpu_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    /* CPUID 0x80000001: ECX bit 8 = PRFCHW (3DNowPrefetch) */
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
        /* relaxed: every create stores the same bit (coro__prefetch_w) */
        __atomic_store_n(&coro__has_prefetchw, (c >> 8) & 1, __ATOMIC_RELAXED);
#endif
}

#if defined(CORO__HAVE_MEMBARRIER) && defined(SYS_membarrier)
int coro__membarrier_register(void)
{
    const char *e = getenv("COROKIT_MEMBARRIER");

    if (e && strcmp(e, "0") == 0)
        return -ENOSYS;     /* turned off: as if the kernel had none */
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
        !(q & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
        return -ENOSYS;
    /* per process, and cheap once done: the kernel returns at once */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) < 0)
        return errno == EPERM || errno == EINVAL ? -ENOSYS : -errno;
    return 0;
}

int coro__membarrier_heavy(void)
{
    if (__atomic_load_n(&coro__membarrier_fail, __ATOMIC_RELAXED))
        return -EPERM;
    int e = errno, rc = 0;     /* the caller's errno, as coro__futex_wait */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) < 0)
        rc = -errno;
    errno = e;
    return rc;
}
#else
int coro__membarrier_register(void)
{
    return -ENOSYS;
}

int coro__membarrier_heavy(void)
{
    return -ENOSYS;     /* never called: coro__membarrier_register failed */
}
#endif

int64_t coro__deadline(int64_t timeout)
{
    if (timeout < 0)
        return -1;      /* CORO_FOREVER (others were refused before) */
    int64_t now = coro__now();
    return timeout > INT64_MAX - now ? -1 : now + timeout;
}

void coro__timerfd_arm(int tfd, int64_t d)
{
    struct itimerspec its = { { 0, 0 }, { 0, 0 } };

    if (CORO__UNLIKELY(coro__tls_vclock != NULL))
        return;
    if (d != INT64_MAX) {
        if (d <= 0)
            d = 1;      /* 0 would disarm */
        its.it_value.tv_sec = d / 1000000000;
        its.it_value.tv_nsec = d % 1000000000;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}
