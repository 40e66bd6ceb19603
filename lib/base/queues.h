/* SPDX-License-Identifier: MIT */
/* private: queues of jobs built on Concurrency Kit's ck_ring. */
#ifndef COROKIT_QUEUES_H
#define COROKIT_QUEUES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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

/* An unbounded MPMC queue of jobs: a ck_ring (lock-free consumers,
 * producers serialised by a mutex) plus an overflow list (intrusive
 * through coro_t.next, under the same mutex) so that a full ring never
 * loses or refuses a job and never allocates.  See base/queues.c. */
struct coro__sharedq {
    ck_ring_t ring;
    ck_ring_buffer_t *buf;
    uint32_t overflow_n;            /* atomic: jobs on the overflow list */
    pthread_mutex_t lock;           /* producers; guards head/tail */
    struct coro *head, *tail;
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

int coro__sharedq_init(struct coro__sharedq *q, ck_ring_buffer_t *buf, unsigned size);
void coro__sharedq_fini(struct coro__sharedq *q);
void coro__sharedq_push(struct coro__sharedq *q, struct coro *job);
/* push n jobs in order under one lock */
void coro__sharedq_push_batch(struct coro__sharedq *q, struct coro **jobs, unsigned n);
/* the mutex path of coro__sharedq_pop (the ring was empty, the list is not) */
struct coro *coro__sharedq_pop_slow(struct coro__sharedq *q);

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
    struct coro *job = NULL;

    if (ck_ring_dequeue_spmc(&q->ring, q->buf, &job)) {
        CORO__TSAN_ACQUIRE(q);
        return job;
    }
    /* relaxed: a hint; the slow path trusts only what it reads under the
     * producers' mutex (see coro__sharedq_push) */
    if (CORO__LIKELY(__atomic_load_n(&q->overflow_n, __ATOMIC_RELAXED) == 0))
        return NULL;
    return coro__sharedq_pop_slow(q);
}

static inline unsigned coro__sharedq_size(const struct coro__sharedq *q)
{
    /* relaxed: a size is a snapshot either way */
    return ck_ring_size(&q->ring) + __atomic_load_n(&q->overflow_n, __ATOMIC_RELAXED);
}

#endif
