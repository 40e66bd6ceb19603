/* SPDX-License-Identifier: MIT */
/* generator: two generators a user writes at once (docs/guide.md §1a).
 *   1. A recursive walk of a binary tree in order: each node's generator
 *      yields from its left subtree's, its own key, then its right
 *      subtree's (CORO_YIELD_FROM).  Each pull runs only the innermost
 *      body, whatever the depth.  Pulled from plain code, the body named
 *      at the pull (coro_gen_next_of).
 *   2. An async line reader: a job pulls the lines of a pipe that a plain
 *      thread writes slowly (coro_gen_lines_t), waiting for the fd between
 *      lines inside the same job.
 * Exits 0 when both give what they should. */
#define _GNU_SOURCE 1
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- 1. a tree walk ---------------------------------------------------------- */

struct node {
    int key;
    struct node *left, *right;
};

/* [walk] the generator of a subtree: its frame holds its children's */
struct walk {
    coro_t co;
    const struct node *n;
    struct walk *sub;           /* the child walk in progress (malloc'd) */
};

static int walk_body(coro_t *co)
{
    struct walk *w = CORO_SELF(co, struct walk);

    CORO_BEGIN(co);
    if (!w->n)
        CORO_RETURN(co, 0);
    if (w->n->left) {
        w->sub = calloc(1, sizeof *w->sub);
        if (!w->sub)
            CORO_RETURN(co, -ENOMEM);
        w->sub->n = w->n->left;
        coro_gen_init(&w->sub->co, walk_body);
        CORO_YIELD_FROM(co, &w->sub->co);   /* every key of the left subtree */
        free(w->sub);
        w->sub = NULL;
    }
    CORO_YIELD_VALUE(co, w->n->key);
    if (w->n->right) {
        w->sub = calloc(1, sizeof *w->sub);
        if (!w->sub)
            CORO_RETURN(co, -ENOMEM);
        w->sub->n = w->n->right;
        coro_gen_init(&w->sub->co, walk_body);
        CORO_YIELD_FROM(co, &w->sub->co);
        free(w->sub);
        w->sub = NULL;
    }
    CORO_END(co);
}
/* [walk] */

/* a tree of keys 0 .. n-1, built as a degenerate (deep) spine with bushes */
static struct node *build(int lo, int hi, int skew)
{
    if (lo >= hi)
        return NULL;
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        exit(1);
    int mid = skew ? hi - 1 : lo + (hi - lo) / 2;
    n->key = mid;
    n->left = build(lo, mid, skew && hi - lo > 8);
    n->right = build(mid + 1, hi, 0);
    return n;
}

static void drop(struct node *n)
{
    if (n) {
        drop(n->left);
        drop(n->right);
        free(n);
    }
}

static int tree_walk(void)
{
    struct node *root = build(0, 1000, 1);   /* about 120 levels deep on the left */
    struct walk w = { .n = root };
    intptr_t v, want = 0;
    int r;

    coro_gen_init(&w.co, walk_body);
    /* coro_gen_next_of names the body: every frame of this walk runs
     * walk_body, so each pull calls it directly (inlined, where this file
     * used the switch back end: docs/guide.md §1a) */
    while ((r = coro_gen_next_of(&w.co, walk_body, &v)) == 1) {
        if (v != want) {
            fprintf(stderr, "tree walk: %jd where %jd was due\n", (intmax_t)v, (intmax_t)want);
            return 1;
        }
        want++;
    }
    drop(root);
    printf("tree walk: %jd keys in order (%s)\n", (intmax_t)want, r == 0 ? "end" : coro_strerror(r));
    return r == 0 && want == 1000 ? 0 : 1;
}

/* ---- 2. an async line reader ------------------------------------------------------ */

static void *writer(void *arg)
{
    int fd = *(int *)arg;
    for (int i = 1; i <= 20; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "line %d\n", i);
        if (write(fd, line, (size_t)n) != n)
            break;
        struct timespec ts = { 0, 1000000 };    /* 1 ms between lines */
        nanosleep(&ts, NULL);
    }
    close(fd);
    return NULL;
}

/* [reader] a job pulls the lines; the generator's body waits for the fd */
struct reader {
    coro_t co;
    coro_gen_lines_t lines;
    char buf[256];
    intptr_t line;
    int count;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);

    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(&r->lines.co, &r->line));
        if (CORO_RESULT(co) != 1)
            break;                      /* 0 at end of file, or an error */
        r->count++;
        if (r->count % 5 == 0)
            printf("reader: %s\n", (char *)r->line);
    }
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}
/* [reader] */

static int line_reader(void)
{
    int p[2];
    pthread_t t;
    coro_sched_t *s;
    static struct reader r;
    intptr_t res = -1;

    if (pipe2(p, O_NONBLOCK) < 0)
        return 1;
    if (coro_sched_create(&s, NULL) < 0)
        return 1;
    coro_gen_lines_init(&r.lines, p[0], r.buf, sizeof r.buf, CORO_FOREVER);
    pthread_create(&t, NULL, writer, &p[1]);
    int rc = coro_block_on(s, &r.co, reader_body, NULL, &res);
    pthread_join(t, NULL);
    close(p[0]);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    printf("reader: %d lines, end %jd\n", r.count, (intmax_t)res);
    return rc == 0 && res == 0 && r.count == 20 ? 0 : 1;
}

int main(void)
{
    int bad = tree_walk();
    bad |= line_reader();
    return bad;
}
