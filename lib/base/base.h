/* SPDX-License-Identifier: MIT */
/* private, layer 0 (base): what every file of lib/ may use - visibility,
 * barriers, the spinlock, bit i of a word array, futexes, membarrier,
 * prefetch for writing, the clock and the deadline of a timeout, arming a
 * timerfd, NUMA nodes, a histogram's bucket, a function's name.  Includes nothing of lib/
 * but base/.  See docs/architecture.md. */
#ifndef COROKIT_LIB_BASE_BASE_H
#define COROKIT_LIB_BASE_BASE_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "corokit.h"
#include "base/tunables.h"

#define CORO__HIDDEN __attribute__((visibility("hidden")))
#define CORO__LIKELY(x) __builtin_expect(!!(x), 1)
#define CORO__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* TEST HOOKS.  The knobs the white-box tests and scenarios set (fake CPU
 * counts, failures to inject, paths to turn off) and the counters only
 * they read exist in the test library alone: lib/ built again with
 * CORO_TEST_HOOKS into libcorokit_test.a, which only the test binaries
 * link (the Makefile's test library; make check-hooks).  In libcorokit.a
 * and .so a knob reads as its default, a constant, so the branch it
 * guards is compiled out, and a reader of a test-only counter is not
 * built.  CORO__HOOK(knob, dflt): the knob (a relaxed load: tests set it
 * from their own thread, before the run that reads it), or dflt. */
#ifdef CORO_TEST_HOOKS
#define CORO__HOOK(knob, dflt) __atomic_load_n(&(knob), __ATOMIC_RELAXED)
#else
#define CORO__HOOK(knob, dflt) (dflt)
#endif
#define CORO__CACHELINE 64

#if defined(__SANITIZE_THREAD__)
# define CORO__TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define CORO__TSAN 1
# endif
#endif

/* A full barrier.  ThreadSanitizer does not support atomic_thread_fence;
 * under it a seq_cst RMW on a private word gives the same hardware barrier
 * (a locked instruction on x86, a full dmb on arm64). */
#ifdef CORO__TSAN
static inline void coro__fence_seq_cst(void)
{
    static uint32_t dummy;
    __atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
}
#elif defined(__x86_64__)
/* x86-64: a locked no-op on the stack, as Linux's smp_mb() does since 4.15.
 * Any locked instruction is a full barrier on x86 (it drains the store
 * buffer and orders every earlier load and store before every later one,
 * SDM vol. 3 8.2.2), which is all a seq_cst fence needs between ordinary
 * memory accesses; gcc and clang emit `mfence` instead, which also orders
 * non-temporal stores and costs about twice as much (docs/benchmarks.md).
 * Below the stack pointer: the red zone is ours, and or-ing 0 leaves
 * whatever the compiler keeps there unchanged. */
static inline void coro__fence_seq_cst(void)
{
    __asm__ __volatile__("lock; orl $0, -8(%%rsp)" ::: "memory", "cc");
}
#else
# define coro__fence_seq_cst() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* ---- spinning (base/spin.c) ---------------------------------------------
 * one round of a spin-wait: x86's pause tells the CPU this thread spins (it
 * yields the core's resources to a sibling hyperthread and leaves the
 * loop without a memory-order flush); elsewhere nothing */
static inline void coro__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* A small spinlock, the one of lib/: for short critical sections on hot
 * paths (an fd's slot, the joiner-slot registry, a group's member list,
 * the tracer's shared ring), where a pthread mutex costs several times
 * the instructions.  The uncontended take is inline; the spin is out of
 * line and gives the CPU away after CORO__SPIN_PAUSES rounds, so a
 * pre-empted holder (more workers than CPUs, or a holder in a system
 * call) is not spun against. */
CORO__HIDDEN void coro__spin_lock_slow(uint32_t *l);

/* an idle loop's sched_yield (a worker's idle looks, the I/O thread's
 * rounds after a busy one): true when it came back within
 * CORO__YIELD_LATE_NS or the word lent (NULL: none) changed meanwhile,
 * false when another thread held the CPU for about a time slice and made
 * nothing for us: the loop should sleep (base/spin.c, LATE YIELDS) */
CORO__HIDDEN bool coro__idle_yield(const uint32_t *lent);
/* test hooks: every idle yield reads as late; the idle yields made */
CORO__HIDDEN extern bool coro__idle_yields_late;
CORO__HIDDEN extern uint64_t coro__idle_yields;

static inline void coro__spin_lock(uint32_t *l)
{
    /* acquire: pairs with coro__spin_unlock's release; the data is read after */
    if (CORO__UNLIKELY(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)))
        coro__spin_lock_slow(l);
}

