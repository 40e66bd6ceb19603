/* SPDX-License-Identifier: MIT */
/* Job queues: our own MPMC ring for the shared queues, Concurrency Kit's
 * ck_ring for a worker's local ring.
 *
 * SHARED QUEUES.  coro__sharedq serves the per-worker inboxes, the
 * per-class queues and the global injection queue (class 0): any thread
 * pushes (workers, plain threads, the I/O thread), workers pop.  It is our
 * own, built on ck_pr, because ck has no MPMC queue whose producers are
 * lock-free: ck_ring's MPMC enqueue makes each producer spin until every
 * earlier producer has committed, so one pre-empted between its claim and
 * its commit (workers sharing CPUs, plain threads outnumbering them)
 * stalls every other producer for its whole time slice; ck_fifo_mpmc
 * allocates a node per push and needs ck_epoch or ck_hp to free it.  It
 * follows Dmitry Vyukov's bounded MPMC queue (1024cores.net, "Bounded
 * MPMC queue", 2010): a ring of slots, each with a sequence number.
 *
 * Tickets: tail is the next ticket a producer claims, head the next one a
 * consumer takes; both only grow (64 bits: they never wrap).  Ticket t
 * lives in slot t & mask (size = mask + 1 slots), whose seq says:
 *   seq == t          free for ticket t's producer (the consumer of
 *                     ticket t - size, or init, has finished with it)
 *   seq == t + 1      holds ticket t's job, published, for ticket t's
 *                     consumer
 *   seq == t + size   taken by ticket t's consumer: free for t + size
 * Who touches what: a producer writes a slot's job and seq only while it
 * holds the slot's ticket (from its CAS of tail until its publishing
 * store of seq); a consumer reads the job and writes seq only while it
 * holds the ticket (from its CAS of head until its freeing store).
 *   push: t = tail; seq == t: CAS tail t -> t + 1 (the claim), write the
 *         job, store seq = t + 1 (the publication).  seq < t: the slot
 *         still holds ticket t - size's job: full.  seq > t: another
 *         producer claimed t first: read tail again.
 *   pop:  h = head; seq == h + 1: CAS head h -> h + 1, read the job,
 *         store seq = h + size.  seq < h + 1: empty, or claimed and not
 *         yet published: "empty for now".  seq > h + 1: another consumer
 *         took h: read head again.
 * No producer waits for another: a push reads no other producer's
 * progress, and its only retry is a CAS lost to a producer that claimed
 * the ticket (lock-free: some push went on).  A producer pre-empted
 * between its claim and its publication holds its slot alone: consumers
 * that reach it report empty for now and look elsewhere (a worker's other
 * queues, then it parks); the jobs behind it in this queue wait until it
 * publishes, and its push, like every push, then notifies, so none is
 * lost.  Consumers do not skip the slot: a late producer would then write
 * its job into a slot a later ticket may already own (the job and seq are
 * two words); the designs that skip (LCRQ, Nikolaev's SCQ) pay a
 * double-width CAS or a second queue of indices on every push and pop.
 * Order: tickets order the ring, a producer's pushes take growing
 * tickets, and a push that returned before another began holds the
 * smaller one; a batch claims consecutive tickets with one CAS.
 *
 * Full: an intrusive overflow list under a mutex, so nothing is refused,
 * lost or allocated.  A push goes to the list when overflow_n (read
 * before its claim) is not 0 or the ring is full; under the mutex it tries
 * the ring again while the list is empty.  A consumer that gets nothing
 * from the ring while overflow_n is not 0 takes the mutex: the ring again
 * (a producer that read overflow_n before the list filled may have
 * published meanwhile); then, only if the ring holds no claimed ticket
 * (head == tail: a producer's jobs in the ring came before its jobs in the
 * list), the list's head, and it moves up to CORO__MQ_REFILL more into the
 * ring with its own claims, made before it lowers overflow_n: a producer
 * that reads the lower count claims after them, so a producer's jobs keep
 * their order across list and ring.  While a claimed ticket waits for its
 * producer, the whole queue is empty for now.  Producers wait for each
 * other only on this full path (the mutex), as they did on every push
 * while all of them took it.
 * tools/model/sharedq.pml checks the ring and the list with a producer
 * that stops for good between its claim and its publication, and rejects
 * a publication before the job's write, a consumer that waits for the
 * stopped producer, producers that commit in ticket order (ck_ring's MPMC
 * enqueue), producers under a mutex, and a pop that takes the list's
 * head while the ring holds a claimed ticket.
 *
 * Fences: ck_pr's; on x86 (TSO) all but store-load are compiler
 * barriers, and the CAS is a locked instruction.
 *
 * LOCAL RINGS.  coro__localq: a worker's local ring, SPMC
 * (ck_ring_enqueue_spmc by the owner, ck_ring_dequeue_spmc by the owner
 * and by thieves).  ck has no work-stealing deque, and none that takes a
 * batch at once: a thief takes half a ring with one CAS
 * (coro__localq_pop_batch, coro__localq_steal, ck's dequeue moved by n),
 * and the owner takes its newest job back as a Chase-Lev deque's owner
 * does (TAKING BACK below).
 *
 * ThreadSanitizer cannot see ck's inline-assembly atomics, so every push
 * releases and every pop acquires the queue's address for TSan (the job's
 * fields written before a push are then seen as ordered before the pop);
 * tools/ci/tsan.supp names ck's ring functions, and our loops over its slots
 * (coro__localq_pop_batch, coro__localq_steal), whose reads of a slot before
 * the CAS that discards them are false races.  The shared queues' own words are all read and written through
 * ck_pr, so TSan sees no access to them at all.
 */
