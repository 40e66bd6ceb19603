/* SPDX-License-Identifier: MIT */
/* The records of the threads that pull generators (lib/sched/gen.c, WHO
 * PULLS, Records): made at a thread's first slow pull, handed at its exit
 * to the next new thread, never freed, so that a taker may read any
 * keeper's record.  Layer 1 (scheduling). */
#define CORO__GEN_NO_INLINE 1
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sched/gen.h"
#include "sched/sched.h"

/* a coro_t that is never a generator: coro__gen_none's slot[0] */
static coro_t none_slot;

struct coro__gen_self coro__gen_none = { .slot = { &none_slot } };

/* the calling thread's record (gen.h) */
CORO_EXTERN __thread struct coro__gen_self *coro__gen_me
    __attribute__((tls_model("initial-exec"))) = &coro__gen_none;

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static pthread_key_t self_key;
static bool self_on;                    /* written once, under self_once */
static bool self_off;                   /* self_on is false (read without the once) */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct coro__gen_self *spare;    /* records of threads that ended */

/* a thread ends: its record goes to the next new thread */
static void self_exit(void *p)
{
    struct coro__gen_self *me = p;

    coro__gen_me = &coro__gen_none;
    /* release: as at the end of a pull (it marks nothing now) */
    for (size_t i = 0; i < CORO__GEN_SLOTS; i++)
        __atomic_store_n(&me->slot[i], NULL, __ATOMIC_RELEASE);
    pthread_mutex_lock(&spare_lock);
    me->next_free = spare;
    spare = me;
    pthread_mutex_unlock(&spare_lock);
}

static void self_init(void)
{
    self_on = coro__membarrier_register() == 0 &&
              pthread_key_create(&self_key, self_exit) == 0;
    /* relaxed: a thread that misses it goes through the once */
    __atomic_store_n(&self_off, !self_on, __ATOMIC_RELAXED);
}

struct coro__gen_self *coro__gen_record(void)
{
    struct coro__gen_self *me = coro__gen_me;

    if (CORO__LIKELY(me != &coro__gen_none))
        return me;
    /* relaxed: see self_init */
    if (__atomic_load_n(&self_off, __ATOMIC_RELAXED))
        return NULL;
    pthread_once(&self_once, self_init);
    if (!self_on)
        return NULL;
    pthread_mutex_lock(&spare_lock);
    me = spare;
    if (me)
        spare = me->next_free;
    pthread_mutex_unlock(&spare_lock);
    if (!me) {
        /* a cache line of its own: takers read it, its thread writes it */
        me = aligned_alloc(64, (sizeof *me + 63) & ~(size_t)63);
        if (!me)
            return NULL;
        memset(me, 0, sizeof *me);
    }
    if (pthread_setspecific(self_key, me) != 0) {
        pthread_mutex_lock(&spare_lock);
        me->next_free = spare;
        spare = me;
        pthread_mutex_unlock(&spare_lock);
        return NULL;
    }
    coro__gen_me = me;
    return me;
}
