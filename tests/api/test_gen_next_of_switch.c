/* SPDX-License-Identifier: MIT */
/* coro_gen_next_of (include/corokit/gen.h) with its bodies on the switch
 * back end, where the compiler inlines the named body into the pull: the
 * inlined pull keeps the promises of coro_gen_next - the values and the
 * end, a recursive generator (yield-from of the same body), a wrong body
 * named, a body that pulls itself, a stray CORO_YIELD_VALUE, a second
 * puller from another thread, close.  The labels back end's are in
 * test_gen_next_of.c. */
#define _GNU_SOURCE
#define CORO_USE_SWITCH 1
#include "fixture.h"
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen_next_of_bodies.h"

Test(gen_next_of_switch, the_inlined_pull_gives_every_value_then_0_forever, .timeout = 10)
{
    pull_all_of(1000);
}

/* a tree's values in order: left subtree, the node's, right subtree -
 * each subtree a generator of the same body (yield-from) */
struct node {
    int v;
    struct node *l, *r;
};

struct walk {
    coro_t co;
    const struct node *n;
    struct walk *sub;       /* the frame of the subtree walked now */
};

static int walk_body(coro_t *co)
{
    struct walk *g = CORO_SELF(co, struct walk);
    CORO_BEGIN(co);
    if (g->n->l) {
        g->sub = calloc(1, sizeof *g->sub);
        g->sub->n = g->n->l;
        coro_gen_init(&g->sub->co, walk_body);
        CORO_YIELD_FROM(co, &g->sub->co);
        free(g->sub);
    }
    CORO_YIELD_VALUE(co, g->n->v);
    if (g->n->r) {
        g->sub = calloc(1, sizeof *g->sub);
        g->sub->n = g->n->r;
        coro_gen_init(&g->sub->co, walk_body);
        CORO_YIELD_FROM(co, &g->sub->co);
        free(g->sub);
    }
    CORO_END(co);
}

/* a tree of the values lo .. hi, balanced */
static struct node *tree(int lo, int hi)
{
    if (lo > hi)
        return NULL;
    struct node *n = calloc(1, sizeof *n);
    int mid = lo + (hi - lo) / 2;
    n->v = mid;
    n->l = tree(lo, mid - 1);
    n->r = tree(mid + 1, hi);
    return n;
}

static void free_tree(struct node *n)
{
    if (n) {
        free_tree(n->l);
        free_tree(n->r);
        free(n);
    }
}

Test(gen_next_of_switch, a_recursive_generator_walks_a_tree_in_order_whichever_body_is_named,
     .timeout = 10)
{
    struct node *t = tree(1, 200);
    coro_fn hints[] = { walk_body, count_body, NULL };

    for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++) {
        struct walk w = { .n = t };
        intptr_t v;
        int r, k = 0;
        coro_gen_init(&w.co, walk_body);
        while ((r = coro_gen_next_of(&w.co, hints[h], &v)) == 1)
            cr_assert_eq(v, ++k, "hint %zu: %jd at %d", h, (intmax_t)v, k);
        cr_assert_eq(r, 0);
        cr_assert_eq(k, 200, "hint %zu", h);
    }
    free_tree(t);
}

Test(gen_next_of_switch, an_inlined_body_that_pulls_its_own_generator_gets_EBUSY, .timeout = 10)
{
    struct self_pull g = { 0 };
    intptr_t v;

    coro_gen_init(&g.co, self_pull_body);
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 1);
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 1);
    cr_assert_eq(v, 2);
    cr_assert_eq(g.got, -EBUSY);
    cr_assert_eq(coro_gen_next_of(&g.co, self_pull_body, &v), 0);
}

Test(gen_next_of_switch, a_second_puller_while_an_inlined_pull_runs_gets_EBUSY, .timeout = 30)
{
    struct stops g = { 0 };
    pthread_t t;
    intptr_t v;
    void *res;

    sem_init(&g.in, 0, 0);
    sem_init(&g.go, 0, 0);
    coro_gen_init(&g.co, stops_body);
    cr_assert_eq(pthread_create(&t, NULL, pull_stops, &g), 0);
    pthread_join(t, &res);
    cr_assert_eq((intptr_t)res, 1);     /* the thread that ended keeps it */
    /* this thread keeps it now, and its inlined pull stops in the body */
    cr_assert_eq(pthread_create(&t, NULL, pull_stops, &g), 0);
    sem_wait(&g.in);
    cr_assert_eq(coro_gen_next_of(&g.co, stops_body, &v), -EBUSY);
    cr_assert_eq(coro_gen_close(&g.co), -EBUSY);
    sem_post(&g.go);
    pthread_join(t, &res);
    cr_assert_eq((intptr_t)res, 2);
    cr_assert_eq(coro_gen_close(&g.co), 0);
    cr_assert_eq(coro_gen_next_of(&g.co, stops_body, &v), 0);
    sem_destroy(&g.in);
    sem_destroy(&g.go);
}

/* a body that returns a stray status (a plain return): exported, so that
 * dladdr can name it in the message */
int gen_next_of_stray_return_body(coro_t *co);
int gen_next_of_stray_return_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_YIELD_VALUE(co, 1);
    return 7;
    CORO_END(co);
}

/* the child: two pulls, the second meets the stray status */
static void stray_return_child(void *arg)
{
    (void)arg;
    static coro_t g;
    intptr_t v;
    coro_gen_init(&g, gen_next_of_stray_return_body);
    if (coro_gen_next_of(&g, gen_next_of_stray_return_body, &v) != 1)
        _exit(3);
    (void)coro_gen_next_of(&g, gen_next_of_stray_return_body, &v);
    _exit(0);               /* not reached: the pull aborts */
}

Test(gen_next_of_switch, a_stray_status_from_an_inlined_body_aborts_naming_the_body,
     .timeout = 30)
{
    char msg[1024];
    int st = in_child(stray_return_child, NULL, 2, msg, sizeof msg);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, msg);
    cr_assert(strstr(msg, "gen_next_of_stray_return_body") || strstr(msg, "+0x"), "%s", msg);
}
