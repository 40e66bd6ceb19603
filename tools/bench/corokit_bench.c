/* SPDX-License-Identifier: MIT */
/* corokit side of the benchmarks: every design.md section 7 shape, written
 * against the public API only (include/corokit.h).  Same contract as the
 * peers' twins (bench_common.h):
 *     corokit_bench SHAPE|list [WORKERS [ITERS [SIZE]]]
 * WORKERS = coro_sched_config_t.workers (pinned, the default).
 *
 * Frames are got the way docs/guide.md tells users to ("Which frame to use
 * when"): a fire-and-forget job (spawn_many_local, spawn_many_remote(_busy),
 * ping_pong, chained_spawn) gets a fresh frame from coro_frame_alloc for
 * every spawn, and the library gives it back when the job is over; jobs
 * signal their end (a counter and an event), as tokio's and Go's twins do.
 * Jobs that are joined (yield_many, io_pingpong, timers) keep caller-owned
 * frames, and fib embeds its children's frames in a malloc'd block, as its
 * parent awaits them.
 */
#include "bench_common.h"
#include <sched.h>

#include <corokit.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <netinet/in.h>

/* The shapes that need events (sync.h) or I/O and timers (io.h) are built
 * only once the library has those parts; `corokit_bench list` names what
 * this build has, and run.sh runs just those. */
#if defined(__has_include)
#if __has_include(<corokit/sync.h>)
#define BENCH_SYNC 1
#endif
#if __has_include(<corokit/io.h>)
#define BENCH_IO 1
#endif
#endif

/* ---- the parts of the API this file assumes (design.md sections 4-5); if
 * the library spells one differently, adapt it here only ------------------ */
#ifdef BENCH_SYNC
#define EV_INIT(ev) coro_event_init(ev)
#define EV_SET(ev) coro_event_set(ev)
#define EV_WAIT(ev) coro_event_wait((ev), CORO_FOREVER)
#define EV_FINI(ev) coro_event_destroy(ev)
#endif

static const char *const shapes[] = {
    "yield_many", "fib", "fib_fork",
#ifdef BENCH_SYNC
    "spawn_many_local",  "ping_pong",              "chained_spawn", "memory",
    "spawn_many_remote", "spawn_many_remote_busy",
#endif
#ifdef BENCH_IO
    "io_pingpong",       "timers",                 "io_under_load",
    "io_pingpong_64",    "io_busy_50",             "io_busy_500",   "io_busy_2000",
    "udp_pingpong",
#endif
#if defined(BENCH_IO) && defined(BENCH_SYNC)
    "timed_waits",
#endif
    "blocking_roundtrip", "blocking_roundtrip_par",
};

static coro_sched_t *S;
static int W;

static void die(const char *what, long rc)
{
    fprintf(stderr, "corokit_bench: %s: %ld (%s)\n", what, rc,
            rc < 0 ? coro_strerror((int)rc) : "?");
    exit(1);
}

static void spawn(coro_t *co, coro_fn fn, const coro_spawn_opts_t *o)
{
    int rc = coro_spawn(S, co, fn, o);
    if (rc != 0)
        die("coro_spawn", rc);
}

static void join(coro_t *co)
{
    intptr_t r;
    int rc = coro_join(co, &r);
    if (rc < 0)
        die("coro_join", (long)rc);
}

/* coro_frame_alloc's frames are 64-byte aligned; caller-owned ones are
 * put on their own cache lines, as docs/guide.md ("Frame layout") says */
struct empty {
    _Alignas(64) coro_t co;
};


#ifdef BENCH_SYNC
/* ---- spawn_many_local -------------------------------------------------- */
/* the count every job decrements, on a line of its own: beside S and W,
 * which every spawn reads, each decrement would take that line away from
 * the spawner (the twins keep theirs apart too: tbb's on the stack,
 * tokio's and Go's in their own allocations) */
static struct {
    _Alignas(64) atomic_long v;
    char pad[64 - sizeof(atomic_long)];
} rem_;
#define rem (rem_.v)
static coro_event_t done_ev;

static int dec_fn(coro_t *co)
{
    CORO_BEGIN(co);
    if (atomic_fetch_sub_explicit(&rem, 1, memory_order_relaxed) == 1)
        EV_SET(&done_ev);
    CORO_END(co);
}

struct spawner {
    coro_t co;
    long i, n;
};

static int spawner_fn(coro_t *co)
{
    struct spawner *f = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        struct empty *k = coro_frame_alloc(S, sizeof *k);
        if (!k)
            die("coro_frame_alloc", -ENOMEM);
        spawn(&k->co, dec_fn, NULL);
    }
    CORO_AWAIT(co, EV_WAIT(&done_ev));
    CORO_END(co);
}

static int64_t spawn_many_local(long n)
{
    static struct spawner sp;
    atomic_store(&rem, n);
    EV_INIT(&done_ev);
    sp.n = n;
    int64_t t0 = bench_now_ns();
    intptr_t r;
    int rc = coro_block_on(S, &sp.co, spawner_fn, NULL, &r);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0 || r < 0)
        die("coro_block_on", (long)(rc < 0 ? rc : r));
    EV_FINI(&done_ev);
    return t;
}

/* ---- spawn_many_remote(_busy) ------------------------------------------
 * a plain thread spawns n jobs, then waits for all of them: they count
 * down and the last one sets an event (tokio's twin awaits its handles) */
