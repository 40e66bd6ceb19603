/* SPDX-License-Identifier: MIT */
/* the contended side of coro__spin_lock (base/base.h), and the idle
 * loops' yields (LATE YIELDS) */
#include "base/base.h"

void coro__spin_lock_slow(uint32_t *l)
{
    /* acquire: pairs with coro__spin_unlock's release */
    for (unsigned i = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); i++) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++i > CORO__SPIN_PAUSES)
                sched_yield();  /* the holder may be pre-empted or in a system call */
            else
                coro__cpu_relax();
        }
    }
}

/* LATE YIELDS.  An idle loop yields so that a thread it waits for (a
 * pool thread woken on this CPU, the I/O thread, a client or a backend on
 * the same machine) runs now, and so that the CPU is back at once when
 * nothing else wants it: the job a worker waits for often comes within
 * microseconds, and a sleeping thread costs a futex wake and, on an idle
 * CPU, the CPU's wake from its halt (tens of microseconds in a virtual
 * machine).  A yield that comes back late (CORO__YIELD_LATE_NS) says
 * another thread held the CPU for about a time slice: a client or a
 * backend that ran in our place, or a neighbour that wants the CPU for
 * its own ends - a compile, a CPU-bound batch job.  Either way the CPU is
 * contended, and a further yield would hand the other thread another
 * slice while the yielder, runnable all along, is queued behind it when
 * what it waits for comes, where nobody wakes it; a sleeping thread is
 * woken ahead of it.  So the loop sleeps after a late yield (a worker
 * looks once more and parks, the I/O thread waits in epoll), and only on
 * a CPU that nobody else wants does it keep its whole length.  But one
 * neighbour is ours: a thread outside the workers that spawns or wakes
 * jobs (a plain thread of the user's, the blocking pool) and shares the
 * worker's CPU.  A yield lends it the CPU, and comes back late because it
 * used it to make our work; parking there would only have it pre-empted
 * by our wake-up a moment later.  Such a thread changes its CPU's word
 * (sched/sched.h, LENT CPUS) at each submission, and a late yield across
 * which the worker's word changed counts as in time.  The clock
 * is CLOCK_MONOTONIC, never a virtual one: this is about the machine's
 * CPUs. */
#ifdef CORO_TEST_HOOKS
bool coro__idle_yields_late;
uint64_t coro__idle_yields;
#endif

bool coro__idle_yield(const uint32_t *lent)
{
    /* relaxed: a hint, compared below */
    uint32_t before = lent ? __atomic_load_n(lent, __ATOMIC_RELAXED) : 0;
    int64_t t0 = coro__mono_now();
    sched_yield();
#ifdef CORO_TEST_HOOKS
    /* relaxed: a count, read by a test once the yielders parked */
    __atomic_add_fetch(&coro__idle_yields, 1, __ATOMIC_RELAXED);
#endif
    if (!CORO__HOOK(coro__idle_yields_late, false) &&
        coro__mono_now() - t0 <= CORO__YIELD_LATE_NS)
        return true;
    /* late: was it a thread of ours that made work on this CPU?  Relaxed:
     * the word orders nothing; the work itself is found by the next look,
     * through the queues' own orders */
    return lent && __atomic_load_n(lent, __ATOMIC_RELAXED) != before;
}
