/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A job woken by readiness makes its own system call, on its worker, when
 * it runs (lib/io/epoll.c, WHO CALLS): the thread that handled the event
 * (the I/O thread here) only wakes it.  Seen from outside: a reader whose
 * pipe became readable while its only worker was held in a long step
 * reads what is in the pipe when it runs, not what was there when the
 * event was handled. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "rt/rt.h"        /* white box: the reader's state word */
#include "white_box.h"

struct holder {
    coro_t co;
    atomic_int go, running;
};

/* one step that lasts until the test lets it go: its worker looks at
 * nothing meanwhile */
static int hold_fn(coro_t *co)
{
    struct holder *h = CORO_SELF(co, struct holder);
    CORO_BEGIN(co);
    atomic_store(&h->running, 1);
    {
        int64_t end = coro_now() + 20000000000LL;
        while (!atomic_load(&h->go) && coro_now() < end)
            sched_yield();
    }
    CORO_END(co);
}

struct reader {
    coro_t co;
    int fd;
    intptr_t n;
    char buf[8];
};

static int read_fn(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, r->buf, sizeof r->buf, CORO_FOREVER));
    r->n = CORO_RESULT(co);
    CORO_END(co);
}

static bool ready(coro_t *co)
{
    /* acquire: the state the waker left */
    return (__atomic_load_n(&co->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) == CORO__S_READY;
}

Test(io_own_call, a_woken_reader_reads_on_its_worker_what_is_there_when_it_runs, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct holder h = { 0 };
    struct reader r = { 0 };
    int p[2];

    cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    r.fd = p[0];
    cr_assert_eq(coro_spawn(s, &r.co, read_fn, NULL), 0);
    wait_suspended(&r.co);              /* parked on the empty pipe */
    cr_assert_eq(coro_spawn(s, &h.co, hold_fn, NULL), 0);
    while (!atomic_load(&h.running))
        sched_yield();
    /* the only worker is held: the I/O thread takes the event and wakes
     * the reader, which cannot run yet */
    cr_assert_eq(write(p[1], "A", 1), 1);
    int64_t end = coro_now() + 20000000000LL;
    while (!ready(&r.co)) {
        cr_assert_lt(coro_now(), end, "the event never woke the reader");
        sched_yield();
    }
    cr_assert_eq(write(p[1], "B", 1), 1);
    atomic_store(&h.go, 1);
    join_r(&h.co);
    join_r(&r.co);
    /* its own read, made when it ran: both bytes */
    cr_assert_eq(r.n, 2, "read %ld byte(s): the event's handler read for it", (long)r.n);
    cr_assert_eq(memcmp(r.buf, "AB", 2), 0);
    close(p[0]);
    close(p[1]);
    coro_sched_destroy(s);
}

/* a cancel that comes after the wake-up and before the job runs: the job
 * sees it when it arms its await again (under the fd entry's lock), and
 * the data stays in the pipe, read by nobody */
Test(io_own_call, a_reader_cancelled_between_its_wake_up_and_its_call_reads_nothing, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct holder h = { 0 };
    struct reader r = { 0 };
    int p[2];
    char c;

    cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    r.fd = p[0];
    cr_assert_eq(coro_spawn(s, &r.co, read_fn, NULL), 0);
    wait_suspended(&r.co);
    cr_assert_eq(coro_spawn(s, &h.co, hold_fn, NULL), 0);
    while (!atomic_load(&h.running))
        sched_yield();
    cr_assert_eq(write(p[1], "A", 1), 1);
    int64_t end = coro_now() + 20000000000LL;
    while (!ready(&r.co)) {
        cr_assert_lt(coro_now(), end, "the event never woke the reader");
        sched_yield();
    }
    cr_assert_eq(coro_cancel(&r.co), 0);
    atomic_store(&h.go, 1);
    join_r(&h.co);
    join_r(&r.co);
    cr_assert_eq(r.n, -ECANCELED);
    cr_assert_eq(read(p[0], &c, 1), 1, "the byte was read for a cancelled job");
    close(p[0]);
    close(p[1]);
    coro_sched_destroy(s);
}
