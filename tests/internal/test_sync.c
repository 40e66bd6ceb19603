/* SPDX-License-Identifier: MIT */
/* tests for corokit/sync.h: event, wait group, mutex, semaphore, channel,
 * select - across 1, 2, 4 and 8 workers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corokit.h>
#include "fixture.h"
#include "white_box.h"  /* parked_on: wait until a job is on an object's list */

static const int nworkers[] = { 1, 2, 4, 8 };
#define NW (int)(sizeof nworkers / sizeof nworkers[0])
#define MS (1000000ll)

/* ---- mutex ---------------------------------------------------------------- */

struct counter_job {
    coro_t co;
    coro_mutex_t *m;
    long *counter;
    int i, n;
};

static int counter_body(coro_t *co)
{
    struct counter_job *f = CORO_SELF(co, struct counter_job);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
        long v = *f->counter;   /* a torn increment would lose counts */
        *f->counter = v + 1;
        if (coro_mutex_unlock(f->m) != 0)
            CORO_RETURN(co, -1);
    }
    CORO_END(co);
}

Test(sync, mutex_counter_of_1000_jobs_x_1000_ends_exact, .timeout = 240)
{
    enum { JOBS = 1000, ITER = 1000 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_mutex_t m;
        long counter = 0;
        struct counter_job *j = calloc(JOBS, sizeof *j);
        cr_assert_eq(coro_mutex_init(&m), 0);
        for (int i = 0; i < JOBS; i++) {
            j[i].m = &m;
            j[i].counter = &counter;
            j[i].n = ITER;
            cr_assert_eq(coro_spawn(s, &j[i].co, counter_body, NULL), 0);
        }
        for (int i = 0; i < JOBS; i++)
            cr_assert_eq(join_r(&j[i].co), 0);
        cr_assert_eq(counter, (long)JOBS * ITER, "%d workers: %ld", nworkers[k], counter);
        cr_assert_eq(coro_mutex_destroy(&m), 0);
        fin(s);
        free(j);
    }
}

struct lock_job {
    coro_t co;
    coro_mutex_t *m;
    int got, id;
    int *order, *no;
    int steps;      /* how many times a worker ran the body */
};

