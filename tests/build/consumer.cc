// SPDX-License-Identifier: MIT
// tests/build/consumer.cc - the C++ twin of consumer.c: corokit's headers
// under -std=c++17 -pedantic (the switch back end) and -std=gnu++17 (labels
// as values), linked against the installed library (tools/ci/check-build.sh).
#include <corokit.h>
#include <cstdio>
#include <vector>

struct fib {
    coro_t co;
    int n;
    fib *kids;
    intptr_t a;
};

static int fib_body(coro_t *co)
{
    fib *f = CORO_SELF(co, fib);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    f->kids = new fib[2]{};
    f->kids[0].n = f->n - 1;
    f->kids[1].n = f->n - 2;
    CORO_AWAIT(co, coro_call(&f->kids[0].co, fib_body));
    f->a = CORO_RESULT(co);
    CORO_AWAIT(co, coro_call(&f->kids[1].co, fib_body));
    f->a += CORO_RESULT(co);
    delete[] f->kids;
    CORO_RETURN(co, f->a);
    CORO_END(co);
}

int main()
{
    coro_sched_t *s = nullptr;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    cfg.workers = 0;                    // single-threaded: jobs run in coro_join
    if (int rc = coro_sched_create(&s, &cfg); rc < 0) {
        std::fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    std::vector<fib> jobs(3);
    coro_spawn_opts_t o{};
    o.priority = CORO_PRIO_LOW;
    intptr_t sum = 0;
    for (size_t i = 0; i < jobs.size(); i++) {
        jobs[i].n = 10 + static_cast<int>(i);
        if (coro_spawn(s, &jobs[i].co, fib_body, &o) != 0)
            return 1;
    }
    for (auto &j : jobs) {
        intptr_t r = 0;
        if (coro_join(&j.co, &r) != 0)
            return 1;
        sum += r;
    }
    coro_sched_destroy(s);
    std::printf("corokit (C++, %s back end): fib(10)+fib(11)+fib(12) = %ld\n",
                CORO_BACKEND_NAME, static_cast<long>(sum));
    return sum == 55 + 89 + 144 ? 0 : 1;
}
