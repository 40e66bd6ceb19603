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
 * behalf (a coroutine may resume on another thread): every function, and
 * every await as seen from the job (on the thread it resumes on), leaves
 * errno as it found it.  The map holds every errno code that Linux's
 * <errno.h> defines (aliases such as EWOULDBLOCK under the name they
 * share a value with), so whatever code the library passes through from a
 * system call - an open of a trace file (EISDIR, ENAMETOOLONG, ENOTDIR,
 * EROFS ...), a read of any fd - has a name and a text.  The codes the
 * library produces itself and the common I/O errors come first, with
 * texts of corokit's; the rest follow in numeric order with glibc's texts.
 * tools/ci/check-errors.sh (make check-docs) proves the map complete against
 * the system's <errno.h>, and against every -E code that lib/ names and
 * the man pages list.  Only a value that is no errno gets the text
 * "unknown error" and the name "UNKNOWN". */
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
    X(EDESTADDRREQ, "destination address required")                        \
    X(ENXIO,     "no such host or address (the name does not resolve)")    \
    /* every other code Linux defines, with glibc's text */              \
    X(E2BIG,     "argument list too long")                                  \
    X(ENOEXEC,   "exec format error")                                       \
    X(ENOTBLK,   "block device required")                                   \
    X(EEXIST,    "file exists")                                             \
    X(EXDEV,     "invalid cross-device link")                               \
    X(ENODEV,    "no such device")                                          \
    X(ENOTDIR,   "not a directory")                                         \
    X(EISDIR,    "is a directory")                                          \
    X(ENOTTY,    "inappropriate ioctl for device")                          \
    X(ETXTBSY,   "text file busy")                                          \
    X(EFBIG,     "file too large")                                          \
    X(ESPIPE,    "illegal seek")                                            \
    X(EROFS,     "read-only file system")                                   \
    X(EMLINK,    "too many links")                                          \
    X(EDOM,      "numerical argument out of domain")                        \
    X(ENAMETOOLONG, "file name too long")                                   \
    X(ENOLCK,    "no locks available")                                      \
    X(ENOTEMPTY, "directory not empty")                                     \
    X(ELOOP,     "too many levels of symbolic links")                       \
    X(ENOMSG,    "no message of desired type")                              \
    X(EIDRM,     "identifier removed")                                      \
    X(ECHRNG,    "channel number out of range")                             \
    X(EL2NSYNC,  "level 2 not synchronized")                                \
    X(EL3HLT,    "level 3 halted")                                          \
    X(EL3RST,    "level 3 reset")                                           \
    X(ELNRNG,    "link number out of range")                                \
    X(EUNATCH,   "protocol driver not attached")                            \
    X(ENOCSI,    "no CSI structure available")                              \
    X(EL2HLT,    "level 2 halted")                                          \
    X(EBADE,     "invalid exchange")                                        \
    X(EBADR,     "invalid request descriptor")                              \
    X(EXFULL,    "exchange full")                                           \
    X(ENOANO,    "no anode")                                                \
    X(EBADRQC,   "invalid request code")                                    \
    X(EBADSLT,   "invalid slot")                                            \
    X(EBFONT,    "bad font file format")                                    \
    X(ENOSTR,    "device not a stream")                                     \
    X(ENODATA,   "no data available")                                       \
    X(ETIME,     "timer expired")                                           \
    X(ENOSR,     "out of streams resources")                                \
    X(ENONET,    "machine is not on the network")                           \
    X(ENOPKG,    "package not installed")                                   \
    X(EREMOTE,   "object is remote")                                        \
    X(ENOLINK,   "link has been severed")                                   \
    X(EADV,      "advertise error")                                         \
    X(ESRMNT,    "srmount error")                                           \
    X(ECOMM,     "communication error on send")                             \
    X(EMULTIHOP, "multihop attempted")                                      \
    X(EDOTDOT,   "RFS specific error")                                      \
    X(EBADMSG,   "bad message")                                             \
    X(EOVERFLOW, "value too large for defined data type")                   \
    X(ENOTUNIQ,  "name not unique on network")                              \
    X(EBADFD,    "file descriptor in bad state")                            \
    X(EREMCHG,   "remote address changed")                                  \
    X(ELIBACC,   "can not access a needed shared library")                  \
    X(ELIBBAD,   "accessing a corrupted shared library")                    \
    X(ELIBSCN,   ".lib section in a.out corrupted")                         \
    X(ELIBMAX,   "attempting to link in too many shared libraries")         \
    X(ELIBEXEC,  "cannot exec a shared library directly")                   \
    X(EILSEQ,    "invalid or incomplete multibyte or wide character")       \
    X(ERESTART,  "interrupted system call should be restarted")             \
    X(ESTRPIPE,  "streams pipe error")                                      \
    X(EUSERS,    "too many users")                                          \
    X(EPROTOTYPE, "protocol wrong type for socket")                         \
    X(ENOPROTOOPT, "protocol not available")                                \
    X(EPROTONOSUPPORT, "protocol not supported")                            \
    X(ESOCKTNOSUPPORT, "socket type not supported")                         \
    X(EPFNOSUPPORT, "protocol family not supported")                        \
    X(ENETRESET, "network dropped connection on reset")                     \
    X(ETOOMANYREFS, "too many references: cannot splice")                   \
    X(EHOSTDOWN, "host is down")                                            \
    X(ESTALE,    "stale file handle")                                       \
    X(EUCLEAN,   "structure needs cleaning")                                \
    X(ENOTNAM,   "not a XENIX named type file")                             \
    X(ENAVAIL,   "no XENIX semaphores available")                           \
    X(EISNAM,    "is a named type file")                                    \
    X(EREMOTEIO, "remote I/O error")                                        \
    X(EDQUOT,    "disk quota exceeded")                                     \
    X(ENOMEDIUM, "no medium found")                                         \
    X(EMEDIUMTYPE, "wrong medium type")                                     \
    X(ENOKEY,    "required key not available")                              \
    X(EKEYEXPIRED, "key has expired")                                       \
    X(EKEYREVOKED, "key has been revoked")                                  \
    X(EKEYREJECTED, "key was rejected by service")                          \
    X(EOWNERDEAD, "owner died")                                             \
    X(ENOTRECOVERABLE, "state not recoverable")                             \
    X(ERFKILL,   "operation not possible due to RF-kill")                   \
    X(EHWPOISON, "memory page has hardware error")

/* coro_strerror - a human-readable message for rc (a negative errno, as the
 * library returns, or a positive one).  Never NULL; the string is static.
 * Thread-safe, never blocks. */
CORO_EXTERN const char *coro_strerror(int rc);

/* coro_err_name - the symbolic name of rc, e.g. "EINVAL" for EINVAL negated, or
 * "UNKNOWN" for a code outside CORO_ERRNO_MAP.  Thread-safe. */
CORO_EXTERN const char *coro_err_name(int rc);

#ifdef __cplusplus
}
#endif
#endif
