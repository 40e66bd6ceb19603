/* SPDX-License-Identifier: MIT */
/* corokit: awaiting the operating system - fds, timers, signals, children.
 *
 * Every awaitable here is built inside a job's body and consumed by
 * CORO_AWAIT.  The constructor tries the system call at once, on the
 * worker, whatever the library remembers of the fd (a timeout of 0 always
 * tries once); only when it would block (EAGAIN) is the job suspended, in its
 * fd's own slot (the fd is registered with the scheduler's epoll set once,
 * at its first wait).  The thread that sees the fd ready - an idle worker
 * waiting in epoll, or the scheduler's I/O thread while every worker is
 * busy - performs the call again and resumes the job with its result.  So
 * a ready fd costs one system call and no suspension.
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
 * registration is kept; a read or write still tries the new fd first).
 * Numbers that come back from coro_accept /
 * coro_accept_addr or that coro_connect starts on are forgotten by
 * corokit, so a connection fd from accept may be closed with close(2).
 *
 * Full guide: docs/io.md.
 */
#ifndef COROKIT_IO_H
#define COROKIT_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
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
 * coro_read (timeout 0 included) / coro_write calls the kernel and, unless
 * another job took it first, gets the data, the end or the error. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_readable(int fd, int64_t timeout_ns);
CORO_NODISCARD CORO_EXTERN coro_await_t coro_writable(int fd, int64_t timeout_ns);

/* coro_read - awaitable: read up to len bytes into buf (which must stay
 * valid until the await completes: keep it in the frame).  Result: bytes
 * read (> 0), 0 at end of file, or -errno (-ETIMEDOUT, -ECANCELED, -EBADF,
 * -EBUSY, -EINVAL: NULL buf with len > 0 or a bad timeout_ns, -ENOMEM,
 * -ECONNRESET, any error of read(2) or recv(2)).  Sockets use
 * recv(MSG_DONTWAIT). */
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
 * Returns 0, -EBADF (fd < 0 or not open), or another -errno of close(2)
 * (-EIO ...).
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

#ifdef __cplusplus
}
#endif
#endif
