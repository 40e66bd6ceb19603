/* SPDX-License-Identifier: MIT */
/* The timers of timed waits: each worker's, and the scheduler's heap of
 * the lot (THE SCHEDULER'S HEAP below).  A worker's timers: one heap
 * (lib/wait/heap.c) per worker for the timed waits begun on it - the
 * parking lot's (kind CORO__TK_PARKLOT) and the I/O context's fd waits and
 * sleeps (CORO__TK_FD, CORO__TK_SLEEP) in the same heap - under a lock of
 * that worker's, with its earliest deadline published on a line of its own
 * (coro__worker.timer_next).  Go keeps its timers per P for the same
 * reason: one scheduler-wide heap is a lock every timed wait of every
 * worker meets, and one thread firing them wakes every job across CPUs.
 *
 * WHO TOUCHES WHAT.
 *   - A push is made by the owner only: a wait is armed on the thread
 *     that ran the job, after its step (coro__wt_here names that worker).
 *     Plain threads, the caller's seat (sched/seat.c WAKES), blocking
 *     contexts and schedulers without workers use the scheduler's heaps
 *     (home 0: THE SCHEDULER'S HEAP below, lib/io/timers.c).
 *   - A removal (the wait ended another way: woken, withdrawn, cancelled)
 *     is made by whichever thread ends the wait, under the home's lock, in
 *     O(1): the timer is marked, and leaves when it reaches the top or in
 *     a rebuild (heap.c, HANDLES, AND REMOVAL BY MARK).  The wait knows
 *     the home from its slot, so a job that moved to another worker since
 *     leaves its timer where it was: its deadline is never recomputed, and
 *     stays exact.
 *   - The fire: the owner, at its DUE TIMERS looks (a trylock: a held lock
 *     means a removal or a fire is under way) and before it parks (its
 *     park's timeout is the deadline this file returns, read under the
 *     lock - a removal's rebuild or a fire moves entries of a[], and a
 *     read of the top without the lock may see one in flight: the model
 *     tools/model/wtimer.pml rejects that park); and the I/O thread, for
 *     a worker whose published deadline is CORO__IO_STANDBY_NS late - one
 *     stuck in a long step - under the same lock.
 *   - timer_next is written under the lock only: at a push that makes an
 *     earlier top, and at the end of each fire.  A removal leaves it
 *     earlier than the true top; the reader that acts on it finds nothing
 *     due and publishes the true one.  It is never later than the earliest
 *     live timer: every push publishes at least its own deadline, and a
 *     fire publishes the top it leaves.
 *
 * LOCK ORDER.  A lot timer keeps the lot's: bucket -> timer lock.  The
 * fire looks at the top under the timer lock, drops it, takes the top's
 * bucket lock, then the timer lock again, and fires the top only if it is
 * still due and of that bucket: decided under the bucket lock, its waiter
 * is linked and alive (lib/wait/parklot.c, TIMERS).  An I/O timer keeps the
 * I/O context's: entry lock -> timer lock; its fire pops under the timer
 * lock alone and hands the record back to its caller in the I/O layer
 * (struct coro__wt_batch), which wakes after the lock, checking the
 * slot's sequence under the entry lock (lib/io/timers.c).  The pop does
 * not touch the wait: its slot names a timer that left, which every
 * reader tells from a live one by the record, under the timer lock
 * (coro__heap_get, as a sleep's cancel does).  Worker timer locks never
 * nest in each other.
 *
 * THE SCHEDULER'S HEAP.  A lot wait begun off the workers (a plain
 * thread, the caller's seat, a blocking context, a scheduler without
 * workers) goes to one
 * min-heap per
 * scheduler of {deadline, waiter, key} behind its own timerfd, under its
 * own mutex (hlock), described here.  The
 * rules - a live timer exists exactly while its waiter is linked on the
 * entry's key, both changed only under that key's bucket lock; lock order
 * bucket -> hlock; the fire path decides under the bucket lock - are in
 * lib/wait/parklot.c's opening comment (TIMERS).  Here: the use of the heap
 * (lib/wait/heap.c, kind CORO__TK_PARKLOT: O(log n) push and pop, removal of
 * any timer O(1) amortized; the waiter keeps its timer's handle + 1 in
 * wait_slot, under hlock only), the timerfd
 * (reprogrammed only for an earlier deadline, and by the fire path to the
 * next one; decided under hlock, programmed after it: lib/wait/tfd.c),
 * and the fire path itself.
 */
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "wait/parklot_impl.h"

