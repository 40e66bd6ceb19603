/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Readiness words (lib/io/epoll.c, READINESS): an EAGAIN clears the fd's
 * readiness with the tick read before the call, so the job's park does not
 * try again; a transfer, short or not, clears nothing.  These tests try
 * to lose a wake-up: a writer thread writes at random moments around the
 * read, the clear and the park; short reads, of datagrams and of streams,
 * must keep their readiness. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"     /* coro__sys_libc: our stand-ins for libc's calls below */
#include "rt/rt.h"        /* white box: the readiness word */

#define MS 1000000LL

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* rd, wr: a connected pair, or a pipe */
static void mk_pair(bool pipe_, int fds[2])
{
    if (pipe_)
        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    else
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
}

/* ---- a writer thread against short reads ---------------------------------------
 * The job reads into a 64-byte buffer; the thread waits until the job has
 * every byte so far, spins a random while (0 to a few microseconds: before,
 * during or after the job's next read, its clear, its park) and writes the
 * next message.  A lost wake-up shows as a read that times out (10 s).
 * Thousands of rounds a case here; the long runs of the same race, with
 * two messages in flight, are tests/stress/io_short_read's (make test runs
 * it in both park modes, check-tsan under ThreadSanitizer, make stress for
 * minutes), and the exact window (an edge between the call and its clear)
 * is forced below (edge_before_clear). */
#define RBUF 64

struct sreader {
    coro_t co;
    int fd;
    size_t total;       /* bytes to read */
    size_t got;         /* atomic: bytes read so far */
    intptr_t err;
    unsigned char buf[RBUF];
    size_t reads, shorts;
};

static int sreader_body(coro_t *co)
{
    struct sreader *r = CORO_SELF(co, struct sreader);
    CORO_BEGIN(co);
    while (r->got < r->total) {
        CORO_AWAIT(co, coro_read(r->fd, r->buf, RBUF, 10000 * MS));
        if (CORO_RESULT(co) <= 0) {
            __atomic_store_n(&r->err, CORO_RESULT(co) ? CORO_RESULT(co) : -EPIPE,
                             __ATOMIC_RELAXED);
            CORO_RETURN(co, -1);
        }
        for (intptr_t i = 0; i < CORO_RESULT(co); i++)
            if (r->buf[i] != (unsigned char)((r->got + (size_t)i) * 7)) {
                __atomic_store_n(&r->err, -EILSEQ, __ATOMIC_RELAXED);
                CORO_RETURN(co, -1);
            }
        r->reads++;
        r->shorts += CORO_RESULT(co) < RBUF;
        /* release: the bytes checked before the writer sends more */
        __atomic_store_n(&r->got, r->got + (size_t)CORO_RESULT(co), __ATOMIC_RELEASE);
    }
    CORO_END(co);
}

struct swriter {
    int fd;
    size_t msg, rounds;
    struct sreader *r;
    unsigned seed;
    bool failed;
};

static void *swriter_main(void *arg)
{
    struct swriter *w = arg;
    unsigned char buf[RBUF];
    size_t off = 0;

    for (size_t k = 0; k < w->rounds; k++) {
        /* acquire: the job read everything written so far */
        while (__atomic_load_n(&w->r->got, __ATOMIC_ACQUIRE) < off) {
            if (__atomic_load_n(&w->r->err, __ATOMIC_RELAXED))
                return NULL;
            sched_yield();
        }
        unsigned spin = (unsigned)rand_r(&w->seed) % 512;
        for (unsigned i = 0; i < spin; i++)
            cpu_pause();
        if (spin % 7 == 0)
            sched_yield();
        for (size_t i = 0; i < w->msg; i++)
            buf[i] = (unsigned char)((off + i) * 7);
        if (write(w->fd, buf, w->msg) != (ssize_t)w->msg) {
            w->failed = true;
            return NULL;
        }
        off += w->msg;
    }
    return NULL;
}

