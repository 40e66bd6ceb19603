/* SPDX-License-Identifier: MIT */
/* demo: what corokit does, in one run.
 *   1. one pinned worker per CPU;
 *   2. jobs with CPU masks run only where their mask allows;
 *   3. priorities: HIGH jobs overtake queued NORMAL ones;
 *   4. fork-join: fib(22), each call spawning two children and awaiting both;
 *   5. I/O (idle workers wait in epoll, the I/O thread when all are busy):
 *      a timer, and two jobs bouncing a byte
 *      over a socketpair;
 *   6. fire-and-forget jobs in pool frames (coro_frame_alloc), a job
 *      cancelled in the middle of a 10 s sleep (coro_cancel), a blocking
 *      call on the blocking pool (coro_blocking);
 *   7. the per-worker counters;
 *   8. a traced scheduler (coro_sched_config_t.trace_events): a small mix
 *      of priorities, a pinned class, sleeps and a wake from this thread,
 *      written as a Chrome trace to the file named on the command line
 *      (coro_sched_trace_write), which tools/timeline draws.
 * Run it with `make demo` (it writes build/demo-trace.json and
 * build/demo-timeline.png). */
#define _GNU_SOURCE
#include <corokit.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- 2. affinity -------------------------------------------------------- */
struct where {
    coro_t co;
    const coro_cpuset_t *mask;
    int cpu;
};

static int where(coro_t *co)
{
    struct where *w = CORO_SELF(co, struct where);
    CORO_BEGIN(co);
    w->cpu = sched_getcpu();
    CORO_RETURN(co, coro_cpuset_has(w->mask, w->cpu));
    CORO_END(co);
}

/* ---- 3. priorities ------------------------------------------------------ */
static long next_rank;

struct ranked {
    coro_t co;
    long rank;
};

static int ranked(coro_t *co)
{
    struct ranked *r = CORO_SELF(co, struct ranked);
    CORO_BEGIN(co);
    r->rank = __atomic_fetch_add(&next_rank, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

struct gate {
    coro_t co;
    int holding, open;
};

static int hold(coro_t *co)
{
    struct gate *g = CORO_SELF(co, struct gate);
    CORO_BEGIN(co);
    __atomic_store_n(&g->holding, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE))
        sched_yield();          /* a job that never awaits keeps its worker */
    CORO_END(co);
}

/* ---- 4. fork-join --------------------------------------------------------- */
struct fib {
    coro_t co;
    int n;
    struct fib *kids;       /* two child frames, allocated by the parent */
    long a;
};

static int fib(coro_t *co)
{
    struct fib *f = CORO_SELF(co, struct fib);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    f->kids = calloc(2, sizeof *f->kids);
    if (!f->kids)
        CORO_RETURN(co, -ENOMEM);
    f->kids[0].n = f->n - 1;
    f->kids[1].n = f->n - 2;
    coro_spawn(coro_sched_current(), &f->kids[0].co, fib, NULL);
    coro_spawn(coro_sched_current(), &f->kids[1].co, fib, NULL);
    CORO_AWAIT(co, coro_done(&f->kids[0].co));
    f->a = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->kids[1].co));
    f->a += CORO_RESULT(co);
    free(f->kids);
    CORO_RETURN(co, f->a);
    CORO_END(co);
}

/* ---- 5. I/O ---------------------------------------------------------------- */
struct napper {
    coro_t co;
    int64_t asked, slept;
};

static int napper(coro_t *co)
{
    struct napper *n = CORO_SELF(co, struct napper);
    CORO_BEGIN(co);
    n->slept = coro_now();
    CORO_AWAIT(co, coro_sleep(n->asked));          /* the worker runs others meanwhile */
    n->slept = coro_now() - n->slept;
    CORO_END(co);
}

struct bouncer {
    coro_t co;
    int fd, i, rounds, first;
    char byte;
};

