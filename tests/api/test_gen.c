/* SPDX-License-Identifier: MIT */
/* Generators pulled from plain code (include/corokit/gen.h): coro_gen_init,
 * coro_gen_next, CORO_YIELD_VALUE, CORO_YIELD_FROM at any depth,
 * coro_gen_close, who may pull, and the adapters from plain code.  The
 * pulls in jobs are in test_gen_job.c. */
#define _GNU_SOURCE
#include "fixture.h"
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1, 4, 9 .. n * n; ends with err when err < 0 */
struct squares {
    coro_t co;
    int i, n;
    int err;
    int runs;       /* calls of the body */
};

static int squares(coro_t *co)
{
    struct squares *g = CORO_SELF(co, struct squares);
    g->runs++;
    CORO_BEGIN(co);
    for (g->i = 1; g->i <= g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i * g->i);
    if (g->err < 0)
        CORO_RETURN(co, g->err);
    CORO_END(co);
}

Test(gen, init_refuses_null_and_frames_that_are_not_zeroed, .timeout = 10)
{
    struct squares g = { .n = 1 };
    cr_assert_eq(coro_gen_init(NULL, squares), -EINVAL);
    cr_assert_eq(coro_gen_init(&g.co, NULL), -EINVAL);
    cr_assert_eq(coro_gen_init(&g.co, squares), 0);
    cr_assert_eq(coro_gen_init(&g.co, squares), -EINVAL, "a live generator is not zeroed");
    struct squares h = { .n = 1 };
    h.co.resume = 1;
    cr_assert_eq(coro_gen_init(&h.co, squares), -EINVAL);
}

Test(gen, plain_pulls_give_every_value_then_0_forever, .timeout = 10)
{
    struct squares g = { .n = 10 };
    intptr_t v, sum = 0;
    int r, k = 0;

    cr_assert_eq(coro_gen_init(&g.co, squares), 0);
    cr_assert_eq(g.runs, 0, "the body runs only when pulled");
    while ((r = coro_gen_next(&g.co, &v)) == 1) {
        k++;
        cr_assert_eq(v, k * k);
        sum += v;
    }
    cr_assert_eq(r, 0);
    cr_assert_eq(sum, 385);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    cr_assert_eq(g.runs, 11, "no run after the end");
}

Test(gen, a_body_that_ends_with_an_error_gives_it_once_then_0, .timeout = 10)
{
    struct squares g = { .n = 2, .err = -EIO };
    intptr_t v;

    coro_gen_init(&g.co, squares);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EIO);
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
}

Test(gen, next_refuses_null_and_frames_that_are_not_generators, .timeout = 10)
{
    struct squares g = { .n = 1 };
    coro_t plain = { 0 };
    intptr_t v = 77;

    cr_assert_eq(coro_gen_next(NULL, &v), -EINVAL);
    cr_assert_eq(coro_gen_next(&plain, &v), -EINVAL);
    coro_gen_init(&g.co, squares);
    cr_assert_eq(coro_gen_next(&g.co, NULL), -EINVAL);
    cr_assert_eq(v, 77);
    cr_assert_eq(coro_gen_close(NULL), -EINVAL);
    cr_assert_eq(coro_gen_close(&plain), -EINVAL);
}

static char ptr_text[] = "text";

struct ptr {
    coro_t co;
};

static int ptr_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, ptr_text);
    CORO_END(co);
}

Test(gen, yield_value_hands_over_a_pointer, .timeout = 10)
{
    struct ptr g = { 0 };
    intptr_t v;

    coro_gen_init(&g.co, ptr_body);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq((char *)v, ptr_text);
    cr_assert_eq(CORO_RESULT(&g.co), v, "CORO_RESULT after CORO_YIELD_VALUE holds the value");
}

/* ---- a body that awaits ------------------------------------------------------- */

struct waits {
    coro_t co;
    coro_event_t *ev;
    int after;      /* times the body went past its await */
    intptr_t got;
};

static int waits_body(coro_t *co)
{
    struct waits *g = CORO_SELF(co, struct waits);
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1);
    CORO_AWAIT(co, coro_event_wait(g->ev, CORO_FOREVER));
    g->after++;
    g->got = CORO_RESULT(co);
    CORO_YIELD_VALUE(co, 2);
    CORO_END(co);
}

