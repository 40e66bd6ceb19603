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
 */
#include <string.h>

#include "internal.h"

#define LOT_BITS 16
#define LOT_SIZE (1u << LOT_BITS)

struct bucket {
    pthread_mutex_t lock;
    coro_t *head, *tail;
} __attribute__((aligned(64)));

/* zero-initialised: in .bss, touched page by page (glibc's
 * PTHREAD_MUTEX_INITIALIZER is all zeros) */
static struct bucket lot[LOT_SIZE];
_Static_assert(LOT_BITS <= 16, "4 MiB of buckets at most");

static struct bucket *bucket_of(const void *key)
{
    uint64_t h = ((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull;
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
    job->wait_obj = key;
    job->wait_gen++;
    if (gen)
        *gen = job->wait_gen;
    append(b, job);
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
    me.flags = CORO__FL_THREAD;
    me.wait_obj = key;
    pthread_mutex_lock(&b->lock);
    if (validate && !validate(key, ctx, &res)) {
        pthread_mutex_unlock(&b->lock);
        return res;
    }
    append(b, &me);
    pthread_mutex_unlock(&b->lock);
    /* acquire: pairs with wake_waiter's release of the result */
    while (__atomic_load_n(&me.state, __ATOMIC_ACQUIRE) == 0) {
        if (coro__futex_wait(&me.state, 0, deadline) != -ETIMEDOUT)
            continue;
        /* timed out: withdraw, unless a waker has already unlinked us */
        bool removed = false;
        pthread_mutex_lock(&b->lock);
        for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next) {
            if (w == &me) {
                unlink_after(b, p, w);
                removed = true;
                break;
            }
        }
        pthread_mutex_unlock(&b->lock);
        if (removed)
            return -ETIMEDOUT;
        deadline = -1;      /* the wake is on its way */
    }
    return me.result;
}

bool coro__lot_unpark_one_with(void *key, intptr_t res,
                               void (*fn)(void *, void *, bool, bool, intptr_t *), void *ctx)
{
    struct bucket *b = bucket_of(key);
    coro_t *found = NULL;
    bool more = false;

    pthread_mutex_lock(&b->lock);
    for (coro_t *p = NULL, *w = b->head; w; p = w, w = w->next) {
        if (w->wait_obj != key)
            continue;
        if (!found) {
            coro_t *nx = w->next;
            unlink_after(b, p, w);
            found = w;
            /* continue the scan from w's successor, keeping p */
            for (w = nx; w; w = w->next)
                if (w->wait_obj == key) {
                    more = true;
                    break;
                }
            break;
        }
    }
    if (fn)
        fn(key, ctx, found != NULL, more, &res);
    pthread_mutex_unlock(&b->lock);
    if (found)
        wake_waiter(found, res);
    return found != NULL;
}

bool coro__lot_unpark_one(void *key, intptr_t res)
{
    return coro__lot_unpark_one_with(key, res, NULL, NULL);
}

/* unlink every waiter matching (key or sched) into a private list */
static coro_t *take_all(struct bucket *b, void *key, coro_sched_t *s)
{
    coro_t *out = NULL, **tail = &out;

    for (coro_t *p = NULL, *w = b->head; w;) {
        coro_t *nx = w->next;
        bool match = key ? w->wait_obj == key
                         : !(w->flags & CORO__FL_THREAD) && w->sched == s;
        if (match) {
            unlink_after(b, p, w);
            *tail = w;
            tail = &w->next;
        } else {
            p = w;
        }
        w = nx;
    }
    return out;
}

static int wake_list(coro_t *w, intptr_t res)
{
    int n = 0;

    while (w) {
        coro_t *nx = w->next;   /* the wake reuses next */
        w->next = NULL;
        wake_waiter(w, res);
        w = nx;
        n++;
    }
    return n;
}

int coro__lot_unpark_all(void *key, intptr_t res)
{
    struct bucket *b = bucket_of(key);

    pthread_mutex_lock(&b->lock);
    coro_t *list = take_all(b, key, NULL);
    pthread_mutex_unlock(&b->lock);
    return wake_list(list, res);
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

int coro__lot_cancel_sched(coro_sched_t *s)
{
    int n = 0;

    for (unsigned i = 0; i < LOT_SIZE; i++) {
        struct bucket *b = &lot[i];
        pthread_mutex_lock(&b->lock);
        coro_t *list = b->head ? take_all(b, NULL, s) : NULL;
        pthread_mutex_unlock(&b->lock);
        n += wake_list(list, -ECANCELED);
    }
    return n;
}
