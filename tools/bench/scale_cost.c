/* SPDX-License-Identifier: MIT */
/* scale_cost: costs that must not grow with plain threads, history,
 * workers or CPUs (tools/bench/scale.sh runs it; public API only).
 *   scale_cost threads WORKERS NTHREADS [rounds]
 *       NTHREADS plain threads each spawn one job and stay alive; then a
 *       chain of 10,000 pool-frame jobs, each spawning the next, runs on
 *       WORKERS workers: ns per job
 *   scale_cost cancel HISTORY [rounds [event|select|group]]
 *       HISTORY distinct events are each waited on once by a job (1 worker);
 *       then one job waits on an event (or in a select on it, or on a group
 *       whose member waits on it) and coro_cancel ends it: ns of the
 *       coro_cancel call, and of a coro_event_set that ends the same wait
 *       (both wake the parked worker), and of the same cancel while the
 *       worker runs another job (busy_worker: no wake, the cancel alone),
 *       and made by a job (from_job: the cancelled job goes to the
 *       canceller's worker, which is awake: no wake);
 *       beside them the floor of any wake of a parked thread: a raw
 *       FUTEX_WAKE of a thread blocked in FUTEX_WAIT, ns of that call on
 *       the waker's side (futex_wake), and of a FUTEX_WAKE that finds no
 *       waiter (futex_nowaiter: the system call alone)
 *   scale_cost poolcancel QUEUED [rounds]
 *       the blocking pool's one thread is held; QUEUED calls wait for it,
 *       then one more is queued and cancelled: ns of that coro_cancel
 *       (the job is last in the queue; 1 worker)
 *   scale_cost burst WORKERS [bursts]
 *       unpinned workers; a plain thread starts a chain of 200 pool-frame
 *       jobs every 2 ms: the process's CPU time per burst, in ns, and per
 *       burst the workers woken from a park, the parks, the steals and
 *       the process's context switches (getrusage)
 *   scale_cost numa WORKERS [rounds]
 *       4 root jobs per worker each fill a 256 KiB buffer (first touched
 *       on their worker's node) and fan out 64 children that each read
 *       all of it, awaited with coro_done; the children idle workers
 *       steal read the buffer from wherever they run: ns per child, and
 *       steals per round.  On a NUMA machine, against COROKIT_NUMA=0 in
 *       the same run (thieves then ignore the nodes)
 *   scale_cost prio WORKERS [rounds]
 *       a plain thread spawns 10,000 HIGH pool-frame jobs (fire and forget)
 *       and waits for the last: ns per job
 *   scale_cost park WORKERS [rounds]
 *       a plain thread spawns one job and waits for it, 2,000 times, while
 *       the workers are idle (each job meets a parked worker): ns per trip
 *   scale_cost memory WORKERS
 *       bytes the scheduler holds through its allocator (config .alloc):
 *       after create, per worker; per affinity class, once every class
 *       this machine's CPUs can make (up to 64) was interned by a spawn;
 *       and per worker once 20,000 pool-frame jobs ran and the workers
 *       parked (the slabs their pools keep)
 * Prints every round and the median (best for burst: min and median).
 * WORKERS beyond the CPUs run unpinned.  Build: make tools. */
#define _GNU_SOURCE
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double proc_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void die(const char *what)
{
    fprintf(stderr, "scale_cost: %s failed\n", what);
    exit(1);
}

static coro_sched_t *make_sched(int workers)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    cfg.workers = workers;
    cfg.pin = workers <= cpus;
    if (coro_sched_create(&s, &cfg) < 0)
        die("coro_sched_create");
    return s;
}

/* ---- a chain of pool-frame jobs ------------------------------------------------ */

struct link {
    coro_t co;
    coro_sched_t *s;
    long left;
    coro_event_t *done;
    int prio;
};