Test(gen, a_body_that_awaits_gives_ewouldblock_and_stays_where_it_was, .timeout = 10)
{
    coro_event_t ev;
    struct waits g = { .ev = &ev };
    intptr_t v = 0;

    coro_event_init(&ev);
    coro_gen_init(&g.co, waits_body);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(v, 1);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK, "still there");
    coro_event_set(&ev);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK, "a plain pull never arms the await");
    cr_assert_eq(g.after, 0);
    cr_assert_eq(coro_gen_close(&g.co), 0, "a waiting generator can be closed");
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    cr_assert_eq(g.after, 0, "close does not resume the body");
    coro_event_destroy(&ev);
}

/* a generator whose body pulls another one (an adapter): plain pulls run
 * both inline */
struct doubler {
    coro_t co;
    struct squares in;
    intptr_t v;
};

static int doubler_body(coro_t *co)
{
    struct doubler *g = CORO_SELF(co, struct doubler);
    CORO_BEGIN(co);
    coro_gen_init(&g->in.co, squares);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(&g->in.co, &g->v));
        if (CORO_RESULT(co) != 1)
            break;
        CORO_YIELD_VALUE(co, 2 * g->v);
    }
    CORO_END(co);
}

Test(gen, a_body_awaiting_another_generator_runs_it_inline_from_plain_code, .timeout = 10)
{
    struct doubler g = { .in = { .n = 4 } };
    intptr_t v, sum = 0;
    int r;

    coro_gen_init(&g.co, doubler_body);
    while ((r = coro_gen_next(&g.co, &v)) == 1)
        sum += v;
    cr_assert_eq(r, 0);
    cr_assert_eq(sum, 2 * (1 + 4 + 9 + 16));
}

struct self {
    coro_t co;
    intptr_t v;
    int next_rc, close_rc, from_rc;
};

static int self_body(coro_t *co)
{
    struct self *g = CORO_SELF(co, struct self);
    CORO_BEGIN(co);
    g->next_rc = coro_gen_next(co, &g->v);
    g->close_rc = coro_gen_close(co);
    CORO_YIELD_FROM(co, co);
    g->from_rc = (int)CORO_RESULT(co);
    CORO_YIELD_VALUE(co, 5);
    CORO_END(co);
}

Test(gen, a_body_that_pulls_or_closes_its_own_generator_gets_ebusy, .timeout = 10)
{
    struct self g = { 0 };
    intptr_t v;

    coro_gen_init(&g.co, self_body);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(v, 5);
    cr_assert_eq(g.next_rc, -EBUSY);
    cr_assert_eq(g.close_rc, -EBUSY);
    cr_assert_eq(g.from_rc, -EINVAL, "yield-from itself");
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
}

/* ---- yield-from ------------------------------------------------------------------ */

/* a chain: level k yields 1000 + k, every value of level k + 1 (the last
 * level: the squares of leaf), then 2000 + k */
struct level {
    coro_t co;
    int k, depth;
    struct level *below;
    struct squares *leaf;
    int runs;
};

static int level_body(coro_t *co)
{
    struct level *g = CORO_SELF(co, struct level);
    g->runs++;
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1000 + g->k);
    if (g->k + 1 < g->depth) {
        coro_gen_init(&g->below->co, level_body);
        CORO_YIELD_FROM(co, &g->below->co);
    } else {
        coro_gen_init(&g->leaf->co, squares);
        CORO_YIELD_FROM(co, &g->leaf->co);
    }
    CORO_YIELD_VALUE(co, 2000 + g->k);
    CORO_END(co);
}

static struct level levels[64];
static struct squares chain_leaf;

static coro_t *make_chain(int depth, int n)
{
    memset(levels, 0, sizeof levels);
    memset(&chain_leaf, 0, sizeof chain_leaf);
    chain_leaf.n = n;
    for (int k = 0; k < depth; k++) {
        levels[k].k = k;
        levels[k].depth = depth;
        levels[k].below = k + 1 < depth ? &levels[k + 1] : NULL;
        levels[k].leaf = &chain_leaf;
    }
    cr_assert_eq(coro_gen_init(&levels[0].co, level_body), 0);
    return &levels[0].co;
}

