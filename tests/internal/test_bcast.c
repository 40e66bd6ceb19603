/* SPDX-License-Identifier: MIT */
/* coro_bcast_t: every receiver gets every item, lag reports, close,
 * subscribe/unsubscribe, errors, timeouts and cancel - on 0 and 2 workers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <corokit.h>
#include "white_box.h"

static const int nworkers[] = { 0, 2 };
#define NW 2
#define MS (1000000ll)

struct rcv {
    coro_t co;
    coro_bcast_rx_t rx;
    void *item;
    long n, sum, expect_next;
    int64_t timeout;
    intptr_t last;
};

/* receive until the channel is closed; items must come in order 1, 2 ... */
static int rcv_body(coro_t *co)
{
    struct rcv *f = CORO_SELF(co, struct rcv);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_bcast_recv(&f->rx, &f->item, f->timeout ? f->timeout : CORO_FOREVER));
        f->last = CORO_RESULT(co);
        if (CORO_RESULT(co) != 0)
            break;
        if ((intptr_t)f->item != f->expect_next)
            CORO_RETURN(co, -1000 - f->n);
        f->expect_next++;
        f->n++;
    }
    CORO_RETURN(co, f->last == -EPIPE ? 0 : f->last);
    CORO_END(co);
}

struct snd {
    coro_t co;
    coro_bcast_t *bc;
    long i, n;
};

static int snd_body(coro_t *co)
{
    struct snd *f = CORO_SELF(co, struct snd);
    CORO_BEGIN(co);
    for (f->i = 1; f->i <= f->n; f->i++) {
        if (coro_bcast_send(f->bc, (void *)(intptr_t)f->i) < 0)
            CORO_RETURN(co, -1);
        if (f->i % 16 == 0)
            CORO_YIELD(co);
    }
    CORO_RETURN(co, coro_bcast_close(f->bc));
    CORO_END(co);
}

Test(bcast, every_receiver_that_keeps_up_gets_every_item_in_order, .timeout = 60)
{
    enum { R = 8, N = 1000 };
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_bcast_t bc;
        struct rcv *r = calloc(R, sizeof *r);
        struct snd sn = { .bc = &bc, .n = N };
        /* a ring as long as the run: nobody can fall behind */
        cr_assert_eq(coro_bcast_init_alloc(&bc, N, NULL), 0);
        for (int i = 0; i < R; i++) {
            cr_assert_eq(coro_bcast_subscribe(&bc, &r[i].rx), 0);
            r[i].expect_next = 1;
            cr_assert_eq(coro_spawn(s, &r[i].co, rcv_body, NULL), 0);
        }
        cr_assert_eq(coro_spawn(s, &sn.co, snd_body, NULL), 0);
        cr_assert_eq(join_r(&sn.co), 0);
        for (int i = 0; i < R; i++) {
            cr_assert_eq(join_r(&r[i].co), 0, "receiver %d: %ld", i, (long)r[i].co.result);
            cr_assert_eq(r[i].n, N);
            cr_assert_eq(coro_bcast_missed(&r[i].rx), 0);
            cr_assert_eq(coro_bcast_unsubscribe(&r[i].rx), 0);
        }
        cr_assert_eq(coro_bcast_destroy(&bc), 0);
        free(r);
        fin(s);
    }
}

