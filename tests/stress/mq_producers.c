/* SPDX-License-Identifier: MIT */
/* Scenario: many producers, more than the CPUs, on one coro__sharedq
 * (lib/base/queues.c, SHARED QUEUES): the lock-free claim and publication
 * of the ring, with some producers made to give their CPU up between the
 * two (the test hook coro__sharedq_claimed: a pre-emption in the window
 * where consumers find the head slot claimed but not published), singly
 * and in batches, into a ring small enough to overflow now and then.
 * Every job comes out exactly once, each producer's in order for each
 * consumer.  White-box (lib/base/queues.h); under TSan it checks that a
 * job's fields written before its push are seen by its consumer. */
#include "scenario.h"
#include <pthread.h>
#include <sched.h>

#include "rt/rt.h"
#include "base/queues.h"

#define RING 32u
enum { PRODUCERS = 12, CONSUMERS = 2 };

struct item {
    coro_t co;
    unsigned producer, idx;         /* written before the push */
};

static struct coro__sharedq q;
static struct coro__sharedq_slot slots[RING];
static struct item *items;
static unsigned char *seen;
static unsigned per, done_producers, popped;
static int bad;
static __thread unsigned tls_pushes;

/* every 7th push of an odd producer gives its CPU up after its claim */
static void yield_in_window(struct coro__sharedq *qq, uint64_t ticket)
{
    (void)qq;
    (void)ticket;
    if (tls_pushes % 7 == 3)
        sched_yield();
}

static void *producer(void *a)
{
    unsigned id = (unsigned)(intptr_t)a;
    struct item *base = items + (size_t)id * per;

    for (unsigned i = 0; i < per;) {
        tls_pushes += id & 1;
        if (i % 5 == 1 && i + 4 <= per) {
            coro_t *b[4];
            for (unsigned k = 0; k < 4; k++) {
                base[i + k].producer = id;
                base[i + k].idx = i + k;
                b[k] = &base[i + k].co;
            }
            coro__sharedq_push_batch(&q, b, 4);
            i += 4;
        } else {
            base[i].producer = id;
            base[i].idx = i;
            coro__sharedq_push(&q, &base[i].co);
            i++;
        }
    }
    __atomic_add_fetch(&done_producers, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *consumer(void *a)
{
    long last[PRODUCERS];

    (void)a;
    for (int i = 0; i < PRODUCERS; i++)
        last[i] = -1;
    for (;;) {
        coro_t *p = coro__sharedq_pop(&q);
        if (!p) {
            if (__atomic_load_n(&done_producers, __ATOMIC_ACQUIRE) == PRODUCERS &&
                coro__sharedq_size(&q) == 0)
                return NULL;
            sched_yield();      /* producers outnumber the CPUs */
            continue;
        }
        struct item *it = (struct item *)p;
        size_t k = (size_t)(it - items);
        if (k >= (size_t)PRODUCERS * per || p->next || it->producer != k / per ||
            it->idx != k % per) {
            __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        if ((long)it->idx <= last[it->producer])
            __atomic_store_n(&bad, 2, __ATOMIC_RELAXED);
        last[it->producer] = it->idx;
        if (__atomic_exchange_n(&seen[k], 1, __ATOMIC_RELAXED))
            __atomic_store_n(&bad, 3, __ATOMIC_RELAXED);
        __atomic_add_fetch(&popped, 1, __ATOMIC_RELAXED);
    }
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    pthread_t pt[PRODUCERS], ct[CONSUMERS];

    per = SCEN_N(m, 3000, 10000, 400000);
    items = calloc((size_t)PRODUCERS * per, sizeof *items);
    seen = calloc((size_t)PRODUCERS * per, 1);
    SCEN_CHECK(items && seen, "out of memory");
    SCEN_CHECK(coro__sharedq_init(&q, slots, RING) == 0, "init");
    /* relaxed: set before the threads that read it start */
    __atomic_store_n(&coro__sharedq_claimed, yield_in_window, __ATOMIC_RELAXED);
    for (intptr_t i = 0; i < CONSUMERS; i++)
        SCEN_CHECK(pthread_create(&ct[i], NULL, consumer, NULL) == 0, "consumer");
    for (intptr_t i = 0; i < PRODUCERS; i++)
        SCEN_CHECK(pthread_create(&pt[i], NULL, producer, (void *)i) == 0, "producer");
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    __atomic_store_n(&coro__sharedq_claimed, NULL, __ATOMIC_RELAXED);
    SCEN_CHECK(bad == 0, "a job out of order, corrupt or twice (%d)", bad);
    SCEN_CHECK(popped == (unsigned)PRODUCERS * per, "popped %u of %u", popped,
               (unsigned)PRODUCERS * per);
    for (size_t k = 0; k < (size_t)PRODUCERS * per; k++)
        SCEN_CHECK(seen[k], "job %zu lost", k);
    SCEN_CHECK(coro__sharedq_pop(&q) == NULL, "queue not empty");
    coro__sharedq_fini(&q);
    free(seen);
    free(items);
    puts("sharedq_producers: ok");
    return 0;
}
