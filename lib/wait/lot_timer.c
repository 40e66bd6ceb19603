/* SPDX-License-Identifier: MIT */
/* The parking lot's timers: one min-heap per scheduler of {deadline,
 * waiter, key} behind its own timerfd, under its own mutex (hlock).  The
 * rules - a live timer exists exactly while its waiter is linked on the
 * entry's key, both changed only under that key's bucket lock; lock order
 * bucket -> hlock; the fire path decides under the bucket lock - are in
 * lib/wait/lot.c's opening comment (TIMERS).  Here: the use of the heap
 * (lib/wait/heap.c, kind CORO__TK_LOT: O(log n) push and pop, removal of
 * any timer O(1) amortized; the waiter keeps its timer's handle + 1 in
 * wait_slot, under hlock only), the timerfd
 * (reprogrammed only for an earlier deadline, and by the fire path to the
 * next one; decided under hlock, programmed after it: lib/wait/tfd.c),
 * and the fire path itself.
 */
#include <sys/timerfd.h>
#include <unistd.h>

#include "wait/lot_impl.h"

/* ---- the timers (under hlock) ---------------------------------------------------- */

/* the timerfd to d: decided here, programmed by coro__tfd_sync once hlock
 * is dropped (lib/wait/tfd.c); true if that is needed */
static bool tfd_set(struct coro__lotsched *ls, int64_t d)
{
    /* relaxed: a busy worker's hint (sched/worker.c DUE TIMERS); it may
     * read a deadline whose wait has since ended, and its fire then finds
     * nothing due and sets this to the heap's top */
    __atomic_store_n(&ls->s->timers_next[1], d, __ATOMIC_RELAXED);
    return coro__tfd_want(&ls->timer, d);
}

/* out is the timer that left the heap: its waiter's wait_slot becomes 0 */
static void taken(struct coro__lotsched *ls, const struct coro__tnode *out)
{
    ((coro_t *)out->p)->wait_slot = 0;
    __atomic_store_n(&ls->npend, coro__heap_count(&ls->heap), __ATOMIC_RELAXED);
}

/* under w's bucket lock: arm w's timeout.  0 or -ENOMEM */
int coro__lot_timer_add(struct coro__lotsched *ls, coro_t *w, const void *key, int64_t deadline)
{
    struct coro__tnode t = { .deadline = deadline, .p = w, .key = key, .kind = CORO__TK_LOT };
    bool sync = false;
    int rc;

    pthread_mutex_lock(&ls->hlock);
    if ((rc = coro__heap_push(&ls->heap, &t)) == 0) {
        w->wait_slot = t.h + 1;
        __atomic_store_n(&ls->npend, coro__heap_count(&ls->heap), __ATOMIC_RELAXED);
        if (deadline < coro__tfd_wanted(&ls->timer))
            sync = tfd_set(ls, deadline);
        else if (deadline < __atomic_load_n(&ls->s->timers_next[1], __ATOMIC_RELAXED))
            /* relaxed: the hint (tfd_set), later than the armed deadline
             * after a worker fired (coro__lot_timers_expire) */
            __atomic_store_n(&ls->s->timers_next[1], deadline, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&ls->hlock);
    if (sync)
        coro__tfd_sync(&ls->timer);
    return rc;
}

/* under w's bucket lock: w's wait ended another way, drop its timer */
void coro__lot_timer_del(coro_t *w)
{
    struct coro__lotsched *ls = w->sched->lot;

    struct coro__tnode t;

    pthread_mutex_lock(&ls->hlock);
    coro__heap_del(&ls->heap, w->wait_slot - 1, &t);
    taken(ls, &t);
    pthread_mutex_unlock(&ls->hlock);
}

/* ---- firing timers ------------------------------------------------------------- */

int coro__lot_timers_fire(coro_sched_t *s)
{
    uint64_t v;

    ssize_t r = read(s->lot->timer.fd, &v, sizeof v);    /* non-blocking: clear readiness */
    (void)r;
    return coro__lot_timers_expire(s, false);
}

/* worker: a busy worker's look (sched/worker.c DUE TIMERS), which leaves
 * the timerfd armed for its holder and does not wait for hlock (see
 * lib/io/timers.c expire_due) */
int coro__lot_timers_expire(coro_sched_t *s, bool worker)
{
    struct coro__lotsched *ls = s->lot;
    int n = 0;

    int64_t now = coro__now();
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

        coro__wl_t wl;
        coro__wl_init(&wl);
        coro__lotb_t *b = coro__lot_lock(key);
        pthread_mutex_lock(&ls->hlock);
        coro_t *w = NULL;
        const void *k = NULL;
        /* decided again under the bucket lock: the entry's waiter is then
         * linked and alive (lib/wait/lot.c, TIMERS) */
        if (coro__heap_next(&ls->heap) <= now &&
            coro__lot_bucket(coro__heap_first(&ls->heap)->key) == b) {
            struct coro__tnode t;
            coro__heap_pop(&ls->heap, &t);
            taken(ls, &t);
            w = t.p;
            k = t.key;
        }
        pthread_mutex_unlock(&ls->hlock);
        if (w)
            w->flags &= (uint8_t)~CORO__FL_TIMED;     /* its entry is gone */
        if (w && coro__lot_unlink(b, k, w)) {
            coro__wl_add(&wl, w, -ETIMEDOUT);
            n++;
        }
        coro__lot_unlock(b);
        coro__wl_wake(&wl);
    }
}

uint32_t coro__lot_timers_count(coro_sched_t *s)
{
    /* relaxed: a hint for the single-threaded driver, whose own jobs are
     * the only ones that add timers there (and a timer's fire is what
     * clears it); exact for tests once the scheduler is quiet */
    return __atomic_load_n(&s->lot->npend, __ATOMIC_RELAXED);
}

int64_t coro__lot_timers_next(coro_sched_t *s)
{
    struct coro__lotsched *ls = s->lot;

    pthread_mutex_lock(&ls->hlock);
    int64_t d = coro__heap_next(&ls->heap);
    pthread_mutex_unlock(&ls->hlock);
    return d;
}

bool coro__lot_timers_pending(coro_sched_t *s)
{
    return coro__lot_timers_count(s) != 0;
}

int coro__lot_timer_fd(coro_sched_t *s)
{
    return s->lot->timer.fd;
}

/* ---- life ------------------------------------------------------------------------- */

int coro__lot_timers_init(struct coro__lotsched *ls)
{
    coro__tfd_init(&ls->timer, -1);
    ls->s->timers_next[1] = INT64_MAX;     /* before any worker runs */
    pthread_mutex_init(&ls->hlock, NULL);
    int rc = coro__heap_init(&ls->heap, ls->s, CORO__TIMER_PREALLOC);
    if (rc < 0)
        return rc;
    ls->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return ls->timer.fd < 0 ? -errno : 0;
}

void coro__lot_timers_fini(struct coro__lotsched *ls)
{
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
