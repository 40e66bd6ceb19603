/* SPDX-License-Identifier: MIT */
/* private, layer 2 (waiting): the timer heap, each worker's timers, a
 * timerfd programmed outside its heap's lock, the parking lot (its wait
 * lists, timers and registry, the cancel of one waiting job), wake lists,
 * the sync-awaitable machinery every waitable object shares, coro_done.
 * Includes only sched/ and base/.  See docs/architecture.md. */
#ifndef COROKIT_LIB_WAIT_WAIT_H
#define COROKIT_LIB_WAIT_WAIT_H

#include "sched/sched.h"

/* ---- the timer heap (lib/wait/heap.c) -----------------------------------------
 * One implementation for every timed wait: a 4-ary min-heap by deadline,
 * without a lock of its own (each owner holds its heap's lock around
 * every call).  Each timer has a handle, given at the push (t->h), that
 * finds its record in O(1) until it leaves (coro__heap_get), so a wait
 * that ends another way removes its timer in O(1) amortized, without a
 * search (coro__heap_del marks it; heap.c: HANDLES, AND REMOVAL BY MARK). */
enum {
    CORO__TK_FD = 0,    /* an fd wait: the slot keeps the handle (timer_handle) */
    CORO__TK_SLEEP,     /* a sleep: its awaitable's arg[CORO__SLEEP_SLOT] (+ 1) */
    CORO__TK_PARKLOT,       /* a lot waiter: its wait_slot (+ 1) */
};
#define CORO__SLEEP_SLOT 2

/* a timer's record, rec[handle] while it is in the heap */
struct coro__timer_record {
    int64_t deadline;
    void *p;            /* the waiting job; NULL: removed, or a free handle */
    union {
        const void *key;    /* LOT: what it waits on */
        uint32_t seq;       /* FD: which wait of the fd's slot (never dereference
                               p unless the slot still holds p for this seq) */
    };
    uint32_t kind : 2;  /* CORO__TK_* */
    uint32_t aux : 30;  /* FD: fd * 2 + dir */
    uint32_t h;         /* the handle (coro__heap_push sets it) */
};

/* a heap entry: what the sifts compare and move */
struct coro__hent {
    int64_t deadline;
    uint32_t h;
    uint32_t unused;
};

struct coro__heap {
    struct coro__hent *a;   /* a[0 .. n - 1], a[0] the earliest (heap.c: LAYOUT) */
    struct coro__timer_record *rec;    /* rec[handle] */
    uint32_t *fs;       /* fs[0 .. nfree - 1]: the free handles */
    uint32_t n, dead, cap, nfree;   /* dead: marked entries still in a[] */
    coro_sched_t *s;    /* its allocator */
};

/* init: room for cap timers (0: none until the first push), 0 or
 * -ENOMEM; push: t->h set, 0 or -ENOMEM; next: the earliest live deadline,
 * INT64_MAX if none - or a timer set for INT64_MAX: count tells (drops
 * the marked entries at the top); first: the
 * earliest live timer's record, NULL if none; pop: the earliest live timer
 * out into *out (one must be there); get: handle's record if its timer is
 * live and p's, else NULL; del: the live timer of handle (got through get)
 * removed, its record into *out; fini: the arrays freed, the entries
 * dropped unread */
CORO__HIDDEN int coro__heap_init(struct coro__heap *h, coro_sched_t *s, uint32_t cap);
CORO__HIDDEN int coro__heap_push(struct coro__heap *h, struct coro__timer_record *t);
CORO__HIDDEN int64_t coro__heap_next(struct coro__heap *h);
CORO__HIDDEN const struct coro__timer_record *coro__heap_first(struct coro__heap *h);
CORO__HIDDEN void coro__heap_pop(struct coro__heap *h, struct coro__timer_record *out);
CORO__HIDDEN const struct coro__timer_record *coro__heap_get(const struct coro__heap *h,
                                                      uint32_t handle, const void *p);
