/* SPDX-License-Identifier: MIT */
/* The scheduler's life: create, spawn, destroy.  Its neighbours in rt/:
 * cancel_one.c (coro_cancel), shutdown.c (the drain and cancel of every
 * job), finish.c (the end of a job), join.c (coro_join),
 * drive.c (coro_sched_run, single-threaded driving), vtime.c (virtual
 * time), fork.c, group.c, stats.c, diag.c.
 *
 * SHUTDOWN follows tokio's protocol.  s->live counts the jobs that were
 * spawned and have not finished, with a CLOSED bit on top.  coro_spawn
 * adds one with an atomic RMW and, if it sees CLOSED, takes it back and
 * fails with -ESHUTDOWN; coro_sched_shutdown sets CLOSED with an RMW on the
 * same word.  The RMWs are totally ordered, so a racing spawn either counted
 * before CLOSED (it runs, and shutdown waits for it) or after (it fails):
 * never both, never neither.  CORO_CANCEL then sets s->cancelling, which
 * every arm checks (the parking lot and the I/O thread check it under the
 * lock they insert under), and wakes every job already waiting with
 * -ECANCELED.  Shutdown returns when live == CLOSED: every queue is empty.
 *
 * SPARE UNITS.  A worker holds units of live that belong to no job
 * (w->spare): the unit of a job that finished on it, and units it added
 * ahead, CORO__LIVE_BATCH at a time, for the jobs it spawns.  A spawn on a
 * worker takes a spare unit when it has one and s->closed looks clear -
 * no RMW: the unit is in the count already, so the job counted before any
 * close that comes later, and shutdown waits for it; a spawn that sees
 * closed set goes through the RMW and fails.  Spares only ever make live
 * larger than the jobs alive, never smaller, so no shutdown returns while a
 * job lives.  A worker gives its spares back above 2 * CORO__LIVE_BATCH
 * (down to one batch), all of them before it parks, and all at every
 * finish once s->closed is set, so a drain is never held up by them: the
 * last finishes before the drain ends happen on workers that then either
 * see closed or park (tools/model/shutdown.pml).
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/frame.h"
#include "rt/rt.h"
#include "sched/trace.h"

/* ---- create / destroy ----------------------------------------------------------- */

#ifdef CORO_TEST_HOOKS
int coro__test_ncpus;
#endif

static size_t worker_size(void)
{
    return sizeof(struct coro__worker) + CORO__NPRIO * 2 * CORO__LOCAL_SIZE * sizeof(ck_ring_buffer_t) +
           CORO__NPRIO * CORO__INBOX_SIZE * sizeof(struct coro__sharedq_slot);
}

/* FIRST TOUCH.  A worker's struct - its rings, inboxes, LIFO slot and
 * counters, what it touches at every step - is allocated and zeroed by
 * its own thread, which starts on its CPU (the affinity is given at
 * pthread_create when pinned), and so are its served list (sched/affinity.c
 * SERVED) and its trace ring (sched/trace.c), so that on a NUMA machine
 * their pages come
 * from that CPU's node: Linux places a page on the node of the CPU that
 * first writes it, and glibc's malloc serves each thread from an arena of
 * its own.  Nothing may reach a worker's struct before it exists, so the
 * threads start in boot_main: each makes its struct, stores it in s->w,
 * counts itself in s->boot_ready and waits on s->boot_go.  Create waits
 * for all of them, finishes the scheduler (the class queues, the pools,
 * the I/O context want every struct), then stores BOOT_RUN and wakes
 * them; on a failure, BOOT_ABORT: they return without running, and create
 * joins them.  The single-threaded scheduler's one struct is made by
 * create itself (its driver is any thread). */
enum { BOOT_WAIT, BOOT_RUN, BOOT_ABORT };

struct boot {
    coro_sched_t *s;
    int idx, cpu;
};