static int link_body(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    if (l->left > 0) {
        struct link *n = coro_frame_alloc(l->s, sizeof *n);
        if (!n)
            die("coro_frame_alloc");
        *n = (struct link){ .s = l->s, .left = l->left - 1, .done = l->done, .prio = l->prio };
        coro_spawn_opts_t o = { .priority = l->prio };
        if (coro_spawn(l->s, &n->co, link_body, &o) != 0)
            die("coro_spawn");
    } else {
        coro_event_set(l->done);
    }
    CORO_END(co);
}

/* a chain of n jobs from this thread; returns when the last one ran */
static void chain(coro_sched_t *s, long n, int prio)
{
    coro_event_t done;
    coro_event_init(&done);
    struct link *l = coro_frame_alloc(s, sizeof *l);
    if (!l)
        die("coro_frame_alloc");
    *l = (struct link){ .s = s, .left = n - 1, .done = &done, .prio = prio };
    coro_spawn_opts_t o = { .priority = prio };
    if (coro_spawn(s, &l->co, link_body, &o) != 0)
        die("coro_spawn");
    coro_event_wait_blocking(&done, CORO_FOREVER);
    coro_event_destroy(&done);
}

/* ---- plain threads that once spawned ------------------------------------------- */

static int empty(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

struct idler {
    coro_sched_t *s;
    pthread_barrier_t *ready;
    coro_event_t *quit;
};

static void *idler_main(void *arg)
{
    struct idler *d = arg;
    coro_t job = { 0 };
    if (coro_spawn(d->s, &job, empty, NULL) != 0)
        die("coro_spawn (thread)");
    coro_join(&job, &(intptr_t){0});
    pthread_barrier_wait(d->ready);
    coro_event_wait_blocking(d->quit, CORO_FOREVER);
    return NULL;
}

static void run_threads(int workers, int nthreads, int rounds)
{
    enum { CHAIN = 10000 };
    coro_sched_t *s = make_sched(workers);
    pthread_t *th = calloc((size_t)nthreads + 1, sizeof *th);
    pthread_barrier_t ready;
    coro_event_t quit;
    struct idler d = { s, &ready, &quit };
    double *t = calloc((size_t)rounds, sizeof *t);

    if (!th || !t)
        die("calloc");
    coro_event_init(&quit);
    pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        if (pthread_create(&th[i], &a, idler_main, &d) != 0)
            die("pthread_create");
        pthread_attr_destroy(&a);
    }
    pthread_barrier_wait(&ready);
    chain(s, CHAIN, CORO_PRIO_NORMAL);      /* warm-up */
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        chain(s, CHAIN, CORO_PRIO_NORMAL);
        t[r] = (now_ns() - t0) / CHAIN;
        printf("threads workers=%d plain_threads=%d round=%d ns_per_job=%.1f\n", workers,
               nthreads, r, t[r]);
    }
    printf("threads workers=%d plain_threads=%d median_ns_per_job=%.1f\n", workers, nthreads,
           median(t, rounds));
    coro_event_set(&quit);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&ready);
    coro_event_destroy(&quit);
    coro_sched_destroy(s);
    free(th);
    free(t);
}

/* ---- history: objects ever waited on ---------------------------------------------- */

struct waiter {
    coro_t co;
    coro_event_t *ev;
    int kind;               /* what it waits in: enum wait_kind */
    coro_select_t sel;
    coro_group_t *g;
};

enum wait_kind { W_EVENT, W_SELECT, W_GROUP };
static const char *const kind_name[] = { "event", "select", "group" };

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    if (w->kind == W_SELECT) {
        coro_select_init(&w->sel);
        coro_select_event(&w->sel, w->ev);
        CORO_SELECT(co, &w->sel, CORO_FOREVER);
    } else if (w->kind == W_GROUP) {
        CORO_AWAIT(co, coro_group_wait(w->g, CORO_FOREVER));
    } else {
        CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    }
    CORO_END(co);
}

/* what the measured job waits on: an event, a select on it, or a group
 * whose one member waits on it */
struct target {
    int kind;
    coro_event_t ev;
    coro_group_t g;
    struct waiter member;
};