#include "base/queues.h"
#include "base/base.h"

#ifdef CORO_TEST_HOOKS
void (*coro__sharedq_claimed)(struct coro__sharedq *q, uint64_t ticket);
#endif

int coro__sharedq_init(struct coro__sharedq *q, struct coro__sharedq_slot *slots, unsigned size)
{
    if (size < 2 || (size & (size - 1)))
        return -EINVAL;
    q->slots = slots;
    q->mask = size - 1;
    for (unsigned i = 0; i < size; i++) {
        slots[i].seq = i;       /* free for ticket i */
        slots[i].job = NULL;
    }
    q->overflow_n = 0;
    q->tail = q->head = 0;
    q->first = q->last = NULL;
    /* the queue is handed to other threads by whatever publishes the
     * scheduler or the class (a release there) */
    return -pthread_mutex_init(&q->lock, NULL);
}

void coro__sharedq_fini(struct coro__sharedq *q)
{
    pthread_mutex_destroy(&q->lock);
}

/* claim up to n consecutive tickets with one CAS: the free slots from the
 * tail on.  Returns how many (their first ticket in *first), 0 when the
 * ring is full */
static unsigned ring_claim(struct coro__sharedq *q, unsigned n, uint64_t *first)
{
    const uint64_t size = q->mask + 1;
    uint64_t t = ck_pr_load_64(&q->tail);

    if (n > size)
        n = (unsigned)size;
    for (;;) {
        unsigned k = 0;
        /* the seqs after the tail snapshot: a seq older than the tail we
         * CAS from would read as full */
        ck_pr_fence_load();
        for (; k < n; k++) {
            int64_t d = (int64_t)(ck_pr_load_64(&q->slots[(t + k) & q->mask].seq) - (t + k));
            if (d != 0) {
                if (k == 0 && d < 0)
                    return 0;   /* ticket t - size's job is still there */
                break;          /* d > 0 at k == 0: t was claimed; retry */
            }
        }
        if (k > 0) {
            /* the seq loads before the claim; the CAS is a full barrier
             * on x86, the fence keeps the compiler from moving them */
            ck_pr_fence_load_atomic();
            if (ck_pr_cas_64_value(&q->tail, t, t + k, &t)) {
                *first = t;
                return k;
            }
            continue;           /* t holds the tail the CAS saw */
        }
        t = ck_pr_load_64(&q->tail);
    }
}

/* publish jobs[0..k) at tickets first.. (claimed by ring_claim) */
static void ring_publish(struct coro__sharedq *q, uint64_t first, struct coro **jobs, unsigned k)
{
#ifdef CORO_TEST_HOOKS
    void (*hook)(struct coro__sharedq *, uint64_t) = CORO__HOOK(coro__sharedq_claimed, NULL);
    if (hook)
        hook(q, first);
#endif
    /* TSan: what the caller wrote into the jobs before the publication */
    CORO__TSAN_RELEASE(q);
    /* our claim (the CAS on tail) and the seq loads before it, before
     * our writes into the slots: the consumer of ticket t - size read its
     * job before it stored the seq we read (pop_ring's load-store fence) */
    ck_pr_fence_atomic_store();
    for (unsigned i = 0; i < k; i++) {
        struct coro__sharedq_slot *sl = &q->slots[(first + i) & q->mask];
        ck_pr_store_ptr(&sl->job, jobs[i]);
        /* the job (and what the caller wrote into it) before the seq
         * that hands it to its consumer */
        ck_pr_fence_store();
        ck_pr_store_64(&sl->seq, first + i + 1);
    }
}

/* push jobs[0..n) into the ring, in order; returns how many fit */
static unsigned ring_push(struct coro__sharedq *q, struct coro **jobs, unsigned n)
{
    unsigned done = 0;

    while (done < n) {
        uint64_t first;
        unsigned k = ring_claim(q, n - done, &first);
        if (k == 0)
            break;
        ring_publish(q, first, jobs + done, k);
        done += k;
    }
    return done;
}

struct coro *coro__sharedq_pop_ring(struct coro__sharedq *q)
{
    uint64_t h = ck_pr_load_64(&q->head);
    struct coro__sharedq_slot *sl;

    for (;;) {
        sl = &q->slots[h & q->mask];
        /* the slot's seq after the head snapshot (a seq older than the
         * head reads as empty) */
        ck_pr_fence_load();
        int64_t d = (int64_t)(ck_pr_load_64(&sl->seq) - (h + 1));
        if (d == 0) {
            /* the seq load before the claim (the CAS is a full barrier
             * on x86; the fence binds the compiler) */
            ck_pr_fence_load_atomic();
            if (ck_pr_cas_64_value(&q->head, h, h + 1, &h))
                break;
        } else if (d < 0) {
            return NULL;        /* empty, or ticket h not published yet */
        } else {
            h = ck_pr_load_64(&q->head);
        }
    }
    /* the job after the seq that published it (acquire, with the
     * producer's store fence) */
    ck_pr_fence_load();
    struct coro *job = ck_pr_load_ptr(&sl->job);
    /* our read of the job before the seq hands the slot to ticket
     * h + size's producer, who then overwrites it */
    ck_pr_fence_load_store();
    ck_pr_store_64(&sl->seq, h + q->mask + 1);
    CORO__TSAN_ACQUIRE(q);
    return job;
}

/* under q->lock: append jobs[0..n) to the overflow list */
static void list_append(struct coro__sharedq *q, struct coro **jobs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        jobs[i]->next = NULL;
        if (q->last)
            q->last->next = jobs[i];
        else
            q->first = jobs[i];
        q->last = jobs[i];
    }
    /* after the list (the mutex orders the list for its readers; the
     * count is a hint that sends pushes to the list and pops to the
     * mutex) */
    ck_pr_store_32(&q->overflow_n, ck_pr_load_32(&q->overflow_n) + n);
}

/* the full path: the ring while the list is empty, the list after */
static void push_slow(struct coro__sharedq *q, struct coro **jobs, unsigned n)
{
    unsigned i = 0;

    pthread_mutex_lock(&q->lock);
    if (ck_pr_load_32(&q->overflow_n) == 0)
        i = ring_push(q, jobs, n);  /* pops may have made room */
    if (i < n)
        list_append(q, jobs + i, n - i);
    pthread_mutex_unlock(&q->lock);
}

void coro__sharedq_push(struct coro__sharedq *q, coro_t *job)
{
    /* overflow_n before our claim: 0 means no job of the list came
     * before this push began, or the consumer that moved the list's jobs
     * to the ring had claimed their tickets before it lowered the count
     * (its store fence), so ours come after them */
    if (CORO__LIKELY(ck_pr_load_32(&q->overflow_n) == 0)) {
        /* the count before the claim's loads and CAS */
        ck_pr_fence_load();
        ck_pr_fence_load_atomic();
        if (CORO__LIKELY(ring_push(q, &job, 1)))
            return;
    }
    push_slow(q, &job, 1);
}

void coro__sharedq_push_batch(struct coro__sharedq *q, coro_t **jobs, unsigned n)
{
    unsigned i = 0;

    /* as coro__sharedq_push */
    if (CORO__LIKELY(ck_pr_load_32(&q->overflow_n) == 0)) {
        ck_pr_fence_load();
        ck_pr_fence_load_atomic();
        i = ring_push(q, jobs, n);
    }
    if (i < n)
        push_slow(q, jobs + i, n - i);
}

coro_t *coro__sharedq_pop_slow(struct coro__sharedq *q)
{
    coro_t *moved[CORO__MQ_REFILL];
    coro_t *job;
    unsigned k = 0, pushed;

    pthread_mutex_lock(&q->lock);
    /* a producer that read overflow_n as 0 before the list filled may
     * have published in the ring meanwhile: the ring's jobs first */
    job = coro__sharedq_pop_ring(q);
    if (job || !q->first) {
        pthread_mutex_unlock(&q->lock);
        return job;
    }
    /* the ring's claimed tickets come before the list's jobs (a
     * producer's push to the list follows its pushes to the ring): while
     * one is not yet published, the whole queue is empty for now.  Head
     * then tail: equal, the ring was empty when the tail was read (head
     * <= tail: a consumer claims only a published ticket) */
    uint64_t h = ck_pr_load_64(&q->head);
    ck_pr_fence_load();
    if (ck_pr_load_64(&q->tail) != h) {
        pthread_mutex_unlock(&q->lock);
        return NULL;
    }
    /* the list's head, then up to CORO__MQ_REFILL more into the ring
     * (one lock per batch, not per job).  A job is in one of the two:
     * its next is cleared before the claim publishes it */
    job = q->first;
    coro_t *n = job->next;
    job->next = NULL;
    while (n && k < CORO__MQ_REFILL) {
        moved[k++] = n;
        coro_t *nx = n->next;
        n->next = NULL;
        n = nx;
    }
    pushed = ring_push(q, moved, k);
    /* the ring full (other producers came first): the rest go back */
    for (unsigned i = k; i-- > pushed;) {
        moved[i]->next = n;
        n = moved[i];
    }
    q->first = n;
    if (!n)
        q->last = NULL;
    /* our claims (the CAS on tail) and publications before the lower
     * count, which lets producers claim in the ring again (see
     * coro__sharedq_push) */
    ck_pr_fence_store();
    ck_pr_fence_atomic_store();
    ck_pr_store_32(&q->overflow_n, ck_pr_load_32(&q->overflow_n) - 1 - pushed);
    pthread_mutex_unlock(&q->lock);
    return job;
}

void coro__sharedq_each(struct coro__sharedq *q, void (*fn)(void *ctx, coro_t *job), void *ctx)
{
    uint64_t h = ck_pr_load_64(&q->head);
    /* the tail after the head: no ticket below the head read */
    ck_pr_fence_load();
    uint64_t t = ck_pr_load_64(&q->tail);

    for (uint64_t i = h; (int64_t)(t - i) > 0 && i - h <= q->mask; i++) {
        struct coro__sharedq_slot *sl = &q->slots[i & q->mask];
        /* a racy look: the job only while the seq says it is ticket i's */
        if (ck_pr_load_64(&sl->seq) != i + 1)
            continue;
        ck_pr_fence_load();
        coro_t *job = ck_pr_load_ptr(&sl->job);
        ck_pr_fence_load();
        if (ck_pr_load_64(&sl->seq) == i + 1)
            fn(ctx, job);
    }
    pthread_mutex_lock(&q->lock);
    for (coro_t *j = q->first; j; j = j->next)
        fn(ctx, j);
    pthread_mutex_unlock(&q->lock);
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
