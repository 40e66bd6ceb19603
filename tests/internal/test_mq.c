/* SPDX-License-Identifier: MIT */
/* White-box tests of coro__sharedq (lib/base/queues.c): the overflow list's batch take
 * (coro__sharedq_pop moves a batch from the list into the ring under one lock)
 * keeps FIFO order and neither loses nor duplicates a job under a flood. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt/rt.h"
#include "base/queues.h"

#define RING 8u                     /* tiny: almost everything overflows */

static coro_t *jobs_new(unsigned n)
{
    coro_t *j = calloc(n, sizeof *j);
    cr_assert_not_null(j);
    for (unsigned i = 0; i < n; i++)
        j[i].result = (intptr_t)i;
    return j;
}

Test(mq, overflow_batch_take_keeps_fifo)
{
    static struct coro__sharedq_slot buf[RING];
    struct coro__sharedq q;
    enum { N = 1000 };
    coro_t *j = jobs_new(N);

    cr_assert_eq(coro__sharedq_init(&q, buf, RING), 0);
    for (unsigned i = 0; i < N; i++)
        coro__sharedq_push(&q, &j[i]);
    cr_assert_eq(coro__sharedq_size(&q), N);
    for (unsigned i = 0; i < N; i++) {
        coro_t *p = coro__sharedq_pop(&q);
        cr_assert_not_null(p, "job %u lost", i);
        cr_assert_eq(p, &j[i], "job %u out of order", i);
        cr_assert_null(p->next);
        cr_assert_eq(coro__sharedq_size(&q), N - 1 - i);
    }
    cr_assert_null(coro__sharedq_pop(&q));
    cr_assert_eq(coro__sharedq_size(&q), 0);
    /* the ring and the list are usable again after draining */
    coro__sharedq_push(&q, &j[0]);
    cr_assert_eq(coro__sharedq_pop(&q), &j[0]);
    coro__sharedq_fini(&q);
    free(j);
}

/* a flood: producers push while consumers pop; every job comes out once,
 * and each producer's jobs come out in order for a single consumer */
enum { PRODUCERS = 3, CONSUMERS = 3, PER = 20000 };

struct flood {
    struct coro__sharedq q;
    coro_t *jobs;                   /* PRODUCERS * PER */
    unsigned char *seen;
    unsigned pushed_done;           /* atomic */
    unsigned popped;                /* atomic */
    int bad;                        /* atomic */
};

struct pctx { struct flood *f; int id; };

static void *producer(void *a)
{
    struct pctx *c = a;
    coro_t *base = c->f->jobs + (size_t)c->id * PER;

    for (unsigned i = 0; i < PER; ) {
        if (i % 3 == 0 && i + 4 <= PER) {
            coro_t *b[4] = { &base[i], &base[i + 1], &base[i + 2], &base[i + 3] };
            coro__sharedq_push_batch(&c->f->q, b, 4);
            i += 4;
        } else {
            coro__sharedq_push(&c->f->q, &base[i++]);
        }
    }
    __atomic_add_fetch(&c->f->pushed_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *consumer(void *a)
{
    struct flood *f = a;
    long last[PRODUCERS];

    for (int i = 0; i < PRODUCERS; i++)
        last[i] = -1;
    for (;;) {
        coro_t *p = coro__sharedq_pop(&f->q);
        if (!p) {
            if (__atomic_load_n(&f->pushed_done, __ATOMIC_ACQUIRE) == PRODUCERS &&
                coro__sharedq_size(&f->q) == 0)
                break;
            continue;
        }
        size_t k = (size_t)(p - f->jobs);
        if (k >= (size_t)PRODUCERS * PER || p->next != NULL)
            __atomic_store_n(&f->bad, 1, __ATOMIC_RELAXED);
        /* per consumer, one producer's jobs come out in order */
        int prod = (int)(k / PER);
        long idx = (long)(k % PER);
        if (idx <= last[prod])
            __atomic_store_n(&f->bad, 2, __ATOMIC_RELAXED);
        last[prod] = idx;
        if (__atomic_exchange_n(&f->seen[k], 1, __ATOMIC_RELAXED))
            __atomic_store_n(&f->bad, 3, __ATOMIC_RELAXED);
        __atomic_add_fetch(&f->popped, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

Test(mq, overflow_flood_nothing_lost_or_doubled, .timeout = 120)
{
    static struct coro__sharedq_slot buf[RING];
    static struct flood f;
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    struct pctx pc[PRODUCERS];

    memset(&f, 0, sizeof f);
    f.jobs = jobs_new(PRODUCERS * PER);
    f.seen = calloc(PRODUCERS * PER, 1);
    cr_assert_eq(coro__sharedq_init(&f.q, buf, RING), 0);
    for (int i = 0; i < CONSUMERS; i++)
        cr_assert_eq(pthread_create(&ct[i], NULL, consumer, &f), 0);
    for (int i = 0; i < PRODUCERS; i++) {
        pc[i] = (struct pctx){ &f, i };
        cr_assert_eq(pthread_create(&pt[i], NULL, producer, &pc[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    cr_assert_eq(f.bad, 0, "a job out of order, corrupt or twice (%d)", f.bad);
    cr_assert_eq(f.popped, (unsigned)(PRODUCERS * PER));
    for (size_t k = 0; k < (size_t)PRODUCERS * PER; k++)
        cr_assert(f.seen[k], "job %zu lost", k);
    cr_assert_null(coro__sharedq_pop(&f.q));
    coro__sharedq_fini(&f.q);
    free(f.seen);
    free(f.jobs);
}
