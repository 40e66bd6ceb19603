/* SPDX-License-Identifier: MIT */
/* The parking lot's timers: one min-heap per scheduler of {deadline,
 * waiter, key} behind its own timerfd, under its own mutex (hlock).  The
 * rules - a heap entry exists exactly while its waiter is linked on the
 * entry's key, both changed only under that key's bucket lock; lock order
 * bucket -> hlock; the fire path decides under the bucket lock - are in
 * lib/wait/lot.c's opening comment (TIMERS).  Here: the heap (O(log n) push,
 * pop and removal from the middle; the waiter keeps its index + 1 in
 * wait_slot, rewritten by every move, under hlock only), the timerfd
 * (reprogrammed only for an earlier deadline, and by the fire path to the
 * next one), and the fire path itself.
 */
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "wait/lot_impl.h"

/* ---- the timer heap (under hlock) ------------------------------------------ */

static void tfd_set(struct coro__lotsched *ls, int64_t d)
{
    ls->armed = d;
    coro__timerfd_arm(ls->tfd, d);
}

static inline void tplace(struct coro__lotsched *ls, uint32_t i, struct tent t)
{
    ls->a[i] = t;
    t.w->wait_slot = i + 1;
}

static void sift_up(struct coro__lotsched *ls, uint32_t i, struct tent t)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (ls->a[parent].deadline <= t.deadline)
            break;
        tplace(ls, i, ls->a[parent]);
        i = parent;
    }
    tplace(ls, i, t);
}

static void sift_down(struct coro__lotsched *ls, uint32_t i, struct tent t)
{
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= ls->n)
            break;
        if (c + 1 < ls->n && ls->a[c + 1].deadline < ls->a[c].deadline)
            c++;
        if (t.deadline <= ls->a[c].deadline)
            break;
        tplace(ls, i, ls->a[c]);
        i = c;
    }
    tplace(ls, i, t);
}

/* remove entry idx; its waiter's wait_slot becomes 0 */
static struct tent heap_remove(struct coro__lotsched *ls, uint32_t idx)
{
    struct tent out = ls->a[idx], last = ls->a[--ls->n];

    __atomic_store_n(&ls->npend, ls->n, __ATOMIC_RELAXED);
    out.w->wait_slot = 0;
    if (idx != ls->n) {
        if (idx > 0 && last.deadline < ls->a[(idx - 1) / 2].deadline)
            sift_up(ls, idx, last);
        else
            sift_down(ls, idx, last);
    }
    return out;
}

/* under w's bucket lock: arm w's timeout.  0 or -ENOMEM */
int coro__lot_timer_add(struct coro__lotsched *ls, coro_t *w, const void *key, int64_t deadline)
{
    struct tent t = { deadline, w, key };

    pthread_mutex_lock(&ls->hlock);
    if (ls->n == ls->cap) {
        uint32_t cap = ls->cap * 2;
        struct tent *a = coro__alloc(ls->s, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&ls->hlock);
            return -ENOMEM;
        }
        memcpy(a, ls->a, ls->n * sizeof *a);
        coro__free(ls->s, ls->a, ls->cap * sizeof *a);
        ls->a = a;
        ls->cap = cap;
    }
    sift_up(ls, ls->n++, t);
    __atomic_store_n(&ls->npend, ls->n, __ATOMIC_RELAXED);
    if (deadline < ls->armed)
        tfd_set(ls, deadline);
    pthread_mutex_unlock(&ls->hlock);
    return 0;
}

/* under w's bucket lock: w's wait ended another way, drop its timer */
void coro__lot_timer_del(coro_t *w)
{
    struct coro__lotsched *ls = w->sched->lot;

    pthread_mutex_lock(&ls->hlock);
    heap_remove(ls, w->wait_slot - 1);
    pthread_mutex_unlock(&ls->hlock);
}

/* ---- firing timers ------------------------------------------------------------- */

int coro__lot_timers_fire(coro_sched_t *s)
{
    struct coro__lotsched *ls = s->lot;
    uint64_t v;
    int n = 0;

    ssize_t r = read(ls->tfd, &v, sizeof v);    /* non-blocking: clear readiness */
    (void)r;
    int64_t now = coro__now();
    for (;;) {
        pthread_mutex_lock(&ls->hlock);
        if (!ls->n || ls->a[0].deadline > now) {
            int64_t d = ls->n ? ls->a[0].deadline : INT64_MAX;
            if (d != ls->armed)
                tfd_set(ls, d);
            pthread_mutex_unlock(&ls->hlock);
            return n;
        }
        const void *key = ls->a[0].key;
        pthread_mutex_unlock(&ls->hlock);

        coro__wl_t wl;
        coro__wl_init(&wl);
        coro__lotb_t *b = coro__lot_lock(key);
        pthread_mutex_lock(&ls->hlock);
        struct tent t = { 0, NULL, NULL };
        /* decided again under the bucket lock: the entry's waiter is then
         * linked and alive (lib/wait/lot.c, TIMERS) */
        if (ls->n && ls->a[0].deadline <= now && coro__lot_bucket(ls->a[0].key) == b)
            t = heap_remove(ls, 0);
        pthread_mutex_unlock(&ls->hlock);
        if (t.w)
            t.w->flags &= (uint8_t)~CORO__FL_TIMED;     /* its entry is gone */
        if (t.w && coro__lot_unlink(b, t.key, t.w)) {
            coro__wl_add(&wl, t.w, -ETIMEDOUT);
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
    int64_t d = ls->n ? ls->a[0].deadline : INT64_MAX;
    pthread_mutex_unlock(&ls->hlock);
    return d;
}

bool coro__lot_timers_pending(coro_sched_t *s)
{
    return coro__lot_timers_count(s) != 0;
}

int coro__lot_timer_fd(coro_sched_t *s)
{
    return s->lot->tfd;
}

/* ---- life ------------------------------------------------------------------------- */

int coro__lot_timers_init(struct coro__lotsched *ls)
{
    ls->tfd = -1;
    ls->armed = INT64_MAX;
    pthread_mutex_init(&ls->hlock, NULL);
    ls->cap = CORO__TIMER_PREALLOC;
    ls->a = coro__alloc(ls->s, ls->cap * sizeof *ls->a);
    if (!ls->a)
        return -ENOMEM;
    ls->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return ls->tfd < 0 ? -errno : 0;
}

void coro__lot_timers_fini(struct coro__lotsched *ls)
{
    if (ls->tfd >= 0)
        close(ls->tfd);
    ls->tfd = -1;
    if (ls->cap) {
        coro__free(ls->s, ls->a, ls->cap * sizeof *ls->a);
        pthread_mutex_destroy(&ls->hlock);
    }
    ls->a = NULL;
    ls->cap = 0;
}
