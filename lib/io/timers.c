/* SPDX-License-Identifier: MIT */
/* The I/O context's timers: the timed fd waits and the sleeps.
 *
 * TWO HOMES.  A timed wait begun on a worker puts its timer in that
 * worker's own heap (lib/wait/wtimer.c, kinds FD and SLEEP beside the
 * lot's), fired by that worker (coro__io_fire_own) or, when it is stuck
 * in a long step, by the I/O thread; that heap hands the records it
 * popped back to its caller in a struct coro__wt_batch and this file
 * fires them (STALE HANDLES below).  A wait begun elsewhere (a plain
 * thread, the caller's seat, a scheduler without workers) goes to the
 * context's own heap (lib/wait/heap.c) under io->hlock, behind the
 * context's timerfd in the epoll set, absolute, armed lazily: only for a
 * deadline earlier than the armed one, or again once the armed one has
 * passed (coro__io_tfd_update; programmed outside hlock: lib/wait/tfd.c).
 * The handle the wait keeps (an fd slot's timer_handle, a sleep's
 * awaitable) says which home, so a wait that ends otherwise removes its
 * timer there (O(1) amortized: lib/wait/heap.c).  Lock order: an entry
 * lock, then the heap's lock (hlock or the worker's); a fire pops under
 * the heap's lock alone and then locks the entry, where the slot's
 * sequence number tells whether the wait it names is still there.
 *
 * STALE HANDLES.  No pop writes the wait's handle: this heap's and the
 * workers' heaps' (lib/wait/wtimer.c, which hands their records back in
 * a struct coro__wt_batch) alike.  Between the pop and the fire's look
 * under the entry lock, the slot's timer_handle names a timer that left
 * - its handle free, or another wait's.  So every reader of a handle
 * looks at the record under the heap's lock and takes it for the wait's
 * only while it names the wait's job, kind and sequence (coro__heap_get:
 * a record's p is NULL once it left), as a sleep's cancel does
 * (lib/io/cancel.c); the fire, having matched the wait under the entry
 * lock, clears the handle there.  Every writer of timer_handle holds the
 * entry lock.
 *
 * FIRING.  Whoever handles the I/O events (handle() in lib/io/epoll.c)
 * fires what is due after them (coro__io_expire), a busy worker between
 * two steps (coro__io_fire_due, sched/worker.c DUE TIMERS); a sleep's
 * timer completes the sleep, an fd wait's takes the waiter off its slot
 * if the slot's sequence number still names that wait.
 */
#include <pthread.h>

#include "io/io_impl.h"

/* under hlock: the timerfd never later than the heap's earliest deadline;
 * true when the caller must call coro__tfd_sync once it drops hlock (the
 * system call is made outside the heap lock: lib/wait/tfd.c).
 * Lazily: a timerfd armed earlier than needed - its timer was removed, as
 * a connection's read timeout is at every request - is left to fire once
 * for nothing (coro__io_expire() then arms it for the next): a removal costs no
 * system call.  One armed for a time that has passed has fired (or is
 * about to) and is armed again: left to the coro__io_expire() its expiry leads
 * to, an add waited for that holder's wake-up (the timers shape read
 * worse: docs/benchmarks.md).  now: the clock, if the caller has read it (0: read
 * it here, only when the answer depends on it). */
bool coro__io_tfd_update(struct coro__io *io, int64_t now)
{
    int64_t d = coro__heap_next(&io->heap);
    int64_t armed = coro__tfd_wanted(&io->timer);

    /* relaxed: a hint for lock-free readers, who decide again under hlock */
    __atomic_store_n(&io->next_deadline, d, __ATOMIC_RELAXED);
    /* relaxed: a busy worker's hint (sched/worker.c DUE TIMERS) */
    __atomic_store_n(&io->s->timers_next[0], d, __ATOMIC_RELAXED);
    if (d == armed || (d > armed && armed > (now ? now : coro__now())))
        return false;
    return coro__tfd_want(&io->timer, d);
}

/* add a timer; its handle (lib/wait/heap.c) into *timer_handle (an fd wait) or
 * the sleep's awaitable, under the lock that removals read it under.
 * -ECANCELED once cancelling (checked under the lock: see CANCEL at the
 * top), -ENOMEM */
