/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A stale timer handle (lib/io/timers.c, STALE HANDLES): a worker heap's
 * fire hands an fd wait's timer back to its caller (struct
 * coro__wt_batch) and does not touch the wait, whose slot keeps naming
 * the handle.  Another timer may take that handle before the wait ends
 * by readiness; the readiness path must then leave the other timer in
 * the heap, and the late fire of the record must wake nobody.  Driven
 * step by step from the test thread: coro__wt_expire pops the timer
 * without waking, so no timing is involved. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io_impl.h"     /* white box: coro__io_timer_fire */
#include "rt/rt.h"
#include "white_box.h"

#define MS 1000000LL

struct reader {
    coro_t co;
    int fd;
    char b;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, 10000 * MS));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static int sleeper_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(10000 * MS));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static void wait_timers(coro_sched_t *s, uint32_t n)
{
    /* the worker arms a wait after the step that suspended it */
    for (int64_t end = now_ns() + 5000 * MS; coro__wt_count(s) != n && now_ns() < end;)
        sleep_ms(1);
    cr_assert_eq(coro__wt_count(s), n, "timers in the workers' heaps");
}

Test(wtimer_stale, an_fd_wait_ended_after_its_timer_left_leaves_the_timer_that_took_its_handle,
     .timeout = 30)
{
    coro_sched_t *s = mk(1);
    int fds[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    struct reader r = { .fd = fds[0] };
    cr_assert_eq(coro_spawn(s, &r.co, reader_body, NULL), 0);
    wait_suspended(&r.co);
    wait_timers(s, 1);

    /* the reader's timer leaves worker 0's heap, not woken yet: its slot
     * still names the handle */
    struct coro__wt_batch b = { .n = 0 };
    int fired = 0;
    coro__wt_expire(s, 1, INT64_MAX - 1, false, &fired, &b, NULL);
    cr_assert_eq(b.n, 1, "the fd wait's timer is handed back");
    cr_assert_eq(b.t[0].p, &r.co);
    cr_assert_eq(fired, 0, "nothing woken in the wait layer");
    cr_assert_eq(coro__wt_count(s), 0);

    /* a sleep on the same worker takes the handle the pop gave back */
    coro_t sl = { 0 };
    cr_assert_eq(coro_spawn(s, &sl, sleeper_body, NULL), 0);
    wait_suspended(&sl);
    wait_timers(s, 1);
    cr_assert_eq(coro__wt_handle((uint32_t)sl.top->aw.arg[CORO__SLEEP_SLOT].i), b.t[0].h,
                 "the sleep's timer took the fd timer's handle");

    /* readiness ends the fd wait: its stale handle must not remove the sleep's timer */
    cr_assert_eq(write(fds[1], "x", 1), 1);
    cr_assert_eq(join_r(&r.co), 1);
    cr_assert_eq(r.b, 'x');
    cr_assert_eq(coro__wt_count(s), 1, "the sleep's timer went with the read's wait");

    /* the late fire of the popped record finds the wait gone: no wake-up */
    coro__io_timer_fire(coro__sched_io(s), &b.t[0], 0, NULL);
    cr_assert_eq(coro__wt_count(s), 1);
    cr_assert_eq(__atomic_load_n(&sl.state, __ATOMIC_ACQUIRE) & CORO__S_MASK, CORO__S_SUSPENDED,
                 "the sleep still waits");

    /* and the sleep's timer is the sleep's: a cancel ends it there */
    cr_assert_eq(coro_cancel(&sl), 0);
    cr_assert_eq(join_r(&sl), -ECANCELED);
    cr_assert_eq(coro__wt_count(s), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    close(fds[0]);
    close(fds[1]);
}
