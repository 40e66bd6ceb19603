/* SPDX-License-Identifier: MIT */
/* corokit: awaiting the operating system - fds, timers, signals, children.
 *
 * Every awaitable here is built inside a job's body and consumed by
 * CORO_AWAIT.  The constructor tries the system call at once, on the
 * worker, whatever the library remembers of the fd (a timeout of 0 always
 * tries once) - save one case: a coro_read of a plain TCP socket whose
 * last read came back short, with no event since, waits without calling
 * (docs/io.md, "When a system call is skipped"); only when it would block
 * (EAGAIN) is the job suspended, in its
 * fd's own slot (the fd is registered with the scheduler's epoll set once,
 * at its first wait).  The thread that sees the fd ready - an idle worker
 * waiting in epoll, a busy worker between its steps, or the scheduler's
 * I/O thread while every worker is busy - wakes the job, and the job's
 * worker makes the call again and resumes it with its result.  So a ready
 * fd costs one system call and no suspension.
 *
 * No I/O function or await writes errno: results are returned, and errno
 * is left as the caller set it.
 *
 * Timeouts are relative int64_t nanoseconds: CORO_FOREVER (-1) waits
 * without limit, 0 tries once and completes with -ETIMEDOUT if the call
 * would block; any other negative value is -EINVAL.
 *
 * Results common to all of them: -ETIMEDOUT (the timeout passed),
 * -ECANCELED (coro_sched_shutdown(CORO_CANCEL), also for awaits begun
 * after it), -EBADF (fd < 0 or not open), -EINVAL (bad argument), -ENOMEM
 * (the fd table could not grow), -EBUSY (another job already
 * waits on the same fd in the same direction: one reader and one writer
 * may wait on an fd at once), and any -errno of the system call.  Bad
 * input completes at once without suspending.
 *
 * Blocking fds: sockets are read and written with MSG_DONTWAIT, so a
 * blocking socket never blocks a worker and its flags are left alone.
 * Other fds (pipes, ttys, eventfds ...) and the sockets given to
 * coro_accept and coro_connect are switched to O_NONBLOCK on first use
 * (the flag belongs to the open file description: other holders of it see
 * the change).  Regular files and block devices (which epoll cannot wait
 * for) are read and written on the blocking pool (coro_blocking), so the
 * worker runs other jobs meanwhile; their timeout does not apply.
 *
 * Closing: close an fd that jobs awaited with coro_close(), which takes it
 * out of the epoll set and resumes its waiters with -EBADF.  close(2) is
 * not seen by corokit: a job waiting on the fd then waits until its
 * timeout, and if the fd's number is reused for a new pipe or socket made
 * outside corokit, waits on the new fd are never woken (the old
 * registration is kept; a write, and a read of timeout 0, still try the
 * new fd first; a read with a timeout may wait without trying when the
 * old fd was a TCP socket).
 * Numbers that come back from coro_accept / coro_accept_addr, coro_dial
 * or coro_recvmsg (SCM_RIGHTS), or that coro_connect starts on, are
 * forgotten by corokit first, so they are safe even where the number's
 * previous file was closed with close(2).  An fd no job ever waited on may
 * be closed with close(2).
 *
 * Full guide: docs/io.md (the contract); how it is done:
 * docs/architecture.md, "I/O (lib/io/)".
 */
#ifndef COROKIT_IO_H
#define COROKIT_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "coro.h"
#include "error.h"
#include "sched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* coro_readable / coro_writable - awaitable: wait until fd is readable
 * (data, EOF, a pending connection, an error or hang-up) / writable.
 * Result 0, or -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -EPERM (fd cannot be
 * polled), -EINVAL (a bad timeout_ns), -ENOMEM (the fd table could not
 * grow).  Never reads or writes.  0 means poll(2) saw it so: the next
 * coro_read (any timeout, 0 included) / coro_write calls the kernel and, unless
 * another job took it first, gets the data, the end or the error. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_readable(int fd, int64_t timeout_ns);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_writable(int fd, int64_t timeout_ns);

