/* demo: what corokit does, in one run.
 *   1. one pinned worker per CPU;
 *   2. jobs with CPU masks run only where their mask allows;
 *   3. priorities: HIGH jobs overtake queued NORMAL ones;
 *   4. fork-join: fib(22), each call spawning two children and awaiting both;
 *   5. the per-worker counters.
 * Run it with `make demo`. */
#define _GNU_SOURCE
#include <corokit.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(void)
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
    int cpus[2] = { st->worker[0].cpu, st->worker[st->workers > 1].cpu };
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
        inside += coro_join(&ws[i].co) == 1;
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
    printf("3. four LOW jobs, then one HIGH, queued on a busy worker: run order");
    for (int i = 0; i < 5; i++)
        printf(" %s#%ld", i == 4 ? "HIGH" : "LOW", q[i].rank);
    printf("\n");
    ok &= q[4].rank == 0;

    /* ---- 4. fork-join ---- */
    struct fib root = { .n = 22 };
    t0 = now_ms();
    intptr_t r = coro_block_on(s, &root.co, fib, NULL);
    printf("4. fib(22) = %ld by spawning %d jobs, %.1f ms\n", (long)r, 57313, now_ms() - t0);
    ok &= r == 17711;

    /* ---- 5. counters ---- */
    coro_sched_stats(s, st);
    printf("5. worker  cpu  pinned  jobs-run  steals  stolen  parks\n");
    for (int i = 0; i < st->workers; i++)
        printf("   %6d  %3d  %6s  %8lu  %6lu  %6lu  %5lu\n", i, st->worker[i].cpu,
               st->worker[i].pinned ? "yes" : "no", (unsigned long)st->worker[i].jobs_run,
               (unsigned long)st->worker[i].steals, (unsigned long)st->worker[i].stolen,
               (unsigned long)st->worker[i].parks);
    coro_sched_destroy(s);
    free(st);
    printf(ok ? "demo: ok\n" : "demo: FAILED\n");
    return ok ? 0 : 1;
}