Test(bcast, a_receiver_that_falls_behind_is_told_how_many_it_missed, .timeout = 10)
{
    coro_bcast_t bc;
    void *buf[4], *it;
    coro_bcast_rx_t a, b;

    cr_assert_eq(coro_bcast_init(&bc, buf, 4), 0);
    cr_assert_eq(coro_bcast_send(&bc, (void *)1), 0, "no receiver yet");
    cr_assert_eq(coro_bcast_subscribe(&bc, &a), 0);
    cr_assert_eq(coro_bcast_subscribe(&bc, &b), 0);
    cr_assert_eq(coro_bcast_try_recv(&a, &it), -EAGAIN, "only what is sent after subscribe");
    for (intptr_t i = 10; i < 20; i++)
        cr_assert_eq(coro_bcast_send(&bc, (void *)i), 2);
    /* b keeps up with a ring of 4: it gets the last four after its report */
    cr_assert_eq(coro_bcast_try_recv(&b, &it), -EOVERFLOW);
    cr_assert_eq(coro_bcast_missed(&b), 6);
    for (intptr_t i = 16; i < 20; i++) {
        cr_assert_eq(coro_bcast_try_recv(&b, &it), 0);
        cr_assert_eq((intptr_t)it, i);
    }
    cr_assert_eq(coro_bcast_try_recv(&b, &it), -EAGAIN);
    cr_assert_eq(coro_bcast_recv_blocking(&b, &it, 0), -ETIMEDOUT);
    /* the report comes once; a receiver that then keeps up loses nothing */
    cr_assert_eq(coro_bcast_send(&bc, (void *)20), 2);
    cr_assert_eq(coro_bcast_recv_blocking(&b, &it, CORO_FOREVER), 0);
    cr_assert_eq((intptr_t)it, 20);
    /* a was not read at all: one report, then the oldest kept */
    cr_assert_eq(coro_bcast_recv_blocking(&a, &it, CORO_FOREVER), -EOVERFLOW);
    cr_assert_eq(coro_bcast_missed(&a), 7);
    cr_assert_eq(coro_bcast_recv_blocking(&a, &it, CORO_FOREVER), 0);
    cr_assert_eq((intptr_t)it, 17);
    cr_assert_eq(coro_bcast_close(&bc), 0);
    cr_assert_eq(coro_bcast_close(&bc), 0, "a second close does nothing");
    cr_assert_eq(coro_bcast_send(&bc, NULL), -EPIPE);
    for (intptr_t i = 18; i <= 20; i++) {
        cr_assert_eq(coro_bcast_try_recv(&a, &it), 0, "closed: what is left first");
        cr_assert_eq((intptr_t)it, i);
    }
    cr_assert_eq(coro_bcast_try_recv(&a, &it), -EPIPE);
    cr_assert_eq(coro_bcast_try_recv(&b, &it), -EPIPE);
    cr_assert_eq(coro_bcast_destroy(&bc), -EBUSY, "receivers still subscribed");
    coro_bcast_rx_t c;
    cr_assert_eq(coro_bcast_subscribe(&bc, &c), -EPIPE);
    cr_assert_eq(coro_bcast_unsubscribe(&a), 0);
    cr_assert_eq(coro_bcast_unsubscribe(&b), 0);
    cr_assert_eq(coro_bcast_unsubscribe(&b), -EINVAL, "twice");
    cr_assert_eq(coro_bcast_destroy(&bc), 0);
}

Test(bcast, bad_input_gives_einval, .timeout = 10)
{
    coro_bcast_t bc, bad;
    coro_bcast_rx_t rx, badrx;
    void *buf[2], *it;

    memset(&bad, 0, sizeof bad);
    memset(&badrx, 0, sizeof badrx);
    cr_assert_eq(coro_bcast_init(NULL, buf, 2), -EINVAL);
    cr_assert_eq(coro_bcast_init(&bc, NULL, 2), -EINVAL);
    cr_assert_eq(coro_bcast_init(&bc, buf, 0), -EINVAL);
    cr_assert_eq(coro_bcast_init_alloc(&bc, 0, NULL), -EINVAL);
    cr_assert_eq(coro_bcast_destroy(&bad), -EINVAL);
    cr_assert_eq(coro_bcast_send(&bad, NULL), -EINVAL);
    cr_assert_eq(coro_bcast_close(NULL), -EINVAL);
    cr_assert_eq(coro_bcast_subscribe(&bad, &rx), -EINVAL);
    cr_assert_eq(coro_bcast_try_recv(&badrx, &it), -EINVAL);
    cr_assert_eq(coro_bcast_recv_blocking(&badrx, &it, 0), -EINVAL);
    cr_assert_eq(coro_bcast_missed(&badrx), -EINVAL);
    cr_assert_eq(coro_bcast_unsubscribe(&badrx), -EINVAL);
    cr_assert_eq(coro_bcast_init(&bc, buf, 2), 0);
    cr_assert_eq(coro_bcast_subscribe(&bc, NULL), -EINVAL);
    cr_assert_eq(coro_bcast_subscribe(&bc, &rx), 0);
    cr_assert_eq(coro_bcast_subscribe(&bc, &rx), -EINVAL, "already subscribed");
    cr_assert_eq(coro_bcast_try_recv(&rx, NULL), -EINVAL);
    cr_assert_eq(coro_bcast_recv_blocking(&rx, &it, -3), -EINVAL);
    cr_assert_eq(coro_bcast_recv_blocking(&rx, &it, 5 * MS), -ETIMEDOUT);
    cr_assert_eq(coro_bcast_unsubscribe(&rx), 0);
    cr_assert_eq(coro_bcast_destroy(&bc), 0);
}

