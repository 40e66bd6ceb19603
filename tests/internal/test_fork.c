/* SPDX-License-Identifier: MIT */
/* Fork-join written as users write it: a job spawns children and awaits
 * each with coro_done.  The worker runs the job a step handed off next,
 * inside its step loop (sched/worker.c, CONTINUING), and a child still
 * queued on the awaiting job's worker inside the awaiting step (JOINING
 * INLINE); these tests hold what must not change with them: a queued
 * child can still be stolen while its parent awaits it, two jobs can
 * await one child, a child cancelled while its parent awaits it ends the
 * await with its result, a deep tree gives back every frame, a tree deeper
 * than the inline bound is right, and a HIGH job queued meanwhile is not
 * kept behind the tree.  At 0, 1 and 2 workers where the shape allows. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "white_box.h"

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
    struct steal_child a, b, c;
    atomic_int started;
    bool a_first;           /* await a (run inline: it spins) before b */
    intptr_t ra, rb, rc;
};

static int steal_parent_fn(coro_t *co)
{
    struct steal_parent *p = CORO_SELF(co, struct steal_parent);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    /* a: the first hand-off (the LIFO slot), spins until b started; b:
     * queued behind it, where only a thief can take it; c: queued last,
     * so that b is not the newest job of the queue (the awaiting worker
     * takes only that one back) */
    p->a = (struct steal_child){ .started = &p->started, .waits = true, .value = 1 };
    p->b = (struct steal_child){ .started = &p->started, .waits = false, .value = 2 };
    p->c = (struct steal_child){ .started = &p->started, .waits = false, .value = 4 };
    cr_assert_eq(coro_spawn(s, &p->a.co, steal_child_fn, NULL), 0);
    cr_assert_eq(coro_spawn(s, &p->b.co, steal_child_fn, NULL), 0);
    if (!p->a_first)
        cr_assert_eq(coro_spawn(s, &p->c.co, steal_child_fn, NULL), 0);
    if (p->a_first) {
        /* a runs inside this step and spins: b is stolen while this job
         * awaits a */
        CORO_AWAIT(co, coro_done(&p->a.co));
        p->ra = CORO_RESULT(co);
        CORO_AWAIT(co, coro_done(&p->b.co));
        p->rb = CORO_RESULT(co);
        CORO_RETURN(co, p->ra + p->rb);
    }
    /* b cannot run here: this job waits for it, a runs next and spins
     * until a thief took b */
    CORO_AWAIT(co, coro_done(&p->b.co));
    p->rb = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&p->a.co));
    p->ra = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&p->c.co));
    p->rc = CORO_RESULT(co);
    CORO_RETURN(co, p->ra + p->rb + p->rc);
    CORO_END(co);
}

