/* SPDX-License-Identifier: MIT */
/* samples/forkjoin.c - fork-join with a coro_fork_t: each call of a
 * recursive sum splits its range in two children, joins both with
 * CORO_FORK_JOIN and adds their results.  Every frame is a pool frame
 * (coro_frame_alloc): the fork keeps a child's frame until the join has
 * read its result, and the library gives it back then.  Exits 0 when the
 * sum is right.
 */
#include <stdio.h>
#include <corokit.h>

#define LEN 1000000
#define LEAF 4096

/* [forkjoin-sum] */
struct sum {
    coro_t co;
    long from, to;
    coro_fork_t fork;
    coro_t *kids[2];
    intptr_t res[2];
    int rc;                     /* a spawn's error: kept across the join */
};

static int sum_body(coro_t *co);

/* a child for [from, to) spawned into fork f; 0 or -errno */
static int fork_sum(coro_fork_t *f, coro_sched_t *s, long from, long to)
{
    struct sum *c = coro_frame_alloc(s, sizeof *c);     /* zeroed */
    if (!c)
        return -ENOMEM;
    c->from = from;
    c->to = to;
    int rc = coro_fork_spawn(f, s, &c->co, sum_body, NULL);
    if (rc < 0)
        coro_frame_free(c);     /* never spawned: still ours */
    return rc;
}

static int sum_body(coro_t *co)
{
    struct sum *p = CORO_SELF(co, struct sum);
    coro_sched_t *s = coro_sched_current();
    CORO_BEGIN(co);
    if (p->to - p->from <= LEAF) {
        long t = 0;
        for (long i = p->from; i < p->to; i++)
            t += i;
        CORO_RETURN(co, t);
    }
    coro_fork_init(&p->fork, p->kids, p->res, 2);
    long mid = p->from + (p->to - p->from) / 2;
    p->rc = fork_sum(&p->fork, s, p->from, mid);
    if (p->rc == 0)
        p->rc = fork_sum(&p->fork, s, mid, p->to);
    CORO_FORK_JOIN(co, &p->fork);       /* also after a failed spawn: joins the first */
    if (p->rc < 0 || CORO_RESULT(co) < 0)
        CORO_RETURN(co, p->rc < 0 ? p->rc : CORO_RESULT(co));
    CORO_RETURN(co, p->res[0] + p->res[1]);
    CORO_END(co);
}
/* [forkjoin-sum] */

int main(void)
{
    coro_sched_t *s;
    int rc = coro_sched_create(&s, NULL);
    if (rc < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    static struct sum root = { .from = 0, .to = LEN };
    intptr_t total = 0;
    rc = coro_block_on(s, &root.co, sum_body, NULL, &total);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    long want = (long)LEN * (LEN - 1) / 2;
    printf("sum of 0..%d = %ld (%s)\n", LEN - 1, (long)total, total == want ? "right" : "WRONG");
    return rc == 0 && total == want ? 0 : 1;
}