/* coro_read - awaitable: read up to len bytes into buf (which must stay
 * valid until the await completes: keep it in the frame).  Result: bytes
 * read (> 0), 0 at end of file, or -errno (-ETIMEDOUT, -ECANCELED, -EBADF,
 * -EBUSY, -EINVAL: NULL buf with len > 0 or a bad timeout_ns, -ENOMEM,
 * -ECONNRESET, any error of read(2) or recv(2)).  Sockets use
 * recv(MSG_DONTWAIT).  On a plain TCP socket (no TCP_ULP), a short result
 * marks the fd empty and the next coro_read with a timeout other than 0
 * waits for an event without calling recv (docs/io.md). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_read(int fd, void *buf, size_t len, int64_t timeout_ns);

/* coro_write - awaitable: write up to len bytes of buf, once.  Result:
 * bytes written (> 0, may be fewer than len), or -errno (-EPIPE when the
 * peer is gone: sockets are written with MSG_NOSIGNAL; a pipe whose reader
 * is gone still raises SIGPIPE, ignore it if that matters; -ECONNRESET,
 * -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -EINVAL: NULL buf with len > 0
 * or a bad timeout_ns, -ENOSPC, any error of write(2) or send(2)). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_write(int fd, const void *buf, size_t len, int64_t timeout_ns);

/* coro_write_all - awaitable: write all len bytes of buf, waiting as often
 * as needed; the timeout covers the whole write.  Result 0 once every byte
 * is written, or -errno (then an unknown prefix may have been written). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_write_all(int fd, const void *buf, size_t len, int64_t timeout_ns);

/* coro_accept - awaitable: accept a connection on listening socket fd
 * (switched to O_NONBLOCK) with accept4(SOCK_NONBLOCK | SOCK_CLOEXEC).
 * Result: the new fd (non-blocking, close-on-exec), or -errno (-EINVAL
 * when fd does not listen or for a bad timeout_ns, -EMFILE and ENFILE: the
 * connection stays queued, -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY,
 * -ENOTSOCK, any error of accept4(2)). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_accept(int fd, int64_t timeout_ns);

/* coro_accept_addr - awaitable: coro_accept that also gives the peer's
 * address: *len is the size of *addr on entry (a struct sockaddr_storage
 * fits every family) and the address's real length on success (longer than
 * the size given: the address was truncated, as accept(2)).  addr and len
 * must stay valid until the await completes (keep them in the frame).
 * Result as coro_accept; -EINVAL when addr or len is NULL. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_accept_addr(int fd, struct sockaddr *addr, socklen_t *len,
                                          int64_t timeout_ns);

/* coro_connect - awaitable: connect socket fd (switched to O_NONBLOCK) to
 * addr.  addr is read during the call.  Result 0, or -errno
 * (-ECONNREFUSED, -ETIMEDOUT: the attempt then goes on in the kernel, close
 * the socket; -ENETUNREACH and any error of connect(2); -EINVAL: NULL addr
 * or a bad timeout_ns; -ECANCELED; -EBADF). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_connect(int fd, const struct sockaddr *addr, socklen_t len,
                                      int64_t timeout_ns);

/* coro_close - take fd out of scheduler s's epoll set, resume every job
 * of s awaiting fd with -EBADF, and close fd, before returning.  s NULL =
 * the calling job's scheduler; outside any job with s NULL it is close(2).
 * Returns 0, -EBADF (fd < 0 or not open), -ENOMEM (s's fd table could
 * not grow: fd is left open), or another -errno of close(2) (-EIO ...).
 * Any thread; never blocks. */
CORO_EXTERN int coro_close(coro_sched_t *s, int fd);

/* coro_now - CLOCK_MONOTONIC in nanoseconds: the clock of every deadline.
 * Inside a job of a scheduler made with .virtual_time (and on the thread
 * that drives it), that scheduler's virtual clock (coro_sched_now). */
CORO_EXTERN int64_t coro_now(void);