CORO__HIDDEN void coro__heap_del(struct coro__heap *h, uint32_t handle, struct coro__timer_record *out);
CORO__HIDDEN void coro__heap_fini(struct coro__heap *h);

/* the live timers */
static inline uint32_t coro__heap_count(const struct coro__heap *h)
{
    return h->n - h->dead;
}

/* a handle's record, live (p set) or not: for walks over rec[0 .. cap - 1] */
static inline const struct coro__timer_record *coro__heap_rec(const struct coro__heap *h, uint32_t handle)
{
    return &h->rec[handle];
}

/* ---- a worker's timers (lib/wait/wtimer.c) ----------------------------------------
 * The timed waits begun on a worker - lot waits and I/O waits alike -
 * keep their timers in that worker's heap, under that worker's lock; the
 * worker fires them itself (at its DUE TIMERS looks and before it parks)
 * and the I/O thread only when the worker is stuck in a long step.  A
 * timer's SLOT (what its wait keeps) names its home and its handle:
 * home 0 is the scheduler's own heap (plain threads' and blocking
 * contexts' waits, schedulers without workers), home i + 1 worker i's. */
#define CORO__WT_HANDLE_BITS 20     /* handles per heap: a push beyond is -ENOMEM */
#define CORO__WT_HANDLES (1u << CORO__WT_HANDLE_BITS)

struct coro__wtimers {
    pthread_mutex_t lock;
    struct coro__heap heap;     /* kinds LOT, FD and SLEEP together */
    int64_t *next;              /* the owner's published deadline (coro__worker.timer_next) */
    uint32_t npend;             /* atomic: the heap's live count, written under lock */
} __attribute__((aligned(CORO__CACHELINE)));

/* the timers a fire takes out under one hold of a heap's lock: the adds
 * that wait for the lock meanwhile wait for a few pops */
#define CORO__TIMER_BATCH 16

/* the I/O layer's kinds' timers (FD, SLEEP) that left a worker's heap in
 * a fire, handed back to the caller, who wakes their waits after the
 * heap's lock (lib/io/timers.c); the caller sets n = 0 */
struct coro__wt_batch {
    int n;
    struct coro__timer_record t[CORO__TIMER_BATCH];
};

/* slot: home and handle, + 1 (0: no timer); fits an int32_t */
static inline uint32_t coro__wt_slot(uint32_t home, uint32_t handle)
{
    return (home << CORO__WT_HANDLE_BITS | handle) + 1;
}
static inline uint32_t coro__wt_home(uint32_t slot)
{
    return (slot - 1) >> CORO__WT_HANDLE_BITS;
}
static inline uint32_t coro__wt_handle(uint32_t slot)
{
    return (slot - 1) & (CORO__WT_HANDLES - 1);
}

/* the home a wait begun on this thread for a job of s gets: the calling
 * worker's (1 + its index), or 0 (not a worker of s, or s has none) */
CORO__HIDDEN uint32_t coro__wt_here(coro_sched_t *s);
/* worker home's timers (home >= 1) */
CORO__HIDDEN struct coro__wtimers *coro__wt_get(coro_sched_t *s, uint32_t home);
/* by home's owner: push t (t->h set); its slot into *slot under the
 * lock (slot NULL: a sleep, into its awaitable's arg[CORO__SLEEP_SLOT]).
 * 0, -ENOMEM, or -ECANCELED (an I/O kind's job or scheduler cancelling).
 * Publishes the new earliest deadline. */
CORO__HIDDEN int coro__wt_push(coro_sched_t *s, uint32_t home, struct coro__timer_record *t,
                               uint32_t *slot);
/* under home's lock (any thread): the live timer of slot removed, its
 * record into *out (an O(1) mark: lib/wait/heap.c) */
CORO__HIDDEN void coro__wt_del_locked(struct coro__wtimers *t, uint32_t slot,
                                      struct coro__timer_record *out);