static int64_t spawn_many_remote(long n)
{
    atomic_store(&rem, n);
    EV_INIT(&done_ev);
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        struct empty *k = coro_frame_alloc(S, sizeof *k);
        if (!k)
            die("coro_frame_alloc", -ENOMEM);
        spawn(&k->co, dec_fn, NULL);
    }
    int rc = coro_event_wait_blocking(&done_ev, CORO_FOREVER);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0)
        die("coro_event_wait_blocking", rc);
    EV_FINI(&done_ev);
    return t;
}
#endif /* BENCH_SYNC */

static atomic_int busy_stop;
static struct empty busy[BENCH_BUSY_JOBS];

static int busy_fn(coro_t *co)
{
    CORO_BEGIN(co);
    while (!atomic_load_explicit(&busy_stop, memory_order_relaxed)) {
        CORO_YIELD(co);
        bench_stall();
    }
    CORO_END(co);
}

#ifdef BENCH_SYNC
/* ---- ping_pong ----------------------------------------------------------- */
struct ping;
struct pong {
    coro_t co;
    struct ping *a;
};
struct ping {
    coro_t co;
    coro_event_t e1, e2; /* the two oneshots */
    struct pong *b;
};

static int pong_fn(coro_t *co)
{
    struct pong *b = CORO_SELF(co, struct pong);
    CORO_BEGIN(co);
    CORO_AWAIT(co, EV_WAIT(&b->a->e1));
    EV_SET(&b->a->e2);  /* the last touch of a: it finishes after this */
    CORO_END(co);
}

/* A and its events stay until B is done with them: A leaves after e2 */

static int ping_fn(coro_t *co)
{
    struct ping *a = CORO_SELF(co, struct ping);
    CORO_BEGIN(co);
    EV_INIT(&a->e1);
    EV_INIT(&a->e2);
    a->b = coro_frame_alloc(S, sizeof *a->b);
    if (!a->b)
        die("coro_frame_alloc", -ENOMEM);
    a->b->a = a;
    spawn(&a->b->co, pong_fn, NULL);
    EV_SET(&a->e1);
    CORO_AWAIT(co, EV_WAIT(&a->e2));
    /* B set e2 and touches nothing of ours after that; coro_event_destroy
     * would refuse (-EBUSY) while a waiter is still inside */
    EV_FINI(&a->e1);
    EV_FINI(&a->e2);
    if (atomic_fetch_sub_explicit(&rem, 1, memory_order_relaxed) == 1)
        EV_SET(&done_ev);
    CORO_END(co);
}

static int pinger_fn(coro_t *co)
{
    struct spawner *f = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->n; f->i++) {
        struct ping *a = coro_frame_alloc(S, sizeof *a);
        if (!a)
            die("coro_frame_alloc", -ENOMEM);
        spawn(&a->co, ping_fn, NULL);
    }
    CORO_AWAIT(co, EV_WAIT(&done_ev));
    CORO_END(co);
}

static int64_t ping_pong(long n)
{
    static struct spawner sp;
    atomic_store(&rem, n);
    EV_INIT(&done_ev);
    sp.n = n;
    int64_t t0 = bench_now_ns();
    intptr_t r;
    int rc = coro_block_on(S, &sp.co, pinger_fn, NULL, &r);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0 || r < 0)
        die("coro_block_on", (long)(rc < 0 ? rc : r));
    EV_FINI(&done_ev);
    return t;
}

#endif /* BENCH_SYNC */

/* ---- yield_many ------------------------------------------------------------ */
struct yielder {
    _Alignas(64) coro_t co;
    int i;
};
static struct yielder *yielders;

static int yield_fn(coro_t *co)
{
    struct yielder *y = CORO_SELF(co, struct yielder);
    CORO_BEGIN(co);
    for (y->i = 0; y->i < BENCH_YIELDS; y->i++)
        CORO_YIELD(co);
    CORO_END(co);
}

static int64_t yield_many(long n)
{
    if (!yielders && !(yielders = calloc((size_t)n, sizeof *yielders)))
        die("calloc", -ENOMEM);
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        spawn(&yielders[i].co, yield_fn, NULL);
    for (long i = 0; i < n; i++)
        join(&yielders[i].co);
    return bench_now_ns() - t0;
}

#ifdef BENCH_SYNC
/* ---- chained_spawn -------------------------------------------------------
 * tokio's iter(n): the job for n signals when n == 0, else spawns the job for
 * n - 1.  The chainer is the first job, iter(N): N + 1 jobs in all, as in
 * every twin. */
struct link {
    coro_t co;
    long n;
};

static void spawn_link(long n);

static int link_fn(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    if (l->n == 0)
        EV_SET(&done_ev);
    else
        spawn_link(l->n - 1);
    CORO_END(co);
}

static void spawn_link(long n)
{
    struct link *l = coro_frame_alloc(S, sizeof *l);
    if (!l)
        die("coro_frame_alloc", -ENOMEM);
    l->n = n;
    spawn(&l->co, link_fn, NULL);
}

static int chainer_fn(coro_t *co)
{
    struct spawner *f = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    if (f->n == 0)
        EV_SET(&done_ev);
    else
        spawn_link(f->n - 1);
    CORO_AWAIT(co, EV_WAIT(&done_ev));
    CORO_END(co);
}

