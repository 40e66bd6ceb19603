/* SPDX-License-Identifier: MIT */
/* Cancelling the I/O context's waits: every one at CORO_CANCEL, a
 * cancelled job's (coro_cancel), one job's.
 *
 * CANCEL: coro_sched_shutdown(CORO_CANCEL) sets s->cancelling and calls
 * coro__io_cancel_all, which sweeps every waiter and timer at once, on
 * its thread.  A waiter checks the flag under the entry (heap) lock before
 * it parks: either it parks before the sweep locks that entry, and the
 * sweep finds it, or it locks after, and the lock orders the flag before
 * its check.
 */
#include <pthread.h>

#include "io/io_impl.h"

/* resume every waiter and drop every timer: CORO_CANCEL */
static int sweep(struct coro__io *io)
{
    struct coro__timer_record t;
    int n = 0;

    for (;;) {
        pthread_mutex_lock(&io->hlock);
        if (!coro__heap_count(&io->heap)) {
            bool sync = coro__io_tfd_update(io, 0);
            pthread_mutex_unlock(&io->hlock);
            if (sync)
                coro__tfd_sync(&io->timer);
            break;
        }
        coro__io_heap_pop(io, &t);
        pthread_mutex_unlock(&io->hlock);
        coro__io_timer_fire(io, &t, -ECANCELED, NULL);
        n++;
    }
    n += coro__io_cancel_own_sleeps(io, true);
    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fd_entry *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fd_entry *e = &ch[i];
            coro_t *job[2];
            ent_lock(e);
            job[0] = slot_take(io, e, 0);
            job[1] = slot_take(io, e, 1);
            ent_unlock(e);
            for (int dir = 0; dir < 2; dir++) {
                /* a select's record: its owner waits on the select's own
                 * key, where the lot's sweep cancels it */
                if (job[dir] && !is_proxy(job[dir])) {
                    finish(io, job[dir], -ECANCELED);
                    n++;
                }
            }
        }
    }
    return n;
}

void coro__io_cancel_all(struct coro__io *io)
{
    /* s->cancelling is already set (seq_cst, by this thread) */
    if (!__atomic_exchange_n(&io->swept, 1, __ATOMIC_ACQ_REL))
        sweep(io);
    kick(io);
}

/* coro_cancel: end every fd wait and sleep of a job that carries
 * CORO__F_CANCEL (set, seq_cst, before the call), on the calling thread.
 * A wait parking concurrently checks the flag under the lock this walk
 * takes (the entry's, or hlock for sleeps): it sees the flag or is found. */
void coro__io_cancel_jobs(struct coro__io *io)
{
    struct coro__timer_record t;

    for (bool again = true; again;) {
        again = false;
        pthread_mutex_lock(&io->hlock);
        for (uint32_t k = 0; k < io->heap.cap; k++) {
            const struct coro__timer_record *e = coro__heap_rec(&io->heap, k);
            if (e->p && e->kind == CORO__IOK_SLEEP && coro__job_cancelled(e->p)) {
                coro__io_heap_del(io, k, &t);
                again = true;       /* the heap may have moved: look again */
                break;
            }
        }
        bool sync = again && coro__io_tfd_update(io, 0);
        pthread_mutex_unlock(&io->hlock);
        if (sync)
            coro__tfd_sync(&io->timer);
        if (again)
            coro__io_timer_fire(io, &t, -ECANCELED, NULL);
    }
    coro__io_cancel_own_sleeps(io, false);
    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fd_entry *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fd_entry *e = &ch[i];
            coro_t *job[2] = { NULL, NULL };
            ent_lock(e);
            for (int dir = 0; dir < 2; dir++)
                if (e->w[dir] && !is_proxy(e->w[dir]) && coro__job_cancelled(e->w[dir]))
                    job[dir] = slot_take(io, e, dir);
            ent_unlock(e);
            for (int dir = 0; dir < 2; dir++)
                if (job[dir])
                    finish(io, job[dir], -ECANCELED);
        }
    }
}