/* fire what is due at now in worker home's heap: by its owner (try:
 * give up if the lock is held - its holder is firing or marking) or by
 * the I/O thread for a stuck worker (both through lib/io/timers.c).  The
 * lot's timers are fired here, *fired += the jobs woken (into woken, the
 * owner's batch: coro__wake_into; NULL from the I/O thread); the I/O
 * kinds' are added to *io, for the caller to wake.  Returns the next deadline,
 * read under the lock and published (INT64_MAX none); io full
 * (CORO__TIMER_BATCH): more may be due, call again after the wake-ups */
CORO__HIDDEN int64_t coro__wt_expire(coro_sched_t *s, uint32_t home, int64_t now, bool try,
                                     int *fired, struct coro__wt_batch *io,
                                     struct coro__woken *woken);
/* how many workers' heaps (homes 1 ..), 0 without */
CORO__HIDDEN uint32_t coro__wt_homes(coro_sched_t *s);
/* the live timers of every worker's heap (racy: a hint; exact when quiet) */
CORO__HIDDEN uint32_t coro__wt_count(coro_sched_t *s);

/* ---- a timerfd programmed outside its heap's lock (lib/wait/tfd.c) ---------------
 * want: the deadline the fd must hold (INT64_MAX: disarmed), stored under
 * the owner's heap lock (coro__tfd_want); coro__tfd_sync, called after
 * that lock is dropped, programs the fd with the newest want. */
struct coro__tfd {
    int fd;
    int64_t want;       /* atomic: written under the owner's heap lock */
    int64_t set;        /* under lock: what the fd holds */
    pthread_mutex_t lock;
};

CORO__HIDDEN void coro__tfd_init(struct coro__tfd *t, int fd);
CORO__HIDDEN void coro__tfd_sync(struct coro__tfd *t);
CORO__HIDDEN void coro__tfd_fini(struct coro__tfd *t);

/* under the owner's heap lock: the deadline decided; true if it changed
 * (then coro__tfd_sync after the lock) */
static inline bool coro__tfd_want(struct coro__tfd *t, int64_t d)
{
    /* relaxed: ordered by the heap lock among writers; coro__tfd_sync
     * reads it under the fd lock (lib/wait/tfd.c) */
    if (__atomic_load_n(&t->want, __ATOMIC_RELAXED) == d)
        return false;
    __atomic_store_n(&t->want, d, __ATOMIC_RELAXED);
    return true;
}

/* under the owner's heap lock: the deadline decided last */
static inline int64_t coro__tfd_wanted(const struct coro__tfd *t)
{
    return __atomic_load_n(&t->want, __ATOMIC_RELAXED);  /* relaxed: as coro__tfd_want */
}

/* ---- the parking lot (lib/wait/parklot.c) -----------------------------------------
 *
 * A hashed table of wait lists keyed by address (WebKit's ParkingLot, the
 * kernel's futex hash): jobs and plain threads wait on a key, wakers wake
 * one or all waiters of a key.  Objects that are waited on (jobs for
 * coro_done, events, mutexes, channels ...) need no list of their own.
 * Each scheduler keeps its lot timers (a heap behind its own timerfd) and
 * a registry of the buckets and joiner slots its jobs wait in, so that
 * CORO_CANCEL visits exactly its own waits.
 */
typedef bool (*coro__parklot_validate_fn)(void *key, void *ctx, intptr_t *res);

/* per scheduler: timers + registry.  init: 0 or -ENOMEM / -errno (timerfd). */
struct coro__parklot_sched;
CORO__HIDDEN int coro__parklot_sched_init(coro_sched_t *s);
CORO__HIDDEN void coro__parklot_sched_fini(coro_sched_t *s);