/* w's fields as create sets them, its rings on its own storage */
static void worker_init(coro_sched_t *s, struct coro__worker *w, int idx, int cpu)
{
    w->s = s;
    w->idx = idx;
    w->cpu = cpu;
    w->rng = 0x9e3779b9u * (uint32_t)(idx + 1);
    w->lifo_watch = -1;
    ck_ring_buffer_t *b = w->bufs;
    /* the inboxes' slots after the rings' (a multiple of 64 bytes) */
    struct coro__sharedq_slot *sl = (struct coro__sharedq_slot *)(b + CORO__NPRIO * 2 * CORO__LOCAL_SIZE);
    for (int p = 0; p < CORO__NPRIO; p++) {
        coro__localq_init(&w->local[p], b, CORO__LOCAL_SIZE);
        b += CORO__LOCAL_SIZE;
        coro__localq_init(&w->yielded[p], b, CORO__LOCAL_SIZE);
        b += CORO__LOCAL_SIZE;
        coro__sharedq_init(&w->inbox[p], sl, CORO__INBOX_SIZE);
        sl += CORO__INBOX_SIZE;
    }
}

/* w's own storage beyond its struct: its served list and its trace ring.
 * 0, or -ENOMEM with both given back */
static int worker_extras(coro_sched_t *s, struct coro__worker *w)
{
    if (coro__served_init(s, w) == 0 && coro__trace_worker_init(s, w) == 0)
        return 0;
    coro__served_fini(s, w);
    return -ENOMEM;
}

static void *boot_main(void *arg)
{
    struct boot *b = arg;
    coro_sched_t *s = b->s;
    struct coro__worker *w = coro__alloc_aligned(s, worker_size());

    if (w) {
        worker_init(s, w, b->idx, b->cpu);
        if (worker_extras(s, w) < 0) {
            coro__free_aligned(s, w, worker_size());
            w = NULL;
        }
    }
    if (w)
        s->w[b->idx] = w;   /* create reads it after the count below */
    /* release: the struct and its slot in s->w before create's acquire
     * of the count.  A failed allocation leaves the slot NULL: create
     * sees it and aborts */
    __atomic_add_fetch(&s->boot_ready, 1, __ATOMIC_RELEASE);
    coro__futex_wake(&s->boot_ready, 1);
    uint32_t go;
    /* acquire: pairs with create's release store, after which s is
     * complete (every other worker's struct too) */
    while ((go = __atomic_load_n(&s->boot_go, __ATOMIC_ACQUIRE)) == BOOT_WAIT)
        coro__futex_wait(&s->boot_go, BOOT_WAIT, -1);
    if (go != BOOT_RUN || !w)
        return NULL;
    return coro__worker_main(w);
}

/* start the threads of n workers (boots[i] for worker i): 0, or the error
 * with the ones started joined */
static int boot_workers(coro_sched_t *s, struct boot *boots, pthread_t *tid, int n)
{
    int rc = 0, started = 0;

    for (int i = 0; i < n && rc == 0; i++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        if (s->pin) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(boots[i].cpu, &set);
            pthread_attr_setaffinity_np(&at, sizeof set, &set);
        }
        rc = -pthread_create(&tid[i], &at, boot_main, &boots[i]);
        pthread_attr_destroy(&at);
        if (rc == -EINVAL && s->pin)    /* a CPU it cannot start on: its own pin reports it */
            rc = -pthread_create(&tid[i], NULL, boot_main, &boots[i]);
        if (rc == 0)
            started++;
    }
    uint32_t r;
    /* acquire: pairs with each thread's release of the count */
    while ((r = __atomic_load_n(&s->boot_ready, __ATOMIC_ACQUIRE)) < (uint32_t)started)
        coro__futex_wait(&s->boot_ready, r, -1);
    for (int i = 0; i < started && rc == 0; i++)
        if (!s->w[i])
            rc = -ENOMEM;
    if (rc == 0)
        return 0;
    /* release: pairs with the workers' acquire of boot_go; what they read
     * of s after it (told to stop) was written before */
    __atomic_store_n(&s->boot_go, BOOT_ABORT, __ATOMIC_RELEASE);
    coro__futex_wake(&s->boot_go, INT_MAX);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return rc;
}

/* w->near for every worker, and s->numa: whether their CPUs span nodes
 * (base/numa.c; sched/steal.c NUMA).  COROKIT_NUMA=0 in the environment
 * leaves the nodes out (one node), for a same-run comparison */