Test(gen, yield_from_hands_over_every_value_in_order_at_any_depth, .timeout = 10)
{
    int depths[] = { 1, 2, 7, 64 };
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        int depth = depths[d];
        coro_t *g = make_chain(depth, 5);
        intptr_t v;
        for (int k = 0; k < depth; k++) {
            cr_assert_eq(coro_gen_next(g, &v), 1);
            cr_assert_eq(v, 1000 + k, "depth %d", depth);
        }
        for (int i = 1; i <= 5; i++) {
            cr_assert_eq(coro_gen_next(g, &v), 1);
            cr_assert_eq(v, i * i);
        }
        for (int k = depth - 1; k >= 0; k--) {
            cr_assert_eq(coro_gen_next(g, &v), 1);
            cr_assert_eq(v, 2000 + k);
        }
        cr_assert_eq(coro_gen_next(g, &v), 0);
        cr_assert_eq(coro_gen_next(&chain_leaf.co, &v), 0, "an inner ends with its outer");
    }
}

Test(gen, a_pull_through_64_levels_runs_only_the_innermost_body, .timeout = 10)
{
    coro_t *g = make_chain(64, 1000);
    intptr_t v;

    for (int k = 0; k < 65; k++)      /* the levels' first values and the leaf's first */
        coro_gen_next(g, &v);
    cr_assert_eq(v, 1);
    int before[64];
    for (int k = 0; k < 64; k++)
        before[k] = levels[k].runs;
    for (int i = 1; i < 1000; i++)
        cr_assert_eq(coro_gen_next(g, &v), 1);
    cr_assert_eq(v, 1000 * 1000);
    for (int k = 0; k < 64; k++)
        cr_assert_eq(levels[k].runs, before[k], "level %d ran during the leaf's values", k);
    cr_assert_eq(coro_gen_close(g), 0);
}

struct from_bad {
    coro_t co;
    coro_t *inner;
    int rc;
};

static int from_bad_body(coro_t *co)
{
    struct from_bad *g = CORO_SELF(co, struct from_bad);
    CORO_BEGIN(co);
    CORO_YIELD_FROM(co, g->inner);
    g->rc = (int)CORO_RESULT(co);
    CORO_END(co);
}

Test(gen, yield_from_refuses_a_non_generator_and_one_pulled_elsewhere, .timeout = 10)
{
    coro_t notgen = { 0 };
    struct from_bad a = { .inner = &notgen }, b = { .inner = NULL };
    intptr_t v;

    coro_gen_init(&a.co, from_bad_body);
    cr_assert_eq(coro_gen_next(&a.co, &v), 0);
    cr_assert_eq(a.rc, -EINVAL);
    coro_gen_init(&b.co, from_bad_body);
    cr_assert_eq(coro_gen_next(&b.co, &v), 0);
    cr_assert_eq(b.rc, -EINVAL);

    /* an inner already linked into another chain */
    coro_t *chain = make_chain(2, 3);
    coro_gen_next(chain, &v);
    coro_gen_next(chain, &v);   /* level 1 is linked now */
    struct from_bad c = { .inner = &levels[1].co };
    coro_gen_init(&c.co, from_bad_body);
    cr_assert_eq(coro_gen_next(&c.co, &v), 0);
    cr_assert_eq(c.rc, -EBUSY);
    cr_assert_eq(coro_gen_next(&levels[1].co, &v), -EBUSY, "a linked inner is not pulled directly");
    cr_assert_eq(coro_gen_close(&levels[1].co), -EBUSY);

    /* an inner that has ended: nothing to hand over */
    struct squares done = { .n = 0 };
    coro_gen_init(&done.co, squares);
    cr_assert_eq(coro_gen_next(&done.co, &v), 0);
    struct from_bad d = { .inner = &done.co, .rc = 9 };
    coro_gen_init(&d.co, from_bad_body);
    cr_assert_eq(coro_gen_next(&d.co, &v), 0);
    cr_assert_eq(d.rc, 0);
}

Test(gen, yield_from_gives_the_inner_s_error_to_its_outer, .timeout = 10)
{
    struct squares in = { .n = 1, .err = -EPROTO };
    struct from_bad g = { .inner = &in.co };
    intptr_t v;

    coro_gen_init(&in.co, squares);
    coro_gen_init(&g.co, from_bad_body);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    cr_assert_eq(g.rc, -EPROTO);
}

