/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* An fd wait: coro_read, coro_write, coro_readable and coro_writable complete
 * on readiness over pipes and socketpairs, time out with -ETIMEDOUT and
 * leave the fd usable, refuse bad fds and arguments at once.  White-box: a
 * plain writer waits for the job's state word (suspended) before it
 * writes, so that no sleep orders the wait. */
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

/* a plain thread that writes len bytes to fd ms after job `after` waits
 * (it polls the job's state, bounded by 10 s: no sleep orders the wait
 * before the write; the ms only make time pass) */
struct later {
    int fd, ms;
    const char *data;
    size_t len;
    coro_t *after;
    int64_t at;         /* coro_now() just before the write */
    pthread_t t;
};

static void *later_main(void *arg)
{
    struct later *l = arg;
    for (int i = 0; l->after && i < 100000; i++) {
        if ((__atomic_load_n(&l->after->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) ==
            CORO__S_SUSPENDED)
            break;
        usleep(100);
    }
    sleep_ms(l->ms);
    __atomic_store_n(&l->at, coro_now(), __ATOMIC_RELAXED);
    if (write(l->fd, l->data, l->len) != (ssize_t)l->len)
        abort();
    return NULL;
}

static void later_start(struct later *l, int fd, int ms, const char *data, coro_t *after)
{
    *l = (struct later){ .fd = fd, .ms = ms, .data = data, .len = strlen(data), .after = after };
    pthread_create(&l->t, NULL, later_main, l);
}

/* ---- readiness on pipes and socketpairs ------------------------------------------- */

Test(io_fd_waits, pipe_read_waits_for_data_then_gets_it, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int p[2];
        char buf[16] = { 0 };
        struct later l;
        cr_assert_eq(pipe(p), 0);
        struct one o = { .op = OP_READ, .fd = p[0], .buf = buf, .len = sizeof buf,
                         .timeout = 5000 * MS };
        later_start(&l, p[1], 20, "hello", &o.co);
        cr_assert_eq(run_one(s, &o), 5, "workers %d: %ld", w, (long)o.res);
        cr_assert_str_eq(buf, "hello");
        cr_assert_geq(o.elapsed, 10 * MS, "%d workers: it did wait (%lld ns)", w,
                      (long long)o.elapsed);
        pthread_join(l.t, NULL);
        /* a job that began before the write waited for it (on a loaded
         * machine the job may begin after the write: then it need not) */
        if (o.start < l.at)
            cr_assert_geq(o.start + o.elapsed, l.at, "it did wait");
        cr_assert(fcntl(p[0], F_GETFL) & O_NONBLOCK, "a pipe is switched to O_NONBLOCK");
        coro_sched_destroy(s);
        close(p[0]);
        close(p[1]);
    }
}

Test(io_fd_waits, readable_on_a_socketpair_completes_once_data_arrives, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int sv[2];
        struct later l;
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);     /* blocking */
        struct one o = { .op = OP_READABLE, .fd = sv[0], .timeout = CORO_FOREVER };
        later_start(&l, sv[1], 20, "x", &o.co);
        cr_assert_eq(run_one(s, &o), 0);
        pthread_join(l.t, NULL);
        /* already readable: completes at once */
        struct one o2 = { .op = OP_READABLE, .fd = sv[0], .timeout = 0 };
        cr_assert_eq(run_one(s, &o2), 0);
        cr_assert_eq(fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0, "a socket keeps its flags");
        struct one o3 = { .op = OP_WRITABLE, .fd = sv[0], .timeout = 0 };
        cr_assert_eq(run_one(s, &o3), 0);
        coro_sched_destroy(s);
        close(sv[0]);
        close(sv[1]);
    }
}

/* a reader and a writer wait on the same fd at once */
struct rw {
    coro_t co;
    int fd;
    char *big;
    size_t len;
    char small[8];
    intptr_t res;
};