uint32_t coro__wt_here(coro_sched_t *s)
{
    struct coro__worker *w = coro__tls_worker;
    /* the caller's seat (w[nworkers]) has no heap: its holder leaves, and
     * nobody would fire it (sched/seat.c, WAKES) */
    return s->parklot->wt && w && w->s == s && w->idx < s->nworkers ? (uint32_t)w->idx + 1 : 0;
}

struct coro__wtimers *coro__wt_get(coro_sched_t *s, uint32_t home)
{
    return &s->parklot->wt[home - 1];
}

/* under t's lock */
static void publish(struct coro__wtimers *t, int64_t d)
{
    /* relaxed: a hint its readers act on after their own lock or a clock
     * check (top of file) */
    __atomic_store_n(t->next, d, __ATOMIC_RELAXED);
}

static void count(struct coro__wtimers *t)
{
    /* relaxed: read as a hint (coro__wt_count) */
    __atomic_store_n(&t->npend, coro__heap_count(&t->heap), __ATOMIC_RELAXED);
}

int coro__wt_push(coro_sched_t *s, uint32_t home, struct coro__timer_record *tn, uint32_t *slot)
{
    struct coro__wtimers *t = coro__wt_get(s, home);
    int rc;

    pthread_mutex_lock(&t->lock);
    /* an I/O wait checks the cancel flags under the lock that the I/O
     * context's cancel walks take (lib/io/epoll.c, CANCEL): it sees the
     * flag or is found; a lot wait checked them under its bucket lock */
    if (tn->kind != CORO__TK_PARKLOT &&
        (coro__cancelling(s) || (tn->kind == CORO__TK_SLEEP && coro__job_cancelled(tn->p))))
        rc = -ECANCELED;
    else if ((rc = coro__heap_push(&t->heap, tn)) == 0) {
        if (tn->h >= CORO__WT_HANDLES) {    /* beyond what a slot names */
            struct coro__timer_record x;
            coro__heap_del(&t->heap, tn->h, &x);
            rc = -ENOMEM;
        } else {
            if (slot) {
                /* relaxed: an fd slot's timer_handle is read and written
                 * under the entry's lock, which this store is under too
                 * (lib/io/timers.c, STALE HANDLES) */
                __atomic_store_n(slot, coro__wt_slot(home, tn->h), __ATOMIC_RELAXED);
            } else {
                /* a sleep: its awaitable keeps the slot, which its cancel
                 * reads without a lock (it cannot know the home first).
                 * seq_cst, the store then the flag's load: Dekker with
                 * coro_cancel's RMW of the flag then its load of the slot
                 * (lib/io/epoll.c coro__io_cancel_job) - it finds the
                 * timer, or we see the flag and withdraw it here */
                __atomic_store_n(&((coro_t *)tn->p)->top->aw.arg[CORO__SLEEP_SLOT].i,
                                 (intptr_t)coro__wt_slot(home, tn->h), __ATOMIC_SEQ_CST);
                if (coro__job_cancelled(tn->p)) {
                    struct coro__timer_record x;
                    coro__heap_del(&t->heap, tn->h, &x);
                    rc = -ECANCELED;
                }
            }
            count(t);
            /* relaxed: written under this lock, which we hold */
            if (rc == 0 && tn->deadline < __atomic_load_n(t->next, __ATOMIC_RELAXED))
                publish(t, tn->deadline);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

void coro__wt_del_locked(struct coro__wtimers *t, uint32_t slot, struct coro__timer_record *out)
{
    coro__heap_del(&t->heap, coro__wt_handle(slot), out);
    count(t);
}

/* under t's lock: the record of a timer that left the heap.  A lot
 * waiter forgets it; an I/O wait's slot keeps naming it (top of file) */
static void taken(struct coro__wtimers *t, const struct coro__timer_record *out)
{
    if (out->kind == CORO__TK_PARKLOT)
        ((coro_t *)out->p)->wait_slot = 0;
    count(t);
}

/* a lot timer's fire, the part after its heap's lock: b is the bucket of
 * key k, locked; w the waiter whose timer was popped under both locks, or
 * NULL when the top was no longer due or of b.  Ends w's wait with
 * -ETIMEDOUT if it is still linked, unlocks b and wakes after; 1 if fired */
static int fire_popped(coro__parklot_bucket_t *b, coro_t *w, const void *k,
                       struct coro__woken *woken)
{
    int n = 0;
    coro__wakelist_t wakes;

    coro__wakelist_init(&wakes);
    if (w)
        w->flags &= (uint8_t)~CORO__FL_TIMED;     /* its entry is gone */
    if (w && coro__parklot_unlink(b, k, w)) {
        coro__sync_left(b, w, &wakes);     /* who may go now that w left */
        coro__wakelist_add(&wakes, w, -ETIMEDOUT);
        n = 1;
    }
    coro__parklot_unlock(b);
    coro__wakelist_wake_into(&wakes, woken);
    return n;
}

int64_t coro__wt_expire(coro_sched_t *s, uint32_t home, int64_t now, bool try, int *fired,
                        struct coro__wt_batch *io, struct coro__woken *woken)
{
    struct coro__wtimers *t = coro__wt_get(s, home);

    for (;;) {
        if (!try)
            pthread_mutex_lock(&t->lock);
        else if (pthread_mutex_trylock(&t->lock) != 0)
            return __atomic_load_n(t->next, __ATOMIC_RELAXED);  /* relaxed: a hint */
        int64_t d = coro__heap_next(&t->heap);
        if (d > now) {
            publish(t, d);
            pthread_mutex_unlock(&t->lock);
            return d;
        }
        const struct coro__timer_record *top = coro__heap_first(&t->heap);
        if (top->kind != CORO__TK_PARKLOT) {
            /* I/O timers: popped under this lock alone, woken by the
             * caller after it */
            do {
                coro__heap_pop(&t->heap, &io->t[io->n]);
                taken(t, &io->t[io->n++]);
            } while (io->n < CORO__TIMER_BATCH && coro__heap_next(&t->heap) <= now &&
                     coro__heap_first(&t->heap)->kind != CORO__TK_PARKLOT);
            pthread_mutex_unlock(&t->lock);
            if (io->n == CORO__TIMER_BATCH)
                return now;     /* full: the caller wakes them and calls again */
            continue;
        }
        const void *key = top->key;
        pthread_mutex_unlock(&t->lock);

        coro__parklot_bucket_t *b = coro__parklot_lock(key);
        pthread_mutex_lock(&t->lock);
        coro_t *w = NULL;
        const void *k = NULL;
        /* decided again under the bucket lock: the entry's waiter is then
         * linked and alive (lib/wait/parklot.c, TIMERS) */
        if (coro__heap_next(&t->heap) <= now) {
            top = coro__heap_first(&t->heap);
            if (top->kind == CORO__TK_PARKLOT && coro__parklot_bucket(top->key) == b) {
                struct coro__timer_record out;
                coro__heap_pop(&t->heap, &out);
                taken(t, &out);
                w = out.p;
                k = out.key;
            }
        }
        pthread_mutex_unlock(&t->lock);
        *fired += fire_popped(b, w, k, woken);
    }
}

uint32_t coro__wt_homes(coro_sched_t *s)
{
    return s->parklot->wt ? (uint32_t)s->nworkers : 0;
}

uint32_t coro__wt_count(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = s->parklot;
    uint32_t n = 0;

    for (int i = 0; ls->wt && i < s->nworkers; i++)
        n += __atomic_load_n(&ls->wt[i].npend, __ATOMIC_RELAXED);  /* relaxed: a hint */
    return n;
}

/* ---- life (THE SCHEDULER'S HEAP below calls these) --------------------------------------- */

int coro__wt_init(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = s->parklot;
    int n = s->nworkers;

    /* the workers wait for create's go: they read it after this */
    for (int i = 0; i < s->nslots; i++)
        s->w[i]->timer_next = INT64_MAX;
    if (n == 0)
        return 0;
    ls->wt = coro__alloc_aligned(s, (size_t)n * sizeof *ls->wt);
    if (!ls->wt)
        return -ENOMEM;
    memset(ls->wt, 0, (size_t)n * sizeof *ls->wt);
    for (int i = 0; i < n; i++) {
        struct coro__wtimers *t = &ls->wt[i];
        pthread_mutex_init(&t->lock, NULL);
        t->next = &s->w[i]->timer_next;
        /* room for CORO__TIMER_PREALLOC, as the scheduler's heaps: steady
         * timed waits allocate nothing, on whichever worker they begin */
        if (coro__heap_init(&t->heap, s, CORO__TIMER_PREALLOC) < 0) {
            coro__wt_fini(s);
            return -ENOMEM;
        }
    }
    return 0;
}

void coro__wt_fini(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = s->parklot;

    if (!ls->wt)
        return;
    /* after shutdown no job waits: every timer went with its wait */
    for (int i = 0; i < s->nworkers; i++) {
        if (ls->wt[i].heap.s)   /* made (init may have stopped short) */
            coro__heap_fini(&ls->wt[i].heap);
        pthread_mutex_destroy(&ls->wt[i].lock);
    }
    coro__free_aligned(s, ls->wt, (size_t)s->nworkers * sizeof *ls->wt);
    ls->wt = NULL;
}

/* ==== the scheduler's heap: waits begun off the workers ==== */

/* ---- the timers (under hlock) ---------------------------------------------------- */

/* the timerfd to d: decided here, programmed by coro__tfd_sync once hlock
 * is dropped (lib/wait/tfd.c); true if that is needed */
static bool tfd_set(struct coro__parklot_sched *ls, int64_t d)
{
    /* relaxed: a busy worker's hint (sched/worker.c DUE TIMERS); it may
     * read a deadline whose wait has since ended, and its fire then finds
     * nothing due and sets this to the heap's top */
    __atomic_store_n(&ls->s->timers_next[1], d, __ATOMIC_RELAXED);
    return coro__tfd_want(&ls->timer, d);
}

/* out is the timer that left the heap: its waiter's wait_slot becomes 0 */
static void sched_taken(struct coro__parklot_sched *ls, const struct coro__timer_record *out)
{
    ((coro_t *)out->p)->wait_slot = 0;
    /* relaxed: a count read as a hint (the single-threaded driver, tests) */
    __atomic_store_n(&ls->npend, coro__heap_count(&ls->heap), __ATOMIC_RELAXED);
}

/* under w's bucket lock: arm w's timeout.  0 or -ENOMEM */
int coro__parklot_timer_add(struct coro__parklot_sched *ls, coro_t *w, const void *key, int64_t deadline)
{
    struct coro__timer_record t = { .deadline = deadline, .p = w, .key = key, .kind = CORO__TK_PARKLOT };
    bool sync = false;
    int rc;

    uint32_t home = coro__wt_here(ls->s);
    if (home)   /* begun on a worker: its own heap (lib/wait/wtimer.c) */
        return coro__wt_push(ls->s, home, &t, &w->wait_slot);
    pthread_mutex_lock(&ls->hlock);
    if ((rc = coro__heap_push(&ls->heap, &t)) == 0) {
        w->wait_slot = t.h + 1;
        /* relaxed: a count read as a hint (sched_taken) */
        __atomic_store_n(&ls->npend, coro__heap_count(&ls->heap), __ATOMIC_RELAXED);
        if (deadline < coro__tfd_wanted(&ls->timer))
            sync = tfd_set(ls, deadline);
        /* relaxed: the busy workers' hint, written under hlock, which we hold */
        else if (deadline < __atomic_load_n(&ls->s->timers_next[1], __ATOMIC_RELAXED))
            /* relaxed: the hint (tfd_set), later than the armed deadline
             * after a worker fired (coro__parklot_timers_expire) */
            __atomic_store_n(&ls->s->timers_next[1], deadline, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&ls->hlock);
    if (sync)
        coro__tfd_sync(&ls->timer);
    return rc;
}

/* under w's bucket lock: w's wait ended another way, drop its timer */
void coro__parklot_timer_del(coro_t *w)
{
    struct coro__parklot_sched *ls = w->sched->parklot;

    struct coro__timer_record t;

    /* the slot is stable under w's bucket lock: only a fire, which needs
     * that lock too, or this removal clear it */
    uint32_t home = coro__wt_home(w->wait_slot);
    if (home) {
        struct coro__wtimers *wt = coro__wt_get(w->sched, home);
        pthread_mutex_lock(&wt->lock);
        coro__wt_del_locked(wt, w->wait_slot, &t);
        w->wait_slot = 0;
        pthread_mutex_unlock(&wt->lock);
        return;
    }
    pthread_mutex_lock(&ls->hlock);
    coro__heap_del(&ls->heap, w->wait_slot - 1, &t);
    sched_taken(ls, &t);
    pthread_mutex_unlock(&ls->hlock);
}

/* under w's bucket lock: the deadline of w's live timer */
int64_t coro__parklot_timer_deadline(coro_t *w)
{
    struct coro__parklot_sched *ls = w->sched->parklot;
    uint32_t home = coro__wt_home(w->wait_slot);
    pthread_mutex_t *lock = home ? &coro__wt_get(w->sched, home)->lock : &ls->hlock;
    struct coro__heap *h = home ? &coro__wt_get(w->sched, home)->heap : &ls->heap;

    pthread_mutex_lock(lock);
    int64_t d = coro__heap_rec(h, coro__wt_handle(w->wait_slot))->deadline;
    pthread_mutex_unlock(lock);
    return d;
}

/* ---- firing timers ------------------------------------------------------------- */

int coro__parklot_timers_fire(coro_sched_t *s, struct coro__woken *b)
{
    uint64_t v;

    ssize_t r = read(s->parklot->timer.fd, &v, sizeof v);    /* non-blocking: clear readiness */
    (void)r;
    return coro__parklot_timers_expire(s, false, b);
}

/* worker: a busy worker's look (sched/worker.c DUE TIMERS), which leaves
 * the timerfd armed for its holder and does not wait for hlock (see
 * lib/io/timers.c expire_due) */
int coro__parklot_timers_expire(coro_sched_t *s, bool worker, struct coro__woken *woken)
{
    struct coro__parklot_sched *ls = s->parklot;
    int n = 0;

    int64_t now = coro__due_by(coro__now());
    for (;;) {
        if (!worker)
            pthread_mutex_lock(&ls->hlock);
        else if (pthread_mutex_trylock(&ls->hlock) != 0)
            return n;
        int64_t d = coro__heap_next(&ls->heap);
        if (d > now) {
            bool sync = false;
            if (worker)     /* relaxed: the hint, as tfd_set's */
                __atomic_store_n(&s->timers_next[1], d, __ATOMIC_RELAXED);
            else if (d != coro__tfd_wanted(&ls->timer))
                sync = tfd_set(ls, d);
            pthread_mutex_unlock(&ls->hlock);
            if (sync)
                coro__tfd_sync(&ls->timer);
            return n;
        }
        const void *key = coro__heap_first(&ls->heap)->key;
        pthread_mutex_unlock(&ls->hlock);

        coro__parklot_bucket_t *b = coro__parklot_lock(key);
        pthread_mutex_lock(&ls->hlock);
        coro_t *w = NULL;
        const void *k = NULL;
        /* decided again under the bucket lock: the entry's waiter is then
         * linked and alive (lib/wait/parklot.c, TIMERS) */
        if (coro__heap_next(&ls->heap) <= now &&
            coro__parklot_bucket(coro__heap_first(&ls->heap)->key) == b) {
            struct coro__timer_record t;
            coro__heap_pop(&ls->heap, &t);
            sched_taken(ls, &t);
            w = t.p;
            k = t.key;
        }
        pthread_mutex_unlock(&ls->hlock);
        n += fire_popped(b, w, k, woken);
    }
}

#ifdef CORO_TEST_HOOKS
uint32_t coro__parklot_timers_count(coro_sched_t *s)
{
    /* relaxed: exact for tests once the scheduler is quiet */
    return __atomic_load_n(&s->parklot->npend, __ATOMIC_RELAXED) + coro__wt_count(s);
}
#endif

int64_t coro__parklot_timers_next(coro_sched_t *s)
{
    struct coro__parklot_sched *ls = s->parklot;

    pthread_mutex_lock(&ls->hlock);
    int64_t d = coro__heap_next(&ls->heap);
    pthread_mutex_unlock(&ls->hlock);
    return d;
}

const uint32_t *coro__parklot_timers_word(coro_sched_t *s)
{
    return &s->parklot->npend;
}

bool coro__parklot_timers_pending(coro_sched_t *s)
{
    /* the scheduler's heap only: the workers fire their own.  Relaxed: a
     * hint for the single-threaded driver, whose own jobs are the only ones
     * that add timers there (and a timer's fire is what clears it) */
    return __atomic_load_n(&s->parklot->npend, __ATOMIC_RELAXED) != 0;
}

int coro__parklot_timer_fd(coro_sched_t *s)
{
    return s->parklot->timer.fd;
}

/* ---- life ------------------------------------------------------------------------- */

int coro__parklot_timers_init(struct coro__parklot_sched *ls)
{
    coro__tfd_init(&ls->timer, -1);
    ls->s->timers_next[1] = INT64_MAX;     /* before any worker runs */
    pthread_mutex_init(&ls->hlock, NULL);
    int rc = coro__heap_init(&ls->heap, ls->s, CORO__TIMER_PREALLOC);
    if (rc < 0)
        return rc;
    ls->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ls->timer.fd < 0)
        return -errno;
    return coro__wt_init(ls->s);
}

void coro__parklot_timers_fini(struct coro__parklot_sched *ls)
{
    coro__wt_fini(ls->s);
    if (ls->timer.fd >= 0)
        close(ls->timer.fd);
    ls->timer.fd = -1;
    if (ls->heap.s) {
        coro__heap_fini(&ls->heap);
        pthread_mutex_destroy(&ls->hlock);
        coro__tfd_fini(&ls->timer);
        ls->heap.s = NULL;
    }
}