static void target_start(coro_sched_t *s, struct target *x, struct waiter *w)
{
    coro_event_init(&x->ev);
    if (x->kind == W_GROUP) {
        coro_spawn_opts_t o = { .group = &x->g };
        coro_group_init(&x->g);
        x->member = (struct waiter){ .ev = &x->ev };
        if (coro_spawn(s, &x->member.co, waiter_body, &o) != 0)
            die("coro_spawn");
    }
    *w = (struct waiter){ .ev = &x->ev, .kind = x->kind, .g = &x->g };
    if (coro_spawn(s, &w->co, waiter_body, NULL) != 0)
        die("coro_spawn");
}

static void target_end(struct target *x, struct waiter *w)
{
    coro_join(&w->co, &(intptr_t){0});
    if (x->kind == W_GROUP) {
        coro_event_set(&x->ev);
        coro_join(&x->member.co, &(intptr_t){0});
        coro_group_destroy(&x->g);
    }
    coro_event_destroy(&x->ev);
}

/* keeps the only worker running (not parked) until *stop */
struct spinner {
    coro_t co;
    int running, stop;
};

static int spinner_body(coro_t *co)
{
    struct spinner *sp = CORO_SELF(co, struct spinner);
    CORO_BEGIN(co);
    __atomic_store_n(&sp->running, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE))
        ;
    CORO_END(co);
}

/* a job that cancels target: ns of its coro_cancel call */
struct canceller {
    coro_t co;
    coro_t *target;
    double ns;
};

static int canceller_body(coro_t *co)
{
    struct canceller *c = CORO_SELF(co, struct canceller);
    CORO_BEGIN(co);
    double t0 = now_ns();
    coro_cancel(c->target);
    c->ns = now_ns() - t0;
    CORO_END(co);
}

/* wait until job is suspended on its event (its worker is then idle) */
static void settle(coro_sched_t *s)
{
    coro_sched_stats_t st;
    for (int i = 0; i < 1000; i++) {
        coro_sched_stats(s, &st);
        if (st.global_depth + st.queue_depth == 0)
            break;
        usleep(100);
    }
    usleep(2000);
}

/* ---- the floor: a raw futex wake of a parked thread --------------------------------- */

struct sleeper {
    pthread_t t;
    uint32_t word;      /* 0: sleep; 1: wake; 2: leave */
    uint32_t woke;      /* wakes seen */
};