static int rw_reader(coro_t *co)
{
    struct rw *r = CORO_SELF(co, struct rw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, r->small, sizeof r->small, 10000 * MS));
    r->res = CORO_RESULT(co);
    CORO_END(co);
}

static int rw_writer(coro_t *co)
{
    struct rw *r = CORO_SELF(co, struct rw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_write_all(r->fd, r->big, r->len, 10000 * MS));
    r->res = CORO_RESULT(co);
    CORO_END(co);
}

struct drainer {
    int fd;
    char *buf;
    size_t len;
    pthread_t t;
};

static void *drainer_main(void *arg)
{
    struct drainer *d = arg;
    size_t got = 0;
    sleep_ms(20);
    while (got < d->len) {
        ssize_t n = read(d->fd, d->buf + got, d->len - got > 65536 ? 65536 : d->len - got);
        if (n <= 0)
            abort();
        got += (size_t)n;
    }
    if (write(d->fd, "ok", 2) != 2)
        abort();
    return NULL;
}

Test(io_fd_waits, a_reader_and_a_writer_wait_on_one_socket_at_once, .timeout = 60)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int sv[2];
        size_t len = 4 << 20;
        char *big = malloc(len), *sink = malloc(len);
        for (size_t i = 0; i < len; i++)
            big[i] = (char)(i * 31);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        struct rw rd = { .fd = sv[0] }, wr = { .fd = sv[0], .big = big, .len = len };
        struct drainer d = { .fd = sv[1], .buf = sink, .len = len };
        cr_assert_eq(coro_spawn(s, &rd.co, rw_reader, NULL), 0);
        cr_assert_eq(coro_spawn(s, &wr.co, rw_writer, NULL), 0);
        /* the peer drains the 4 MiB slowly, then answers */
        pthread_create(&d.t, NULL, drainer_main, &d);
        cr_assert_eq(join_r(&wr.co), 0);
        cr_assert_eq(join_r(&rd.co), 0);
        pthread_join(d.t, NULL);
        cr_assert_eq(memcmp(big, sink, len), 0, "every byte in order");
        cr_assert_eq(wr.res, 0, "write_all: %s", coro_strerror((int)wr.res));
        cr_assert_eq(rd.res, 2);
        coro_sched_destroy(s);
        close(sv[0]);
        close(sv[1]);
        free(big);
        free(sink);
    }
}

