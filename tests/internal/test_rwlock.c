/* SPDX-License-Identifier: MIT */
/* coro_rwlock_t: exclusion, the writer-preferring policy with reader
 * batches, writers that leave (timeout, cancel, thread timeout), errors -
 * on 0 and 2 workers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <corokit.h>
#include "lockjob.h"

static const int nworkers[] = { 0, 2 };
#define NW 2

/* ---- exclusion under load ------------------------------------------------------------ */

struct rw_data {
    long a, b;          /* a writer changes both; a reader must see them equal */
    long torn;
};

struct mixer {
    coro_t co;
    coro_rwlock_t *rw;
    struct rw_data *d;
    int i, n, id;
};

static int mixer_body(coro_t *co)
{
    struct mixer *f = CORO_SELF(co, struct mixer);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        if ((f->i + f->id) % 4 == 0) {
            CORO_AWAIT(co, coro_rwlock_write_lock(f->rw, CORO_FOREVER));
            if (CORO_RESULT(co) != 0)
                CORO_RETURN(co, CORO_RESULT(co));
            f->d->a++;
            CORO_YIELD(co);     /* hold it across a suspension: b lags a meanwhile */
            f->d->b = f->d->a;
            if (coro_rwlock_write_unlock(f->rw) != 0)
                CORO_RETURN(co, -1);
        } else {
            CORO_AWAIT(co, coro_rwlock_read_lock(f->rw, CORO_FOREVER));
            if (CORO_RESULT(co) != 0)
                CORO_RETURN(co, CORO_RESULT(co));
            if (__atomic_load_n(&f->d->a, __ATOMIC_RELAXED) != __atomic_load_n(&f->d->b, __ATOMIC_RELAXED))
                __atomic_add_fetch(&f->d->torn, 1, __ATOMIC_RELAXED);
            CORO_YIELD(co);
            if (coro_rwlock_read_unlock(f->rw) != 0)
                CORO_RETURN(co, -1);
        }
    }
    CORO_END(co);
}

Test(rwlock, writers_exclude_everyone_and_readers_never_see_a_half_write, .timeout = 120)
{
    enum { JOBS = 64, ITER = 200 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        struct rw_data d = { 0 };
        struct mixer *j = calloc(JOBS, sizeof *j);
        long writes = 0;
        cr_assert_eq(coro_rwlock_init(&rw), 0);
        for (int i = 0; i < JOBS; i++) {
            j[i] = (struct mixer){ .rw = &rw, .d = &d, .n = ITER, .id = i };
            for (int it = 0; it < ITER; it++)
                writes += (it + i) % 4 == 0;
            cr_assert_eq(coro_spawn(s, &j[i].co, mixer_body, NULL), 0);
        }
        for (int i = 0; i < JOBS; i++)
            cr_assert_eq(join_r(&j[i].co), 0);
        cr_assert_eq(d.a, writes, "%d workers: %ld of %ld writes", nworkers[k], d.a, writes);
        cr_assert_eq(d.torn, 0, "%d workers: %ld torn reads", nworkers[k], d.torn);
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
        free(j);
    }
}

/* ---- the policy ------------------------------------------------------------------------ */

/* a thread reads; a writer waits; a reader that comes now waits behind it
 * (no writer starvation); the writer goes first when the thread lets go */
static void run_writer_preferred(int workers)
{
    coro_sched_t *s = mk(workers);
    coro_rwlock_t rw;
    coro_event_t hold;
    struct lk w = { .id = 1 }, r = { .id = 2 };
    int order[2], no = 0;

    coro_rwlock_init(&rw);
    coro_event_init(&hold);
    cr_assert_eq(coro_rwlock_read_lock_blocking(&rw, CORO_FOREVER), 0);
    w.order = r.order = order;
    w.no = r.no = &no;
    lk_spawn(s, &w, &rw, WR, &hold);
    lk_parked(s, &w);
    lk_spawn(s, &r, &rw, RD, NULL);
    lk_parked(s, &r);
    cr_assert_eq(coro_rwlock_try_read_lock(&rw), -EAGAIN, "a writer waits: no new reader");
    cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
    cr_assert_eq(lk_got(s, &w), 0);
    cr_assert(lk_pending(s, &r), "the reader got in under the writer");
    coro_event_set(&hold);
    cr_assert_eq(lk_got(s, &r), 0);
    cr_assert_eq(join_r(&w.co), 0);
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(order[0], 1);
    cr_assert_eq(order[1], 2);
    cr_assert_eq(coro_rwlock_destroy(&rw), 0);
    fin(s);
}