static int64_t chained_spawn(long n)
{
    static struct spawner sp;
    EV_INIT(&done_ev);
    sp.n = n;
    int64_t t0 = bench_now_ns();
    intptr_t r;
    int rc = coro_block_on(S, &sp.co, chainer_fn, NULL, &r);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0 || r < 0)
        die("coro_block_on", (long)(rc < 0 ? rc : r));
    EV_FINI(&done_ev);
    return t;
}
#endif /* BENCH_SYNC */

/* ---- fib --------------------------------------------------------------------
 * Each call with n >= 2 spawns two children and awaits both.  The children's
 * frames share one malloc'd block, freed by whichever comes last of the two
 * children's on_exit hooks and the parent (coro_done's contract: a frame must
 * outlive its awaiters' resumption). */
struct fibkids;
struct fib {
    coro_t co;
    long n;
    intptr_t r;
    struct fibkids *kids; /* the block of this call's children */
    struct fibkids *home; /* the block this frame lives in (NULL: root) */
};
struct fibkids {
    atomic_int refs;
    struct fib k[2];
};

static void fibkids_put(struct fibkids *b)
{
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
        free(b);
}

static void fib_exit(coro_t *co)
{
    fibkids_put(CORO_SELF(co, struct fib)->home);
}
static const coro_spawn_opts_t fib_opts = {.on_exit = fib_exit};

static int fib_fn(coro_t *co)
{
    struct fib *f = CORO_SELF(co, struct fib);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    f->kids = calloc(1, sizeof *f->kids);
    if (!f->kids)
        die("calloc", -ENOMEM);
    atomic_init(&f->kids->refs, 3);
    for (int i = 0; i < 2; i++) {
        f->kids->k[i].n = f->n - 1 - i;
        f->kids->k[i].home = f->kids;
        spawn(&f->kids->k[i].co, fib_fn, &fib_opts);
    }
    CORO_AWAIT(co, coro_done(&f->kids->k[0].co));
    f->r = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->kids->k[1].co));
    f->r += CORO_RESULT(co);
    fibkids_put(f->kids);
    CORO_RETURN(co, f->r);
    CORO_END(co);
}

static int64_t fib_bench(long n)
{
    struct fib root = {.n = n};
    int64_t t0 = bench_now_ns();
    intptr_t v;
    int rc = coro_block_on(S, &root.co, fib_fn, NULL, &v);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0 || v < 0 || (n == 27 && v != 196418))
        die("fib result", (long)(rc < 0 ? rc : v));
    return t;
}

/* ---- fib_fork ----------------------------------------------------------------
 * fib again, written with a fork: each call's children are pool frames
 * (coro_frame_alloc) spawned into a coro_fork_t in the parent's frame and
 * joined with CORO_FORK_JOIN, which keeps their frames until it has read
 * their results (docs/guide.md, "Fork-join with results"). */
struct fibf {
    coro_t co;
    long n;
    coro_fork_t fork;
    coro_t *kids[2];
    intptr_t res[2];
};

static int fibf_fn(coro_t *co)
{
    struct fibf *f = CORO_SELF(co, struct fibf);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    coro_fork_init(&f->fork, f->kids, f->res, 2);
    for (int i = 0; i < 2; i++) {
        struct fibf *k = coro_frame_alloc(S, sizeof *k);
        if (!k)
            die("coro_frame_alloc", -ENOMEM);
        k->n = f->n - 1 - i;
        int rc = coro_fork_spawn(&f->fork, S, &k->co, fibf_fn, NULL);
        if (rc < 0)
            die("coro_fork_spawn", rc);
    }
    CORO_FORK_JOIN(co, &f->fork);
    if (CORO_RESULT(co) < 0)
        die("CORO_FORK_JOIN", (long)CORO_RESULT(co));
    CORO_RETURN(co, f->res[0] + f->res[1]);
    CORO_END(co);
}

static int64_t fib_fork_bench(long n)
{
    static struct fibf root;
    root.n = n;
    int64_t t0 = bench_now_ns();
    intptr_t v;
    int rc = coro_block_on(S, &root.co, fibf_fn, NULL, &v);
    int64_t t = bench_now_ns() - t0;
    if (rc < 0 || v < 0 || (n == 27 && v != 196418))
        die("fib result", (long)(rc < 0 ? rc : v));
    return t;
}

#ifdef BENCH_IO
/* ---- io_pingpong -------------------------------------------------------- */
struct bouncer {
    coro_t co;
    int fd, first; /* first: writes before it reads */
    long i, n;
    char b;
};
static struct bouncer io_a, io_b;