static void race_short_reads(int workers, bool pipe_, size_t msg, size_t rounds)
{
    coro_sched_t *s = mk(workers);
    int fds[2];
    mk_pair(pipe_, fds);
    struct sreader r = { .fd = fds[0], .total = msg * rounds };
    struct swriter w = { .fd = fds[1], .msg = msg, .rounds = rounds, .r = &r,
                         .seed = (unsigned)(workers * 31 + (int)msg + pipe_) };
    pthread_t t;

    cr_assert_eq(coro_spawn(s, &r.co, sreader_body, NULL), 0);
    cr_assert_eq(pthread_create(&t, NULL, swriter_main, &w), 0);
    intptr_t res = join_r(&r.co);
    pthread_join(t, NULL);
    cr_assert_eq(r.err, 0, "%d workers, %s, %zu-byte messages: %s after %zu of %zu bytes",
                 workers, pipe_ ? "pipe" : "socketpair", msg, coro_strerror((int)r.err), r.got,
                 r.total);
    cr_assert_eq(res, 0);
    cr_assert(!w.failed);
    cr_assert_eq(r.got, r.total);
    if (msg < RBUF)     /* every read was short: the rule was exercised */
        cr_assert_eq(r.shorts, r.reads);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(io_ready, a_write_racing_a_short_read_on_a_socketpair_always_wakes_the_reader,
     .timeout = 240)
{
    int counts[] = { 1, 2 };
    for (int k = 0; k < 2; k++) {
        race_short_reads(counts[k], false, 1, 5000);
        race_short_reads(counts[k], false, RBUF, 1250);    /* full reads: no clear */
        race_short_reads(counts[k], false, 5, 1250);
    }
}

Test(io_ready, a_write_racing_a_short_read_on_a_pipe_always_wakes_the_reader, .timeout = 240)
{
    int counts[] = { 1, 2 };
    for (int k = 0; k < 2; k++) {
        race_short_reads(counts[k], true, 1, 5000);
        race_short_reads(counts[k], true, RBUF, 1250);
        race_short_reads(counts[k], true, 5, 1250);
    }
}

Test(io_ready, a_write_racing_a_short_read_single_threaded_always_wakes_the_reader,
     .timeout = 120)
{
    race_short_reads(0, false, 1, 5000);
    race_short_reads(0, true, 1, 5000);
}

/* ---- an event exactly between the system call and the clear ---------------------------
 * recv and read stand in for libc's in this program (the library is linked
 * statically into it; tests/internal/test_io_path.c does the same for epoll_ctl).  On the
 * watched fd, after a read that is short or gets EAGAIN (the clear), the
 * stand-in writes one byte from the peer and waits until the thread that
 * handles events has counted the edge (the word's tick moved): the edge
 * comes after the call and before its clear.  A clear that ignored the
 * tick would drop the bit with the byte unread and park the reader for
 * good; the tick keeps it set, and the next read gets the byte. */
static struct coro__io *inj_io;     /* atomic */
static int inj_fd = -1, inj_peer = -1;  /* atomic */
static long inj_left;               /* atomic: injections to make */
static long inj_seen;               /* atomic: injections whose edge was counted in time */

static void inject_after(int fd, ssize_t n, size_t len)
{
    if (fd < 0 || fd != __atomic_load_n(&inj_fd, __ATOMIC_RELAXED))
        return;
    if (!((n > 0 && (size_t)n < len) || (n < 0 && errno == EAGAIN)))
        return;
    struct coro__io *io = __atomic_load_n(&inj_io, __ATOMIC_ACQUIRE);
    int saved = errno;
    uint64_t w0 = io ? coro__readiness_load(coro__io_readiness_word(io, fd)) : 0;
    if (!(w0 & CORO__RDY_REG_RD) || __atomic_sub_fetch(&inj_left, 1, __ATOMIC_RELAXED) < 0)
        return;
    char b = 'x';
    if (syscall(SYS_write, __atomic_load_n(&inj_peer, __ATOMIC_RELAXED), &b, 1) != 1)
        abort();
    /* bounded: when this thread is the one that handles events, nobody
     * counts the edge meanwhile (the test needs only some that are) */
    for (int64_t until = coro_now() + 200 * MS; coro_now() < until;) {
        if (coro__readiness_load(coro__io_readiness_word(io, fd)) / CORO__RDY_TICK != w0 / CORO__RDY_TICK) {
            __atomic_add_fetch(&inj_seen, 1, __ATOMIC_RELAXED);
            break;
        }
        sched_yield();
    }
    errno = saved;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t n = syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
    inject_after(fd, n, len);
    return n;
}

ssize_t read(int fd, void *buf, size_t len)
{
    ssize_t n = syscall(SYS_read, fd, buf, len);
    inject_after(fd, n, len);
    return n;
}

struct ireader {
    coro_t co;
    int fd;
    long want, got;
    intptr_t err;
    char buf[RBUF];
};

static int ireader_body(coro_t *co)
{
    struct ireader *r = CORO_SELF(co, struct ireader);
    CORO_BEGIN(co);
    while (r->got < r->want) {
        CORO_AWAIT(co, coro_read(r->fd, r->buf, RBUF, 2000 * MS));
        if (CORO_RESULT(co) <= 0) {
            r->err = CORO_RESULT(co) ? CORO_RESULT(co) : -EPIPE;
            CORO_RETURN(co, -1);
        }
        r->got += CORO_RESULT(co);
    }
    CORO_END(co);
}

static void edge_before_clear(int workers, bool pipe_)
{
    /* the library makes its hot system calls itself (lib/base/sys.h), past
     * libc's recv and read: route them through libc, where the stand-ins
     * above inject (this test's process only: Criterion forks each test) */
    coro__sys_libc = true;
    coro_sched_t *s = mk(workers);
    int fds[2];
    const long n = 150;
    mk_pair(pipe_, fds);
    struct ireader r = { .fd = fds[0], .want = n + 1 };

    __atomic_store_n(&inj_seen, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&inj_left, n, __ATOMIC_RELAXED);
    __atomic_store_n(&inj_peer, fds[1], __ATOMIC_RELAXED);
    /* release: the fds above before the stand-ins act on them */
    __atomic_store_n(&inj_io, coro__sched_io(s), __ATOMIC_RELEASE);
    __atomic_store_n(&inj_fd, fds[0], __ATOMIC_RELEASE);
    cr_assert_eq(coro_spawn(s, &r.co, ireader_body, NULL), 0);
    /* the first byte, once the reader waits (then registered): each read
     * of a byte injects the next */
    /* bounded by time, not by a count of yields: under load 100,000 yields
     * passed before the reader first ran, it then read the byte in its
     * constructor (not registered: nothing injected) and waited for good */
    for (int64_t until = coro_now() + 30000 * MS;
         !(coro__readiness_load(coro__io_readiness_word(coro__sched_io(s), fds[0])) & CORO__RDY_REG_RD);) {
        cr_assert_lt(coro_now(), until, "the reader never registered its fd");
        sched_yield();
    }
    cr_assert_eq(write(fds[1], "y", 1), 1);
    intptr_t res = join_r(&r.co);
    __atomic_store_n(&inj_fd, -1, __ATOMIC_RELAXED);
    long seen = __atomic_load_n(&inj_seen, __ATOMIC_RELAXED);
    cr_assert_eq(r.err, 0, "%d workers, %s: %s after %ld of %ld bytes (%ld edges before a clear)",
                 workers, pipe_ ? "pipe" : "socketpair", coro_strerror((int)r.err), r.got, r.want,
                 seen);
    cr_assert_eq(res, 0);
    cr_assert_gt(seen, 10, "%d workers: only %ld edges came between a read and its clear: the "
                 "test proves little", workers, seen);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(io_ready, an_edge_between_a_read_and_its_clear_is_never_lost, .timeout = 120)
{
    edge_before_clear(1, false);
    edge_before_clear(2, false);
    edge_before_clear(1, true);
    edge_before_clear(2, true);
}

/* ---- the word itself (white box) --------------------------------------------------- */

struct probe {
    coro_t co;
    int fd, peer;
    size_t len;         /* datagram size */
    int n;              /* datagrams queued at once */
    int i;
    intptr_t res[8];
    uint64_t word_after_first;
    intptr_t first_wait;
};

/* register fd (a read that times out), queue n datagrams of len bytes
 * from the job itself (send is synchronous: all are queued before any
 * read), then read them one by one with a 100-byte buffer: each read is
 * short, and none may park for good (no edge comes after the sends) */
static int probe_body(coro_t *co)
{
    struct probe *p = CORO_SELF(co, struct probe);
    static char buf[100];
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(p->fd, buf, sizeof buf, 2 * MS));
    p->first_wait = CORO_RESULT(co);
    for (int i = 0; i < p->n; i++) {
        char d[16];
        memset(d, 'a' + i, sizeof d);
        if (send(p->peer, d, p->len, 0) != (ssize_t)p->len)
            CORO_RETURN(co, -1);
    }
    for (p->i = 0; p->i < p->n; p->i++) {
        CORO_AWAIT(co, coro_read(p->fd, buf, sizeof buf, 5000 * MS));
        p->res[p->i] = CORO_RESULT(co);
        if (p->i == 0)
            p->word_after_first =
                coro__readiness_load(coro__io_readiness_word(coro__sched_io(coro_sched_current()), p->fd));
    }
    CORO_END(co);
}

static void datagrams_keep_readiness(int workers, int type)
{
    coro_sched_t *s = mk(workers);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    struct probe p = { .fd = sv[0], .peer = sv[1], .len = 10, .n = 5 };

    cr_assert_eq(block_on_r(s, &p.co, probe_body, NULL), 0);
    cr_assert_eq(p.first_wait, -ETIMEDOUT, "%s", coro_strerror((int)p.first_wait));
    for (int i = 0; i < p.n; i++)
        cr_assert_eq(p.res[i], 10, "%d workers, %s: datagram %d: %s", workers,
                     type == SOCK_DGRAM ? "SOCK_DGRAM" : "SOCK_SEQPACKET", i,
                     coro_strerror((int)p.res[i]));
    cr_assert(p.word_after_first & CORO__RDY_REG_RD);
    close(sv[0]);
    close(sv[1]);
    coro_sched_destroy(s);
}

Test(io_ready, a_short_read_of_a_datagram_keeps_readiness_for_the_queued_ones, .timeout = 60)
{
    int counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        datagrams_keep_readiness(counts[k], SOCK_DGRAM);
        datagrams_keep_readiness(counts[k], SOCK_SEQPACKET);
    }
}

