/* SPDX-License-Identifier: MIT */
/* private: the scheduler's data structures (lib/sched.c, worker.c, cls.c). */
#ifndef COROKIT_SCHED_IMPL_H
#define COROKIT_SCHED_IMPL_H

#include "internal.h"

#define CORO__NPRIO 3                   /* index = priority + 1 */
#define CORO__PRIO_IDX(p) ((p) + 1)
#define CORO__LOCAL_SIZE 256            /* per worker and priority */
#define CORO__INBOX_SIZE 256
#define CORO__CLASS_SIZE 1024           /* per class and priority */
#define CORO__MAX_CLASSES 4096
#define CORO__WMASK_WORDS (CORO_MAX_WORKERS / 64)
#define CORO__GLOBAL_INTERVAL 61        /* ticks between global-queue looks */
#define CORO__LIFO_MAX 3                /* LIFO-slot runs in a row */
#define CORO__BUDGET 128                /* ready awaits before a forced yield */
#define CORO__LIVE_BATCH 64             /* finished jobs a worker counts before it flushes */

/* An affinity class: one distinct set of workers a job may run on.  Class 0
 * is "any worker"; its queues are the global injection queue.  A class is
 * created once (under cls_lock) and never freed before the scheduler, so
 * readers need no lock: they load the table pointer with acquire. */
struct coro__cls {
    uint64_t wmask[CORO__WMASK_WORDS];  /* workers allowed */
    coro_cpuset_t cpus;                 /* the user's mask, cut to the workers' CPUs */
    int nworkers;                       /* popcount of wmask */
    struct coro__mq q[CORO__NPRIO];
};

struct coro__worker {
    /* touched by other threads */
    coro_t *lifo;                       /* atomic: NORMAL "any" job, stealable */
    uint32_t futex;                     /* park epoch */
    struct coro__lq local[CORO__NPRIO];
    struct coro__mq inbox[CORO__NPRIO];
    struct coro__lq yielded[CORO__NPRIO];   /* jobs that yielded: run after the rest */
    /* owner only */
    coro_sched_t *s __attribute__((aligned(CORO__CACHELINE)));
    int idx, cpu;                       /* cpu: -1 when single-threaded */
    bool pinned, started;
    uint32_t started_st;                /* atomic: the drive word (single-threaded), below */
    pthread_t thread;
    uint64_t tick;                      /* counts down to the next global-first look */
    unsigned lifo_streak;
    bool searching;                     /* counted in s->searching */
    uint32_t unflushed;                 /* finished jobs not yet taken off s->live */
    unsigned since_normal, since_low;   /* starvation bound, see worker.c */
    uint32_t rng;
    struct coro__tring *tring;          /* trace ring, NULL = off (lib/trace.c) */
    uint16_t *served;                   /* classes > 0 this worker serves */
    uint32_t nserved;                   /* atomic: grows when classes appear */
    /* counters: written by the owner (relaxed), read by coro_sched_stats */
    uint64_t n_run, n_steals, n_stolen, n_parks, n_wakeups, n_io;
    /* diagnostics (lib/diag.c): the job this worker runs (NULL = none) and
     * its body, stored relaxed at each step's start and end and read racily
     * by coro_sched_dump (never dereferenced there); with s->diag also the
     * step's start (ns) and name */
    coro_t *cur;
    coro_fn cur_fn;
    int64_t cur_t0;                     /* 0 = unknown (diagnostics off) */
    const char *cur_name;
    uint64_t n_stalls;
    /* with s->hist: ready->running per priority, step, I/O->running */
    uint64_t h_ready[CORO__NPRIO][CORO_HIST_BUCKETS];
    uint64_t h_step[CORO_HIST_BUCKETS];
    uint64_t h_io[CORO_HIST_BUCKETS];
    ck_ring_buffer_t bufs[] __attribute__((aligned(CORO__CACHELINE)));
};

struct coro_sched {
    int nworkers;                       /* 0 = single-threaded */
    int nslots;                         /* worker structs (max(1, nworkers)) */
    bool pin;
    bool oversubscribed;                /* more workers than CPUs: never spin */
    struct coro__trace *trace;          /* NULL = tracing off (lib/trace.c) */
    struct ck_malloc *alloc;
    struct coro__worker **w;
    uint64_t all_wmask[CORO__WMASK_WORDS];

    /* affinity classes */
    pthread_mutex_t cls_lock;
    struct coro__cls **cls;             /* fixed-size table, entries published with release */
    uint32_t ncls;                      /* atomic */

    /* parked workers: a bit per worker, set by the worker before its last
     * look for work and cleared by whoever claims it to wake it */
    uint64_t idle[CORO__WMASK_WORDS] __attribute__((aligned(CORO__CACHELINE)));
    uint32_t searching;                 /* atomic: workers searching for work (worker.c) */
    uint32_t rr;                        /* atomic: round-robin for outside submissions */
    /* atomic: HIGH and LOW jobs queued (counted before the push, taken off
     * when find_work returns one): 0 lets a worker look at NORMAL only */
    uint32_t other_prio __attribute__((aligned(CORO__CACHELINE)));

    /* lifecycle */
    uint32_t closed __attribute__((aligned(CORO__CACHELINE)));  /* atomic bool, read-mostly */
    uint32_t cancelling;                /* atomic bool */
    uint32_t live __attribute__((aligned(CORO__CACHELINE)));    /* jobs + CLOSED bit */
    uint32_t stopping;                  /* atomic bool: workers exit when idle */
    uint32_t shut_done;                 /* atomic bool: shutdown completed */
    pthread_mutex_t shut_lock;
    pthread_mutex_t cancel_lock;        /* one cancel_all at a time */

