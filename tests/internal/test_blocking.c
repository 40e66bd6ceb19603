/* SPDX-License-Identifier: MIT */
/* coro_blocking: calls off the workers on the blocking pool. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"     /* white-box: the pool's thread counts, the spawn hook */

static const int worker_counts[] = { 0, 1, 2, 4 };
#define FOR_WORKERS(w)                                                              \
    for (size_t wi__ = 0; wi__ < sizeof worker_counts / sizeof worker_counts[0] &&  \
                          ((w) = worker_counts[wi__], 1);                           \
         wi__++)

/* a scheduler with a pool of `threads` blocking threads kept keepalive_ms */
static coro_sched_t *mk_pool(int workers, uint32_t threads, uint32_t keepalive_ms)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.blocking_threads = threads;
    c.blocking_keepalive_ns = (int64_t)keepalive_ms * 1000000;
    return mk_config(&c);
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
        coro_sched_t *s = mk_pool(w, 16, 0);
        struct call *c = calloc(N, sizeof *c);
        for (int i = 0; i < N; i++) {
            c[i].in = i + 1;
            cr_assert_eq(coro_spawn(s, &c[i].co, call_body, NULL), 0);
        }
        for (int i = 0; i < N; i++) {
            join_r(&c[i].co);
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
    coro_sched_t *s = mk_pool(1, 0, 0);
    struct nulljob j = { .r = 1 };
    cr_assert_eq(block_on_r(s, &j.co, null_body, NULL), 0);
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
        coro_sched_t *s = mk_pool(w, 0, 0);
        struct markjob j = { .r = 1 };
        ran_anyway = 0;
        coro__blocking_spawn_hook = failing_create;
        cr_assert_eq(block_on_r(s, &j.co, mark_body, NULL), 0);
        coro__blocking_spawn_hook = pthread_create;
        cr_assert_eq(j.r, -EAGAIN);
        cr_assert_eq(ran_anyway, 0);
        /* and the pool works again once threads can start */
        cr_assert_eq(block_on_r(s, &j.co, mark_body, NULL), 0);
        cr_assert_eq(j.r, 7);
        coro_sched_destroy(s);
    }
}

/* ---- keep-alive --------------------------------------------------------------------- */

Test(blocking, idle_pool_threads_retire_after_the_keepalive, .timeout = 30)
{
    coro_sched_t *s = mk_pool(2, 4, 20);     /* 20 ms keep-alive */
    struct markjob j = { .r = 1 };
    uint32_t th;
    uint64_t started, retired;

    cr_assert_eq(block_on_r(s, &j.co, mark_body, NULL), 0);
    cr_assert_eq(j.r, 7);
    coro__blocking_counts(s, &th, &started, &retired);
    cr_assert_geq(started, 1);
    cr_assert_leq(started, 2, "the thread that ran it and one spare");
    uint64_t first = started;
    /* no sleep orders anything here: wait (bounded by .timeout) until the
     * idle threads have retired */
    for (;;) {
        coro__blocking_counts(s, &th, &started, &retired);
        if (th == 0)
            break;
        usleep(1000);
    }
    cr_assert_eq(retired, first);
    /* a later call starts a thread again */
    cr_assert_eq(block_on_r(s, &j.co, mark_body, NULL), 0);
    cr_assert_eq(j.r, 7);
    coro__blocking_counts(s, &th, &started, &retired);
    cr_assert_gt(started, first);
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
        coro_sched_t *s = mk_pool(workers[k], 2, 0);    /* 2 threads: 4 calls queue */
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
    coro_sched_t *s = mk_pool(2, 0, 0);
    static struct sleeper sl[N];
    struct ticker tk = { .stop = 0 };
    memset(sl, 0, sizeof sl);
    cr_assert_eq(coro_spawn(s, &tk.co, ticker_body, NULL), 0);
    int64_t t0 = now_ns();
    for (int i = 0; i < N; i++)
        cr_assert_eq(coro_spawn(s, &sl[i].co, sleeper_body, NULL), 0);
    for (int i = 0; i < N; i++) {
        join_r(&sl[i].co);
        cr_assert_eq(sl[i].r, 0);
    }
    int64_t took = now_ns() - t0;
    __atomic_store_n(&tk.stop, 1, __ATOMIC_RELEASE);
    join_r(&tk.co);
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
        coro_sched_t *s = mk_pool(workers[k], 1, 0);     /* one thread: the second call queues */
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
        cr_assert_eq(join_r(&second.co), 0);
        cr_assert_eq(second.r, -ECANCELED);
        pthread_mutex_lock(&gate_lock);
        gate_open = 1;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
        cr_assert_eq(join_r(&first.co), 0);
        cr_assert_eq(first.r, 5);
        cr_assert_eq(gate_in, 1, "fn never ran for the cancelled call");
        coro_sched_destroy(s);
    }
}

