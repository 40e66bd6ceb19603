/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A parking-lot wait (what the sync primitives await) times out through
 * the I/O context's timer: a wait built on the lot's own hook. */
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

/* ---- the parking-lot timeout hook (for the sync primitives) --------------------------------- */

static int parklot_key;

static int parklot_wait_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)s;
    /* the lot's own timer (lib/wait/parklot.c), fired by the I/O context */
    return coro__parklot_park_job(&parklot_key, job, NULL, NULL, res, coro__now() + aw->timeout);
}

static const struct coro_await_ops parklot_wait_ops = { "test-lot-wait", parklot_wait_arm };

struct lw {
    coro_t co;
    intptr_t res;
    int64_t t;
};

static int lw_body(coro_t *co)
{
    struct lw *j = CORO_SELF(co, struct lw);
    coro_await_t a = { .ops = &parklot_wait_ops, .timeout = 20 * MS };
    CORO_BEGIN(co);
    j->t = coro_now();
    CORO_AWAIT(co, a);
    j->res = CORO_RESULT(co);
    j->t = coro_now() - j->t;
    CORO_END(co);
}

Test(io_parklot_timeout, a_parking_parklot_wait_times_out_through_the_io_timer, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        struct lw j;
        memset(&j, 0, sizeof j);
        cr_assert_eq(block_on_r(s, &j.co, lw_body, NULL), 0);
        cr_assert_eq(j.res, -ETIMEDOUT);
        cr_assert_geq(j.t, 20 * MS);
        coro_sched_destroy(s);
    }
}
