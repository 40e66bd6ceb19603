/* SPDX-License-Identifier: MIT */
/* hello: a generator.  One job produces the squares 1, 4, 9 ... one by one,
 * yielding after each; another consumes them.  Single-threaded scheduler:
 * everything runs on this thread, in a predictable order. */
#include <corokit.h>
#include <stdio.h>

/* [frame] locals that survive a suspension live in the frame */
struct squares {
    coro_t co;          /* the header, named co */
    int i, n;
    long value;
    int done;
};
/* [frame] */

/* [body] */
static int squares(coro_t *co)
{
    struct squares *g = CORO_SELF(co, struct squares);

    CORO_BEGIN(co);
    for (g->i = 1; g->i <= g->n; g->i++) {
        g->value = (long)g->i * g->i;
        CORO_YIELD(co);                 /* hand the value over */
    }
    g->done = 1;
    CORO_END(co);
}
/* [body] */

struct printer {
    coro_t co;
    struct squares *g;
    long sum;
};

static int printer(coro_t *co)
{
    struct printer *p = CORO_SELF(co, struct printer);

    CORO_BEGIN(co);
    while (!p->g->done) {
        printf("%ld ", p->g->value);
        p->sum += p->g->value;
        CORO_YIELD(co);
    }
    printf("\n");
    CORO_RETURN(co, p->sum);
    CORO_END(co);
}

int main(void)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct squares g = { .n = 10 };
    struct printer p = { .g = &g };
    int rc;

    cfg.workers = 0;                    /* single-threaded */
    if ((rc = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_spawn(s, &g.co, squares, NULL);
    coro_spawn(s, &p.co, printer, NULL);
    intptr_t sum = 0;
    coro_join(&p.co, &sum);     /* runs both jobs on this thread */
    printf("sum of the first %d squares: %ld\n", g.n, (long)sum);
    coro_sched_destroy(s);
    return sum == 385 ? 0 : 1;
}
