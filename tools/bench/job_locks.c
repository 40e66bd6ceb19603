/* SPDX-License-Identifier: MIT */
/* tools/bench/job_locks.c - the figures behind docs/guide.md, "Short locks
 * and CPU work in a job".
 *
 *   locks   16 jobs on 2 workers each take a lock 100,000 times around a
 *           counter increment: a pthread_mutex_t held inside the job, then
 *           a coro_mutex_t awaited; ns per lock/unlock pair (all jobs).
 *   stall   1 worker: a job that runs W us of CPU between yields, beside a
 *           job that measures the gaps between its own turns; the worst
 *           gap for W = 10, 100, 1000 us (how long a job's CPU work keeps
 *           the other jobs of its worker waiting).
 *
 * Prints the median of 5 rounds of each.  Run under
 * `flock /tmp/corokit-bench.lock`.
 * Build: make; cc -O2 -Iinclude tools/bench/job_locks.c build/libcorokit.a -lck -pthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <corokit.h>

enum { JOBS = 16, ITERS = 100000, ROUNDS = 5 };

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

/* ---- locks ------------------------------------------------------------------------ */

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static coro_mutex_t clock_;
static long counter;

struct locker {
    coro_t co;
    int i, coro;
};

static int locker_body(coro_t *co)
{
    struct locker *f = CORO_SELF(co, struct locker);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < ITERS; f->i++) {
        if (f->coro) {
            CORO_AWAIT(co, coro_mutex_lock(&clock_, CORO_FOREVER));
            counter++;
            coro_mutex_unlock(&clock_);
        } else {
            pthread_mutex_lock(&plock);     /* held for one increment: never across an await */
            counter++;
            pthread_mutex_unlock(&plock);
        }
        if (f->i % 64 == 63)
            CORO_YIELD(co);     /* let the worker's other jobs in, as real jobs do */
    }
    CORO_END(co);
}

static double locks_round(coro_sched_t *s, int coro)
{
    struct locker j[JOBS] = { 0 };
    intptr_t res;
    int64_t t0 = now_ns();
    for (int i = 0; i < JOBS; i++) {
        j[i].coro = coro;
        coro_spawn(s, &j[i].co, locker_body, NULL);
    }
    for (int i = 0; i < JOBS; i++)
        coro_join(&j[i].co, &res);
    return (double)(now_ns() - t0) / ((double)JOBS * ITERS);
}

/* ---- stall ------------------------------------------------------------------------ */

struct burner {
    coro_t co;
    int64_t work_ns;
    int *stop;
};

static int burner_body(coro_t *co)
{
    struct burner *f = CORO_SELF(co, struct burner);
    CORO_BEGIN(co);
    while (!__atomic_load_n(f->stop, __ATOMIC_RELAXED)) {
        int64_t end = now_ns() + f->work_ns;
        while (now_ns() < end)
            ;
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct ticker {
    coro_t co;
    int i;
    int64_t last, worst;
    int *stop;
};

static int ticker_body(coro_t *co)
{
    struct ticker *f = CORO_SELF(co, struct ticker);
    CORO_BEGIN(co);
    f->last = now_ns();
    for (f->i = 0; f->i < 200; f->i++) {
        CORO_YIELD(co);
        int64_t t = now_ns();
        if (t - f->last > f->worst)
            f->worst = t - f->last;
        f->last = t;
    }
    __atomic_store_n(f->stop, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

static double stall_round(coro_sched_t *s, int64_t work_ns)
{
    int stop = 0;
    struct burner b = { .work_ns = work_ns, .stop = &stop };
    struct ticker t = { .stop = &stop };
    intptr_t res;
    coro_spawn(s, &b.co, burner_body, NULL);
    coro_spawn(s, &t.co, ticker_body, NULL);
    coro_join(&t.co, &res);
    coro_join(&b.co, &res);
    return (double)t.worst / 1e3;
}

int main(void)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    double v[ROUNDS];

    c.workers = 2;
    c.pin = false;
    coro_mutex_init(&clock_);
    if (coro_sched_create(&s, &c) < 0)
        return 1;
    locks_round(s, 0);      /* warm-up */
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < ROUNDS; r++)
            v[r] = locks_round(s, k);
        printf("locks: %-34s %7.1f ns per lock/unlock pair (median of %d)\n",
               k ? "coro_mutex_t awaited, 2 workers" : "pthread_mutex_t in a job, 2 workers",
               median(v, ROUNDS), ROUNDS);
    }
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);

    c.workers = 1;
    if (coro_sched_create(&s, &c) < 0)
        return 1;
    for (int64_t w = 10000; w <= 1000000; w *= 10) {
        for (int r = 0; r < ROUNDS; r++)
            v[r] = stall_round(s, w);
        printf("stall: a job runs %5lld us between yields: the other waits up to %8.1f us "
               "(median of %d)\n", (long long)(w / 1000), median(v, ROUNDS), ROUNDS);
    }
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    return counter == 0;
}
