/* SPDX-License-Identifier: MIT */
/* private: the job queues - the shared queues (our own MPMC ring on ck_pr,
 * with an overflow list) and a worker's local ring (Concurrency Kit's
 * ck_ring) - and their inline pops; the essay is lib/base/queues.c's. */
#ifndef COROKIT_QUEUES_H
#define COROKIT_QUEUES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ck_pr.h>
#include <ck_ring.h>

#include "base/base.h"

struct coro;

/* ThreadSanitizer cannot see ck's inline-assembly atomics: every push
 * releases and every pop acquires the ring's address for it (queues.c) */
#ifdef CORO__TSAN
# include <sanitizer/tsan_interface.h>
# define CORO__TSAN_RELEASE(p) __tsan_release(p)
# define CORO__TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
# define CORO__TSAN_RELEASE(p) ((void)(p))
# define CORO__TSAN_ACQUIRE(p) ((void)(p))
#endif

/* An unbounded MPMC queue of jobs: a bounded ring with a sequence number
 * per slot (lock-free producers and consumers: base/queues.c, SHARED
 * QUEUES) plus an overflow list (intrusive through coro_t.next, under a
 * mutex that only a full ring's pushes and the list's pops take) so that
 * a full ring never loses or refuses a job and never allocates. */
struct coro__sharedq_slot {
    uint64_t seq;                   /* ck_pr: the ticket this slot waits for */
    struct coro *job;               /* ck_pr: the job of ticket seq - 1 */
};

struct coro__sharedq {
    /* read-mostly: fixed at init, but overflow_n */
    struct coro__sharedq_slot *slots;
    uint64_t mask;                  /* size - 1 */
    uint32_t overflow_n;            /* ck_pr: jobs on the overflow list */
    /* padding, not alignment: the struct lives in memory from the
     * scheduler's allocator (ck_ring pads its lines the same way) */
    char pad0[CORO__CACHELINE - 2 * sizeof(uint64_t) - sizeof(uint32_t)];
    /* ck_pr: the next ticket a producer claims (producers' CAS) */
    uint64_t tail;
    char pad1[CORO__CACHELINE - sizeof(uint64_t)];
    /* ck_pr: the next ticket a consumer takes (consumers' CAS) */
    uint64_t head;
    char pad2[CORO__CACHELINE - sizeof(uint64_t)];
    /* the overflow list: full-ring pushes and the list's pops only */
    pthread_mutex_t lock;
    struct coro *first, *last;
};

/* A worker's own ring: the owner enqueues (single producer), the owner
 * and thieves dequeue (multiple consumers): ck_ring SPMC. */
struct coro__localq {
    ck_ring_t ring;
    ck_ring_buffer_t *buf;
    /* atomic: thieves at work in coro__localq_steal (TAKING BACK, queues.c); a
     * line of its own: the owner only reads it, at a take-back */
    uint32_t stealing __attribute__((aligned(CORO__CACHELINE)));
};

/* slots: size entries, size a power of two >= 2; capacity of the ring is
 * size, the overflow list takes the rest.  0, or -errno (the mutex) */
int coro__sharedq_init(struct coro__sharedq *q, struct coro__sharedq_slot *slots, unsigned size);
void coro__sharedq_fini(struct coro__sharedq *q);
/* any thread; lock-free while the ring has room and the list is empty
 * (else the list's mutex); never fails, never allocates */
void coro__sharedq_push(struct coro__sharedq *q, struct coro *job);
/* push n jobs in order (a consumer takes them in that order) */
void coro__sharedq_push_batch(struct coro__sharedq *q, struct coro **jobs, unsigned n);
/* the lock-free part of a pop: the job at the head, or NULL when the ring
 * is empty or its head slot is claimed by a producer that has not
 * published it yet (SHARED QUEUES: empty for now; that producer's push
 * notifies after it publishes) */
struct coro *coro__sharedq_pop_ring(struct coro__sharedq *q);
/* the mutex path of coro__sharedq_pop (the ring gave nothing, the list
 * holds jobs) */
struct coro *coro__sharedq_pop_slow(struct coro__sharedq *q);
/* every job q holds now: a racy look at the ring's published slots (the
 * addresses only, for a report: never dereferenced), then the list under
 * its mutex; fn(ctx, job) each (coro_sched_dump) */
