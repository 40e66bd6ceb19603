/* SPDX-License-Identifier: MIT */
/* OpenMP-tasks twin of the corokit benchmarks (design.md section 7), for the
 * shapes tasks fit: spawning, chains and fork-join. OpenMP has no message
 * wait, no I/O and no timers; libgomp's taskyield does nothing, so
 * yield_many and the yielding background jobs of spawn_many_remote_busy would
 * measure nothing (or deadlock the team): not implemented.
 *
 * WORKERS = the team size (num_threads). The "plain thread" of
 * spawn_many_remote is the team member running the single construct.
 * Caution (notes/toolchain.md): libgomp runs many tiny tasks inline on the
 * spawning thread once its queue is long, so its spawn figures are partly
 * not queued tasks. Empty bodies hold an asm volatile so they stay.
 */
#include "bench_common.h"

#include <omp.h>
#include <stdatomic.h>

static const char *const shapes[] = {"spawn_many_local", "spawn_many_remote",
                                     "chained_spawn", "fib"};

static atomic_long rem;
static atomic_int done;

/* call from inside single: a spawner task spawns n tasks, each decrements a
 * counter, the last raises a flag; taskgroup waits for the descendants */
static int64_t spawn_many_local(long n)
{
    atomic_store(&rem, n);
    atomic_store(&done, 0);
    int64_t t0 = bench_now_ns();
#pragma omp taskgroup
    {
#pragma omp task
        for (long i = 0; i < n; i++) {
#pragma omp task
            if (atomic_fetch_sub_explicit(&rem, 1, memory_order_relaxed) == 1)
                atomic_store_explicit(&done, 1, memory_order_release);
        }
    }
    int64_t t = bench_now_ns() - t0;
    if (!atomic_load(&done))
        abort();
    return t;
}

static int64_t spawn_many_remote(long n)
{
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
#pragma omp task
        __asm__ volatile("" ::: "memory");
    }
#pragma omp taskwait
    return bench_now_ns() - t0;
}

static void chain(long n)
{
    if (n == 0) {
        atomic_store_explicit(&done, 1, memory_order_release);
    } else {
#pragma omp task
        chain(n - 1);
    }
}

static int64_t chained_spawn(long n)
{
    atomic_store(&done, 0);
    int64_t t0 = bench_now_ns();
#pragma omp taskgroup
    {
#pragma omp task
        chain(n);
    }
    int64_t t = bench_now_ns() - t0;
    if (!atomic_load(&done))
        abort();
    return t;
}

static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0, b = 0;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static int64_t fib_bench(long n)
{
    long v = 0;
    int64_t t0 = bench_now_ns();
#pragma omp task shared(v)
    v = fib(n);
#pragma omp taskwait
    int64_t t = bench_now_ns() - t0;
    if (n == 27 && v != 196418)
        abort();
    return t;
}

int main(int argc, char **argv)
{
    bench_args_t a;
    int rc = BENCH_START(argc, argv, &a, shapes);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    int64_t (*fn)(long) = NULL;
    long size = 0;
    if (strcmp(a.shape, "spawn_many_local") == 0)
        fn = spawn_many_local, size = BENCH_NUM_SPAWN;
    else if (strcmp(a.shape, "spawn_many_remote") == 0)
        fn = spawn_many_remote, size = BENCH_NUM_SPAWN;
    else if (strcmp(a.shape, "chained_spawn") == 0)
        fn = chained_spawn, size = BENCH_CHAIN;
    else if (strcmp(a.shape, "fib") == 0)
        fn = fib_bench, size = BENCH_FIB_N;
    else {
        fprintf(stderr, "omp_bench: shape %s not implemented\n", a.shape);
        return 2;
    }
    if (a.size > 0)
        size = a.size;
#pragma omp parallel num_threads(a.workers)
#pragma omp single
    {
        fn(size); /* warm-up */
        for (int i = 0; i < a.iters; i++)
            bench_report(a.shape, "openmp", a.workers, fn(size));
    }
    return 0;
}