/* coro__parklot_park_job - under the key's bucket lock: call validate(key,
 * ctx, &res) (NULL = always wait): if it returns false, do not wait:
 * return CORO__ARM_READY with *res.  If the job's scheduler is cancelling,
 * CORO__ARM_READY with -ECANCELED.  Otherwise queue job on key (FIFO) with
 * a timer at the absolute CLOCK_MONOTONIC deadline (ns, -1 = none) and
 * return CORO__ARM_PENDING: the job stays until an unpark, its timer
 * (-ETIMEDOUT) or cancel takes it.  A timer that cannot be had: READY with
 * -ENOMEM. */
CORO__HIDDEN int coro__parklot_park_job(void *key, coro_t *job,
                                    coro__parklot_validate_fn validate, void *ctx,
                                    intptr_t *res, int64_t deadline);

/* coro__parklot_park_thread - the same for a plain thread: block until woken
 * or until the absolute CLOCK_MONOTONIC deadline (ns, -1 = none) passes.
 * Returns the wake result, -ETIMEDOUT, or validate's result. */
CORO__HIDDEN intptr_t coro__parklot_park_thread(void *key, coro__parklot_validate_fn validate,
                                            void *ctx, int64_t deadline);

/* Wake all waiters of key (returns how many) with result res, outside
 * the bucket lock. */
CORO__HIDDEN int coro__parklot_unpark_all(void *key, intptr_t res);

/* coro__parklot_cancel_sched - wake every job of s that waits in the lot or in
 * a joiner slot with -ECANCELED (s->cancelling already set, seq_cst).
 * Visits only the buckets s's jobs have parked in.  Returns how many. */
CORO__HIDDEN int coro__parklot_cancel_sched(coro_sched_t *s);
/* coro__parklot_cancel_jobs - the same for the jobs of s that carry
 * CORO__F_CANCEL (coro_cancel set it, seq_cst, before the call). */
CORO__HIDDEN int coro__parklot_cancel_jobs(coro_sched_t *s);
/* coro__wait_cancel_job (wait/done.c) - coro_cancel(job) of a job of s,
 * after its seq_cst RMW set CORO__F_CANCEL in the state word, which was
 * old: ends what the job waits on, reached through its own awaitable (O(1)
 * of the history: lib/wait/parklot.c CANCEL ONE): the lot's waits here (sync
 * objects, coro_done, struct coro__parklot_ops).  False for any other (I/O and
 * the blocking pool: the caller asks coro__io_cancel_job, then sweeps). */
CORO__HIDDEN bool coro__wait_cancel_job(coro_sched_t *s, coro_t *job, uint32_t old);
/* the lot's halves of it: unlink job from key's bucket if it is there,
 * or from target's joiner slot and the one registry list it may be on
 * (woken with -ECANCELED) */
CORO__HIDDEN void coro__parklot_cancel_in_bucket(coro_t *job, const void *key);
CORO__HIDDEN void coro__parklot_cancel_joiner(coro_sched_t *s, coro_t *job, coro_t *target);
/* An awaitable whose arm parks its job in the lot on a key of its own (a
 * group, a select's own key), so that coro_cancel of one job finds it
 * there: base.arm is coro__parklot_ops_arm, which calls arm; key gives the
 * key from the job's awaitable. */
struct coro__parklot_ops {
    struct coro_await_ops base;     /* first: aw->ops points here */
    int (*arm)(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);
    const void *(*key)(const coro_await_t *aw);
};
CORO__HIDDEN int coro__parklot_ops_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw,
                                   intptr_t *res);
/* the awaitables of coro_done and coro_done_timeout (wait/done.c) */
extern const struct coro_await_ops coro__done_ops CORO__HIDDEN;
extern const struct coro_await_ops coro__done_to_ops CORO__HIDDEN;
#ifdef CORO_TEST_HOOKS
/* buckets the last coro__parklot_cancel_sched(s) visited (tests) */
CORO__HIDDEN uint64_t coro__parklot_cancel_visits(coro_sched_t *s);
/* how many sweeps for flagged jobs ran (every coro__parklot_cancel_jobs makes
 * one; tests: a cancel of one job that reached its wait directly made none) */
CORO__HIDDEN uint64_t coro__parklot_cancel_sweeps(coro_sched_t *s);
#endif