/* ---- ping pong, 100,000 round trips --------------------------------------------------
 * Reads into a 16-byte buffer: every read of the 1-byte message is short;
 * the next read tries the call, gets EAGAIN, and parks. */
struct bouncer {
    coro_t co;
    int rd, wr;
    bool first;
    long i, n;
    unsigned char b, buf[16];
};

static int bouncer_body(coro_t *co)
{
    struct bouncer *x = CORO_SELF(co, struct bouncer);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->first) {
            x->b = (unsigned char)x->i;
            CORO_AWAIT(co, coro_write(x->wr, &x->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
        CORO_AWAIT(co, coro_read(x->rd, x->buf, sizeof x->buf, 10000 * MS));
        if (CORO_RESULT(co) != 1 || x->buf[0] != (unsigned char)x->i)
            CORO_RETURN(co, -2);
        if (!x->first) {
            CORO_AWAIT(co, coro_write(x->wr, x->buf, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -3);
        }
    }
    CORO_END(co);
}

static void pingpong(int workers, bool pipes, long n)
{
    coro_sched_t *s = mk(workers);
    int a[2], b[2];
    struct bouncer x = { .first = true, .n = n }, y = { .first = false, .n = n };

    if (pipes) {
        mk_pair(true, a);   /* x -> y */
        mk_pair(true, b);   /* y -> x */
        x.wr = a[1], y.rd = a[0], y.wr = b[1], x.rd = b[0];
    } else {
        mk_pair(false, a);
        x.rd = x.wr = a[0], y.rd = y.wr = a[1];
        b[0] = b[1] = -1;
    }
    cr_assert_eq(coro_spawn(s, &x.co, bouncer_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &y.co, bouncer_body, NULL), 0);
    intptr_t rx = join_r(&x.co), ry = join_r(&y.co);
    cr_assert_eq(rx, 0, "%d workers, %s: x %ld at round %ld", workers,
                 pipes ? "pipes" : "socketpair", (long)rx, x.i);
    cr_assert_eq(ry, 0, "%d workers, %s: y %ld at round %ld", workers,
                 pipes ? "pipes" : "socketpair", (long)ry, y.i);
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        if (b[i] >= 0)
            close(b[i]);
    }
    coro_sched_destroy(s);
}

Test(io_ready, a_ping_pong_of_100000_round_trips_with_short_reads_completes, .timeout = 240)
{
    pingpong(2, false, 100000);
    pingpong(1, false, 100000);
    pingpong(2, true, 30000);
    pingpong(0, false, 30000);
}

/* ---- short writes -------------------------------------------------------------------------
 * A job writes 4 MiB in 256 KiB coro_writes (short: the buffer fills)
 * while a thread drains it in random bites: every byte arrives in order. */
#define WTOTAL (4u << 20)
#define WCHUNK (256u << 10)

struct bigwriter {
    coro_t co;
    int fd;
    size_t off;
    size_t shorts;
    unsigned char *data;
};

static int bigwriter_body(coro_t *co)
{
    struct bigwriter *w = CORO_SELF(co, struct bigwriter);
    CORO_BEGIN(co);
    while (w->off < WTOTAL) {
        CORO_AWAIT(co, coro_write(w->fd, w->data + w->off,
                                  WTOTAL - w->off < WCHUNK ? WTOTAL - w->off : WCHUNK,
                                  10000 * MS));
        if (CORO_RESULT(co) <= 0)
            CORO_RETURN(co, CORO_RESULT(co) ? CORO_RESULT(co) : -EIO);
        w->shorts += (size_t)CORO_RESULT(co) < WCHUNK;
        w->off += (size_t)CORO_RESULT(co);
    }
    CORO_END(co);
}

struct drainer {
    int fd;
    unsigned seed;
    size_t got;
    bool bad;
};

static void *drainer_main(void *arg)
{
    struct drainer *d = arg;
    unsigned char buf[8192];

    while (d->got < WTOTAL) {
        size_t want = 1 + (size_t)rand_r(&d->seed) % sizeof buf;
        ssize_t n = read(d->fd, buf, want);
        if (n <= 0) {
            d->bad = true;
            return NULL;
        }
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != (unsigned char)((d->got + (size_t)i) * 13)) {
                d->bad = true;
                return NULL;
            }
        d->got += (size_t)n;
        unsigned spin = (unsigned)rand_r(&d->seed) % 256;
        for (unsigned i = 0; i < spin; i++)
            cpu_pause();
    }
    return NULL;
}