int coro__io_timer_add(struct coro__io *io, struct coro__timer_record *t, uint32_t *timer_handle)
{
    bool sync = false;
    int rc;

    /* begun on a worker: that worker's heap (lib/wait/wtimer.c), which
     * checks the cancel flags under its lock and keeps the slot */
    uint32_t home = coro__wt_here(io->s);
    if (home)
        return coro__wt_push(io->s, home, t, timer_handle);
    pthread_mutex_lock(&io->hlock);
    /* a sleep checks its job's cancel flag here, under the lock that
     * coro__io_cancel_jobs walks the heap under */
    if (coro__cancelling(io->s) ||
        (t->kind == CORO__IOK_SLEEP && coro__job_cancelled(t->p))) {
        rc = -ECANCELED;
    } else if ((rc = coro__heap_push(&io->heap, t)) == 0) {
        /* relaxed: read by removals under this lock, and racily by a
         * sleep's cancel, which reads it again under this lock (lib/io/cancel.c) */
        if (timer_handle)
            __atomic_store_n(timer_handle, coro__wt_slot(0, t->h), __ATOMIC_RELAXED);
        else
            __atomic_store_n(&sleep_slot(t->p)->i, (intptr_t)coro__wt_slot(0, t->h),
                             __ATOMIC_RELAXED);
        pending_add(io, 1);
        /* relaxed: written under hlock, which we hold */
        bool first = t->deadline < __atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED);
        sync = coro__io_tfd_update(io, 0);   /* armed no later than t (lazily: see there) */
        if (first) {
            /* nobody may hold the token: let the I/O thread see it */
            if (io->threaded && __atomic_load_n(&io->poll_token, __ATOMIC_RELAXED) == TOKEN_FREE) {
                __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
                coro__futex_wake(&io->standby, 1);
            }
        }
    }
    pthread_mutex_unlock(&io->hlock);
    if (sync)
        coro__tfd_sync(&io->timer);
    return rc;
}

/* under hlock: the earliest timer out (its wait's handle left as it is:
 * STALE HANDLES) */
void coro__io_heap_pop(struct coro__io *io, struct coro__timer_record *out)
{
    coro__heap_pop(&io->heap, out);
    pending_add(io, -1);
}

/* under hlock: the live timer of handle out */
void coro__io_heap_del(struct coro__io *io, uint32_t handle, struct coro__timer_record *out)
{
    coro__heap_del(&io->heap, handle, out);
    pending_add(io, -1);
}

/* under e's lock and the lock of the heap slot names: the record of the
 * fd wait of job on e's slot dir, NULL when its timer left (STALE
 * HANDLES) */
static const struct coro__timer_record *fd_timer(struct coro__io *io, const struct fd_entry *e,
                                                 int dir, const coro_t *job, uint32_t slot)
{
    uint32_t home = coro__wt_home(slot);
    const struct coro__heap *h = home ? &coro__wt_get(io->s, home)->heap : &io->heap;
    const struct coro__timer_record *r = coro__heap_get(h, coro__wt_handle(slot), job);
    return r && r->kind == CORO__TK_FD && r->seq == e->wait_seq[dir] ? r : NULL;
}

static pthread_mutex_t *slot_lock(struct coro__io *io, uint32_t slot)
{
    uint32_t home = coro__wt_home(slot);
    return home ? &coro__wt_get(io->s, home)->lock : &io->hlock;
}

/* under e's lock: the timer of job, slot dir's waiter until now, off its
 * heap, unless it left already (its fire then finds the wait gone) */
__attribute__((noinline))
void coro__io_slot_untime(struct coro__io *io, struct fd_entry *e, int dir, const coro_t *job)
{
    struct coro__timer_record t;

    e->timed[dir] = 0;
    /* relaxed: written under e's lock only, which we hold */
    uint32_t slot = __atomic_load_n(&e->timer_handle[dir], __ATOMIC_RELAXED);
    if (slot == NO_TIMER)
        return;
    __atomic_store_n(&e->timer_handle[dir], NO_TIMER, __ATOMIC_RELAXED);
    uint32_t home = coro__wt_home(slot);
    pthread_mutex_lock(slot_lock(io, slot));
    if (fd_timer(io, e, dir, job, slot)) {
        if (home)
            coro__wt_del_locked(coro__wt_get(io->s, home), slot, &t);
        else
            coro__io_heap_del(io, coro__wt_handle(slot), &t);
    }
    pthread_mutex_unlock(slot_lock(io, slot));
}

