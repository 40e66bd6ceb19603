/* SPDX-License-Identifier: MIT */
/* CORO_CHAN_TYPED: typed wrappers over coro_chan_t - values boxed by their
 * bytes (an fd of 0 is an item, not NULL), in jobs and plain threads. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"

CORO_CHAN_TYPED(fdchan, int);

struct point { int16_t x, y; };
CORO_CHAN_TYPED(ptchan, struct point);
CORO_CHAN_TYPED(strchan, const char *);

struct fdrecv {
    coro_t co;
    fdchan_t *ch;
    fdchan_slot_t got;
    long sum, n;
};

static int fdrecv_body(coro_t *co)
{
    struct fdrecv *f = CORO_SELF(co, struct fdrecv);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, fdchan_recv(f->ch, &f->got, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            break;
        f->sum += fdchan_value(&f->got);
        f->n++;
    }
    CORO_RETURN(co, CORO_RESULT(co) == -EPIPE ? 0 : CORO_RESULT(co));
    CORO_END(co);
}

struct fdsend {
    coro_t co;
    fdchan_t *ch;
    int v;
};

static int fdsend_body(coro_t *co)
{
    struct fdsend *f = CORO_SELF(co, struct fdsend);
    CORO_BEGIN(co);
    for (f->v = -3; f->v <= 100; f->v++) {
        CORO_AWAIT(co, fdchan_send(f->ch, f->v, CORO_FOREVER));
        if (CORO_RESULT(co) != 0)
            CORO_RETURN(co, CORO_RESULT(co));
    }
    CORO_RETURN(co, fdchan_close(f->ch));
    CORO_END(co);
}

Test(sync_chan_typed, ints_travel_by_value_and_zero_is_an_item, .timeout = 30)
{
    for (int w = 0; w <= 2; w += 2) {
        coro_sched_t *s = mk(w);
        fdchan_t ch;
        struct fdrecv r = { .ch = &ch };
        struct fdsend t = { .ch = &ch };
        cr_assert_eq(fdchan_init_alloc(&ch, 4, NULL), 0);
        cr_assert_eq(coro_spawn(s, &r.co, fdrecv_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &t.co, fdsend_body, NULL), 0);
        cr_assert_eq(join_r(&t.co), 0);
        cr_assert_eq(join_r(&r.co), 0);
        cr_assert_eq(r.n, 104);
        cr_assert_eq(r.sum, 5050 - 6);
        cr_assert_eq(fdchan_destroy(&ch), 0);
        fin(s);
    }
}

Test(sync_chan_typed, small_structs_and_pointers_round_trip_through_the_try_forms, .timeout = 10)
{
    ptchan_t pc;
    strchan_t sc;
    struct point p = { 0 };
    const char *str = NULL;
    int fd = -1;
    fdchan_t fc;

    cr_assert_eq(ptchan_init_alloc(&pc, 2, NULL), 0);
    cr_assert_eq(ptchan_try_send(&pc, (struct point){ -7, 9 }), 0);
    cr_assert_eq(ptchan_try_recv(&pc, &p), 0);
    cr_assert(p.x == -7 && p.y == 9);
    cr_assert_eq(ptchan_try_recv(&pc, &p), -EAGAIN);
    cr_assert_eq(ptchan_destroy(&pc), 0);
    cr_assert_eq(strchan_init_alloc(&sc, 1, NULL), 0);
    cr_assert_eq(strchan_try_send(&sc, "hi"), 0);
    cr_assert_eq(strchan_try_send(&sc, "full"), -EAGAIN);
    cr_assert_eq(coro_chan_len(strchan_raw(&sc)), 1);
    cr_assert_eq(strchan_recv_blocking(&sc, &str, 0), 0);
    cr_assert_str_eq(str, "hi");
    cr_assert_eq(strchan_destroy(&sc), 0);
    cr_assert_eq(fdchan_init_alloc(&fc, 0, NULL), -EINVAL);
    cr_assert_eq(fdchan_init_alloc(&fc, 1, NULL), 0);
    cr_assert_eq(fdchan_try_send(&fc, 0), 0);
    cr_assert_eq(fdchan_try_recv(&fc, &fd), 0);
    cr_assert_eq(fd, 0, "fd 0 is an item like any other");
    cr_assert_eq(fdchan_recv_blocking(&fc, &fd, 1000000), -ETIMEDOUT);
    cr_assert_eq(fdchan_send_blocking(&fc, 7, 0), 0);
    cr_assert_eq(fdchan_send_blocking(&fc, 8, 0), -ETIMEDOUT);
    cr_assert_eq(fdchan_destroy(&fc), 0);
}
