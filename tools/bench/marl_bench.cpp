// SPDX-License-Identifier: MIT
// marl twin of the corokit benchmarks (design.md section 7). Built only when
// MARL_DIR points at a marl source tree (run.sh); nothing of marl is kept here.
// marl has no yield, no I/O and no sleep: yield_many, spawn_many_remote_busy
// (its background jobs yield), io_pingpong are not implemented. timers use
// Event::wait_until on a never-signalled event (a fiber's timed wait).
// memory: every blocked task holds a fiber whose stack is mmapped with a guard
// page, two mappings per fiber, so the count is capped under
// vm.max_map_count (the line says jobs=).
//
// Events and WaitGroups are captured by value (shared handles), as marl's
// examples do: a task may still be inside signal()/done() when the waiter
// returns and its locals die.
//
// WORKERS = setWorkerThreadCount. The main thread is bound to the scheduler so
// it may call marl::schedule; its waits block the thread (it runs no tasks).
#include "bench_common.h"

#include <atomic>
#include <marl/defer.h>
#include <marl/event.h>
#include <marl/scheduler.h>
#include <marl/waitgroup.h>
#include <vector>

static const char *const shapes[] = {"spawn_many_local", "spawn_many_remote", "ping_pong",
                                     "chained_spawn", "fib", "timers", "memory"};

static int64_t spawn_many_local(long n)
{
    std::atomic<long> rem(n);
    marl::Event done(marl::Event::Mode::Manual);
    int64_t t0 = bench_now_ns();
    marl::schedule([&rem, done, n] {
        for (long i = 0; i < n; i++)
            marl::schedule([&rem, done] {
                if (rem.fetch_sub(1, std::memory_order_relaxed) == 1)
                    done.signal();
            });
    });
    done.wait();
    return bench_now_ns() - t0;
}

/* the main thread spawns n empty tasks, then joins them (one WaitGroup:
 * marl has no per-task handle) */
static int64_t spawn_many_remote(long n)
{
    marl::WaitGroup wg((unsigned)n);
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        marl::schedule([wg] { wg.done(); });
    wg.wait();
    return bench_now_ns() - t0;
}

static int64_t ping_pong(long n)
{
    std::atomic<long> rem(n);
    marl::Event done(marl::Event::Mode::Manual);
    int64_t t0 = bench_now_ns();
    marl::schedule([&rem, done, n] {
        for (long i = 0; i < n; i++)
            marl::schedule([&rem, done] {
                marl::Event e1, e2; /* oneshots; B holds copies of them */
                marl::schedule([e1, e2] {
                    e1.wait();
                    e2.signal();
                });
                e1.signal();
                e2.wait();
                if (rem.fetch_sub(1, std::memory_order_relaxed) == 1)
                    done.signal();
            });
    });
    done.wait();
    return bench_now_ns() - t0;
}

static void chain(marl::Event done, long n)
{
    if (n == 0)
        done.signal();
    else
        marl::schedule([done, n] { chain(done, n - 1); });
}

static int64_t chained_spawn(long n)
{
    marl::Event done(marl::Event::Mode::Manual);
    int64_t t0 = bench_now_ns();
    marl::schedule([done, n] { chain(done, n); });
    done.wait();
    return bench_now_ns() - t0;
}

static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0, b = 0;
    marl::WaitGroup wg(2);
    marl::schedule([&a, n, wg] { a = fib(n - 1); wg.done(); });
    marl::schedule([&b, n, wg] { b = fib(n - 2); wg.done(); });
    wg.wait();
    return a + b;
}

static int64_t fib_bench(long n)
{
    long v = 0;
    marl::Event done(marl::Event::Mode::Manual);
    int64_t t0 = bench_now_ns();
    marl::schedule([&v, n, done] { v = fib(n); done.signal(); });
    done.wait();
    int64_t t = bench_now_ns() - t0;
    if (n == 27 && v != 196418)
        abort();
    return t;
}

static int64_t timers(long n, int64_t *p99)
{
    std::vector<int64_t> late((size_t)n);
    marl::WaitGroup wg((unsigned)n);
    marl::Event never(marl::Event::Mode::Manual);
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        marl::schedule([&late, i, wg, never] {
            int64_t d = bench_timer_ns((int)i);
            int64_t deadline = bench_now_ns() + d;
            never.wait_for(std::chrono::nanoseconds(d));
            late[(size_t)i] = bench_now_ns() - deadline;
            wg.done();
        });
    wg.wait();
    int64_t t = bench_now_ns() - t0;
    *p99 = bench_p99(late.data(), (int)n);
    return t;
}

static void memory(long n, int workers)
{
    long maxmap = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &maxmap) != 1)
            maxmap = 65530;
        fclose(f);
    }
    if (n > maxmap / 2 - 4096)
        n = maxmap / 2 - 4096;
    long rss0 = bench_rss_bytes();
    std::atomic<long> ready(0);
    marl::Event gate(marl::Event::Mode::Manual);
    marl::WaitGroup wg((unsigned)n);
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        marl::schedule([&ready, wg, gate] {
            ready.fetch_add(1);
            gate.wait();
            wg.done();
        });
    while (ready.load() < n)
        sched_yield();
    int64_t t = bench_now_ns() - t0;
    usleep(10000);
    long rss1 = bench_rss_bytes();
    gate.signal();
    wg.wait();
    printf("bench=memory system=marl workers=%d ns=%lld bytes_per_job=%ld jobs=%ld\n", workers,
           (long long)(t / n), (rss1 - rss0) / n, n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    bench_args_t a;
    int rc = BENCH_START(argc, argv, &a, shapes);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    std::string shape = a.shape;
    marl::Scheduler::Config cfg;
    cfg.setWorkerThreadCount(a.workers);
    marl::Scheduler scheduler(cfg);
    scheduler.bind();
    defer(scheduler.unbind());

    long size = a.size;
    if (shape == "memory") {
        for (int i = 0; i < a.iters; i++)
            memory(size > 0 ? size : BENCH_MEM_JOBS, a.workers);
        return 0;
    }
    if (shape == "timers") {
        int64_t p99;
        long n = size > 0 ? size : BENCH_TIMERS;
        timers(n, &p99);
        for (int i = 0; i < a.iters; i++) {
            int64_t t = timers(n, &p99);
            printf("bench=timers system=marl workers=%d ns=%lld p99_late_ns=%lld\n", a.workers,
                   (long long)t, (long long)p99);
            fflush(stdout);
        }
        return 0;
    }
    int64_t (*fn)(long) = nullptr;
    if (shape == "spawn_many_local")
        fn = spawn_many_local, size = size > 0 ? size : BENCH_NUM_SPAWN;
    else if (shape == "spawn_many_remote")
        fn = spawn_many_remote, size = size > 0 ? size : BENCH_NUM_SPAWN;
    else if (shape == "ping_pong")
        fn = ping_pong, size = size > 0 ? size : BENCH_PINGS;
    else if (shape == "chained_spawn")
        fn = chained_spawn, size = size > 0 ? size : BENCH_CHAIN;
    else if (shape == "fib")
        fn = fib_bench, size = size > 0 ? size : BENCH_FIB_N;
    else {
        fprintf(stderr, "marl_bench: shape %s not implemented\n", a.shape);
        return 2;
    }
    fn(size); /* warm-up */
    for (int i = 0; i < a.iters; i++)
        bench_report(a.shape, "marl", a.workers, fn(size));
    return 0;
}
