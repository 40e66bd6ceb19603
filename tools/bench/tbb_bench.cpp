// SPDX-License-Identifier: MIT
// oneTBB twin of the corokit benchmarks (design.md section 7), for the shapes
// task_group fits: spawning, chains and fork-join. oneTBB has no yield, no
// message wait, no I/O and no timers, so ping_pong, yield_many,
// spawn_many_remote_busy (its background jobs yield), io_pingpong, timers and
// memory are not implemented (`tbb_bench list` says which are).
//
// Workers: a task_arena of WORKERS + 1 slots, one reserved for the main
// thread, under global_control(max_allowed_parallelism, WORKERS + 1): WORKERS
// worker threads, and the main thread joins in while it waits
// (task_group::wait runs tasks). Without the global_control the arena gets
// fewer workers than asked on small machines.
#include "bench_common.h"

#include <atomic>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

static const char *const shapes[] = {"spawn_many_local", "spawn_many_remote",
                                     "chained_spawn", "fib"};

/* the spawner is itself a task; its children each decrement a counter and
 * the last one raises a flag; the main thread waits for the group */
static int64_t spawn_many_local(long n)
{
    std::atomic<long> rem(n);
    std::atomic<bool> done(false);
    tbb::task_group tg;
    int64_t t0 = bench_now_ns();
    tg.run([&] {
        for (long i = 0; i < n; i++)
            tg.run([&] {
                if (rem.fetch_sub(1, std::memory_order_relaxed) == 1)
                    done.store(true, std::memory_order_release);
            });
    });
    tg.wait();
    int64_t t = bench_now_ns() - t0;
    if (!done.load())
        abort();
    return t;
}

/* the main thread spawns n empty tasks, then waits for all of them (one wait:
 * a task_group has no per-task handle) */
static int64_t spawn_many_remote(long n)
{
    tbb::task_group tg;
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        tg.run([] { asm volatile("" ::: "memory"); });
    tg.wait();
    return bench_now_ns() - t0;
}

static void chain(tbb::task_group &tg, std::atomic<bool> &done, long n)
{
    if (n == 0)
        done.store(true, std::memory_order_release);
    else
        tg.run([&tg, &done, n] { chain(tg, done, n - 1); });
}

static int64_t chained_spawn(long n)
{
    std::atomic<bool> done(false);
    tbb::task_group tg;
    int64_t t0 = bench_now_ns();
    tg.run([&] { chain(tg, done, n); });
    tg.wait();
    int64_t t = bench_now_ns() - t0;
    if (!done.load())
        abort();
    return t;
}

static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0, b = 0;
    tbb::task_group tg;
    tg.run([&] { a = fib(n - 1); });
    tg.run([&] { b = fib(n - 2); });
    tg.wait();
    return a + b;
}

static int64_t fib_bench(long n)
{
    long v = 0;
    tbb::task_group tg;
    int64_t t0 = bench_now_ns();
    tg.run([&] { v = fib(n); });
    tg.wait();
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
    std::string shape = a.shape;
    int64_t (*fn)(long) = nullptr;
    long size = 0;
    if (shape == "spawn_many_local")
        fn = spawn_many_local, size = BENCH_NUM_SPAWN;
    else if (shape == "spawn_many_remote")
        fn = spawn_many_remote, size = BENCH_NUM_SPAWN;
    else if (shape == "chained_spawn")
        fn = chained_spawn, size = BENCH_CHAIN;
    else if (shape == "fib")
        fn = fib_bench, size = BENCH_FIB_N;
    else {
        fprintf(stderr, "tbb_bench: shape %s not implemented\n", a.shape);
        return 2;
    }
    if (a.size > 0)
        size = a.size;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           (size_t)a.workers + 1);
    tbb::task_arena arena(a.workers + 1, 1);
    arena.execute([&] {
        fn(size); /* warm-up */
        for (int i = 0; i < a.iters; i++)
            bench_report(a.shape, "tbb", a.workers, fn(size));
    });
    return 0;
}
