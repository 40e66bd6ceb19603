/* SPDX-License-Identifier: MIT */
/* Job queues over Concurrency Kit's ck_ring.
 *
 * corokit uses two ck_ring flavours and adds nothing lock-free of its own:
 *
 *  - coro__sharedq: many producers, many consumers, for the per-worker
 *    inboxes, the per-class queues and the global injection queue (class
 *    0).  Consumers dequeue lock-free (ck_ring_dequeue_spmc: one CAS).
 *    Producers serialise on a mutex and enqueue with the single-producer
 *    ck_ring_enqueue_spmc.  Why not ck_ring_enqueue_mpmc: its producers
 *    wait, spinning, for every earlier producer to commit; one pre-empted
 *    mid-enqueue (common when workers outnumber CPUs, or plain threads
 *    share them) makes the others spin for its whole time slice
 *    (docs/benchmarks.md has the measurement).
 *    A waiting producer sleeps on the mutex instead.  ck_ring is bounded,
 *    so a full ring spills into an intrusive overflow list under the same
 *    mutex: nothing is refused or lost and nothing is allocated.  While the
 *    overflow list is not empty, pushes go to it too, so a job is never
 *    overtaken by a later push for long.
 *
 *  - coro__localq: a worker's local ring, SPMC (ck_ring_enqueue_spmc by the
 *    owner, ck_ring_dequeue_spmc by the owner and by thieves).  ck has no
 *    work-stealing deque, and none that takes a batch at once: a thief
 *    takes half a ring with one CAS (coro__localq_pop_batch, coro__localq_steal,
 *    ck's dequeue moved by n), and the owner takes its newest job back
 *    as a Chase-Lev deque's owner does (TAKING BACK below).
 *
 * ThreadSanitizer cannot see ck's inline-assembly atomics, so every push
 * releases and every pop acquires the ring's address for TSan (the job's
 * fields written before a push are then seen as ordered before the pop);
 * tools/ci/tsan.supp names the two ck functions whose internal races are false.
 */
#include "base/queues.h"
#include "base/base.h"

int coro__sharedq_init(struct coro__sharedq *q, ck_ring_buffer_t *buf, unsigned size)
{
    /* size must be a power of two (ck does not check); capacity is size-1 */
    ck_ring_init(&q->ring, size);
    q->buf = buf;
    q->overflow_n = 0;
    q->head = q->tail = NULL;
    return -pthread_mutex_init(&q->lock, NULL);
}

void coro__sharedq_fini(struct coro__sharedq *q)
{
    pthread_mutex_destroy(&q->lock);
}

void coro__sharedq_push(struct coro__sharedq *q, coro_t *job)
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

void coro__sharedq_push_batch(struct coro__sharedq *q, coro_t **jobs, unsigned n)
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

coro_t *coro__sharedq_pop_slow(struct coro__sharedq *q)
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
        /* relaxed: see coro__sharedq_push */
        __atomic_store_n(&q->overflow_n, q->overflow_n - moved, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&q->lock);
    return job;
}

void coro__localq_init(struct coro__localq *q, ck_ring_buffer_t *buf, unsigned size)
{
    ck_ring_init(&q->ring, size);
    q->buf = buf;
    q->stealing = 0;
}

bool coro__localq_push(struct coro__localq *q, coro_t *job)
{
    CORO__TSAN_RELEASE(q);
    return ck_ring_enqueue_spmc(&q->ring, q->buf, job);
}

/* ck_ring_dequeue_spmc for up to max slots at once: the same loads,
 * fences and CAS on c_head (ck_ring.h, _ck_ring_dequeue_mc), moving the
 * head by n instead of 1.  ck has no batch dequeue; a thief taking half a
 * ring one CAS per job paid one transfer of the head's line per job
 * (and the producer, which reads the head at every push, another). */
unsigned coro__localq_pop_batch(struct coro__localq *q, coro_t **out, unsigned max)
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

