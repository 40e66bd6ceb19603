/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The I/O context's timerfd is armed lazily (lib/io/epoll.c, tfd_update):
 * a timer removed before it fires - a read's timeout when the data came -
 * leaves the timerfd armed early, to fire once for nothing, instead of a
 * timerfd_settime per removal.  These tests count the calls (a stand-in
 * for libc's timerfd_settime: the library is linked statically into the
 * test program) and check that the laziness never makes a timer late: a
 * later sleep after a removed early timeout, a sleep after the armed time
 * passed with an empty heap, an earlier sleep after a later one. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <unistd.h>

#include "rt/rt.h"        /* white box: coro__io_pending, a parked reader */

#define MS 1000000LL

static long settime_calls;      /* atomic */

int timerfd_settime(int fd, int flags, const struct itimerspec *nv, struct itimerspec *old)
{
    __atomic_add_fetch(&settime_calls, 1, __ATOMIC_RELAXED);
    return (int)syscall(SYS_timerfd_settime, fd, flags, nv, old);
}

/* ---- a read's timeout removed at every message --------------------------------------- */

struct pp {
    coro_t co;
    int fd;
    int rounds;
    bool first;     /* sends first */
    intptr_t err;
};

static int pp_body(coro_t *co)
{
    struct pp *p = CORO_SELF(co, struct pp);
    static char b;
    CORO_BEGIN(co);
    for (p->rounds = p->rounds; p->rounds > 0; p->rounds--) {
        if (p->first) {
            CORO_AWAIT(co, coro_write(p->fd, "p", 1, 10000 * MS));
            if (CORO_RESULT(co) != 1)
                break;
        }
        /* a timed read: its timer is added when it parks, removed when
         * the byte comes */
        CORO_AWAIT(co, coro_read(p->fd, &b, 1, 10000 * MS));
        if (CORO_RESULT(co) != 1)
            break;
        if (!p->first) {
            CORO_AWAIT(co, coro_write(p->fd, "p", 1, 10000 * MS));
            if (CORO_RESULT(co) != 1)
                break;
        }
    }
    p->err = p->rounds ? (CORO_RESULT(co) < 0 ? CORO_RESULT(co) : -EIO) : 0;
    CORO_END(co);
}

static void timed_ping_pong(int workers)
{
    coro_sched_t *s = mk(workers);
    int fds[2];
    const int n = 2000;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    struct pp a = { .fd = fds[0], .rounds = n, .first = true };
    struct pp b = { .fd = fds[1], .rounds = n, .first = false };

    long before = __atomic_load_n(&settime_calls, __ATOMIC_RELAXED);
    cr_assert_eq(coro_spawn(s, &b.co, pp_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &a.co, pp_body, NULL), 0);
    cr_assert_eq(join_r(&a.co), 0);
    cr_assert_eq(join_r(&b.co), 0);
    long calls = __atomic_load_n(&settime_calls, __ATOMIC_RELAXED) - before;
    cr_assert_eq(a.err, 0, "%d workers: %s", workers, coro_strerror((int)a.err));
    cr_assert_eq(b.err, 0, "%d workers: %s", workers, coro_strerror((int)b.err));
    /* 4,000 timed reads, most of which park (a timer each), all removed
     * before they fire: the timerfd is armed once, not at every removal
     * (about one call per read before the change) */
    cr_assert_lt(calls, n / 20, "%d workers: %ld timerfd_settime calls for %d timed reads",
                 workers, calls, 2 * n);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(io_timers, removed_timeouts_cost_no_timerfd_call_each)
{
    timed_ping_pong(0);
    timed_ping_pong(1);
    timed_ping_pong(2);
}

/* ---- laziness never makes a timer late ------------------------------------------------- */

struct sl {
    coro_t co;
    int fd;
    int64_t first_timeout, sleep_ns;
    int64_t slept;      /* ns the sleep took */
    intptr_t r1, r2;
};

/* a read with first_timeout whose byte comes once it parked (its timer
 * removed; the timerfd may stay armed for it), then a sleep */
static int sl_body(coro_t *co)
{
    struct sl *x = CORO_SELF(co, struct sl);
    static char b;
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(x->fd, &b, 1, x->first_timeout));
    x->r1 = CORO_RESULT(co);
    x->slept = coro_now();
    CORO_AWAIT(co, coro_sleep(x->sleep_ns));
    x->r2 = CORO_RESULT(co);
    x->slept = coro_now() - x->slept;
    CORO_END(co);
}