/* coro__io_cancel_job's sleep: its timer, out of the heap that holds it */
static void cancel_sleep(struct coro__io *io, coro_t *job)
{
    struct coro__timer_record t;
    bool took = false;
    /* the slot its awaitable keeps (lib/wait/wait.h: home and handle),
     * checked against the entry: a fire that came first took the entry
     * and gave the handle back - a slot that names another entry, or
     * none, is then no timer of ours.  The job, woken by that fire,
     * does not run, nor write its next awaitable here, until the
     * cancel clears CORO__F_CREAD (lib/rt/cancel_one.c, READING THE
     * AWAITABLE): the slot is the arm's or the fire's, never a later
     * await's.  seq_cst: Dekker with a sleep armed in
     * a worker's heap, which stores its slot, then reads the cancel
     * flag (coro__wt_push) - our flag's RMW came before this load:
     * either it sees our flag and withdraws, or we see its slot.  A
     * sleep in the scheduler's heap is read again under hlock, which
     * its arm holds */
    uint32_t slot = (uint32_t)__atomic_load_n(&sleep_slot(job)->i, __ATOMIC_SEQ_CST);
    uint32_t home = slot ? coro__wt_home(slot) : 0;
    /* relaxed: a count for tests (coro__io_sleep_cancel_looks) */
    __atomic_add_fetch(&io->sleep_cancel_looks, 1, __ATOMIC_RELAXED);
    if (home && home <= coro__wt_homes(io->s)) {
        struct coro__wtimers *wt = coro__wt_get(io->s, home);
        pthread_mutex_lock(&wt->lock);
        const struct coro__timer_record *e = coro__heap_get(&wt->heap, coro__wt_handle(slot), job);
        if (e && e->kind == CORO__TK_SLEEP) {
            coro__wt_del_locked(wt, slot, &t);
            took = true;
        }
        pthread_mutex_unlock(&wt->lock);
        if (took)
            coro__io_timer_fire(io, &t, -ECANCELED, NULL);
        return;
    }
    pthread_mutex_lock(&io->hlock);
    /* relaxed: its store was under hlock (coro__io_timer_add) */
    uint32_t hd = (uint32_t)__atomic_load_n(&sleep_slot(job)->i, __ATOMIC_RELAXED) - 1;
    const struct coro__timer_record *e = coro__heap_get(&io->heap, hd, job);
    if (e && e->kind == CORO__TK_SLEEP) {
        coro__io_heap_del(io, hd, &t);
        took = true;
    }
    bool sync = took && coro__io_tfd_update(io, 0);
    pthread_mutex_unlock(&io->hlock);
    if (sync)
        coro__tfd_sync(&io->timer);
    if (took)
        coro__io_timer_fire(io, &t, -ECANCELED, NULL);
}

/* coro_cancel of one suspended job (lib/wait/parklot.c CANCEL ONE has the
 * argument: its awaitable is ours to read and stays put while the cancel
 * holds CORO__F_CREAD, lib/rt/cancel_one.c READING THE AWAITABLE): an fd wait
 * takes its entry's lock and the job off its slot, as the sweep above
 * does for every entry; a wait parking concurrently takes the same lock
 * and checks the flag under it.  A signal or child wait waits on the fd
 * its arm makes (prepare), stored in the awaitable with a seq_cst store
 * before the arm's seq_cst load of the flag (fd_wait); our seq_cst RMW of
 * the flag comes before our seq_cst load of that fd, so one of the two
 * sees the other: no fd yet means the arm refuses, an fd means the entry
 * lock decides as above.  A sleep's timer is found through the handle its
 * awaitable keeps (lib/wait/heap.c), O(1) amortized to take out.  A call for the
 * blocking pool is taken off its queue.  False for an awaitable that is not ours: the caller sweeps. */
bool coro__io_cancel_job(struct coro__io *io, coro_t *job)
{
    /* relaxed, as coro__wait_cancel_job's (lib/wait/done.c), on the same
     * CAS: the step loop moves top with atomic stores (sched/run.c
     * set_top), so a read that may meet one is atomic too; the frame it
     * names only picks the wait to cancel, and the state word's RMWs
     * order the rest (READING THE AWAITABLE, lib/rt/cancel_one.c) */
    coro_await_t *aw = &__atomic_load_n(&job->top, __ATOMIC_RELAXED)->aw;

    if (!aw->ops)
        return false;
    if (aw->ops->arm == coro__blocking_arm) {
        coro__blocking_cancel_one(io->s, job);
        return true;
    }
    if (aw->ops->arm != coro__io_arm)
        return false;
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    if (ops->kind == CORO__IOK_SLEEP) {
        cancel_sleep(io, job);
        return true;
    }
    if (ops->kind != CORO__IOK_FD)
        return false;
    int dir = ops->dir;
    /* seq_cst: the fd prepare made, against its store (above) */
    intptr_t fd = ops->prepare ? __atomic_load_n(&aw->arg[0].i, __ATOMIC_SEQ_CST)
                               : aw->arg[0].i;
    if (fd < 0)
        return true;    /* not made yet: the arm sees the flag */
    struct fd_entry *e = ent_get(io, (int)fd, true);
    if (!e)
        return (uint64_t)fd >= MAX_FDS;     /* no entry can hold it */
    coro_t *w = NULL;
    ent_lock(e);
    if (e->w[dir] == job)
        w = slot_take(io, e, dir);
    ent_unlock(e);
    if (w)
        finish(io, w, -ECANCELED);
    return true;
}

#ifdef CORO_TEST_HOOKS
uint64_t coro__io_sleep_cancel_looks(struct coro__io *io)
{
    return __atomic_load_n(&io->sleep_cancel_looks, __ATOMIC_RELAXED);   /* relaxed: a count */
}
#endif
