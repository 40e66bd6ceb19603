/* SPDX-License-Identifier: MIT */
/* private: what lib/wait/parklot.c (wait lists, registry),
 * lib/wait/wtimer.c (the lot's timers) and lib/wait/parklot_dump.c (the
 * lot's part of the dump) share; never installed. */
#ifndef COROKIT_PARKLOT_IMPL_H
#define COROKIT_PARKLOT_IMPL_H

#include "wait/wait.h"

/* the buckets: the lot's even keys, then the selects' odd ones */
#define CORO__PARKLOT_NBUCKETS ((1u << CORO__PARKLOT_BITS) + (1u << CORO__PARKLOT_SEL_BITS))
#define CORO__PARKED_WORDS ((CORO__PARKLOT_NBUCKETS + 63) / 64)

struct coro__parklot_bucket {
    pthread_mutex_t lock;
    coro_t *head, *tail;
} __attribute__((aligned(64)));

struct joiner_registry {
    uint32_t lock;          /* a spinlock: a few pointer writes under it */
    coro_t *head;           /* linked through next; prev in wait_obj */
    char pad[CORO__CACHELINE - 2 * sizeof(coro_t *)];
};

struct coro__parklot_sched {
    coro_sched_t *s;
    /* timers */
    pthread_mutex_t hlock;
    struct coro__heap heap; /* lib/wait/heap.c, kind CORO__TK_PARKLOT */
    uint32_t npend;         /* atomic copy of the heap's live count, for coro__parklot_timers_pending */
    struct coro__tfd timer; /* its timerfd (lib/wait/tfd.c) */
    /* the workers' timers (lib/wait/wtimer.c), NULL without workers */
    struct coro__wtimers *wt;
    /* registry */
    uint64_t *parked;       /* NBUCKETS bits */
    int nreg;
    struct joiner_registry *reg;       /* one per worker slot */
    uint64_t visits;        /* buckets the last cancel visited (tests) */
    uint64_t sweeps;        /* sweeps of the joiner registries for flagged jobs (tests) */
};


/* wait/wtimer.c, under the waiter's bucket lock: arm w's timer (0 or
 * -ENOMEM) / remove it (w carries CORO__FL_TIMED) */
CORO__HIDDEN int coro__parklot_timer_add(struct coro__parklot_sched *ls, coro_t *w, const void *key,
                                     int64_t deadline);
CORO__HIDDEN void coro__parklot_timer_del(coro_t *w);
/* under w's bucket lock, w timed: its timer's deadline (coro_sched_dump) */
CORO__HIDDEN int64_t coro__parklot_timer_deadline(coro_t *w);
/* wait/wtimer.c: the heap, the lock and the timerfd (0 or -ENOMEM/-errno) */
CORO__HIDDEN int coro__parklot_timers_init(struct coro__parklot_sched *ls);
CORO__HIDDEN void coro__parklot_timers_fini(struct coro__parklot_sched *ls);
/* wait/wtimer.c: the workers' heaps, made at the lot's init (after the
 * workers' structs, before they run); 0 or -ENOMEM */
CORO__HIDDEN int coro__wt_init(coro_sched_t *s);
CORO__HIDDEN void coro__wt_fini(coro_sched_t *s);
/* wait/parklot.c: the bucket of key (not locked) */
CORO__HIDDEN coro__parklot_bucket_t *coro__parklot_bucket(const void *key);

/* bucket i of the CORO__PARKLOT_NBUCKETS (lib/wait/parklot.c) */
CORO__HIDDEN struct coro__parklot_bucket *coro__parklot_bucket_at(unsigned i);
/* a joiner registry's spinlock: a few pointer writes under it */
CORO__HIDDEN void coro__joiner_registry_lock(struct joiner_registry *r);
CORO__HIDDEN void coro__joiner_registry_unlock(struct joiner_registry *r);

#endif
