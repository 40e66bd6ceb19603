/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_cancel of one call queued for the blocking pool unlinks it from
 * the pool's FIFO wherever it sits (lib/io/blocking.c QUEUED): at the
 * head, at the tail, in the middle, next to another cancelled call.  The
 * pool has one thread, held by a plug while the calls queue, so the calls
 * that were not cancelled then run one at a time in the order they were
 * queued: the links left behind are whole, both ways. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "white_box.h"

#define NQ 40

static int plug_in, plug_go;
static int order[NQ], norder;       /* under the pool's one thread */

static intptr_t plug_fn(void *arg)
{
    (void)arg;
    __atomic_store_n(&plug_in, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&plug_go, __ATOMIC_ACQUIRE))
        usleep(200);
    return 0;
}

static intptr_t record_fn(void *arg)
{
    order[norder++] = (int)(intptr_t)arg;
    return (intptr_t)arg;
}

struct call {
    coro_t co;
    int i;
    intptr_t res;
};

static int plug_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(plug_fn, NULL));
    CORO_END(co);
}

static int call_body(coro_t *co)
{
    struct call *c = CORO_SELF(co, struct call);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(record_fn, (void *)(intptr_t)c->i));
    c->res = CORO_RESULT(co);
    CORO_END(co);
}

static bool cancelled_one(int i)
{
    /* head, tail, a run of neighbours, every fifth */
    return i == 0 || i == NQ - 1 || (i >= 10 && i <= 12) || i % 5 == 3;
}

/* with workers: a single-threaded scheduler runs nothing before a join */
static void run(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = workers;
    c.pin = false;
    c.blocking_threads = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    plug_in = plug_go = norder = 0;

    coro_t plug = { 0 };
    cr_assert_eq(coro_spawn(s, &plug, plug_body, NULL), 0);
    int64_t end = coro_now() + 20000000000LL;
    while (!__atomic_load_n(&plug_in, __ATOMIC_ACQUIRE)) {
        cr_assert_lt(coro_now(), end, "the plug never ran");
        usleep(100);
    }
    /* one at a time: each is queued before the next is spawned, so the
     * FIFO holds them in index order */
    struct call *calls = calloc(NQ, sizeof *calls);
    cr_assert(calls);
    for (int i = 0; i < NQ; i++) {
        calls[i].i = i;
        cr_assert_eq(coro_spawn(s, &calls[i].co, call_body, NULL), 0);
        wait_suspended(&calls[i].co);
    }
    /* the tail first, then from the middle out, then the head */
    for (int i = NQ - 1; i >= NQ / 2; i--)
        if (cancelled_one(i))
            cr_assert_eq(coro_cancel(&calls[i].co), 0);
    for (int i = 0; i < NQ / 2; i++)
        if (cancelled_one(i))
            cr_assert_eq(coro_cancel(&calls[i].co), 0);
    for (int i = 0; i < NQ; i++)
        if (cancelled_one(i)) {
            cr_assert_eq(join_r(&calls[i].co), 0);
            cr_assert_eq(calls[i].res, -ECANCELED, "call %d", i);
        } else {
            cr_assert(suspended(&calls[i].co), "call %d was not cancelled", i);
        }
    __atomic_store_n(&plug_go, 1, __ATOMIC_RELEASE);
    cr_assert_eq(join_r(&plug), 0);
    int want = 0;
    for (int i = 0; i < NQ; i++) {
        if (cancelled_one(i))
            continue;
        cr_assert_eq(join_r(&calls[i].co), 0);
        cr_assert_eq(calls[i].res, i);
        cr_assert_lt(want, norder);
        cr_assert_eq(order[want], i, "the %dth call to run was %d, not %d", want, order[want],
                     i);
        want++;
    }
    cr_assert_eq(norder, want, "a cancelled call ran");
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(calls);
}

Test(blocking_queue, cancelled_calls_leave_the_fifo_whole_at_1_worker, .timeout = 20)
{
    run(1);
}

Test(blocking_queue, cancelled_calls_leave_the_fifo_whole_at_2_workers, .timeout = 20)
{
    run(2);
}