static int bounce_fn(coro_t *co)
{
    struct bouncer *x = CORO_SELF(co, struct bouncer);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->first) {
            CORO_AWAIT(co, coro_write(x->fd, &x->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                die("coro_write", (long)CORO_RESULT(co));
        }
        CORO_AWAIT(co, coro_read(x->fd, &x->b, 1, CORO_FOREVER));
        if (CORO_RESULT(co) != 1)
            die("coro_read", (long)CORO_RESULT(co));
        if (!x->first) {
            CORO_AWAIT(co, coro_write(x->fd, &x->b, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                die("coro_write", (long)CORO_RESULT(co));
        }
    }
    CORO_END(co);
}

static int64_t io_pingpong(long n)
{
    if (!io_a.n) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
            die("socketpair", -1);
        io_a.fd = sv[0], io_a.first = 1;
        io_b.fd = sv[1], io_b.first = 0;
    }
    io_a.n = io_b.n = n;
    int64_t t0 = bench_now_ns();
    spawn(&io_a.co, bounce_fn, NULL);
    spawn(&io_b.co, bounce_fn, NULL);
    join(&io_a.co);
    join(&io_b.co);
    return bench_now_ns() - t0;
}

/* ---- io_pingpong_64 ----------------------------------------------------------
 * BENCH_IO_PAIRS socketpair pairs at once, n / BENCH_IO_PAIRS round trips
 * each: readiness of many fds per epoll_wait, wake-ups spread over the
 * workers */
static struct bouncer io_many[2 * BENCH_IO_PAIRS];

static int64_t io_pingpong_64(long n)
{
    long per = n / BENCH_IO_PAIRS > 0 ? n / BENCH_IO_PAIRS : 1;
    if (!io_many[0].n) {
        for (int p = 0; p < BENCH_IO_PAIRS; p++) {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
                die("socketpair", -1);
            io_many[2 * p].fd = sv[0], io_many[2 * p].first = 1;
            io_many[2 * p + 1].fd = sv[1], io_many[2 * p + 1].first = 0;
        }
    }
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < 2 * BENCH_IO_PAIRS; i++) {
        io_many[i].n = per;
        spawn(&io_many[i].co, bounce_fn, NULL);
    }
    for (int i = 0; i < 2 * BENCH_IO_PAIRS; i++)
        join(&io_many[i].co);
    return bench_now_ns() - t0;
}

/* ---- udp_pingpong ------------------------------------------------------------
 * two jobs bounce one BENCH_UDP_BYTES datagram between two unconnected UDP
 * sockets on 127.0.0.1, n round trips: each sends with coro_sendto to the
 * other's address and receives with coro_recvfrom (the sender's address
 * taken, as an echo server takes it) */
struct udp_end {
    coro_t co;
    int fd, first;
    long i, n;
    coro_sockaddr_t peer, from;
    char b[BENCH_UDP_BYTES];
};
static struct udp_end udp_a, udp_b;

static int udp_fn(coro_t *co)
{
    struct udp_end *x = CORO_SELF(co, struct udp_end);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->first) {
            CORO_AWAIT(co, coro_sendto(x->fd, x->b, sizeof x->b, &x->peer, CORO_FOREVER));
            if (CORO_RESULT(co) != (intptr_t)sizeof x->b)
                die("coro_sendto", (long)CORO_RESULT(co));
        }
        CORO_AWAIT(co, coro_recvfrom(x->fd, x->b, sizeof x->b, &x->from, CORO_FOREVER));
        if (CORO_RESULT(co) != (intptr_t)sizeof x->b)
            die("coro_recvfrom", (long)CORO_RESULT(co));
        if (!x->first) {
            CORO_AWAIT(co, coro_sendto(x->fd, x->b, sizeof x->b, &x->from, CORO_FOREVER));
            if (CORO_RESULT(co) != (intptr_t)sizeof x->b)
                die("coro_sendto", (long)CORO_RESULT(co));
        }
    }
    CORO_END(co);
}

static int udp_bound(coro_sockaddr_t *self)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    self->len = sizeof self->addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&in, sizeof in) != 0 ||
        getsockname(fd, (struct sockaddr *)&self->addr, &self->len) != 0)
        die("udp socket", -1);
    return fd;
}

static int64_t udp_pingpong(long n)
{
    if (!udp_a.n) {
        udp_a.fd = udp_bound(&udp_b.peer), udp_a.first = 1;
        udp_b.fd = udp_bound(&udp_a.peer), udp_b.first = 0;
    }
    udp_a.n = udp_b.n = n;
    int64_t t0 = bench_now_ns();
    spawn(&udp_a.co, udp_fn, NULL);
    spawn(&udp_b.co, udp_fn, NULL);
    join(&udp_a.co);
    join(&udp_b.co);
    return bench_now_ns() - t0;
}

/* ---- io_busy_H -----------------------------------------------------------------
 * BENCH_BUSY_PAIRS socketpair pairs ping-pong BENCH_BUSY_TRIPS round trips
 * each, beside one CPU-bound job per worker that works H us between
 * yields (CORO_YIELD), pinned to that worker's CPU, so that every worker
 * is busy all along.  Each message is the writer's clock (8 bytes): the
 * reader records write -> reader running with the data.  Reported: ns for
 * all round trips (ns=) and the p99 of those hops (p99_late_ns=). */
struct busy_pair_end {
    coro_t co;
    int fd, first, i, n;
    size_t got;
    int64_t stamp, *lat;
};
struct cpu_hog {
    coro_t co;
    int64_t h_ns;
};
static struct busy_pair_end bp[2 * BENCH_BUSY_PAIRS];
static struct cpu_hog hogs[64];
static atomic_int hog_stop;

static int hog_fn(coro_t *co)
{
    struct cpu_hog *h = CORO_SELF(co, struct cpu_hog);
    CORO_BEGIN(co);
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed)) {
        {
            int64_t t0 = bench_now_ns();
            while (bench_now_ns() - t0 < h->h_ns)
                ;
        }
        CORO_YIELD(co);
    }
    CORO_END(co);
}