static inline __attribute__((always_inline)) void timer_fire(struct coro__io *io,
                                                              const struct coro__timer_record *t,
                                                              intptr_t res, struct coro__woken *b)
{
    switch (t->kind) {
    case CORO__IOK_SLEEP: {
        coro_t *job = t->p;
        /* a sleep cut short by the job's deadline times out */
        if (res == 0 && t->deadline < job->top->aw.timeout)
            res = -ETIMEDOUT;
        finish_into(io, job, res, b);   /* the heap owned its wake-up */
        break;
    }
    case CORO__IOK_FD: {
        int dir = (int)(t->aux % 2);
        struct fd_entry *e = ent_get(io, (int)(t->aux / 2), false);
        coro_t *job = NULL;
        ent_lock(e);
        if (e->w[dir] == t->p && e->wait_seq[dir] == t->seq) {
            e->timed[dir] = 0;      /* already off the heap */
            /* relaxed: written under e's lock only (STALE HANDLES) */
            __atomic_store_n(&e->timer_handle[dir], NO_TIMER, __ATOMIC_RELAXED);
            job = slot_take(io, e, dir);
        }
        ent_unlock(e);
        if (job)
            finish_into(io, job, res == 0 ? -ETIMEDOUT : res, b);
        break;
    }
    }
}

void coro__io_timer_fire(struct coro__io *io, const struct coro__timer_record *t, intptr_t res,
                         struct coro__woken *b)
{
    timer_fire(io, t, res, b);
}

/* coro__io_expire() takes out CORO__TIMER_BATCH timers under one hold of
 * hlock: the adds that wait for the lock meanwhile wait for a few pops,
 * and the fires that follow find their jobs already asked for (a cache
 * miss each, overlapped) */
int coro__io_expire(struct coro__io *io, struct coro__woken *b)
{
    struct coro__timer_record t[CORO__TIMER_BATCH];
    int n = 0;

    /* relaxed: a stale value only delays the look to the next event */
    if (__atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED) == INT64_MAX)
        return 0;
    int64_t now = coro__due_by(coro__now());
    for (;;) {
        int k = 0;
        bool sync = false;
        pthread_mutex_lock(&io->hlock);
        while (k < CORO__TIMER_BATCH && coro__heap_next(&io->heap) <= now)
            coro__heap_pop(&io->heap, &t[k++]);
        if (k)
            pending_add(io, -k);
        if (k < CORO__TIMER_BATCH)
            sync = coro__io_tfd_update(io, now);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        for (int i = 0; i < k; i++)
            __builtin_prefetch(t[i].p);
        for (int i = 0; i < k; i++)
            timer_fire(io, &t[i], 0, b);
        n += k;
        if (k < CORO__TIMER_BATCH)
            return n;
    }
}

/* a busy worker's look at the timers (sched/worker.c DUE TIMERS): fire
 * what is due of both heaps here, on the worker.  Not the timerfds: each
 * stays armed, and its holder, woken for what was fired here, finds less
 * or nothing due and arms it for what is next (a worker that reprogrammed
 * it would race that holder with a system call per look); and not
 * waiting for a heap's lock: held, its holder is adding or firing, and
 * the next look comes soon */
static int expire_due(struct coro__io *io, struct coro__woken *b)
{
    struct coro__timer_record t;
    int n = 0;
    int64_t now = coro__due_by(coro__now());

    for (;;) {
        if (pthread_mutex_trylock(&io->hlock) != 0)
            return n;
        int64_t d = coro__heap_next(&io->heap);
        if (d > now) {
            /* relaxed: the hint, as in coro__io_tfd_update; next_deadline stays as
             * it is (no later than the top), so that the holder's
             * coro__io_expire() runs */
            __atomic_store_n(&io->s->timers_next[0], d, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&io->hlock);
            return n;
        }
        coro__io_heap_pop(io, &t);
        pthread_mutex_unlock(&io->hlock);
        timer_fire(io, &t, 0, b);
        n++;
    }
}

