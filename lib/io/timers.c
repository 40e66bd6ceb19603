/* SPDX-License-Identifier: MIT */
/* The I/O context's timers: the timed fd waits and the sleeps.
 *
 * TIMERS: one heap (lib/wait/heap.c) under io->hlock, behind one
 * timerfd in the epoll set, absolute, set to the earliest deadline when it
 * changes.  Lock order: an entry lock, then the heap lock; the timer path
 * pops under the heap lock alone and then locks the entry, where the slot's
 * sequence number tells whether the wait it names is still there.  A wait
 * that ends otherwise removes its timer (O(1) amortized), found through
 * the handle the wait keeps (an fd slot's hidx, a sleep's awaitable:
 * lib/wait/heap.c).
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

    __atomic_store_n(&io->next_deadline, d, __ATOMIC_RELAXED);
    /* relaxed: a busy worker's hint (sched/worker.c DUE TIMERS) */
    __atomic_store_n(&io->s->timers_next[0], d, __ATOMIC_RELAXED);
    if (d == armed || (d > armed && armed > (now ? now : coro__now())))
        return false;
    return coro__tfd_want(&io->timer, d);
}

/* add a timer; its handle (lib/wait/heap.c) into *hidx (an fd wait) or
 * the sleep's awaitable, under the lock that removals read it under.
 * -ECANCELED once cancelling (checked under the lock: see CANCEL at the
 * top), -ENOMEM */
int coro__io_timer_add(struct coro__io *io, struct coro__tnode *t, int32_t *hidx)
{
    bool sync = false;
    int rc;

    pthread_mutex_lock(&io->hlock);
    /* a sleep checks its job's cancel flag here, under the lock that
     * coro__io_cancel_jobs walks the heap under */
    if (coro__cancelling(io->s) ||
        (t->kind == CORO__IOK_SLEEP && coro__job_cancelled(t->p))) {
        rc = -ECANCELED;
    } else if ((rc = coro__heap_push(&io->heap, t)) == 0) {
        if (hidx)
            *hidx = (int32_t)t->h;
        else
            sleep_slot(t->p)->i = (intptr_t)t->h + 1;
        pending_add(io, 1);
        /* relaxed: written under hlock, which we hold */
        bool first = t->deadline < __atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED);
        sync = coro__io_tfd_update(io, 0);   /* armed no later than t (lazily: see there) */
        if (first) {
            /* nobody may hold the token: let the I/O thread see it */
            if (io->threaded && __atomic_load_n(&io->driver, __ATOMIC_RELAXED) == DRV_FREE) {
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

/* under hlock: out is a timer that left the heap, uncounted (the
 * caller's pending_add) */
static void taken_(struct coro__io *io, const struct coro__tnode *out)
{
    /* a sleep's awaitable keeps its handle: coro__heap_get tells a stale
     * one from the timer's */
    if (out->kind == CORO__TK_FD)
        ent_get(io, (int)(out->aux / 2), false)->hidx[out->aux % 2] = NO_TIMER;
}

/* under hlock: the earliest timer out */
void coro__io_heap_pop(struct coro__io *io, struct coro__tnode *out)
{
    coro__heap_pop(&io->heap, out);
    taken_(io, out);
    pending_add(io, -1);
}

/* under hlock: the live timer of handle out */
void coro__io_heap_del(struct coro__io *io, uint32_t handle, struct coro__tnode *out)
{
    coro__heap_del(&io->heap, handle, out);
    taken_(io, out);
    pending_add(io, -1);
}

/* under e's lock: the timer of slot dir's waiter off the heap */
__attribute__((noinline))
void coro__io_slot_untime(struct coro__io *io, struct fdent *e, int dir)
{
    struct coro__tnode t;

    e->timed[dir] = 0;
    pthread_mutex_lock(&io->hlock);
    if (e->hidx[dir] != NO_TIMER)
        coro__io_heap_del(io, (uint32_t)e->hidx[dir], &t);
    pthread_mutex_unlock(&io->hlock);
}

void coro__io_timer_fire(struct coro__io *io, const struct coro__tnode *t, intptr_t res)
{
    switch (t->kind) {
    case CORO__IOK_SLEEP: {
        coro_t *job = t->p;
        /* a sleep cut short by the job's deadline times out */
        if (res == 0 && t->deadline < job->top->aw.timeout)
            res = -ETIMEDOUT;
        finish(io, job, res);       /* the heap owned its wake-up */
        break;
    }
    case CORO__IOK_FD: {
        int dir = (int)(t->aux % 2);
        struct fdent *e = ent_get(io, (int)(t->aux / 2), false);
        coro_t *job = NULL;
        ent_lock(e);
        if (e->w[dir] == t->p && e->wseq[dir] == t->seq) {
            e->timed[dir] = 0;      /* already off the heap */
            job = slot_take(io, e, dir);
        }
        ent_unlock(e);
        if (job)
            finish(io, job, res == 0 ? -ETIMEDOUT : res);
        break;
    }
    }
}

/* the timers coro__io_expire() takes out under one hold of hlock: the adds that
 * wait for the lock meanwhile wait for a few pops, and the fires that
 * follow find their jobs already asked for (a cache miss each, overlapped) */
#define EXPIRE_BATCH 16

int coro__io_expire(struct coro__io *io)
{
    struct coro__tnode t[EXPIRE_BATCH];
    int n = 0;

    /* relaxed: a stale value only delays the look to the next event */
    if (__atomic_load_n(&io->next_deadline, __ATOMIC_RELAXED) == INT64_MAX)
        return 0;
    int64_t now = coro__now();
    for (;;) {
        int k = 0;
        bool sync = false;
        pthread_mutex_lock(&io->hlock);
        while (k < EXPIRE_BATCH && coro__heap_next(&io->heap) <= now) {
            coro__heap_pop(&io->heap, &t[k]);
            taken_(io, &t[k++]);
        }
        if (k)
            pending_add(io, -k);
        if (k < EXPIRE_BATCH)
            sync = coro__io_tfd_update(io, now);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        for (int i = 0; i < k; i++)
            __builtin_prefetch(t[i].p);
        for (int i = 0; i < k; i++)
            coro__io_timer_fire(io, &t[i], 0);
        n += k;
        if (k < EXPIRE_BATCH)
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
static int expire_due(struct coro__io *io)
{
    struct coro__tnode t;
    int n = 0;
    int64_t now = coro__now();

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
        coro__io_timer_fire(io, &t, 0);
        n++;
    }
}

int coro__io_fire_due(struct coro__io *io)
{
    return expire_due(io) + coro__lot_timers_expire(io->s, true);
}

int64_t coro__io_next_timer(struct coro__io *io)
{
    pthread_mutex_lock(&io->hlock);
    int64_t d = coro__heap_next(&io->heap);
    pthread_mutex_unlock(&io->hlock);
    return d;
}