static void numa_init(coro_sched_t *s)
{
    int node0 = coro__numa_node(s->w[0]->cpu);
    const char *e = getenv("COROKIT_NUMA");

    if (e && strcmp(e, "0") == 0)
        return;

    for (int i = 0; i < s->nworkers; i++) {
        int ni = coro__numa_node(s->w[i]->cpu);
        s->numa |= ni != node0;
        for (int j = 0; j < s->nworkers; j++)
            if (coro__numa_node(s->w[j]->cpu) == ni)
                coro__bit_set(s->w[i]->near, j);
    }
}

/* the caller's seat (sched/seat.c): one more worker struct, w[nslots],
 * made here (its holders are any threads), with no thread, pinned
 * nowhere; and what its takes ask: the workers' CPUs, and whether they
 * are every CPU the machine has */
static int seat_init(coro_sched_t *s, const int *cpus, int ncpus)
{
    struct coro__worker *w = coro__alloc_aligned(s, worker_size());

    if (!w)
        return -ENOMEM;
    s->w[s->nslots] = w;
    worker_init(s, w, s->nslots, -1);
    if (coro__served_init(s, w) < 0)
        return -ENOMEM;
    CPU_ZERO(&s->wcpus);
    for (int i = 0; i < s->nworkers && i < ncpus; i++)
        CPU_SET(cpus[i], &s->wcpus);
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    bool all = conf > 0 && conf <= CPU_SETSIZE;
    for (long i = 0; all && i < conf; i++)
        all = CPU_ISSET((int)i, &s->wcpus);
    s->seat_anywhere = all;
    return 0;
}

static void free_workers(coro_sched_t *s)
{
    if (!s->w)
        return;
    for (int i = 0; i < s->nall; i++) {
        struct coro__worker *w = s->w[i];
        if (!w)
            continue;
        for (int p = 0; p < CORO__NPRIO; p++)
            coro__sharedq_fini(&w->inbox[p]);
        coro__served_fini(s, w);
        coro__free_aligned(s, w, worker_size());
    }
    coro__free(s, s->w, s->nall * sizeof *s->w);
    s->w = NULL;
}

static void stop_workers(coro_sched_t *s)
{
    /* release: everything before destroy happens before the workers exit */
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
    coro__wake_all_workers(s);
    for (int i = 0; i < s->nslots; i++) {
        struct coro__worker *w = s->w[i];
        if (w && w->started) {
            pthread_join(w->thread, NULL);
            w->started = false;
        }
    }
}

static void sched_free(coro_sched_t *s)
{
    coro__blocking_destroy(s);
    if (s->io)
        coro__io_destroy(s->io);
    /* after every plain thread of the library stopped: the blocking
     * pool's and the I/O thread submit through rings of their own, which
     * live with their frame caches */
    coro__frames_fini(s);
    if (s->trace && s->w)
        coro__trace_fini(s);    /* after every thread that records is gone */
    coro__parklot_sched_fini(s);
    coro__affinity_fini(s);
    coro__vt_fini(s);
    free_workers(s);
    pthread_cond_destroy(&s->shut_gone);
    pthread_mutex_destroy(&s->shut_lock);
    pthread_mutex_destroy(&s->cancel_lock);
    const coro_alloc_t *a = s->alloc;
    coro_sched_t tmp = { .alloc = a };
    coro__free_aligned(&tmp, s, sizeof *s);
}