static int bouncer(coro_t *co)
{
    struct bouncer *b = CORO_SELF(co, struct bouncer);
    CORO_BEGIN(co);
    for (b->i = 0; b->i < b->rounds; b->i++) {
        if (b->first) {
            CORO_AWAIT(co, coro_write(b->fd, &b->byte, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
        CORO_AWAIT(co, coro_read(b->fd, &b->byte, 1, CORO_FOREVER));
        if (CORO_RESULT(co) != 1)
            CORO_RETURN(co, -1);
        if (!b->first) {
            CORO_AWAIT(co, coro_write(b->fd, &b->byte, 1, CORO_FOREVER));
            if (CORO_RESULT(co) != 1)
                CORO_RETURN(co, -1);
        }
    }
    CORO_END(co);
}

/* 6: a fire-and-forget job in a pool frame, a job to cancel, a blocking call */
static int ff_count;

static int ff_job(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&ff_count, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

static int long_sleep(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(10LL * 1000 * 1000 * 1000));     /* 10 s */
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

static intptr_t blocking_fn(void *arg)
{
    usleep(20 * 1000);                  /* blocks a pool thread, not a worker */
    return (intptr_t)arg;
}

static int blocking_job(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(blocking_fn, (void *)(intptr_t)42));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* ---- 8. a trace ------------------------------------------------------------ */
struct worky {
    coro_t co;
    double spin_ms;         /* busy time per step */
    int steps;
    int64_t nap_ns;         /* sleep between steps; 0 = yield */
    coro_event_t *ev;       /* await it first, if set */
    int i;
};

static void spin_for(double ms)
{
    double end = now_ms() + ms;
    while (now_ms() < end)
        ;
}

static int worky(coro_t *co)
{
    struct worky *w = CORO_SELF(co, struct worky);
    CORO_BEGIN(co);
    if (w->ev)
        CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    for (w->i = 0; w->i < w->steps; w->i++) {
        spin_for(w->spin_ms);
        if (w->nap_ns)
            CORO_AWAIT(co, coro_sleep(w->nap_ns));
        else
            CORO_YIELD(co);
    }
    CORO_END(co);
}

static int trace_demo(const char *path, int cpu)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    coro_event_t ev;
    coro_cpuset_t pin;
    enum { NJ = 14 };
    struct worky w[NJ] = { 0 };
    int rc;

    c.trace_events = 1 << 14;       /* the last 16,384 events of each thread */
    if ((rc = coro_sched_create(&s, &c)) < 0)
        return rc;
    coro_event_init(&ev);
    coro_cpuset_zero(&pin);
    coro_cpuset_add(&pin, cpu);
    for (int i = 0; i < NJ; i++) {
        coro_spawn_opts_t o = { 0 };
        if (i < 6) {            /* NORMAL, any CPU: work, then a 1 ms sleep */
            w[i] = (struct worky){ .spin_ms = 0.4, .steps = 6, .nap_ns = 1000000 };
        } else if (i < 9) {     /* HIGH, pinned to one CPU: short steps that yield */
            w[i] = (struct worky){ .spin_ms = 0.15, .steps = 8 };
            o.priority = CORO_PRIO_HIGH;
            o.affinity = &pin;
        } else if (i < 13) {    /* LOW, any CPU: long steps that yield */
            w[i] = (struct worky){ .spin_ms = 0.8, .steps = 4 };
            o.priority = CORO_PRIO_LOW;
        } else {                /* waits for this thread's coro_event_set */
            w[i] = (struct worky){ .spin_ms = 0.5, .steps = 2, .ev = &ev };
        }
        coro_spawn(s, &w[i].co, worky, &o);
    }
    intptr_t res;
    for (int i = 0; i < NJ - 1; i++)
        coro_join(&w[i].co, &res);
    coro_event_set(&ev);
    coro_join(&w[NJ - 1].co, &res);
    rc = path ? coro_sched_trace_write(s, path) : 0;
    coro_sched_destroy(s);
    coro_event_destroy(&ev);
    return rc;
}

int main(int argc, char **argv)
{
    coro_sched_t *s;
    coro_sched_stats_t *st = malloc(sizeof *st);
    int rc, ok = 1;

    /* ---- 1. workers ---- */
    if (!st || (rc = coro_sched_create(&s, NULL)) < 0) {
        fprintf(stderr, "coro_sched_create failed\n");
        return 1;
    }
    coro_sched_stats(s, st);
    printf("1. %d workers, one per usable CPU, pinned (named coro-w<cpu>)\n", st->workers);

    /* ---- 2. affinity ---- */
    enum { N = 20000 };
    struct where *ws = calloc(N, sizeof *ws);
    coro_cpuset_t masks[2];
    coro_worker_stats_t w0, w1;
    coro_sched_worker_stats(s, 0, &w0);
    coro_sched_worker_stats(s, st->workers > 1, &w1);
    int cpus[2] = { w0.cpu, w1.cpu };
    for (int m = 0; m < 2; m++) {
        coro_cpuset_zero(&masks[m]);
        coro_cpuset_add(&masks[m], cpus[m]);
    }
    double t0 = now_ms();
    for (int i = 0; i < N; i++) {
        ws[i].mask = &masks[i % 2];
        coro_spawn_opts_t o = { .affinity = ws[i].mask };
        coro_spawn(s, &ws[i].co, where, &o);
    }
    int inside = 0, per_cpu[2] = { 0, 0 };
    for (int i = 0; i < N; i++) {
        intptr_t r = 0;
        inside += coro_join(&ws[i].co, &r) == 0 && r == 1;
        per_cpu[i % 2] += ws[i].cpu == cpus[i % 2];
    }
    printf("2. %d jobs masked to CPU %d or CPU %d: %d ran inside their mask "
           "(%d on CPU %d, %d on CPU %d), %.1f ms\n",
           N, cpus[0], cpus[1], inside, per_cpu[0], cpus[0], per_cpu[1], cpus[1], now_ms() - t0);
    ok &= inside == N;
    free(ws);

    /* ---- 3. priorities ---- */
    coro_sched_config_t one = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s1;
    one.workers = 1;
    coro_sched_create(&s1, &one);
    struct gate g = { 0 };
    struct ranked q[5] = { 0 };
    coro_spawn(s1, &g.co, hold, NULL);          /* keeps the only worker busy */
    while (!__atomic_load_n(&g.holding, __ATOMIC_ACQUIRE))
        sched_yield();
    for (int i = 0; i < 5; i++) {
        coro_spawn_opts_t o = { .priority = i == 4 ? CORO_PRIO_HIGH : CORO_PRIO_LOW };
        coro_spawn(s1, &q[i].co, ranked, &o);
    }
    __atomic_store_n(&g.open, 1, __ATOMIC_RELEASE);
    coro_sched_destroy(s1);
    /* print the jobs in the order they actually ran (by rank), each with
     * its priority and when it was spawned */
    int by_rank[5] = { -1, -1, -1, -1, -1 };
    for (int i = 0; i < 5; i++)
        if (q[i].rank >= 0 && q[i].rank < 5)
            by_rank[q[i].rank] = i;
    printf("3. spawned in this order on a busy worker: LOW, LOW, LOW, LOW, HIGH\n"
           "   they ran in this order:");
    for (int k = 0; k < 5; k++) {
        int i = by_rank[k];
        printf("%s %s (spawned %d%s)", k ? "," : "", i < 0 ? "?" : i == 4 ? "HIGH" : "LOW",
               i + 1, i == 0 ? "st" : i == 1 ? "nd" : i == 2 ? "rd" : "th");
    }
    printf("\n   %s\n", q[4].rank == 0 ? "the HIGH job, spawned last, ran first"
                                       : "the HIGH job did NOT run first");
    ok &= q[4].rank == 0;

    /* ---- 4. fork-join ---- */
    struct fib root = { .n = 22 };
    t0 = now_ms();
    intptr_t r = 0;
    coro_block_on(s, &root.co, fib, NULL, &r);
    printf("4. fib(22) = %ld by spawning %d jobs, %.1f ms\n", (long)r, 57313, now_ms() - t0);
    ok &= r == 17711;

    /* ---- 5. I/O ---- */
    struct napper nap = { .asked = 20 * 1000 * 1000 };
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 1;
    struct bouncer ping = { .fd = sv[0], .rounds = 1000, .first = 1, .byte = 'x' };
    struct bouncer pong = { .fd = sv[1], .rounds = 1000 };
    coro_spawn(s, &nap.co, napper, NULL);
    t0 = now_ms();
    coro_spawn(s, &pong.co, bouncer, NULL);
    coro_spawn(s, &ping.co, bouncer, NULL);
    intptr_t r1 = -1, r2 = -1, rn;
    coro_join(&ping.co, &r1);
    coro_join(&pong.co, &r2);
    double bounce = now_ms() - t0;
    coro_join(&nap.co, &rn);
    close(sv[0]);
    close(sv[1]);
    printf("5. I/O: a 20 ms coro_sleep took %.2f ms; 1,000 socketpair round trips "
           "between two jobs took %.1f ms\n", nap.slept / 1e6, bounce);
    ok &= r1 == 0 && r2 == 0 && nap.slept >= nap.asked;

    /* ---- 6. pool frames, cancel, blocking calls ---- */
    t0 = now_ms();
    int ff_spawned = 0;
    for (int i = 0; i < 1000; i++) {
        coro_t *f = coro_frame_alloc(s, sizeof(coro_t));   /* the library frees it */
        if (f && coro_spawn(s, f, ff_job, NULL) == 0)
            ff_spawned++;
        else
            coro_frame_free(f);
    }
    while (__atomic_load_n(&ff_count, __ATOMIC_ACQUIRE) < ff_spawned)
        sched_yield();
    double ff_ms = now_ms() - t0;
    coro_t sleeper = { 0 }, blocker = { 0 };
    coro_spawn(s, &sleeper, long_sleep, NULL);
    t0 = now_ms();
    coro_cancel(&sleeper);
    intptr_t rc_cancel = 0;
    coro_join(&sleeper, &rc_cancel);      /* the job returns what its sleep gave */
    double cancel_ms = now_ms() - t0;
    t0 = now_ms();
    intptr_t rc_block = 0;
    coro_block_on(s, &blocker, blocking_job, NULL, &rc_block);
    printf("6. %d fire-and-forget jobs in pool frames: %.1f ms; a 10 s sleep cancelled: %s "
           "after %.2f ms; a 20 ms blocking call on the pool: %ld after %.1f ms\n",
           ff_spawned, ff_ms, coro_err_name((int)rc_cancel), cancel_ms, (long)rc_block,
           now_ms() - t0);
    ok &= ff_spawned == 1000 && rc_cancel == -ECANCELED && rc_block == 42;

    /* ---- 7. counters ---- */
    coro_sched_stats(s, st);
    printf("7. worker  cpu  pinned  jobs-run  steals  stolen  parks  io-wakeups\n");
    for (int i = 0; i < st->workers; i++) {
        coro_worker_stats_t w;
        coro_sched_worker_stats(s, i, &w);
        printf("   %6d  %3d  %6s  %8lu  %6lu  %6lu  %5lu  %10lu\n", i, w.cpu,
               w.pinned ? "yes" : "no", (unsigned long)w.jobs_run, (unsigned long)w.steals,
               (unsigned long)w.stolen, (unsigned long)w.parks, (unsigned long)w.io_wakeups);
    }
    coro_worker_stats_t ws1;
    coro_sched_worker_stats(s, st->workers > 1, &ws1);
    int cpu1 = ws1.cpu;
    coro_sched_destroy(s);
    free(st);

    /* ---- 8. a trace ---- */
    const char *tpath = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;    /* not --self-test */
    rc = trace_demo(tpath, cpu1);
    if (tpath)
        printf("8. a traced run (NORMAL jobs that sleep, HIGH jobs pinned to CPU %d, LOW ones "
               "that yield): %s%s%s\n", cpu1, rc == 0 ? "trace written to " : "trace failed: ",
               rc == 0 ? tpath : coro_strerror(rc),
               rc == 0 ? " (tools/timeline draws it)" : "");
    else
        printf("8. a traced run: give a file name (demo TRACE.json) to write its trace\n");
    ok &= rc == 0;
    printf(ok ? "demo: ok\n" : "demo: FAILED\n");
    return ok ? 0 : 1;
}