static long futex(uint32_t *w, int op, uint32_t v)
{
    return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

static void *sleeper_main(void *arg)
{
    struct sleeper *z = arg;
    for (;;) {
        uint32_t v;
        while ((v = __atomic_load_n(&z->word, __ATOMIC_ACQUIRE)) == 0)
            futex(&z->word, FUTEX_WAIT_PRIVATE, 0);
        if (v == 2)
            return NULL;
        __atomic_store_n(&z->word, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&z->woke, 1, __ATOMIC_RELEASE);
    }
}

/* one FUTEX_WAKE of z, blocked in FUTEX_WAIT (given 2 ms to get there, as
 * settle gives the worker): ns of the waker's store and call */
static double futex_wake_once(struct sleeper *z)
{
    uint32_t seen = __atomic_load_n(&z->woke, __ATOMIC_ACQUIRE);
    usleep(2000);
    double t0 = now_ns();
    __atomic_store_n(&z->word, 1, __ATOMIC_RELEASE);
    futex(&z->word, FUTEX_WAKE_PRIVATE, 1);
    double t = now_ns() - t0;
    while (__atomic_load_n(&z->woke, __ATOMIC_ACQUIRE) == seen)
        sched_yield();
    return t;
}

static double futex_nowaiter_once(void)
{
    uint32_t w = 0;
    double t0 = now_ns();
    futex(&w, FUTEX_WAKE_PRIVATE, 1);
    return now_ns() - t0;
}

static void run_cancel(long history, int rounds, int kind)
{
    enum { BATCH = 1000 };
    coro_sched_t *s = make_sched(1);
    coro_event_t *evs = calloc(BATCH, sizeof *evs);
    struct waiter *ws = calloc(BATCH, sizeof *ws);
    double *t = calloc((size_t)rounds, sizeof *t);

    if (!evs || !ws || !t)
        die("calloc");
    /* history: distinct event addresses, each waited on once.  The events
     * of one batch share no bucket with the next batch only by chance:
     * the addresses differ per batch (a new allocation each time) */
    for (long done = 0; done < history;) {
        long n = history - done < BATCH ? history - done : BATCH;
        coro_event_t *e = calloc((size_t)n, sizeof *e);
        if (!e)
            die("calloc");
        for (long i = 0; i < n; i++) {
            coro_event_init(&e[i]);
            ws[i] = (struct waiter){ .ev = &e[i] };
            if (coro_spawn(s, &ws[i].co, waiter_body, NULL) != 0)
                die("coro_spawn");
        }
        settle(s);
        for (long i = 0; i < n; i++)
            coro_event_set(&e[i]);
        for (long i = 0; i < n; i++)
            coro_join(&ws[i].co, &(intptr_t){0});
        for (long i = 0; i < n; i++)
            coro_event_destroy(&e[i]);
        /* kept allocated: the next batch's events get new addresses */
        done += n;
    }
    double *tw = calloc((size_t)rounds, sizeof *tw);
    double *tb = calloc((size_t)rounds, sizeof *tb);
    double *tf = calloc((size_t)rounds, sizeof *tf);
    double *tn = calloc((size_t)rounds, sizeof *tn);
    double *tj = calloc((size_t)rounds, sizeof *tj);
    struct sleeper z = { 0 };
    if (!tw || !tb || !tf || !tn || !tj)
        die("calloc");
    if (pthread_create(&z.t, NULL, sleeper_main, &z) != 0)
        die("pthread_create");
    for (int r = 0; r < rounds; r++) {
        struct target x = { .kind = kind };
        struct waiter w;
        target_start(s, &x, &w);
        settle(s);
        double t0 = now_ns();
        coro_cancel(&w.co);
        t[r] = now_ns() - t0;
        target_end(&x, &w);
        /* the same wait ended by its event (a group's: through its
         * member's end), for scale: the wake-up of the parked worker that
         * both pay */
        target_start(s, &x, &w);
        settle(s);
        t0 = now_ns();
        coro_event_set(&x.ev);
        tw[r] = now_ns() - t0;
        target_end(&x, &w);
        /* the same cancel while the worker runs another job: the woken
         * job is queued and nobody is woken, so this is the cancel's own
         * cost, without the futex wake of a parked worker */
        struct spinner sp = { 0 };
        target_start(s, &x, &w);
        settle(s);
        if (coro_spawn(s, &sp.co, spinner_body, NULL) != 0)
            die("coro_spawn");
        while (!__atomic_load_n(&sp.running, __ATOMIC_ACQUIRE))
            sched_yield();
        t0 = now_ns();
        coro_cancel(&w.co);
        tb[r] = now_ns() - t0;
        __atomic_store_n(&sp.stop, 1, __ATOMIC_RELEASE);
        coro_join(&sp.co, &(intptr_t){0});
        target_end(&x, &w);
        /* the same cancel made by a job: the cancelled job goes to that
         * job's worker (its LIFO slot), which runs it after the step, and
         * nobody is woken */
        struct canceller cj = { .target = &w.co };
        target_start(s, &x, &w);
        settle(s);
        if (coro_spawn(s, &cj.co, canceller_body, NULL) != 0)
            die("coro_spawn");
        coro_join(&cj.co, &(intptr_t){0});
        tj[r] = cj.ns;
        target_end(&x, &w);
        /* the floor of both: a raw wake of a parked thread */
        tf[r] = futex_wake_once(&z);
        tn[r] = futex_nowaiter_once();
        printf("cancel kind=%s history=%ld round=%d ns=%.0f event_set_ns=%.0f "
               "busy_worker_ns=%.0f from_job_ns=%.0f futex_wake_ns=%.0f futex_nowaiter_ns=%.0f\n",
               kind_name[kind], history, r, t[r], tw[r], tb[r], tj[r], tf[r], tn[r]);
    }
    double mc = median(t, rounds), me = median(tw, rounds), mb = median(tb, rounds);
    double mf = median(tf, rounds), mn = median(tn, rounds), mj = median(tj, rounds);
    printf("cancel kind=%s history=%ld median_ns=%.0f event_set_median_ns=%.0f "
           "busy_worker_median_ns=%.0f from_job_median_ns=%.0f futex_wake_median_ns=%.0f "
           "futex_nowaiter_median_ns=%.0f\n",
           kind_name[kind], history, mc, me, mb, mj, mf, mn);
    free(tj);
    __atomic_store_n(&z.word, 2, __ATOMIC_RELEASE);
    futex(&z.word, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(z.t, NULL);
    free(tn);
    free(tf);
    free(tb);
    free(tw);
    coro_sched_destroy(s);
    free(evs);
    free(ws);
    free(t);
}

/* ---- the cancel of a call queued for the blocking pool -------------------------- */

static uint32_t plug_go;

static intptr_t plug_fn(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&plug_go, __ATOMIC_ACQUIRE))
        futex(&plug_go, FUTEX_WAIT_PRIVATE, 0);
    return 0;
}