/* coro_sleep - awaitable: resume no sooner than ns nanoseconds from now.
 * Result 0, or -ECANCELED, -ENOMEM.  ns 0 completes at once (counting
 * toward the worker's fairness budget); ns CORO_FOREVER sleeps until
 * cancelled; other negative ns: -EINVAL. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sleep(int64_t ns);

/* coro_sleep_until - awaitable: resume no sooner than the absolute
 * deadline_ns (coro_now() clock).  A deadline already past completes at
 * once with 0; CORO_NO_DEADLINE sleeps until cancelled (as
 * coro_sleep(CORO_FOREVER)); a negative one is -EINVAL. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sleep_until(int64_t deadline_ns);

/* coro_signal - awaitable: wait until signal signo is delivered to the
 * process (signalfd).  Result: signo, or -ETIMEDOUT, -ECANCELED, -EINVAL
 * (bad signo, or signo is not blocked in the calling thread: block it in
 * every thread - pthread_sigmask before coro_sched_create, whose threads
 * inherit the mask - or its default action runs instead), -EIO (the
 * signalfd gave a short read), -ENOMEM (the fd table could not grow).  One
 * delivery resumes one waiter. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_signal(int signo, int64_t timeout_ns);

/* coro_child - awaitable: wait until child process pid exits, and reap it
 * (pidfd + waitid).  Result: a wait status (WIFEXITED / WEXITSTATUS /
 * WIFSIGNALED / WTERMSIG apply), or -ETIMEDOUT, -ECANCELED, -EINVAL
 * (pid <= 0), -ESRCH (no such process: also a child already reaped),
 * -ECHILD (the process exists but is not a child of this one), -ENOSYS
 * (the kernel has no pidfd_open: before Linux 5.3). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_child(pid_t pid, int64_t timeout_ns);

/* ---- vectors, zero copy (lib/io/vec.c) ---------------------------------- */

/* coro_readv / coro_writev - awaitable: one scatter read / gather write
 * over iovcnt entries of iov (sockets: recvmsg / sendmsg with
 * MSG_DONTWAIT, and MSG_NOSIGNAL to write; other fds switched to
 * O_NONBLOCK, readv(2) / writev(2); a regular file is read or written on
 * the worker: for the blocking pool use coro_pread / coro_pwrite).  iov
 * and the buffers must stay valid until the await completes.  Result: the
 * bytes moved (may be fewer than the total), 0 at end of file (readv), or
 * -errno: -EINVAL (iov NULL with iovcnt > 0, iovcnt < 0 or > IOV_MAX, an
 * entry NULL with a length, a total past SSIZE_MAX, a bad timeout_ns),
 * -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -ENOMEM, -EPIPE, -ECONNRESET,
 * any error of the system call. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_readv(int fd, const struct iovec *iov, int iovcnt,
                                                   int64_t timeout_ns);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_writev(int fd, const struct iovec *iov, int iovcnt,
                                                    int64_t timeout_ns);

/* coro_writev_all - awaitable: write every byte of the vector, waiting as
 * often as needed; the timeout covers the whole write; iovcnt may exceed
 * IOV_MAX.  The progress lives in the caller's array: it is advanced in
 * place (entries written are emptied, the first unfinished one starts at
 * its first unwritten byte), so after -ETIMEDOUT or -ECANCELED the array
 * holds exactly what is left, and a new coro_writev_all over it goes on
 * where the last stopped.  Result 0 once all is written, or -errno:
 * -EINVAL (as coro_writev's, IOV_MAX aside), -ETIMEDOUT, -ECANCELED,
 * -EBADF, -EBUSY, -ENOMEM, -EPIPE, -ECONNRESET, any error of the system
 * call. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_writev_all(int fd, struct iovec *iov, int iovcnt,
                                                        int64_t timeout_ns);

/* coro_sendfile - awaitable: send count bytes of in_fd (a regular file)
 * to out_fd (a socket, switched to O_NONBLOCK) with sendfile(2): no copy
 * through user memory.  offset: where to read in_fd from, advanced by the
 * bytes sent (NULL: in_fd's file position is used and advanced).  Waits
 * for out_fd as often as needed; the timeout covers the whole transfer.
 * The progress is in *offset (or the file position), so after -ETIMEDOUT or
 * -ECANCELED the caller knows what was sent.  Result 0 once all count
 * bytes are sent, or -errno: -ENODATA (in_fd ended before count bytes),
 * -EBADF (either fd < 0 or not open), -EINVAL (count > SSIZE_MAX, *offset
 * < 0, a bad timeout_ns, or an fd sendfile(2) refuses), -EPIPE,
 * -ECONNRESET, -ETIMEDOUT, -ECANCELED, -EBUSY, -ENOMEM, any error of
 * sendfile(2). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sendfile(int out_fd, int in_fd, off_t *offset, size_t count,
                                                      int64_t timeout_ns);

/* coro_splice - awaitable: move up to len bytes from fd_in to fd_out
 * with splice(2) (one of them a pipe), once; both are switched to
 * O_NONBLOCK.  The job waits for whichever side blocks: fd_in to be
 * readable or fd_out to be writable.  Result: the bytes moved (> 0), 0 at
 * the end of fd_in, or -errno: -EINVAL (len > SSIZE_MAX, a bad timeout_ns,
 * neither fd a pipe), -EAGAIN (both sides poll ready yet the kernel would
 * block, several times: try again), -EBADF, -ETIMEDOUT, -ECANCELED, -EBUSY,
 * -ENOMEM, -EPIPE, any error of splice(2). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_splice(int fd_in, int fd_out, size_t len, int64_t timeout_ns);

/* ---- datagrams and messages (lib/io/dgram.c) ---------------------------- */

