/* SPDX-License-Identifier: MIT */
/* Concurrency scenario: readiness words (lib/io/fd_wait.c, READINESS).
 *
 * On a plain TCP socket a short read clears the fd's read bit and the next
 * read with a timeout parks without trying (lib/io/io.h): a clear that
 * must lose to any event counted since the read began.  On socketpairs
 * and pipes a short read clears nothing, and every read calls.  Here plain
 * threads write while jobs read into buffers larger than the messages
 * (every read is short), over TCP on loopback, socketpairs and pipes, with
 * up to two messages in flight so that writes land before, during and
 * after each read, its clear and its park (and, on TCP, while the read
 * holds the socket: the backlog's edge); and pairs of jobs bounce bytes,
 * reading short, while writing in bursts.  Every byte must arrive once,
 * in order; a lost wake-up shows as a read that times out.
 * Plain program (Criterion cannot run under ThreadSanitizer). */
#define _GNU_SOURCE
#include "scenario.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000LL
#define RBUF 32

struct reader {
    coro_t co;
    int fd;
    long total, got;    /* got: atomic */
    intptr_t err;       /* atomic */
    unsigned char buf[RBUF];
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    while (r->got < r->total) {
        CORO_AWAIT(co, coro_read(r->fd, r->buf, RBUF, 10000 * MS));
        if (CORO_RESULT(co) <= 0) {
            __atomic_store_n(&r->err, CORO_RESULT(co) ? CORO_RESULT(co) : -EPIPE,
                             __ATOMIC_RELAXED);
            CORO_RETURN(co, -1);
        }
        for (intptr_t i = 0; i < CORO_RESULT(co); i++)
            if (r->buf[i] != (unsigned char)((r->got + i) * 11)) {
                __atomic_store_n(&r->err, -EILSEQ, __ATOMIC_RELAXED);
                CORO_RETURN(co, -1);
            }
        /* release: the bytes are checked before the writer sends more */
        __atomic_store_n(&r->got, r->got + CORO_RESULT(co), __ATOMIC_RELEASE);
    }
    CORO_END(co);
}

struct writer {
    int fd;
    long msg, rounds, inflight;
    struct reader *r;
    unsigned seed;
    int failed;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    unsigned char buf[RBUF];
    long off = 0;

    for (long k = 0; k < w->rounds; k++) {
        /* acquire: at most `inflight` messages unread */
        while (__atomic_load_n(&w->r->got, __ATOMIC_ACQUIRE) < off - (w->inflight - 1) * w->msg) {
            if (__atomic_load_n(&w->r->err, __ATOMIC_RELAXED))
                return NULL;
            sched_yield();
        }
        unsigned spin = (unsigned)rand_r(&w->seed) % 400;
        for (unsigned i = 0; i < spin; i++)
            __asm__ volatile("" ::: "memory");
        if (spin % 5 == 0)
            sched_yield();
        for (long i = 0; i < w->msg; i++)
            buf[i] = (unsigned char)((off + i) * 11);
        if (write(w->fd, buf, (size_t)w->msg) != (ssize_t)w->msg) {
            w->failed = 1;
            return NULL;
        }
        off += w->msg;
    }
    return NULL;
}

enum kind { K_SOCKETPAIR, K_PIPE, K_TCP, NKINDS };
static const char *const knames[] = { "socketpair", "pipe", "tcp" };

/* a connected TCP pair on loopback (fds[0] accepted), TCP_NODELAY: each
 * write is a segment of its own */
static int tcp_pair(int fds[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &l) < 0)
        return -1;
    fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[1] < 0 || connect(fds[1], (struct sockaddr *)&a, sizeof a) < 0)
        return -1;
    fds[0] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    close(lfd);
    if (fds[0] < 0)
        return -1;
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

static int mk_pair(enum kind k, int fds[2])
{
    switch (k) {
    case K_PIPE:
        return pipe2(fds, O_CLOEXEC);
    case K_TCP:
        return tcp_pair(fds);
    default:
        return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
    }
}

