// SPDX-License-Identifier: MIT
// tools/bench/gen_twin.cpp - the C++20 twin of gen_bench.c: the same shapes
// with co_yield, built with g++ -std=c++20 -O2 (tools/bench/gen.sh).  g++ 12
// has no std::generator, so the types are written here by hand, the way a
// C++20 user writes them from cppreference's examples:
//   generator<T>        lazy, pulled with next(); co_yield stores the value
//   async_generator<T>  next() is an awaitable (symmetric transfer both ways),
//                       pulled by a task coroutine: the "job" shapes
//   nested generators   each level pulls the one below and co_yields its
//                       values again: what g++ 12 offers without
//                       std::ranges::elements_of (C++23), O(depth) a value
//
//   gen_twin plain N | job N | from1 N | from64 N | job64 N
// Prints one line: "mode values ns_per_value values_per_s sum".
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <utility>

static double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

template <class T> struct generator {
    struct promise_type {
        T value{};
        generator get_return_object() { return generator{handle::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(T v) noexcept
        {
            value = v;
            return {};
        }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    using handle = std::coroutine_handle<promise_type>;
    handle h;
    explicit generator(handle x) : h(x) {}
    generator(generator &&o) noexcept : h(std::exchange(o.h, {})) {}
    ~generator()
    {
        if (h)
            h.destroy();
    }
    bool next(T &out)
    {
        h.resume();
        if (h.done())
            return false;
        out = h.promise().value;
        return true;
    }
};

template <class T> struct async_generator {
    struct promise_type {
        T value{};
        std::coroutine_handle<> consumer;
        async_generator get_return_object() { return async_generator{handle::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct to_consumer {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept
            {
                return h.promise().consumer;
            }
            void await_resume() noexcept {}
        };
        to_consumer final_suspend() noexcept { return {}; }
        to_consumer yield_value(T v) noexcept
        {
            value = v;
            return {};
        }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    using handle = std::coroutine_handle<promise_type>;
    handle h;
    explicit async_generator(handle x) : h(x) {}
    async_generator(async_generator &&o) noexcept : h(std::exchange(o.h, {})) {}
    ~async_generator()
    {
        if (h)
            h.destroy();
    }
    struct next_awaiter {
        handle h;
        T *out;
        bool await_ready() noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<> me) noexcept
        {
            h.promise().consumer = me;
            return h;
        }
        bool await_resume() noexcept
        {
            if (h.done())
                return false;
            *out = h.promise().value;
            return true;
        }
    };
    next_awaiter next(T &out) { return next_awaiter{h, &out}; }
};

// a task that runs at once and is left at its end
struct task {
    struct promise_type {
        task get_return_object() { return task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
    ~task()
    {
        if (h)
            h.destroy();
    }
};

static generator<intptr_t> count(intptr_t n)
{
    for (intptr_t i = 0; i < n; i++)
        co_yield i;
}

static generator<intptr_t> nested(int depth, intptr_t n)
{
    if (depth == 0) {
        for (intptr_t i = 0; i < n; i++)
            co_yield i;
        co_return;
    }
    auto below = nested(depth - 1, n);
    intptr_t v;
    while (below.next(v))
        co_yield v;
}

static async_generator<intptr_t> acount(intptr_t n)
{
    for (intptr_t i = 0; i < n; i++)
        co_yield i;
}

static async_generator<intptr_t> anested(int depth, intptr_t n)
{
    if (depth == 0) {
        for (intptr_t i = 0; i < n; i++)
            co_yield i;
        co_return;
    }
    auto below = anested(depth - 1, n);
    intptr_t v;
    while (co_await below.next(v))
        co_yield v;
}

static task puller(async_generator<intptr_t> &g, intptr_t &sum)
{
    intptr_t v;
    while (co_await g.next(v))
        sum += v;
}

int main(int argc, char **argv)
{
    if (argc < 2 || std::strcmp(argv[1], "list") == 0) {
        std::puts("plain\njob\nfrom1\nfrom64\njob64");
        return 0;
    }
    const char *mode = argv[1];
    intptr_t n = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 10000000;
    intptr_t sum = 0, v;
    double t0 = now_s();
    if (std::strcmp(mode, "plain") == 0) {
        auto g = count(n);
        while (g.next(v))
            sum += v;
    } else if (std::strcmp(mode, "from1") == 0 || std::strcmp(mode, "from64") == 0) {
        auto g = nested(mode[4] == '1' ? 1 : 64, n);
        while (g.next(v))
            sum += v;
    } else if (std::strcmp(mode, "job") == 0 || std::strcmp(mode, "job64") == 0) {
        auto g = mode[3] ? anested(64, n) : acount(n);
        task t = puller(g, sum);
        if (!t.h.done()) {
            std::fprintf(stderr, "gen_twin: the task did not finish\n");
            return 1;
        }
    } else {
        std::fprintf(stderr, "gen_twin: unknown mode %s (list)\n", mode);
        return 2;
    }
    double dt = now_s() - t0;
    if (sum != (n - 1) * n / 2) {
        std::fprintf(stderr, "gen_twin: %s: sum %jd, expected %jd\n", mode, intmax_t(sum),
                     intmax_t((n - 1) * n / 2));
        return 1;
    }
    std::printf("%s %jd %.3f %.0f %jd\n", mode, intmax_t(n), dt * 1e9 / double(n), double(n) / dt,
                intmax_t(sum));
    return 0;
}
