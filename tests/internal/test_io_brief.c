/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* BRIEF LOOKS (lib/io/epoll.c, coro__io_main): a worker whose jobs yield
 * at intervals longer than the I/O thread's standby (CORO__IO_STANDBY_NS)
 * keeps the poll token for its own busy looks.  The I/O thread, finding no
 * look in its last standby period, takes the token for one look without
 * blocking and lets go; blocked in epoll_wait instead, it kept the token
 * until an event or its safety net (CORO__IO_DEEP_STANDBY_NS), and every
 * busy look meanwhile found the token its: a wake-up then waited for the
 * I/O thread to get a CPU the busy workers held.
 *
 * One worker runs a job that works HOG_NS between yields, beside a job that
 * waits on a socketpair that stays silent, so that each yield looks at the
 * epoll set (sched/worker.c, BUSY LOOKS).  The looks that took the token
 * (io->look_gen) are counted against the yields: most must. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/io_impl.h"     /* white box: look_gen, the busy looks that took the token */
#include "sched/sched.h"    /* coro__sched_io */
#include "white_box.h"

#define MS 1000000LL
#define HOG_NS (3 * MS)         /* a step: three standby periods */
#define STEPS 60

struct hog {
    coro_t co;
    atomic_long steps;
};

static int hog_fn(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    while (atomic_load(&h->steps) < STEPS) {
        {
            int64_t t0 = coro_now();
            while (coro_now() - t0 < HOG_NS)
                ;
        }
        atomic_fetch_add(&h->steps, 1);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

struct reader {
    coro_t co;
    int fd;
    char b;
};

static int reader_fn(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static uint32_t looks(coro_sched_t *s)
{
    /* relaxed: a count, read after the fact */
    return __atomic_load_n(&coro__sched_io(s)->look_gen, __ATOMIC_RELAXED);
}

Test(io_brief, a_worker_that_yields_less_often_than_the_io_thread_looks_keeps_its_looks,
     .timeout = 20)
{
    coro_sched_t *s = mk(1);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    struct reader r = { .fd = sv[0] };
    struct hog h = { .steps = 0 };
    cr_assert_eq(coro_spawn(s, &r.co, reader_fn, NULL), 0);
    wait_suspended(&r.co);  /* its wait makes the yields look */
    uint32_t l0 = looks(s);
    cr_assert_eq(coro_spawn(s, &h.co, hog_fn, NULL), 0);
    cr_assert_eq(join_r(&h.co), 0);
    uint32_t took = looks(s) - l0;
    cr_assert_eq(write(sv[1], "x", 1), 1);
    cr_assert_eq(join_r(&r.co), 1);
    /* expected: nearly every yield (the I/O thread holds the token only
     * for a look); blocked in epoll, it left the worker well under half */
    cr_log_info("%u of %d yields took the token", took, STEPS);
    cr_assert_geq(took, STEPS / 2, "%u of %d yields took the token", took, STEPS);
    close(sv[0]);
    close(sv[1]);
    fin(s);
}