static void short_writes(int workers, bool pipe_)
{
    coro_sched_t *s = mk(workers);
    int fds[2];
    mk_pair(pipe_, fds);
    int bufsz = 16384;
    if (!pipe_)
        setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
    struct bigwriter w = { .fd = fds[1], .data = malloc(WTOTAL) };
    struct drainer d = { .fd = fds[0], .seed = (unsigned)workers + 5u * pipe_ };
    pthread_t t;

    cr_assert_not_null(w.data);
    for (size_t i = 0; i < WTOTAL; i++)
        w.data[i] = (unsigned char)(i * 13);
    cr_assert_eq(coro_spawn(s, &w.co, bigwriter_body, NULL), 0);
    cr_assert_eq(pthread_create(&t, NULL, drainer_main, &d), 0);
    intptr_t res = join_r(&w.co);
    pthread_join(t, NULL);
    cr_assert_eq(res, 0, "%d workers, %s: %s at %zu", workers, pipe_ ? "pipe" : "socketpair",
                 coro_strerror((int)res), w.off);
    cr_assert(!d.bad);
    cr_assert_eq(d.got, WTOTAL);
    cr_assert_gt(w.shorts, 0, "no short write: the test proves nothing");
    free(w.data);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(io_ready, short_writes_racing_a_reader_thread_lose_no_wake_up, .timeout = 120)
{
    int counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        short_writes(counts[k], false);
        short_writes(counts[k], true);
    }
}