/* a waiting receiver: cancelled, timed out, woken by close; unsubscribe
 * while it waits is refused */
Test(bcast, a_waiting_receiver_ends_by_cancel_timeout_or_close, .timeout = 60)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_bcast_t bc;
        struct rcv c = { 0 }, t = { .timeout = 5 * MS }, e = { 0 };

        cr_assert_eq(coro_bcast_init_alloc(&bc, 8, NULL), 0);
        cr_assert_eq(coro_bcast_subscribe(&bc, &c.rx), 0);
        cr_assert_eq(coro_bcast_subscribe(&bc, &t.rx), 0);
        cr_assert_eq(coro_bcast_subscribe(&bc, &e.rx), 0);
        c.expect_next = t.expect_next = e.expect_next = 1;
        cr_assert_eq(coro_spawn(s, &t.co, rcv_body, NULL), 0);
        cr_assert_eq(join_r(&t.co), -ETIMEDOUT);
        cr_assert_eq(coro_spawn(s, &c.co, rcv_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &e.co, rcv_body, NULL), 0);
        if (nworkers[k] == 0)
            coro_sched_run(s);
        cr_assert(parked_on(&c.co, &bc));
        cr_assert(parked_on(&e.co, &bc));
        cr_assert_eq(coro_bcast_unsubscribe(&c.rx), -EBUSY);
        cr_assert_eq(coro_cancel(&c.co), 0);
        cr_assert_eq(join_r(&c.co), -ECANCELED);
        cr_assert_eq(coro_bcast_unsubscribe(&c.rx), 0);
        cr_assert_eq(coro_bcast_send(&bc, (void *)1), 2);
        cr_assert_eq(coro_bcast_close(&bc), 0);
        cr_assert_eq(join_r(&e.co), 0, "one item, then EPIPE");
        cr_assert_eq(e.n, 1);
        cr_assert_eq(coro_bcast_unsubscribe(&e.rx), 0);
        cr_assert_eq(coro_bcast_unsubscribe(&t.rx), 0);
        cr_assert_eq(coro_bcast_destroy(&bc), 0);
        fin(s);
    }
}

struct bjob {
    coro_t co;
    coro_bcast_rx_t *rx;
    intptr_t r;
};

static int blocking_in_job(coro_t *co)
{
    struct bjob *f = CORO_SELF(co, struct bjob);
    void *it;
    CORO_BEGIN(co);
    f->r = coro_bcast_recv_blocking(f->rx, &it, 0);
    CORO_END(co);
}

static void *thread_rcv(void *arg)
{
    coro_bcast_rx_t *rx = arg;
    void *it = NULL;
    int rc = coro_bcast_recv_blocking(rx, &it, CORO_FOREVER);
    return rc == 0 ? it : (void *)(intptr_t)rc;
}

Test(bcast, a_plain_thread_receives_what_a_job_sends_and_a_job_cannot_block, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_bcast_t bc;
    coro_bcast_rx_t rx;
    struct snd sn = { .bc = &bc, .n = 1 };
    struct bjob bj = { .rx = &rx };
    pthread_t th;
    void *got;

    cr_assert_eq(coro_bcast_init_alloc(&bc, 2, NULL), 0);
    cr_assert_eq(coro_bcast_subscribe(&bc, &rx), 0);
    cr_assert_eq(coro_spawn(s, &bj.co, blocking_in_job, NULL), 0);
    cr_assert_eq(join_r(&bj.co), 0);
    cr_assert_eq(bj.r, -EDEADLK);
    cr_assert_eq(pthread_create(&th, NULL, thread_rcv, &rx), 0);
    cr_assert_eq(coro_spawn(s, &sn.co, snd_body, NULL), 0);
    cr_assert_eq(join_r(&sn.co), 0);
    pthread_join(th, &got);
    cr_assert_eq((intptr_t)got, 1);
    cr_assert_eq(coro_bcast_unsubscribe(&rx), 0);
    cr_assert_eq(coro_bcast_destroy(&bc), 0);
    fin(s);
}