static intptr_t nop_fn(void *arg)
{
    return (intptr_t)arg;
}

struct call {
    coro_t co;
    intptr_t (*fn)(void *);
};

static int call_body(coro_t *co)
{
    struct call *c = CORO_SELF(co, struct call);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(c->fn, NULL));
    CORO_END(co);
}

static void run_poolcancel(long queued, int rounds)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct call *q = calloc((size_t)queued + 1, sizeof *q);
    double *t = calloc((size_t)rounds, sizeof *t);

    if (!q || !t)
        die("calloc");
    c.workers = 1;
    c.blocking_threads = 1;
    if (coro_sched_create(&s, &c) < 0)
        die("coro_sched_create");
    struct call plug = { .fn = plug_fn };
    if (coro_spawn(s, &plug.co, call_body, NULL) != 0)
        die("coro_spawn");
    for (long i = 0; i < queued; i++) {
        q[i].fn = nop_fn;
        if (coro_spawn(s, &q[i].co, call_body, NULL) != 0)
            die("coro_spawn");
    }
    settle(s);
    for (int r = 0; r < rounds; r++) {
        struct call x = { .fn = nop_fn };
        if (coro_spawn(s, &x.co, call_body, NULL) != 0)
            die("coro_spawn");
        settle(s);
        double t0 = now_ns();
        coro_cancel(&x.co);
        t[r] = now_ns() - t0;
        coro_join(&x.co, &(intptr_t){0});
        printf("poolcancel queued=%ld round=%d ns=%.0f\n", queued, r, t[r]);
    }
    printf("poolcancel queued=%ld median_ns=%.0f\n", queued, median(t, rounds));
    __atomic_store_n(&plug_go, 1, __ATOMIC_RELEASE);
    futex(&plug_go, FUTEX_WAKE_PRIVATE, 1);
    coro_join(&plug.co, &(intptr_t){0});
    for (long i = 0; i < queued; i++)
        coro_join(&q[i].co, &(intptr_t){0});
    coro_sched_destroy(s);
    free(q);
    free(t);
}

/* ---- bursts from a plain thread --------------------------------------------------- */

/* the workers' parks, wake-ups and steals so far, summed */
static void park_counts(coro_sched_t *s, double *parks, double *wakeups, double *steals)
{
    coro_sched_stats_t st;
    coro_sched_stats(s, &st);
    *parks = (double)st.parks;
    *wakeups = (double)st.wakeups;
    *steals = (double)st.steals;
}

static double csw(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
}

