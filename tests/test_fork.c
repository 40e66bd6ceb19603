/* SPDX-License-Identifier: MIT */
/* Fork-join written as users write it: a job spawns children and awaits
 * each with coro_done.  The worker runs the job a step handed off next,
 * inside its step loop (sched/worker.c, CONTINUING); these tests hold what
 * must not change with it: a queued child can still be stolen while its
 * parent awaits it, two jobs can await one child, a child cancelled while
 * its parent awaits it ends the await with its result, and a deep tree
 * gives back every frame.  At 0, 1 and 2 workers where the shape allows. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "join_r.h"
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rt/rt.h"      /* the state word: util.h's wait_suspended */
#include "util.h"       /* mk */

static const int worker_counts[] = { 0, 1, 2 };
#define NW (sizeof worker_counts / sizeof worker_counts[0])

/* bounded wait inside a job, for what another job does (never a sleep:
 * the other job sets the flag; the bound only keeps a bug from hanging) */
#define SPIN_BOUND_NS 20000000000LL

/* ---- a child stolen while its parent awaits it ------------------------------ */

struct steal_child {
    coro_t co;
    atomic_int *started;    /* the stolen child's flag */
    bool waits;             /* spin until the other child started */
    intptr_t value;
};

static int steal_child_fn(coro_t *co)
{
    struct steal_child *c = CORO_SELF(co, struct steal_child);
    CORO_BEGIN(co);
    if (c->waits) {
        /* this worker stays in this step until the sibling runs: only
         * another worker's steal of it from our queue can end the spin */
        int64_t end = coro_now() + SPIN_BOUND_NS;
        while (!atomic_load(c->started) && coro_now() < end)
            sched_yield();
        if (!atomic_load(c->started))
            CORO_RETURN(co, -1);
    } else {
        atomic_store(c->started, 1);
    }
    CORO_RETURN(co, c->value);
    CORO_END(co);
}

struct steal_parent {
    coro_t co;
    struct steal_child a, b;
    atomic_int started;
    intptr_t ra, rb;
};

static int steal_parent_fn(coro_t *co)
{
    struct steal_parent *p = CORO_SELF(co, struct steal_parent);
    CORO_BEGIN(co);
    /* a: the first hand-off, runs next on this worker and spins; b:
     * queued behind it, where only a thief can take it */
    p->a = (struct steal_child){ .started = &p->started, .waits = true, .value = 1 };
    p->b = (struct steal_child){ .started = &p->started, .waits = false, .value = 2 };
    cr_assert_eq(coro_spawn(coro_sched_current(), &p->a.co, steal_child_fn, NULL), 0);
    cr_assert_eq(coro_spawn(coro_sched_current(), &p->b.co, steal_child_fn, NULL), 0);
    CORO_AWAIT(co, coro_done(&p->b.co));
    p->rb = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&p->a.co));
    p->ra = CORO_RESULT(co);
    CORO_RETURN(co, p->ra + p->rb);
    CORO_END(co);
}

Test(fork, a_child_queued_behind_a_long_step_is_stolen_while_its_parent_awaits_it,
     .timeout = 30)
{
    coro_sched_t *s = mk(2);
    struct steal_parent p = { 0 };

    atomic_init(&p.started, 0);
    cr_assert_eq(block_on_r(s, &p.co, steal_parent_fn, NULL), 3);
    cr_assert_eq(p.ra, 1, "the spinning child never saw its sibling run");
    cr_assert_eq(p.rb, 2);
    coro_sched_stats_t st;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    cr_assert_geq(st.stolen, 1, "the sibling ran without a steal");
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- a child awaited by two jobs ---------------------------------------------- */

struct gate_child {
    coro_t co;
    coro_event_t *ev;
};

/* waits for the gate, returns 42 (or the wait's error) */
static int gate_child_fn(coro_t *co)
{
    struct gate_child *c = CORO_SELF(co, struct gate_child);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(c->ev, CORO_FOREVER));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, CORO_RESULT(co));
    CORO_RETURN(co, 42);
    CORO_END(co);
}

struct awaiter {
    coro_t co;
    coro_t *target;
    atomic_int *armed;
    intptr_t got;
};

static int awaiter_fn(coro_t *co)
{
    struct awaiter *a = CORO_SELF(co, struct awaiter);
    CORO_BEGIN(co);
    atomic_fetch_add(a->armed, 1);
    CORO_AWAIT(co, coro_done(a->target));
    a->got = CORO_RESULT(co);
    CORO_END(co);
}

struct two_root {
    coro_t co;
    coro_event_t ev;
    struct gate_child c;
    struct awaiter a1, a2;
    atomic_int armed;
    int64_t end;
};

static int two_root_fn(coro_t *co)
{
    struct two_root *r = CORO_SELF(co, struct two_root);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    r->c.ev = &r->ev;
    cr_assert_eq(coro_spawn(s, &r->c.co, gate_child_fn, NULL), 0);
    r->a1 = (struct awaiter){ .target = &r->c.co, .armed = &r->armed };
    r->a2 = (struct awaiter){ .target = &r->c.co, .armed = &r->armed };
    cr_assert_eq(coro_spawn(s, &r->a1.co, awaiter_fn, NULL), 0);
    cr_assert_eq(coro_spawn(s, &r->a2.co, awaiter_fn, NULL), 0);
    /* both awaiters reach their await before the child may end: they
     * wait on it (one in its joiner slot, the other in the lot) */
    r->end = coro_now() + SPIN_BOUND_NS;
    while (atomic_load(&r->armed) < 2 || !suspended(&r->a1.co) || !suspended(&r->a2.co)) {
        if (coro_now() > r->end)
            CORO_RETURN(co, -ETIMEDOUT);
        CORO_YIELD(co);
    }
    coro_event_set(&r->ev);
    CORO_AWAIT(co, coro_done(&r->a1.co));
    CORO_AWAIT(co, coro_done(&r->a2.co));
    CORO_AWAIT(co, coro_done(&r->c.co));    /* done: its result at once */
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(fork, two_jobs_awaiting_one_child_both_get_its_result, .timeout = 30)
{
    for (size_t i = 0; i < NW; i++) {
        coro_sched_t *s = mk(worker_counts[i]);
        struct two_root r = { 0 };
        coro_event_init(&r.ev);
        atomic_init(&r.armed, 0);
        cr_assert_eq(block_on_r(s, &r.co, two_root_fn, NULL), 42, "workers %d",
                     worker_counts[i]);
        cr_assert_eq(r.a1.got, 42, "workers %d", worker_counts[i]);
        cr_assert_eq(r.a2.got, 42, "workers %d", worker_counts[i]);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&r.ev);
    }
}

