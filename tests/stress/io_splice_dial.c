/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: a splice that waits on either side (lib/io/vec.c,
 * SPLICE WAITS ON EITHER SIDE), and dials cancelled from another thread
 * while their pool thread resolves or connects (lib/io/net.c).
 *
 * Splice: a plain thread writes a numbered stream into a socket in bursts
 * while another drains the pipe the job splices into, each pausing at
 * random, so the splice blocks now on its empty input, now on its full
 * output; every byte must come out once, in order, and a lost wake-up
 * shows as a splice that times out.  Dial: jobs dial a local listener
 * while a plain thread cancels each after a random spin; each ends with a
 * connected fd or -ECANCELED, and no fd is left open.
 * Plain program (Criterion cannot run under ThreadSanitizer). */
#define _GNU_SOURCE
#include "scenario.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000LL

struct splicer {
    coro_t co;
    int in, out;
    long total, moved;
    intptr_t err;
};

static int splicer_body(coro_t *co)
{
    struct splicer *s = CORO_SELF(co, struct splicer);
    CORO_BEGIN(co);
    while (s->moved < s->total) {
        CORO_AWAIT(co, coro_splice(s->in, s->out, 4096, 10000 * MS));
        if (CORO_RESULT(co) <= 0 && CORO_RESULT(co) != -EAGAIN) {
            s->err = CORO_RESULT(co) ? CORO_RESULT(co) : -EPIPE;
            CORO_RETURN(co, -1);
        }
        if (CORO_RESULT(co) > 0)
            s->moved += CORO_RESULT(co);
    }
    CORO_END(co);
}

struct feeder {
    int fd;
    long total;
    unsigned seed;
};

static void pause_at_random(unsigned *seed)
{
    unsigned spin = (unsigned)rand_r(seed) % 2000;
    for (unsigned i = 0; i < spin; i++)
        __asm__ volatile("" ::: "memory");
    if (spin % 3 == 0)
        sched_yield();
}

static void *feeder_main(void *arg)
{
    struct feeder *f = arg;
    unsigned char buf[8192];
    for (long off = 0; off < f->total;) {
        size_t n = 1 + (size_t)rand_r(&f->seed) % sizeof buf;
        if ((long)n > f->total - off)
            n = (size_t)(f->total - off);
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)((off + (long)i) * 13);
        for (size_t done = 0; done < n;) {
            ssize_t k = write(f->fd, buf + done, n - done);
            SCEN_CHECK(k > 0 || errno == EAGAIN, "feed: %d", errno);
            if (k > 0)
                done += (size_t)k;
            else
                sched_yield();
        }
        off += (long)n;
        pause_at_random(&f->seed);
    }
    return NULL;
}

static void *drainer_main(void *arg)
{
    struct feeder *f = arg;
    unsigned char buf[3000];
    for (long off = 0; off < f->total;) {
        ssize_t k = read(f->fd, buf, 1 + (size_t)rand_r(&f->seed) % sizeof buf);
        if (k < 0 && errno == EAGAIN) {
            sched_yield();
            continue;
        }
        SCEN_CHECK(k > 0, "drain: %zd %d", k, errno);
        for (ssize_t i = 0; i < k; i++)
            SCEN_CHECK(buf[i] == (unsigned char)((off + i) * 13), "byte %ld", off + i);
        off += k;
        pause_at_random(&f->seed);
    }
    return NULL;
}

static void splice_race(int workers, long total, unsigned seed)
{
    coro_sched_t *s = scen_sched(workers);
    int sv[2], pp[2];
    SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    SCEN_CHECK(pipe2(pp, O_CLOEXEC) == 0, "pipe");
    fcntl(pp[0], F_SETPIPE_SZ, 4096);      /* a small pipe: the output fills often */
    static struct splicer sp;
    sp = (struct splicer){ .in = sv[1], .out = pp[1], .total = total };
    struct feeder fe = { sv[0], total, seed }, dr = { pp[0], total, seed * 7 };
    pthread_t a, b;
    SCEN_CHECK(coro_spawn(s, &sp.co, splicer_body, NULL) == 0, "spawn");
    pthread_create(&a, NULL, feeder_main, &fe);
    pthread_create(&b, NULL, drainer_main, &dr);
    SCEN_CHECK(join_r(&sp.co) == 0, "splice: %s after %ld bytes", coro_strerror((int)sp.err),
               sp.moved);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    close(sv[0]);
    close(sv[1]);
    close(pp[0]);
    close(pp[1]);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
}

struct dialer {
    coro_t co;
    const char *addr;
    intptr_t res;
    int started;
};

static int dialer_body(coro_t *co)
{
    struct dialer *d = CORO_SELF(co, struct dialer);
    CORO_BEGIN(co);
    __atomic_store_n(&d->started, 1, __ATOMIC_RELEASE);
    CORO_AWAIT(co, coro_dial(d->addr, CORO_FOREVER));
    d->res = CORO_RESULT(co);
    CORO_END(co);
}

static void dial_race(int workers, int rounds, unsigned seed)
{
    coro_sched_t *s = scen_sched(workers);
    int l = coro_listen(AF_INET, "127.0.0.1:0", 64);
    SCEN_CHECK(l >= 0, "listen: %s", coro_strerror(l));
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    getsockname(l, (struct sockaddr *)&sa, &len);
    char addr[64];
    snprintf(addr, sizeof addr, "localhost:%d", ntohs(sa.sin_port));
    int before = open("/dev/null", O_RDONLY);
    close(before);
    static struct dialer d;
    for (int i = 0; i < rounds; i++) {
        d = (struct dialer){ .addr = addr };
        SCEN_CHECK(coro_spawn(s, &d.co, dialer_body, NULL) == 0, "spawn");
        /* acquire: the job runs before the cancel comes, so the cancel
         * meets its await at some point of the dial (with 0 workers the
         * join runs it: the cancel comes first, and the pool refuses it) */
        while (workers && !__atomic_load_n(&d.started, __ATOMIC_ACQUIRE))
            sched_yield();
        pause_at_random(&seed);
        coro_cancel(&d.co);
        SCEN_CHECK(join_r(&d.co) == 0, "join");
        SCEN_CHECK(d.res >= 0 || d.res == -ECANCELED, "dial: %s", coro_strerror((int)d.res));
        if (d.res >= 0)
            close((int)d.res);
        int c;
        while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0)
            close(c);
    }
    int after = open("/dev/null", O_RDONLY);
    close(after);
    SCEN_CHECK(after == before, "an fd was left open (%d, then %d)", before, after);
    close(l);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    long bytes = SCEN_N(m, 1L << 20, 8L << 20, 64L << 20);
    int dials = SCEN_N(m, 50, 300, 3000);
    int counts[] = { 0, 1, 2, 4 };

    for (int k = 0; k < 4; k++) {
        splice_race(counts[k], bytes, 3u + (unsigned)k);
        dial_race(counts[k], dials, 11u + (unsigned)k);
    }
    printf("io_splice_dial: ok\n");
    return 0;
}