/* ---- close --------------------------------------------------------------------------- */

Test(gen, close_ends_a_generator_and_every_inner_one, .timeout = 10)
{
    coro_t *g = make_chain(5, 10);
    intptr_t v;

    for (int i = 0; i < 7; i++)
        cr_assert_eq(coro_gen_next(g, &v), 1);
    cr_assert_eq(v, 4, "in the leaf's values");
    int runs = chain_leaf.runs;
    cr_assert_eq(coro_gen_close(g), 0);
    cr_assert_eq(coro_gen_next(g, &v), 0);
    cr_assert_eq(coro_gen_next(g, &v), 0);
    for (int k = 1; k < 5; k++)
        cr_assert_eq(coro_gen_next(&levels[k].co, &v), 0, "level %d closed", k);
    cr_assert_eq(coro_gen_next(&chain_leaf.co, &v), 0);
    cr_assert_eq(chain_leaf.runs, runs, "no body resumed");
    cr_assert_eq(coro_gen_close(g), 0, "closing twice is fine");

    struct squares fresh = { .n = 3 };
    coro_gen_init(&fresh.co, squares);
    cr_assert_eq(coro_gen_close(&fresh.co), 0, "a generator that never ran");
    cr_assert_eq(coro_gen_next(&fresh.co, &v), 0);
    cr_assert_eq(fresh.runs, 0);
    memset(&fresh, 0, sizeof fresh);
    fresh.n = 1;
    cr_assert_eq(coro_gen_init(&fresh.co, squares), 0, "zeroed again, it is a new generator");
    cr_assert_eq(coro_gen_next(&fresh.co, &v), 1);
}

/* ---- frames and pullers ------------------------------------------------------------------ */

Test(gen, a_generator_frame_cannot_be_spawned, .timeout = 10)
{
    coro_sched_t *s = mk(0);
    struct squares g = { .n = 1 };

    coro_gen_init(&g.co, squares);
    cr_assert_eq(coro_spawn(s, &g.co, squares, NULL), -EBUSY);
    fin(s);
}

struct pull_thread {
    pthread_t t;
    coro_t *g;
    int n;
    intptr_t sum;
};

static void *pull_main(void *arg)
{
    struct pull_thread *p = arg;
    intptr_t v;
    for (int i = 0; i < p->n && coro_gen_next(p->g, &v) == 1; i++)
        p->sum += v;
    return NULL;
}

Test(gen, threads_that_pull_one_after_another_share_a_generator, .timeout = 10)
{
    struct squares g = { .n = 10 };
    struct pull_thread a = { .g = &g.co, .n = 3 }, b = { .g = &g.co, .n = 100 };
    intptr_t v;

    coro_gen_init(&g.co, squares);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    pthread_create(&a.t, NULL, pull_main, &a);
    pthread_join(a.t, NULL);
    pthread_create(&b.t, NULL, pull_main, &b);
    pthread_join(b.t, NULL);
    cr_assert_eq(a.sum, 4 + 9 + 16);
    cr_assert_eq(1 + a.sum + b.sum, 385);
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
}

/* ---- a stray CORO_YIELD_VALUE ------------------------------------------------------------ */

static int stray_from;  /* the stray is a CORO_YIELD_FROM */

/* exported, so that dladdr can name it in the message */
int gen_stray_value_body(coro_t *co);
int gen_stray_value_body(coro_t *co)
{
    CORO_BEGIN(co);
    if (!stray_from)
        CORO_YIELD_VALUE(co, 1);
    CORO_YIELD_FROM(co, co);
    CORO_END(co);
}

/* the child of expect_stray_abort: the body as a job on `workers` */
static void stray_child(void *arg)
{
    int workers = *(int *)arg;
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    if (coro_sched_create(&s, &c) != 0)
        _exit(3);
    static coro_t job;
    if (coro_spawn(s, &job, gen_stray_value_body, NULL) != 0)
        _exit(4);
    join_r(&job);
    _exit(0);               /* not reached: the step aborts */
}

