/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* WOKEN BATCHES (lib/sched/sched.h): what a worker's driver turn wakes
 * comes back in the worker's batch, which the worker queues itself.  A job
 * of another scheduler (a lock shared across schedulers hands over to
 * one) must not go into the batch, whose jobs the worker queues on its own
 * scheduler: it is woken where it belongs.  White box: the batch is filled
 * by hand on a worker, as a turn fills it. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <sched.h>
#include <string.h>

#include "rt/rt.h"          /* white box: coro__wake_into, the worker */
#include "sched/worker.h"   /* coro__submit_woken */

/* the job parked by each of the two awaits, published by its arm */
static coro_t *parked[2];

static int park_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)s;
    (void)res;
    /* release: the registration, the last thing a PENDING arm does */
    __atomic_store_n(&parked[aw->arg[0].i], job, __ATOMIC_RELEASE);
    return CORO__ARM_PENDING;
}

static const struct coro_await_ops park_ops = { "test-park", park_arm };

struct parker {
    coro_t co;
    int slot;
    intptr_t res;
    coro_sched_t *ran_on;   /* the scheduler of the worker that resumed it */
};

static int parker_body(coro_t *co)
{
    struct parker *p = CORO_SELF(co, struct parker);
    coro_await_t a = { .ops = &park_ops };
    a.arg[0].i = p->slot;
    CORO_BEGIN(co);
    CORO_AWAIT(co, a);
    p->res = CORO_RESULT(co);
    p->ran_on = coro__tls_worker ? coro__tls_worker->s : NULL;
    CORO_END(co);
}

struct filler {
    coro_t co;
    int n;
    coro_t *first;
};

/* on a worker of its scheduler: wake both parked jobs into one batch of
 * that scheduler, as a turn does, and queue it */
static int filler_body(coro_t *co)
{
    struct filler *f = CORO_SELF(co, struct filler);
    struct coro__worker *w = coro__tls_worker;
    struct coro__woken b;

    coro__woken_init(&b, w->s);
    coro__wake_into(&b, parked[0], 7);
    coro__wake_into(&b, parked[1], 8);
    f->n = b.n;
    f->first = b.n ? b.job[0] : NULL;
    if (b.n)
        coro__submit_woken(w, &b, false);
    return CORO__ST_DONE;
}

static void wait_parked(int i)
{
    /* the arm runs on the job's worker once its step returned: wait for
     * the registration itself, with a generous bound */
    int64_t until = now_ns() + 10 * 1000000000LL;
    while (!__atomic_load_n(&parked[i], __ATOMIC_ACQUIRE) && now_ns() < until)
        sched_yield();
    cr_assert_not_null(__atomic_load_n(&parked[i], __ATOMIC_ACQUIRE));
}

Test(woken_batch, a_batch_takes_its_own_schedulers_job_and_wakes_another_schedulers_where_it_belongs,
     .timeout = 30)
{
    coro_sched_t *a = mk(1), *b = mk(1);
    struct parker x, y;
    struct filler f;
    intptr_t r;

    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    memset(&f, 0, sizeof f);
    memset(parked, 0, sizeof parked);
    x.slot = 0;
    y.slot = 1;
    cr_assert_eq(coro_spawn(a, &x.co, parker_body, NULL), 0);
    cr_assert_eq(coro_spawn(b, &y.co, parker_body, NULL), 0);
    wait_parked(0);
    wait_parked(1);
    cr_assert_eq(coro_spawn(a, &f.co, filler_body, NULL), 0);
    cr_assert_eq(coro_join(&f.co, &r), 0);
    cr_assert_eq(f.n, 1, "only a's job goes into a's batch");
    cr_assert_eq(f.first, &x.co);
    cr_assert_eq(coro_join(&x.co, &r), 0);
    cr_assert_eq(coro_join(&y.co, &r), 0);
    cr_assert_eq(x.res, 7);
    cr_assert_eq(y.res, 8);
    cr_assert_eq(x.ran_on, a);
    cr_assert_eq(y.ran_on, b, "b's job ran on a worker of b");
    fin(a);
    fin(b);
}
