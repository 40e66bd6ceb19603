/* SPDX-License-Identifier: MIT */
/* coro_blocking: calls off the workers on the blocking pool. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sched_impl.h"     /* white-box: the pool's thread counts, the spawn hook */

static const int worker_counts[] = { 0, 1, 2, 4 };
#define FOR_WORKERS(w)                                                              \
    for (size_t wi__ = 0; wi__ < sizeof worker_counts / sizeof worker_counts[0] &&  \
                          ((w) = worker_counts[wi__], 1);                           \
         wi__++)

static coro_sched_t *mk(int workers, uint32_t threads, uint32_t keepalive_ms)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = workers;
    c.blocking_threads = threads;
    c.blocking_keepalive_ms = keepalive_ms;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- results delivered once each ------------------------------------------------ */

struct call {
    coro_t co;
    intptr_t in, out;
    int ran;                /* atomic: how often fn ran for this call */
};

static intptr_t twice(void *arg)
{
    struct call *c = arg;
    __atomic_add_fetch(&c->ran, 1, __ATOMIC_RELAXED);
    usleep(100);            /* blocks: several calls overlap */
    return c->in * 2;
}

static int call_body(coro_t *co)
{
    struct call *c = CORO_SELF(co, struct call);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(twice, c));
    c->out = CORO_RESULT(co);
    CORO_END(co);
}

Test(blocking, results_of_many_concurrent_calls_are_each_delivered_once, .timeout = 60)
{
    enum { N = 300 };
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w, 16, 0);
        struct call *c = calloc(N, sizeof *c);
        for (int i = 0; i < N; i++) {
            c[i].in = i + 1;
            cr_assert_eq(coro_spawn(s, &c[i].co, call_body, NULL), 0);
        }
        for (int i = 0; i < N; i++) {
            coro_join(&c[i].co);
            cr_assert_eq(c[i].out, 2 * (i + 1), "workers %d call %d", w, i);
            cr_assert_eq(c[i].ran, 1);
        }
        uint32_t th;
        uint64_t started, retired;
        coro__blocking_counts(s, &th, &started, &retired);
        cr_assert_leq(started, 16, "never more threads than .blocking_threads");
        cr_assert_eq(coro_sched_destroy(s), 0);
        free(c);
    }
}

/* ---- a NULL fn -------------------------------------------------------------------- */

struct nulljob { coro_t co; intptr_t r; };

static int null_body(coro_t *co)
{
    struct nulljob *j = CORO_SELF(co, struct nulljob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(NULL, NULL));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

Test(blocking, a_null_function_is_einval, .timeout = 10)
{
    coro_sched_t *s = mk(1, 0, 0);
    struct nulljob j = { .r = 1 };
    cr_assert_eq(coro_block_on(s, &j.co, null_body, NULL), 0);
    cr_assert_eq(j.r, -EINVAL);
    coro_sched_destroy(s);
}

/* ---- thread creation fails --------------------------------------------------------- */

static int failing_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    (void)t; (void)a; (void)fn; (void)arg;
    return EAGAIN;
}

static int ran_anyway;

static intptr_t mark(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&ran_anyway, 1, __ATOMIC_RELAXED);
    return 7;
}

struct markjob { coro_t co; intptr_t r; };

static int mark_body(coro_t *co)
{
    struct markjob *j = CORO_SELF(co, struct markjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(mark, NULL));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

Test(blocking, no_thread_can_be_started_and_none_exists_gives_eagain_and_fn_never_runs,
     .timeout = 10)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w, 0, 0);
        struct markjob j = { .r = 1 };
        ran_anyway = 0;
        coro__blocking_spawn_hook = failing_create;
        cr_assert_eq(coro_block_on(s, &j.co, mark_body, NULL), 0);
        coro__blocking_spawn_hook = pthread_create;
        cr_assert_eq(j.r, -EAGAIN);
        cr_assert_eq(ran_anyway, 0);
        /* and the pool works again once threads can start */
        cr_assert_eq(coro_block_on(s, &j.co, mark_body, NULL), 0);
        cr_assert_eq(j.r, 7);
        coro_sched_destroy(s);
    }
}

/* ---- keep-alive --------------------------------------------------------------------- */

Test(blocking, idle_pool_threads_retire_after_the_keepalive, .timeout = 30)
{
    coro_sched_t *s = mk(2, 4, 20);     /* 20 ms keep-alive */
    struct markjob j = { .r = 1 };
    uint32_t th;
    uint64_t started, retired;

    cr_assert_eq(coro_block_on(s, &j.co, mark_body, NULL), 0);
    cr_assert_eq(j.r, 7);
    coro__blocking_counts(s, &th, &started, &retired);
    cr_assert_eq(started, 1);
    /* no sleep orders anything here: wait (bounded by .timeout) until the
     * idle thread has retired */
    for (;;) {
        coro__blocking_counts(s, &th, &started, &retired);
        if (th == 0)
            break;
        usleep(1000);
    }
    cr_assert_eq(retired, 1);
    /* a later call starts a thread again */
    cr_assert_eq(coro_block_on(s, &j.co, mark_body, NULL), 0);
    cr_assert_eq(j.r, 7);
    coro__blocking_counts(s, &th, &started, &retired);
    cr_assert_eq(started, 2);
    coro_sched_destroy(s);
}

