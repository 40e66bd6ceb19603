/* SPDX-License-Identifier: MIT */
/* The coroutine core: macros, coro_call, coro_done, frames, errors.
 * Built twice: on the labels back end (suite "coro") and on the portable
 * switch back end (-DCORO_USE_SWITCH, suite "coro_switch"). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CORO_USE_SWITCH
# define SUITE coro_switch
#else
# define SUITE coro
#endif
#define CTEST_(s, n, ...) Test(s, n, __VA_ARGS__)
#define CTEST(n, ...) CTEST_(SUITE, n, __VA_ARGS__)

static coro_sched_t *st_sched(void)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

/* ---- generator ---------------------------------------------------------- */

struct gen {
    coro_t co;
    int n, i, value;
    bool done;
};

static int gen_body(coro_t *co)
{
    struct gen *g = CORO_SELF(co, struct gen);
    CORO_BEGIN(co);
    for (g->i = 1; g->i <= g->n; g->i++) {
        g->value = g->i;
        CORO_YIELD(co);
    }
    g->done = true;
    CORO_END(co);
}

struct consumer {
    coro_t co;
    struct gen *g;
    int expect;
    int bad;
};

static int consume_body(coro_t *co)
{
    struct consumer *c = CORO_SELF(co, struct consumer);
    CORO_BEGIN(co);
    while (!c->g->done) {
        if (c->g->value != c->expect)
            c->bad++;
        c->expect++;
        CORO_YIELD(co);
    }
    CORO_RETURN(co, c->expect - 1);
    CORO_END(co);
}

