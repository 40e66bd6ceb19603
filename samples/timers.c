/* SPDX-License-Identifier: MIT */
/* timers - many sleeping coroutines, and how late each one wakes.
 *
 *   timers [N]          N jobs (default 10,000) each sleep a random 0-10 ms;
 *                       print total time and lateness p50/p99
 *   timers --self-test  1,000 jobs; exit 0 when none woke early */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* [sleeper] */
struct sleeper {
    coro_t co;
    int64_t ns;         /* how long to sleep */
    int64_t late;       /* woke this much after the deadline (< 0: early) */
    int64_t deadline;
};

static int sleeper_body(coro_t *co)
{
    struct sleeper *t = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    t->deadline = coro_now() + t->ns;
    CORO_AWAIT(co, coro_sleep_until(t->deadline));
    t->late = coro_now() - t->deadline;
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}
/* [/sleeper] */

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    bool self = argc > 1 && strcmp(argv[1], "--self-test") == 0;
    int n = self ? 1000 : 10000;
    coro_sched_t *s;
    int early = 0, failed = 0;

    if (argc > 2 || (argc == 2 && !self && !sample_arg_int(argv[1], 1, 10000000, &n))) {
        fprintf(stderr, "usage: %s [TIMERS (default 10000)] | --self-test\n", argv[0]);
        return 2;
    }
    if (coro_sched_create(&s, NULL) < 0)
        return 2;
    struct sleeper *t = calloc((size_t)n, sizeof *t);
    int64_t *late = calloc((size_t)n, sizeof *late);
    if (!t || !late)
        return 2;
    srand(42);
    int64_t t0 = coro_now();
    for (int i = 0; i < n; i++) {
        t[i].ns = (int64_t)(rand() % 10000) * 1000;     /* 0-10 ms */
        coro_spawn(s, &t[i].co, sleeper_body, NULL);
    }
    for (int i = 0; i < n; i++) {
        intptr_t r;
        if (coro_join(&t[i].co, &r) != 0 || r != 0)
            failed++;
        late[i] = t[i].late;
        if (t[i].late < 0)
            early++;
    }
    int64_t total = coro_now() - t0;
    coro_sched_destroy(s);
    qsort(late, (size_t)n, sizeof *late, cmp64);
    printf("timers: %d jobs, total %.2f ms, lateness p50 %.1f us, p99 %.1f us, "
           "max %.1f us, early %d, failed %d\n",
           n, total / 1e6, late[n / 2] / 1e3, late[n * 99 / 100] / 1e3, late[n - 1] / 1e3,
           early, failed);
    free(t);
    free(late);
    return early || failed ? 1 : 0;
}
