/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_close wakes a job whose wait it did not see begin: the closer looks
 * the fd up before the job's arm has created the fd's entry (the job's
 * read got EAGAIN, its wait is on its way), and closes after the job
 * parked.  The read still ends with -EBADF.  White-box: a test hook holds
 * the closer between its look-up and its close until the job is parked;
 * tests/stress/io_close_arm.c races the two freely. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "io/io.h"        /* white box: the close hook, the waiter count */

struct reader {
    coro_t co;
    int fd;
    char byte;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, &r->byte, 1, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* the closer, between its look-up and its close: until the job is parked
 * (polled, a 10 s bound: a job that never parks fails the join below) */
static void until_parked(struct coro__io *io)
{
    for (int i = 0; i < 100000 && coro__io_fd_waiters(io) == 0; i++)
        usleep(100);
}

Test(io_close_arm, a_close_that_looked_before_the_wait_began_still_wakes_the_reader, .timeout = 60)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    struct reader r = { .fd = -1 };
    int p[2];
    intptr_t got = 0;

    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    /* a number of a chunk of the fd table no wait has touched yet (a fresh
     * scheduler; chunk 1 of 256): the closer's look-up finds no entry */
    r.fd = fcntl(p[0], F_DUPFD_CLOEXEC, 256);
    cr_assert(r.fd >= 256 && r.fd < 512, "fd %d", r.fd);
    close(p[0]);
    coro__io_close_hook = until_parked;
    cr_assert_eq(coro_spawn(s, &r.co, reader_body, NULL), 0);
    int crc = coro_close(s, r.fd);     /* from a plain thread, as an unrelated closer */
    coro__io_close_hook = NULL;
    int jrc = coro_join_timeout(&r.co, &got, 10 * (int64_t)1000000000);
    if (jrc == -ETIMEDOUT) {
        coro_cancel(&r.co);      /* never woken: end it before failing */
        coro_join(&r.co, NULL);
    }
    close(p[1]);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(crc, 0);
    cr_assert_eq(jrc, 0, "the read was never woken by coro_close");
    cr_assert_eq(got, -EBADF, "read: %s", coro_strerror((int)got));
}

Test(io_close_arm, a_close_of_a_number_not_open_in_an_untouched_chunk_gives_ebadf, .timeout = 30)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    int p[2];

    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    int fd = fcntl(p[0], F_DUPFD_CLOEXEC, 512);
    cr_assert(fd >= 512, "fd %d", fd);
    close(p[0]);
    close(p[1]);
    cr_assert_eq(close(fd), 0);
    /* the number is free now: the entry is created, nothing waits */
    cr_assert_eq(coro_close(s, fd), -EBADF);
    cr_assert_eq(coro_close(s, -1), -EBADF);
    cr_assert_eq(coro_close(s, 1 << 30), -EBADF);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