/* A socket address of any family with its length: what coro_recvfrom
 * fills and coro_sendto takes. */
typedef struct coro_sockaddr {
    struct sockaddr_storage addr;   /* public */
    socklen_t len;                  /* public: bytes of addr in use */
} coro_sockaddr_t;

/* coro_recvfrom - awaitable: receive one datagram (or stream bytes) into
 * buf with recvfrom(MSG_DONTWAIT), the sender's address into *from (NULL:
 * not wanted; from->len is set on success).  buf and from must stay valid
 * until the await completes.  A datagram longer than len is truncated (as
 * recvfrom(2)); a len above INT32_MAX is taken as INT32_MAX.  Result: the
 * bytes received (0: an empty datagram, or a stream's end), or -errno:
 * -EINVAL (NULL buf with len > 0, a bad timeout_ns), -ENOTSOCK,
 * -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -ENOMEM, -ECONNREFUSED (a
 * connected UDP socket whose peer's port is closed), any error of
 * recvfrom(2). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_recvfrom(int fd, void *buf, size_t len, coro_sockaddr_t *from,
                                                      int64_t timeout_ns);

/* coro_sendto - awaitable: send buf as one datagram to *to
 * (sendto(MSG_DONTWAIT | MSG_NOSIGNAL); to NULL: a connected socket's
 * peer).  buf and to must stay valid until the await completes.  Result:
 * the bytes sent, or -errno: -EINVAL (NULL buf with len > 0, to->len
 * larger than to->addr, a bad timeout_ns), -EMSGSIZE (longer than the
 * socket takes in one datagram; always above INT32_MAX), -ENOTSOCK,
 * -EDESTADDRREQ, -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -ENOMEM, -EPIPE,
 * any error of sendto(2). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sendto(int fd, const void *buf, size_t len,
                                                    const coro_sockaddr_t *to, int64_t timeout_ns);

/* coro_recvmsg / coro_sendmsg - awaitable: recvmsg(2) / sendmsg(2) with
 * the caller's msg (and everything it points to: name, iovecs, control
 * buffer) valid until the await completes, and flags with MSG_DONTWAIT
 * added (MSG_NOSIGNAL to send, MSG_CMSG_CLOEXEC to receive: descriptors
 * passed with SCM_RIGHTS arrive close-on-exec, and are new to corokit as
 * an accepted fd is).  The kernel updates msg as recvmsg(2) says
 * (msg_namelen, msg_controllen, msg_flags: MSG_TRUNC, MSG_CTRUNC).
 * Result: the bytes moved, or -errno: -EINVAL (NULL msg, flags < 0, a bad
 * timeout_ns), -ENOTSOCK, -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY, -ENOMEM,
 * -EPIPE, -EMSGSIZE, any error of the system call. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_recvmsg(int fd, struct msghdr *msg, int flags,
                                                     int64_t timeout_ns);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sendmsg(int fd, const struct msghdr *msg, int flags,
                                                     int64_t timeout_ns);

/* ---- exact and buffered reads (lib/io/bufread.c) ------------------------ */

