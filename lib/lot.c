/* SPDX-License-Identifier: MIT */
/* The parking lot: wait lists hashed by address.
 *
 * Jobs and plain threads wait on a key (any address: a job for coro_done,
 * an event, a mutex, a channel ...); wakers wake the oldest or all waiters
 * of a key.  This is WebKit's ParkingLot and the kernel's futex hash: wait
 * objects need no list of their own, and CORO_CANCEL finds every waiting
 * job of a scheduler by walking the buckets.
 *
 * Who touches what: a bucket's list, and the wait_obj/wait_gen/next fields
 * of the coro_t entries on it, only under the bucket's mutex.  A waiter is
 * on at most one list.  Whoever unlinks a waiter owns its wake-up and
 * performs it after unlocking: exactly once, never under a lock.  A plain
 * thread waits with a coro_t stand-in on its own stack (flag
 * CORO__FL_THREAD) and a futex on its state word (0 waiting, 1 woken).
 *
 * Mutexes, not ck spinlocks: a bucket holder may be pre-empted when
 * workers outnumber CPUs, and ThreadSanitizer understands pthread mutexes.
 *
 * The sync objects (lib/sync_*.c) keep their own state under the bucket
 * lock of their address (lib/sync_impl.h: coro__lot_lock/take/link), so a
 * check of the state and the wait it decides are one atomic step.
 *
 * Select stand-ins (CORO__FL_PROXY): a coroutine waiting on several objects
 * at once puts one stand-in node per branch on each object's list, and
 * itself on the select's own key (sel + 1, odd).  Whoever takes a stand-in
 * claims the select (coro__sel_claim, under the stand-in's bucket lock and
 * then the select's: the one lock order even -> odd) before doing the
 * branch's operation for it; a stand-in whose select already completed is
 * dropped and the next waiter taken instead, so no wake-up is lost to it.
 * Odd keys hash into their own buckets, so that nesting is never a bucket
 * within itself.
 */
#include <string.h>

#include "sync_impl.h"

#define LOT_BITS 16
#define LOT_SIZE (1u << LOT_BITS)
#define SEL_BITS 6
#define SEL_SIZE (1u << SEL_BITS)

struct coro__lotb {
    pthread_mutex_t lock;
    coro_t *head, *tail;
} __attribute__((aligned(64)));
#define bucket coro__lotb

/* zero-initialised: in .bss, touched page by page (glibc's
 * PTHREAD_MUTEX_INITIALIZER is all zeros) */
static struct bucket lot[LOT_SIZE];
_Static_assert(LOT_BITS <= 16, "4 MiB of buckets at most");
/* odd keys: a select's own key; taken only after an even bucket */
static struct bucket sel_lot[SEL_SIZE];

static struct bucket *bucket_of(const void *key)
{
    /* the low 4 bits are ignored: k and k + 2 share a bucket */
    uint64_t h = ((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull;
    if ((uintptr_t)key & 1)
        return &sel_lot[h >> (64 - SEL_BITS)];
    return &lot[h >> (64 - LOT_BITS)];
}

static void append(struct bucket *b, coro_t *w)
{
    w->next = NULL;
    if (b->tail)
        b->tail->next = w;
    else
        b->head = w;
    b->tail = w;
}

/* unlink w, whose predecessor is prev (NULL = head) */
static void unlink_after(struct bucket *b, coro_t *prev, coro_t *w)
{
    if (prev)
        prev->next = w->next;
    else
        b->head = w->next;
    if (b->tail == w)
        b->tail = prev;
    w->next = NULL;
}

/* w: a job or a thread stand-in (stand-ins of selects never get here:
 * coro__wl_add turns them into their owner) */
static void wake_waiter(coro_t *w, intptr_t res)
{
    if (w->flags & CORO__FL_THREAD) {
        w->result = res;
        /* release: the result before the flag the thread acquires; after
         * the store the stand-in may be gone: only its address is used */
        __atomic_store_n(&w->state, 1, __ATOMIC_RELEASE);
        coro__futex_wake(&w->state, 1);
    } else {
        coro__wake(w, res);
    }
}

/* ---- the sync objects' interface (lib/sync_impl.h) ------------------------ */

coro__lotb_t *coro__lot_lock(const void *key)
{
    struct bucket *b = bucket_of(key);
    pthread_mutex_lock(&b->lock);
    return b;
}

void coro__lot_unlock(coro__lotb_t *b)
{
    pthread_mutex_unlock(&b->lock);
}

coro_t *coro__lot_take(coro__lotb_t *b, const void *key)
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
        if (!(w->flags & CORO__FL_PROXY) || coro__sel_claim(w) == 0)
            return w;
        w = nx;             /* a stale stand-in: dropped, look further */
    }
    return NULL;
}

