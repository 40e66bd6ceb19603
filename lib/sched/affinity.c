/* SPDX-License-Identifier: MIT */
/* Affinity classes: each distinct set of workers a job may run on is
 * interned once, so a frame keeps a 16-bit class index instead of a
 * 128-byte mask, and a worker looks only at the queues of the classes it
 * belongs to.
 *
 * Who touches what: the table (s->cls, CORO__MAX_CLASSES pointers) is
 * written only under s->class_lock, each entry once, and published with a
 * release store of the entry and then of s->nclasses; readers (spawn's lookup,
 * workers) load with acquire and never lock.  A class is never freed before
 * the scheduler, so no reclamation scheme (ck_epoch) is needed.  Each
 * worker's served[] list grows the same way: entry first, then a release
 * store of nserved.
 *
 * MEMORY follows the classes in use: class 0 (any worker; the global
 * injection queue) has rings of CORO__CLASS_SIZE, a narrower class rings
 * of CORO__CLASS_NARROW_SIZE (its queues' overflow lists take the rest),
 * made when a mask first needs it.  SERVED: a worker's list is made by the
 * worker's own thread before it runs (coro__served_init; rt/runtime.c FIRST
 * TOUCH), with room for SERVED_FIRST classes, so that the array its every
 * look reads sits on its node; it doubles under class_lock when full (that
 * one made by the thread that interns the class: past the first few
 * classes, which are rare): the entries are copied to the new
 * array before a release store of its pointer, and the old array is kept
 * (linked from the new one) until coro__served_fini, so a worker that
 * loaded the old pointer reads valid entries below the count it loaded
 * first (the pointer it loads after that count is at least as new).
 *
 * The key of a class is its set of workers, not the user's mask: the mask
 * is cut to the CPUs that have workers, so {0,5} and {0} on a machine whose
 * workers sit on CPUs 0 and 1 are one class, and a mask that holds every
 * worker is class 0 ("any").
 */
#include <stddef.h>
#include <string.h>

#include "sched/sched.h"

static size_t class_bytes(unsigned qsize)
{
    return sizeof(struct coro__affinity_class) + CORO__NPRIO * qsize * sizeof(struct coro__sharedq_slot);
}

static void class_free(coro_sched_t *s, struct coro__affinity_class *c)
{
    for (int p = 0; p < CORO__NPRIO; p++)
        coro__sharedq_fini(&c->q[p]);
    coro__free(s, c, class_bytes(c->qsize));
}

static struct coro__affinity_class *class_new(coro_sched_t *s, const uint64_t *wmask, const coro_cpuset_t *cpus,
                                 unsigned qsize)
{
    struct coro__affinity_class *c = coro__alloc(s, class_bytes(qsize));
    struct coro__sharedq_slot *b;

    if (!c)
        return NULL;
    b = (struct coro__sharedq_slot *)(c + 1);
    memcpy(c->wmask, wmask, sizeof c->wmask);
    c->cpus = *cpus;
    c->qsize = qsize;
    for (int i = 0; i < CORO__WMASK_WORDS; i++)
        c->nworkers += __builtin_popcountll(wmask[i]);
    for (int p = 0; p < CORO__NPRIO; p++)
        coro__sharedq_init(&c->q[p], b + p * qsize, qsize);
    return c;
}

/* a served array: its entries follow; prev is the array it replaced */
struct served {
    struct served *prev;
    uint32_t cap;
    uint16_t e[] __attribute__((aligned(8)));
};

#define SERVED_OF(p) ((struct served *)((char *)(p) - offsetof(struct served, e)))

/* the room of a worker's first served array */
#define SERVED_FIRST 8

/* under class_lock (or before w runs and classes exist): room for one more
 * entry in w's list; 0 or -ENOMEM */
static int served_room(coro_sched_t *s, struct coro__worker *w)
{
    if (w->nserved < w->served_cap)
        return 0;
    uint32_t cap = w->served_cap ? 2 * w->served_cap : SERVED_FIRST;
    struct served *n = coro__alloc(s, sizeof *n + cap * sizeof(uint16_t));
    if (!n)
        return -ENOMEM;
    n->cap = cap;
    n->prev = w->served ? SERVED_OF(w->served) : NULL;
    if (w->served)
        memcpy(n->e, w->served, w->nserved * sizeof(uint16_t));
    /* release: the copied entries before the pointer (the worker acquires) */
    __atomic_store_n(&w->served, n->e, __ATOMIC_RELEASE);
    w->served_cap = cap;
    return 0;
}

int coro__served_init(coro_sched_t *s, struct coro__worker *w)
{
    return served_room(s, w);
}