static int lock_body(coro_t *co)
{
    struct lock_job *f = CORO_SELF(co, struct lock_job);
    /* before CORO_BEGIN: counts every step, the resumptions included */
    __atomic_fetch_add(&f->steps, 1, __ATOMIC_RELAXED);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
    __atomic_store_n(&f->got, 1, __ATOMIC_RELEASE);
    if (f->order)
        f->order[(*f->no)++] = f->id;   /* under the mutex */
    coro_mutex_unlock(f->m);
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

struct spin_job {
    coro_t co;
    int i;
    int *done;
};

static int yielder_body(coro_t *co)
{
    struct spin_job *f = CORO_SELF(co, struct spin_job);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < 10000; f->i++)
        CORO_YIELD(co);
    __atomic_store_n(f->done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

static int64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

Test(sync, job_blocked_on_a_mutex_uses_no_cpu_its_worker_runs_others, .timeout = 30)
{
    coro_sched_t *s = mk(1);    /* one worker: a spinning waiter would starve the other */
    coro_mutex_t m;
    struct lock_job a = { .m = &m };
    struct spin_job y = { 0 };
    int done = 0;

    cr_assert_eq(coro_mutex_init(&m), 0);
    cr_assert_eq(coro_mutex_lock_blocking(&m, CORO_FOREVER), 0);   /* the main thread holds it */
    cr_assert_eq(coro_spawn(s, &a.co, lock_body, NULL), 0);
    cr_assert(parked_on(&a.co, &m), "the waiter never queued");
    /* the blocked job alone: its worker and the I/O thread sleep.  A waiter
     * that polled the mutex would burn its worker's CPU for the whole
     * window; 20 ms of 300 leaves room for a loaded machine's noise */
    int64_t cpu0 = process_cpu_ns();
    sleep_ms(300);
    int64_t cpu = process_cpu_ns() - cpu0;
    cr_assert_lt(cpu, 20000000, "the process used %lld us of CPU in 300 ms with one blocked job",
                 (long long)(cpu / 1000));
    y.done = &done;
    cr_assert_eq(coro_spawn(s, &y.co, yielder_body, NULL), 0);
    cr_assert_eq(join_r(&y.co), 0);      /* ran to the end beside the waiter */
    cr_assert_eq(__atomic_load_n(&a.got, __ATOMIC_ACQUIRE), 0);
    /* the waiter was run once to arm, never again through 10,000 yields beside it */
    cr_assert_eq(__atomic_load_n(&a.steps, __ATOMIC_RELAXED), 1);
    cr_assert_eq(coro_mutex_unlock(&m), 0);
    cr_assert_eq(join_r(&a.co), 0);
    cr_assert_eq(a.got, 1);
    /* and once after the hand-off */
    cr_assert_eq(a.steps, 2);
    fin(s);
}

Test(sync, mutex_hand_off_is_fifo, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    coro_mutex_t m;
    enum { N = 8 };
    struct lock_job j[N];
    int order[N], no = 0;

    memset(j, 0, sizeof j);
    cr_assert_eq(coro_mutex_init(&m), 0);
    cr_assert_eq(coro_mutex_lock_blocking(&m, CORO_FOREVER), 0);
    for (int i = 0; i < N; i++) {
        j[i].m = &m;
        j[i].id = i;
        j[i].order = order;
        j[i].no = &no;
        cr_assert_eq(coro_spawn(s, &j[i].co, lock_body, NULL), 0);
        /* queued before the next one (was: usleep(5000)) */
        cr_assert(parked_on(&j[i].co, &m), "waiter %d never queued", i);
    }
    cr_assert_eq(coro_mutex_unlock(&m), 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(join_r(&j[i].co), 0);
    cr_assert_eq(no, N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(order[i], i, "waiter %d got the mutex %dth", order[i], i);
    fin(s);
}

/* ---- channel: 1,000,000 items, 4 producers, 4 consumers ------------------- */

struct prod {
    coro_t co;
    coro_chan_t *ch;
    long i, from, to;
};

static int prod_body(coro_t *co)
{
    struct prod *f = CORO_SELF(co, struct prod);
    CORO_BEGIN(co);
    for (f->i = f->from; f->i < f->to; f->i++) {
        CORO_AWAIT(co, coro_chan_send(f->ch, (void *)(intptr_t)(f->i + 1), CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
    }
    CORO_END(co);
}

struct cons {
    coro_t co;
    coro_chan_t *ch;
    unsigned char *seen;
    long n;
    void *item;
};

static int cons_body(coro_t *co)
{
    struct cons *f = CORO_SELF(co, struct cons);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(f->ch, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) == -EPIPE)
            break;
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
        __atomic_add_fetch(&f->seen[(intptr_t)f->item - 1], 1, __ATOMIC_RELAXED);
        f->n++;
    }
    CORO_END(co);
}

Test(sync, channel_carries_1m_items_from_4_producers_to_4_consumers_each_once, .timeout = 240)
{
    enum { ITEMS = 1000000, P = 4, C = 4 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_chan_t ch;
        struct prod p[P];
        struct cons c[C];
        unsigned char *seen = calloc(ITEMS, 1);
        long total = 0;

        memset(p, 0, sizeof p);
        memset(c, 0, sizeof c);
        cr_assert_eq(coro_chan_init_alloc(&ch, 64, NULL), 0);
        for (int i = 0; i < C; i++) {
            c[i].ch = &ch;
            c[i].seen = seen;
            cr_assert_eq(coro_spawn(s, &c[i].co, cons_body, NULL), 0);
        }
        for (int i = 0; i < P; i++) {
            p[i].ch = &ch;
            p[i].from = (long)ITEMS / P * i;
            p[i].to = (long)ITEMS / P * (i + 1);
            cr_assert_eq(coro_spawn(s, &p[i].co, prod_body, NULL), 0);
        }
        for (int i = 0; i < P; i++)
            cr_assert_eq(join_r(&p[i].co), 0);
        cr_assert_eq(coro_chan_close(&ch), 0);
        for (int i = 0; i < C; i++) {
            cr_assert_eq(join_r(&c[i].co), 0);
            total += c[i].n;
        }
        cr_assert_eq(total, ITEMS, "%d workers: %ld received", nworkers[k], total);
        for (long i = 0; i < ITEMS; i++)
            cr_assert_eq(seen[i], 1, "%d workers: item %ld seen %d times", nworkers[k], i, seen[i]);
        cr_assert_eq(coro_chan_destroy(&ch), 0);
        free(seen);
        fin(s);
    }
}

/* ---- close wakes every waiter --------------------------------------------------- */

struct one_op {
    coro_t co;
    coro_chan_t *ch;
    void *item;
    int send;
    int *started;
};

static int one_op_body(coro_t *co)
{
    struct one_op *f = CORO_SELF(co, struct one_op);
    CORO_BEGIN(co);
    if (f->started)
        __atomic_add_fetch(f->started, 1, __ATOMIC_RELAXED);
    if (f->send)
        CORO_AWAIT(co, coro_chan_send(f->ch, f->item, CORO_FOREVER));
    else
        CORO_AWAIT(co, coro_chan_recv(f->ch, &f->item, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}


static void *thread_recv(void *arg)
{
    void *item;
    return (void *)(intptr_t)coro_chan_recv_blocking(arg, &item, CORO_FOREVER);
}

Test(sync, close_wakes_every_waiting_receiver_and_sender_with_epipe, .timeout = 60)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_chan_t rx, tx;
        void *b1[1], *b2[1];
        enum { N = 16 };
        struct one_op r[N], w[N];
        pthread_t t;
        void *tres;
        int started = 0;

        memset(r, 0, sizeof r);
        memset(w, 0, sizeof w);
        cr_assert_eq(coro_chan_init(&rx, b1, 1), 0);
        cr_assert_eq(coro_chan_init(&tx, b2, 1), 0);
        cr_assert_eq(coro_chan_try_send(&tx, NULL), 0);        /* tx is full */
        for (int i = 0; i < N; i++) {
            r[i].ch = &rx;
            w[i].ch = &tx;
            w[i].send = 1;
            r[i].started = w[i].started = &started;
            cr_assert_eq(coro_spawn(s, &r[i].co, one_op_body, NULL), 0);
            cr_assert_eq(coro_spawn(s, &w[i].co, one_op_body, NULL), 0);
        }
        cr_assert_eq(pthread_create(&t, NULL, thread_recv, &rx), 0);
        /* let them all reach their wait (one arriving after the close
         * gets -EPIPE at once, which the checks below accept as well) */
        for (int i = 0; i < N; i++) {
            cr_assert(parked_on(&r[i].co, &rx));
            cr_assert(parked_on(&w[i].co, SEND_KEY(&tx)));
        }
        cr_assert_eq(coro_chan_close(&rx), 0);
        cr_assert_eq(coro_chan_close(&tx), 0);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(join_r(&r[i].co), -EPIPE);
            cr_assert_eq(join_r(&w[i].co), -EPIPE);
        }
        pthread_join(t, &tres);
        cr_assert_eq((intptr_t)tres, -EPIPE);
        /* what was buffered before the close is still delivered */
        void *it = (void *)1;
        cr_assert_eq(coro_chan_try_recv(&tx, &it), 0);
        cr_assert_null(it);
        cr_assert_eq(coro_chan_try_recv(&tx, &it), -EPIPE);
        cr_assert_eq(coro_chan_destroy(&rx), 0);
        cr_assert_eq(coro_chan_destroy(&tx), 0);
        fin(s);
    }
}

/* ---- timeouts ------------------------------------------------------------------------ */

struct to_job {
    coro_t co;
    coro_chan_t *ch;
    coro_event_t *ev;
    coro_mutex_t *m;
    coro_sem_t *sem;
    void *item;
    int64_t t;
    intptr_t r[4];
};

static int timeout_body(coro_t *co)
{
    struct to_job *f = CORO_SELF(co, struct to_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_chan_recv(f->ch, &f->item, f->t));
    f->r[0] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_event_wait(f->ev, f->t));
    f->r[1] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_mutex_lock(f->m, f->t));
    f->r[2] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_sem_acquire(f->sem, f->t));
    f->r[3] = CORO_RESULT(co);
    CORO_END(co);
}

