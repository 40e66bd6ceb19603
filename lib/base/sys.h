/* SPDX-License-Identifier: MIT */
/* The hot I/O system calls, without glibc's cancellation wrappers.
 *
 * Why: recv, send, read, write, epoll_wait and accept4 are POSIX
 * cancellation points, so glibc wraps each in
 * __pthread_enable_asynccancel / __pthread_disable_asynccancel: two locked
 * compare-and-swaps on the thread's cancelhandling word around every call
 * (their share of an I/O round trip's profile: docs/benchmarks.md).  corokit never
 * cancels its worker threads or its I/O thread (no pthread_cancel
 * anywhere), so the wrappers buy it nothing.  Go makes raw system calls
 * too (tokio goes through libc and pays them).
 *
 * How: on x86-64 with GNU C, the `syscall` instruction inline (the kernel
 * ABI: number in rax, arguments in rdi rsi rdx r10 r8 r9, rcx and r11
 * clobbered, -errno in rax on failure), and errno set from it as libc does,
 * so these are drop-in replacements: -1 and errno on failure (the _r forms
 * return -errno and leave errno alone: the hot path then reads no TLS).
 * Elsewhere, glibc's syscall(2), which is not a cancellation point either
 * (one out-of-line call more, still no locked instruction).  Sanitizer
 * builds, CORO_LIBC_SYSCALLS, and tests that set coro__sys_libc call
 * libc's own functions (below).
 *
 * glibc skips the wrappers while a process has one thread, so only
 * threaded programs pay them (docs/benchmarks.md: raw system calls).
 *
 * Only for calls whose arguments the kernel takes as they are (no struct
 * translation): recv is recvfrom(fd, buf, len, flags, NULL, NULL), send is
 * sendto(..., NULL, 0); epoll_wait exists on x86-64 (elsewhere epoll_pwait
 * with a NULL mask, the same call).
 */
#ifndef COROKIT_BASE_SYS_H
#define COROKIT_BASE_SYS_H

#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/base.h"

/* Test hook: true routes every wrapper below through libc's function of
 * the same name, which white-box tests replace with their own (they link
 * the library statically and define recv, read, epoll_wait ... to count
 * or inject).  Set once before any scheduler exists; read relaxed (one
 * load and a branch never taken in production).  Defined in lib/io/ops.c. */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern bool coro__sys_libc;
#endif
#define CORO__VIA_LIBC() CORO__UNLIKELY(CORO__HOOK(coro__sys_libc, false))

/* Sanitizer builds go through libc's functions: ASan checks the buffers
 * in its recv/read interceptors, TSan models the happens-before of an fd
 * written then read (the eventfd kick) and of epoll - a raw call would
 * hide both from them.  CORO_LIBC_SYSCALLS does the same by hand. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define CORO__SYS_LIBC 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#  define CORO__SYS_LIBC 1
# endif
#endif
#if defined(CORO_LIBC_SYSCALLS) && !defined(CORO__SYS_LIBC)
# define CORO__SYS_LIBC 1
#endif
#ifdef CORO__SYS_LIBC
# undef CORO__VIA_LIBC
# define CORO__VIA_LIBC() 1
#endif

/* the raw call: its result, or -errno (nothing stored in errno) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CORO__SYS_LIBC)
static inline long coro__sysr6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;

    /* "memory": the kernel reads and writes the buffers */
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;     /* -4095 .. -1: -errno */
}
#else
static inline long coro__sysr6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    int saved = errno;      /* as the inline form: errno untouched */
    long ret = syscall(nr, a1, a2, a3, a4, a5, a6);
    if (ret == -1)
        ret = -errno;
    errno = saved;
    return ret;
}
#endif

/* as libc's: -1 with errno on failure */
static inline long coro__sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret = coro__sysr6(nr, a1, a2, a3, a4, a5, a6);
    if ((unsigned long)ret > -4096UL) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* a libc call's result n as -errno, errno put back to `saved`: the _r
 * forms leave errno alone on both paths */
static inline long coro__libc_r(ssize_t n, int saved)
{
    long r = n < 0 ? -errno : n;
    errno = saved;
    return r;
}

/* recv / send as -errno: the I/O operations' own convention */
static inline long coro__recv_r(int fd, void *buf, size_t len, int flags)
{
    if (CORO__VIA_LIBC()) {
        int saved = errno;
        return coro__libc_r(recv(fd, buf, len, flags), saved);
    }
    return coro__sysr6(SYS_recvfrom, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline long coro__send_r(int fd, const void *buf, size_t len, int flags)
{
    if (CORO__VIA_LIBC()) {
        int saved = errno;
        return coro__libc_r(send(fd, buf, len, flags), saved);
    }
    return coro__sysr6(SYS_sendto, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t coro__recv(int fd, void *buf, size_t len, int flags)
{
    if (CORO__VIA_LIBC())
        return recv(fd, buf, len, flags);
    return coro__sys6(SYS_recvfrom, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t coro__send(int fd, const void *buf, size_t len, int flags)
{
    if (CORO__VIA_LIBC())
        return send(fd, buf, len, flags);
    return coro__sys6(SYS_sendto, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t coro__read(int fd, void *buf, size_t len)
{
    if (CORO__VIA_LIBC())
        return read(fd, buf, len);
    return coro__sys6(SYS_read, fd, (long)buf, (long)len, 0, 0, 0);
}

static inline ssize_t coro__write(int fd, const void *buf, size_t len)
{
    if (CORO__VIA_LIBC())
        return write(fd, buf, len);
    return coro__sys6(SYS_write, fd, (long)buf, (long)len, 0, 0, 0);
}

static inline int coro__accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    if (CORO__VIA_LIBC())
        return accept4(fd, addr, alen, flags);
    return (int)coro__sys6(SYS_accept4, fd, (long)addr, (long)alen, flags, 0, 0);
}

static inline int coro__epoll_wait(int epfd, struct epoll_event *evs, int max, int ms)
{
    if (CORO__VIA_LIBC())
        return epoll_wait(epfd, evs, max, ms);
#ifdef SYS_epoll_wait
    return (int)coro__sys6(SYS_epoll_wait, epfd, (long)evs, max, ms, 0, 0);
#else
    /* the kernel's sigsetsize argument: 8 bytes (_NSIG / 8) */
    return (int)coro__sys6(SYS_epoll_pwait, epfd, (long)evs, max, ms, 0, 8);
#endif
}

#endif