/* ---- the I/O thread's deep standby -----------------------------------------------------
 * A worker blocked in epoll_wait for good (a job waits on a socket that
 * never gets data) sees every event itself: the I/O thread sleeps in
 * 50 ms naps (its safety net) and goes straight back to sleep after each,
 * about 20 wake-ups a second.  Before, it made 4 looks of 1 ms after each
 * nap: about 45 a second.
 *
 * The threads of this process whose name begins with prefix: how many,
 * their voluntary context switches (one per wait that slept) and all of
 * them, and whether each was asleep (state S) when read. */
struct task_counts {
    int n;
    long vol, all;
    bool asleep;
};

static void task_counts(const char *prefix, struct task_counts *c)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;

    *c = (struct task_counts){ .asleep = true };
    if (!d)
        return;
    while ((de = readdir(d))) {
        char path[300], buf[64] = "", line[256], state = '?';
        long v = 0, nv = 0;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(buf, sizeof buf, f))
            buf[0] = 0;
        fclose(f);
        if (strncmp(buf, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        while (fgets(line, sizeof line, f)) {
            sscanf(line, "State: %c", &state);
            sscanf(line, "voluntary_ctxt_switches: %ld", &v);
            sscanf(line, "nonvoluntary_ctxt_switches: %ld", &nv);
        }
        fclose(f);
        c->n++;
        c->vol += v;
        c->all += v + nv;
        c->asleep = c->asleep && state == 'S';
    }
    closedir(d);
}