bool coro__lot_waiting(coro__lotb_t *b, const void *key)
{
    for (coro_t *w = b->head; w; w = w->next)
        if (w->wait_obj == key)
            return true;
    return false;
}

void coro__lot_link(coro__lotb_t *b, const void *key, coro_t *w)
{
    w->wait_obj = (void *)key;
    w->wait_gen++;
    append(b, w);
}

bool coro__lot_unlink(coro__lotb_t *b, const void *key, coro_t *w)
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

coro_t *coro__lot_pop_raw(coro__lotb_t *b, const void *key)
{
    for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next) {
        if (w->wait_obj == key) {
            unlink_after(b, p, w);
            return w;
        }
    }
    return NULL;
}

coro_await_t *coro__lot_args(coro_t *w)
{
    return (w->flags & (CORO__FL_THREAD | CORO__FL_PROXY)) ? &w->aw : &w->top->aw;
}

static void wl_push(coro__wl_t *wl, coro_t *w, intptr_t res)
{
    /* the pending result rides in the field the wake writes anyway */
    if (w->flags & CORO__FL_THREAD)
        w->result = res;
    else
        w->top->result = res;
    w->next = NULL;
    *wl->tail = w;
    wl->tail = &w->next;
}

void coro__wl_add(coro__wl_t *wl, coro_t *w, intptr_t res)
{
    if (w->flags & CORO__FL_PROXY) {
        /* a select branch: its result stays in the stand-in (read by its
         * owner after it has withdrawn every branch, under this lock);
         * the owner, if it was parked, is woken with the branch index */
        coro_t *owner = w->parent;
        const coro_select_t *sel = w->aw.arg[2].p;
        w->result = res;
        w->parent = NULL;
        if (owner)
            wl_push(wl, owner, (intptr_t)(w - sel->node));
        return;
    }
    wl_push(wl, w, res);
}

void coro__wl_wake(coro__wl_t *wl)
{
    coro_t *w = wl->head;

    while (w) {
        coro_t *nx = w->next;   /* the wake reuses next */
        w->next = NULL;
        wake_waiter(w, (w->flags & CORO__FL_THREAD) ? w->result : w->top->result);
        w = nx;
    }
    coro__wl_init(wl);
}

intptr_t coro__lot_wait_thread(coro__lotb_t *b, const void *key, coro_t *me, int64_t deadline)
{
    me->flags = CORO__FL_THREAD;
    me->state = 0;
    coro__lot_link(b, key, me);
    pthread_mutex_unlock(&b->lock);
    /* acquire: pairs with wake_waiter's release of the result */
    while (__atomic_load_n(&me->state, __ATOMIC_ACQUIRE) == 0) {
        if (coro__futex_wait(&me->state, 0, deadline) != -ETIMEDOUT)
            continue;
        /* timed out: withdraw, unless a waker has already unlinked us */
        pthread_mutex_lock(&b->lock);
        bool removed = coro__lot_unlink(b, key, me);
        pthread_mutex_unlock(&b->lock);
        if (removed)
            return -ETIMEDOUT;
        deadline = -1;      /* the wake is on its way */
    }
    return me->result;
}

