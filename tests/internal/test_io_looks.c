/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A BUSY LOOK ALWAYS LOOKS (lib/io/epoll.c, coro__io_poll_busy): a worker
 * whose jobs yield reaches the epoll set at every look, whoever holds the
 * poll token, so readiness that comes during a step wakes its job at the
 * end of that step.  The I/O thread takes the token when no worker looked
 * in its last standby period (CORO__IO_STANDBY_NS), so with steps longer
 * than that it often holds it at a worker's yield: a look that then
 * looked no further left the events to a thread that might not run - in
 * epoll_wait, or waiting for a CPU that the busy workers hold - and the
 * wake-up waited for it, then for the next yield.
 *
 * One worker runs a job that works a few milliseconds between yields,
 * beside a job that waits on a socketpair.  The bounds count looks and
 * the busy job's steps, not milliseconds, so a loaded machine (ASan, one
 * CPU for every thread) moves them little. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io_impl.h"     /* white box: look_gen, poll_token, the hold hook */
#include "sched/sched.h"    /* coro__sched_io */
#include "white_box.h"

#define MS 1000000LL
#define LOOK_STEPS 40           /* the busy job's steps in the first test */
#define WRITES 8                /* bytes written one at a time in the second */
#define MAX_STEPS_LATE 3        /* steps a wake-up may wait (expected: 1) */

struct hog {
    coro_t co;
    int64_t step_ns;
    long max_steps;             /* 0: until stop */
    atomic_int stop;
    atomic_long steps;          /* steps done */
};

static int hog_fn(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    while (!atomic_load(&h->stop) && (!h->max_steps || atomic_load(&h->steps) < h->max_steps)) {
        {
            int64_t t0 = coro_now();
            while (coro_now() - t0 < h->step_ns)
                ;
        }
        atomic_fetch_add(&h->steps, 1);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct reader {
    coro_t co;
    int fd, n;
    char b;
    struct hog *hog;
    atomic_int got;             /* bytes read */
    atomic_long at_step;        /* the hog's steps when the last one was read */
};

static int reader_fn(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    while (atomic_load(&r->got) < r->n) {
        CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, CORO_FOREVER));
        if (CORO_RESULT(co) != 1)
            CORO_RETURN(co, -1);
        atomic_store(&r->at_step, r->hog ? atomic_load(&r->hog->steps) : 0);
        atomic_fetch_add(&r->got, 1);
    }
    CORO_RETURN(co, r->n);
    CORO_END(co);
}

static uint32_t looks(coro_sched_t *s)
{
    /* relaxed: a count, read after the fact */
    return __atomic_load_n(&coro__sched_io(s)->look_gen, __ATOMIC_RELAXED);
}

/* every yield of a job that works three standby periods between yields
 * looks at the epoll set; when the I/O thread took the token between
 * them, such looks found it taken and returned: 17-25 of 60 looked */
Test(io_looks, a_worker_yielding_less_often_than_the_io_thread_looks_looks_at_every_yield,
     .timeout = 20)
{
    coro_sched_t *s = mk(1);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    static struct reader r;
    static struct hog h;
    r = (struct reader){ .fd = sv[0], .n = 1 };
    h = (struct hog){ .step_ns = 3 * MS, .max_steps = LOOK_STEPS };
    cr_assert_eq(coro_spawn(s, &r.co, reader_fn, NULL), 0);
    wait_suspended(&r.co);  /* its wait makes the yields look */
    uint32_t l0 = looks(s);
    cr_assert_eq(coro_spawn(s, &h.co, hog_fn, NULL), 0);
    cr_assert_eq(join_r(&h.co), 0);
    uint32_t looked = looks(s) - l0;
    cr_assert_eq(write(sv[1], "x", 1), 1);
    cr_assert_eq(join_r(&r.co), 1);
    cr_log_info("%u looks at %d yields", looked, LOOK_STEPS);
    /* one per yield: the last yield's look may come after the count */
    cr_assert_geq(looked, LOOK_STEPS - 1, "%u of %d yields looked at the epoll set", looked,
                  LOOK_STEPS);
    close(sv[0]);
    close(sv[1]);
    fin(s);
}

/* the I/O thread holds the token and does not run (the test hook: as when
 * it waits for a CPU that the busy workers hold): readiness still wakes
 * the reader at the end of the step it came in, through the worker's own
 * look.  Left to the I/O thread, every wake-up waited for its hold to end
 * (400 ms: some 200 steps) */
Test(io_looks, readiness_wakes_its_job_after_the_current_step_while_the_io_thread_holds_the_token,
     .timeout = 20)
{
    coro_sched_t *s = mk(1);
    struct coro__io *io = coro__sched_io(s);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    static struct reader r;
    static struct hog h;
    h = (struct hog){ .step_ns = 2 * MS };
    r = (struct reader){ .fd = sv[0], .n = WRITES, .hog = &h };
    coro__io_thread_hold_ns = 400 * MS;
    cr_assert_eq(coro_spawn(s, &r.co, reader_fn, NULL), 0);
    wait_suspended(&r.co);
    cr_assert_eq(coro_spawn(s, &h.co, hog_fn, NULL), 0);
    /* the I/O thread takes the token when a standby period passes with no
     * look: with steps of two periods, soon (bounded: 10 s) */
    int64_t end = coro_now() + 10000 * MS;
    /* relaxed: a hint; the writes below are what is checked */
    while (__atomic_load_n(&io->poll_token, __ATOMIC_RELAXED) != TOKEN_IOT) {
        cr_assert_lt(coro_now(), end, "the I/O thread never took the token");
        usleep(100);
    }
    int held = 0;
    long worst = 0;
    for (int i = 0; i < WRITES; i++) {
        held += __atomic_load_n(&io->poll_token, __ATOMIC_RELAXED) == TOKEN_IOT;
        long s0 = atomic_load(&h.steps);
        cr_assert_eq(write(sv[1], "x", 1), 1);
        end = coro_now() + 10000 * MS;
        while (atomic_load(&r.got) <= i) {
            cr_assert_lt(coro_now(), end, "byte %d was never read", i);
            usleep(100);
        }
        long late = atomic_load(&r.at_step) - s0;
        worst = late > worst ? late : worst;
    }
    atomic_store(&h.stop, 1);
    cr_assert_eq(join_r(&h.co), 0);
    cr_assert_eq(join_r(&r.co), WRITES);
    coro__io_thread_hold_ns = 0;
    cr_log_info("worst wake-up: %ld steps; the I/O thread held the token at %d of %d writes",
                worst, held, WRITES);
    cr_assert_geq(held, 1, "the I/O thread never held the token at a write");
    cr_assert_leq(worst, MAX_STEPS_LATE, "a wake-up waited %ld of the busy job's steps", worst);
    close(sv[0]);
    close(sv[1]);
    fin(s);
}