/* Lot timers, for the I/O context: the timerfd to watch (its own epoll
 * tag), what to call when it is readable (the I/O thread, or the thread
 * in coro__io_poll; returns jobs woken), and whether any is pending (for
 * coro__io_pending). */
CORO__HIDDEN int coro__parklot_timer_fd(coro_sched_t *s);
CORO__HIDDEN int coro__parklot_timers_fire(coro_sched_t *s, struct coro__woken *b);
/* the same without reading the timerfd: fire what is due now; worker: a
 * busy worker's look (sched/worker.c DUE TIMERS), which leaves the
 * timerfd to its holder and gives up when hlock is held.  The number
 * fired.  b (both): the batch of the worker whose driver call fires them
 * (WOKEN BATCHES, sched/sched.h), NULL on any other thread */
CORO__HIDDEN int coro__parklot_timers_expire(coro_sched_t *s, bool worker,
                                             struct coro__woken *b);
CORO__HIDDEN bool coro__parklot_timers_pending(coro_sched_t *s);
/* the count coro__parklot_timers_pending reads (atomic, relaxed): for the
 * driver's hints (sched/sched.h) */
CORO__HIDDEN const uint32_t *coro__parklot_timers_word(coro_sched_t *s);
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN uint32_t coro__parklot_timers_count(coro_sched_t *s);     /* armed now (tests) */
#endif
/* the earliest lot timer's deadline, INT64_MAX = none (rt/vtime.c) */
CORO__HIDDEN int64_t coro__parklot_timers_next(coro_sched_t *s);

/* coro_done within one scheduler: job awaits target through target's
 * joiner slot (registered for CORO_CANCEL).  Returns an arm result, or -1
 * when the slot is taken (use the lot). */
CORO__HIDDEN int coro__parklot_joiner_arm(coro_sched_t *s, coro_t *target, coro_t *job,
                                      intptr_t *res);
/* the finisher, after its exchange of target->joiner returned w: wake w */
CORO__HIDDEN void coro__parklot_joiner_wake(coro_t *w, intptr_t res);

/* coro_t.flags: a select branch's record (a node of a coro_select_t).
 * Its args are in node->aw (arg[2].p = the coro_select_t), its own
 * result in node->result, its branch index in node->cls, and its claim
 * hook in node->fn: called by coro__parklot_take under the record's bucket
 * lock, 0 = claimed (node->parent then is the select's owner to wake, or
 * NULL when the select was still arming), -1 = the select is over. */
#define CORO__FL_PROXY 2u

/* ---- the lot under its lock ------------------------------------------------
 *
 * Every sync object keeps its state under the lot bucket lock of its own
 * address, so that "look at the state, then wait" and "change the state,
 * then take a waiter" are atomic with the wait lists.  Keys k and k + 2
 * (k 8-aligned) share a bucket: a channel keeps its receivers on ch and its
 * senders on ch + 2.  Odd keys (a select's own key, sel + 1) live in a
 * separate set of buckets taken only after an even one (lock order: even
 * bucket -> odd bucket; never two of one kind).
 */
typedef struct coro__parklot_bucket coro__parklot_bucket_t;

CORO__HIDDEN coro__parklot_bucket_t *coro__parklot_lock(const void *key);
CORO__HIDDEN void coro__parklot_unlock(coro__parklot_bucket_t *b);

/* A wake list: waiters taken under a lock, woken after it. */
typedef struct coro__wakelist {
    coro_t *head, **tail;
} coro__wakelist_t;

static inline void coro__wakelist_init(coro__wakelist_t *wakes)
{
    wakes->head = NULL;
    wakes->tail = &wakes->head;
}

/* under b (NULL: key's bucket, which the caller holds): unlink the oldest
 * waiter of key that may still be woken and return it (NULL: none); its
 * timer goes with it.  A select branch's record is claimed through its
 * hook on the way; one whose select has already completed is dropped. */