    struct coro__io *io;
    struct coro__lotsched *lot;         /* lot timers + wait registry (lib/lot.c) */
    struct coro__frames *frames;        /* pool frames (lib/frame.c) */
    struct coro__bpool *blocking;       /* the blocking pool (lib/blocking.c) */

    /* diagnostics (lib/diag.c), fixed at create: diag = stall_ns > 0 ||
     * hist, the one branch a step pays when both are off */
    bool diag, hist;
    int64_t stall_ns;
    void (*stall_hook)(const coro_stall_t *, void *);
    void *stall_arg;
};

#define CORO__LIVE_CLOSED 0x80000000u

/* The drive word of a single-threaded scheduler (s->w[0]->started_st, a
 * futex): bit 0 says a thread drives the scheduler; bits 1-15 count the
 * threads in coro_join that wait for their job while another drives; bits
 * 16-31 are a sequence the driver bumps after each job that finishes.  A
 * waiting joiner sleeps on the whole word, so either change - the driver
 * stopping, or some job finishing - wakes it (sched.c, "single-threaded
 * driving"). */
#define CORO__DRIVE_ON     1u
#define CORO__DRIVE_WAITER 2u
#define CORO__DRIVE_WMASK  0xfffeu
#define CORO__DRIVE_SEQ    0x10000u

/* a job's completed result travels in this yield when its budget ran out
 * (coro.c): cancel must never replace it (worker.c) */
extern const struct coro_await_ops coro__yield_ops CORO__HIDDEN;

/* the calling thread's worker, if any */
extern __thread struct coro__worker *coro__tls_worker CORO__HIDDEN;
extern __thread int coro__tls_budget CORO__HIDDEN;
extern __thread int coro__tls_in_job CORO__HIDDEN;
/* single-threaded driving with a deadline (coro_join_timeout): coro__park
 * sleeps at most until it (absolute ns, 0 = none) */
extern __thread int64_t coro__tls_drive_deadline CORO__HIDDEN;

/* cls.c */
CORO__HIDDEN int coro__cls_init(coro_sched_t *s, const int *cpus, int ncpus);
CORO__HIDDEN void coro__cls_fini(coro_sched_t *s);
/* intern aff (NULL = any): returns the class index >= 0, or -EINVAL (empty,
 * no worker's CPU), -ENOMEM (table full or no memory) */
CORO__HIDDEN int coro__cls_intern(coro_sched_t *s, const coro_cpuset_t *aff);
static inline struct coro__cls *coro__cls_get(coro_sched_t *s, unsigned idx)
{
    struct coro__cls **tab = s->cls;
    /* acquire: pairs with the release store that published the class */
    return __atomic_load_n(&tab[idx], __ATOMIC_ACQUIRE);
}
static inline bool coro__cls_allows(const struct coro__cls *c, int widx)
{
    return (c->wmask[widx / 64] >> (widx % 64)) & 1;
}

/* worker.c */
CORO__HIDDEN void *coro__worker_main(void *arg);
/* run job until it suspends, yields or finishes; true when it finished
 * (the frame may then be gone: only its address is known) */
CORO__HIDDEN bool coro__run_job(struct coro__worker *w, coro_t *job);
CORO__HIDDEN coro_t *coro__find_work(struct coro__worker *w);
CORO__HIDDEN void coro__submit(coro_sched_t *s, coro_t *job, bool yield);
CORO__HIDDEN coro_t *coro__park(struct coro__worker *w);
CORO__HIDDEN void coro__wake_all_workers(coro_sched_t *s);
CORO__HIDDEN unsigned coro__worker_depth(struct coro__worker *w);

/* blocking.c: the pool of coro_blocking (see its opening essay).  create:
 * no thread started, 0 or -ENOMEM; cancel: wake every queued call with
 * -ECANCELED (s->cancelling already set); destroy: after the drain, wait
 * for the pool's threads to leave and free it; counts: for tests. */
CORO__HIDDEN int coro__blocking_create(coro_sched_t *s, const coro_sched_config_t *c);
CORO__HIDDEN void coro__blocking_cancel(coro_sched_t *s);
/* the same for the queued calls of jobs that carry CORO__F_CANCEL */
CORO__HIDDEN void coro__blocking_cancel_jobs(coro_sched_t *s);
CORO__HIDDEN void coro__blocking_destroy(coro_sched_t *s);
CORO__HIDDEN void coro__blocking_counts(coro_sched_t *s, uint32_t *threads, uint64_t *started,
                                        uint64_t *retired);
CORO__HIDDEN bool coro__blocking_queued(coro_sched_t *s);
/* threads started by an arm, on a worker, so far (tests) */
CORO__HIDDEN uint64_t coro__blocking_arm_starts(coro_sched_t *s);
/* test hook: the thread-creating call (pthread_create by default) */
extern int (*coro__blocking_spawn_hook)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                        void *) CORO__HIDDEN;

/* diag.c: the stall report (hook or stderr) of a step of job on w that has
 * run dur ns so far, body fn; the histogram bucket of a value in ns; the
 * ready stamp (coro_t.reserved, 64 ns units) and its age */
CORO__HIDDEN void coro__stall_report(struct coro__worker *w, coro_t *job, coro_fn fn,
                                     int64_t dur);
static inline unsigned coro__hist_bucket(int64_t ns)
{
    if (ns < 2)
        return 0;
    unsigned b = 63u - (unsigned)__builtin_clzll((uint64_t)ns);
    return b < CORO_HIST_BUCKETS ? b : CORO_HIST_BUCKETS - 1;
}
#define CORO__READY_SHIFT 6

/* sched.c */
CORO__HIDDEN void coro__finish(coro_t *job);

CORO__HIDDEN void coro__flush_live(struct coro__worker *w);

#endif