Test(io_fd_waits, a_second_reader_on_one_fd_gets_ebusy, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int p[2];
        cr_assert_eq(pipe(p), 0);
        struct rw a = { .fd = p[0] }, b = { .fd = p[0] };
        cr_assert_eq(coro_spawn(s, &a.co, rw_reader, NULL), 0);
        cr_assert_eq(coro_spawn(s, &b.co, rw_reader, NULL), 0);
        /* no sleep orders the two: whichever registers second gets -EBUSY
         * and finishes; only then is the byte written, for the first one
         * (single-threaded: joining b runs a, then b, in spawn order) */
        struct rw *second = &b, *first = &a;
        if (w == 0) {
            join_r(&b.co);
        } else {
            for (int i = 0; i < 100000; i++) {      /* 10 s */
                if ((__atomic_load_n(&a.co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) ==
                    CORO__S_DONE) {
                    second = &a;
                    first = &b;
                    break;
                }
                if ((__atomic_load_n(&b.co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) ==
                    CORO__S_DONE)
                    break;
                usleep(100);
            }
            join_r(&second->co);
        }
        cr_assert_eq(second->res, -EBUSY, "%d workers: the second reader got %s", w,
                     coro_err_name((int)second->res));
        cr_assert_eq(write(p[1], "1", 1), 1);
        join_r(&first->co);
        cr_assert_eq(first->res, 1);
        coro_sched_destroy(s);
        close(p[0]);
        close(p[1]);
    }
}

/* ---- timeouts and bad input ------------------------------------------------------------ */

Test(io_fd_waits, waits_time_out_with_etimedout_and_the_fd_stays_usable, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int p[2];
        char buf[4];
        cr_assert_eq(pipe(p), 0);
        struct one o = { .op = OP_READ, .fd = p[0], .buf = buf, .len = 4, .timeout = 0 };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT, "0 polls once");
        o = (struct one){ .op = OP_READ, .fd = p[0], .buf = buf, .len = 4, .timeout = 30 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        cr_assert_geq(o.elapsed, 30 * MS, "never early: %ld ns", (long)o.elapsed);
        o = (struct one){ .op = OP_READABLE, .fd = p[0], .timeout = 10 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        cr_assert_eq(write(p[1], "abc", 3), 3);
        o = (struct one){ .op = OP_READ, .fd = p[0], .buf = buf, .len = 4, .timeout = 30 * MS };
        cr_assert_eq(run_one(s, &o), 3);
        /* a full pipe: writable times out */
        char fill[65536] = { 0 };
        fcntl(p[1], F_SETFL, O_NONBLOCK);
        while (write(p[1], fill, sizeof fill) > 0)
            ;
        o = (struct one){ .op = OP_WRITABLE, .fd = p[1], .timeout = 10 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        o = (struct one){ .op = OP_WRITE, .fd = p[1], .buf = fill, .len = 10, .timeout = 0 };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        coro_sched_destroy(s);
        close(p[0]);
        close(p[1]);
    }
}

Test(io_fd_waits, bad_fds_and_bad_arguments_complete_at_once, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        char buf[4];
        int closed = dup(0);
        close(closed);
        struct { enum op op; int fd; void *buf; size_t len; int64_t t; intptr_t want; } c[] = {
            { OP_READ, -1, buf, 4, CORO_FOREVER, -EBADF },
            { OP_READ, closed, buf, 4, CORO_FOREVER, -EBADF },
            { OP_WRITE, -1, buf, 4, CORO_FOREVER, -EBADF },
            { OP_WRITE, closed, buf, 4, CORO_FOREVER, -EBADF },
            { OP_WRITE_ALL, closed, buf, 4, CORO_FOREVER, -EBADF },
            { OP_READABLE, closed, NULL, 0, CORO_FOREVER, -EBADF },
            { OP_WRITABLE, -5, NULL, 0, CORO_FOREVER, -EBADF },
            { OP_ACCEPT, closed, NULL, 0, CORO_FOREVER, -EBADF },
            { OP_READ, 0, NULL, 4, CORO_FOREVER, -EINVAL },
            { OP_READ, 0, buf, 4, -7, -EINVAL },
            { OP_READABLE, 0, NULL, 0, -2, -EINVAL },
            { OP_SLEEP, 0, NULL, 0, -3, -EINVAL },
            { OP_SIGNAL, 0, NULL, 0, CORO_FOREVER, -EINVAL },
            { OP_SIGNAL, SIGKILL, NULL, 0, CORO_FOREVER, -EINVAL },
            { OP_SIGNAL, SIGUSR2, NULL, 0, CORO_FOREVER, -EINVAL },     /* not blocked */
            { OP_CHILD, 0, NULL, 0, CORO_FOREVER, -EINVAL },
            { OP_CHILD, 1, NULL, 0, CORO_FOREVER, -ECHILD },
            { OP_CHILD, 0x3ffffff0, NULL, 0, CORO_FOREVER, -ESRCH },
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            struct one o = { .op = c[i].op, .fd = c[i].fd, .buf = c[i].buf, .len = c[i].len,
                             .timeout = c[i].t };
            cr_assert_eq(run_one(s, &o), c[i].want, "workers %d case %zu: %s", w, i,
                         coro_strerror((int)o.res));
            cr_assert_lt(o.elapsed, 1000 * MS, "completes at once");
        }
        cr_assert_eq(coro_close(s, -1), -EBADF);
        coro_sched_destroy(s);
    }
}
