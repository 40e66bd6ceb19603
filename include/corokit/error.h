/* SPDX-License-Identifier: MIT */
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
 * behalf (a coroutine may resume on another thread).  The map holds every
 * code the library itself produces (tools/check-errors.sh fails the build
 * when lib/ returns one that is missing) and the errors of the system calls
 * behind the I/O awaitables (read, write, send, recv, accept4, connect,
 * signalfd, pidfd, waitid) that a caller meets in practice.  Any other
 * code gets the text "unknown error" and the name "UNKNOWN". */
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
    X(ESRCH,     "no such process")                                         \
    X(ENOSPC,    "no space left (no room for another entry)")               \
    X(EIO,       "input/output error")                                      \
    X(ERANGE,    "index out of range")                                      \
    X(EINTR,     "interrupted system call")                                 \
    X(EMFILE,    "too many open files in this process")                     \
    X(ENFILE,    "too many open files in the system")                       \
    X(ENOBUFS,   "no buffer space available")                               \
    X(EACCES,    "permission denied")                                       \
    X(EFAULT,    "bad address")                                             \
    X(ENOENT,    "no such file or directory")                               \
    X(ENOTSOCK,  "not a socket")                                            \
    X(EOPNOTSUPP, "operation not supported")                                \
    X(EMSGSIZE,  "message too long")                                        \
    X(EPROTO,    "protocol error")                                          \
    X(EAFNOSUPPORT, "address family not supported")                         \
    X(EADDRINUSE, "address already in use")                                 \
    X(EADDRNOTAVAIL, "address not available")                               \
    X(ENETDOWN,  "network is down")                                         \
    X(ENETUNREACH, "network is unreachable")                                \
    X(EHOSTUNREACH, "no route to host")                                     \
    X(ECONNABORTED, "connection aborted")                                   \
    X(ECONNRESET, "connection reset by peer")                               \
    X(ECONNREFUSED, "connection refused")                                   \
    X(ENOTCONN,  "socket is not connected")                                 \
    X(EISCONN,   "socket is already connected")                             \
    X(EALREADY,  "connection already in progress")                          \
    X(EINPROGRESS, "operation in progress")                                 \
    X(EDESTADDRREQ, "destination address required")

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
