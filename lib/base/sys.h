/* SPDX-License-Identifier: MIT */
/* The hot I/O system calls, without glibc's cancellation wrappers.
 *
 * Why: recv, send, read, write, epoll_wait and accept4 are POSIX
 * cancellation points, so glibc wraps each in
 * __pthread_enable_asynccancel / __pthread_disable_asynccancel: two locked
 * compare-and-swaps on the thread's cancelhandling word around every call
 * (~9.5 ns each on the 2-core VM where it was measured).  In a perf profile
 * of `corokit_bench io_pingpong 2 20` (perf record -e cpu-clock -g) they
 * were 8 % of all samples (disable 6.6 %, enable 1.6 %).  corokit never
 * cancels its worker threads or its I/O thread (no pthread_cancel
 * anywhere), so the wrappers buy it nothing.  Go makes raw system calls
 * too (tokio goes through libc and pays them).
 *
 * How: on x86-64 with GNU C, the `syscall` instruction inline (the kernel
 * ABI: number in rax, arguments in rdi rsi rdx r10 r8 r9, rcx and r11
 * clobbered, -errno in rax on failure), and errno set from it as libc does,
 * so these are drop-in replacements: -1 and errno on failure.  Elsewhere,
 * glibc's syscall(2), which is not a cancellation point either (one
 * out-of-line call more, still no locked instruction).
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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CORO_LIBC_SYSCALLS)
static inline long coro__sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
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
    if ((unsigned long)ret > -4096UL) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
#else
static inline long coro__sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    return syscall(nr, a1, a2, a3, a4, a5, a6);
}
#endif

static inline ssize_t coro__recv(int fd, void *buf, size_t len, int flags)
{
    return coro__sys6(SYS_recvfrom, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t coro__send(int fd, const void *buf, size_t len, int flags)
{
    return coro__sys6(SYS_sendto, fd, (long)buf, (long)len, flags, 0, 0);
}

static inline ssize_t coro__read(int fd, void *buf, size_t len)
{
    return coro__sys6(SYS_read, fd, (long)buf, (long)len, 0, 0, 0);
}

static inline ssize_t coro__write(int fd, const void *buf, size_t len)
{
    return coro__sys6(SYS_write, fd, (long)buf, (long)len, 0, 0, 0);
}

static inline int coro__accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    return (int)coro__sys6(SYS_accept4, fd, (long)addr, (long)alen, flags, 0, 0);
}

static inline int coro__epoll_wait(int epfd, struct epoll_event *evs, int max, int ms)
{
#ifdef SYS_epoll_wait
    return (int)coro__sys6(SYS_epoll_wait, epfd, (long)evs, max, ms, 0, 0);
#else
    /* the kernel's sigsetsize argument: 8 bytes (_NSIG / 8) */
    return (int)coro__sys6(SYS_epoll_pwait, epfd, (long)evs, max, ms, 0, 8);
#endif
}

#endif
