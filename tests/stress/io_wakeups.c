/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: the threads that handle I/O (idle workers in
 * epoll_wait or epoll_wait(0), the I/O thread) against the waiters.
 *
 * Many pairs of jobs bounce bytes over socketpairs while sleepers come and
 * go, with coro_close and shutdown(CORO_CANCEL) racing the waits: every
 * await must resume exactly once, every byte arrive, and nothing leak.
 * Racers read with timeouts of a few microseconds while their partner
 * writes: a timer firing races the readiness event for the same waiter
 * (the fd slot's sequence number decides), and an edge that arrives
 * between a read's EAGAIN and its park must never be lost.
 * Plain program (Criterion cannot run under ThreadSanitizer). */
#define _GNU_SOURCE
#include "scenario.h"
#include "rt/rt.h"     /* white box: the job state word */
#include <sys/socket.h>
#include <unistd.h>

struct pinger {
    coro_t co;
    int fd, rounds, i;
    bool starts;
    char b;
    long wakes;
};

static int pinger_body(coro_t *co)
{
    struct pinger *p = CORO_SELF(co, struct pinger);
    CORO_BEGIN(co);
    for (p->i = 0; p->i < p->rounds; p->i++) {
        if (p->starts) {
            p->b = (char)p->i;
            CORO_AWAIT(co, coro_write(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
        CORO_AWAIT(co, coro_read(p->fd, &p->b, 1, 10000000000LL));
        p->wakes++;
        if (CORO_RESULT(co) != 1 || p->b != (char)p->i)
            CORO_RETURN(co, -2);
        if (!p->starts) {
            CORO_AWAIT(co, coro_write(p->fd, &p->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -3);
        }
        if (p->i % 16 == 0)
            CORO_AWAIT(co, coro_sleep(10000));
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

/* the reader waits with a tiny timeout and tries again; the writer sends
 * bytes with short naps: every byte arrives once, in order */
struct racer {
    coro_t co;
    int fd, rounds, i;
    bool writes;
    char b;
    long timeouts;
};

static int racer_body(coro_t *co)
{
    struct racer *r = CORO_SELF(co, struct racer);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->rounds; r->i++) {
        if (r->writes) {
            r->b = (char)r->i;
            CORO_AWAIT(co, coro_write(r->fd, &r->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
            if (r->i % 4 == 0)
                CORO_AWAIT(co, coro_sleep(20000));
            continue;
        }
        for (;;) {
            CORO_AWAIT(co, coro_read(r->fd, &r->b, 1, 5000 + (r->i % 7) * 3000));
            if (CORO_RESULT(co) != -ETIMEDOUT)
                break;
            r->timeouts++;
        }
        if (CORO_RESULT(co) != 1 || r->b != (char)r->i)
            CORO_RETURN(co, -2);
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct waiter {
    coro_t co;
    int fd;
    char b;
    int wakes;
    intptr_t res;
};

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(w->fd, &w->b, 1, CORO_FOREVER));
    w->res = CORO_RESULT(co);
    __atomic_add_fetch(&w->wakes, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int pairs = SCEN_N(mode, 8, 32, 128), rounds = SCEN_N(mode, 200, 1000, 20000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct pinger *p = calloc((size_t)pairs * 2, sizeof *p);
        struct waiter *w = calloc((size_t)pairs, sizeof *w);
        int (*sv)[2] = calloc((size_t)pairs, sizeof *sv), (*wp)[2] = calloc((size_t)pairs, sizeof *wp);
        int (*rp)[2] = calloc((size_t)pairs, sizeof *rp);
        struct racer *rc = calloc((size_t)pairs * 2, sizeof *rc);

        for (int i = 0; i < pairs; i++) {
            SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv[i]) == 0, "socketpair");
            SCEN_CHECK(pipe(wp[i]) == 0, "pipe");
            p[2 * i] = (struct pinger){ .fd = sv[i][0], .rounds = rounds, .starts = true };
            p[2 * i + 1] = (struct pinger){ .fd = sv[i][1], .rounds = rounds };
            w[i] = (struct waiter){ .fd = wp[i][0] };
            SCEN_CHECK(coro_spawn(s, &p[2 * i + 1].co, pinger_body, NULL) == 0, "spawn");
            SCEN_CHECK(coro_spawn(s, &p[2 * i].co, pinger_body, NULL) == 0, "spawn");
            SCEN_CHECK(coro_spawn(s, &w[i].co, waiter_body, NULL) == 0, "spawn");
            SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rp[i]) == 0, "socketpair");
            rc[2 * i] = (struct racer){ .fd = rp[i][0], .rounds = rounds / 4, .writes = true };
            rc[2 * i + 1] = (struct racer){ .fd = rp[i][1], .rounds = rounds / 4 };
            SCEN_CHECK(coro_spawn(s, &rc[2 * i + 1].co, racer_body, NULL) == 0, "spawn");
            SCEN_CHECK(coro_spawn(s, &rc[2 * i].co, racer_body, NULL) == 0, "spawn");
        }
        /* half the waiters are released by close, the rest by cancel.
         * Close only a waiter that is suspended: its first read (tried in
         * the body) then happens before the close (state release ->
         * our acquire -> coro_close's registration -> the I/O thread).
         * Closing an fd a job may be reading at that moment is a race of
         * the caller's, which ThreadSanitizer reports. */
        for (int i = 0; i < pairs; i += 2) {
            while ((__atomic_load_n(&w[i].co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) !=
                   CORO__S_SUSPENDED)
                usleep(100);
            SCEN_CHECK(coro_close(s, wp[i][0]) == 0, "coro_close");
        }
        for (int i = 0; i < 2 * pairs; i++)
            SCEN_CHECK(join_r(&p[i].co) == 0, "pinger %d failed: %ld", i, (long)p[i].co.result);
        for (int i = 0; i < 2 * pairs; i++)
            SCEN_CHECK(join_r(&rc[i].co) == 0, "racer %d failed: %ld", i, (long)rc[i].co.result);
        SCEN_CHECK(coro_sched_shutdown(s, CORO_CANCEL) == 0, "shutdown");
        for (int i = 0; i < pairs; i++) {
            join_r(&w[i].co);
            SCEN_CHECK(w[i].wakes == 1, "waiter %d woke %d times", i, w[i].wakes);
            SCEN_CHECK(w[i].res == (i % 2 == 0 ? -EBADF : -ECANCELED), "waiter %d: %s", i,
                       coro_strerror((int)w[i].res));
        }
        coro_sched_destroy(s);
        for (int i = 0; i < pairs; i++) {
            close(sv[i][0]);
            close(sv[i][1]);
            if (i % 2)
                close(wp[i][0]);
            close(wp[i][1]);
            close(rp[i][0]);
            close(rp[i][1]);
        }
        free(rp);
        free(rc);
        free(p);
        free(w);
        free(sv);
        free(wp);
    }
    printf("io_wakeups: ok\n");
    return 0;
}