static inline void coro__spin_unlock(uint32_t *l)
{
    /* release: the data's updates before the next holder's acquire */
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- bit i of an array of 64-bit words ----------------------------------
 * The worker masks, the idle and parked words, a cpuset.  Word and mask
 * apart for the atomic users: __atomic_fetch_or(&w[coro__bit_word(i)],
 * coro__bit(i), ...). */
static inline size_t coro__bit_word(size_t i)
{
    return i / 64;
}

static inline uint64_t coro__bit(size_t i)
{
    return 1ull << (i % 64);
}

static inline bool coro__bit_test(const uint64_t *w, size_t i)
{
    return (w[coro__bit_word(i)] & coro__bit(i)) != 0;
}

static inline void coro__bit_set(uint64_t *w, size_t i)
{
    w[coro__bit_word(i)] |= coro__bit(i);
}

static inline void coro__bit_clear(uint64_t *w, size_t i)
{
    w[coro__bit_word(i)] &= ~coro__bit(i);
}

/* ---- futex (base/futex.c) ----------------------------------------------------
 * wait: sleep while *addr == expect, until the absolute CLOCK_MONOTONIC
 * deadline (ns, -1 = none); wake: up to n sleepers. */
CORO__HIDDEN int coro__futex_wait(uint32_t *addr, uint32_t expect, int64_t deadline_ns);
CORO__HIDDEN void coro__futex_wake(uint32_t *addr, int n);

/* ---- asymmetric fences (base/membarrier.c) ------------------------------------------
 * A Dekker pair whose one side runs at every spawn and the other at every
 * park pays its full barrier on the rare side only: the frequent side keeps
 * a compiler barrier, the rare side calls membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full barrier on every
 * CPU that runs one of our threads before it returns (sched/park.c
 * PARKING has the protocol).  register: once per scheduler create (the
 * kernel's registration is per process; the first, with other threads
 * running, waits for an RCU grace period, a few ms); 0 when usable,
 * -ENOSYS without kernel support (before Linux 4.14, or filtered by
 * seccomp, or COROKIT_MEMBARRIER=0 in the environment).
 * heavy: 0, or -errno if the call failed (the caller then must not sleep
 * for good). */
CORO__HIDDEN int coro__membarrier_register(void);
CORO__HIDDEN int coro__membarrier_heavy(void);
/* test hook: true makes coro__membarrier_heavy fail with -EPERM (read
 * relaxed, on the park path only) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern bool coro__membarrier_fail;
#endif

/* the frequent side: orders nothing at run time, only the compiler */
static inline void coro__fence_light(void)
{
    __asm__ __volatile__("" ::: "memory");
}

/* ---- prefetch for writing (base/cpu.c sets the flag) -----------------------
 * gcc and clang turn __builtin_prefetch(p, 1) into prefetcht0 unless the
 * target has PRFCHW: the line then comes in shared, and the first store
 * still waits for the other copies to go.  prefetchw takes it exclusive.
 * The flag is CPUID's PRFCHW bit, read by coro__cpu_init (at every
 * scheduler create, before any pool frame exists). */
CORO__HIDDEN extern bool coro__has_prefetchw;
CORO__HIDDEN void coro__cpu_init(void);

static inline void coro__prefetch_w(const void *p)
{
#if defined(__x86_64__) && defined(__GNUC__)
    /* relaxed: a hint with nothing to order; set once per create to the
     * same value, read by any thread that allocates a frame */
    if (CORO__LIKELY(__atomic_load_n(&coro__has_prefetchw, __ATOMIC_RELAXED))) {
        __asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
        return;
    }
#endif
    __builtin_prefetch(p, 1);
}

/* ---- time ------------------------------------------------------------------- */
/* CLOCK_MONOTONIC ns, never a virtual clock: for what is about the
 * machine's CPUs (base/spin.c LATE YIELDS), and coro__now's real clock */
static inline int64_t coro__mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
/* CLOCK_MONOTONIC ns; on a thread that drives a virtual scheduler (and
 * so in its jobs) that scheduler's virtual clock instead */
CORO__HIDDEN int64_t coro__now(void);
/* the virtual clock coro__now reads on this thread (ns, an atomic word),
 * NULL = the real clock: set only while a thread drives or joins a
 * scheduler created with .virtual_time (rt/vtime.c) */
extern __thread const int64_t *coro__tls_vclock CORO__HIDDEN;
/* The absolute deadline timeout ns after now (both ns).  A negative
 * timeout has none: -1.  So has one too far to represent: a deadline past
 * INT64_MAX ns (292 years) never comes, and "none" keeps it out of the
 * timer heaps, where a timer at INT64_MAX would sit for nothing (and a
 * virtual clock, which jumps to the next timer, would reach it).  Every
 * relative timeout of lib/ becomes a deadline here. */
static inline int64_t coro__deadline_after(int64_t now, int64_t timeout)
{
    if (timeout < 0)
        return -1;      /* CORO_FOREVER (others were refused before) */
    return timeout > INT64_MAX - now ? -1 : now + timeout;
}
/* a + b, b >= 0 ns (a deadline and a slack, a clock and a step), held
 * at INT64_MAX where the sum would pass it: the one saturating sum of
 * lib/, so that no deadline arithmetic overflows */
static inline int64_t coro__ns_add(int64_t a, int64_t b)
{
    return a > 0 && b > INT64_MAX - a ? INT64_MAX : a + b;
}
/* the latest deadline due at clock now.  A timer at INT64_MAX is a wait
 * without end (coro_sleep(CORO_FOREVER)), kept in a heap only so that a
 * cancel or the job's deadline finds it: it is never due, not even on a
 * virtual clock that coro_sched_advance took to INT64_MAX */
static inline int64_t coro__due_by(int64_t now)
{
    return now < INT64_MAX ? now : INT64_MAX - 1;
}
/* coro__deadline_after(coro__now(), timeout) */
CORO__HIDDEN int64_t coro__deadline(int64_t timeout);
/* arm timerfd tfd (CLOCK_MONOTONIC) at the absolute deadline d in ns;
 * INT64_MAX disarms it.  Nothing on a virtual clock: its deadlines are
 * not CLOCK_MONOTONIC's, and its driver fires them itself */
CORO__HIDDEN void coro__timerfd_arm(int tfd, int64_t d);

/* ---- NUMA (base/numa.c) ------------------------------------------------------
 * the node of a CPU as /sys lists it (0 when unknown or out of range; a
 * machine without NUMA is node 0 throughout).  Test hook: nodes > 0 makes
 * it answer cpu % nodes, as if the machine interleaved its CPUs over that
 * many nodes (read relaxed; set before the scheduler create that asks) */
CORO__HIDDEN int coro__numa_node(int cpu);
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern int coro__test_numa_nodes;
#endif

/* the log2 histogram bucket of a duration in ns (coro_sched_stats) */
static inline unsigned coro__hist_bucket(int64_t ns)
{
    if (ns < 2)
        return 0;
    unsigned b = 63u - (unsigned)__builtin_clzll((uint64_t)ns);
    return b < CORO_HIST_BUCKETS ? b : CORO_HIST_BUCKETS - 1;
}

/* the name of the function at fn ("name", or "name+0xOFF" inside it) in
 * buf: the dynamic symbol table, else the object's own (static functions);
 * NULL = unknown.  Reads the object's file: not for a hot path
 * (base/symbol.c) */
CORO__HIDDEN const char *coro__sym_name(const void *fn, char *buf, size_t len);

#endif