static int sched_create(coro_sched_t **out, const coro_sched_config_t *cfg)
{
    coro_sched_config_t c = cfg ? *cfg : CORO_SCHED_CONFIG_DEFAULT;
    cpu_set_t os;
    int cpus[CORO_MAX_CPUS], ncpus = 0, rc;
    coro_sched_t *s;
    struct boot *boots = NULL;
    pthread_t *tid = NULL;

    if (!out)
        return -EINVAL;
    *out = NULL;
    if (c.workers < CORO_WORKERS_AUTO || c.workers > CORO_MAX_WORKERS)
        return -EINVAL;
    if (c.alloc && (!c.alloc->alloc || !c.alloc->free))
        return -EINVAL;
    if (c.stall_ns < 0 || c.blocking_keepalive_ns < 0)
        return -EINVAL;
    /* virtual time and seeded picks need the one driving thread */
    if ((c.virtual_time || c.seed) && c.workers != 0)
        return -EINVAL;
    CPU_ZERO(&os);
    if (sched_getaffinity(0, sizeof os, &os) != 0)
        return -errno;
    for (int i = 0; i < CPU_SETSIZE && i < CORO_MAX_CPUS; i++)
        if (CPU_ISSET(i, &os) && (!c.cpus || coro_cpuset_has(c.cpus, i)))
            cpus[ncpus++] = i;
    int nreal = ncpus;
    int fake = CORO__HOOK(coro__test_ncpus, 0);
    if (fake > 0) {
        ncpus = 0;
        for (int i = 0; i < fake && i < CORO_MAX_CPUS; i++)
            if (!c.cpus || coro_cpuset_has(c.cpus, i))
                cpus[ncpus++] = i;
    }
    if (ncpus == 0)
        return -EINVAL;

    coro_sched_t tmp = { .alloc = c.alloc };
    s = coro__alloc_aligned(&tmp, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->alloc = c.alloc;
    s->nworkers = c.workers == CORO_WORKERS_AUTO ? ncpus : c.workers;
    s->nslots = s->nworkers ? s->nworkers : 1;
    s->nall = s->nworkers ? s->nworkers + 1 : 1;     /* the caller's seat (sched/seat.c) */
    s->pin = c.pin;
    s->oversubscribed = s->nworkers > nreal;
    s->stall_ns = c.stall_ns;
    s->stall_hook = c.stall_hook;
    s->stall_arg = c.stall_arg;
    s->hist = c.histograms;
    s->diag = c.stall_ns > 0 || c.histograms;
    /* before any worker exists: every notify and park of s agrees.  A
     * single-threaded scheduler keeps the fence (its driver parks rarely
     * and plain threads' spawns into it are not its hot path) */
    s->use_membarrier = s->nworkers > 0 && s->nworkers <= CORO__MEMBARRIER_MAX_WORKERS &&
              sysconf(_SC_NPROCESSORS_ONLN) <= CORO__MEMBARRIER_MAX_CPUS &&
              coro__membarrier_register() == 0;
    coro__cpu_init();
    pthread_mutex_init(&s->shut_lock, NULL);
    pthread_cond_init(&s->shut_gone, NULL);
    pthread_mutex_init(&s->cancel_lock, NULL);
    for (int i = 0; i < s->nslots; i++)
        coro__bit_set(s->all_wmask, i);

    rc = -ENOMEM;
    s->w = coro__alloc(s, s->nall * sizeof *s->w);
    boots = coro__alloc(s, s->nslots * sizeof *boots);
    tid = coro__alloc(s, s->nslots * sizeof *tid);
    if (!s->w || !boots || !tid)
        goto fail;
    /* before the workers: each makes its own ring (FIRST TOUCH) */
    if ((rc = coro__trace_init(s, &c)) < 0)
        goto fail;
    rc = -ENOMEM;
    if (s->nworkers == 0) {
        struct coro__worker *w = coro__alloc_aligned(s, worker_size());
        if (!w)
            goto fail;
        s->w[0] = w;
        worker_init(s, w, 0, -1);
        if (worker_extras(s, w) < 0)
            goto fail;
    } else {
        for (int i = 0; i < s->nworkers; i++)
            boots[i] = (struct boot){ s, i, cpus[i % ncpus] };
        if ((rc = boot_workers(s, boots, tid, s->nworkers)) < 0)
            goto fail;
        for (int i = 0; i < s->nworkers; i++) {
            s->w[i]->thread = tid[i];
            s->w[i]->started = true;
        }
        numa_init(s);
        if ((rc = seat_init(s, cpus, ncpus)) < 0)
            goto fail;
        rc = -ENOMEM;
    }
    s->finish = coro__finish;       /* the worker's upcall (sched/sched.h) */
    s->driver = &coro__io_driver;      /* how idle workers wait for I/O */
    if ((rc = coro__vt_init(s, &c)) < 0)
        goto fail;
    if ((rc = coro__affinity_init(s, cpus, ncpus)) < 0)
        goto fail;
    if ((rc = coro__parklot_sched_init(s)) < 0)
        goto fail;
    if ((rc = coro__frames_init(s)) < 0)
        goto fail;
    if ((rc = coro__io_create(s, &s->io)) < 0)
        goto fail;
    if ((rc = coro__blocking_create(s, &c)) < 0)
        goto fail;
    coro__free(s, boots, s->nslots * sizeof *boots);
    coro__free(s, tid, s->nslots * sizeof *tid);
    /* release: the scheduler, complete, before the workers' acquire */
    __atomic_store_n(&s->boot_go, BOOT_RUN, __ATOMIC_RELEASE);
    coro__futex_wake(&s->boot_go, INT_MAX);
    *out = s;
    return 0;
fail:
    /* workers that were started wait for the word: tell them to go */
    if (s->nworkers > 0 && __atomic_load_n(&s->boot_go, __ATOMIC_RELAXED) == BOOT_WAIT &&
        s->w && s->w[0] && s->w[0]->started) {
        /* release: as the abort above */
        __atomic_store_n(&s->boot_go, BOOT_ABORT, __ATOMIC_RELEASE);
        coro__futex_wake(&s->boot_go, INT_MAX);
        for (int i = 0; i < s->nworkers; i++) {
            pthread_join(s->w[i]->thread, NULL);
            s->w[i]->started = false;
        }
    }
    coro__free(s, boots, s->nslots * sizeof *boots);
    coro__free(s, tid, s->nslots * sizeof *tid);
    sched_free(s);
    return rc;
}

int coro_sched_create(coro_sched_t **out, const coro_sched_config_t *cfg)
{
    /* system calls, thread starts, allocations, the environment: errno
     * stays the caller's (include/corokit/error.h) */
    int e = errno;
    int rc = sched_create(out, cfg);
    errno = e;
    return rc;
}

int coro_sched_destroy(coro_sched_t *s)
{
    if (!s)
        return -EINVAL;
    int e = errno;      /* futex waits, joins, the trace's file: errno is the caller's */
    int rc = coro__shutdown(s, CORO_DRAIN, CORO_FOREVER);
    /* -ETIMEDOUT: a virtual scheduler's drain found that no job could
     * ever run again and cancelled them; they have finished, and s is
     * freed as after any shutdown: destroy's errors mean "not destroyed" */
    if (rc < 0 && rc != -ETIMEDOUT) {
        errno = e;
        return rc;
    }
    /* another thread's shutdown that was inside when ours ended may still
     * touch s: wait until it has left (shutdown.c, CONCURRENT CALLS) */
    pthread_mutex_lock(&s->shut_lock);
    while (s->shut_users)
        pthread_cond_wait(&s->shut_gone, &s->shut_lock);
    pthread_mutex_unlock(&s->shut_lock);
    /* every call that started before and may still touch s after the job
     * it woke, joined or cancelled ended (a wake from a plain thread or
     * another scheduler's worker, coro_cancel, coro_join, a driver of s):
     * wait until each has left (sched/pin.c) */
    coro__pin_drain(s);
    /* a thread in coro_block_on may still be leaving the caller's seat
     * after the last job ended (sched/seat.c, LEAVING) */
    coro__seat_wait_free(s);
    stop_workers(s);
    coro__trace_write_env(s);   /* COROKIT_TRACE's file */
    sched_free(s);
    errno = e;
    return 0;
}

/* ---- spawn ------------------------------------------------------------------- */

/* adds n to the live count unless it is closed (undone then: false).
 * acq_rel on the live word: ordered against shutdown's RMW (top of file) */
static bool add_live(coro_sched_t *s, uint32_t n)
{
    if (!(__atomic_fetch_add(&s->live, n, __ATOMIC_ACQ_REL) & CORO__LIVE_CLOSED))
        return true;
    coro__live_sub(&s->live, n);
    return false;
}

/* counts a new job in s->live; false once the scheduler is closed.  On a
 * worker, from its spare units (top of file): a unit already in the count
 * changes owner, no RMW; with none left it adds a batch at once */
static inline __attribute__((always_inline)) bool count_live(coro_sched_t *s)
{
    struct coro__worker *w = coro__tls_worker;

    /* relaxed closed: a stale "open" takes a unit that is in the count
     * already, so the job counted before the close (top of file) */
    if (w && w->s == s && s->nworkers > 0 && !__atomic_load_n(&s->closed, __ATOMIC_RELAXED)) {
        if (CORO__LIKELY(w->spare)) {
            /* owner-only; atomic store for coro_sched_stats' racy read */
            __atomic_store_n(&w->spare, w->spare - 1, __ATOMIC_RELAXED);
            return true;
        }
        if (add_live(s, CORO__LIVE_BATCH)) {
            __atomic_store_n(&w->spare, CORO__LIVE_BATCH - 1, __ATOMIC_RELAXED);
            return true;
        }
        return false;
    }
    return add_live(s, 1);
}

/* a spawned job's words, before its submit publishes it (spawn_ and the
 * fresh frame's path alike; only this thread writes them until then) */
static inline __attribute__((always_inline)) void job_words(coro_t *co, coro_fn fn, coro_sched_t *s,
                                                            void (*on_exit)(coro_t *), int cls,
                                                            int prio, uint8_t flags)
{
    co->fn = fn;
    co->resume = 0;
    co->result = 0;
    co->top = co;
    co->sched = s;
    co->next = NULL;
    co->on_exit = on_exit;
    co->cls = (uint16_t)cls;
    co->prio = (int8_t)prio;
    co->flags = flags;
    co->wait_obj = NULL;
}

/* coro_spawn's body; plain is a constant: the compiler makes one copy for
 * spawns without options (the usual case: no option to read or check) and
 * one for the rest */
static inline __attribute__((always_inline)) int spawn_(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                        const coro_spawn_opts_t *opts,
                                                        const bool plain, const uint32_t pin)
{
    if (plain)
        opts = NULL;
    int prio = opts ? opts->priority : CORO_PRIO_NORMAL;
    int cls = 0;
    uint32_t old;

    if (prio < CORO_PRIO_LOW || prio > CORO_PRIO_HIGH)
        return -EINVAL;
    /* a pool frame: of this scheduler, allocated, not spawned yet */
    uint8_t *pool_st = NULL;
    int pool = coro__frame_check(s, co, &pool_st);
    if (pool < 0)
        return pool;
    if (opts && opts->affinity && (cls = coro__affinity_intern(s, opts->affinity)) < 0)
        return cls;
    if (opts && (opts->deadline < 0 || (opts->on_exit && opts->on_exit_with)))
        return -EINVAL;
    struct coro__ext *x = NULL;
    if (opts && (opts->deadline > 0 || opts->group || opts->name || opts->on_exit_with)) {
        if (!(x = coro__alloc(s, sizeof *x)))
            return -ENOMEM;
        memset(x, 0, sizeof *x);
        x->on_exit = opts->on_exit;
        x->on_exit_with = opts->on_exit_with;
        x->on_exit_ctx = opts->on_exit_ctx;
        x->deadline = opts->deadline;
        x->group = opts->group;
        x->job = co;
        x->name = opts->name;
    }
    /* claim the frame: only an idle or finished frame may start, and a
     * finished one only once its finisher let go (EXITING).  acquire: the
     * frame's previous life (its finisher's release) is over; the CAS
     * makes one of two racing spawns win */
    old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t st = old & CORO__S_MASK;
        if (st == CORO__S_DONE && (old & CORO__F_EXITING) && !(old & CORO__JOINERS_MASK) &&
            !coro__exiting_here(co)) {
            /* finished, its finisher between its CAS and its last touch
             * (rt/finish.c, NO TOUCH AFTER THE WAKE): a thread that saw
             * DONE may spawn it again.  Wait for the finisher to let go (a
             * few instructions; a thread-joined frame's on_exit at most),
             * then look again.  acquire: as the load above */
            for (unsigned spin = 0; (old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE)) &
                                    CORO__F_EXITING; spin++)
                if (spin > 64)
                    sched_yield();
            continue;
        }
        if ((st != CORO__S_IDLE && st != CORO__S_DONE) ||
            (old & (CORO__F_EXITING | CORO__JOINERS_MASK))) {
            if (x)
                coro__free(s, x, sizeof *x);
            return -EBUSY;
        }
        /* acq_rel: claims the frame against a racing spawn, coro_call or
         * joiner (one CAS wins); acquire pairs with the finisher's release
         * of EXITING (its last touch of the frame happened before) */
        if (__atomic_compare_exchange_n(&co->state, &old,
                                        CORO__S_READY | (pool ? CORO__F_POOL : 0) | pin, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    if (!count_live(s)) {
        /* give the frame back as it was; a joiner that came meanwhile
         * sees it (acq_rel) and is woken */
        uint32_t prev = __atomic_exchange_n(&co->state, old & CORO__S_MASK, __ATOMIC_ACQ_REL);
        if (prev & CORO__F_THREAD_JOIN)
            coro__thread_joiners_wake(s, co);
        if (x)
            coro__free(s, x, sizeof *x);
        return -ESHUTDOWN;      /* a pool frame stays the caller's: coro_frame_free */
    }
    if (pool)
        coro__frame_mark_spawned(pool_st);
    job_words(co, fn, s, opts ? opts->on_exit : NULL, cls, prio, pool == 2 ? CORO__FL_SMALL : 0);
    if (x) {
        co->ext = x;
        co->flags |= CORO__FL_EXT;
        if (x->group)
            coro__group_join(x->group, x);
    }
    coro__trace_spawn(s, co);
    struct coro__worker *w = coro__tls_worker;
    if (CORO__LIKELY(w && w->s == s)) {
        coro__submit_spawned(s, co);
    } else {
        /* from outside: the job may run and end, and destroy free s,
         * before the notify after the push is done with s (sched/pin.c) */
        int tok = coro__pin_owned(s);
        coro__submit_spawned(s, co);
        coro__unpin(tok);
    }
    return 0;
}

/* spawns with options, and pinned ones (pin: the state bits the claim
 * sets beside READY) */
static __attribute__((noinline)) int spawn_opts(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                const coro_spawn_opts_t *opts, uint32_t pin)
{
    return spawn_(s, co, fn, opts, false, pin);
}

/* spawns without options: spawn_'s copy for them */
static __attribute__((noinline)) int spawn_plain(coro_sched_t *s, coro_t *co, coro_fn fn)
{
    return spawn_(s, co, fn, NULL, true, 0);
}

/* the end of the worker's short spawn paths (SPAWNING WITH A HOOK, A
 * FRESH FRAME), once their CAS claimed co: count_live's usual case (a
 * spare unit changes owner), the pool's spawned mark (pool_st, NULL for a
 * caller's frame), the job's words, the submit.  Inlined in each, which
 * keep their own registers */
static inline __attribute__((always_inline)) int spawned_here(struct coro__worker *w,
                                                              coro_sched_t *s, coro_t *co,
                                                              coro_fn fn,
                                                              void (*on_exit)(coro_t *),
                                                              uint32_t spare, uint8_t *pool_st,
                                                              uint8_t flags)
{
    /* owner-only; atomic store for coro_sched_stats' racy read */
    __atomic_store_n(&w->spare, spare - 1, __ATOMIC_RELAXED);
    if (pool_st)
        coro__frame_mark_spawned(pool_st);
    job_words(co, fn, s, on_exit, 0, CORO_PRIO_NORMAL, flags);
    if (!coro__submit_spawned_lifo(w, s, co))
        coro__submit(s, co, false);
    return 0;
}

/* SPAWNING WITH A HOOK.  A fork's children are often spawned with an
 * on_exit hook and nothing else (the hook frees the block the children's
 * frames share), from a worker of s that has a spare unit in hand.  Then
 * spawn_'s option checks have one answer each (NORMAL, class 0, no ext),
 * and its claim, count and submit reduce to the fresh frame's below: this
 * path checks, claims the frame with spawn_'s CAS (from IDLE or DONE, with
 * no finisher or thread joiner still holding it: anything else fails the
 * CAS or the look before it and goes the long way), takes the spare unit
 * and submits, without spawn_'s register saves.  Anything else (other
 * options, no spare, closing, the trace on, a pool frame that is not this
 * one's to spawn) is spawn_'s, whole.  coro_spawn with options jumps
 * here first: inlined there, its calls would cost the fresh frame's path
 * the register saves that path avoids. */
static __attribute__((noinline)) int spawn_hooked(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                  const coro_spawn_opts_t *opts)
{
    struct coro__worker *w = coro__tls_worker;
    uint8_t *pool_st = NULL;
    int pool;

    if (!s || !co || !fn)
        return -EINVAL;
    if (!w || w->s != s || opts->priority != CORO_PRIO_NORMAL || opts->affinity ||
        opts->deadline || opts->group || opts->name || opts->on_exit_with || !w->spare || s->nworkers == 0 || s->trace ||
        /* relaxed: as count_live's */
        __atomic_load_n(&s->closed, __ATOMIC_RELAXED) || (pool = coro__frame_check(s, co, &pool_st)) < 0)
        return spawn_opts(s, co, fn, opts, 0);
    /* relaxed: the CAS below acquires (spawn_'s claim) */
    uint32_t old = __atomic_load_n(&co->state, __ATOMIC_RELAXED);
    uint32_t st = old & CORO__S_MASK;
    if ((st != CORO__S_IDLE && st != CORO__S_DONE) || (old & (CORO__F_EXITING | CORO__JOINERS_MASK)))
        return spawn_opts(s, co, fn, opts, 0);
    /* read before the CAS: after its acquire the compiler would read it
     * again, though only this thread writes it */
    uint32_t spare = w->spare;
    /* acq_rel, as spawn_'s claim: one of two racing spawns wins, and the
     * frame's previous life (its finisher's release) is over */
    if (!__atomic_compare_exchange_n(&co->state, &old, CORO__S_READY | (pool ? CORO__F_POOL : 0),
                                     false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return spawn_opts(s, co, fn, opts, 0);
    return spawned_here(w, s, co, fn, opts->on_exit, spare, pool ? pool_st : NULL,
                        pool == 2 ? CORO__FL_SMALL : 0);
}

/* SPAWNING A FRESH FRAME.  A worker's usual spawn is of the pool frame it
 * has just allocated (FRESH, lib/sched/frame_slab.c), without options, with
 * a spare unit of the live count in hand: a chain's next link, a fork's
 * children.  Every answer spawn_ would look up is known then: the state
 * byte says allocated and not spawned (2: a small slab), the state word is
 * still the zero coro_frame_alloc wrote (no spawn, call or join has
 * touched it: anything else fails the CAS below and goes the long way),
 * the job is NORMAL, class 0, with no ext.  So this path only checks, then
 * claims the frame with the same CAS (a racing spawn of the same frame from
 * another thread still meets exactly one winner), and submits: in the
 * usual case a store to the LIFO slot, else a call to coro__submit as its
 * last act: no register to save.
 * Anything it does not know - options, another frame, no spare unit, the
 * scheduler closing, the trace on - is spawn_'s, whole. */
int coro_spawn(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    struct coro__worker *w = coro__tls_worker;

    if (opts)
        return spawn_hooked(s, co, fn, opts);
    if (CORO__LIKELY(co && (void *)co == coro__fresh.frame && fn && w && w->s == s &&
                     w->spare && s->nworkers > 0 && !s->trace &&
                     /* relaxed: as count_live's */
                     !__atomic_load_n(&s->closed, __ATOMIC_RELAXED) &&
                     /* relaxed: the owner wrote it (coro__frame_check) */
                     __atomic_load_n(coro__fresh.st, __ATOMIC_RELAXED) == CORO__FRAME_ALLOC)) {
        uint32_t idle = CORO__S_IDLE;
        /* read before the CAS: after its acquire the compiler would read
         * them again, though only this thread writes them */
        uint32_t spare = w->spare;
        uint8_t *st = coro__fresh.st;
        /* acq_rel, as spawn_'s claim (one of two racing spawns wins) */
        if (CORO__LIKELY(__atomic_compare_exchange_n(&co->state, &idle,
                                                     CORO__S_READY | CORO__F_POOL, false,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))) {
            return spawned_here(w, s, co, fn, NULL, spare, st, CORO__FL_SMALL);
        }
    }
    if (!s || !co || !fn)
        return -EINVAL;
    return spawn_plain(s, co, fn);
}

int coro__spawn_pinned(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    if (!s || !co || !fn)
        return -EINVAL;
    return spawn_opts(s, co, fn, opts, CORO__JOINER_ONE);
}