/* ---- the workers' heaps (lib/wait/wtimer.c) ------------------------------------------ */

/* fire what is due at now in worker home's heap (coro__wt_expire): the
 * lot's timers there, the I/O kinds' here, after the heap's lock, a
 * batch at a time.  s->io is read only for a batch that holds timers:
 * the I/O thread starts before create stores it, and the heap's lock,
 * taken after a push of a job's worker, orders that store before */
static int64_t expire_home(coro_sched_t *s, uint32_t home, int64_t now, bool try, int *fired,
                           struct coro__woken *woken)
{
    struct coro__wt_batch b;
    int64_t d;

    do {
        b.n = 0;
        d = coro__wt_expire(s, home, now, try, fired, &b, woken);
        for (int i = 0; i < b.n; i++)
            timer_fire(s->io, &b.t[i], 0, woken);
        *fired += b.n;
    } while (b.n == CORO__TIMER_BATCH);
    return d;
}

int64_t coro__io_fire_own(struct coro__io *io, int idx, bool try, struct coro__woken *b)
{
    int fired = 0;

    if (!coro__wt_homes(io->s))
        return INT64_MAX;
    return expire_home(io->s, (uint32_t)idx + 1, coro__due_by(coro__now()), try, &fired, b);
}

int64_t coro__wt_expire_stuck(coro_sched_t *s, int64_t now, int64_t late, int *fired)
{
    int64_t next = INT64_MAX;

    for (int i = 0; i < (int)coro__wt_homes(s); i++) {
        /* relaxed: a hint; the fire decides under the worker's lock */
        int64_t d = __atomic_load_n(&s->w[i]->timer_next, __ATOMIC_RELAXED);
        if (d != INT64_MAX && d <= now - late)
            d = expire_home(s, (uint32_t)i + 1, now, false, fired, NULL);
        /* saturating: a far deadline (a group's, years ahead) plus the
         * slack stays a time, INT64_MAX at most */
        if (d != INT64_MAX && coro__ns_add(d, late) < next)
            next = coro__ns_add(d, late);
    }
    return next;
}

int coro__io_cancel_own_sleeps(struct coro__io *io, bool all)
{
    uint32_t homes = coro__wt_homes(io->s);
    int n = 0;

    for (uint32_t home = 1; home <= homes; home++) {
        struct coro__wtimers *wt = coro__wt_get(io->s, home);
        for (bool again = true; again;) {
            struct coro__timer_record t;
            again = false;
            pthread_mutex_lock(&wt->lock);
            for (uint32_t k = 0; k < wt->heap.cap; k++) {
                const struct coro__timer_record *e = coro__heap_rec(&wt->heap, k);
                if (e->p && e->kind == CORO__TK_SLEEP && (all || coro__job_cancelled(e->p))) {
                    coro__wt_del_locked(wt, coro__wt_slot(home, k), &t);
                    again = true;   /* the heap may have moved: look again */
                    break;
                }
            }
            pthread_mutex_unlock(&wt->lock);
            if (again) {
                coro__io_timer_fire(io, &t, -ECANCELED, NULL);
                n++;
            }
        }
    }
    return n;
}

int64_t coro__io_timer_deadline(struct coro__io *io, const struct fd_entry *e, int dir, int64_t now)
{
    /* relaxed: written under e's lock only, which we hold */
    uint32_t slot = __atomic_load_n(&e->timer_handle[dir], __ATOMIC_RELAXED);
    if (slot == NO_TIMER || !e->w[dir])
        return now;
    pthread_mutex_lock(slot_lock(io, slot));
    const struct coro__timer_record *r = fd_timer(io, e, dir, e->w[dir], slot);
    int64_t d = r ? r->deadline : now;
    pthread_mutex_unlock(slot_lock(io, slot));
    return d;
}

int coro__io_fire_due(struct coro__io *io, struct coro__woken *b)
{
    return expire_due(io, b) + coro__parklot_timers_expire(io->s, true, b);
}

int64_t coro__io_next_timer(struct coro__io *io)
{
    pthread_mutex_lock(&io->hlock);
    int64_t d = coro__heap_next(&io->heap);
    pthread_mutex_unlock(&io->hlock);
    return d;
}
