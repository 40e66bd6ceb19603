/* SPDX-License-Identifier: MIT */
/* Rounds of coro_close racing a read's arm: a job's coro_read gets
 * EAGAIN at once (an empty pipe), and a plain thread (the caller)
 * coro_closes the fd while the job goes from that EAGAIN to its wait in
 * the I/O context.  coro_close(3) promises the read ends with -EBADF
 * whenever the close comes: before the read's first call, between it and
 * the wait, or during the wait.  The read has no timeout; the join has a
 * generous bound so that a job never woken fails the round instead of
 * hanging the run.  Each round's fd is a number of the fd table's next
 * chunk of 256 (F_DUPFD): an fd nobody waited on before is where the
 * window was, and a fresh scheduler per round would make each round
 * costly.  Public API only: tests/api/test_io_close_arm.c and
 * tests/stress/io_close_arm.c. */
#ifndef COROKIT_TESTS_CLOSE_ARM_H
#define COROKIT_TESTS_CLOSE_ARM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* pipe2 */
#endif

#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#define CA_CHUNK 256            /* the fd table's chunk (lib/io/io_impl.h) */

struct ca_job {
    coro_t co;
    int fd, armed;
    char byte;
};

static int ca_body(coro_t *co)
{
    struct ca_job *j = CORO_SELF(co, struct ca_job);
    CORO_BEGIN(co);
    /* release: the closer's acquire load sees the job about to read */
    __atomic_store_n(&j->armed, 1, __ATOMIC_RELEASE);
    CORO_AWAIT(co, coro_read(j->fd, &j->byte, 1, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* the fd numbers rounds may use: the soft limit raised to the hard one */
static inline int ca_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur > (1u << 22) ? 1 << 22 : (int)rl.rlim_cur;
}

/* one round on s with fd number >= chunk * CA_CHUNK; spin: how long the
 * closer waits after the job's flag.  0: the read ended with -EBADF;
 * -ETIMEDOUT: it was never woken (cancelled then); else a step's -errno;
 * *got: the read's result */
static inline int ca_round(coro_sched_t *s, int chunk, unsigned spin, intptr_t *got)
{
    struct ca_job j = { .fd = -1 };
    int p[2], rc;

    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    j.fd = fcntl(p[0], F_DUPFD_CLOEXEC, chunk * CA_CHUNK);
    rc = j.fd < 0 ? -errno : 0;
    close(p[0]);
    if (rc < 0)
        goto out;
    if ((rc = coro_spawn(s, &j.co, ca_body, NULL)) < 0) {
        close(j.fd);
        goto out;
    }
    /* acquire: pairs with the job's release store */
    while (!__atomic_load_n(&j.armed, __ATOMIC_ACQUIRE))
        sched_yield();
    for (volatile unsigned i = 0; i < spin; i++)
        ;
    int crc = coro_close(s, j.fd);
    rc = coro_join_timeout(&j.co, got, 10 * (int64_t)1000000000);
    if (rc == -ETIMEDOUT) {
        coro_cancel(&j.co);     /* never woken: end it, and say so */
        coro_join(&j.co, NULL);
    } else if (rc == 0) {
        rc = crc;
    }
out:
    close(p[1]);
    return rc;
}

/* n rounds on fresh chunks (a new scheduler of `workers` when the numbers
 * run out); 0 or the first failing round's result, *bad its read's */
static inline int ca_rounds(int workers, int n, int *bad_round, intptr_t *bad_got)
{
    int lim = ca_fd_limit() / CA_CHUNK, chunk = lim, rc = 0;
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    uint32_t x = 2463534242u;

    c.workers = workers;
    for (int i = 0; i < n && rc == 0; i++) {
        if (chunk >= lim) {
            if (s)
                coro_sched_destroy(s);
            if ((rc = coro_sched_create(&s, &c)) < 0)
                return rc;
            chunk = 1;          /* 0: the numbers the process holds */
        }
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;    /* xorshift: how long the closer waits */
        intptr_t got = 0;
        rc = ca_round(s, chunk++, x % 8192, &got);
        if (rc == 0 && got != -EBADF)
            rc = -EPROTO;
        if (rc != 0) {
            *bad_round = i;
            *bad_got = got;
        }
    }
    coro_sched_destroy(s);
    return rc;
}

#endif