static int busy_end_fn(coro_t *co)
{
    struct busy_pair_end *x = CORO_SELF(co, struct busy_pair_end);
    CORO_BEGIN(co);
    for (x->i = 0; x->i < x->n; x->i++) {
        if (x->first) {
            x->stamp = bench_now_ns();
            CORO_AWAIT(co, coro_write(x->fd, &x->stamp, sizeof x->stamp, CORO_FOREVER));
            if (CORO_RESULT(co) != (intptr_t)sizeof x->stamp)
                die("coro_write", (long)CORO_RESULT(co));
        }
        for (x->got = 0; x->got < sizeof x->stamp;) {
            CORO_AWAIT(co, coro_read(x->fd, (char *)&x->stamp + x->got, sizeof x->stamp - x->got,
                                     CORO_FOREVER));
            if (CORO_RESULT(co) <= 0)
                die("coro_read", (long)CORO_RESULT(co));
            x->got += (size_t)CORO_RESULT(co);
        }
        x->lat[x->i] = bench_now_ns() - x->stamp;
        if (!x->first) {
            x->stamp = bench_now_ns();
            CORO_AWAIT(co, coro_write(x->fd, &x->stamp, sizeof x->stamp, CORO_FOREVER));
            if (CORO_RESULT(co) != (intptr_t)sizeof x->stamp)
                die("coro_write", (long)CORO_RESULT(co));
        }
    }
    CORO_END(co);
}

static int64_t io_busy(long trips, int64_t h_us, int64_t *p99)
{
    static int64_t *lat;
    int np = BENCH_BUSY_PAIRS;
    /* BENCH_PAIRS=n (1 to BENCH_BUSY_PAIRS): fewer pairs, to see a
     * wake-up's wait apart from the jobs woken with it (a diagnostic;
     * the twins have no such knob) */
    const char *env = getenv("BENCH_PAIRS");
    if (env && atoi(env) >= 1 && atoi(env) <= BENCH_BUSY_PAIRS)
        np = atoi(env);
    if (!lat) {
        if (!(lat = calloc((size_t)(2 * np) * (size_t)trips, sizeof *lat)))
            die("calloc", -ENOMEM);
        for (int p = 0; p < np; p++) {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
                die("socketpair", -1);
            bp[2 * p].fd = sv[0], bp[2 * p].first = 1;
            bp[2 * p + 1].fd = sv[1], bp[2 * p + 1].first = 0;
        }
    }
    /* one hog pinned to each worker's CPU */
    atomic_store(&hog_stop, 0);
    int nh = 0;
    for (int i = 0; i < W && i < 64; i++) {
        coro_worker_stats_t ws;
        coro_cpuset_t cpu;
        if (coro_sched_worker_stats(S, i, &ws) != 0 || ws.cpu < 0)
            continue;
        coro_cpuset_zero(&cpu);
        coro_cpuset_add(&cpu, ws.cpu);
        coro_spawn_opts_t o = { .affinity = &cpu };
        hogs[nh].h_ns = h_us * 1000;
        spawn(&hogs[nh].co, hog_fn, &o);
        nh++;
    }
    /* let every hog start: the pairs then meet busy workers */
    usleep(2000);
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < 2 * np; i++) {
        bp[i].n = (int)trips;
        bp[i].lat = lat + (size_t)i * (size_t)trips;
        spawn(&bp[i].co, busy_end_fn, NULL);
    }
    for (int i = 0; i < 2 * np; i++)
        join(&bp[i].co);
    int64_t t = bench_now_ns() - t0;
    atomic_store(&hog_stop, 1);
    for (int i = 0; i < nh; i++)
        join(&hogs[i].co);
    *p99 = bench_p99(lat, 2 * np * (int)trips);
    return t;
}

/* ---- io_under_load ---------------------------------------------------------
 * Every worker runs back-to-back CPU-bound jobs of 5 ms that never await
 * (each spawns the next of its chain before it ends); a HIGH job reads a
 * socketpair that a plain thread writes every 1 ms (8 bytes: the write's
 * CLOCK_MONOTONIC time).  Reported: p50 (ns=) and p99 (p99_late_ns=) of
 * write -> the HIGH job running with the data. */
#define UL_JOB_NS 5000000LL
#define UL_CHAIN 8              /* frames per chain: a frame is spawned again 8 jobs later */
struct ul_busy {
    coro_t co;
    int chain, k;
};
static struct ul_busy ul_busy[64][UL_CHAIN];
static atomic_int ul_stop, ul_live;


static int ul_busy_fn(coro_t *co)
{
    struct ul_busy *b = CORO_SELF(co, struct ul_busy);
    CORO_BEGIN(co);
    int64_t t0 = bench_now_ns();
    while (bench_now_ns() - t0 < UL_JOB_NS)
        ;
    if (!atomic_load_explicit(&ul_stop, memory_order_relaxed)) {
        struct ul_busy *nx = &ul_busy[b->chain][(b->k + 1) % UL_CHAIN];
        nx->chain = b->chain;
        nx->k = (b->k + 1) % UL_CHAIN;
        spawn(&nx->co, ul_busy_fn, NULL);
    } else {
        atomic_fetch_sub(&ul_live, 1);
    }
    CORO_END(co);
}