CTEST(generator_yields_1_to_n_in_order, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct gen g = { .n = 1000 };
    struct consumer c = { .g = &g, .expect = 1 };

    cr_assert_eq(coro_spawn(s, &g.co, gen_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &c.co, consume_body, NULL), 0);
    cr_assert_gt(coro_sched_run(s), 0);
    cr_assert_eq(c.bad, 0, "values out of order: %d", c.bad);
    cr_assert_eq(join_r(&c.co), 1000);
    cr_assert_eq(join_r(&g.co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- switch inside a body ------------------------------------------------------ */

struct sw {
    coro_t co;
    int i;
    int trace[12];
};

static int switch_body(coro_t *co)
{
    struct sw *f = CORO_SELF(co, struct sw);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < 12; f->i++) {
        switch (f->i % 3) {          /* a switch of the body's own */
        case 0:
            f->trace[f->i] = 100;
#ifdef CORO_BACKEND_LABELS
            CORO_YIELD(co);          /* an await inside it: labels back end only */
#endif
            break;
        case 1:
            f->trace[f->i] = 200;
            break;
        default:
            f->trace[f->i] = 300;
            break;
        }
        CORO_YIELD(co);
    }
    CORO_END(co);
}

CTEST(switch_inside_a_body_works, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct sw f = { 0 };

    cr_assert_eq(block_on_r(s, &f.co, switch_body, NULL), 0);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(f.trace[i], (i % 3 + 1) * 100, "trace[%d] = %d", i, f.trace[i]);
    coro_sched_destroy(s);
}

/* ---- several awaits on one line ------------------------------------------------- */

struct leaf {
    coro_t co;
    int v;
};

static int leaf_body(coro_t *co)
{
    struct leaf *l = CORO_SELF(co, struct leaf);
    CORO_BEGIN(co);
    CORO_YIELD(co);
    CORO_RETURN(co, l->v);
    CORO_END(co);
}

struct two {
    coro_t co;
    struct leaf a, b;
    intptr_t ra, rb;
    int yields;
};

static int two_body(coro_t *co)
{
    struct two *t = CORO_SELF(co, struct two);
    CORO_BEGIN(co);
    /* clang-format off */
    CORO_AWAIT(co, coro_call(&t->a.co, leaf_body)); t->ra = CORO_RESULT(co); CORO_AWAIT(co, coro_call(&t->b.co, leaf_body)); t->rb = CORO_RESULT(co);
    CORO_YIELD(co); t->yields++; CORO_YIELD(co); t->yields++;
    /* clang-format on */
    CORO_RETURN(co, t->ra + t->rb);
    CORO_END(co);
}

CTEST(two_awaits_on_one_line_do_not_collide, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct two t = { .a.v = 3, .b.v = 40 };

    cr_assert_eq(block_on_r(s, &t.co, two_body, NULL), 43);
    cr_assert_eq(t.ra, 3);
    cr_assert_eq(t.rb, 40);
    cr_assert_eq(t.yields, 2);
    coro_sched_destroy(s);
}

/* ---- deep coro_call chains ----------------------------------------------------- */

struct link {
    coro_t co;
    int depth, max;
    struct link *chain;
    long entries;       /* how often the body was entered */
    int yields;
};

static int link_body(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    l->entries++;
    CORO_BEGIN(co);
    if (l->depth < l->max) {
        struct link *child = &l->chain[l->depth + 1];
        child->depth = l->depth + 1;
        child->max = l->max;
        child->chain = l->chain;
        CORO_AWAIT(co, coro_call(&child->co, link_body));
        CORO_RETURN(co, CORO_RESULT(co) + 1);
    }
    /* the deepest child suspends the whole job several times */
    for (; l->yields > 0; l->yields--)
        CORO_YIELD(co);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct deep_args {
    int depth, yields;
    intptr_t result;
    struct link *chain;
};

static void *deep_thread(void *arg)
{
    struct deep_args *a = arg;
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    c.workers = 0;
    if (coro_sched_create(&s, &c) != 0)
        return NULL;
    a->chain[0].chain = a->chain;
    a->chain[0].max = a->depth;
    a->chain[a->depth].yields = a->yields;
    a->result = block_on_r(s, &a->chain[0].co, link_body, NULL);
    coro_sched_destroy(s);
    return NULL;
}

CTEST(call_chain_100000_deep_runs_and_resumes_on_a_64k_stack, .timeout = 60)
{
    struct deep_args a = { .depth = 100000, .yields = 3, .result = -1 };
    pthread_attr_t attr;
    pthread_t th;

    a.chain = calloc(a.depth + 1, sizeof *a.chain);
    cr_assert_not_null(a.chain);
    pthread_attr_init(&attr);
    cr_assert_eq(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
    cr_assert_eq(pthread_create(&th, &attr, deep_thread, &a), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    cr_assert_eq(a.result, a.depth, "result %ld", (long)a.result);
    free(a.chain);
}

CTEST(a_deep_child_is_resumed_without_reentering_its_ancestors, .timeout = 10)
{
    enum { DEPTH = 100, YIELDS = 1000 };
    struct link *chain = calloc(DEPTH + 1, sizeof *chain);
    coro_sched_t *s = st_sched();

    chain[0].chain = chain;
    chain[0].max = DEPTH;
    chain[DEPTH].yields = YIELDS;
    cr_assert_eq(block_on_r(s, &chain[0].co, link_body, NULL), DEPTH);
    /* every ancestor was entered twice: to start, and when its child
     * returned; the leaf once per resumption */
    for (int i = 0; i < DEPTH; i++)
        cr_assert_eq(chain[i].entries, 2, "level %d entered %ld times", i, chain[i].entries);
    cr_assert_eq(chain[DEPTH].entries, YIELDS + 1);
    coro_sched_destroy(s);
    free(chain);
}

/* ---- a million suspended frames ------------------------------------------------- */

struct waiter {
    coro_t co;
    coro_t *target;
    intptr_t got;
};

static int wait_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done(w->target));
    w->got = CORO_RESULT(co);
    CORO_RETURN(co, w->got);
    CORO_END(co);
}

static int answer_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 42);
    CORO_END(co);
}

CTEST(a_million_frames_suspend_at_once, .timeout = 120)
{
    enum { N = 1000000 };
    coro_sched_t *a = st_sched(), *b = st_sched();
    struct waiter *w = calloc(N, sizeof *w);
    coro_t gate = { 0 };
    coro_sched_stats_t *st = malloc(sizeof *st);

    /* gate is spawned on b, which nobody drives yet: it stays unfinished */
    cr_assert_eq(coro_spawn(b, &gate, answer_body, NULL), 0);
    for (int i = 0; i < N; i++) {
        w[i].target = &gate;
        cr_assert_eq(coro_spawn(a, &w[i].co, wait_body, NULL), 0);
    }
    cr_assert_eq(coro_sched_run(a), N);       /* each runs once and suspends */
    coro_sched_stats(a, st);
    cr_assert_eq(st->live_jobs, N, "%lu live", (unsigned long)st->live_jobs);
    cr_assert_eq(coro_sched_run(b), 1);       /* gate finishes: wakes them all */
    cr_assert_eq(coro_sched_run(a), N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(w[i].got, 42);
    coro_sched_stats(a, st);
    cr_assert_eq(st->live_jobs, 0);
    coro_sched_destroy(a);
    coro_sched_destroy(b);
    free(w);
    free(st);
}

/* ---- reuse, on_exit, coro_done --------------------------------------------------- */

CTEST(a_finished_frame_can_be_spawned_again, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct link l = { 0 };

    for (int round = 0; round < 5; round++) {
        l.entries = 0;
        l.yields = 2;
        l.max = 0;
        cr_assert_eq(block_on_r(s, &l.co, link_body, NULL), 0);
        cr_assert_eq(l.entries, 3);
    }
    coro_sched_destroy(s);
}

static int exits;

static void free_on_exit(coro_t *co)
{
    exits++;
    free(CORO_SELF(co, struct link));
}

CTEST(on_exit_runs_once_and_may_free_the_frame, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    coro_spawn_opts_t o = { .on_exit = free_on_exit };

    exits = 0;
    for (int i = 0; i < 100; i++) {
        struct link *l = calloc(1, sizeof *l);
        l->yields = i % 3;
        cr_assert_eq(coro_spawn(s, &l->co, link_body, &o), 0);
    }
    coro_sched_run(s);
    cr_assert_eq(exits, 100);
    coro_sched_destroy(s);
}

CTEST(several_jobs_await_the_same_job, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct link target = { .yields = 5 };
    struct waiter w[10];

    memset(w, 0, sizeof w);
    cr_assert_eq(coro_spawn(s, &target.co, link_body, NULL), 0);
    for (int i = 0; i < 10; i++) {
        w[i].target = &target.co;
        cr_assert_eq(coro_spawn(s, &w[i].co, wait_body, NULL), 0);
    }
    coro_sched_run(s);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(join_r(&w[i].co), 0);
    /* a finished job: coro_done completes at once with its result */
    struct waiter late = { .target = &target.co };
    cr_assert_eq(block_on_r(s, &late.co, wait_body, NULL), 0);
    coro_sched_destroy(s);
}

/* ---- the ready budget -------------------------------------------------------- */

struct spinner {
    coro_t co;
    coro_t *done_job;
    volatile int *flag;
    int i, seen_at;
};

static int spinner_body(coro_t *co)
{
    struct spinner *p = CORO_SELF(co, struct spinner);
    CORO_BEGIN(co);
    p->seen_at = -1;
    for (p->i = 0; p->i < 100000; p->i++) {
        CORO_AWAIT(co, coro_done(p->done_job));     /* always complete */
        if (*p->flag && p->seen_at < 0)
            p->seen_at = p->i;
    }
    CORO_END(co);
}

static int flag_body(coro_t *co)
{
    struct spinner *p = CORO_SELF(co, struct spinner);
    CORO_BEGIN(co);
    *p->flag = 1;
    CORO_END(co);
}

CTEST(a_job_whose_awaits_are_always_ready_still_lets_others_run, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    coro_t finished = { 0 };
    volatile int flag = 0;
    struct spinner a = { .flag = &flag }, b = { .flag = &flag };

    cr_assert_eq(block_on_r(s, &finished, answer_body, NULL), 42);
    a.done_job = &finished;
    cr_assert_eq(coro_spawn(s, &a.co, spinner_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &b.co, flag_body, NULL), 0);
    coro_sched_run(s);
    cr_assert(a.seen_at >= 0 && a.seen_at < 1000, "other job ran only at %d", a.seen_at);
    coro_sched_destroy(s);
}

/* ---- errors ------------------------------------------------------------------------ */

CTEST(spawn_with_null_frame_or_fn_fails_with_einval, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    coro_t co = { 0 };

    cr_assert_eq(coro_spawn(s, NULL, answer_body, NULL), -EINVAL);
    cr_assert_eq(coro_spawn(s, &co, NULL, NULL), -EINVAL);
    cr_assert_eq(coro_spawn(NULL, &co, answer_body, NULL), -EINVAL);
    cr_assert_eq(block_on_r(s, NULL, answer_body, NULL), -EINVAL);
    coro_spawn_opts_t bad = { .priority = 2 };
    cr_assert_eq(coro_spawn(s, &co, answer_body, &bad), -EINVAL);
    bad.priority = -2;
    cr_assert_eq(coro_spawn(s, &co, answer_body, &bad), -EINVAL);
    cr_assert_eq(co.state, 0, "a failed spawn leaves the frame untouched");
    coro_sched_destroy(s);
}

CTEST(spawning_a_live_frame_fails_with_ebusy, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct link l = { .yields = 1 };

    cr_assert_eq(coro_spawn(s, &l.co, link_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &l.co, link_body, NULL), -EBUSY);
    coro_sched_run(s);
    cr_assert_eq(coro_spawn(s, &l.co, link_body, NULL), 0, "finished: may start again");
    coro_sched_destroy(s);
}

CTEST(spawn_after_shutdown_fails_with_eshutdown, .timeout = 10)
{
    coro_sched_t *s = st_sched();
    coro_t co = { 0 };

    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(coro_spawn(s, &co, answer_body, NULL), -ESHUTDOWN);
    cr_assert_eq(block_on_r(s, &co, answer_body, NULL), -ESHUTDOWN);
    cr_assert_eq(co.state, 0);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0, "a second shutdown is harmless");
    coro_sched_destroy(s);
}

CTEST(join_on_a_never_spawned_frame_fails_with_einval, .timeout = 10)
{
    coro_t co = { 0 };

    cr_assert_eq(join_r(&co), -EINVAL);
    cr_assert_eq(join_r(NULL), -EINVAL);
}

struct inner {
    coro_t co;
    coro_sched_t *s;
    struct link child;
    coro_t other;
    intptr_t join_rc, block_rc, self_rc, null_rc, idle_rc, call_null, call_busy, run_rc, shut_rc,
        destroy_rc;
};

static int inner_body(coro_t *co)
{
    struct inner *f = CORO_SELF(co, struct inner);
    CORO_BEGIN(co);
    f->join_rc = join_r(&f->child.co);
    f->block_rc = block_on_r(f->s, &f->other, answer_body, NULL);
    f->run_rc = coro_sched_run(f->s);
    f->shut_rc = coro_sched_shutdown(f->s, CORO_DRAIN);
    f->destroy_rc = coro_sched_destroy(f->s);
    CORO_AWAIT(co, coro_done(co));
    f->self_rc = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(NULL));
    f->null_rc = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->other));
    f->idle_rc = CORO_RESULT(co);
    CORO_AWAIT(co, coro_call(NULL, link_body));
    f->call_null = CORO_RESULT(co);
    CORO_AWAIT(co, coro_call(&f->child.co, link_body));     /* child is a live job */
    f->call_busy = CORO_RESULT(co);
    CORO_END(co);
}

