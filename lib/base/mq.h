/* SPDX-License-Identifier: MIT */
/* private: queues of jobs built on Concurrency Kit's ck_ring. */
#ifndef COROKIT_MQ_H
#define COROKIT_MQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ck_ring.h>

struct coro;

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
};

int coro__mq_init(struct coro__mq *q, ck_ring_buffer_t *buf, unsigned size);
void coro__mq_fini(struct coro__mq *q);
void coro__mq_push(struct coro__mq *q, struct coro *job);
/* push n jobs in order under one lock */
void coro__mq_push_batch(struct coro__mq *q, struct coro **jobs, unsigned n);
struct coro *coro__mq_pop(struct coro__mq *q);
unsigned coro__mq_size(const struct coro__mq *q);

void coro__lq_init(struct coro__lq *q, ck_ring_buffer_t *buf, unsigned size);
bool coro__lq_push(struct coro__lq *q, struct coro *job);   /* owner only; false = full */
struct coro *coro__lq_pop(struct coro__lq *q);              /* owner or thief */
/* up to max jobs, oldest first, with one CAS; returns how many (thief) */
unsigned coro__lq_pop_batch(struct coro__lq *q, struct coro **out, unsigned max);
unsigned coro__lq_size(const struct coro__lq *q);

#endif
