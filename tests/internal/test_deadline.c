/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The deadline of a relative timeout (base/base.h, coro__deadline_after):
 * one helper for every timeout of lib/.  Before it, the overflow guard was
 * written five times with two answers for a timeout too far to represent:
 * "none" (-1) in base/ and INT64_MAX in rt/join.c, rt/runtime.c,
 * wait/done.c and io/ops.c's sleep; the answer is "none". */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdint.h>

#include "base/base.h"

/* the two answers lib/ gave, side by side, to show where they parted */
static int64_t old_base_answer(int64_t now, int64_t t)
{
    return t < 0 ? -1 : t > INT64_MAX - now ? -1 : now + t;
}

static int64_t old_rt_answer(int64_t now, int64_t t)
{
    return t < 0 ? -1 : t > INT64_MAX - now ? INT64_MAX : now + t;
}

Test(deadline, the_two_old_guards_agreed_below_the_edge_and_differed_past_it, .timeout = 5)
{
    const int64_t now = 1000;

    for (int64_t t = INT64_MAX - now - 3; t <= INT64_MAX - now; t++)
        cr_expect_eq(old_base_answer(now, t), old_rt_answer(now, t));
    cr_expect_eq(old_base_answer(now, INT64_MAX - now + 1), -1);
    cr_expect_eq(old_rt_answer(now, INT64_MAX - now + 1), INT64_MAX);
}

Test(deadline, a_timeout_too_far_to_represent_has_no_deadline, .timeout = 5)
{
    const int64_t now = 1000;

    cr_expect_eq(coro__deadline_after(now, 0), now);
    cr_expect_eq(coro__deadline_after(now, 5), now + 5);
    cr_expect_eq(coro__deadline_after(now, INT64_MAX - now), INT64_MAX, "the last one that fits");
    cr_expect_eq(coro__deadline_after(now, INT64_MAX - now + 1), -1);
    cr_expect_eq(coro__deadline_after(now, INT64_MAX), -1);
    cr_expect_eq(coro__deadline_after(now, CORO_FOREVER), -1);
    cr_expect_eq(coro__deadline_after(0, INT64_MAX), INT64_MAX);
}

Test(deadline, coro_deadline_reads_the_threads_clock_and_keeps_the_edge, .timeout = 5)
{
    int64_t vclock = INT64_MAX - 10;

    coro__tls_vclock = &vclock;
    cr_expect_eq(coro__deadline(10), INT64_MAX);
    cr_expect_eq(coro__deadline(11), -1);
    cr_expect_eq(coro__deadline(CORO_FOREVER), -1);
    vclock = 0;
    cr_expect_eq(coro__deadline(7), 7);
    coro__tls_vclock = NULL;
    int64_t before = coro__now();
    int64_t d = coro__deadline(1000);
    cr_expect(d >= before + 1000 && d <= coro__now() + 1000);
    cr_expect_eq(coro__deadline(INT64_MAX), -1);
}