/* ---- the original interface (lib/internal.h) ------------------------------ */

int coro__lot_park_job(void *key, coro_t *job, coro__lot_validate_fn validate, void *ctx,
                       intptr_t *res, uint32_t *gen)
{
    struct bucket *b = bucket_of(key);

    pthread_mutex_lock(&b->lock);
    if (coro__cancelling(job->sched)) {
        pthread_mutex_unlock(&b->lock);
        *res = -ECANCELED;
        return CORO__ARM_READY;
    }
    if (validate && !validate(key, ctx, res)) {
        pthread_mutex_unlock(&b->lock);
        return CORO__ARM_READY;
    }
    coro__lot_link(b, key, job);
    if (gen)
        *gen = job->wait_gen;
    pthread_mutex_unlock(&b->lock);
    return CORO__ARM_PENDING;
}

intptr_t coro__lot_park_thread(void *key, coro__lot_validate_fn validate, void *ctx,
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
    return coro__lot_wait_thread(b, key, &me, deadline);
}

bool coro__lot_unpark_one_with(void *key, intptr_t res,
                               void (*fn)(void *, void *, bool, bool, intptr_t *), void *ctx)
{
    struct bucket *b = bucket_of(key);
    coro__wl_t wl;

    coro__wl_init(&wl);
    pthread_mutex_lock(&b->lock);
    coro_t *found = coro__lot_take(b, key);
    if (fn)
        fn(key, ctx, found != NULL, coro__lot_waiting(b, key), &res);
    if (found)
        coro__wl_add(&wl, found, res);
    pthread_mutex_unlock(&b->lock);
    coro__wl_wake(&wl);
    return found != NULL;
}

bool coro__lot_unpark_one(void *key, intptr_t res)
{
    return coro__lot_unpark_one_with(key, res, NULL, NULL);
}

int coro__lot_unpark_all(void *key, intptr_t res)
{
    struct bucket *b = bucket_of(key);
    coro__wl_t wl;
    coro_t *w;
    int n = 0;

    coro__wl_init(&wl);
    pthread_mutex_lock(&b->lock);
    while ((w = coro__lot_take(b, key))) {
        coro__wl_add(&wl, w, res);
        n++;
    }
    pthread_mutex_unlock(&b->lock);
    coro__wl_wake(&wl);
    return n;
}

bool coro__lot_remove(void *key, coro_t *job, uint32_t gen)
{
    struct bucket *b = bucket_of(key);
    bool removed = false;

    pthread_mutex_lock(&b->lock);
    for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next) {
        if (w == job) {
            if (w->wait_obj == key && w->wait_gen == gen) {
                unlink_after(b, p, w);
                removed = true;
            }
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);
    return removed;
}

/* unlink every job of s (never a thread or a select stand-in: a select's
 * owner waits on the select's key and is cancelled there) */
static void cancel_bucket(struct bucket *b, coro_sched_t *s, coro__wl_t *wl)
{
    for (coro_t *p = NULL, *w = b->head; w;) {
        coro_t *nx = w->next;
        if (!(w->flags & (CORO__FL_THREAD | CORO__FL_PROXY)) && w->sched == s) {
            unlink_after(b, p, w);
            coro__wl_add(wl, w, -ECANCELED);
        } else {
            p = w;
        }
        w = nx;
    }
}

int coro__lot_cancel_sched(coro_sched_t *s)
{
    int n = 0;

    for (unsigned i = 0; i < LOT_SIZE + SEL_SIZE; i++) {
        struct bucket *b = i < LOT_SIZE ? &lot[i] : &sel_lot[i - LOT_SIZE];
        coro__wl_t wl;
        coro__wl_init(&wl);
        pthread_mutex_lock(&b->lock);
        if (b->head)
            cancel_bucket(b, s, &wl);
        pthread_mutex_unlock(&b->lock);
        for (coro_t *w = wl.head; w; w = w->next)
            n++;
        coro__wl_wake(&wl);
    }
    return n;
}