/* ---- threads are started off the workers ------------------------------------------------ */

Test(blocking, a_burst_of_calls_starts_one_thread_on_a_worker_and_the_rest_on_pool_threads,
     .timeout = 60)
{
    enum { N = 64 };
    coro_sched_t *s = mk_pool(2, 0, 0);
    static struct sleeper sl[N];
    memset(sl, 0, sizeof sl);
    for (int i = 0; i < N; i++)
        cr_assert_eq(coro_spawn(s, &sl[i].co, sleeper_body, NULL), 0);
    for (int i = 0; i < N; i++) {
        join_r(&sl[i].co);
        cr_assert_eq(sl[i].r, 0);
    }
    uint32_t th;
    uint64_t started, retired;
    coro__blocking_counts(s, &th, &started, &retired);
    /* before: every call that found all threads busy started one in its
     * arm, on the worker (64 pthread_creates there) */
    cr_assert_eq(coro__blocking_arm_starts(s), 1, "threads started by a worker: %llu of %llu",
                 (unsigned long long)coro__blocking_arm_starts(s), (unsigned long long)started);
    cr_assert_geq(started, 2);
    coro_sched_destroy(s);
}

/* ---- .deadline and coro_cancel against a call that has started, or not ----------------- */

struct gjob2 { coro_t co; intptr_t r, next; };

/* a gated call, then an await that completes at once */
static int gated_then_yield_body(coro_t *co)
{
    struct gjob2 *j = CORO_SELF(co, struct gjob2);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(gated, NULL));
    j->r = CORO_RESULT(co);
    CORO_AWAIT(co, coro_blocking(mark, NULL));
    j->next = CORO_RESULT(co);
    CORO_END(co);
}

