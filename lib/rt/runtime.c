/* SPDX-License-Identifier: MIT */
/* The scheduler's life: create and destroy.  Its neighbours in rt/:
 * spawn.c (coro_spawn), cancel_one.c (coro_cancel), shutdown.c (the drain
 * and cancel of every job), finish.c (the end of a job), join.c (coro_join),
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

/* create's steps, in order: the config checked, the CPUs chosen, s made
 * with the config's settings, the workers started (FIRST TOUCH), then (in
 * sched_create) the parts that want every worker's struct; on a failure,
 * the started workers told to return.  Each returns 0 or the error, s then
 * freed by create */

static int config_check(const coro_sched_config_t *c)
{
    if (c->workers < CORO_WORKERS_AUTO || c->workers > CORO_MAX_WORKERS)
        return -EINVAL;
    if (c->alloc && (!c->alloc->alloc || !c->alloc->free))
        return -EINVAL;
    if (c->stall_ns < 0 || c->blocking_keepalive_ns < 0)
        return -EINVAL;
    /* virtual time and seeded picks need the one driving thread */
    if ((c->virtual_time || c->seed) && c->workers != 0)
        return -EINVAL;
    return 0;
}

/* the CPUs the workers take, into cpus: the caller's affinity within
 * .cpus (the test hook's count of CPUs in place of the machine's).
 * Returns how many, *nreal those of the machine, -EINVAL when there is
 * none, or -errno of sched_getaffinity */
static int usable_cpus(const coro_sched_config_t *c, int *cpus, int *nreal)
{
    cpu_set_t os;
    int ncpus = 0;

    CPU_ZERO(&os);
    if (sched_getaffinity(0, sizeof os, &os) != 0)
        return -errno;
    for (int i = 0; i < CPU_SETSIZE && i < CORO_MAX_CPUS; i++)
        if (CPU_ISSET(i, &os) && (!c->cpus || coro_cpuset_has(c->cpus, i)))
            cpus[ncpus++] = i;
    *nreal = ncpus;
    int fake = CORO__HOOK(coro__test_ncpus, 0);
    if (fake > 0) {
        ncpus = 0;
        for (int i = 0; i < fake && i < CORO_MAX_CPUS; i++)
            if (!c->cpus || coro_cpuset_has(c->cpus, i))
                cpus[ncpus++] = i;
    }
    return ncpus ? ncpus : -EINVAL;
}

/* s with the config's settings, before any worker exists; NULL when out
 * of memory */
static coro_sched_t *sched_new(const coro_sched_config_t *c, int ncpus, int nreal)
{
    coro_sched_t tmp = { .alloc = c->alloc };
    coro_sched_t *s = coro__alloc_aligned(&tmp, sizeof *s);

    if (!s)
        return NULL;
    s->alloc = c->alloc;
    s->nworkers = c->workers == CORO_WORKERS_AUTO ? ncpus : c->workers;
    s->nslots = s->nworkers ? s->nworkers : 1;
    s->nall = s->nworkers ? s->nworkers + 1 : 1;     /* the caller's seat (sched/seat.c) */
    s->pin = c->pin;
    s->oversubscribed = s->nworkers > nreal;
    s->stall_ns = c->stall_ns;
    s->stall_hook = c->stall_hook;
    s->stall_arg = c->stall_arg;
    s->hist = c->histograms;
    s->diag = c->stall_ns > 0 || c->histograms;
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
    return s;
}

/* the single-threaded scheduler's one struct, made by create itself (its
 * driver is any thread) */
static int one_worker(coro_sched_t *s)
{
    struct coro__worker *w = coro__alloc_aligned(s, worker_size());

    if (!w)
        return -ENOMEM;
    s->w[0] = w;
    worker_init(s, w, 0, -1);
    return worker_extras(s, w);
}

/* the workers' threads, started on cpus and waiting for boot_go, then
 * the nodes and the caller's seat.  boots may be freed after: each thread
 * read its own before it counted itself in s->boot_ready, which
 * boot_workers waited for */
static int start_workers(coro_sched_t *s, struct boot *boots, pthread_t *tid, const int *cpus,
                         int ncpus)
{
    int rc;

    for (int i = 0; i < s->nworkers; i++)
        boots[i] = (struct boot){ s, i, cpus[i % ncpus] };
    if ((rc = boot_workers(s, boots, tid, s->nworkers)) < 0)
        return rc;
    for (int i = 0; i < s->nworkers; i++) {
        s->w[i]->thread = tid[i];
        s->w[i]->started = true;
    }
    numa_init(s);
    return seat_init(s, cpus, ncpus);
}

/* the workers' slots and the trace (before the workers: each makes its
 * own ring, FIRST TOUCH), then the workers */
static int make_workers(coro_sched_t *s, const coro_sched_config_t *c, const int *cpus,
                        int ncpus)
{
    int rc = -ENOMEM;

    s->w = coro__alloc(s, s->nall * sizeof *s->w);
    struct boot *boots = coro__alloc(s, s->nslots * sizeof *boots);
    pthread_t *tid = coro__alloc(s, s->nslots * sizeof *tid);
    if (s->w && boots && tid && (rc = coro__trace_init(s, c)) == 0)
        rc = s->nworkers == 0 ? one_worker(s) : start_workers(s, boots, tid, cpus, ncpus);
    coro__free(s, boots, s->nslots * sizeof *boots);
    coro__free(s, tid, s->nslots * sizeof *tid);
    return rc;
}

/* create failed: workers that were started wait for the word; tell them
 * to return, and join them */
static void abort_workers(coro_sched_t *s)
{
    if (s->nworkers > 0 && __atomic_load_n(&s->boot_go, __ATOMIC_RELAXED) == BOOT_WAIT &&
        s->w && s->w[0] && s->w[0]->started) {
        /* release: as boot_workers' abort */
        __atomic_store_n(&s->boot_go, BOOT_ABORT, __ATOMIC_RELEASE);
        coro__futex_wake(&s->boot_go, INT_MAX);
        for (int i = 0; i < s->nworkers; i++) {
            pthread_join(s->w[i]->thread, NULL);
            s->w[i]->started = false;
        }
    }
}

static int sched_create(coro_sched_t **out, const coro_sched_config_t *cfg)
{
    coro_sched_config_t c = cfg ? *cfg : CORO_SCHED_CONFIG_DEFAULT;
    int cpus[CORO_MAX_CPUS], ncpus, nreal = 0, rc;
    coro_sched_t *s;

    if (!out)
        return -EINVAL;
    *out = NULL;
    if ((rc = config_check(&c)) < 0)
        return rc;
    if ((ncpus = usable_cpus(&c, cpus, &nreal)) < 0)
        return ncpus;
    if (!(s = sched_new(&c, ncpus, nreal)))
        return -ENOMEM;
    if ((rc = make_workers(s, &c, cpus, ncpus)) < 0)
        goto fail;
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
    /* release: the scheduler, complete, before the workers' acquire */
    __atomic_store_n(&s->boot_go, BOOT_RUN, __ATOMIC_RELEASE);
    coro__futex_wake(&s->boot_go, INT_MAX);
    *out = s;
    return 0;
fail:
    abort_workers(s);
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
