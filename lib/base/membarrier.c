/* SPDX-License-Identifier: MIT */
/* membarrier(2): the heavy side of the asymmetric fences (base/base.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#if defined(__has_include)
# if __has_include(<linux/membarrier.h>)
#  include <linux/membarrier.h>
#  define CORO__HAVE_MEMBARRIER 1
# endif
#endif
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"

#ifdef CORO_TEST_HOOKS
bool coro__membarrier_fail;
#endif

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
    if (CORO__HOOK(coro__membarrier_fail, false))
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