static void run_timeouts(int workers, int64_t t)
{
    coro_sched_t *s = mk(workers);
    coro_chan_t ch;
    void *buf[2];
    coro_event_t ev;
    coro_mutex_t m;
    coro_sem_t sem;
    struct to_job j = { .ch = &ch, .ev = &ev, .m = &m, .sem = &sem, .t = t };

    coro_chan_init(&ch, buf, 2);
    coro_event_init(&ev);
    coro_mutex_init(&m);
    coro_sem_init(&sem, 0);
    cr_assert_eq(coro_mutex_lock_blocking(&m, CORO_FOREVER), 0);
    cr_assert_eq(block_on_r(s, &j.co, timeout_body, NULL), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(j.r[i], -ETIMEDOUT, "%d workers, t=%lld: op %d gave %s", workers,
                     (long long)t, i, coro_err_name((int)j.r[i]));
    cr_assert_eq(coro_mutex_unlock(&m), 0);
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    cr_assert_eq(coro_mutex_destroy(&m), 0);
    fin(s);
}

Test(sync, zero_timeout_tries_once_and_gives_etimedout, .timeout = 30)
{
    for (int k = 0; k < NW; k++)
        run_timeouts(nworkers[k], 0);
}

Test(sync, finite_timeouts_in_jobs_give_etimedout, .timeout = 30)
{
    for (int k = 0; k < NW; k++)
        run_timeouts(nworkers[k], 5 * MS);
}

Test(sync, finite_timeouts_in_plain_threads_give_etimedout, .timeout = 30)
{
    coro_chan_t ch;
    void *buf[1], *it;
    coro_event_t ev;
    coro_sem_t sem;
    coro_waitgroup_t wg;
    coro_select_t sel;

    coro_chan_init(&ch, buf, 1);
    coro_event_init(&ev);
    coro_sem_init(&sem, 0);
    coro_waitgroup_init(&wg);
    coro_waitgroup_add(&wg, 1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(coro_chan_recv_blocking(&ch, &it, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_chan_try_send(&ch, NULL), 0);
    cr_assert_eq(coro_chan_send_blocking(&ch, NULL, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_event_wait_blocking(&ev, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_sem_acquire_blocking(&sem, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_waitgroup_wait_blocking(&wg, 5 * MS), -ETIMEDOUT);
    coro_select_init(&sel);
    coro_select_event(&sel, &ev);
    coro_select_send(&sel, &ch, NULL);
    cr_assert_eq(coro_select_blocking(&sel, 5 * MS), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    cr_assert(ms >= 29.0, "six 5 ms waits took %.1f ms", ms);
    /* nothing left behind: every waiter withdrew */
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    cr_assert_eq(coro_event_destroy(&ev), 0);
    cr_assert_eq(coro_sem_destroy(&sem), 0);
    cr_assert_eq(coro_waitgroup_destroy(&wg), 0);
}

/* ---- a plain thread and jobs share one channel --------------------------------------- */

struct share {
    coro_chan_t *in, *out;
    long n;
};

static void *thread_producer(void *arg)
{
    struct share *sh = arg;
    for (long i = 1; i <= sh->n; i++)
        if (coro_chan_send_blocking(sh->in, (void *)(intptr_t)i, CORO_FOREVER) != 0)
            return (void *)1;
    coro_chan_close(sh->in);
    return NULL;
}

struct relay {
    coro_t co;
    coro_chan_t *in, *out;
    void *item;
};

static int relay_body(coro_t *co)
{
    struct relay *f = CORO_SELF(co, struct relay);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(f->in, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            break;
        CORO_AWAIT(co, coro_chan_send(f->out, f->item, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
    }
    CORO_END(co);
}

Test(sync, a_plain_thread_and_jobs_share_one_channel, .timeout = 60)
{
    /* tens of thousands of items a worker count; the long runs of a
     * channel shared by threads and jobs are tests/stress/sync_chan's */
    enum { N = 20000, R = 4 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_chan_t in, out;
        struct share sh = { &in, &out, N };
        struct relay r[R];
        pthread_t t;
        void *item;
        long sum = 0, got = 0;

        memset(r, 0, sizeof r);
        coro_chan_init_alloc(&in, 8, NULL);
        coro_chan_init_alloc(&out, 8, NULL);
        for (int i = 0; i < R; i++) {
            r[i].in = &in;
            r[i].out = &out;
            cr_assert_eq(coro_spawn(s, &r[i].co, relay_body, NULL), 0);
        }
        cr_assert_eq(pthread_create(&t, NULL, thread_producer, &sh), 0);
        /* this thread consumes what the jobs relay */
        while (got < N && coro_chan_recv_blocking(&out, &item, CORO_FOREVER) == 0) {
            sum += (intptr_t)item;
            got++;
        }
        void *tr;
        pthread_join(t, &tr);
        cr_assert_null(tr);
        for (int i = 0; i < R; i++)
            cr_assert_eq(join_r(&r[i].co), 0);
        cr_assert_eq(got, N);
        cr_assert_eq(sum, (long)N * (N + 1) / 2);
        cr_assert_eq(coro_chan_try_recv(&out, &item), -EAGAIN);
        coro_chan_destroy(&in);
        coro_chan_destroy(&out);
        fin(s);
    }
}

/* ---- event, wait group, semaphore --------------------------------------------------------- */

struct ev_job {
    coro_t co;
    coro_event_t *ev;
    coro_waitgroup_t *wg;
    coro_sem_t *sem;
    int *inside, *max;
};

static int ev_wait_body(coro_t *co)
{
    struct ev_job *f = CORO_SELF(co, struct ev_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(f->ev, CORO_FOREVER));
    coro_waitgroup_done(f->wg);
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(sync, event_set_from_a_plain_thread_wakes_every_job, .timeout = 60)
{
    enum { N = 200 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_event_t ev;
        coro_waitgroup_t wg;
        struct ev_job *j = calloc(N, sizeof *j);

        coro_event_init(&ev);
        coro_waitgroup_init(&wg);
        cr_assert_eq(coro_waitgroup_add(&wg, N), N);
        for (int i = 0; i < N; i++) {
            j[i].ev = &ev;
            j[i].wg = &wg;
            cr_assert_eq(coro_spawn(s, &j[i].co, ev_wait_body, NULL), 0);
        }
        for (int i = 0; i < N; i++)
            cr_assert(parked_on(&j[i].co, &ev), "job %d never waited", i);
        cr_assert_eq(coro_event_is_set(&ev), 0);
        cr_assert_geq(coro_event_set(&ev), 0);
        cr_assert_eq(coro_waitgroup_wait_blocking(&wg, CORO_FOREVER), 0);
        for (int i = 0; i < N; i++)
            cr_assert_eq(join_r(&j[i].co), 0);
        cr_assert_eq(coro_event_wait_blocking(&ev, 0), 0);    /* stays set */
        cr_assert_eq(coro_event_reset(&ev), 0);
        cr_assert_eq(coro_event_wait_blocking(&ev, 0), -ETIMEDOUT);
        cr_assert_eq(coro_event_destroy(&ev), 0);
        cr_assert_eq(coro_waitgroup_destroy(&wg), 0);
        free(j);
        fin(s);
    }
}

static int sem_body(coro_t *co)
{
    struct ev_job *f = CORO_SELF(co, struct ev_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sem_acquire(f->sem, CORO_FOREVER));
    if (CORO_RESULT(co) != 0)
        CORO_RETURN(co, CORO_RESULT(co));
    {
        int in = __atomic_add_fetch(f->inside, 1, __ATOMIC_ACQ_REL);
        int m = __atomic_load_n(f->max, __ATOMIC_RELAXED);
        while (in > m && !__atomic_compare_exchange_n(f->max, &m, in, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
            ;
    }
    CORO_YIELD(co);
    __atomic_sub_fetch(f->inside, 1, __ATOMIC_ACQ_REL);
    coro_sem_release(f->sem, 1);
    CORO_END(co);
}

Test(sync, semaphore_bounds_how_many_jobs_are_inside, .timeout = 60)
{
    enum { N = 500, UNITS = 3 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_sem_t sem;
        int inside = 0, max = 0;
        struct ev_job *j = calloc(N, sizeof *j);

        cr_assert_eq(coro_sem_init(&sem, UNITS), 0);
        for (int i = 0; i < N; i++) {
            j[i].sem = &sem;
            j[i].inside = &inside;
            j[i].max = &max;
            cr_assert_eq(coro_spawn(s, &j[i].co, sem_body, NULL), 0);
        }
        for (int i = 0; i < N; i++)
            cr_assert_eq(join_r(&j[i].co), 0);
        cr_assert_leq(max, UNITS);
        cr_assert_eq(coro_sem_value(&sem), UNITS);
        cr_assert_eq(coro_sem_destroy(&sem), 0);
        free(j);
        fin(s);
    }
}

/* ---- error paths --------------------------------------------------------------------------- */

static void *fail_malloc(void *ctx, size_t n)
{
    (void)ctx;
    (void)n;
    return NULL;
}
static void fail_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
}

Test(sync, null_and_uninitialised_objects_give_einval, .timeout = 10)
{
    coro_chan_t ch;
    void *it;
    memset(&ch, 0, sizeof ch);
    cr_assert_eq(coro_event_init(NULL), -EINVAL);
    cr_assert_eq(coro_event_set(NULL), -EINVAL);
    cr_assert_eq(coro_event_reset(NULL), -EINVAL);
    cr_assert_eq(coro_event_wait_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_event_wait(NULL, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_waitgroup_init(NULL), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(NULL, 1), -EINVAL);
    cr_assert_eq(coro_waitgroup_wait_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_mutex_init(NULL), -EINVAL);
    cr_assert_eq(coro_mutex_lock_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_mutex_unlock(NULL), -EINVAL);
    cr_assert_eq(coro_mutex_lock(NULL, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_mutex_try_lock(NULL), -EINVAL);
    cr_assert_eq(coro_sem_init(NULL, 1), -EINVAL);
    cr_assert_eq(coro_sem_release(NULL, 1), -EINVAL);
    cr_assert_eq(coro_sem_try_acquire(NULL), -EINVAL);
    cr_assert_eq(coro_chan_init(NULL, &it, 1), -EINVAL);
    cr_assert_eq(coro_chan_init(&ch, NULL, 1), -EINVAL);
    cr_assert_eq(coro_chan_init(&ch, &it, 0), -EINVAL);
    cr_assert_eq(coro_chan_try_send(&ch, NULL), -EINVAL);      /* never initialised */
    cr_assert_eq(coro_chan_try_recv(NULL, &it), -EINVAL);
    cr_assert_eq(coro_chan_send_blocking(NULL, NULL, 0), -EINVAL);
    cr_assert_eq(coro_chan_recv(NULL, &it, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_chan_close(NULL), -EINVAL);
    cr_assert_eq(coro_select_init(NULL), -EINVAL);
    cr_assert_eq(coro_select_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_select_recv(NULL, &ch, &it), -EINVAL);
    /* destroyed objects are refused too */
    coro_event_t ev;
    coro_event_init(&ev);
    cr_assert_eq(coro_event_destroy(&ev), 0);
    cr_assert_eq(coro_event_set(&ev), -EINVAL);
    cr_assert_eq(coro_event_destroy(&ev), -EINVAL);
    coro_mutex_t dm;
    coro_mutex_init(&dm);
    cr_assert_eq(coro_mutex_destroy(&dm), 0);
    cr_assert_eq(coro_mutex_try_lock(&dm), -EINVAL);
}

Test(sync, bad_counts_give_einval_and_change_nothing, .timeout = 10)
{
    coro_sem_t sem;
    coro_waitgroup_t wg;
    cr_assert_eq(coro_sem_init(&sem, -1), -EINVAL);
    cr_assert_eq(coro_sem_init(&sem, 2), 0);
    cr_assert_eq(coro_sem_release(&sem, -1), -EINVAL);
    cr_assert_eq(coro_sem_release(&sem, INT64_MAX), -EINVAL);
    cr_assert_eq(coro_sem_value(&sem), 2);
    cr_assert_eq(coro_sem_try_acquire(&sem), 0);
    cr_assert_eq(coro_sem_try_acquire(&sem), 0);
    cr_assert_eq(coro_sem_try_acquire(&sem), -EAGAIN);
    cr_assert_eq(coro_waitgroup_init(&wg), 0);
    cr_assert_eq(coro_waitgroup_done(&wg), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, 2), 2);
    cr_assert_eq(coro_waitgroup_add(&wg, -3), -EINVAL);
    cr_assert_eq(coro_waitgroup_add(&wg, -2), 0);
    cr_assert_eq(coro_waitgroup_wait_blocking(&wg, 0), 0);
}

static void *thread_lock_unlock_other(void *arg)
{
    return (void *)(intptr_t)coro_mutex_unlock(arg);
}

struct unlocker { coro_t co; coro_mutex_t *m; };

/* a job that does not own m unlocks it, then tries it */
static int unlocker_body(coro_t *co)
{
    struct unlocker *u = CORO_SELF(co, struct unlocker);
    CORO_BEGIN(co);
    if (coro_mutex_unlock(u->m) != -EPERM)
        CORO_RETURN(co, 1);
    CORO_RETURN(co, coro_mutex_try_lock(u->m));
    CORO_END(co);
}

Test(sync, unlock_by_a_non_owner_gives_eperm, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    coro_mutex_t m;
    pthread_t t;
    void *r;
    struct unlocker u = { .m = &m };

    c.workers = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    coro_mutex_init(&m);
    cr_assert_eq(coro_mutex_unlock(&m), -EPERM);              /* not locked */
    cr_assert_eq(coro_mutex_lock_blocking(&m, 0), 0);
    cr_assert_eq(coro_mutex_lock_blocking(&m, 0), -EDEADLK);  /* not recursive */
    cr_assert_eq(coro_mutex_try_lock(&m), -EDEADLK);
    pthread_create(&t, NULL, thread_lock_unlock_other, &m);
    pthread_join(t, &r);
    cr_assert_eq((intptr_t)r, -EPERM);                          /* another thread */
    /* a job that does not own it: -EPERM, and try_lock -EAGAIN */
    cr_assert_eq(block_on_r(s, &u.co, unlocker_body, NULL), -EAGAIN);
    cr_assert_eq(coro_mutex_destroy(&m), -EBUSY);               /* locked */
    cr_assert_eq(coro_mutex_unlock(&m), 0);
    cr_assert_eq(coro_mutex_destroy(&m), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* coro_mutex_trylock is the deprecated old name of coro_mutex_try_lock,
 * with its old frame argument: it still compiles (with a warning, silenced
 * here), links, and takes the mutex for the frame's job (NULL: the
 * thread). */
Test(sync, deprecated_trylock_still_works_as_try_lock, .timeout = 10)
{
    coro_mutex_t m;
    coro_t fake = { 0 };

    cr_assert_eq(coro_mutex_init(&m), 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    cr_assert_eq(coro_mutex_trylock(NULL, NULL), -EINVAL);
    cr_assert_eq(coro_mutex_trylock(&m, NULL), 0);
    cr_assert_eq(coro_mutex_trylock(&m, NULL), -EDEADLK);
    cr_assert_eq(coro_mutex_trylock(&m, &fake), -EAGAIN);
    cr_assert_eq(coro_mutex_try_lock(&m), -EDEADLK, "the same lock, the same owner");
    cr_assert_eq(coro_mutex_unlock(&m), 0);
    cr_assert_eq(coro_mutex_trylock(&m, &fake), 0);
    cr_assert_eq(coro_mutex_unlock(&m), -EPERM, "the frame's job owns it");
#pragma GCC diagnostic pop
    cr_assert_eq(coro_mutex_destroy(&m), -EBUSY);
}

struct dl_job {
    coro_t co;
    coro_chan_t *ch;
    coro_mutex_t *m;
    intptr_t r[4];
};

static int deadlock_body(coro_t *co)
{
    struct dl_job *f = CORO_SELF(co, struct dl_job);
    void *it;
    CORO_BEGIN(co);
    f->r[0] = coro_chan_recv_blocking(f->ch, &it, CORO_FOREVER);
    f->r[1] = coro_mutex_lock_blocking(f->m, CORO_FOREVER);
    CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
    CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
    f->r[2] = CORO_RESULT(co);
    f->r[3] = coro_mutex_unlock(f->m);
    CORO_END(co);
}

Test(sync, blocking_calls_from_a_job_give_edeadlk, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    coro_chan_t ch;
    void *b[1];
    coro_mutex_t m;
    struct dl_job j = { .ch = &ch, .m = &m };

    coro_chan_init(&ch, b, 1);
    coro_mutex_init(&m);
    cr_assert_eq(block_on_r(s, &j.co, deadlock_body, NULL), 0);
    cr_assert_eq(j.r[0], -EDEADLK);
    cr_assert_eq(j.r[1], -EDEADLK);
    cr_assert_eq(j.r[2], -EDEADLK);     /* the job already owns it */
    cr_assert_eq(j.r[3], 0);
    fin(s);
}

Test(sync, channel_errors, .timeout = 10)
{
    coro_chan_t ch;
    void *b[2], *it;
    coro_alloc_t failing = { .alloc = fail_malloc, .free = fail_free };

    cr_assert_eq(coro_chan_init_alloc(&ch, 4, &failing), -ENOMEM);
    cr_assert_eq(coro_chan_try_send(&ch, NULL), -EINVAL);
    cr_assert_eq(coro_chan_init(&ch, b, 2), 0);
    cr_assert_eq(coro_chan_cap(&ch), 2);
    cr_assert_eq(coro_chan_try_recv(&ch, &it), -EAGAIN);
    cr_assert_eq(coro_chan_try_send(&ch, (void *)1), 0);
    cr_assert_eq(coro_chan_try_send(&ch, (void *)2), 0);
    cr_assert_eq(coro_chan_try_send(&ch, (void *)3), -EAGAIN);
    cr_assert_eq(coro_chan_recv_blocking(&ch, NULL, 0), -EINVAL);
    cr_assert_eq(coro_chan_close(&ch), 0);
    cr_assert_eq(coro_chan_close(&ch), 0, "a second close does nothing");
    cr_assert_eq(coro_chan_try_send(&ch, (void *)4), -EPIPE);
    cr_assert_eq(coro_chan_send_blocking(&ch, (void *)4, CORO_FOREVER), -EPIPE);
    cr_assert_eq(coro_chan_recv_blocking(&ch, &it, CORO_FOREVER), 0);
    cr_assert_eq((intptr_t)it, 1);
    cr_assert_eq(coro_chan_try_recv(&ch, &it), 0);
    cr_assert_eq((intptr_t)it, 2);
    cr_assert_eq(coro_chan_recv_blocking(&ch, &it, CORO_FOREVER), -EPIPE);
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    cr_assert_eq(coro_chan_destroy(&ch), -EINVAL);
}

/* until a plain thread is on key's wait list (no sleep orders this) */
static void until_waited_on(const void *key)
{
    for (bool waiting = false; !waiting; sched_yield()) {
        coro__parklot_bucket_t *b = coro__parklot_lock(key);
        waiting = coro__parklot_waiting(b, key);
        coro__parklot_unlock(b);
    }
}

static void *thread_wait_event(void *arg)
{
    return (void *)(intptr_t)coro_event_wait_blocking(arg, CORO_FOREVER);
}

Test(sync, destroy_while_waited_on_gives_ebusy, .timeout = 10)
{
    coro_event_t ev;
    pthread_t t;
    void *r;

    coro_event_init(&ev);
    pthread_create(&t, NULL, thread_wait_event, &ev);
    until_waited_on(&ev);
    cr_assert_eq(coro_event_destroy(&ev), -EBUSY);
    cr_assert_eq(coro_event_destroy(&ev), -EBUSY);
    cr_assert_eq(coro_event_set(&ev), 1);
    pthread_join(t, &r);
    cr_assert_eq((intptr_t)r, 0);
    cr_assert_eq(coro_event_destroy(&ev), 0);
}

static void *thread_acquire(void *arg)
{
    return (void *)(intptr_t)coro_sem_acquire_blocking(arg, CORO_FOREVER);
}

static void *thread_wait_wg(void *arg)
{
    return (void *)(intptr_t)coro_waitgroup_wait_blocking(arg, CORO_FOREVER);
}

Test(sync, sem_and_waitgroup_destroy_while_waited_on_give_ebusy, .timeout = 10)
{
    coro_sem_t sem;
    coro_waitgroup_t wg;
    pthread_t t;
    void *r;

    cr_assert_eq(coro_sem_init(&sem, 0), 0);
    pthread_create(&t, NULL, thread_acquire, &sem);
    until_waited_on(&sem);
    cr_assert_eq(coro_sem_destroy(&sem), -EBUSY);
    cr_assert_eq(coro_sem_release(&sem, 1), 1);
    pthread_join(t, &r);
    cr_assert_eq((intptr_t)r, 0);
    cr_assert_eq(coro_sem_destroy(&sem), 0);
    cr_assert_eq(coro_sem_destroy(&sem), -EINVAL);

    cr_assert_eq(coro_waitgroup_init(&wg), 0);
    cr_assert_eq(coro_waitgroup_add(&wg, 1), 1);
    pthread_create(&t, NULL, thread_wait_wg, &wg);
    until_waited_on(&wg);
    cr_assert_eq(coro_waitgroup_destroy(&wg), -EBUSY);
    cr_assert_eq(coro_waitgroup_done(&wg), 0);
    pthread_join(t, &r);
    cr_assert_eq((intptr_t)r, 0);
    cr_assert_eq(coro_waitgroup_destroy(&wg), 0);
    cr_assert_eq(coro_waitgroup_destroy(&wg), -EINVAL);
}

/* ---- the samples run and exit 0 ---------------------------------------------------------- */

static void run_sample(const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/samples/%s > /dev/null", CORO_BUILD_DIR, name);
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "%s exited with %d", cmd, rc);
}

Test(sync, sample_pipeline_exits_0, .timeout = 60)
{
    run_sample("pipeline");
}

Test(sync, sample_fanout_exits_0, .timeout = 60)
{
    run_sample("fanout");
}

/* ---- single-threaded run and a timeout whose wait ended early ------------ */

struct st_waiter {
    coro_t co;
    coro_event_t *ev;
    intptr_t got;
};

static int st_wait_body(coro_t *co)
{
    struct st_waiter *w = CORO_SELF(co, struct st_waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(w->ev, 30LL * 1000 * 1000 * 1000));     /* 30 s */
    w->got = CORO_RESULT(co);
    CORO_END(co);
}

static int st_set_body(coro_t *co)
{
    struct st_waiter *w = CORO_SELF(co, struct st_waiter);
    CORO_BEGIN(co);
    coro_event_set(w->ev);
    CORO_END(co);
}

Test(sync, single_threaded_run_returns_once_jobs_finish_despite_a_stale_timeout, .timeout = 20)
{
    coro_sched_config_t c = { .workers = 0 };
    coro_sched_t *s;
    coro_event_t ev;
    struct st_waiter w = { .got = 1 }, setter = { 0 };

    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_event_init(&ev), 0);
    w.ev = setter.ev = &ev;
    cr_assert_eq(coro_spawn(s, &w.co, st_wait_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &setter.co, st_set_body, NULL), 0);
    int64_t t0 = coro_now();
    cr_assert_gt(coro_sched_run(s), 0);
    /* the waiter's 30 s timeout is still in the heap; run must not wait for it */
    cr_assert_lt(coro_now() - t0, 10LL * 1000 * 1000 * 1000, "coro_sched_run waited for a stale timeout");
    cr_assert_eq(w.got, 0);
    coro_event_destroy(&ev);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
