/* SPDX-License-Identifier: MIT */
/* hello: a generator.  squares hands the squares 1, 4, 9 ... 100 to
 * whoever pulls them, one value per pull; a job pulls and prints them, and
 * then plain code pulls a second one the same way, with no scheduler.
 *
 *   hello [--workers N] [--seed S]
 *
 * By default the scheduler is single-threaded; --workers 2 runs the job on
 * two workers, --seed S picks ready jobs in a seeded order (docs/testing.md):
 * the output is the same for every N and S. */
#include <corokit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* [frame] locals that survive a suspension live in the frame */
struct squares {
    coro_t co;          /* the header, named co */
    int i, n;
};
/* [frame] */

/* [body] */
static int squares(coro_t *co)
{
    struct squares *g = CORO_SELF(co, struct squares);

    CORO_BEGIN(co);
    for (g->i = 1; g->i <= g->n; g->i++)
        CORO_YIELD_VALUE(co, g->i * g->i);  /* hand one value over, wait for the next pull */
    CORO_END(co);                           /* the end: the next pull gives 0 */
}
/* [body] */

/* [job] a job pulls the values with coro_gen_await */
struct printer {
    coro_t co;
    struct squares sq;  /* the generator's frame, inside the job's */
    intptr_t value;
    long sum;
};

static int printer(coro_t *co)
{
    struct printer *p = CORO_SELF(co, struct printer);

    CORO_BEGIN(co);
    p->sq.n = 10;
    coro_gen_init(&p->sq.co, squares);
    for (;;) {
        CORO_AWAIT(co, coro_gen_await(&p->sq.co, &p->value));
        if (CORO_RESULT(co) != 1)           /* 0: no more values (< 0: an error) */
            break;
        printf("%ld ", (long)p->value);
        p->sum += p->value;
    }
    printf("\n");
    CORO_RETURN(co, p->sum);
    CORO_END(co);
}
/* [job] */

int main(int argc, char **argv)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct printer p = { 0 };
    intptr_t sum = 0;
    int rc;

    cfg.workers = 0;                        /* single-threaded by default */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--workers") == 0)
            cfg.workers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            cfg.seed = strtoull(argv[i + 1], NULL, 10);
    }
    if ((rc = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    rc = coro_block_on(s, &p.co, printer, NULL, &sum);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    if (rc < 0) {
        fprintf(stderr, "coro_block_on: %s\n", coro_strerror(rc));
        return 1;
    }
    printf("sum of the first %d squares: %ld\n", p.sq.n, (long)sum);

    /* [plain] the same generator pulled from plain code: no scheduler */
    struct squares sq = { .n = 10 };
    intptr_t v;
    long plain = 0;
    coro_gen_init(&sq.co, squares);
    while (coro_gen_next(&sq.co, &v) == 1)
        plain += v;
    printf("pulled from plain code: %ld\n", plain);
    /* [plain] */
    return sum == 385 && plain == 385 ? 0 : 1;
}