CORO__HIDDEN coro_t *coro__parklot_take(coro__parklot_bucket_t *b, const void *key);
/* under b (NULL: key's bucket, which the caller holds): is anything
 * (even a stale stand-in) waiting on key? */
CORO__HIDDEN bool coro__parklot_waiting(coro__parklot_bucket_t *b, const void *key);
/* under b: does a waiter of key whose operation's first argument is arg0
 * wait (a broadcast receiver on its channel's key)? */
CORO__HIDDEN bool coro__parklot_waiting_arg(coro__parklot_bucket_t *b, const void *key,
                                            const void *arg0);
/* under b: append w (a thread's or a branch's record) to key's list */
CORO__HIDDEN void coro__parklot_link(coro__parklot_bucket_t *b, const void *key, coro_t *w);
/* under b: park job on key with a timer at the absolute deadline (-1
 * none); registered for CORO_CANCEL.  0 (linked), or -ECANCELED (the
 * scheduler is cancelling), -ENOMEM (no memory for the timer); nothing
 * linked then. */
CORO__HIDDEN int coro__parklot_park(coro__parklot_bucket_t *b, const void *key, coro_t *job, int64_t deadline);
/* under b: unlink w from key's list if it is there; true if it was */
CORO__HIDDEN bool coro__parklot_unlink(coro__parklot_bucket_t *b, const void *key, coro_t *w);
/* under b: unlink and return the first waiter of key, no claims (a
 * select's own key has one waiter: its owner) */
CORO__HIDDEN coro_t *coro__parklot_pop_raw(coro__parklot_bucket_t *b, const void *key);
/* the waiter's operation arguments (job: its innermost frame's awaitable) */
CORO__HIDDEN coro_await_t *coro__parklot_args(coro_t *w);
/* under the lock that took w: record w's result res and queue its wake-up */
CORO__HIDDEN void coro__wakelist_add(coro__wakelist_t *wakes, coro_t *w, intptr_t res);
/* after unlocking: wake everyone on wakes, the jobs into b
 * (coro__wake_into; NULL: coro__wake's queueing) */
CORO__HIDDEN void coro__wakelist_wake_into(coro__wakelist_t *wakes, struct coro__woken *b);
static inline void coro__wakelist_wake(coro__wakelist_t *wakes)
{
    coro__wakelist_wake_into(wakes, NULL);
}

/* coro__done_take_all - the finisher's take of key's lot waiters (jobs
 * awaiting coro_done / coro_done_timeout of job key), given result res,
 * onto wakes, which the finisher wakes once it no longer touches the
 * frame (rt/finish.c, NO TOUCH AFTER THE WAKE); returns how many
 * (lib/wait/done.c).  Uses key's address only */
CORO__HIDDEN int coro__done_take_all(coro_t *key, intptr_t res, coro__wakelist_t *wakes);
/* link stand-in me (zeroed, flags THREAD, aw = the args) on key under b
 * (locked by the caller), unlock b, and block until woken (its result) or
 * the absolute deadline (-1 none) passes: -ETIMEDOUT. */
CORO__HIDDEN intptr_t coro__parklot_wait_thread(coro__parklot_bucket_t *b, const void *key, coro_t *me,
                                            int64_t deadline);

/* ---- sync operations --------------------------------------------------------
 *
 * One table per waitable operation.  try runs under the bucket lock of
 * key(args): it completes the operation (1, *res set, waiters it satisfied
 * added to wakes) or says it must wait (0).  proxy, when not NULL, is the
 * select stand-in doing it: try then claims the select (coro__sel_claim_self)
 * before any side effect, and returns -1 when another branch already won.
 */
struct coro__sync_ops {
    struct coro_await_ops base;     /* first: aw->ops points here */
    const void *(*key)(const coro_await_t *args);
    int (*try)(coro_await_t *args, intptr_t *res, coro__wakelist_t *wakes, coro_t *proxy);
};