CTEST(blocking_calls_inside_a_job_fail_with_edeadlk_and_bad_awaits_complete_with_errors,
      .timeout = 10)
{
    coro_sched_t *s = st_sched();
    struct inner f = { .s = s };

    f.child.yields = 1;
    cr_assert_eq(coro_spawn(s, &f.child.co, link_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &f.co, inner_body, NULL), 0);
    coro_sched_run(s);
    cr_assert_eq(f.join_rc, -EDEADLK);
    cr_assert_eq(f.block_rc, -EDEADLK);
    cr_assert_eq(f.run_rc, -EDEADLK);
    cr_assert_eq(f.shut_rc, -EDEADLK);
    cr_assert_eq(f.destroy_rc, -EDEADLK);
    cr_assert_eq(f.self_rc, -EDEADLK);
    cr_assert_eq(f.null_rc, -EINVAL);
    cr_assert_eq(f.idle_rc, -EINVAL);
    cr_assert_eq(f.call_null, -EINVAL);
    cr_assert_eq(f.call_busy, -EBUSY);
    cr_assert_eq(f.other.state, 0, "the refused block_on spawned nothing");
    coro_sched_destroy(s);
}

CTEST(cancel_resumes_every_suspended_job_with_ecanceled, .timeout = 30)
{
    enum { N = 1000 };
    coro_sched_t *a = st_sched(), *b = st_sched();
    coro_t gate = { 0 };
    struct waiter *w = calloc(N, sizeof *w);

    cr_assert_eq(coro_spawn(b, &gate, answer_body, NULL), 0);
    for (int i = 0; i < N; i++) {
        w[i].target = &gate;
        w[i].got = 1;
        cr_assert_eq(coro_spawn(a, &w[i].co, wait_body, NULL), 0);
    }
    cr_assert_eq(coro_sched_run(a), N);
    cr_assert_eq(coro_sched_shutdown(a, CORO_CANCEL), 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(w[i].got, -ECANCELED);
    cr_assert_eq(coro_sched_destroy(a), 0);
    cr_assert_eq(coro_sched_destroy(b), 0, "destroy drains: gate runs now");
    cr_assert_eq(join_r(&gate), 42);
    free(w);
}

CTEST(scheduler_config_errors, .timeout = 10)
{
    coro_sched_t *s = (coro_sched_t *)1;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_cpuset_t none;

    cr_assert_eq(coro_sched_create(NULL, NULL), -EINVAL);
    c.workers = -2;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    cr_assert_null(s);
    c.workers = CORO_MAX_WORKERS + 1;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    c.workers = 1;
    coro_cpuset_zero(&none);
    coro_cpuset_add(&none, CORO_MAX_CPUS - 1);      /* no such CPU here */
    c.cpus = &none;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    cr_assert_eq(coro_sched_run(NULL), -EINVAL);
    cr_assert_eq(coro_sched_shutdown(NULL, CORO_DRAIN), -EINVAL);
    cr_assert_eq(coro_sched_destroy(NULL), -EINVAL);
    cr_assert_eq(coro_sched_stats(NULL, NULL), -EINVAL);
    cr_assert_eq(coro_sched_workers(NULL), -EINVAL);
    s = st_sched();
    cr_assert_eq(coro_sched_shutdown(s, 7), -EINVAL);
    cr_assert_eq(coro_sched_workers(s), 0);
    coro_sched_destroy(s);
}

/* an allocator that fails after `budget` allocations, and counts */
static int alloc_budget, alloc_live;

static void *fail_malloc(void *ctx, size_t n)
{
    (void)ctx;
    /* relaxed: counters only; the workers make their own structs at
     * create, so this is called from several threads at once */
    if (__atomic_fetch_sub(&alloc_budget, 1, __ATOMIC_RELAXED) <= 0)
        return NULL;
    __atomic_add_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void fail_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    __atomic_sub_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    free(p);
}

CTEST(out_of_memory_gives_enomem_and_leaks_nothing, .timeout = 30)
{
    coro_alloc_t a = { .alloc = fail_malloc, .free = fail_free };
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    int rc, tries = 0;

    c.alloc = &a;
    for (int workers = 0; workers <= 2; workers++) {
        c.workers = workers;
        for (int budget = 0;; budget++) {
            alloc_budget = budget;
            alloc_live = 0;
            rc = coro_sched_create(&s, &c);
            if (rc == 0)
                break;
            tries++;
            cr_assert_eq(rc, -ENOMEM, "budget %d: %s", budget, coro_strerror(rc));
            cr_assert_eq(alloc_live, 0, "budget %d: %d blocks leaked", budget, alloc_live);
            cr_assert_null(s);
        }
        struct link l = { .yields = 2 };
        cr_assert_eq(block_on_r(s, &l.co, link_body, NULL), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(alloc_live, 0);
    }
    cr_assert_gt(tries, 3);
}

/* ---- small things ---------------------------------------------------------------- */

CTEST(coro_t_is_at_most_128_bytes, .timeout = 10)
{
    cr_log_info("sizeof(coro_t) = %zu, back end %s", sizeof(coro_t), CORO_BACKEND_NAME);
    printf("sizeof(coro_t) = %zu bytes (%s back end)\n", sizeof(coro_t), CORO_BACKEND_NAME);
    cr_assert_leq(sizeof(coro_t), 128);
    cr_assert_eq(coro_version(), CORO_VERSION_HEX);
}

CTEST(strerror_and_names_cover_the_codes, .timeout = 10)
{
    cr_assert_str_eq(coro_err_name(-EINVAL), "EINVAL");
    cr_assert_str_eq(coro_err_name(-ESHUTDOWN), "ESHUTDOWN");
    cr_assert_str_eq(coro_err_name(ECANCELED), "ECANCELED");
    cr_assert_str_eq(coro_err_name(-9999), "UNKNOWN");
    cr_assert_str_eq(coro_strerror(-EBUSY), "frame or object is still in use");
    cr_assert_str_eq(coro_strerror(0), "success");
    cr_assert_str_eq(coro_strerror(-9999), "unknown error");
}

CTEST(strerror_and_names_of_int_min_are_unknown_without_overflow, .timeout = 10)
{
    /* -INT_MIN overflows: UBSan (make check-asan) stops the old code here */
    cr_assert_str_eq(coro_strerror(INT_MIN), "unknown error");
    cr_assert_str_eq(coro_err_name(INT_MIN), "UNKNOWN");
    cr_assert_str_eq(coro_err_name(INT_MIN + 1), "UNKNOWN");
    cr_assert_str_eq(coro_err_name(INT_MAX), "UNKNOWN");
}