/* ---- cancel: queued calls never run, running ones are waited for ---------------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_in;

static intptr_t gated(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gate_lock);
    gate_in++;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    return 5;
}

struct gjob { coro_t co; intptr_t r; int done; };

static int gated_body(coro_t *co)
{
    struct gjob *j = CORO_SELF(co, struct gjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(gated, NULL));
    j->r = CORO_RESULT(co);
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

static void *open_gate_later(void *arg)
{
    coro_sched_t *s = arg;
    /* open the gate only once the shutdown has cancelled the queued calls
     * (after the flag, an arm is refused: nothing can queue again) */
    while (!__atomic_load_n(&s->cancelling, __ATOMIC_ACQUIRE) || coro__blocking_queued(s))
        sched_yield();
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    return NULL;
}

Test(blocking, cancel_drops_queued_calls_and_waits_for_running_ones, .timeout = 30)
{
    int workers[] = { 1, 2, 4 };
    for (int k = 0; k < 3; k++) {
        enum { N = 6 };
        coro_sched_t *s = mk(workers[k], 2, 0);    /* 2 threads: 4 calls queue */
        struct gjob j[N];
        pthread_t t;
        memset(j, 0, sizeof j);
        gate_open = gate_in = 0;
        for (int i = 0; i < N; i++)
            cr_assert_eq(coro_spawn(s, &j[i].co, gated_body, NULL), 0);
        pthread_mutex_lock(&gate_lock);
        while (gate_in < 2)         /* both pool threads are inside fn */
            pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        /* the other four are queued (or about to be: an arm after the
         * cancel flag is refused with -ECANCELED all the same) */
        pthread_create(&t, NULL, open_gate_later, s);
        cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
        pthread_join(t, NULL);
        int five = 0, cancelled = 0;
        for (int i = 0; i < N; i++) {
            cr_assert(j[i].done);
            if (j[i].r == 5)
                five++;
            else if (j[i].r == -ECANCELED)
                cancelled++;
        }
        cr_assert_eq(five, 2, "the two running calls finish with fn's result");
        cr_assert_eq(cancelled, N - 2, "queued calls end -ECANCELED");
        cr_assert_eq(gate_in, 2, "fn never ran for a cancelled call");
        coro_sched_destroy(s);
    }
}

/* ---- the workers keep running while calls block ------------------------------------------ */

static intptr_t sleep_100ms(void *arg)
{
    (void)arg;
    usleep(100000);
    return 0;
}

struct sleeper { coro_t co; intptr_t r; };

static int sleeper_body(coro_t *co)
{
    struct sleeper *j = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(sleep_100ms, NULL));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

struct ticker { coro_t co; int stop; int ticks; };

static int ticker_body(coro_t *co)
{
    struct ticker *t = CORO_SELF(co, struct ticker);
    CORO_BEGIN(co);
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        CORO_AWAIT(co, coro_sleep(1000000));
        t->ticks++;
    }
    CORO_END(co);
}

Test(blocking, sixty_four_blocking_sleeps_run_side_by_side_and_the_workers_keep_ticking,
     .timeout = 60)
{
    enum { N = 64 };
    coro_sched_t *s = mk(2, 0, 0);
    static struct sleeper sl[N];
    struct ticker tk = { .stop = 0 };
    memset(sl, 0, sizeof sl);
    cr_assert_eq(coro_spawn(s, &tk.co, ticker_body, NULL), 0);
    int64_t t0 = now_ns();
    for (int i = 0; i < N; i++)
        cr_assert_eq(coro_spawn(s, &sl[i].co, sleeper_body, NULL), 0);
    for (int i = 0; i < N; i++) {
        coro_join(&sl[i].co);
        cr_assert_eq(sl[i].r, 0);
    }
    int64_t took = now_ns() - t0;
    __atomic_store_n(&tk.stop, 1, __ATOMIC_RELEASE);
    coro_join(&tk.co);
    /* serially: 6.4 s; a generous bound for a loaded machine */
    cr_assert_lt(took, 3000000000LL, "64 x 100 ms took %lld ms", (long long)(took / 1000000));
    cr_assert_gt(tk.ticks, 0, "the ticker ran while the calls blocked");
    coro_sched_destroy(s);
}

/* ---- coro_cancel(job): a queued call is withdrawn, fn never runs ------------------------- */

Test(blocking, coro_cancel_withdraws_a_queued_call_and_fn_never_runs, .timeout = 30)
{
    int workers[] = { 1, 2, 4 };
    for (int k = 0; k < 3; k++) {
        coro_sched_t *s = mk(workers[k], 1, 0);     /* one thread: the second call queues */
        struct gjob first = { .r = 0 }, second = { .r = 0 };
        gate_open = gate_in = 0;
        cr_assert_eq(coro_spawn(s, &first.co, gated_body, NULL), 0);
        pthread_mutex_lock(&gate_lock);
        while (gate_in < 1)             /* the only pool thread is inside fn */
            pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        cr_assert_eq(coro_spawn(s, &second.co, gated_body, NULL), 0);
        while (!coro__blocking_queued(s))   /* its call is queued behind */
            sched_yield();
        cr_assert_eq(coro_cancel(&second.co), 0);
        cr_assert_eq(coro_join(&second.co), 0);
        cr_assert_eq(second.r, -ECANCELED);
        pthread_mutex_lock(&gate_lock);
        gate_open = 1;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
        cr_assert_eq(coro_join(&first.co), 0);
        cr_assert_eq(first.r, 5);
        cr_assert_eq(gate_in, 1, "fn never ran for the cancelled call");
        coro_sched_destroy(s);
    }
}
