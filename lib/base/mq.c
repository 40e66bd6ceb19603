/* SPDX-License-Identifier: MIT */
/* Job queues over Concurrency Kit's ck_ring.
 *
 * corokit uses two ck_ring flavours and adds nothing lock-free of its own:
 *
 *  - coro__mq: many producers, many consumers, for the per-worker
 *    inboxes, the per-class queues and the global injection queue (class
 *    0).  Consumers dequeue lock-free (ck_ring_dequeue_spmc: one CAS).
 *    Producers serialise on a mutex and enqueue with the single-producer
 *    ck_ring_enqueue_spmc.  Why not ck_ring_enqueue_mpmc: its producers
 *    wait, spinning, for every earlier producer to commit; one pre-empted
 *    mid-enqueue (common when workers outnumber CPUs, or plain threads
 *    share them) makes the others spin for its whole time slice.  Measured
 *    here: 1,000,000 spawns into one class queue from 8 workers on 2 CPUs,
 *    25 us per job with the MPMC enqueue; see the note in docs/architecture.md.
 *    A waiting producer sleeps on the mutex instead.  ck_ring is bounded,
 *    so a full ring spills into an intrusive overflow list under the same
 *    mutex: nothing is refused or lost and nothing is allocated.  While the
 *    overflow list is not empty, pushes go to it too, so a job is never
 *    overtaken by a later push for long.
 *
 *  - coro__lq: a worker's local ring, SPMC (ck_ring_enqueue_spmc by the
 *    owner, ck_ring_dequeue_spmc by the owner and by thieves).  ck has no
 *    work-stealing deque that takes a batch at once; a thief takes "half a
 *    batch" as a loop of single dequeues, one CAS each.
 *
 * ThreadSanitizer cannot see ck's inline-assembly atomics, so every push
 * releases and every pop acquires the ring's address for TSan (the job's
 * fields written before a push are then seen as ordered before the pop);
 * tools/tsan.supp names the two ck functions whose internal races are false.
 */
#include "base/mq.h"
#include "base/base.h"

int coro__mq_init(struct coro__mq *q, ck_ring_buffer_t *buf, unsigned size)
{
    /* size must be a power of two (ck does not check); capacity is size-1 */
    ck_ring_init(&q->ring, size);
    q->buf = buf;
    q->overflow_n = 0;
    q->head = q->tail = NULL;
    return -pthread_mutex_init(&q->lock, NULL);
}

void coro__mq_fini(struct coro__mq *q)
{
    pthread_mutex_destroy(&q->lock);
}

void coro__mq_push(struct coro__mq *q, coro_t *job)
{
    pthread_mutex_lock(&q->lock);
    if (q->overflow_n == 0) {
        CORO__TSAN_RELEASE(q);
        if (ck_ring_enqueue_spmc(&q->ring, q->buf, job)) {
            pthread_mutex_unlock(&q->lock);
            return;
        }
    }
    job->next = NULL;
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    /* relaxed: the mutex orders the list; the count is only a hint that
     * makes poppers look (they take the mutex before trusting it) */
    __atomic_store_n(&q->overflow_n, q->overflow_n + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&q->lock);
}

void coro__mq_push_batch(struct coro__mq *q, coro_t **jobs, unsigned n)
{
    unsigned i = 0;

    pthread_mutex_lock(&q->lock);
    if (q->overflow_n == 0) {
        CORO__TSAN_RELEASE(q);
        for (; i < n && ck_ring_enqueue_spmc(&q->ring, q->buf, jobs[i]); i++)
            ;
    }
    for (; i < n; i++) {
        jobs[i]->next = NULL;
        if (q->tail)
            q->tail->next = jobs[i];
        else
            q->head = jobs[i];
        q->tail = jobs[i];
        __atomic_store_n(&q->overflow_n, q->overflow_n + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&q->lock);
}

coro_t *coro__mq_pop_slow(struct coro__mq *q)
{
    coro_t *job = NULL;

    pthread_mutex_lock(&q->lock);
    /* another consumer may have refilled the ring while we waited for the
     * lock: its jobs are older than the list's, take one of them first.
     * Under the lock nothing else enqueues, so a ring empty here stays
     * empty until our own refill below */
    if (ck_ring_dequeue_spmc(&q->ring, q->buf, &job)) {
        pthread_mutex_unlock(&q->lock);
        CORO__TSAN_ACQUIRE(q);
        return job;
    }
    job = q->head;
    if (job) {
        /* take the head, then move up to CORO__MQ_REFILL more from the
         * list into the ring under the same lock (one lock per batch, not
         * per job).  Order holds: the ring is empty (above), a push goes
         * to the list while overflow_n != 0, so the ring keeps older jobs
         * than the list.  A job is in exactly one of the two: it leaves
         * the list before the (mutex-serialised) producer enqueue
         * publishes it in the ring. */
        coro_t *n = job->next;
        unsigned moved = 1;

        job->next = NULL;
        while (n && moved <= CORO__MQ_REFILL) {
            coro_t *nx = n->next;
            n->next = NULL;     /* before the enqueue publishes it */
            CORO__TSAN_RELEASE(q);    /* after that write (TSan's view of ck's release) */
            if (!ck_ring_enqueue_spmc(&q->ring, q->buf, n)) {
                n->next = nx;   /* ring full (popped meanwhile is fine) */
                break;
            }
            n = nx;
            moved++;
        }
        q->head = n;
        if (!n)
            q->tail = NULL;
        /* relaxed: see coro__mq_push */
        __atomic_store_n(&q->overflow_n, q->overflow_n - moved, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&q->lock);
    return job;
}

void coro__lq_init(struct coro__lq *q, ck_ring_buffer_t *buf, unsigned size)
{
    ck_ring_init(&q->ring, size);
    q->buf = buf;
}

bool coro__lq_push(struct coro__lq *q, coro_t *job)
{
    CORO__TSAN_RELEASE(q);
    return ck_ring_enqueue_spmc(&q->ring, q->buf, job);
}

/* ck_ring_dequeue_spmc for up to max slots at once: the same loads,
 * fences and CAS on c_head (ck_ring.h, _ck_ring_dequeue_mc), moving the
 * head by n instead of 1.  ck has no batch dequeue; a thief taking half a
 * ring one CAS per job paid one transfer of the head's line per job
 * (and the producer, which reads the head at every push, another). */
unsigned coro__lq_pop_batch(struct coro__lq *q, coro_t **out, unsigned max)
{
    ck_ring_t *r = &q->ring;
    const unsigned mask = r->mask;
    unsigned c = ck_pr_load_uint(&r->c_head), n;

    do {
        ck_pr_fence_load();         /* p_tail relative to our c_head snapshot */
        unsigned p = ck_pr_load_uint(&r->p_tail);
        n = p - c;
        if (n == 0)
            return 0;
        if (n > max)
            n = max;
        ck_pr_fence_load();         /* the slots after p_tail */
        for (unsigned i = 0; i < n; i++)
            out[i] = q->buf[(c + i) & mask].value;
        ck_pr_fence_store_atomic(); /* the loads before the head moves */
    } while (!ck_pr_cas_uint_value(&r->c_head, c, c + n, &c));
    CORO__TSAN_ACQUIRE(q);
    return n;
}