/* TAKING BACK.  A worker's local ring is a work-stealing deque in the
 * manner of Chase and Lev ("Dynamic circular work-stealing deque", SPAA
 * 2005), laid on ck_ring's two counters: c_head is the top, where thieves
 * and the owner's ordinary pops take the oldest jobs; p_tail the bottom,
 * where the owner pushes and may take the job it pushed last back (a job
 * that awaits coro_done of the child it spawned last runs that child at
 * once: lib/sched/run.c, JOINING INLINE).  Chase-Lev's thief takes one
 * job; ours take half a ring with one CAS, and a batch computed from a
 * tail read before several take-backs can reach the newest job from a
 * head far below it, where Chase-Lev's owner check (is the head just
 * below my job?) does not look.  So thieves announce themselves:
 *   thief (coro__localq_steal): stealing++; c = c_head, then p = p_tail and
 *     n = p - c as a signed number; n > 0: copy the ceil(n / 2) oldest
 *     slots and CAS c_head c -> c + ceil(n / 2); stealing--
 *   owner, taking back the job in slot t - 1 (t = p_tail):
 *     1. p_tail = t - 1                      (exchange: a full barrier)
 *     2. a thief at work (stealing != 0): p_tail = t, refused
 *     3. h = c_head; h <= t - 1: the slot is the owner's; h = t: a thief
 *        took it, p_tail = t, refused
 * Why no job goes to both.  Steps 1-2 against a thief's increment and
 * its loads are store-then-load on both sides (all seq_cst: Dekker).  A
 * thief whose increment the owner does not see in step 2 increments after
 * it, so its loads come after step 1: it reads p_tail <= t - 1 and never
 * reaches slot t - 1 (nor does any later thief, before the owner pushes
 * there again, which makes a new take-back).  A thief that finished
 * before step 2 left its mark in c_head, which step 3 reads: h = t when
 * it took slot t - 1.  A thief at work makes the owner refuse: its job
 * waits as a queued job does.  Steals are rare next to take-backs, so the
 * count's two RMWs per steal cost the hot path one load.
 * While the owner is between steps 1 and 3 p_tail may be one below c_head
 * (a thief took the last job): thieves and coro__localq_size read the
 * difference as a signed number, and no one else reads the ring (the
 * owner's own pops are its own thread's; coro_sched_dump skips a torn
 * read).  tools/model/deque.pml checks this with two thieves, and rejects
 * an owner that skips step 2 or reads the count before step 1. */
bool coro__localq_unpush(struct coro__localq *q, coro_t *job)
{
    ck_ring_t *r = &q->ring;
    /* relaxed: only this thread writes p_tail and the slots */
    unsigned t = __atomic_load_n(&r->p_tail, __ATOMIC_RELAXED);
    unsigned h = __atomic_load_n(&r->c_head, __ATOMIC_RELAXED);

    if (t == h || __atomic_load_n(&q->buf[(t - 1) & r->mask].value, __ATOMIC_RELAXED) != job)
        return false;
    /* seq_cst exchange: step 1 before step 2's and 3's loads (a full
     * barrier), against the thieves' seq_cst increment and loads */
    __atomic_exchange_n(&r->p_tail, t - 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&q->stealing, __ATOMIC_SEQ_CST) == 0) {
        h = __atomic_load_n(&r->c_head, __ATOMIC_SEQ_CST);
        if ((int)(t - h) > 0)
            return true;
    }
    /* release: as ck's enqueue publishes the tail */
    __atomic_store_n(&r->p_tail, t, __ATOMIC_RELEASE);
    return false;
}

unsigned coro__localq_steal(struct coro__localq *q, coro_t **out, unsigned max)
{
    ck_ring_t *r = &q->ring;
    const unsigned mask = r->mask;
    unsigned n = 0;

    /* seq_cst: the announcement before the loads (TAKING BACK) */
    __atomic_add_fetch(&q->stealing, 1, __ATOMIC_SEQ_CST);
    /* seq_cst: the head before the tail */
    unsigned c = __atomic_load_n(&r->c_head, __ATOMIC_SEQ_CST);
    for (;;) {
        /* seq_cst: read after the head snapshot; acquires the slots the
         * owner published with it */
        int d = (int)(__atomic_load_n(&r->p_tail, __ATOMIC_SEQ_CST) - c);
        if (d <= 0) {
            n = 0;
            break;
        }
        n = ((unsigned)d + 1) / 2;
        if (n > max)
            n = max;
        for (unsigned i = 0; i < n; i++)
            out[i] = q->buf[(c + i) & mask].value;
        /* seq_cst CAS: the slot loads before the head moves */
        if (__atomic_compare_exchange_n(&r->c_head, &c, c + n, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            break;
    }
    /* release: our loads of the slots before the owner may reuse them
     * after seeing no thief at work */
    __atomic_sub_fetch(&q->stealing, 1, __ATOMIC_SEQ_CST);
    if (n)
        CORO__TSAN_ACQUIRE(q);
    return n;
}