struct wr {
    coro_t co;
    int fd;
};

static int wr_body(coro_t *co)
{
    struct wr *w = CORO_SELF(co, struct wr);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_write(w->fd, "x", 1, 10000 * MS));
    CORO_END(co);
}

static void sleep_after(int workers, int64_t first_timeout, int64_t sleep_ns)
{
    coro_sched_t *s = mk(workers);
    int fds[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    struct sl x = { .fd = fds[0], .first_timeout = first_timeout, .sleep_ns = sleep_ns };

    struct wr w = { .fd = fds[1] };
    cr_assert_eq(coro_spawn(s, &x.co, sl_body, NULL), 0);
    if (workers == 0) {
        /* single-threaded: jobs run in spawn order when joined, the
         * reader parks first, then the writer's byte removes its timer */
        cr_assert_eq(coro_spawn(s, &w.co, wr_body, NULL), 0);
    } else {
        /* once the reader is parked with its timer (white box: the I/O
         * context has a waiter), the byte removes the timer */
        for (int64_t until = coro_now() + 30000 * MS; !coro__io_pending(coro__sched_io(s));) {
            cr_assert_lt(coro_now(), until, "the reader never parked");
            sched_yield();
        }
        cr_assert_eq(write(fds[1], "x", 1), 1);
    }
    cr_assert_eq(join_r(&x.co), 0);
    cr_assert_eq(x.r1, 1);
    cr_assert_eq(x.r2, 0);
    /* generous: the sleep must not wait for the removed timer's time */
    cr_assert_lt(x.slept, sleep_ns + 2000 * MS, "%d workers: a %lld ms sleep took %lld ms",
                 workers, (long long)(sleep_ns / MS), (long long)(x.slept / MS));
    cr_assert_geq(x.slept, sleep_ns);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(io_timers, a_sleep_after_a_removed_later_timeout_is_not_late, .timeout = 60)
{
    /* the removed timeout (30 s) is later than the sleep (50 ms): the
     * timerfd armed for 30 s must be brought forward */
    for (int w = 0; w <= 2; w++)
        sleep_after(w, 30000 * MS, 50 * MS);
}

Test(io_timers, a_sleep_after_a_removed_earlier_timeout_is_not_late, .timeout = 60)
{
    /* the removed timeout (100 ms) is earlier than the sleep (300 ms): the
     * timerfd fires once for nothing at 100 ms and is armed again */
    for (int w = 0; w <= 2; w++)
        sleep_after(w, 100 * MS, 300 * MS);
}

struct two {
    coro_t co;
    int fd;
    intptr_t r;
    int64_t took;
};

static int two_read(coro_t *co)
{
    struct two *t = CORO_SELF(co, struct two);
    static char b;
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(t->fd, &b, 1, 100 * MS));     /* nothing comes: times out */
    t->r = CORO_RESULT(co);
    CORO_END(co);
}

static int two_sleep(coro_t *co)
{
    struct two *t = CORO_SELF(co, struct two);
    CORO_BEGIN(co);
    t->took = coro_now();
    CORO_AWAIT(co, coro_sleep(200 * MS));
    t->r = CORO_RESULT(co);
    t->took = coro_now() - t->took;
    CORO_END(co);
}

Test(io_timers, a_timer_after_the_heap_emptied_and_the_timerfd_fired_still_fires,
     .timeout = 60)
{
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        int fds[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct two a = { .fd = fds[0] }, b = { .fd = -1 };
        /* a timeout that fires empties the heap; the timerfd's armed time
         * is then in the past */
        cr_assert_eq(coro_spawn(s, &a.co, two_read, NULL), 0);
        cr_assert_eq(join_r(&a.co), 0);
        cr_assert_eq(a.r, -ETIMEDOUT);
        cr_assert_eq(coro_spawn(s, &b.co, two_sleep, NULL), 0);
        cr_assert_eq(join_r(&b.co), 0);
        cr_assert_eq(b.r, 0);
        cr_assert_lt(b.took, 2200 * MS, "%d workers: a 200 ms sleep took %lld ms", w,
                     (long long)(b.took / MS));
        close(fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- hostile: tiny and huge deadlines mixed with removed timers ---------------------- */

/* A waits for each byte with a huge timeout (about 146 years), removed when
 * the byte comes - the timerfd may stay armed for it; B, in between, sleeps
 * 1 ns and reads another fd with a 1 ns timeout, then sends A the byte.
 * B's tiny deadlines must fire at once whatever A's timers left armed. */
struct huge_reader {
    coro_t co;
    int fd;
    int rounds;
    intptr_t bad;
};

static int huge_reader_body(coro_t *co)
{
    struct huge_reader *a = CORO_SELF(co, struct huge_reader);
    static char b;
    CORO_BEGIN(co);
    for (; a->rounds > 0; a->rounds--) {
        CORO_AWAIT(co, coro_read(a->fd, &b, 1, INT64_MAX / 2));
        if (CORO_RESULT(co) != 1) {
            a->bad = CORO_RESULT(co) ? CORO_RESULT(co) : -EIO;
            break;
        }
    }
    CORO_END(co);
}

struct tiny {
    coro_t co;
    int wfd, idle_fd;
    int rounds;
    intptr_t bad;
    int64_t t0, worst;      /* ns: the longest round of 1 ns deadlines */
};

static int tiny_body(coro_t *co)
{
    struct tiny *t = CORO_SELF(co, struct tiny);
    static char b;
    CORO_BEGIN(co);
    for (; t->rounds > 0; t->rounds--) {
        t->t0 = coro_now();
        CORO_AWAIT(co, coro_sleep(1));
        if (CORO_RESULT(co) != 0)
            t->bad = CORO_RESULT(co);
        CORO_AWAIT(co, coro_read(t->idle_fd, &b, 1, 1));     /* nothing comes */
        if (CORO_RESULT(co) != -ETIMEDOUT)
            t->bad = CORO_RESULT(co) ? CORO_RESULT(co) : -EIO;
        if (coro_now() - t->t0 > t->worst)
            t->worst = coro_now() - t->t0;
        CORO_AWAIT(co, coro_write(t->wfd, "x", 1, 10000 * MS));
        if (CORO_RESULT(co) != 1)
            t->bad = CORO_RESULT(co) ? CORO_RESULT(co) : -EIO;
    }
    CORO_END(co);
}

Test(io_timers, tiny_deadlines_beside_removed_huge_ones_are_never_late, .timeout = 120)
{
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        int p[2], q[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q), 0);
        const int n = 500;
        struct huge_reader a = { .fd = p[0], .rounds = n };
        struct tiny t = { .wfd = p[1], .idle_fd = q[0], .rounds = n };
        cr_assert_eq(coro_spawn(s, &a.co, huge_reader_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &t.co, tiny_body, NULL), 0);
        cr_assert_eq(join_r(&t.co), 0);
        cr_assert_eq(join_r(&a.co), 0);
        cr_assert_eq(t.bad, 0, "%d workers: %s", w, coro_strerror((int)t.bad));
        cr_assert_eq(a.bad, 0, "%d workers: %s", w, coro_strerror((int)a.bad));
        cr_assert_eq(a.rounds, 0);
        /* generous: a round of two 1 ns deadlines, never held by a huge
         * timer that is armed, removed, or gone */
        cr_assert_lt(t.worst, 2000 * MS, "%d workers: a round of 1 ns deadlines took %lld ms", w,
                     (long long)(t.worst / MS));
        for (int k = 0; k < 2; k++) {
            close(p[k]);
            close(q[k]);
        }
        coro_sched_destroy(s);
    }
}
