/* SPDX-License-Identifier: MIT */
/* Scenario: a flood through coro__sharedq's overflow list (lib/base/queues.c).  An
 * 8-slot ring, producers pushing singly and in batches, consumers popping
 * (which moves batches from the list into the ring): every job comes out
 * exactly once, and each producer's jobs in order for each consumer.
 * White-box (lib/base/queues.h); under TSan it checks the batch take's ordering. */
#include "scenario.h"
#include <pthread.h>

#include "rt/rt.h"
#include "base/queues.h"

#define RING 8u
enum { PRODUCERS = 3, CONSUMERS = 3 };

static struct coro__sharedq q;
static struct coro__sharedq_slot buf[RING];
static coro_t *jobs;
static unsigned char *seen;
static unsigned per, done_producers, popped;
static int bad;

static void *producer(void *a)
{
    coro_t *base = jobs + (size_t)(intptr_t)a * per;

    for (unsigned i = 0; i < per; ) {
        if (i % 5 == 0 && i + 3 <= per) {
            coro_t *b[3] = { &base[i], &base[i + 1], &base[i + 2] };
            coro__sharedq_push_batch(&q, b, 3);
            i += 3;
        } else {
            coro__sharedq_push(&q, &base[i++]);
        }
    }
    __atomic_add_fetch(&done_producers, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *consumer(void *a)
{
    long last[PRODUCERS] = { -1, -1, -1 };

    (void)a;
    for (;;) {
        coro_t *p = coro__sharedq_pop(&q);
        if (!p) {
            if (__atomic_load_n(&done_producers, __ATOMIC_ACQUIRE) == PRODUCERS &&
                coro__sharedq_size(&q) == 0)
                return NULL;
            continue;
        }
        size_t k = (size_t)(p - jobs);
        if (k >= (size_t)PRODUCERS * per || p->next) {
            __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        int prod = (int)(k / per);
        long idx = (long)(k % per);
        if (idx <= last[prod])
            __atomic_store_n(&bad, 2, __ATOMIC_RELAXED);
        last[prod] = idx;
        if (__atomic_exchange_n(&seen[k], 1, __ATOMIC_RELAXED))
            __atomic_store_n(&bad, 3, __ATOMIC_RELAXED);
        __atomic_add_fetch(&popped, 1, __ATOMIC_RELAXED);
    }
}

int main(int argc, char **argv)
{
    enum scen_mode m = scenario_mode(argc, argv);
    pthread_t pt[PRODUCERS], ct[CONSUMERS];

    per = SCEN_N(m, 20000, 50000, 2000000);
    jobs = calloc((size_t)PRODUCERS * per, sizeof *jobs);
    seen = calloc((size_t)PRODUCERS * per, 1);
    SCEN_CHECK(jobs && seen, "out of memory");
    SCEN_CHECK(coro__sharedq_init(&q, buf, RING) == 0, "init");
    for (intptr_t i = 0; i < CONSUMERS; i++)
        SCEN_CHECK(pthread_create(&ct[i], NULL, consumer, NULL) == 0, "consumer");
    for (intptr_t i = 0; i < PRODUCERS; i++)
        SCEN_CHECK(pthread_create(&pt[i], NULL, producer, (void *)i) == 0, "producer");
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    SCEN_CHECK(bad == 0, "a job out of order, corrupt or twice (%d)", bad);
    SCEN_CHECK(popped == (unsigned)PRODUCERS * per, "popped %u of %u", popped,
               (unsigned)PRODUCERS * per);
    for (size_t k = 0; k < (size_t)PRODUCERS * per; k++)
        SCEN_CHECK(seen[k], "job %zu lost", k);
    SCEN_CHECK(coro__sharedq_pop(&q) == NULL, "queue not empty");
    coro__sharedq_fini(&q);
    free(seen);
    free(jobs);
    puts("sharedq_overflow: ok");
    return 0;
}