Test(rwlock, a_waiting_writer_goes_before_readers_that_come_after_it, .timeout = 60)
{
    for (int k = 0; k < NW; k++)
        run_writer_preferred(nworkers[k]);
}

/* a writer holds; readers r1, r2 wait, then writer w2: the unlock hands the
 * lock to both readers together (no reader starvation), w2 after them */
static void run_reader_batch(int workers)
{
    coro_sched_t *s = mk(workers);
    coro_rwlock_t rw;
    coro_event_t hold_r, hold_w;
    struct lk r1 = { .id = 1 }, r2 = { .id = 2 }, w2 = { .id = 3 };

    coro_rwlock_init(&rw);
    coro_event_init(&hold_r);
    coro_event_init(&hold_w);
    cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, CORO_FOREVER), 0);
    lk_spawn(s, &r1, &rw, RD, &hold_r);
    lk_parked(s, &r1);
    lk_spawn(s, &r2, &rw, RD, &hold_r);
    lk_parked(s, &r2);
    lk_spawn(s, &w2, &rw, WR, &hold_w);
    lk_parked(s, &w2);
    cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
    cr_assert_eq(lk_got(s, &r1), 0);
    cr_assert_eq(lk_got(s, &r2), 0);
    cr_assert(lk_pending(s, &w2), "the writer got in beside readers");
    cr_assert_eq(coro_rwlock_try_read_lock(&rw), -EAGAIN, "a writer waits: no new reader");
    coro_event_set(&hold_r);
    cr_assert_eq(lk_got(s, &w2), 0);
    coro_event_set(&hold_w);
    cr_assert_eq(join_r(&r1.co), 0);
    cr_assert_eq(join_r(&r2.co), 0);
    cr_assert_eq(join_r(&w2.co), 0);
    cr_assert_eq(coro_rwlock_destroy(&rw), 0);
    fin(s);
}

Test(rwlock, a_write_unlock_admits_every_waiting_reader_before_the_next_writer, .timeout = 60)
{
    for (int k = 0; k < NW; k++)
        run_reader_batch(nworkers[k]);
}

/* ---- a writer that leaves lets the readers behind it in ------------------------------ */

enum leave { BY_CANCEL, BY_TIMEOUT };

static void run_writer_leaves(int workers, enum leave how)
{
    coro_sched_t *s = mk(workers);
    coro_rwlock_t rw;
    struct lk w = { .id = 1 }, r = { .id = 2 };

    coro_rwlock_init(&rw);
    cr_assert_eq(coro_rwlock_read_lock_blocking(&rw, CORO_FOREVER), 0);
    if (how == BY_TIMEOUT)
        w.timeout = 500 * MS;    /* long enough for the reader to queue behind it */
    lk_spawn(s, &w, &rw, WR, NULL);
    if (workers == 0 && how == BY_TIMEOUT) {
        /* the thread that runs the scheduler also waits out its timers
         * (coro_sched_run): both queue in that one run, in spawn order */
        lk_spawn(s, &r, &rw, RD, NULL);
    } else {
        lk_parked(s, &w);
        lk_spawn(s, &r, &rw, RD, NULL);
        lk_parked(s, &r);
    }
    if (how == BY_CANCEL)
        cr_assert_eq(coro_cancel(&w.co), 0);
    cr_assert_eq(lk_got(s, &w), how == BY_CANCEL ? -ECANCELED : -ETIMEDOUT);
    /* the thread still reads: the reader shares it at once */
    cr_assert_eq(lk_got(s, &r), 0, "the reader waited for a writer that had left");
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
    /* consistent afterwards */
    cr_assert_eq(coro_rwlock_try_write_lock(&rw), 0);
    cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
    cr_assert_eq(coro_rwlock_destroy(&rw), 0);
    fin(s);
}

