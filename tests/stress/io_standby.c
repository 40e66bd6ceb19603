/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: the I/O thread's deep standby (lib/io/epoll.c,
 * io_main) against the worker that lets the poll token go.
 *
 * Each round: the scheduler idles long enough for the I/O thread to fall
 * into deep standby (a worker waits in epoll holding the token), a reader
 * parks on a socketpair, then every worker takes a job that spins until
 * released and never awaits.  The worker that held the token must wake
 * the I/O thread when it lets the token go (a lost wake-up leaves nobody
 * in epoll while every worker is busy); the byte written then must be
 * read by the I/O thread while the workers still spin.
 * Plain program (Criterion cannot run under ThreadSanitizer). */
#define _GNU_SOURCE
#include "scenario.h"
#include "rt/rt.h"     /* white box: coro__io_woken_by, coro__io_pending */
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int started, release_;

static int busy_body(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&started, 1, __ATOMIC_RELAXED);
    /* acquire: pairs with main's release */
    while (!__atomic_load_n(&release_, __ATOMIC_ACQUIRE))
        sched_yield();
    CORO_END(co);
}

struct reader {
    coro_t co;
    int fd;
    char b;
    intptr_t res;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, CORO_FOREVER));
    r->res = CORO_RESULT(co);
    CORO_END(co);
}

static void nap_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 5, 20, 200);
    static const int counts[] = { 1, 2, 4 };

    for (int k = 0; k < 3; k++) {
        int w = counts[k];
        coro_sched_t *s = scen_sched(w);
        struct coro__io *io = coro__sched_io(s);
        coro_t *busy = calloc((size_t)w, sizeof *busy);
        int sv[2];
        SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
        for (int r = 0; r < rounds; r++) {
            struct reader rd = { .fd = sv[0] };
            nap_ms(8);      /* idle: more than DEEP_LOOKS standby looks */
            __atomic_store_n(&started, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&release_, 0, __ATOMIC_RELAXED);
            SCEN_CHECK(coro_spawn(s, &rd.co, reader_body, NULL) == 0, "spawn");
            for (long i = 0; !coro__io_pending(io); i++) {
                SCEN_CHECK(i < 10000000, "the reader never parked");
                sched_yield();
            }
            uint64_t before = coro__io_woken_by(io, true);
            for (int i = 0; i < w; i++) {
                memset(&busy[i], 0, sizeof busy[i]);
                SCEN_CHECK(coro_spawn(s, &busy[i], busy_body, NULL) == 0, "spawn");
            }
            for (long i = 0; __atomic_load_n(&started, __ATOMIC_RELAXED) < w; i++) {
                SCEN_CHECK(i < 10000000, "the busy jobs never started");
                sched_yield();
            }
            SCEN_CHECK(write(sv[1], "x", 1) == 1, "write");
            /* generous: the I/O thread looks every ms once awake */
            int64_t until = coro_now() + 10000 * 1000000LL;
            while (coro__io_woken_by(io, true) == before) {
                SCEN_CHECK(coro_now() < until,
                           "%d workers, round %d: the byte was not taken while every worker "
                           "was busy (the I/O thread slept on)", w, r);
                sched_yield();
            }
            /* release: the busy jobs may end */
            __atomic_store_n(&release_, 1, __ATOMIC_RELEASE);
            SCEN_CHECK(join_r(&rd.co) == 0, "join reader");
            SCEN_CHECK(rd.res == 1 && rd.b == 'x', "read %ld", (long)rd.res);
            for (int i = 0; i < w; i++)
                SCEN_CHECK(join_r(&busy[i]) == 0, "join busy");
        }
        close(sv[0]);
        close(sv[1]);
        free(busy);
        coro_sched_destroy(s);
    }
    puts("io_standby: ok");
    return 0;
}
