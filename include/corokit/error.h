/* corokit: error codes and their names. */
#ifndef COROKIT_ERROR_H
#define COROKIT_ERROR_H

#include <errno.h>

#if defined(__GNUC__) || defined(__clang__)
# define CORO_EXTERN __attribute__((visibility("default")))
#else
# define CORO_EXTERN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Every corokit call returns 0 or a count on success and a negative errno
 * value on failure; errno itself is never read or written on corokit's
 * behalf (a coroutine may resume on another thread).  These are the codes
 * the library itself produces; system calls may pass on others. */
#define CORO_ERRNO_MAP(X)                                                   \
    X(EINVAL,    "invalid argument")                                        \
    X(EBUSY,     "frame or object is still in use")                         \
    X(ENOMEM,    "out of memory")                                           \
    X(ESHUTDOWN, "scheduler is shut down")                                  \
    X(EDEADLK,   "call would block the worker running it")                  \
    X(ECANCELED, "operation cancelled")                                     \
    X(ETIMEDOUT, "timed out")                                               \
    X(EBADF,     "bad file descriptor")                                     \
    X(EAGAIN,    "resource temporarily unavailable")                        \
    X(EPIPE,     "channel or pipe closed")                                  \
    X(EPERM,     "operation not permitted")                                 \
    X(ENOSYS,    "not supported")                                           \
    X(ECHILD,    "no such child process")                                   \
    X(ESRCH,     "no such process")

/* coro_strerror - a human-readable message for rc (a negative errno, as the
 * library returns, or a positive one).  Never NULL; the string is static.
 * Thread-safe, never blocks. */
CORO_EXTERN const char *coro_strerror(int rc);

/* coro_err_name - the symbolic name of rc, e.g. "EINVAL" for -EINVAL, or
 * "UNKNOWN" for a code outside CORO_ERRNO_MAP.  Thread-safe. */
CORO_EXTERN const char *coro_err_name(int rc);

#ifdef __cplusplus
}
#endif
#endif