void coro__served_fini(coro_sched_t *s, struct coro__worker *w)
{
    struct served *a = w->served ? SERVED_OF(w->served) : NULL;
    while (a) {
        struct served *prev = a->prev;
        coro__free(s, a, sizeof *a + a->cap * sizeof(uint16_t));
        a = prev;
    }
    w->served = NULL;
    w->served_cap = 0;
}

int coro__affinity_init(coro_sched_t *s, const int *cpus, int ncpus)
{
    coro_cpuset_t all;

    pthread_mutex_init(&s->class_lock, NULL);
    s->cls = coro__alloc(s, CORO__MAX_CLASSES * sizeof *s->cls);
    if (!s->cls)
        return -ENOMEM;
    coro_cpuset_zero(&all);
    for (int i = 0; i < ncpus; i++)
        coro_cpuset_add(&all, cpus[i]);
    s->cls[0] = class_new(s, s->all_wmask, &all, CORO__CLASS_SIZE);
    if (!s->cls[0])
        return -ENOMEM;
    s->nclasses = 1;
    return 0;
}

void coro__affinity_fini(coro_sched_t *s)
{
    if (!s->cls)
        return;
    for (uint32_t i = 0; i < s->nclasses; i++)
        if (s->cls[i])
            class_free(s, s->cls[i]);
    coro__free(s, s->cls, CORO__MAX_CLASSES * sizeof *s->cls);
    s->cls = NULL;
    pthread_mutex_destroy(&s->class_lock);
}

static int class_find(coro_sched_t *s, const uint64_t *wmask)
{
    /* acquire: pairs with the release store of the count when a class is
     * added (below): every class under n is complete */
    uint32_t n = __atomic_load_n(&s->nclasses, __ATOMIC_ACQUIRE);

    for (uint32_t i = 1; i < n; i++) {
        struct coro__affinity_class *c = coro__affinity_get(s, i);
        if (memcmp(c->wmask, wmask, sizeof c->wmask) == 0)
            return (int)i;
    }
    return -1;
}

int coro__affinity_intern(coro_sched_t *s, const coro_cpuset_t *aff)
{
    uint64_t wmask[CORO__WMASK_WORDS] = { 0 };
    coro_cpuset_t cut;
    int idx;

    if (!aff)
        return 0;
    if (coro_cpuset_count(aff) == 0)
        return -EINVAL;
    if (s->nworkers == 0) {
        /* single-threaded: the one worker runs wherever the caller runs */
        for (int i = 0; i < CORO_MAX_CPUS / 64; i++)
            if (aff->bits[i] & s->cls[0]->cpus.bits[i])
                return 0;
        return -EINVAL;
    }
    coro_cpuset_zero(&cut);
    for (int i = 0; i < s->nslots; i++) {
        int cpu = s->w[i]->cpu;
        if (coro_cpuset_has(aff, cpu)) {
            coro__bit_set(wmask, i);
            coro_cpuset_add(&cut, cpu);
        }
    }
    if (memcmp(wmask, s->all_wmask, sizeof wmask) == 0)
        return 0;
    if (coro_cpuset_count(&cut) == 0)
        return -EINVAL;
    if ((idx = class_find(s, wmask)) > 0)
        return idx;

    pthread_mutex_lock(&s->class_lock);
    if ((idx = class_find(s, wmask)) > 0)
        goto out;
    idx = -ENOMEM;
    if (s->nclasses >= CORO__MAX_CLASSES)
        goto out;
    /* room in every served list first: nothing to undo once published */
    for (int i = 0; i < s->nslots; i++)
        if (coro__bit_test(wmask, i) && served_room(s, s->w[i]) < 0)
            goto out;
    struct coro__affinity_class *c = class_new(s, wmask, &cut, CORO__CLASS_NARROW_SIZE);
    if (!c)
        goto out;
    idx = (int)s->nclasses;
    /* release: the class's contents before its pointer, the pointer before
     * the count that lets readers look at it */
    __atomic_store_n(&s->cls[idx], c, __ATOMIC_RELEASE);
    __atomic_store_n(&s->nclasses, (uint32_t)idx + 1, __ATOMIC_RELEASE);
    for (int i = 0; i < s->nslots; i++) {
        if (!coro__affinity_allows(c, i))
            continue;
        struct coro__worker *w = s->w[i];
        uint32_t n = w->nserved;
        w->served[n] = (uint16_t)idx;
        /* release: the entry before the count the worker acquires */
        __atomic_store_n(&w->nserved, n + 1, __ATOMIC_RELEASE);
    }
out:
    pthread_mutex_unlock(&s->class_lock);
    return idx;
}