Test(rwlock, a_cancelled_waiting_writer_lets_the_readers_behind_it_in, .timeout = 60)
{
    for (int k = 0; k < NW; k++)
        run_writer_leaves(nworkers[k], BY_CANCEL);
}

Test(rwlock, a_timed_out_waiting_writer_lets_the_readers_behind_it_in, .timeout = 60)
{
    for (int k = 0; k < NW; k++)
        run_writer_leaves(nworkers[k], BY_TIMEOUT);
}

struct tw { coro_rwlock_t *rw; int rc; };

static void *thread_writer(void *arg)
{
    struct tw *t = arg;
    t->rc = coro_rwlock_write_lock_blocking(t->rw, 30 * MS);
    return NULL;
}

Test(rwlock, a_plain_thread_writer_that_times_out_lets_the_readers_behind_it_in, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    coro_rwlock_t rw;
    struct lk r = { .id = 2 };
    struct tw t = { .rw = &rw };
    pthread_t th;

    coro_rwlock_init(&rw);
    cr_assert_eq(coro_rwlock_read_lock_blocking(&rw, CORO_FOREVER), 0);
    cr_assert_eq(pthread_create(&th, NULL, thread_writer, &t), 0);
    /* the thread writer queued: a try to read now fails */
    int64_t end = coro_now() + 20000000000LL;
    while (coro_rwlock_try_read_lock(&rw) == 0) {
        cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
        cr_assert_lt(coro_now(), end);
        sched_yield();
    }
    lk_spawn(s, &r, &rw, RD, NULL);
    lk_parked(s, &r);
    pthread_join(th, NULL);
    cr_assert_eq(t.rc, -ETIMEDOUT);
    cr_assert_eq(lk_got(s, &r), 0);
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
    cr_assert_eq(coro_rwlock_destroy(&rw), 0);
    fin(s);
}

/* cancel at each point: queued as a reader, queued as a writer, holding */
Test(rwlock, cancel_while_waiting_to_read_leaves_the_lock_consistent, .timeout = 60)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        coro_event_t hold;
        struct lk r = { .id = 1 }, h = { .id = 2 };

        coro_rwlock_init(&rw);
        coro_event_init(&hold);
        cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, CORO_FOREVER), 0);
        lk_spawn(s, &r, &rw, RD, NULL);
        lk_parked(s, &r);
        cr_assert_eq(coro_cancel(&r.co), 0);
        cr_assert_eq(lk_got(s, &r), -ECANCELED);
        cr_assert_eq(join_r(&r.co), -ECANCELED);
        cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
        /* a holder that is cancelled keeps its hold until it lets go */
        lk_spawn(s, &h, &rw, WR, &hold);
        cr_assert_eq(lk_got(s, &h), 0);
        cr_assert_eq(coro_rwlock_try_read_lock(&rw), -EAGAIN);
        cr_assert_eq(coro_cancel(&h.co), 0);
        cr_assert_eq(join_r(&h.co), -ECANCELED);   /* its event wait, then it let go */
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
    }
}

/* ---- errors ------------------------------------------------------------------------------ */