void coro__sharedq_each(struct coro__sharedq *q, void (*fn)(void *ctx, struct coro *job), void *ctx);
/* test hook: called by a producer between its claim of a slot and its
 * publication of the job there (the window where it can be pre-empted),
 * with the queue and the ticket (the test library only) */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN extern void (*coro__sharedq_claimed)(struct coro__sharedq *q, uint64_t ticket);
#endif

void coro__localq_init(struct coro__localq *q, ck_ring_buffer_t *buf, unsigned size);
bool coro__localq_push(struct coro__localq *q, struct coro *job);   /* owner only; false = full */
/* up to max jobs, oldest first, with one CAS; returns how many (thief) */
unsigned coro__localq_pop_batch(struct coro__localq *q, struct coro **out, unsigned max);
/* A worker's own local ring is also a work-stealing deque (queues.c, TAKING
 * BACK): its owner may take back the job it pushed last.
 * coro__localq_unpush - owner only: take job back when it is the newest in q,
 * no thief took it and none is at work on q; false otherwise (the job
 * stays, or went to a thief).
 * coro__localq_steal - a thief: up to max jobs (at most half of those it
 * sees, at least one), oldest first, with one CAS; returns how many. */
bool coro__localq_unpush(struct coro__localq *q, struct coro *job);
unsigned coro__localq_steal(struct coro__localq *q, struct coro **out, unsigned max);

/* The pops and sizes are inline: a worker's search for work looks at a
 * dozen queues, nearly all empty, and a call per look was a fifth of the
 * search's instructions (callgrind, io_pingpong: an idle worker searches
 * once per I/O wake-up) */

/* owner or thief */
static inline struct coro *coro__localq_pop(struct coro__localq *q)
{
    struct coro *job;

    if (!ck_ring_dequeue_spmc(&q->ring, q->buf, &job))
        return NULL;
    CORO__TSAN_ACQUIRE(q);
    return job;
}

/* owner only: the job it pushed last, if it is still there (a hint for
 * coro__localq_unpush, which decides) */
static inline struct coro *coro__localq_newest(const struct coro__localq *q)
{
    /* relaxed: only this thread writes p_tail and the slots */
    unsigned t = __atomic_load_n(&q->ring.p_tail, __ATOMIC_RELAXED);
    if (t == __atomic_load_n(&q->ring.c_head, __ATOMIC_RELAXED))
        return NULL;
    return __atomic_load_n(&q->buf[(t - 1) & q->ring.mask].value, __ATOMIC_RELAXED);
}

static inline unsigned coro__localq_size(const struct coro__localq *q)
{
    /* not ck_ring_size: while its owner takes a job back the tail may be
     * one below the head for a moment (TAKING BACK), which reads as empty */
    unsigned c = ck_pr_load_uint(&q->ring.c_head);
    int n = (int)(ck_pr_load_uint(&q->ring.p_tail) - c);
    return n > 0 ? (unsigned)n : 0;
}

static inline struct coro *coro__sharedq_pop(struct coro__sharedq *q)
{
    struct coro *job = coro__sharedq_pop_ring(q);

    if (job)
        return job;
    /* a hint; the slow path trusts only what it reads under the list's
     * mutex.  Ordered after the ring's look by its loads' order (ck_pr
     * loads, TSO; see coro__sharedq_pop_ring) */
    if (CORO__LIKELY(ck_pr_load_32(&q->overflow_n) == 0))
        return NULL;
    return coro__sharedq_pop_slow(q);
}

static inline unsigned coro__sharedq_size(const struct coro__sharedq *q)
{
    /* a snapshot, a hint either way: the tail first, so that a head read
     * after it that passed it (pops meanwhile) reads as 0, not as a huge
     * count; claimed slots not yet published count too */
    uint64_t t = ck_pr_load_64(&q->tail);
    ck_pr_fence_load();     /* the head after the tail */
    uint64_t h = ck_pr_load_64(&q->head);
    unsigned n = (int64_t)(t - h) > 0 ? (unsigned)(t - h) : 0;
    return n + ck_pr_load_32(&q->overflow_n);
}

#endif