struct ul_reader {
    coro_t co;
    int fd, n, i;
    size_t got;
    int64_t stamp, *lat;
};
static struct ul_reader ul_rd;

static int ul_reader_fn(coro_t *co)
{
    struct ul_reader *r = CORO_SELF(co, struct ul_reader);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->n; r->i++) {
        for (r->got = 0; r->got < sizeof r->stamp;) {
            CORO_AWAIT(co, coro_read(r->fd, (char *)&r->stamp + r->got, sizeof r->stamp - r->got,
                                     CORO_FOREVER));
            if (CORO_RESULT(co) <= 0)
                die("coro_read", (long)CORO_RESULT(co));
            r->got += (size_t)CORO_RESULT(co);
        }
        r->lat[r->i] = bench_now_ns() - r->stamp;
    }
    CORO_END(co);
}

struct ul_writer {
    int fd, n;
};

static void *ul_writer_main(void *arg)
{
    struct ul_writer *w = arg;
    for (int i = 0; i < w->n; i++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
        int64_t t = bench_now_ns();
        if (write(w->fd, &t, sizeof t) != (ssize_t)sizeof t)
            die("write", -1);
    }
    return NULL;
}

static int64_t io_under_load(long n, int64_t *p99)
{
    static int sv[2] = { -1, -1 };
    static int64_t *lat;
    if (sv[0] < 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair", -1);
    if (!lat && !(lat = calloc((size_t)n, sizeof *lat)))
        die("calloc", -1);
    int chains = W > 0 ? W : 1;
    atomic_store(&ul_stop, 0);
    atomic_store(&ul_live, chains);
    for (int c = 0; c < chains && c < 64; c++) {
        ul_busy[c][0].chain = c;
        ul_busy[c][0].k = 0;
        spawn(&ul_busy[c][0].co, ul_busy_fn, NULL);
    }
    ul_rd = (struct ul_reader){ .fd = sv[0], .n = (int)n, .lat = lat };
    static const coro_spawn_opts_t high = { .priority = CORO_PRIO_HIGH };
    spawn(&ul_rd.co, ul_reader_fn, &high);
    struct ul_writer wr = { sv[1], (int)n };
    pthread_t t;
    pthread_create(&t, NULL, ul_writer_main, &wr);
    pthread_join(t, NULL);
    join(&ul_rd.co);
    atomic_store(&ul_stop, 1);
    while (atomic_load(&ul_live) > 0)
        usleep(1000);
    usleep(20000);      /* the last jobs return from their bodies */
    *p99 = bench_p99(lat, (int)n);  /* sorts lat */
    return lat[n / 2];
}

/* ---- timers ----------------------------------------------------------------- */
struct sleeper {
    coro_t co;
    int i;
    int64_t deadline;
};
static struct sleeper *sleepers;
static int64_t *late;

static int sleep_fn(coro_t *co)
{
    struct sleeper *s = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    {
        int64_t d = bench_timer_ns(s->i);
        s->deadline = bench_now_ns() + d;
        CORO_AWAIT(co, coro_sleep(d));
    }
    late[s->i] = bench_now_ns() - s->deadline;
    CORO_END(co);
}

static int64_t timers(long n, int64_t *p99)
{
    if (!sleepers) {
        sleepers = calloc((size_t)n, sizeof *sleepers);
        late = calloc((size_t)n, sizeof *late);
        if (!sleepers || !late)
            die("calloc", -ENOMEM);
        for (long i = 0; i < n; i++)
            sleepers[i].i = (int)i;
    }
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++)
        spawn(&sleepers[i].co, sleep_fn, NULL);
    for (long i = 0; i < n; i++)
        join(&sleepers[i].co);
    int64_t t = bench_now_ns() - t0;
    *p99 = bench_p99(late, (int)n);
    return t;
}

#endif /* BENCH_IO */

#if defined(BENCH_IO) && defined(BENCH_SYNC)
/* ---- timed_waits -----------------------------------------------------------------
 * BENCH_TIMED_JOBS jobs in pairs; each waits BENCH_TIMED_WAITS times on its
 * own event with a timeout of BENCH_TIMED_NS, which its partner sets:
 * reset own, set the partner's, wait own.  All the waits are armed at
 * once and end by the event, never the timeout: the cost of starting and
 * ending a timed wait under load (the timer added and removed). */
struct tw_job {
    _Alignas(64) coro_t co;
    coro_event_t ev;
    struct tw_job *peer;
    int i, first;
};
static struct tw_job *tw;

static int tw_fn(coro_t *co)
{
    struct tw_job *j = CORO_SELF(co, struct tw_job);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < BENCH_TIMED_WAITS; j->i++) {
        if (j->first || j->i > 0) {
            coro_event_reset(&j->ev);
            coro_event_set(&j->peer->ev);
        }
        CORO_AWAIT(co, coro_event_wait(&j->ev, BENCH_TIMED_NS));
        if (CORO_RESULT(co) != 0)
            die("coro_event_wait", (long)CORO_RESULT(co));
    }
    if (!j->first)  /* the first's last wait */
        coro_event_set(&j->peer->ev);
    CORO_END(co);
}