Test(rwlock, bad_input_gives_einval_and_misuse_gives_eperm_or_edeadlk, .timeout = 10)
{
    coro_rwlock_t rw, bad;
    memset(&bad, 0, sizeof bad);
    cr_assert_eq(coro_rwlock_init(NULL), -EINVAL);
    cr_assert_eq(coro_rwlock_destroy(NULL), -EINVAL);
    cr_assert_eq(coro_rwlock_destroy(&bad), -EINVAL);
    cr_assert_eq(coro_rwlock_try_read_lock(&bad), -EINVAL);
    cr_assert_eq(coro_rwlock_try_write_lock(NULL), -EINVAL);
    cr_assert_eq(coro_rwlock_read_lock_blocking(&bad, 0), -EINVAL);
    cr_assert_eq(coro_rwlock_write_lock_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_rwlock_read_unlock(&bad), -EINVAL);
    cr_assert_eq(coro_rwlock_write_unlock(NULL), -EINVAL);
    cr_assert_eq(coro_rwlock_init(&rw), 0);
    cr_assert_eq(coro_rwlock_read_lock_blocking(&rw, -5), -EINVAL);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), -EPERM, "no read hold");
    cr_assert_eq(coro_rwlock_write_unlock(&rw), -EPERM, "not the owner");
    cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, 0), 0);
    cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, CORO_FOREVER), -EDEADLK);
    cr_assert_eq(coro_rwlock_try_write_lock(&rw), -EDEADLK);
    cr_assert_eq(coro_rwlock_try_read_lock(&rw), -EDEADLK);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), -EPERM, "write-held");
    cr_assert_eq(coro_rwlock_destroy(&rw), -EBUSY);
    cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
    cr_assert_eq(coro_rwlock_try_read_lock(&rw), 0);
    cr_assert_eq(coro_rwlock_try_read_lock(&rw), 0);
    cr_assert_eq(coro_rwlock_try_write_lock(&rw), -EAGAIN);
    cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, 0), -ETIMEDOUT);
    cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
    cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
    cr_assert_eq(coro_rwlock_destroy(&rw), 0);
    cr_assert_eq(coro_rwlock_destroy(&rw), -EINVAL, "destroyed");
}

struct misuse {
    coro_t co;
    coro_rwlock_t *rw;
    intptr_t r[8];
};

static int misuse_body(coro_t *co)
{
    struct misuse *f = CORO_SELF(co, struct misuse);
    CORO_BEGIN(co);
    f->r[0] = coro_rwlock_read_lock_blocking(f->rw, 0);
    CORO_AWAIT(co, coro_rwlock_read_lock(f->rw, -7));
    f->r[1] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_rwlock_write_lock(f->rw, CORO_FOREVER));
    f->r[2] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_rwlock_write_lock(f->rw, CORO_FOREVER));
    f->r[3] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_rwlock_read_lock(f->rw, CORO_FOREVER));
    f->r[4] = CORO_RESULT(co);
    CORO_YIELD(co);     /* perhaps to another worker: still the same owner */
    f->r[5] = coro_rwlock_write_unlock(f->rw);
    CORO_AWAIT(co, coro_rwlock_read_lock(f->rw, 0));
    f->r[6] = CORO_RESULT(co);
    f->r[7] = coro_rwlock_read_unlock(f->rw);
    CORO_END(co);
}

Test(rwlock, in_a_job_blocking_forms_give_edeadlk_and_a_writer_asking_again_too, .timeout = 30)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        struct misuse m = { .rw = &rw };
        coro_rwlock_init(&rw);
        cr_assert_eq(coro_spawn(s, &m.co, misuse_body, NULL), 0);
        cr_assert_eq(join_r(&m.co), 0);
        intptr_t want[8] = { -EDEADLK, -EINVAL, 0, -EDEADLK, -EDEADLK, 0, 0, 0 };
        for (int i = 0; i < 8; i++)
            cr_assert_eq(m.r[i], want[i], "%d workers, step %d: %ld", nworkers[k], i, (long)m.r[i]);
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
    }
}

Test(rwlock, a_job_times_out_waiting_and_nothing_is_left_held, .timeout = 30)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        struct lk a = { .id = 1, .timeout = 5 * MS }, b = { .id = 2, .timeout = 5 * MS };
        coro_rwlock_init(&rw);
        cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, CORO_FOREVER), 0);
        lk_spawn(s, &a, &rw, RD, NULL);
        lk_spawn(s, &b, &rw, WR, NULL);
        cr_assert_eq(join_r(&a.co), -ETIMEDOUT);
        cr_assert_eq(join_r(&b.co), -ETIMEDOUT);
        cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
    }
}