static void run_burst(int workers, int bursts)
{
    coro_sched_t *s;
    double *t = calloc((size_t)bursts, sizeof *t);
    if (!t)
        die("calloc");
    /* unpinned at every worker count (the shape) */
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    if (coro_sched_create(&s, &c) < 0)
        die("coro_sched_create");
    chain(s, 200, CORO_PRIO_NORMAL);
    usleep(20000);
    double p0, k0, s0, x0 = csw();
    park_counts(s, &p0, &k0, &s0);
    double c0 = proc_cpu_ns(), w0 = now_ns();
    for (int b = 0; b < bursts; b++) {
        double cb = proc_cpu_ns();
        chain(s, 200, CORO_PRIO_NORMAL);
        usleep(2000);
        t[b] = proc_cpu_ns() - cb;
    }
    double cpu = proc_cpu_ns() - c0, wall = now_ns() - w0;
    double p1, k1, s1, x1 = csw();
    park_counts(s, &p1, &k1, &s1);
    printf("burst workers=%d bursts=%d cpu_ns_per_burst=%.0f median_ns=%.0f wall_ms=%.0f "
           "wakeups_per_burst=%.1f parks_per_burst=%.1f steals_per_burst=%.1f "
           "csw_per_burst=%.1f\n",
           workers, bursts, cpu / bursts, median(t, bursts), wall / 1e6, (k1 - k0) / bursts,
           (p1 - p0) / bursts, (s1 - s0) / bursts, (x1 - x0) / bursts);
    coro_sched_destroy(s);
    free(t);
}

/* ---- fan-out over a buffer its root touched first (NUMA) ---------------------- */

enum { NUMA_KIDS = 64, NUMA_BUF = 256 * 1024 };

struct nkid {
    coro_t co;
    const volatile char *buf;
    long sum;
};

static int nkid_body(coro_t *co)
{
    struct nkid *k = CORO_SELF(co, struct nkid);
    CORO_BEGIN(co);
    for (int i = 0; i < NUMA_BUF; i += 64)
        k->sum += k->buf[i];
    CORO_END(co);
}

struct nroot {
    coro_t co;
    coro_sched_t *s;
    char *buf;
    int i;
    struct nkid kids[NUMA_KIDS];
};

static int nroot_body(coro_t *co)
{
    struct nroot *r = CORO_SELF(co, struct nroot);
    CORO_BEGIN(co);
    memset(r->buf, 1, NUMA_BUF);    /* first touch: this worker's node */
    for (r->i = 0; r->i < NUMA_KIDS; r->i++) {
        r->kids[r->i] = (struct nkid){ .buf = r->buf };
        if (coro_spawn(r->s, &r->kids[r->i].co, nkid_body, NULL) != 0)
            die("coro_spawn");
    }
    for (r->i = 0; r->i < NUMA_KIDS; r->i++)
        CORO_AWAIT(co, coro_done(&r->kids[r->i].co));
    CORO_END(co);
}

static void run_numa(int workers, int rounds)
{
    coro_sched_t *s = make_sched(workers);
    int nroots = 4 * workers;
    struct nroot *r = calloc((size_t)nroots, sizeof *r);
    double *t = calloc((size_t)rounds, sizeof *t);

    if (!r || !t)
        die("calloc");
    for (int i = 0; i < nroots; i++)
        if (!(r[i].buf = malloc(NUMA_BUF)))
            die("malloc");
    for (int k = -1; k < rounds; k++) {
        double p, w, st0, st1;
        park_counts(s, &p, &w, &st0);
        double t0 = now_ns();
        for (int i = 0; i < nroots; i++) {
            r[i].s = s;
            if (coro_spawn(s, &r[i].co, nroot_body, NULL) != 0)
                die("coro_spawn");
        }
        for (int i = 0; i < nroots; i++)
            coro_join(&r[i].co, &(intptr_t){0});
        double dt = (now_ns() - t0) / ((double)nroots * NUMA_KIDS);
        park_counts(s, &p, &w, &st1);
        if (k >= 0) {
            t[k] = dt;
            printf("numa workers=%d round=%d ns_per_child=%.0f steals=%.0f\n", workers, k, dt,
                   st1 - st0);
        }
    }
    printf("numa workers=%d median_ns_per_child=%.0f\n", workers, median(t, rounds));
    coro_sched_destroy(s);
    for (int i = 0; i < nroots; i++)
        free(r[i].buf);
    free(r);
    free(t);
}