static int64_t timed_waits(long n)
{
    n &= ~1L;
    if (!tw && !(tw = aligned_alloc(64, (size_t)n * sizeof *tw)))
        die("aligned_alloc", -ENOMEM);
    memset(tw, 0, (size_t)n * sizeof *tw);
    for (long i = 0; i < n; i++) {
        EV_INIT(&tw[i].ev);
        tw[i].peer = &tw[i ^ 1];
        tw[i].first = (i & 1) == 0;
    }
    int64_t t0 = bench_now_ns();
    for (long i = n - 1; i >= 0; i--)   /* the second of each pair waits first */
        spawn(&tw[i].co, tw_fn, NULL);
    for (long i = 0; i < n; i++)
        join(&tw[i].co);
    int64_t t = bench_now_ns() - t0;
    for (long i = 0; i < n; i++)
        EV_FINI(&tw[i].ev);
    return t;
}
#endif

/* ---- blocking_roundtrip(_par) ------------------------------------------------
 * an empty call through the blocking pool and back: one job makes n calls
 * of coro_blocking one after the other (blocking_roundtrip), or
 * BENCH_BLOCKING_JOBS jobs make n / BENCH_BLOCKING_JOBS each at once
 * (blocking_roundtrip_par); joined, so caller-owned frames */
struct brt {
    _Alignas(64) coro_t co;
    long i, n;
};
static struct brt brt[BENCH_BLOCKING_JOBS];

static intptr_t empty_call(void *arg)
{
    __asm__ volatile("" ::: "memory");
    return (intptr_t)arg;
}

static int brt_fn(coro_t *co)
{
    struct brt *b = CORO_SELF(co, struct brt);
    CORO_BEGIN(co);
    for (b->i = 0; b->i < b->n; b->i++) {
        CORO_AWAIT(co, coro_blocking(empty_call, (void *)b->i));
        if (CORO_RESULT(co) != b->i)
            die("coro_blocking", (long)CORO_RESULT(co));
    }
    CORO_END(co);
}

static int64_t brt_run(long n, int jobs)
{
    int64_t t0 = bench_now_ns();
    for (int k = 0; k < jobs; k++) {
        brt[k].n = n / jobs;
        spawn(&brt[k].co, brt_fn, NULL);
    }
    for (int k = 0; k < jobs; k++)
        join(&brt[k].co);
    return bench_now_ns() - t0;
}

static int64_t blocking_roundtrip(long n)
{
    return brt_run(n, 1);
}

static int64_t blocking_roundtrip_par(long n)
{
    return brt_run(n, BENCH_BLOCKING_JOBS);
}

#ifdef BENCH_SYNC
/* ---- memory ------------------------------------------------------------------
 * n jobs each count themselves ready, then wait on one event.  Their frames
 * come from coro_frame_alloc and are counted: RSS is read before the
 * first one is allocated. */
static atomic_long ready;
static coro_event_t gate;

static int parked_fn(coro_t *co)
{
    CORO_BEGIN(co);
    atomic_fetch_add_explicit(&ready, 1, memory_order_relaxed);
    CORO_AWAIT(co, EV_WAIT(&gate));
    if (atomic_fetch_sub_explicit(&rem, 1, memory_order_relaxed) == 1)
        EV_SET(&done_ev);
    CORO_END(co);
}

static void memory(long n)
{
    EV_INIT(&gate);
    EV_INIT(&done_ev);
    atomic_store(&ready, 0);
    atomic_store(&rem, n);
    long rss0 = bench_rss_bytes();
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        struct empty *f = coro_frame_alloc(S, sizeof *f);
        if (!f)
            die("coro_frame_alloc", -ENOMEM);
        spawn(&f->co, parked_fn, NULL);
    }
    while (atomic_load_explicit(&ready, memory_order_relaxed) < n)
        sched_yield();
    int64_t t = bench_now_ns() - t0;
    usleep(10000); /* let the last ones suspend */
    long rss1 = bench_rss_bytes();
    EV_SET(&gate);
    int rc = coro_event_wait_blocking(&done_ev, CORO_FOREVER);
    if (rc < 0)
        die("coro_event_wait_blocking", rc);
    EV_FINI(&gate);
    EV_FINI(&done_ev);
    printf("bench=memory system=corokit workers=%d ns=%lld bytes_per_job=%ld\n", W,
           (long long)(t / n), (rss1 - rss0) / n);
    fflush(stdout);
}

#endif /* BENCH_SYNC */

