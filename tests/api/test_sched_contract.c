/* SPDX-License-Identifier: MIT */
/* The 1.0 contract's rules, one test each, with the error path beside the
 * happy path: corokit's own allocator type (its context pointer reaches
 * both functions), the join forms that keep a job's result apart from
 * their own, one argument order, one "none" for deadlines, one rule for a
 * second close or cancel, the mutex's calls that need no frame, and a
 * group's members collected one by one. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <stdlib.h>

/* ---- the allocator ------------------------------------------------------- */

struct counts { long allocs, frees, live; };

static void *cnt_alloc(void *ctx, size_t n)
{
    struct counts *c = ctx;
    /* relaxed: counters only; corokit calls its allocator from several
     * threads at once (coro_alloc_t) */
    __atomic_add_fetch(&c->allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->live, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void cnt_free(void *ctx, void *p, size_t n)
{
    struct counts *c = ctx;
    (void)n;
    __atomic_add_fetch(&c->frees, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&c->live, 1, __ATOMIC_RELAXED);
    free(p);
}

Test(sched_contract, the_allocators_context_reaches_both_functions, .timeout = 10)
{
    struct counts c = {0};
    coro_alloc_t a = { .alloc = cnt_alloc, .free = cnt_free, .ctx = &c };
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;

    cfg.workers = 0;
    cfg.alloc = &a;
    cr_assert_eq(coro_sched_create(&s, &cfg), 0);
    cr_assert_gt(c.allocs, 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(c.live, 0, "every block given back through the same context");

    struct counts cc = {0};
    coro_alloc_t ca = { .alloc = cnt_alloc, .free = cnt_free, .ctx = &cc };
    coro_chan_t ch;
    cr_assert_eq(coro_chan_init_alloc(&ch, 4, &ca), 0);
    cr_assert_eq(cc.allocs, 1);
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    cr_assert_eq(cc.frees, 1);
}

Test(sched_contract, an_allocator_without_both_functions_is_einval, .timeout = 10)
{
    coro_alloc_t no_free = { .alloc = cnt_alloc };
    coro_alloc_t no_alloc = { .free = cnt_free };
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = (coro_sched_t *)1;
    coro_chan_t ch;

    cfg.workers = 0;
    cfg.alloc = &no_free;
    cr_assert_eq(coro_sched_create(&s, &cfg), -EINVAL);
    cr_assert_null(s);
    cfg.alloc = &no_alloc;
    cr_assert_eq(coro_sched_create(&s, &cfg), -EINVAL);
    cr_assert_eq(coro_chan_init_alloc(&ch, 4, &no_free), -EINVAL);
    cr_assert_eq(coro_chan_init_alloc(&ch, 4, &no_alloc), -EINVAL);
}

/* ---- time: one "none" for deadlines, durations in ns ---------------------- */

struct sleeper { coro_t co; };

static int sleep_none(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep_until(CORO_NO_DEADLINE));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(sched_contract, sleep_until_no_deadline_sleeps_until_cancelled, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    struct sleeper j = {0};
    intptr_t r = 7;

    cr_assert_eq(coro_spawn(s, &j.co, sleep_none, NULL), 0);
    cr_assert_eq(coro_cancel(&j.co), 0);
    cr_assert_eq(coro_join(&j.co, &r), 0);
    cr_assert_eq(r, -ECANCELED, "it did not complete at once as a past deadline");
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_contract, a_negative_keepalive_is_einval, .timeout = 10)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;

    cfg.workers = 0;
    cfg.blocking_keepalive_ns = -1;
    cr_assert_eq(coro_sched_create(&s, &cfg), -EINVAL);
    cfg.blocking_keepalive_ns = 1000000;
    cr_assert_eq(coro_sched_create(&s, &cfg), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- results apart from errors, one argument order ------------------------ */

struct neg { coro_t co; };

static int returns_ecanceled(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, -ECANCELED);    /* a job's own value, not an error */
    CORO_END(co);
}

Test(sched_contract, a_joined_jobs_negative_result_is_not_an_error, .timeout = 10)
{
    coro_sched_t *s = mk(0);
    struct neg j = {0}, k = {0};
    intptr_t r = 0;

    cr_assert_eq(coro_spawn(s, &j.co, returns_ecanceled, NULL), 0);
    cr_assert_eq(coro_join(&j.co, &r), 0);
    cr_assert_eq(r, -ECANCELED);
    r = 0;
    cr_assert_eq(coro_join_timeout(&j.co, &r, 0), 0);
    cr_assert_eq(r, -ECANCELED);
    r = 0;
    cr_assert_eq(coro_block_on(s, &k.co, returns_ecanceled, NULL, &r), 0);
    cr_assert_eq(r, -ECANCELED);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_contract, a_null_result_pointer_is_einval_and_spawns_nothing, .timeout = 10)
{
    coro_sched_t *s = mk(0);
    struct neg j = {0};

    cr_assert_eq(coro_block_on(s, &j.co, returns_ecanceled, NULL, NULL), -EINVAL);
    cr_assert_eq(coro_join(&j.co, &(intptr_t){0}), -EINVAL, "never spawned");
    cr_assert_eq(coro_spawn(s, &j.co, returns_ecanceled, NULL), 0);
    cr_assert_eq(coro_join(&j.co, NULL), -EINVAL);
    cr_assert_eq(coro_join_timeout(&j.co, NULL, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_join(NULL, &(intptr_t){0}), -EINVAL);
    cr_assert_eq(coro_join(&j.co, &(intptr_t){0}), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

struct waiter { coro_t co; coro_t *target; intptr_t res; int rc; };

static int done_waiter(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done_timeout(w->target, &w->res, CORO_FOREVER));
    w->rc = (int)CORO_RESULT(co);
    CORO_END(co);
}

Test(sched_contract, done_timeout_takes_the_result_pointer_before_the_timeout, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    struct neg j = {0};
    struct waiter w = { .rc = 1 };

    cr_assert_eq(coro_spawn(s, &j.co, returns_ecanceled, NULL), 0);
    w.target = &j.co;
    cr_assert_eq(coro_spawn(s, &w.co, done_waiter, NULL), 0);
    cr_assert_eq(coro_join(&w.co, &(intptr_t){0}), 0);
    cr_assert_eq(w.rc, 0);
    cr_assert_eq(w.res, -ECANCELED);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- the mutex: lock, try_lock and unlock need only the mutex ------------- */

struct child_frame { coro_t co; coro_mutex_t *m; };

/* a coro_call child unlocks what its parent locked: the same job */
static int unlocking_child(coro_t *co)
{
    struct child_frame *c = CORO_SELF(co, struct child_frame);
    CORO_BEGIN(co);
    CORO_RETURN(co, coro_mutex_unlock(c->m));
    CORO_END(co);
}

struct locker2 { coro_t co; struct child_frame c; coro_mutex_t *m; intptr_t rc[4]; };

static int locker_body(coro_t *co)
{
    struct locker2 *l = CORO_SELF(co, struct locker2);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_mutex_lock(l->m, CORO_FOREVER));
    l->rc[0] = CORO_RESULT(co);
    CORO_YIELD(co);                 /* may resume on another worker */
    l->c.m = l->m;
    CORO_AWAIT(co, coro_call(&l->c.co, unlocking_child));
    l->rc[1] = CORO_RESULT(co);
    l->rc[2] = coro_mutex_try_lock(l->m);      /* for this job */
    CORO_YIELD(co);
    l->rc[3] = coro_mutex_try_lock(l->m);      /* the job holds it */
    CORO_END(co);
}

Test(sched_contract, a_job_unlocks_from_any_of_its_frames_with_the_mutex_alone, .timeout = 10)
{
    coro_sched_t *s = mk(2);
    coro_mutex_t m;
    struct locker2 l = {0};

    cr_assert_eq(coro_mutex_init(&m), 0);
    l.m = &m;
    cr_assert_eq(coro_spawn(s, &l.co, locker_body, NULL), 0);
    cr_assert_eq(coro_join(&l.co, &(intptr_t){0}), 0);
    cr_assert_eq(l.rc[0], 0);
    cr_assert_eq(l.rc[1], 0, "the child's unlock is the job's");
    cr_assert_eq(l.rc[2], 0);
    cr_assert_eq(l.rc[3], -EDEADLK);
    cr_assert_eq(coro_mutex_unlock(&m), -EPERM, "the finished job still holds it");
    cr_assert_eq(coro_mutex_try_lock(&m), -EAGAIN);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- sizes are size_t ---------------------------------------------------- */

Test(sched_contract, cpuset_format_takes_a_size_and_a_null_buffer_of_size_0, .timeout = 10)
{
    coro_cpuset_t set = {0};
    char buf[8];

    cr_assert_eq(coro_cpuset_parse(&set, "0-3,8"), 0);
    cr_assert_eq(coro_cpuset_format(&set, NULL, 0), 5, "only the length");
    cr_assert_eq(coro_cpuset_format(&set, buf, sizeof buf), 5);
    cr_assert_str_eq(buf, "0-3,8");
    cr_assert_eq(coro_cpuset_format(&set, NULL, 1), -EINVAL);
    cr_assert_eq(coro_cpuset_format(NULL, buf, sizeof buf), -EINVAL);
}