static void gate_wait_in(int n)
{
    pthread_mutex_lock(&gate_lock);
    while (gate_in < n)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static void gate_release(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

Test(blocking, a_started_call_keeps_its_result_after_coro_cancel_and_the_next_await_is_ecanceled,
     .timeout = 30)
{
    coro_sched_t *s = mk_pool(2, 2, 0);
    struct gjob2 j = { .r = 0 };
    gate_open = gate_in = 0;
    ran_anyway = 0;
    cr_assert_eq(coro_spawn(s, &j.co, gated_then_yield_body, NULL), 0);
    gate_wait_in(1);                    /* fn has started */
    cr_assert_eq(coro_cancel(&j.co), 0);
    gate_release();
    join_r(&j.co);
    cr_assert_eq(j.r, 5, "the started call's own result");
    cr_assert_eq(j.next, -ECANCELED);
    cr_assert_eq(ran_anyway, 0);
    coro_sched_destroy(s);
}

Test(blocking, a_started_call_keeps_its_result_past_the_deadline_and_the_next_await_times_out,
     .timeout = 30)
{
    coro_sched_t *s = mk_pool(2, 2, 0);
    struct gjob2 j = { .r = 0 };
    gate_open = gate_in = 0;
    ran_anyway = 0;
    int64_t dl = coro_now() + 20 * 1000000LL;
    coro_spawn_opts_t o = { .deadline = dl };
    cr_assert_eq(coro_spawn(s, &j.co, gated_then_yield_body, &o), 0);
    gate_wait_in(1);
    while (coro_now() <= dl)            /* past the deadline (not an ordering sleep) */
        usleep(1000);
    gate_release();
    join_r(&j.co);
    cr_assert_eq(j.r, 5);
    cr_assert_eq(j.next, -ETIMEDOUT);
    cr_assert_eq(ran_anyway, 0);
    coro_sched_destroy(s);
}

Test(blocking, a_queued_call_whose_deadline_passes_never_starts_and_ends_etimedout,
     .timeout = 30)
{
    coro_sched_t *s = mk_pool(1, 1, 0);      /* one thread: the second call queues */
    struct gjob first = { .r = 0 };
    struct markjob second = { .r = 0 };
    gate_open = gate_in = 0;
    ran_anyway = 0;
    cr_assert_eq(coro_spawn(s, &first.co, gated_body, NULL), 0);
    gate_wait_in(1);
    int64_t dl = coro_now() + 20 * 1000000LL;
    coro_spawn_opts_t o = { .deadline = dl };
    cr_assert_eq(coro_spawn(s, &second.co, mark_body, &o), 0);
    while (!coro__blocking_queued(s))
        sched_yield();
    while (coro_now() <= dl)
        usleep(1000);
    gate_release();
    join_r(&first.co);
    join_r(&second.co);
    cr_assert_eq(first.r, 5);
    cr_assert_eq(second.r, -ETIMEDOUT);
    cr_assert_eq(ran_anyway, 0, "fn never ran for the late call");
    coro_sched_destroy(s);
}

/* ---- coro_read / coro_write on regular files go through the pool -------------------------- */

static int tmp_file(const char *content)
{
    char path[] = "/tmp/corokit-blocking-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    if (content) {
        cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
        cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    }
    return fd;
}

struct fio {
    coro_t co;
    int fd;
    char buf[64];
    const char *out;
    intptr_t r[4];
};

/* read up to 64 bytes */
static int fread_body(coro_t *co)
{
    struct fio *f = CORO_SELF(co, struct fio);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(f->fd, f->buf, sizeof f->buf, CORO_FOREVER));
    f->r[0] = CORO_RESULT(co);
    CORO_END(co);
}

struct quick { coro_t co; };

static int quick_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 42);
    CORO_END(co);
}

Test(blocking, a_regular_file_read_waits_on_the_pool_while_its_worker_runs_other_jobs,
     .timeout = 30)
{
    int workers[] = { 1, 2 };
    for (int k = 0; k < 2; k++) {
        /* one pool thread, held inside a gated call: the read can only
         * queue behind it.  Before, the read ran on the worker at once. */
        coro_sched_t *s = mk_pool(workers[k], 1, 0);
        struct gjob g = { .r = 0 };
        struct fio f = { .fd = tmp_file("hello, file") };
        struct quick q;
        memset(&q, 0, sizeof q);
        gate_open = gate_in = 0;
        cr_assert_eq(coro_spawn(s, &g.co, gated_body, NULL), 0);
        gate_wait_in(1);
        cr_assert_eq(coro_spawn(s, &f.co, fread_body, NULL), 0);
        while (!coro__blocking_queued(s))   /* the read is on the pool's queue */
            sched_yield();
        /* the workers are free: another job runs to its end meanwhile */
        cr_assert_eq(block_on_r(s, &q.co, quick_body, NULL), 42);
        cr_assert_eq(__atomic_load_n(&f.co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK,
                     CORO__S_SUSPENDED, "the read has not completed");
        gate_release();
        join_r(&g.co);
        join_r(&f.co);
        cr_assert_eq(f.r[0], 11);
        cr_assert(memcmp(f.buf, "hello, file", 11) == 0);
        close(f.fd);
        coro_sched_destroy(s);
    }
}

/* write, write_all, seek back (plain lseek), read, read again at EOF */
static int frw_body(coro_t *co)
{
    struct fio *f = CORO_SELF(co, struct fio);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_write(f->fd, f->out, 6, CORO_FOREVER));
    f->r[0] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_write_all(f->fd, f->out + 6, strlen(f->out) - 6, CORO_FOREVER));
    f->r[1] = CORO_RESULT(co);
    lseek(f->fd, 0, SEEK_SET);
    CORO_AWAIT(co, coro_read(f->fd, f->buf, sizeof f->buf, CORO_FOREVER));
    f->r[2] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_read(f->fd, f->buf + 32, 8, CORO_FOREVER));
    f->r[3] = CORO_RESULT(co);
    CORO_END(co);
}