struct idler {
    coro_t co;
    int fd;
    char b;
};

static int idler_body(coro_t *co)
{
    struct idler *x = CORO_SELF(co, struct idler);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(x->fd, &x->b, 1, CORO_FOREVER));
    CORO_END(co);
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The rate is measured over a second in which both workers slept from
 * start to end (asleep when it began and when it ended, not one context
 * switch in between): a worker that a loaded machine kept from parking, or
 * that woke, makes the I/O thread watch it with short looks, which is
 * right, and such a window is measured again (30 tries).  In a window
 * where the token's holder slept throughout, the I/O thread's wake-ups
 * are its own naps alone; the rate is over the window's measured length
 * (a sleep overslept under load is a longer window, not more wake-ups). */
Test(io_ready, the_io_thread_of_an_idle_scheduler_wakes_about_20_times_a_second, .timeout = 120)
{
    coro_sched_t *s = mk(2);
    int sv[2];
    struct idler x;
    struct timespec ts = { 0, 10 * 1000000L };
    struct task_counts io0, io1, w0, w1;
    long rate = 0;
    int k;
    bool quiet = false;

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    x = (struct idler){ .fd = sv[0] };
    cr_assert_eq(coro_spawn(s, &x.co, idler_body, NULL), 0);
    /* the threads name themselves once they run: on a loaded machine that
     * can take longer than any fixed wait, so wait for the names (bounded
     * by the test's timeout) */
    for (int i = 0; i < 3000; i++) {
        task_counts("coro-io", &io0);
        task_counts("coro-w", &w0);
        if (io0.n == 1 && w0.n == 2)
            break;
        nanosleep(&ts, NULL);
    }
    cr_assert(io0.n == 1 && w0.n == 2, "%d coro-io and %d coro-w threads", io0.n, w0.n);
    ts = (struct timespec){ 1, 0 };
    for (k = 0; k < 30 && !quiet; k++) {
        task_counts("coro-w", &w0);
        task_counts("coro-io", &io0);
        int64_t t0 = mono_ns();
        nanosleep(&ts, NULL);
        task_counts("coro-io", &io1);
        int64_t dt = mono_ns() - t0;
        task_counts("coro-w", &w1);
        quiet = w0.asleep && w1.asleep && w0.all == w1.all;
        rate = (long)((io1.vol - io0.vol) * 1000000000LL / (dt > 0 ? dt : 1));
    }
    cr_assert(quiet, "in none of %d seconds did both workers sleep throughout", k);
    /* about 20 (50 ms naps); 45 before; generous bound between the two */
    cr_assert_lt(rate, 34, "the I/O thread woke %ld times a second while the workers slept", rate);
    cr_assert_eq(write(sv[1], "x", 1), 1);
    cr_assert_eq(join_r(&x.co), 0);
    close(sv[0]);
    close(sv[1]);
    coro_sched_destroy(s);
}