/* coro_read_exact - awaitable: read exactly len bytes into buf, waiting as
 * often as needed; the timeout covers the whole read.  Result: len, 0 at
 * end of file before the first byte, or -errno: -EPIPE (the end came after
 * some bytes but before len), -EINVAL (NULL buf with len > 0, len >
 * SSIZE_MAX, a bad timeout_ns), -ETIMEDOUT, -ECANCELED, -EBADF, -EBUSY,
 * -ENOMEM, -ECONNRESET, any error of coro_read.  On a failure the bytes
 * read so far are in buf but not counted: the stream's position is lost,
 * so close it; to survive a timeout or a cancel with nothing lost, read
 * through a coro_bufreader_t (coro_bufreader_exact). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_read_exact(int fd, void *buf, size_t len, int64_t timeout_ns);

/* A buffered reader over an fd and a buffer of the caller's (its bounds:
 * no line or record longer than the buffer is ever assembled).  Fields
 * are private; coro_bufreader_init sets them.  One job at a time. */
typedef struct coro_bufreader {
    int fd;             /* private */
    int delim;          /* private: of the read under way */
    char *buf;          /* private */
    size_t cap;         /* private */
    size_t start;       /* private: first unconsumed byte */
    size_t end;         /* private: one past the last byte read */
    size_t scanned;     /* private: bytes after start known to hold no delim */
    size_t want;        /* private: coro_bufreader_exact's n */
    const char **out;   /* private: where the result's address goes */
    int eof;            /* private: the fd gave 0 */
    int reserved;       /* private */
} coro_bufreader_t;

/* coro_bufreader_init - r reads fd through buf (cap bytes, > 0), which
 * must outlive r.  Returns 0, or -EINVAL (NULL r or buf, cap 0 or >
 * SSIZE_MAX, fd < 0 is -EBADF).  Any thread; never blocks. */
CORO_EXTERN int coro_bufreader_init(coro_bufreader_t *r, int fd, void *buf, size_t cap);

/* coro_bufreader_until - awaitable: the next record ending in byte delim
 * (0-255): *line points at it inside the reader's buffer (valid until the
 * next call on r).  Result: its length with the delimiter, or at the end
 * of the stream the last bytes without one; 0 at the end with nothing
 * left; -EMSGSIZE when cap bytes hold no delimiter: *line then points at
 * those cap bytes, which are consumed, and the next call goes on with the
 * rest of the record (the reader stays usable); or -errno of coro_read
 * (-ETIMEDOUT, -ECANCELED, -ECONNRESET ...) with nothing consumed: every
 * byte read stays buffered for the next call.  -EINVAL: NULL r or line,
 * delim outside 0-255, a bad timeout_ns.  coro_bufreader_line is
 * coro_bufreader_until(r, '\n', ...). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_bufreader_until(coro_bufreader_t *r, int delim,
                                                             const char **line, int64_t timeout_ns);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_bufreader_line(coro_bufreader_t *r, const char **line,
                                                            int64_t timeout_ns);

/* coro_bufreader_exact - awaitable: the next n bytes (1 <= n <= cap):
 * *data points at them inside the buffer (valid until the next call on
 * r).  Result n, 0 at the end with nothing left, -EPIPE at the end with
 * fewer than n left (they stay buffered), -EINVAL (NULL r or data, n 0 or
 * > cap, a bad timeout_ns), or with nothing consumed -ETIMEDOUT,
 * -ECANCELED, -ECONNRESET or another error of coro_read. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_bufreader_exact(coro_bufreader_t *r, size_t n,
                                                             const char **data, int64_t timeout_ns);

/* coro_bufreader_buffered - bytes read from the fd and not yet consumed
 * (they come before any later read of r; 0 for NULL).  Any thread. */
CORO_EXTERN size_t coro_bufreader_buffered(const coro_bufreader_t *r);

