/* SPDX-License-Identifier: MIT */
/* The fixture every test file shares, written on the public API alone
 * (include/corokit/): a scheduler without pinning, its teardown, a
 * monotonic clock, a worker's counters, a plain thread that joins a job,
 * and (join_r.h) coro_join / coro_block_on folded into one value.
 * White-box helpers (the job's state word, the parking lot) live in
 * tests/internal/white_box.h, which includes this one; the I/O tests'
 * helpers in tests/fixture_io.h. */
#ifndef COROKIT_TESTS_FIXTURE_H
#define COROKIT_TESTS_FIXTURE_H

#include <criterion/criterion.h>
#include <corokit.h>
#include "join_r.h"     /* join_r, block_on_r: also for tests/stress and tests/fuzz, without Criterion */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* a scheduler from config c (asserted to start) */
static inline coro_sched_t *mk_config(coro_sched_config_t *c)
{
    coro_sched_t *s = NULL;
    int rc = coro_sched_create(&s, c);
    cr_assert_eq(rc, 0, "create(%d): %s", c->workers, coro_strerror(rc));
    return s;
}

/* workers unpinned: the tests share a 2-CPU machine with other work, and
 * a pinned worker would wait for its one CPU */
static inline coro_sched_t *mk(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    return mk_config(&c);
}

/* one worker's counters (coro_sched_worker_stats) */
static inline coro_worker_stats_t wstat(const coro_sched_t *s, int i)
{
    coro_worker_stats_t w;
    coro_sched_worker_stats(s, i, &w);
    return w;
}

/* drain what is left, then free the scheduler: every test tears down fully */
static inline void fin(coro_sched_t *s)
{
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* to let time pass, never to order events */
static inline void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* whether s's coro_sched_dump contains text (false if the dump fails).
 * The dump goes to a memory stream, which takes no fd number: a test
 * watching for a wait on a number it freed does not take that number
 * itself.  Any thread; asserts nothing */
static inline bool dump_has(coro_sched_t *s, const char *text)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return false;
    int dumped = coro_sched_dump(s, f);
    fclose(f);
    bool has = dumped >= 0 && buf && strstr(buf, text);
    free(buf);
    return has;
}

/* a plain thread that joins a job: join_start, then join_end for its result */
struct joiner { pthread_t t; coro_t *co; intptr_t res; };

static inline void *join_main(void *arg)
{
    struct joiner *j = arg;
    j->res = join_r(j->co);
    return NULL;
}

static inline void join_start(struct joiner *j, coro_t *co)
{
    j->co = co;
    cr_assert_eq(pthread_create(&j->t, NULL, join_main, j), 0);
}

static inline intptr_t join_end(struct joiner *j)
{
    pthread_join(j->t, NULL);
    return j->res;
}

/* fn(arg) in a child process, its file descriptor fd (1: stdout, 2:
 * stderr) into a pipe: the child's wait status, and what it wrote in out
 * (up to cap - 1 bytes, 0-terminated).  fn ends the child itself (_exit,
 * exec, an abort); a return is _exit(0).  For what must abort or run a
 * program, where the test's own process must go on */
static inline int in_child(void (*fn)(void *), void *arg, int fd, char *out, size_t cap)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fds[1], fd);
        close(fds[0]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return st;
}

#endif