static void expect_stray_abort(int workers, int from)
{
    char msg[1024];
    stray_from = from;      /* the child's body reads it */
    int st = in_child(stray_child, &workers, 2, msg, sizeof msg);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "workers %d: status %#x: %s",
              workers, st, msg);
    cr_assert(strstr(msg, "outside a generator"), "%s", msg);
    cr_assert(strstr(msg, "gen_stray_value_body") || strstr(msg, "+0x"), "%s", msg);
}

Test(gen, a_stray_yield_value_or_yield_from_in_a_job_aborts_naming_the_body, .timeout = 30)
{
    for (int w = 0; w <= 2; w += 2) {
        expect_stray_abort(w, 0);
        expect_stray_abort(w, 1);
    }
}

/* ---- the adapters from plain code ------------------------------------------------------- */

Test(gen, the_lines_of_a_blocking_fd_from_plain_code, .timeout = 10)
{
    int p[2];
    char buf[16];
    coro_gen_lines_t g = { 0 };
    intptr_t v;
    const char *want[] = { "a", "bb", "", "last" };

    cr_assert_eq(pipe(p), 0);
    const char text[] = "a\nbb\r\n\nlast";
    cr_assert_eq(write(p[1], text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(p[1]);
    cr_assert_eq(coro_gen_lines_init(&g, p[0], buf, sizeof buf, CORO_FOREVER), 0);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(coro_gen_next(&g.co, &v), 1, "line %d", i);
        cr_assert_str_eq((char *)v, want[i]);
        cr_assert_eq(g.len, strlen(want[i]));
    }
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    close(p[0]);
}

Test(gen, a_line_longer_than_the_buffer_gives_enobufs, .timeout = 10)
{
    int p[2];
    char buf[8];
    coro_gen_lines_t g = { 0 };
    intptr_t v;

    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "ok\n0123456789\n", 14), 14);
    close(p[1]);
    cr_assert_eq(coro_gen_lines_init(&g, p[0], buf, sizeof buf, CORO_FOREVER), 0);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(coro_gen_next(&g.co, &v), -ENOBUFS);
    cr_assert_eq(coro_gen_next(&g.co, &v), 0);
    close(p[0]);
    coro_gen_lines_t h = { 0 };
    cr_assert_eq(coro_gen_lines_init(&h, -1, buf, sizeof buf, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_gen_lines_init(&h, 0, buf, 1, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_gen_lines_init(&h, 0, NULL, 8, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_gen_lines_init(&h, 0, buf, 8, -5), -EINVAL);
}

Test(gen, the_items_of_a_channel_from_plain_code, .timeout = 10)
{
    coro_chan_t ch;
    void *slots[4];
    coro_gen_chan_t g = { 0 };
    intptr_t v;

    cr_assert_eq(coro_chan_init(&ch, slots, 4), 0);
    cr_assert_eq(coro_gen_chan_init(&g, &ch, CORO_FOREVER), 0);
    cr_assert_eq(coro_chan_try_send(&ch, (void *)(intptr_t)7), 0);
    cr_assert_eq(coro_gen_next(&g.co, &v), 1);
    cr_assert_eq(v, 7);
    cr_assert_eq(coro_gen_next(&g.co, &v), -EWOULDBLOCK, "an empty channel");
    cr_assert_eq(coro_gen_close(&g.co), 0);
    cr_assert_eq(coro_chan_destroy(&ch), 0);

    coro_gen_chan_t h = { 0 };
    cr_assert_eq(coro_chan_init(&ch, slots, 4), 0);
    cr_assert_eq(coro_gen_chan_init(&h, &ch, CORO_FOREVER), 0);
    coro_chan_try_send(&ch, (void *)(intptr_t)1);
    coro_chan_try_send(&ch, (void *)(intptr_t)2);
    coro_chan_close(&ch);
    cr_assert_eq(coro_gen_next(&h.co, &v), 1);
    cr_assert_eq(coro_gen_next(&h.co, &v), 1);
    cr_assert_eq(v, 2);
    cr_assert_eq(coro_gen_next(&h.co, &v), 0, "closed and drained: the end");
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    cr_assert_eq(coro_gen_chan_init(NULL, &ch, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_gen_chan_init(&h, NULL, CORO_FOREVER), -EINVAL);
}
