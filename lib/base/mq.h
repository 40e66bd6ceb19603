/* SPDX-License-Identifier: MIT */
/* private: queues of jobs built on Concurrency Kit's ck_ring. */
#ifndef COROKIT_MQ_H
#define COROKIT_MQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ck_ring.h>

#include "base/base.h"

struct coro;

/* ThreadSanitizer cannot see ck's inline-assembly atomics: every push
 * releases and every pop acquires the ring's address for it (mq.c) */
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
 * loses or refuses a job and never allocates.  See base/mq.c. */
struct coro__mq {
    ck_ring_t ring;
    ck_ring_buffer_t *buf;
    uint32_t overflow_n;            /* atomic: jobs on the overflow list */
    pthread_mutex_t lock;           /* producers; guards head/tail */
    struct coro *head, *tail;
};

/* A worker's own ring: the owner enqueues (single producer), the owner
 * and thieves dequeue (multiple consumers): ck_ring SPMC. */
struct coro__lq {
    ck_ring_t ring;
    ck_ring_buffer_t *buf;
    /* atomic: thieves at work in coro__lq_steal (TAKING BACK, mq.c); a
     * line of its own: the owner only reads it, at a take-back */
    uint32_t stealing __attribute__((aligned(CORO__CACHELINE)));
};

int coro__mq_init(struct coro__mq *q, ck_ring_buffer_t *buf, unsigned size);
void coro__mq_fini(struct coro__mq *q);
void coro__mq_push(struct coro__mq *q, struct coro *job);
/* push n jobs in order under one lock */
void coro__mq_push_batch(struct coro__mq *q, struct coro **jobs, unsigned n);
/* the mutex path of coro__mq_pop (the ring was empty, the list is not) */
struct coro *coro__mq_pop_slow(struct coro__mq *q);

void coro__lq_init(struct coro__lq *q, ck_ring_buffer_t *buf, unsigned size);
bool coro__lq_push(struct coro__lq *q, struct coro *job);   /* owner only; false = full */
/* up to max jobs, oldest first, with one CAS; returns how many (thief) */
unsigned coro__lq_pop_batch(struct coro__lq *q, struct coro **out, unsigned max);
/* A worker's own local ring is also a work-stealing deque (mq.c, TAKING
 * BACK): its owner may take back the job it pushed last.
 * coro__lq_unpush - owner only: take job back when it is the newest in q,
 * no thief took it and none is at work on q; false otherwise (the job
 * stays, or went to a thief).
 * coro__lq_steal - a thief: up to max jobs (at most half of those it
 * sees, at least one), oldest first, with one CAS; returns how many. */
bool coro__lq_unpush(struct coro__lq *q, struct coro *job);
unsigned coro__lq_steal(struct coro__lq *q, struct coro **out, unsigned max);

/* The pops and sizes are inline: a worker's search for work looks at a
 * dozen queues, nearly all empty, and a call per look was a fifth of the
 * search's instructions (callgrind, io_pingpong: an idle worker searches
 * once per I/O wake-up) */

/* owner or thief */
static inline struct coro *coro__lq_pop(struct coro__lq *q)
{
    struct coro *job;

    if (!ck_ring_dequeue_spmc(&q->ring, q->buf, &job))
        return NULL;
    CORO__TSAN_ACQUIRE(q);
    return job;
}

/* owner only: the job it pushed last, if it is still there (a hint for
 * coro__lq_unpush, which decides) */
static inline struct coro *coro__lq_newest(const struct coro__lq *q)
{
    /* relaxed: only this thread writes p_tail and the slots */
    unsigned t = __atomic_load_n(&q->ring.p_tail, __ATOMIC_RELAXED);
    if (t == __atomic_load_n(&q->ring.c_head, __ATOMIC_RELAXED))
        return NULL;
    return __atomic_load_n(&q->buf[(t - 1) & q->ring.mask].value, __ATOMIC_RELAXED);
}

static inline unsigned coro__lq_size(const struct coro__lq *q)
{
    /* not ck_ring_size: while its owner takes a job back the tail may be
     * one below the head for a moment (TAKING BACK), which reads as empty */
    unsigned c = ck_pr_load_uint(&q->ring.c_head);
    int n = (int)(ck_pr_load_uint(&q->ring.p_tail) - c);
    return n > 0 ? (unsigned)n : 0;
}

static inline struct coro *coro__mq_pop(struct coro__mq *q)
{
    struct coro *job = NULL;

    if (ck_ring_dequeue_spmc(&q->ring, q->buf, &job)) {
        CORO__TSAN_ACQUIRE(q);
        return job;
    }
    /* relaxed: a hint; the slow path trusts only what it reads under the
     * producers' mutex (see coro__mq_push) */
    if (CORO__LIKELY(__atomic_load_n(&q->overflow_n, __ATOMIC_RELAXED) == 0))
        return NULL;
    return coro__mq_pop_slow(q);
}

static inline unsigned coro__mq_size(const struct coro__mq *q)
{
    /* relaxed: a size is a snapshot either way */
    return ck_ring_size(&q->ring) + __atomic_load_n(&q->overflow_n, __ATOMIC_RELAXED);
}

#endif
