/* SPDX-License-Identifier: MIT */
/* samples/fanout.c - fan work out to many jobs, wait for all with a
 * coro_waitgroup_t.
 *
 * A coordinator job spawns WORKERS jobs, each sums a slice of an array;
 * it awaits the wait group (suspended: its worker runs the others), then
 * adds the partial sums.  The main thread waits on the same wait group
 * with the blocking call, then joins the coordinator.  Exits 0 when the
 * total is right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <corokit.h>

#define WORKERS 64
#define LEN 1000000

static int data[LEN];

/* [fanout-worker] */
struct part {
    coro_t co;
    coro_waitgroup_t *wg;
    int from, to;
    long long sum;
};

static int part_body(coro_t *co)
{
    struct part *p = CORO_SELF(co, struct part);
    CORO_BEGIN(co);
    for (int i = p->from; i < p->to; i++)
        p->sum += data[i];
    coro_waitgroup_done(p->wg);         /* never blocks */
    CORO_END(co);
}
/* [fanout-worker] */

/* [fanout-coordinator] */
struct coord {
    coro_t co;
    coro_sched_t *s;
    coro_waitgroup_t wg;
    struct part parts[WORKERS];
    long long total;
};

static int coord_body(coro_t *co)
{
    struct coord *c = CORO_SELF(co, struct coord);
    CORO_BEGIN(co);
    coro_waitgroup_add(&c->wg, WORKERS);        /* before the first spawn */
    for (int k = 0; k < WORKERS; k++) {
        c->parts[k].wg = &c->wg;
        c->parts[k].from = (int)((long)LEN * k / WORKERS);
        c->parts[k].to = (int)((long)LEN * (k + 1) / WORKERS);
        int rc = coro_spawn(c->s, &c->parts[k].co, part_body, NULL);
        if (rc < 0)
            CORO_RETURN(co, rc);
    }
    CORO_AWAIT(co, coro_waitgroup_wait(&c->wg, CORO_FOREVER));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, CORO_RESULT(co));
    for (int k = 0; k < WORKERS; k++)
        c->total += c->parts[k].sum;
    CORO_END(co);
}
/* [fanout-coordinator] */

int main(void)
{
    static struct coord c;      /* large frame: static storage */
    int rc;

    for (int i = 0; i < LEN; i++)
        data[i] = i % 1000;
    if ((rc = coro_sched_create(&c.s, NULL)) < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_waitgroup_init(&c.wg);
    if ((rc = coro_spawn(c.s, &c.co, coord_body, NULL)) < 0)
        return 1;
    /* a plain thread may wait on the same wait group (it may find the
     * count still 0 if the coordinator has not added yet: join decides) */
    coro_waitgroup_wait_blocking(&c.wg, CORO_FOREVER);
    intptr_t r = 0;
    if ((rc = coro_join(&c.co, &r)) != 0 || (rc = (int)r) != 0) {
        fprintf(stderr, "coordinator: %s\n", coro_strerror(rc));
        return 1;
    }
    long long want = 0;
    for (int i = 0; i < LEN; i++)
        want += data[i];
    printf("fanout: %d jobs summed %lld (expected %lld)\n", WORKERS, c.total, want);
    coro_waitgroup_destroy(&c.wg);
    coro_sched_destroy(c.s);
    return c.total == want ? 0 : 1;
}