static void race(int workers, enum kind k, long msg, long inflight, long rounds, unsigned seed)
{
    coro_sched_t *s = scen_sched(workers);
    int fds[2];
    int rc = mk_pair(k, fds);
    SCEN_CHECK(rc == 0, "%s: %d", knames[k], errno);
    struct reader r = { .fd = fds[0], .total = msg * rounds };
    struct writer w = { .fd = fds[1], .msg = msg, .rounds = rounds, .inflight = inflight,
                        .r = &r, .seed = seed };
    pthread_t t;

    SCEN_CHECK(coro_spawn(s, &r.co, reader_body, NULL) == 0, "spawn");
    SCEN_CHECK(pthread_create(&t, NULL, writer_main, &w) == 0, "pthread_create");
    intptr_t res = join_r(&r.co);
    pthread_join(t, NULL);
    SCEN_CHECK(res == 0 && r.err == 0 && !w.failed && r.got == r.total,
               "%d workers, %s, %ld-byte messages, %ld in flight: %s after %ld of %ld bytes",
               workers, knames[k], msg, inflight,
               coro_strerror((int)r.err), r.got, r.total);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

/* two jobs bounce bursts: the starter writes `burst` bytes, the other reads
 * them (short reads, maybe several) and sends them back */
struct bouncer {
    coro_t co;
    int fd, starts;
    long i, n, burst, have;
    unsigned char out[RBUF], in[RBUF];
};

static int bouncer_body(coro_t *co)
{
    struct bouncer *x = CORO_SELF(co, struct bouncer);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->starts) {
            for (long k = 0; k < x->burst; k++)
                x->out[k] = (unsigned char)(x->i + k);
            CORO_AWAIT(co, coro_write_all(x->fd, x->out, (size_t)x->burst, CORO_FOREVER));
            if (CORO_RESULT(co) != 0)
                CORO_RETURN(co, -1);
        }
        for (x->have = 0; x->have < x->burst;) {
            CORO_AWAIT(co, coro_read(x->fd, x->in + x->have, (size_t)(RBUF - x->have),
                                     10000 * MS));
            if (CORO_RESULT(co) <= 0)
                CORO_RETURN(co, -2);
            x->have += CORO_RESULT(co);
        }
        if (x->have != x->burst)
            CORO_RETURN(co, -3);
        for (long k = 0; k < x->burst; k++)
            if (x->in[k] != (unsigned char)(x->i + k))
                CORO_RETURN(co, -4);
        if (!x->starts) {
            CORO_AWAIT(co, coro_write_all(x->fd, x->in, (size_t)x->burst, CORO_FOREVER));
            if (CORO_RESULT(co) != 0)
                CORO_RETURN(co, -5);
        }
    }
    CORO_END(co);
}

static void bounce(int workers, enum kind k, long n, long burst)
{
    coro_sched_t *s = scen_sched(workers);
    int sv[2];
    SCEN_CHECK(mk_pair(k, sv) == 0, "%s: %d", knames[k], errno);
    struct bouncer a = { .fd = sv[0], .starts = 1, .n = n, .burst = burst };
    struct bouncer b = { .fd = sv[1], .starts = 0, .n = n, .burst = burst };
    SCEN_CHECK(coro_spawn(s, &a.co, bouncer_body, NULL) == 0, "spawn");
    SCEN_CHECK(coro_spawn(s, &b.co, bouncer_body, NULL) == 0, "spawn");
    intptr_t ra = join_r(&a.co), rb = join_r(&b.co);
    SCEN_CHECK(ra == 0 && rb == 0, "%d workers, %s, bursts of %ld: %ld (round %ld), %ld (round %ld)",
               workers, knames[k], burst, (long)ra, a.i, (long)rb, b.i);
    close(sv[0]);
    close(sv[1]);
    coro_sched_destroy(s);
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    long rounds = SCEN_N(m, 2000, 5000, 100000);
    int counts[] = { 0, 1, 2, 4 };

    for (int k = 0; k < 4; k++) {
        int w = counts[k];
        for (int p = 0; p < NKINDS; p++) {
            race(w, (enum kind)p, 1, 1, rounds, 1u + (unsigned)k);
            race(w, (enum kind)p, 1, 2, rounds, 7u + (unsigned)k);
            race(w, (enum kind)p, 3, 2, rounds, 13u + (unsigned)k);
            race(w, (enum kind)p, RBUF, 1, rounds / 2, 17u + (unsigned)k);
        }
        bounce(w, K_SOCKETPAIR, rounds, 1);
        bounce(w, K_SOCKETPAIR, rounds / 2, 5);
        bounce(w, K_TCP, rounds, 1);
        bounce(w, K_TCP, rounds / 2, 5);
    }
    printf("io_short_read: ok\n");
    return 0;
}