/* ---- files at an offset (lib/io/pfile.c) -------------------------------- */

/* coro_pread / coro_pwrite - awaitable: pread(2) / pwrite(2) of fd at
 * offset; the file position is untouched.  Tried first on the worker
 * with RWF_NOWAIT (preadv2 / pwritev2), which completes only when the
 * kernel need not wait (the pages are cached); otherwise (or where the
 * kernel lacks it) on the scheduler's blocking pool (coro_blocking), so
 * the worker runs other jobs meanwhile.  No timeout: a call on the pool
 * cannot be interrupted once started; a job cancelled (or past its
 * .deadline) before a pool thread starts it gets -ECANCELED (-ETIMEDOUT)
 * with nothing read or written.  buf must stay valid until
 * the await completes.  Result: bytes (pread: 0 at end of file; may be
 * short), or -errno: -EBADF, -EINVAL (NULL buf with len > 0, len >
 * SSIZE_MAX, offset < 0), -ESPIPE (fd cannot seek), -EISDIR, -ECANCELED,
 * -ETIMEDOUT, -EAGAIN and -ENOMEM (no pool thread could be started), any
 * error of the system call. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_pread(int fd, void *buf, size_t len, off_t offset);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_pwrite(int fd, const void *buf, size_t len, off_t offset);

/* ---- names: listen and dial (lib/io/net.c) ------------------------------ */

/* Addresses are "host:port" ("127.0.0.1:80", "localhost:8080",
 * "[::1]:80", "example.org:http", ":8080" or "*:8080" for every local
 * address), or "unix:/path" for a unix stream socket ("unix:@name": the
 * abstract namespace).  A name that getaddrinfo(3) cannot resolve is
 * mapped to an errno: EAI_NONAME, EAI_NODATA, EAI_ADDRFAMILY -> -ENXIO
 * ("no such host"), EAI_AGAIN -> -EAGAIN, EAI_FAIL -> -EIO, EAI_FAMILY ->
 * -EAFNOSUPPORT, EAI_SERVICE and EAI_SOCKTYPE -> -EINVAL, EAI_MEMORY ->
 * -ENOMEM, EAI_SYSTEM -> the errno it names, any other -> -EIO. */

/* coro_listen - a listening stream socket on addr: family AF_INET,
 * AF_INET6 or AF_UNSPEC (the first address the name gives) for
 * "host:port", AF_UNIX or AF_UNSPEC for "unix:/path"; SO_REUSEADDR,
 * non-blocking, close-on-exec.  A name (not a number) is resolved on the
 * calling thread: call it from main, or give a numeric host from a job.
 * Returns the fd, or -errno: -EINVAL (NULL addr, no ':', a bad port,
 * backlog < 0, a path too long), -EAFNOSUPPORT (a family that is none of
 * those, or that the address is not of), -ENXIO (the name does not
 * resolve), -EAGAIN, -EIO, -ENOMEM (the mapping above), any error of
 * socket(2), bind(2) (-EADDRINUSE, -EACCES) or listen(2).  Any thread;
 * blocks only to resolve a name. */
CORO_EXTERN int coro_listen(int family, const char *addr, int backlog);

/* coro_dial - awaitable: a connected stream socket to addr (as
 * coro_listen's; a name is resolved with getaddrinfo(3) on the
 * scheduler's blocking pool, never on a worker), each address tried in
 * turn until one connects.  addr must stay valid until the await
 * completes.  The timeout covers the resolution and every attempt.
 * Result: the fd (non-blocking, close-on-exec), or -errno: -EINVAL (NULL
 * addr, no ':', a bad port, a bad timeout_ns), -ENXIO (the name does not
 * resolve), -EIO, -EAFNOSUPPORT (the mapping above), -EPERM (not inside a
 * job), -ECONNREFUSED, -ENETUNREACH, -ETIMEDOUT, -ECANCELED (cancelled before or
 * while connecting: no fd is left open; a resolution under way finishes
 * on its pool thread and is freed there), -EAGAIN and -ENOMEM (no pool
 * thread), any error of socket(2) or connect(2) (the last address's). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_dial(const char *addr, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif
