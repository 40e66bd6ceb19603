/* SPDX-License-Identifier: MIT */
/* The parking lot: wait lists hashed by address, and each scheduler's
 * registry of what waits.  The timers of its timed waits are in
 * lib/wait/wtimer.c; the rules they keep with the lists: TIMERS below.
 *
 * WAIT LISTS.  Jobs and plain threads wait on a key (any address: a job
 * for coro_done, an event, a mutex, a channel ...); wakers wake the oldest
 * or all waiters of a key.  This is WebKit's ParkingLot and the kernel's
 * futex hash: wait objects need no list of their own.
 *
 * Who touches what: a bucket's list, and the wait_obj/next/flags
 * fields of the coro_t entries on it, only under the bucket's mutex.  A
 * waiter is on at most one list.  Whoever unlinks a waiter owns its
 * wake-up and performs it after unlocking: exactly once, never under a
 * lock.  A plain thread waits with a record on its own stack (flag
 * CORO__FL_THREAD, a futex on its state word, its own deadline); a select
 * branch with a record in the coro_select_t (CORO__FL_PROXY).
 *
 * Mutexes, not ck spinlocks: a bucket holder may be pre-empted when
 * workers outnumber CPUs, and ThreadSanitizer understands pthread mutexes.
 *
 * The sync objects (the files of lib/sync/) keep their own state under the bucket
 * lock of their address (lib/wait/wait.h: coro__parklot_lock/take/link), so a
 * check of the state and the wait it decides are one atomic step.
 *
 * SELECT.  A select branch's record is claimed through its own hook (the
 * record's fn field, see lib/wait/wait.h), called by coro__parklot_take under
 * the record's bucket lock: the lot knows nothing of select.  A record
 * whose select already completed refuses and is dropped, and the next
 * waiter is taken instead, so no wake-up is lost to it.  Odd keys (a
 * select's own key) hash into their own buckets, taken only after an even
 * one, so that nesting is never a bucket within itself.
 *
 * TIMERS (a timeout belongs to its wait; the heap and the fire path are in
 * lib/wait/wtimer.c, struct coro__parklot_sched in lib/wait/parklot_impl.h).  A
 * wait begun on a worker puts its timer in that worker's heap, under that
 * worker's lock (lib/wait/wtimer.c: the same rules, that lock in place of
 * hlock); otherwise each scheduler has one min-heap
 * (lib/wait/heap.c) of {deadline, waiter, key} behind its own timerfd, under its own mutex
 * (hlock), preallocated (CORO__TIMER_PREALLOC entries) so that steady-state
 * timed waits allocate nothing; growth goes through the config allocator
 * and its failure fails the wait with -ENOMEM.  The waiter (a job: only
 * jobs use the heap, a plain thread waits on its futex with a deadline)
 * carries flag CORO__FL_TIMED (under its bucket lock) and keeps its
 * timer's slot in wait_slot (its home and handle, + 1: lib/wait/wait.h;
 * written under the bucket lock and the timer's lock, cleared by a fire
 * or removal under both; the handle finds the timer's record wherever heap
 * moves put its entry: lib/wait/heap.c).
 * Invariant: a live timer exists
 * exactly while its waiter is linked on the entry's key; both change only
 * under that key's bucket lock.  So:
 *   - linking and arming happen under the bucket lock: a deadline that is
 *     already past is still found, because the fire path needs that lock;
 *   - every unlink (wake, withdraw, cancel) removes the timer in O(1)
 *     before the waiter's wake-up: nothing outlives the wait, and a frame
 *     may be reused at once (no stale timer, no wait counter);
 *   - the fire path (who runs it, and when: lib/wait/wtimer.c) peeks at
 *     the earliest entry under its heap's lock (hlock, or the worker's),
 *     drops it, locks the entry's bucket, then the heap's lock again, and
 *     fires the earliest entry only if it is
 *     still due and of that bucket: what it fires is decided under the
 *     bucket lock, so the waiter is linked and alive.
 * Lock order: bucket (even, then odd) -> hlock; a registry lock -> hlock
 * never happens.  The timerfd is reprogrammed only when a new deadline is
 * earlier than the armed one, and by the fire path to the next deadline;
 * an early fire for a wait that ended finds nothing due and re-arms.
 *
 * REGISTRY (CORO_CANCEL visits exactly the waits of its scheduler).
 *   - parked: one bit per bucket in which a job of the scheduler has ever
 *     parked.  The parker sets it (a check first, so the steady state
 *     writes nothing) under the bucket lock, then checks s->cancelling;
 *     cancel stores s->cancelling, then reads the bits.  All four are
 *     seq_cst, so either the cancel sees the bit (and locks the bucket,
 *     after the parker's link or before its check) or the parker sees the
 *     flag.  A bit already set was set under this bucket's lock by an
 *     earlier parker, whose check happens before ours (the lock), so the
 *     same holds through it.  An idle scheduler's cancel visits nothing.
 *   - joiner slots: a job that awaits coro_done(T) of its own scheduler
 *     sits in T->joiner (no lot).  It is also linked (next / wait_obj as
 *     prev) on a registry list (one per worker slot, chosen by a hash of
 *     the job's address) under that list's lock, and
 *     keeps the list's index in wait_slot (a spinlock: see joiner_registry_lock).  Whoever unlinks it there owns
 *     its wake-up: T's finisher (after its exchange of T->joiner took it),
 *     or cancel after a CAS of T->joiner from the job to NULL (T is valid:
 *     its awaiter has not resumed).  A cancel whose CAS fails leaves the
 *     job to the finisher that took the slot.
 */
#include <sched.h>
#include <string.h>

#include "wait/parklot_impl.h"
#include "sched/trace.h"

#define PARKLOT_SIZE (1u << CORO__PARKLOT_BITS)
#define SEL_SIZE (1u << CORO__PARKLOT_SEL_BITS)
#define NBUCKETS CORO__PARKLOT_NBUCKETS
#define bucket coro__parklot_bucket

/* zero-initialised: in .bss, touched page by page (glibc's
 * PTHREAD_MUTEX_INITIALIZER is all zeros) */
static struct bucket lot[PARKLOT_SIZE];
_Static_assert(CORO__PARKLOT_BITS <= 16, "4 MiB of buckets at most");
/* odd keys: a select's own key; taken only after an even bucket */
static struct bucket sel_parklot[SEL_SIZE];

/* The registry lists are held for a handful of stores, on every suspended
 * coro_done: a pthread mutex costs several times the instructions.  The
 * spinlock gives the CPU away after a few tries, so a pre-empted holder
 * (more workers than CPUs) is not spun against. */
void coro__joiner_registry_lock(struct joiner_registry *r)
{
    coro__spin_lock(&r->lock);
}

void coro__joiner_registry_unlock(struct joiner_registry *r)
{
    coro__spin_unlock(&r->lock);
}

#define joiner_registry_lock coro__joiner_registry_lock
#define joiner_registry_unlock coro__joiner_registry_unlock
#define bucket_at coro__parklot_bucket_at
#define PARKED_WORDS CORO__PARKED_WORDS

static struct bucket *bucket_of(const void *key)
{
    /* the low 4 bits are ignored: k and k + 2 share a bucket */
    uint64_t h = ((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull;
    if ((uintptr_t)key & 1)
        return &sel_parklot[h >> (64 - CORO__PARKLOT_SEL_BITS)];
    return &lot[h >> (64 - CORO__PARKLOT_BITS)];
}

static unsigned bucket_index(const struct bucket *b)
{
    if (b >= lot && b < lot + PARKLOT_SIZE)
        return (unsigned)(b - lot);
    return PARKLOT_SIZE + (unsigned)(b - sel_parklot);
}

struct coro__parklot_bucket *coro__parklot_bucket_at(unsigned i)
{
    return i < PARKLOT_SIZE ? &lot[i] : &sel_parklot[i - PARKLOT_SIZE];
}

/* ---- wait lists --------------------------------------------------------------- */

static void append(struct bucket *b, coro_t *w)
{
    w->next = NULL;
    if (b->tail)
        b->tail->next = w;
    else
        b->head = w;
    b->tail = w;
}

/* unlink w, whose predecessor is prev (NULL = head); its timer goes too */
static void unlink_after(struct bucket *b, coro_t *prev, coro_t *w)
{
    if (prev)
        prev->next = w->next;
    else
        b->head = w->next;
    if (b->tail == w)
        b->tail = prev;
    w->next = NULL;
    if (w->flags & CORO__FL_TIMED) {    /* only jobs: threads and branches never */
        w->flags &= (uint8_t)~CORO__FL_TIMED;
        coro__parklot_timer_del(w);
    }
}

/* w: a job or a thread's record (select branches never get here:
 * coro__wakelist_add turns them into their owner); b: a job goes there
 * (coro__wake_into) */
static inline __attribute__((always_inline)) void wake_waiter(coro_t *w, intptr_t res,
                                                               struct coro__woken *b)
{
    if (w->flags & CORO__FL_THREAD) {
        coro__trace_thread_wake(w);
        w->result = res;
        /* release: the result before the flag the thread acquires; after
         * the store the record may be gone: only its address is used */
        __atomic_store_n(&w->state, 1, __ATOMIC_RELEASE);
        coro__futex_wake(&w->state, 1);
    } else if (b) {
        coro__wake_into(b, w, res);
    } else {
        coro__wake(w, res);
    }
}

/* ---- the sync objects' interface (lib/wait/wait.h) ------------------------ */

/* here, where the lot recognises held operations by this arm
 * (coro__held_ops_of) */
int coro__sync_arm_held(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    aw->arg[1].i = (intptr_t)(uintptr_t)job;    /* who waits: the job, root frame */
    return coro__held_ops_of(aw)->arm(s, job, aw, res);
}

coro__parklot_bucket_t *coro__parklot_bucket(const void *key)
{
    return bucket_of(key);
}

coro__parklot_bucket_t *coro__parklot_lock(const void *key)
{
    struct bucket *b = bucket_of(key);
    pthread_mutex_lock(&b->lock);
    return b;
}

void coro__parklot_unlock(coro__parklot_bucket_t *b)
{
    pthread_mutex_unlock(&b->lock);
}

coro_t *coro__parklot_take(coro__parklot_bucket_t *b, const void *key)
{
    if (!b)
        b = bucket_of(key);     /* the caller holds it */
    for (coro_t *p = NULL, *w = b->head; w;) {
        if (w->wait_obj != key) {
            p = w;
            w = w->next;
            continue;
        }
        coro_t *nx = w->next;
        unlink_after(b, p, w);
        /* a select branch's record decides its own claim (its hook) */
        if (!(w->flags & CORO__FL_PROXY) || w->fn(w) == 0)
            return w;
        w = nx;             /* a stale branch: dropped, look further */
    }
    return NULL;
}

bool coro__parklot_waiting(coro__parklot_bucket_t *b, const void *key)
{
    if (!b)
        b = bucket_of(key);     /* the caller holds it */
    for (coro_t *w = b->head; w; w = w->next)
        if (w->wait_obj == key)
            return true;
    return false;
}

bool coro__parklot_waiting_arg(coro__parklot_bucket_t *b, const void *key, const void *arg0)
{
    for (coro_t *w = b->head; w; w = w->next)
        if (w->wait_obj == key && coro__parklot_args(w)->arg[0].p == arg0)
            return true;
    return false;
}

void coro__parklot_link(coro__parklot_bucket_t *b, const void *key, coro_t *w)
{
    w->wait_obj = (void *)key;
    append(b, w);
}

/* under b: note that a job of s parks in b; then is s cancelling, or the
 * job (coro_cancel)? */
static bool admit(struct bucket *b, coro_t *job)
{
    coro_sched_t *s = job->sched;
    struct coro__parklot_sched *ls = s->parklot;
    unsigned i = bucket_index(b);
    uint64_t bit = coro__bit(i), *word = &ls->parked[coro__bit_word(i)];

    /* seq_cst (the RMW and both loads): against coro__parklot_cancel_sched's
     * store of s->cancelling and its load of the bits (top of file) */
    if (!(__atomic_load_n(word, __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(word, bit, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&s->cancelling, __ATOMIC_SEQ_CST) == 0 &&
           !coro__job_cancelled(job);
}

int coro__parklot_park(coro__parklot_bucket_t *b, const void *key, coro_t *job, int64_t deadline)
{
    coro_sched_t *s = job->sched;
    int rc;

    if (!admit(b, job))
        return -ECANCELED;
    deadline = coro__bound_deadline(job, deadline);     /* .deadline */
    if (deadline >= 0) {
        if ((rc = coro__parklot_timer_add(s->parklot, job, key, deadline)) < 0)
            return rc;
        job->flags |= CORO__FL_TIMED;
    }
    coro__parklot_link(b, key, job);
    return 0;
}

bool coro__parklot_unlink(coro__parklot_bucket_t *b, const void *key, coro_t *w)
{
    for (coro_t *p = NULL, *x = b->head; x; p = x, x = x->next) {
        if (x == w) {
            if (x->wait_obj != key)
                return false;
            unlink_after(b, p, x);
            return true;
        }
    }
    return false;
}

coro_t *coro__parklot_pop_raw(coro__parklot_bucket_t *b, const void *key)
{
    for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next) {
        if (w->wait_obj == key) {
            unlink_after(b, p, w);
            return w;
        }
    }
    return NULL;
}

/* a parked job's innermost frame.  Relaxed: the bucket's or registry's
 * lock that the caller holds, taken by the job's arm too, orders its
 * step's stores of top before us, and a parked job does not step again
 * before its wake; atomic because those stores are (sched/run.c set_top)
 * and a cancel reads top while the job may still run (lib/wait/done.c) */
static inline coro_t *parked_top(coro_t *w)
{
    return __atomic_load_n(&w->top, __ATOMIC_RELAXED);
}

coro_await_t *coro__parklot_args(coro_t *w)
{
    return (w->flags & (CORO__FL_THREAD | CORO__FL_PROXY)) ? &w->aw : &parked_top(w)->aw;
}

static void wakelist_push(coro__wakelist_t *wakes, coro_t *w, intptr_t res)
{
    /* the pending result rides in the field the wake writes anyway */
    if (w->flags & CORO__FL_THREAD)
        w->result = res;
    else
        parked_top(w)->result = res;
    w->next = NULL;
    *wakes->tail = w;
    wakes->tail = &w->next;
}

void coro__wakelist_add(coro__wakelist_t *wakes, coro_t *w, intptr_t res)
{
    if (w->flags & CORO__FL_PROXY) {
        /* a select branch: its result stays in its record (read by its
         * owner after it has withdrawn every branch, under this lock);
         * the owner, if its claim hook found it parked, is woken with the
         * branch index (kept in the record's cls) */
        coro_t *owner = w->parent;
        w->result = res;
        w->parent = NULL;
        if (owner)
            wakelist_push(wakes, owner, (intptr_t)w->cls);
        return;
    }
    wakelist_push(wakes, w, res);
}

void coro__wakelist_wake_into(coro__wakelist_t *wakes, struct coro__woken *b)
{
    coro_t *w = wakes->head;

    while (w) {
        coro_t *nx = w->next;   /* the wake reuses next */
        w->next = NULL;
        wake_waiter(w, (w->flags & CORO__FL_THREAD) ? w->result : parked_top(w)->result, b);
        w = nx;
    }
    coro__wakelist_init(wakes);
}



intptr_t coro__parklot_wait_thread(coro__parklot_bucket_t *b, const void *key, coro_t *me, int64_t deadline)
{
    me->flags = CORO__FL_THREAD;
    me->state = 0;
    coro__parklot_link(b, key, me);
    pthread_mutex_unlock(&b->lock);
    /* acquire: pairs with wake_waiter's release of the result */
    while (__atomic_load_n(&me->state, __ATOMIC_ACQUIRE) == 0) {
        if (coro__futex_wait(&me->state, 0, deadline) != -ETIMEDOUT)
            continue;
        /* timed out: withdraw, unless a waker has already unlinked us */
        coro__wakelist_t wakes;
        coro__wakelist_init(&wakes);
        pthread_mutex_lock(&b->lock);
        bool removed = coro__parklot_unlink(b, key, me);
        if (removed)
            coro__sync_left(b, me, &wakes);    /* who may go now that we left */
        pthread_mutex_unlock(&b->lock);
        coro__wakelist_wake(&wakes);
        if (removed)
            return -ETIMEDOUT;
        deadline = -1;      /* the wake is on its way */
    }
    return me->result;
}

/* ---- the original interface (lib/sched/sched.h) ------------------------------ */

int coro__parklot_park_job(void *key, coro_t *job, coro__parklot_validate_fn validate, void *ctx,
                       intptr_t *res, int64_t deadline)
{
    struct bucket *b = bucket_of(key);
    int rc;

    pthread_mutex_lock(&b->lock);
    if (validate && !validate(key, ctx, res)) {
        pthread_mutex_unlock(&b->lock);
        return CORO__ARM_READY;
    }
    rc = coro__parklot_park(b, key, job, deadline);
    pthread_mutex_unlock(&b->lock);
    if (rc < 0) {
        *res = rc;
        return CORO__ARM_READY;
    }
    return CORO__ARM_PENDING;
}

intptr_t coro__parklot_park_thread(void *key, coro__parklot_validate_fn validate, void *ctx,
                               int64_t deadline)
{
    struct bucket *b = bucket_of(key);
    coro_t me;
    intptr_t res;

    memset(&me, 0, sizeof me);
    pthread_mutex_lock(&b->lock);
    if (validate && !validate(key, ctx, &res)) {
        pthread_mutex_unlock(&b->lock);
        return res;
    }
    return coro__parklot_wait_thread(b, key, &me, deadline);
}

int coro__parklot_unpark_all(void *key, intptr_t res)
{
    struct bucket *b = bucket_of(key);
    coro__wakelist_t wakes;
    coro_t *w;
    int n = 0;

    coro__wakelist_init(&wakes);
    pthread_mutex_lock(&b->lock);
    while ((w = coro__parklot_take(b, key))) {
        coro__wakelist_add(&wakes, w, res);
        n++;
    }
    pthread_mutex_unlock(&b->lock);
    coro__wakelist_wake(&wakes);
    return n;
}

/* ---- joiner slots (coro_done within one scheduler) ----------------------------- */

/* the registry list of job: a hash of its address, so that coro_cancel
 * of one job finds the one list it may be on (CANCEL ONE) */
static int joiner_registry_index(const struct coro__parklot_sched *ls, const coro_t *job)
{
    uint64_t h = ((uint64_t)(uintptr_t)job >> 6) * 0x9E3779B97F4A7C15ull;
    return (int)(((h >> 32) * (uint64_t)ls->nreg) >> 32);
}

int coro__parklot_joiner_arm(coro_sched_t *s, coro_t *target, coro_t *job, intptr_t *res)
{
    struct coro__parklot_sched *ls = s->parklot;
    int idx = joiner_registry_index(ls, job);
    struct joiner_registry *r = &ls->reg[idx];
    coro_t *none = NULL;

    if (__atomic_load_n(&target->joiner, __ATOMIC_RELAXED))
        return -1;
    joiner_registry_lock(r);
    /* after the lock: cancel locks every list after it set the flag.
     * acquire: as coro__cancelling, inlined on this hot path */
    if (__atomic_load_n(&s->cancelling, __ATOMIC_ACQUIRE) || coro__job_cancelled(job)) {
        joiner_registry_unlock(r);
        *res = -ECANCELED;
        return CORO__ARM_READY;
    }
    /* acq_rel: one awaiter wins the slot */
    if (!__atomic_compare_exchange_n(&target->joiner, &none, job, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED)) {
        joiner_registry_unlock(r);
        return -1;
    }
    job->wait_slot = (uint32_t)idx;     /* published by the CAS below */
    /* acquire: a DONE target's result is complete */
    uint32_t st = __atomic_load_n(&target->state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t lst = st & CORO__S_MASK;
        if (lst == CORO__S_DONE || lst == CORO__S_IDLE || lst == CORO__S_CHILD) {
            /* it finished (or was never a job) before the flag: undo */
            __atomic_store_n(&target->joiner, NULL, __ATOMIC_RELAXED);
            job->wait_slot = 0;
            joiner_registry_unlock(r);
            *res = lst == CORO__S_DONE ? target->result : -EINVAL;
            return CORO__ARM_READY;
        }
        /* acq_rel: the joiner pointer and wait_slot before the flag the
         * finisher reads in its exchange to DONE */
        if (__atomic_compare_exchange_n(&target->state, &st, st | CORO__F_JOINER, true,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    /* on the registry; the finisher that took the slot waits for our lock */
    job->wait_obj = NULL;
    job->next = r->head;
    if (r->head)
        r->head->wait_obj = job;
    r->head = job;
    joiner_registry_unlock(r);
    return CORO__ARM_PENDING;
}

static void joiner_registry_unlink(struct joiner_registry *r, coro_t *w)
{
    coro_t *prev = w->wait_obj;
    if (prev)
        prev->next = w->next;
    else
        r->head = w->next;
    if (w->next)
        w->next->wait_obj = prev;
    w->next = NULL;
    w->wait_obj = NULL;
    w->wait_slot = 0;
}

void coro__parklot_joiner_wake(coro_t *w, intptr_t res)
{
    struct joiner_registry *r = &w->sched->parklot->reg[w->wait_slot];

    joiner_registry_lock(r);
    joiner_registry_unlink(r, w);
    joiner_registry_unlock(r);
    coro__wake(w, res);
}

/* ---- CORO_CANCEL ------------------------------------------------------------------ */

/* unlink every job of s (never a thread or a select branch: a select's
 * owner waits on the select's key and is cancelled there) */
static bool cancel_match(coro_t *w, coro_sched_t *s, bool flagged)
{
    return w->sched == s && (!flagged || coro__job_cancelled(w));
}

static void cancel_bucket(struct bucket *b, coro_sched_t *s, bool flagged, coro__wakelist_t *wakes)
{
    for (coro_t *p = NULL, *w = b->head; w;) {
        coro_t *nx = w->next;
        if (!(w->flags & (CORO__FL_THREAD | CORO__FL_PROXY)) && cancel_match(w, s, flagged)) {
            unlink_after(b, p, w);
            coro__sync_left(b, w, wakes);
            coro__wakelist_add(wakes, w, -ECANCELED);
            if (coro__held_ops_of(coro__parklot_args(w))) {
                p = NULL;           /* its left() may have taken others: from the top */
                nx = b->head;
            }
        } else {
            p = w;
        }
        w = nx;
    }
}

static int joiners_sweep(coro_sched_t *s, bool flagged);

/* flagged: only the jobs that carry CORO__F_CANCEL (coro_cancel) */
static int cancel_sweep(coro_sched_t *s, bool flagged)
{
    struct coro__parklot_sched *ls = s->parklot;
    uint64_t visits = 0;
    int n = 0;

    for (unsigned k = 0; k < PARKED_WORDS; k++) {
        /* seq_cst: after the caller's seq_cst store of s->cancelling (see
         * admit) */
        uint64_t bits = __atomic_load_n(&ls->parked[k], __ATOMIC_SEQ_CST);
        while (bits) {
            unsigned i = k * 64 + (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            struct bucket *b = bucket_at(i);
            coro__wakelist_t wakes;
            coro__wakelist_init(&wakes);
            visits++;
            pthread_mutex_lock(&b->lock);
            cancel_bucket(b, s, flagged, &wakes);
            pthread_mutex_unlock(&b->lock);
            for (coro_t *w = wakes.head; w; w = w->next)
                n++;
            coro__wakelist_wake(&wakes);
        }
    }
    n += joiners_sweep(s, flagged);
    if (!flagged)
        ls->visits = visits;
    return n;
}

/* the joiner slots' registries: end every joiner of s (flagged: only
 * those that carry CORO__F_CANCEL) */
static int joiners_sweep(coro_sched_t *s, bool flagged)
{
    struct coro__parklot_sched *ls = s->parklot;
    int n = 0;

    if (flagged)        /* relaxed: a count for tests, read after their cancels */
        __atomic_add_fetch(&ls->sweeps, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ls->nreg; i++) {
        struct joiner_registry *r = &ls->reg[i];
        coro_t *woken = NULL;
        joiner_registry_lock(r);
        for (coro_t *w = r->head, *nx; w; w = nx) {
            nx = w->next;
            coro_t *target = parked_top(w)->aw.arg[0].p, *me = w;
            if (flagged && !coro__job_cancelled(w))
                continue;
            /* acq_rel: against the finisher's exchange of the slot; the
             * one that empties it owns w's wake-up */
            if (__atomic_compare_exchange_n(&target->joiner, &me, NULL, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                joiner_registry_unlink(r, w);
                w->next = woken;
                woken = w;
            }
        }
        joiner_registry_unlock(r);
        while (woken) {
            coro_t *nx = woken->next;
            woken->next = NULL;
            coro__wake(woken, -ECANCELED);
            woken = nx;
            n++;
        }
    }
    return n;
}


/* CANCEL ONE.  coro_cancel(job) set the flag with a seq_cst RMW of the
 * job's state word, which returned old.  Every change of the word is an
 * RMW, so they have one order:
 *   - old not SUSPENDED (queued, running, done): the job holds no
 *     registration, and its next arm comes after its own READY ->
 *     SUSPENDED RMW, which follows ours in that order: it reads the flag,
 *     and every arm that registers checks it under its structure's lock
 *     (REGISTRY): nothing to end.
 *   - old SUSPENDED: our RMW follows the job's READY -> SUSPENDED one (a
 *     release), so the job's innermost frame and its awaitable, written
 *     before, are visible to us and stay put until our cancel is done
 *     with them, even if a waker ends the wait meanwhile (CORO__F_CREAD,
 *     lib/rt/cancel_one.c READING THE AWAITABLE).  A sync
 *     awaitable (coro__sync_arm) parks the job on its key's bucket, and
 *     coro_done / coro_done_timeout on the target's; we lock that bucket
 *     and unlink the job if it is there.  An arm still on its way takes
 *     the same lock: before us, it linked the job (found) or saw the flag;
 *     after us, our flag happens before its check (the lock), so it
 *     refuses.  A waker that got there first owns the wake: not found.
 *     A select's owner waits on the select's own key, a group's waiter
 *     on the group: the same.  coro_done's joiner slot: the job's
 *     registry list is a hash of its address (joiner_registry_index), so we lock
 *     that list, the one its arm holds from its claim of the slot to its
 *     link (or undo): the job is linked there or not at all, and the
 *     slot is ours to empty by the same CAS as the sweep's.
 * The I/O layer does the same for fd, signal and child waits
 * (coro__io_cancel_job), the blocking pool for its queue; anything else
 * (an awaitable with no cancel hook): false, and the caller sweeps every
 * structure as for CORO_CANCEL of many.  The dispatch on the awaitable
 * (coro__wait_cancel_job) lives in wait/done.c, which knows the
 * awaitables: the lot knows none of them. */
void coro__parklot_cancel_in_bucket(coro_t *job, const void *key)
{
    struct bucket *b = bucket_of(key);
    coro__wakelist_t wakes;

    coro__wakelist_init(&wakes);
    pthread_mutex_lock(&b->lock);
    for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next)
        if (w == job && w->wait_obj == key) {
            unlink_after(b, p, w);
            coro__sync_left(b, w, &wakes);
            coro__wakelist_add(&wakes, w, -ECANCELED);
            break;
        }
    pthread_mutex_unlock(&b->lock);
    coro__wakelist_wake(&wakes);
}

void coro__parklot_cancel_joiner(coro_sched_t *s, coro_t *job, coro_t *target)
{
    struct joiner_registry *r = &s->parklot->reg[joiner_registry_index(s->parklot, job)];
    bool took = false;

    joiner_registry_lock(r);
    /* by identity only: a job that is not on this list may have resumed,
     * and target is read only while the job is linked (not resumed) */
    for (coro_t *w = r->head; w; w = w->next) {
        if (w != job)
            continue;
        coro_t *me = job;
        /* acq_rel: against the finisher's exchange of the slot, as in
         * joiners_sweep */
        if (__atomic_compare_exchange_n(&target->joiner, &me, NULL, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            joiner_registry_unlink(r, job);
            took = true;
        }
        break;
    }
    joiner_registry_unlock(r);
    if (took)
        coro__wake(job, -ECANCELED);
}

static int cancel_sweep(coro_sched_t *s, bool flagged);

int coro__parklot_cancel_sched(coro_sched_t *s)
{
    return cancel_sweep(s, false);
}

/* coro_cancel: the same registry protocol, with the job's flag in the place
 * of s->cancelling: the canceller's seq_cst RMW of the flag, then its
 * seq_cst loads of the bits; the parker's seq_cst bit, then its seq_cst
 * load of the flag (admit).  A joiner checks the flag under its registry
 * lock, which the sweep takes after setting it. */
int coro__parklot_cancel_jobs(coro_sched_t *s)
{
    return cancel_sweep(s, true);
}

#ifdef CORO_TEST_HOOKS
uint64_t coro__parklot_cancel_visits(coro_sched_t *s)
{
    return s->parklot->visits;
}

uint64_t coro__parklot_cancel_sweeps(coro_sched_t *s)
{
    return __atomic_load_n(&s->parklot->sweeps, __ATOMIC_RELAXED);
}
#endif

/* ---- per-scheduler life ------------------------------------------------------------ */

int coro__parklot_sched_init(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = coro__alloc(s, sizeof *ls);
    int rc;

    if (!ls)
        return -ENOMEM;
    ls->s = s;
    ls->timer.fd = -1;  /* coro__parklot_timers_fini may run before init */
    s->parklot = ls;
    ls->parked = coro__alloc(s, PARKED_WORDS * sizeof *ls->parked);
    ls->nreg = s->nslots;
    ls->reg = coro__alloc(s, (size_t)ls->nreg * sizeof *ls->reg);
    if (!ls->parked || !ls->reg) {
        coro__parklot_sched_fini(s);
        return -ENOMEM;
    }
    if ((rc = coro__parklot_timers_init(ls)) < 0) {
        coro__parklot_sched_fini(s);
        return rc;
    }
    return 0;
}

void coro__parklot_sched_fini(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = s->parklot;

    if (!ls)
        return;
    /* after shutdown no job waits: every timer went with its wait */
    coro__parklot_timers_fini(ls);
    coro__free(s, ls->reg, (size_t)ls->nreg * sizeof *ls->reg);
    coro__free(s, ls->parked, PARKED_WORDS * sizeof *ls->parked);
    coro__free(s, ls, sizeof *ls);
    s->parklot = NULL;
}