static void steal_check(bool a_first)
{
    coro_sched_t *s = mk(2);
    struct steal_parent p = { .a_first = a_first };

    atomic_init(&p.started, 0);
    cr_assert_eq(block_on_r(s, &p.co, steal_parent_fn, NULL), a_first ? 3 : 7);
    cr_assert_eq(p.ra, 1, "the spinning child never saw its sibling run");
    cr_assert_eq(p.rb, 2);
    coro_sched_stats_t st;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    cr_assert_geq(st.stolen, 1, "the sibling ran without a steal");
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(fork, a_child_queued_behind_a_long_step_is_stolen_while_its_parent_awaits_it,
     .timeout = 30)
{
    steal_check(false);
}

Test(fork, a_child_is_stolen_while_its_parent_runs_its_sibling_inline, .timeout = 30)
{
    steal_check(true);
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

/* ---- deeper than the inline bound ------------------------------------------------ */

/* each job spawns one child, one level deeper, and awaits it: a chain of
 * nested awaits far deeper than CORO__INLINE_DEPTH, so the inner awaits
 * suspend as usual and wake their parents in turn */
struct deep {
    coro_t co;
    long depth;
    struct deep *kid;
};

static int deep_fn(coro_t *co)
{
    struct deep *d = CORO_SELF(co, struct deep);
    CORO_BEGIN(co);
    if (d->depth == 0)
        CORO_RETURN(co, 1);
    d->kid = calloc(1, sizeof *d->kid);
    cr_assert_not_null(d->kid);
    d->kid->depth = d->depth - 1;
    cr_assert_eq(coro_spawn(coro_sched_current(), &d->kid->co, deep_fn, NULL), 0);
    CORO_AWAIT(co, coro_done(&d->kid->co));
    free(d->kid);       /* finished and awaited: no one touches it again */
    CORO_RETURN(co, CORO_RESULT(co) + 1);
    CORO_END(co);
}

Test(fork, a_chain_of_awaits_deeper_than_the_inline_bound_is_right, .timeout = 30)
{
    for (size_t i = 0; i < NW; i++) {
        coro_sched_t *s = mk(worker_counts[i]);
        struct deep root = { .depth = 1000 };
        cr_assert_eq(block_on_r(s, &root.co, deep_fn, NULL), 1001, "workers %d",
                     worker_counts[i]);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a HIGH job queued while a tree runs inline ----------------------------------- */

/* fib again, whose first leaf waits (inside its step, so the whole left
 * spine waits on this worker's stack) until a plain thread queued a HIGH
 * job; the rest of the tree is still to run, and the HIGH job must run
 * before it ends: the worker picks HIGH first, and a child run inline
 * must not take that pick */
static atomic_int high_queued, high_ran, high_seen_late;

struct pfib {
    coro_t co;
    long n;
    intptr_t r;
    struct pfib *k;         /* two children, calloc'd */
};

static int pfib_fn(coro_t *co)
{
    struct pfib *f = CORO_SELF(co, struct pfib);
    CORO_BEGIN(co);
    if (f->n < 2) {
        if (atomic_exchange(&high_queued, 2) == 0) {
            /* the first leaf: wait (20 s bound) for the plain thread */
            int64_t end = coro_now() + SPIN_BOUND_NS;
            while (atomic_load(&high_queued) != 3 && coro_now() < end)
                sched_yield();
        }
        CORO_RETURN(co, f->n);
    }
    f->k = calloc(2, sizeof *f->k);
    cr_assert_not_null(f->k);
    for (int i = 0; i < 2; i++) {
        f->k[i].n = f->n - 1 - i;
        cr_assert_eq(coro_spawn(coro_sched_current(), &f->k[i].co, pfib_fn, NULL), 0);
    }
    CORO_AWAIT(co, coro_done(&f->k[0].co));
    f->r = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->k[1].co));
    f->r += CORO_RESULT(co);
    free(f->k);
    CORO_RETURN(co, f->r);
    CORO_END(co);
}

static int high_fn(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_store(&high_ran, 1);
    CORO_END(co);
}

struct proot {
    coro_t co;
    struct pfib f;
};

static int proot_fn(coro_t *co)
{
    struct proot *r = CORO_SELF(co, struct proot);
    CORO_BEGIN(co);
    cr_assert_eq(coro_spawn(coro_sched_current(), &r->f.co, pfib_fn, NULL), 0);
    CORO_AWAIT(co, coro_done(&r->f.co));
    if (!atomic_load(&high_ran))
        atomic_store(&high_seen_late, 1);
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(fork, a_high_job_queued_while_a_tree_runs_inline_runs_before_the_tree_ends,
     .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct proot r = { .f = { .n = 16 } };
    coro_t high = { 0 };
    coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };

    atomic_store(&high_queued, 0);
    atomic_store(&high_ran, 0);
    atomic_store(&high_seen_late, 0);
    cr_assert_eq(coro_spawn(s, &r.co, proot_fn, NULL), 0);
    int64_t end = coro_now() + SPIN_BOUND_NS;
    while (atomic_load(&high_queued) != 2 && coro_now() < end)
        sched_yield();
    cr_assert_eq(atomic_load(&high_queued), 2, "the first leaf never ran");
    cr_assert_eq(coro_spawn(s, &high, high_fn, &hi), 0);
    atomic_store(&high_queued, 3);
    cr_assert_eq(join_r(&r.co), 987);
    cr_assert_eq(join_r(&high), 0);
    cr_assert_eq(atomic_load(&high_seen_late), 0, "the tree ended before the HIGH job ran");
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- the dump lists a parent that awaits its child inline --------------------------- */

static atomic_int dump_go, dump_child_in;

static int dump_child_fn(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_store(&dump_child_in, 1);
    /* hold the worker inside this step until the dump was read (20 s) */
    int64_t end = coro_now() + SPIN_BOUND_NS;
    while (!atomic_load(&dump_go) && coro_now() < end)
        sched_yield();
    CORO_RETURN(co, 5);
    CORO_END(co);
}

struct dump_parent {
    coro_t co;
    coro_t child;
};

static int dump_parent_fn(coro_t *co)
{
    struct dump_parent *p = CORO_SELF(co, struct dump_parent);
    CORO_BEGIN(co);
    cr_assert_eq(coro_spawn(coro_sched_current(), &p->child, dump_child_fn, NULL), 0);
    CORO_AWAIT(co, coro_done(&p->child));    /* runs it inside this step */
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(fork, the_dump_lists_a_parent_that_runs_its_child_inline, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct dump_parent p = { 0 };
    char want[64], *text = NULL;
    size_t len = 0;

    atomic_store(&dump_go, 0);
    atomic_store(&dump_child_in, 0);
    cr_assert_eq(coro_spawn(s, &p.co, dump_parent_fn, NULL), 0);
    int64_t end = coro_now() + SPIN_BOUND_NS;
    while (!atomic_load(&dump_child_in) && coro_now() < end)
        sched_yield();
    cr_assert_eq(atomic_load(&dump_child_in), 1, "the child never ran");
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_geq(coro_sched_dump(s, f), 2, "the running child and its parent");
    fclose(f);
    snprintf(want, sizeof want, "inside the step of job %p", (void *)&p.co);
    cr_assert_not_null(strstr(text, want), "%s", text);
    free(text);
    atomic_store(&dump_go, 1);
    cr_assert_eq(join_r(&p.co), 5);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