Test(blocking, a_regular_file_written_then_read_back_gives_the_bytes_and_then_eof, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk_pool(w, 4, 0);
        struct fio f = { .fd = tmp_file(NULL), .out = "corokit files" };
        uint32_t th;
        uint64_t started, retired;
        cr_assert_eq(block_on_r(s, &f.co, frw_body, NULL), 0);
        cr_assert_eq(f.r[0], 6, "workers %d", w);
        cr_assert_eq(f.r[1], 0, "write_all: 0 when all is written");
        cr_assert_eq(f.r[2], 13);
        cr_assert(memcmp(f.buf, "corokit files", 13) == 0);
        cr_assert_eq(f.r[3], 0, "EOF");
        coro__blocking_counts(s, &th, &started, &retired);
        cr_assert_geq(started, 1, "the calls went through the pool");
        close(f.fd);
        coro_sched_destroy(s);
    }
}

Test(blocking, a_file_read_through_a_write_only_fd_is_ebadf_as_read_2_says, .timeout = 30)
{
    coro_sched_t *s = mk_pool(1, 2, 0);
    char path[] = "/tmp/corokit-blocking-XXXXXX";
    int fd0 = mkstemp(path);
    cr_assert_geq(fd0, 0);
    struct fio f = { .fd = open(path, O_WRONLY) };
    unlink(path);
    close(fd0);
    cr_assert_geq(f.fd, 0);
    cr_assert_eq(block_on_r(s, &f.co, fread_body, NULL), 0);
    cr_assert_eq(f.r[0], -EBADF);
    close(f.fd);
    /* and a closed fd number */
    f.fd = 1000;
    cr_assert_eq(fcntl(1000, F_GETFD), -1);
    cr_assert_eq(block_on_r(s, &f.co, fread_body, NULL), 0);
    cr_assert_eq(f.r[0], -EBADF);
    coro_sched_destroy(s);
}

Test(blocking, a_file_read_cancelled_before_it_started_is_ecanceled_and_consumes_no_bytes,
     .timeout = 30)
{
    coro_sched_t *s = mk_pool(1, 1, 0);
    struct gjob g = { .r = 0 };
    struct fio f = { .fd = tmp_file("unread") };
    gate_open = gate_in = 0;
    cr_assert_eq(coro_spawn(s, &g.co, gated_body, NULL), 0);
    gate_wait_in(1);
    cr_assert_eq(coro_spawn(s, &f.co, fread_body, NULL), 0);
    while (!coro__blocking_queued(s))
        sched_yield();
    cr_assert_eq(coro_cancel(&f.co), 0);
    join_r(&f.co);
    cr_assert_eq(f.r[0], -ECANCELED);
    cr_assert_eq(lseek(f.fd, 0, SEEK_CUR), 0, "no byte was read");
    gate_release();
    join_r(&g.co);
    close(f.fd);
    coro_sched_destroy(s);
}

/* a pipe is not a file: coro_read on it still waits on epoll, not the pool */
Test(blocking, a_pipe_read_does_not_go_through_the_pool, .timeout = 30)
{
    coro_sched_t *s = mk_pool(1, 2, 0);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "x", 1), 1);
    struct fio f = { .fd = p[0] };
    cr_assert_eq(block_on_r(s, &f.co, fread_body, NULL), 0);
    cr_assert_eq(f.r[0], 1);
    uint32_t th;
    uint64_t started, retired;
    coro__blocking_counts(s, &th, &started, &retired);
    cr_assert_eq(started, 0);
    close(p[0]);
    close(p[1]);
    coro_sched_destroy(s);
}