/* ---- HIGH jobs from a plain thread ----------------------------------------------- */

static long prio_left;
static coro_event_t prio_done;

static int prio_body(coro_t *co)
{
    CORO_BEGIN(co);
    if (__atomic_sub_fetch(&prio_left, 1, __ATOMIC_ACQ_REL) == 0)
        coro_event_set(&prio_done);
    CORO_END(co);
}

static void run_prio(int workers, int rounds)
{
    enum { N = 10000 };
    coro_sched_t *s = make_sched(workers);
    double *t = calloc((size_t)rounds, sizeof *t);
    coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH };

    if (!t)
        die("calloc");
    for (int r = -1; r < rounds; r++) {
        prio_left = N;
        coro_event_init(&prio_done);
        double t0 = now_ns();
        for (int i = 0; i < N; i++) {
            coro_t *k = coro_frame_alloc(s, sizeof *k);
            if (!k || coro_spawn(s, k, prio_body, &o) != 0)
                die("coro_spawn");
        }
        coro_event_wait_blocking(&prio_done, CORO_FOREVER);
        coro_event_destroy(&prio_done);
        if (r >= 0) {
            t[r] = (now_ns() - t0) / N;
            printf("prio workers=%d round=%d ns_per_job=%.1f\n", workers, r, t[r]);
        }
    }
    printf("prio workers=%d median_ns_per_job=%.1f\n", workers, median(t, rounds));
    coro_sched_destroy(s);
    free(t);
}

/* ---- a job that meets a parked worker --------------------------------------------- */

static void run_park(int workers, int rounds)
{
    enum { TRIPS = 2000 };
    coro_sched_t *s = make_sched(workers);
    double *t = calloc((size_t)rounds, sizeof *t);

    if (!t)
        die("calloc");
    for (int r = -1; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < TRIPS; i++) {
            coro_t job = { 0 };
            if (coro_spawn(s, &job, empty, NULL) != 0)
                die("coro_spawn");
            coro_join(&job, &(intptr_t){0});
        }
        if (r >= 0) {
            t[r] = (now_ns() - t0) / TRIPS;
            printf("park workers=%d round=%d ns_per_trip=%.0f\n", workers, r, t[r]);
        }
    }
    printf("park workers=%d median_ns_per_trip=%.0f\n", workers, median(t, rounds));
    coro_sched_destroy(s);
    free(t);
}

/* ---- memory held, through a counting allocator ------------------------------- */

static long mem_held;

static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = malloc(n);
    if (p)
        __atomic_add_fetch(&mem_held, (long)n, __ATOMIC_RELAXED);
    return p;
}

static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (p)
        __atomic_sub_fetch(&mem_held, (long)n, __ATOMIC_RELAXED);
    free(p);
}

static long held(void)
{
    return __atomic_load_n(&mem_held, __ATOMIC_RELAXED);
}

static long frames_left;
static coro_event_t frames_done;

static int frame_body(coro_t *co)
{
    CORO_BEGIN(co);
    if (__atomic_sub_fetch(&frames_left, 1, __ATOMIC_ACQ_REL) == 0)
        coro_event_set(&frames_done);
    CORO_END(co);
}

/* spawns frames_left pool-frame jobs from its worker's pool */
struct froot {
    coro_t co;
    coro_sched_t *s;
};

static int froot_body(coro_t *co)
{
    struct froot *r = CORO_SELF(co, struct froot);
    CORO_BEGIN(co);
    for (long i = 0, n = frames_left; i < n; i++) {
        coro_t *k = coro_frame_alloc(r->s, 256);
        if (!k || coro_spawn(r->s, k, frame_body, NULL) != 0)
            die("coro_spawn");
    }
    CORO_END(co);
}