/* ---- a child cancelled while its parent awaits it ------------------------------ */

struct cancel_parent {
    coro_t co;
    coro_event_t ev;        /* never set */
    struct gate_child c;
    atomic_int armed;
};

static int cancel_parent_fn(coro_t *co)
{
    struct cancel_parent *p = CORO_SELF(co, struct cancel_parent);
    CORO_BEGIN(co);
    p->c.ev = &p->ev;
    cr_assert_eq(coro_spawn(coro_sched_current(), &p->c.co, gate_child_fn, NULL), 0);
    atomic_store(&p->armed, 1);
    CORO_AWAIT(co, coro_done(&p->c.co));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

struct cancel_root {
    coro_t co;
    struct cancel_parent p;
    int64_t end;
};

static int cancel_root_fn(coro_t *co)
{
    struct cancel_root *r = CORO_SELF(co, struct cancel_root);
    CORO_BEGIN(co);
    cr_assert_eq(coro_spawn(coro_sched_current(), &r->p.co, cancel_parent_fn, NULL), 0);
    /* the parent waits on its child, the child on the event */
    r->end = coro_now() + SPIN_BOUND_NS;
    while (!atomic_load(&r->p.armed) || !suspended(&r->p.co) || !suspended(&r->p.c.co)) {
        if (coro_now() > r->end)
            CORO_RETURN(co, -ETIMEDOUT);
        CORO_YIELD(co);
    }
    cr_assert_eq(coro_cancel(&r->p.c.co), 0);
    CORO_AWAIT(co, coro_done(&r->p.co));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(fork, a_child_cancelled_while_its_parent_awaits_it_ends_the_await_with_ecanceled,
     .timeout = 30)
{
    for (size_t i = 0; i < NW; i++) {
        coro_sched_t *s = mk(worker_counts[i]);
        struct cancel_root r = { 0 };
        coro_event_init(&r.p.ev);
        atomic_init(&r.p.armed, 0);
        cr_assert_eq(block_on_r(s, &r.co, cancel_root_fn, NULL), -ECANCELED, "workers %d",
                     worker_counts[i]);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&r.p.ev);
    }
}

/* ---- deep fork-join: fib, every block given back ---------------------------------- */

static atomic_long blocks_out;

struct fibkids;
struct fib {
    coro_t co;
    long n;
    intptr_t r;
    struct fibkids *kids;   /* this call's children */
    struct fibkids *home;   /* the block this frame lives in (NULL: root) */
};
struct fibkids {
    atomic_int refs;        /* the two children's on_exit and the parent */
    struct fib k[2];
};

static void kids_put(struct fibkids *b)
{
    if (atomic_fetch_sub(&b->refs, 1) == 1) {
        atomic_fetch_sub(&blocks_out, 1);
        free(b);
    }
}

static void fib_exit(coro_t *co)
{
    kids_put(CORO_SELF(co, struct fib)->home);
}

static const coro_spawn_opts_t fib_opts = { .on_exit = fib_exit };

static int fib_fn(coro_t *co)
{
    struct fib *f = CORO_SELF(co, struct fib);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    f->kids = calloc(1, sizeof *f->kids);
    cr_assert_not_null(f->kids);
    atomic_fetch_add(&blocks_out, 1);
    atomic_init(&f->kids->refs, 3);
    for (int i = 0; i < 2; i++) {
        f->kids->k[i].n = f->n - 1 - i;
        f->kids->k[i].home = f->kids;
        cr_assert_eq(coro_spawn(coro_sched_current(), &f->kids->k[i].co, fib_fn, &fib_opts), 0);
    }
    CORO_AWAIT(co, coro_done(&f->kids->k[0].co));
    f->r = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->kids->k[1].co));
    f->r += CORO_RESULT(co);
    kids_put(f->kids);
    CORO_RETURN(co, f->r);
    CORO_END(co);
}

Test(fork, deep_fork_join_fib_is_right_and_gives_every_frame_back, .timeout = 30)
{
#if defined(__SANITIZE_ADDRESS__)
    static const long n = 23, want = 28657;
#else
    static const long n = 22, want = 17711;
#endif
    for (size_t i = 0; i < NW; i++) {
        coro_sched_t *s = mk(worker_counts[i]);
        struct fib root = { .n = n };
        atomic_store(&blocks_out, 0);
        cr_assert_eq(block_on_r(s, &root.co, fib_fn, NULL), want, "workers %d",
                     worker_counts[i]);
        cr_assert_eq(coro_sched_destroy(s), 0);
        /* every child's on_exit ran: the last block went back */
        cr_assert_eq(atomic_load(&blocks_out), 0, "workers %d: %ld blocks kept",
                     worker_counts[i], atomic_load(&blocks_out));
    }
}
