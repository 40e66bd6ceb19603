/* SPDX-License-Identifier: MIT */
/* Forks (coro_fork_init, coro_fork_spawn, CORO_FORK_JOIN): children
 * spawned together and joined together, their results in the parent's
 * array.  A pool frame child stays until the join read its result, even
 * when it finishes first; a cancelled parent's join ends with -ECANCELED
 * and cancels the children it did not join; the errors. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdatomic.h>

#include "rt/rt.h"
#include "sched/frame.h"    /* coro__frames_held */
#include "white_box.h"

/* ---- fib, each call a pool frame that forks two children ---------------- */

struct fibf {
    coro_t co;
    long n;
    coro_fork_t fork;
    coro_t *kids[2];
    intptr_t res[2];
};

static int fibf_fn(coro_t *co);

static struct fibf *fibf_new(coro_sched_t *s, long n)
{
    struct fibf *f = coro_frame_alloc(s, sizeof *f);
    cr_assert_not_null(f);
    f->n = n;
    return f;
}

static int fibf_fn(coro_t *co)
{
    struct fibf *f = CORO_SELF(co, struct fibf);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    cr_assert_eq(coro_fork_init(&f->fork, f->kids, f->res, 2), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(coro_fork_spawn(&f->fork, s, &fibf_new(s, f->n - 1 - i)->co, fibf_fn, NULL),
                     0);
    CORO_FORK_JOIN(co, &f->fork);
    cr_assert_eq(CORO_RESULT(co), 0);
    CORO_RETURN(co, f->res[0] + f->res[1]);
    CORO_END(co);
}

static intptr_t run_fibf(coro_sched_t *s, long n)
{
    struct fibf *root = fibf_new(s, n);
    cr_assert_eq(coro_spawn(s, &root->co, fibf_fn, NULL), 0);
    return join_r(&root->co);
}

Test(forkjoin, fib_with_pool_frames_is_right_and_gives_every_frame_back, .timeout = 60)
{
    static const int counts[] = { 0, 1, 2 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        coro_sched_t *s = mk(counts[k]);
        cr_assert_eq(run_fibf(s, 16), 987);
        size_t held = coro__frames_held(s);
        /* rounds that gave every frame back take no new slab */
        for (int r = 0; r < 3; r++)
            cr_assert_eq(run_fibf(s, 16), 987);
        if (counts[k] < 2)      /* one pool: its count is exact */
            cr_assert_eq(coro__frames_held(s), held, "%d workers", counts[k]);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        coro_sched_destroy(s);
    }
}

/* ---- a pool frame child that finishes long before the join -------------- */

struct quick {
    coro_t co;
    intptr_t v;
    atomic_int *ended;
};

static int quick_fn(coro_t *co)
{
    struct quick *q = CORO_SELF(co, struct quick);
    CORO_BEGIN(co);
    atomic_fetch_add(q->ended, 1);
    CORO_RETURN(co, q->v);
    CORO_END(co);
}

struct late_parent {
    coro_t co;
    coro_fork_t fork;
    coro_t *kids[8];
    intptr_t res[8];
    atomic_int ended;
    int64_t end;
};

static int late_parent_fn(coro_t *co)
{
    struct late_parent *p = CORO_SELF(co, struct late_parent);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    cr_assert_eq(coro_fork_init(&p->fork, p->kids, p->res, 8), 0);
    for (int i = 0; i < 8; i++) {
        struct quick *q = coro_frame_alloc(s, sizeof *q);
        cr_assert_not_null(q);
        q->v = 100 + i;
        q->ended = &p->ended;
        cr_assert_eq(coro_fork_spawn(&p->fork, s, &q->co, quick_fn, NULL), 0);
    }
    cr_assert_eq(coro_fork_spawn(&p->fork, s, &p->co, quick_fn, NULL), -ENOSPC);
    /* the children all end before the join looks at them: they run
     * while this job yields (any worker) */
    p->end = coro_now() + 20000000000LL;
    while (atomic_load(&p->ended) < 8 && coro_now() < p->end)
        CORO_YIELD(co);
    cr_assert_eq(atomic_load(&p->ended), 8);
    /* their frames are still theirs: new frames are other blocks */
    for (int i = 0; i < 8; i++) {
        void *b = coro_frame_alloc(s, sizeof(struct quick));
        for (int j = 0; j < 8; j++)
            cr_assert_neq(b, (void *)p->kids[j]);
        coro_frame_free(b);
    }
    CORO_FORK_JOIN(co, &p->fork);
    cr_assert_eq(CORO_RESULT(co), 0);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(p->res[i], 100 + i);
    /* an empty fork joins at once, and takes children again */
    CORO_FORK_JOIN(co, &p->fork);
    cr_assert_eq(CORO_RESULT(co), 0);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

Test(forkjoin, a_pool_child_that_finished_first_keeps_its_frame_until_the_join, .timeout = 30)
{
    static const int counts[] = { 0, 1, 2 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        coro_sched_t *s = mk(counts[k]);
        static struct late_parent p;
        memset(&p, 0, sizeof p);
        intptr_t r = -1;
        cr_assert_eq(coro_block_on(s, &p.co, late_parent_fn, NULL, &r), 0);
        cr_assert_eq(r, 0);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        coro_sched_destroy(s);
    }
}

/* ---- a cancelled parent --------------------------------------------------- */

struct sleeper {
    coro_t co;
    coro_event_t *ev;
};

static int sleeper_fn(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(z->ev, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

struct cparent {
    coro_t co;
    coro_fork_t fork;
    coro_t *kids[3];
    intptr_t res[3];
    coro_event_t ev;        /* never set */
    struct sleeper own;     /* a caller-owned child */
    atomic_int joining;
};

static int cparent_fn(coro_t *co)
{
    struct cparent *p = CORO_SELF(co, struct cparent);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    cr_assert_eq(coro_fork_init(&p->fork, p->kids, p->res, 3), 0);
    for (int i = 0; i < 2; i++) {
        struct sleeper *z = coro_frame_alloc(s, sizeof *z);
        cr_assert_not_null(z);
        z->ev = &p->ev;
        cr_assert_eq(coro_fork_spawn(&p->fork, s, &z->co, sleeper_fn, NULL), 0);
    }
    p->own.ev = &p->ev;
    cr_assert_eq(coro_fork_spawn(&p->fork, s, &p->own.co, sleeper_fn, NULL), 0);
    cr_assert_eq(coro_fork_spawn(&p->fork, s, &p->own.co, sleeper_fn, NULL), -ENOSPC);
    atomic_store(&p->joining, 1);
    CORO_FORK_JOIN(co, &p->fork);
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(forkjoin, a_cancelled_parents_join_ends_with_ecanceled_and_cancels_the_children,
     .timeout = 30)
{
    static const int counts[] = { 1, 2 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        coro_sched_t *s = mk(counts[k]);
        static struct cparent p;
        memset(&p, 0, sizeof p);
        coro_event_init(&p.ev);
        cr_assert_eq(coro_spawn(s, &p.co, cparent_fn, NULL), 0);
        wait_suspended(&p.co);
        cr_assert_eq(atomic_load(&p.joining), 1);
        cr_assert_eq(coro_cancel(&p.co), 0);
        cr_assert_eq(join_r(&p.co), -ECANCELED);
        /* the children were cancelled: the caller-owned one ends too */
        cr_assert_eq(join_r(&p.own.co), -ECANCELED);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);   /* no child left */
        coro_event_destroy(&p.ev);
        coro_sched_destroy(s);
    }
}

/* ---- errors ----------------------------------------------------------------- */

static int nop_fn(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 7);
    CORO_END(co);
}

Test(forkjoin, bad_arguments_and_a_full_fork_are_refused, .timeout = 10)
{
    coro_fork_t f;
    coro_t *kids[1];
    cr_assert_eq(coro_fork_init(NULL, kids, NULL, 1), -EINVAL);
    cr_assert_eq(coro_fork_init(&f, NULL, NULL, 1), -EINVAL);
    cr_assert_eq(coro_fork_init(&f, kids, NULL, 0), -EINVAL);
    cr_assert_eq(coro_fork_init(&f, kids, NULL, 1), 0);
    cr_assert_eq(coro_fork_pending(NULL, 0), -EINVAL);
    cr_assert_eq(coro_fork_pending(&f, 0), 0);      /* empty */
    coro_await_t a = coro_fork_next(&f);
    cr_assert_null(a.ops);
    cr_assert_eq(a.arg[0].i, -EINVAL);
    cr_assert_eq(coro_fork_spawn(NULL, NULL, NULL, NULL, NULL), -EINVAL);

    coro_sched_t *s = mk(1);
    static struct empty_frame { coro_t co; } c;
    memset(&c, 0, sizeof c);
    cr_assert_eq(coro_fork_spawn(&f, s, &c.co, NULL, NULL), -EINVAL);  /* coro_spawn's */
    cr_assert_eq(coro_fork_spawn(&f, s, &c.co, nop_fn, NULL), 0);
    /* a child not joined yet stays its fork's: finished, it is not
     * spawned again */
    cr_assert_eq(join_r(&c.co), 7);
    cr_assert_eq(coro_spawn(s, &c.co, nop_fn, NULL), -EBUSY);
    cr_assert_eq(coro_fork_spawn(&f, s, &c.co, nop_fn, NULL), -ENOSPC);
    /* the join from a plain thread's loop, as the macro does it */
    cr_assert_eq(coro_fork_pending(&f, 0), 1);
    a = coro_fork_next(&f);
    cr_assert_null(a.ops);      /* done: complete at once */
    cr_assert_eq(coro_fork_pending(&f, a.arg[0].i), 0);
    cr_assert_eq(coro_spawn(s, &c.co, nop_fn, NULL), 0);      /* let go */
    cr_assert_eq(join_r(&c.co), 7);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    coro_sched_destroy(s);
}