static void run_memory(int workers)
{
    static const coro_alloc_t counting = { .alloc = count_alloc, .free = count_free };
    enum { JOBS = 20000, MAXCLS = 64 };
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    cpu_set_t os;
    int cpus[64], n = 0;

    CPU_ZERO(&os);
    if (sched_getaffinity(0, sizeof os, &os) != 0)
        die("sched_getaffinity");
    for (int i = 0; i < CPU_SETSIZE && n < 64; i++)
        if (CPU_ISSET(i, &os))
            cpus[n++] = i;
    c.workers = workers;
    c.pin = workers <= n;
    c.alloc = &counting;
    long h0 = held();
    if (coro_sched_create(&s, &c) < 0)
        die("coro_sched_create");
    long h1 = held();
    /* narrower classes: the nonempty proper subsets of the CPUs, by the
     * bits of k over the first 7 (at most 64 of them: 2^7 - 2 = 126) */
    int m = n < 7 ? n : 7, nclasses = 0;
    if (m > workers)
        m = workers;        /* workers sit on the first CPUs */
    for (long k = 1; k < (1l << m) - 1 && nclasses < MAXCLS; k++, nclasses++) {
        coro_cpuset_t set;
        coro_cpuset_zero(&set);
        for (int b = 0; b < m; b++)
            if (k >> b & 1)
                coro_cpuset_add(&set, cpus[b]);
        coro_spawn_opts_t o = { .affinity = &set };
        coro_t job = { 0 };
        if (coro_spawn(s, &job, empty, &o) != 0)
            die("coro_spawn");
        coro_join(&job, &(intptr_t){0});
    }
    long h2 = held();
    coro_event_init(&frames_done);
    frames_left = JOBS;
    struct froot root = { .s = s };
    if (coro_spawn(s, &root.co, froot_body, NULL) != 0)
        die("coro_spawn");
    coro_event_wait_blocking(&frames_done, CORO_FOREVER);
    coro_join(&root.co, &(intptr_t){0});
    coro_event_destroy(&frames_done);
    /* the workers park and trim their pools */
    usleep(100000);
    long h3 = held();
    printf("memory workers=%d bytes=%ld classes=%d bytes_per_class=%.0f "
           "idle_pool_bytes=%ld idle_pool_bytes_per_worker=%.0f\n",
           workers, h1 - h0, nclasses, nclasses ? (double)(h2 - h1) / nclasses : 0.0, h3 - h2,
           (double)(h3 - h2) / workers);
    coro_sched_destroy(s);
    if (held() != h0)
        printf("memory workers=%d leaked_bytes=%ld\n", workers, held() - h0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    if (strcmp(mode, "threads") == 0 && argc > 3) {
        run_threads(atoi(argv[2]), atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 5);
    } else if (strcmp(mode, "cancel") == 0 && argc > 2) {
        int kind = W_EVENT;
        for (int k = 0; argc > 4 && k < 3; k++)
            if (strcmp(argv[4], kind_name[k]) == 0)
                kind = k;
        run_cancel(atol(argv[2]), argc > 3 ? atoi(argv[3]) : 9, kind);
    } else if (strcmp(mode, "poolcancel") == 0 && argc > 2) {
        run_poolcancel(atol(argv[2]), argc > 3 ? atoi(argv[3]) : 9);
    } else if (strcmp(mode, "burst") == 0 && argc > 2) {
        run_burst(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 200);
    } else if (strcmp(mode, "numa") == 0 && argc > 2) {
        run_numa(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 5);
    } else if (strcmp(mode, "prio") == 0 && argc > 2) {
        run_prio(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 5);
    } else if (strcmp(mode, "park") == 0 && argc > 2) {
        run_park(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 5);
    } else if (strcmp(mode, "memory") == 0 && argc > 2) {
        run_memory(atoi(argv[2]));
    } else {
        fprintf(stderr,
                "usage: scale_cost threads WORKERS NTHREADS [rounds] |\n"
                "       cancel HISTORY [rounds [event|select|group]] | poolcancel QUEUED [rounds] |\n"
                "       burst WORKERS [bursts] | numa WORKERS [rounds] | prio WORKERS [rounds] |\n"
                "       park WORKERS [rounds] | memory WORKERS\n");
        return 2;
    }
    return 0;
}