int main(int argc, char **argv)
{
    bench_args_t a;
    int rc = BENCH_START(argc, argv, &a, shapes);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    const char *sh = a.shape;
    long size = a.size;
    int64_t (*fn)(long) = NULL;
    int is_timers = 0, is_memory = 0, is_busy = 0;
    if (0)
        ;
#ifdef BENCH_SYNC
    else if (strcmp(sh, "spawn_many_local") == 0)
        fn = spawn_many_local, size = size > 0 ? size : BENCH_NUM_SPAWN;
    else if (strcmp(sh, "ping_pong") == 0)
        fn = ping_pong, size = size > 0 ? size : BENCH_PINGS;
    else if (strcmp(sh, "chained_spawn") == 0)
        fn = chained_spawn, size = size > 0 ? size : BENCH_CHAIN;
    else if (strcmp(sh, "memory") == 0)
        is_memory = 1, size = size > 0 ? size : BENCH_MEM_JOBS;
    else if (strcmp(sh, "spawn_many_remote") == 0)
        fn = spawn_many_remote, size = size > 0 ? size : BENCH_NUM_SPAWN;
    else if (strcmp(sh, "spawn_many_remote_busy") == 0)
        fn = spawn_many_remote, size = size > 0 ? size : BENCH_NUM_SPAWN, is_busy = 1;
#endif
#ifdef BENCH_IO
    else if (strcmp(sh, "io_pingpong") == 0)
        fn = io_pingpong, size = size > 0 ? size : BENCH_IO_TRIPS;
    else if (strcmp(sh, "timers") == 0)
        is_timers = 1, size = size > 0 ? size : BENCH_TIMERS;
    else if (strcmp(sh, "io_under_load") == 0)
        is_timers = 2, size = size > 0 ? size : 200;
    else if (strcmp(sh, "io_pingpong_64") == 0)
        fn = io_pingpong_64, size = size > 0 ? size : BENCH_IO_TRIPS;
    else if (strcmp(sh, "udp_pingpong") == 0)
        fn = udp_pingpong, size = size > 0 ? size : BENCH_IO_TRIPS;
    else if (strncmp(sh, "io_busy_", 8) == 0 && atol(sh + 8) > 0)
        is_timers = 3, size = size > 0 ? size : BENCH_BUSY_TRIPS;
#endif
#if defined(BENCH_IO) && defined(BENCH_SYNC)
    else if (strcmp(sh, "timed_waits") == 0)
        fn = timed_waits, size = size > 0 ? size : BENCH_TIMED_JOBS;
#endif
    else if (strcmp(sh, "blocking_roundtrip") == 0)
        fn = blocking_roundtrip, size = size > 0 ? size : BENCH_BLOCKING_CALLS;
    else if (strcmp(sh, "blocking_roundtrip_par") == 0)
        fn = blocking_roundtrip_par, size = size > 0 ? size : BENCH_BLOCKING_CALLS;
    else if (strcmp(sh, "yield_many") == 0)
        fn = yield_many, size = size > 0 ? size : BENCH_YIELD_TASKS;
    else if (strcmp(sh, "fib") == 0)
        fn = fib_bench, size = size > 0 ? size : BENCH_FIB_N;
    else if (strcmp(sh, "fib_fork") == 0)
        fn = fib_fork_bench, size = size > 0 ? size : BENCH_FIB_N;
    else {
        fprintf(stderr, "corokit_bench: unknown shape %s\n", sh);
        return 2;
    }

    W = a.workers;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    cfg.workers = W;
    rc = coro_sched_create(&S, &cfg);
    if (rc != 0)
        die("coro_sched_create", rc);
    if (is_busy)
        for (int i = 0; i < BENCH_BUSY_JOBS; i++)
            spawn(&busy[i].co, busy_fn, NULL);

    if (is_memory) {
#ifdef BENCH_SYNC
        for (int i = 0; i < a.iters; i++)
            memory(size);
#endif
    } else if (is_timers == 3) {
#ifdef BENCH_IO
        int64_t p99, h = atol(sh + 8);
        io_busy(size, h, &p99); /* warm-up */
        for (int i = 0; i < a.iters; i++) {
            int64_t t = io_busy(size, h, &p99);
            printf("bench=%s system=corokit workers=%d ns=%lld p99_late_ns=%lld\n", sh, W,
                   (long long)t, (long long)p99);
            fflush(stdout);
        }
#endif
    } else if (is_timers == 2) {
#ifdef BENCH_IO
        int64_t p99;
        io_under_load(size, &p99); /* warm-up */
        for (int i = 0; i < a.iters; i++) {
            int64_t t = io_under_load(size, &p99);
            printf("bench=io_under_load system=corokit workers=%d ns=%lld p99_late_ns=%lld\n", W,
                   (long long)t, (long long)p99);
            fflush(stdout);
        }
#endif
    } else if (is_timers) {
#ifdef BENCH_IO
        int64_t p99;
        timers(size, &p99); /* warm-up */
        for (int i = 0; i < a.iters; i++) {
            int64_t t = timers(size, &p99);
            printf("bench=timers system=corokit workers=%d ns=%lld p99_late_ns=%lld\n", W,
                   (long long)t, (long long)p99);
            fflush(stdout);
        }
#endif
    } else {
        fn(size); /* warm-up */
        for (int i = 0; i < a.iters; i++)
            bench_report(sh, "corokit", W, fn(size));
    }

    if (is_busy) {
        atomic_store(&busy_stop, 1);
        for (int i = 0; i < BENCH_BUSY_JOBS; i++)
            join(&busy[i].co);
    }
    if (getenv("BENCH_STATS")) {
        /* where the jobs ran: BENCH_STATS=1 ./corokit_bench SHAPE ... */
        for (int i = 0; i < W; i++) {
            coro_worker_stats_t ws;
            if (coro_sched_worker_stats(S, i, &ws) == 0)
                fprintf(stderr,
                        "worker %d: run %llu steals %llu stolen %llu parks %llu wakeups %llu\n", i,
                        (unsigned long long)ws.jobs_run, (unsigned long long)ws.steals,
                        (unsigned long long)ws.stolen, (unsigned long long)ws.parks,
                        (unsigned long long)ws.wakeups);
        }
    }
    rc = coro_sched_destroy(S);
    if (rc != 0)
        die("coro_sched_destroy", rc);
    return 0;
}
