/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Priority among the jobs one look at epoll wakes: a HIGH job runs first. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"        /* white box: the job state word, the I/O context */
#include "fixture_io.h"

/* ---- priority among the jobs one look at epoll wakes ------------------------------------- */

struct prio_reader {
    coro_t co;
    int fd, rounds, i, bad;
    int waiting;            /* atomic: the round it is about to wait in, from 1 */
    int *seq;               /* a counter shared by the readers of one worker */
    int order[64];          /* the counter's value when round i ran */
    char b;
};

static int prio_reader_body(coro_t *co)
{
    struct prio_reader *r = CORO_SELF(co, struct prio_reader);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->rounds; r->i++) {
        __atomic_store_n(&r->waiting, r->i + 1, __ATOMIC_RELEASE);
        CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, 10000 * MS));
        if (CORO_RESULT(co) != 1)
            r->bad++;
        r->order[r->i] = ++*r->seq;     /* one worker: the readers never race */
    }
    /* release: done, as if about to wait in the round after the last (the
     * test's last look, which would otherwise wait out its bound) */
    __atomic_store_n(&r->waiting, r->rounds + 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

struct two_writes {
    coro_t co;
    int first, second, bad;
};

static int two_writes_body(coro_t *co)
{
    struct two_writes *t = CORO_SELF(co, struct two_writes);
    CORO_BEGIN(co);
    if (write(t->first, "n", 1) != 1 || write(t->second, "h", 1) != 1)
        t->bad++;
    CORO_END(co);
}

/* A job on the worker writes to a NORMAL reader's socket, then to a HIGH
 * reader's, and ends: the worker, with nothing queued, looks at epoll and
 * wakes both in that order.  The HIGH job runs first all the same (the
 * NORMAL one, woken first, once ran first: the worker kept it aside to run
 * it next, before the HIGH job was woken).  A round in which the I/O
 * thread took an event is left out: it may take the first before the
 * second is written, and then the NORMAL job is rightly first */
Test(io_priority, a_high_job_woken_by_the_same_look_at_epoll_runs_before_a_normal_one, .timeout = 60)
{
    enum { ROUNDS = 64 };
    coro_sched_t *s = mk(1);
    struct coro__io *io = coro__sched_io(s);
    int a[2], b[2], seq = 0, counted = 0;
    bool iot_took[ROUNDS];
    uint64_t prev = coro__io_woken_by(io, true);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    struct prio_reader n = { .fd = a[0], .rounds = ROUNDS, .seq = &seq };
    struct prio_reader h = { .fd = b[0], .rounds = ROUNDS, .seq = &seq };
    struct two_writes t = { .first = a[1], .second = b[1] };
    coro_spawn_opts_t high = { .priority = CORO_PRIO_HIGH };
    cr_assert_eq(coro_spawn(s, &n.co, prio_reader_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &h.co, prio_reader_body, &high), 0);
    for (int r = 1; r <= ROUNDS + 1; r++) {
        /* both have run round r-1 and are about to wait again: the
         * writer, on the same worker, runs after their steps end
         * (bounded: 10 s) */
        for (int k = 0; k < 10000 && (__atomic_load_n(&n.waiting, __ATOMIC_ACQUIRE) < r ||
                                       __atomic_load_n(&h.waiting, __ATOMIC_ACQUIRE) < r);
             k++)
            sleep_ms(1);
        /* the I/O thread's count moved during round r-1: it took one */
        uint64_t now = coro__io_woken_by(io, true);
        if (r > 1)
            iot_took[r - 2] = now != prev;
        prev = now;
        if (r > ROUNDS)
            break;
        cr_assert_eq(coro_spawn(s, &t.co, two_writes_body, NULL), 0);
        join_r(&t.co);
    }
    join_r(&n.co);
    join_r(&h.co);
    cr_assert_eq(n.bad + h.bad + t.bad, 0);
    for (int r = 0; r < ROUNDS; r++) {
        if (iot_took[r])
            continue;
        counted++;
        cr_assert_lt(h.order[r], n.order[r], "round %d: the NORMAL job ran first", r);
    }
    cr_assert_gt(counted, 0, "the I/O thread took an event in every round");
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        close(b[i]);
    }
    coro_sched_destroy(s);
}
