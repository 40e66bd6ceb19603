/* SPDX-License-Identifier: MIT */
/* tools/bench/sync_bench.c - corokit sync figures.
 *
 *   ping_pong  design.md section 7: 1,000 pairs; A spawns B, A sends B a
 *              message over a channel, B replies over another (2,001
 *              spawns with the root, 2,000 messages); 2 workers.
 *   chan N     items/s through one channel (capacity 1024) with N producer
 *              jobs and N consumer jobs, 1,000,000 items; default workers.
 *
 * Prints the median of 5 runs of each (after one warm-up run).
 * Build: make; cc -O2 -Iinclude tools/bench/sync_bench.c build/libcorokit.a -lck -pthread
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <corokit.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median5(double *v)
{
    qsort(v, 5, sizeof *v, cmp_d);
    return v[2];
}

/* ---- ping_pong ------------------------------------------------------------------ */

struct pong {
    coro_t co;
    coro_chan_t *in, *out;
    void *msg;
};

static int pong_body(coro_t *co)
{
    struct pong *b = CORO_SELF(co, struct pong);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_chan_recv(b->in, &b->msg, CORO_FOREVER));
    CORO_AWAIT(co, coro_chan_send(b->out, b->msg, CORO_FOREVER));
    CORO_END(co);
}

struct ping {
    coro_t co;
    coro_sched_t *s;
    coro_waitgroup_t *wg;
    coro_chan_t ab, ba;
    void *bab[1], *bba[1];
    struct pong b;
    void *reply;
};

static int ping_body(coro_t *co)
{
    struct ping *a = CORO_SELF(co, struct ping);
    CORO_BEGIN(co);
    coro_chan_init(&a->ab, a->bab, 1);
    coro_chan_init(&a->ba, a->bba, 1);
    memset(&a->b, 0, sizeof a->b);
    a->b.in = &a->ab;
    a->b.out = &a->ba;
    coro_spawn(a->s, &a->b.co, pong_body, NULL);
    CORO_AWAIT(co, coro_chan_send(&a->ab, (void *)1, CORO_FOREVER));
    CORO_AWAIT(co, coro_chan_recv(&a->ba, &a->reply, CORO_FOREVER));
    coro_waitgroup_done(a->wg);
    CORO_END(co);
}

struct root {
    coro_t co;
    coro_sched_t *s;
    struct ping *pings;
    coro_waitgroup_t wg;
    int n, i;
};

static int root_body(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    CORO_BEGIN(co);
    coro_waitgroup_add(&r->wg, r->n);
    for (r->i = 0; r->i < r->n; r->i++) {
        r->pings[r->i].s = r->s;
        r->pings[r->i].wg = &r->wg;
        coro_spawn(r->s, &r->pings[r->i].co, ping_body, NULL);
    }
    CORO_AWAIT(co, coro_waitgroup_wait(&r->wg, CORO_FOREVER));
    CORO_END(co);
}

static double ping_pong_once(coro_sched_t *s)
{
    enum { PAIRS = 1000 };
    static struct ping pings[PAIRS];
    struct root r = { .s = s, .pings = pings, .n = PAIRS };

    memset(pings, 0, sizeof pings);
    coro_waitgroup_init(&r.wg);
    double t0 = now_s();
    coro_block_on(s, &r.co, root_body, NULL, &(intptr_t){0});
    /* the pongs may still be finishing: wait for them too */
    for (int i = 0; i < PAIRS; i++)
        coro_join(&pings[i].b.co, &(intptr_t){0});
    return now_s() - t0;
}

/* ---- channel throughput ----------------------------------------------------------- */

struct pc {
    coro_t co;
    coro_chan_t *ch;
    long n, i;
    void *item;
};

static int producer(coro_t *co)
{
    struct pc *f = CORO_SELF(co, struct pc);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++)
        CORO_AWAIT(co, coro_chan_send(f->ch, (void *)(intptr_t)f->i, CORO_FOREVER));
    CORO_END(co);
}

static int consumer(coro_t *co)
{
    struct pc *f = CORO_SELF(co, struct pc);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(f->ch, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            break;
        f->n++;
    }
    CORO_END(co);
}

static double chan_once(coro_sched_t *s, int pairs, long items)
{
    coro_chan_t ch;
    struct pc p[8], c[8];

    memset(p, 0, sizeof p);
    memset(c, 0, sizeof c);
    coro_chan_init_alloc(&ch, 1024, NULL);
    double t0 = now_s();
    for (int i = 0; i < pairs; i++) {
        c[i].ch = &ch;
        coro_spawn(s, &c[i].co, consumer, NULL);
        p[i].ch = &ch;
        p[i].n = items / pairs;
        coro_spawn(s, &p[i].co, producer, NULL);
    }
    for (int i = 0; i < pairs; i++)
        coro_join(&p[i].co, &(intptr_t){0});
    coro_chan_close(&ch);
    long got = 0;
    for (int i = 0; i < pairs; i++) {
        coro_join(&c[i].co, &(intptr_t){0});
        got += c[i].n;
    }
    double t = now_s() - t0;
    coro_chan_destroy(&ch);
    if (got != items / pairs * pairs) {
        fprintf(stderr, "chan: lost items (%ld)\n", got);
        exit(1);
    }
    return t;
}

int main(void)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    double v[5];
    const long items = 1000000;

    c.workers = 2;
    if (coro_sched_create(&s, &c) < 0)
        return 1;
    ping_pong_once(s);
    for (int k = 0; k < 5; k++)
        v[k] = ping_pong_once(s);
    printf("ping_pong (1000 pairs, 2 workers): median %.3f ms  (%.0f ns per pair)\n",
           median5(v) * 1e3, median5(v) * 1e9 / 1000);
    coro_sched_destroy(s);

    if (coro_sched_create(&s, NULL) < 0)
        return 1;
    int nw = coro_sched_workers(s);
    for (int pairs = 1; pairs <= 4; pairs *= 4) {
        chan_once(s, pairs, items / 10);
        for (int k = 0; k < 5; k++)
            v[k] = chan_once(s, pairs, items);
        printf("chan throughput (%d producer/consumer pair%s, %d workers, cap 1024): "
               "median %.2f M items/s\n", pairs, pairs > 1 ? "s" : "", nw,
               items / median5(v) / 1e6);
    }
    coro_sched_destroy(s);
    return 0;
}