static inline const struct coro__sync_ops *coro__sync_ops_of(const coro_await_t *aw)
{
    return (const struct coro__sync_ops *)(const void *)aw->ops;
}

/* An operation that waits for a holder to let go (a mutex, a read-write
 * lock): its arm is coro__sync_arm_held, which records the waiting job's
 * identity in arg[1].i first (the job is only known there), so the lot
 * can recognise it by its arm and ask it two things, each under the
 * object's bucket lock:
 *   holder: a text naming who holds the object (coro_sched_dump);
 *   left:   a waiter of the object left its wait without being taken (its
 *           timer, a cancel, a plain thread's timeout, an unchosen select
 *           branch withdrawn): add to wakes the waiters that may go now
 *           (NULL: nothing can). */
struct coro__held_ops {
    struct coro__sync_ops sync;     /* first: aw->ops points here */
    void (*holder)(const coro_await_t *args, char *buf, size_t len);
    void (*left)(coro__parklot_bucket_t *b, const coro_await_t *args, coro__wakelist_t *wakes);
    /* the arm once the identity is recorded: coro__sync_arm (a pointer,
     * so that the lot, which defines coro__sync_arm_held, does not call
     * into wait/sync.c, which calls the lot) */
    int (*arm)(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);
};
CORO__HIDDEN int coro__sync_arm_held(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);

static inline const struct coro__held_ops *coro__held_ops_of(const coro_await_t *aw)
{
    if (!aw->ops || aw->ops->arm != coro__sync_arm_held)
        return NULL;
    return (const struct coro__held_ops *)(const void *)aw->ops;
}

/* under w's bucket b (locked), after w left its wait without being taken */
static inline void coro__sync_left(coro__parklot_bucket_t *b, coro_t *w, coro__wakelist_t *wakes)
{
    const coro_await_t *aw = coro__parklot_args(w);
    const struct coro__held_ops *h = coro__held_ops_of(aw);
    if (h && h->left)
        h->left(b, aw, wakes);
}

/* the selectable operations */
/* a job's end, as a select branch (wait/done.c) */
extern const struct coro__sync_ops coro__done_sel_ops CORO__HIDDEN;

/* the arm of every sync awaitable (timeouts, cancel, park) */
CORO__HIDDEN int coro__sync_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res);
/* the in-body part of a sync awaitable: try now; complete, or return aw to
 * be armed (timeout 0 and not ready: -ETIMEDOUT; a negative timeout other
 * than CORO_FOREVER: -EINVAL) */
CORO__HIDDEN coro_await_t coro__sync_await(coro_await_t aw);
/* the plain-thread blocking form; -EDEADLK inside a job */
CORO__HIDDEN intptr_t coro__sync_block(coro_await_t *args, int64_t timeout);

/* the key of an operation whose object is its first argument (most are) */
CORO__HIDDEN const void *coro__arg0_key(const coro_await_t *args);

/* coro__proxy_claim - a select branch's record (CORO__FL_PROXY) trying its
 * own operation while its select arms claims the select first, under the
 * branch's bucket lock: 0 (ours: go on with the side effect) or -1 (the
 * select is over).  It is the record's own claim hook (sync/select.c),
 * the one coro__parklot_take calls: while the select arms, its owner is not
 * parked, so the hook's "pop the parked owner" case cannot arise. */
static inline int coro__proxy_claim(coro_t *proxy)
{
    return proxy->fn(proxy);
}
/* the timeout rule, shared by every sync call: CORO_FOREVER, 0 or > 0 */
static inline bool coro__timeout_ok(int64_t timeout)
{
    return timeout >= 0 || timeout == CORO_FOREVER;
}

/* identity of a plain thread for mutex ownership (odd, never a job) */
CORO__HIDDEN uintptr_t coro__thread_token(void);


/* coro_sched_dump: the suspended jobs of s the lot holds */
CORO__HIDDEN int coro__parklot_dump(coro_sched_t *s, struct coro__dump *d);

#endif
