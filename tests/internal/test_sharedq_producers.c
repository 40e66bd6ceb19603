/* SPDX-License-Identifier: MIT */
/* White-box tests of coro__sharedq (lib/base/queues.c, SHARED QUEUES): no
 * producer waits for another.  One producer is stopped between its claim
 * of a slot and its publication of the job there (the test hook
 * coro__sharedq_claimed, lib/base/queues.h), as a pre-empted thread is,
 * for as long as the test wants; every other producer still returns,
 * consumers still return from their pops, and once the stopped one goes
 * on every job comes out exactly once, each producer's in order.
 * With the producers serialised by a mutex, or committing in ticket
 * order as ck_ring's MPMC enqueue does, the others wait for the stopped
 * one and these tests fail at their bound. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "white_box.h"
#include "base/queues.h"

/* how long the others get to finish while the victim is stopped: far
 * more than they need on a loaded 1-CPU machine, far less than .timeout */
#define BOUND_S 60

static sem_t victim_stopped, victim_go;
static __thread bool tls_victim;
static int victim_hit;          /* atomic: the victim's one stop happened */

/* the hook: the victim's first claim stops until victim_go */
static void hold_victim(struct coro__sharedq *q, uint64_t ticket)
{
    (void)q;
    (void)ticket;
    if (!tls_victim || __atomic_exchange_n(&victim_hit, 1, __ATOMIC_RELAXED))
        return;
    sem_post(&victim_stopped);
    while (sem_wait(&victim_go) != 0)
        ;
}

static void hook_on(void)
{
    cr_assert_eq(sem_init(&victim_stopped, 0, 0), 0);
    cr_assert_eq(sem_init(&victim_go, 0, 0), 0);
    victim_hit = 0;
    /* relaxed: set before the threads that read it start */
    __atomic_store_n(&coro__sharedq_claimed, hold_victim, __ATOMIC_RELAXED);
}

static void hook_off(void)
{
    __atomic_store_n(&coro__sharedq_claimed, NULL, __ATOMIC_RELAXED);
    sem_destroy(&victim_stopped);
    sem_destroy(&victim_go);
}

/* sem_wait with the BOUND_S deadline d: false when it passed */
static bool wait_until(sem_t *s, const struct timespec *d)
{
    int rc;
    while ((rc = sem_timedwait(s, d)) != 0 && errno == EINTR)
        ;
    return rc == 0;
}

static struct timespec deadline_in(int s)
{
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_sec += s;
    return d;
}

/* ---- the queue alone ---------------------------------------------------- */

#define RING 64u
enum { BEFORE = 10, PRODUCERS = 8, PER = 200, CONSUMERS = 2 };
#define TOTAL (BEFORE + 1 + PRODUCERS * PER)

struct qtest {
    struct coro__sharedq q;
    coro_t jobs[TOTAL];             /* [0, BEFORE): main; BEFORE: the victim; then per producer */
    unsigned char seen[TOTAL];
    sem_t producers_done;
    unsigned popped;                /* atomic */
    unsigned nulls;                 /* atomic: pops that returned nothing */
    int stop;                       /* atomic: consumers end */
    int bad;                        /* atomic */
    bool victim_returned;           /* atomic */
};

static struct qtest *qt;
static struct coro__sharedq_slot qslots[RING];

static void *q_victim(void *a)
{
    (void)a;
    tls_victim = true;
    coro__sharedq_push(&qt->q, &qt->jobs[BEFORE]);
    __atomic_store_n(&qt->victim_returned, true, __ATOMIC_RELEASE);
    return NULL;
}

static void *q_producer(void *a)
{
    coro_t *base = &qt->jobs[BEFORE + 1 + (intptr_t)a * PER];

    for (unsigned i = 0; i < PER;) {
        if (i % 4 == 0 && i + 3 <= PER) {
            coro_t *b[3] = { &base[i], &base[i + 1], &base[i + 2] };
            coro__sharedq_push_batch(&qt->q, b, 3);
            i += 3;
        } else {
            coro__sharedq_push(&qt->q, &base[i++]);
        }
    }
    sem_post(&qt->producers_done);
    return NULL;
}

static void *q_consumer(void *a)
{
    long last[PRODUCERS + 1];

    (void)a;
    for (int i = 0; i <= PRODUCERS; i++)
        last[i] = -1;
    while (!__atomic_load_n(&qt->stop, __ATOMIC_ACQUIRE)) {
        coro_t *p = coro__sharedq_pop(&qt->q);
        if (!p) {
            __atomic_add_fetch(&qt->nulls, 1, __ATOMIC_RELAXED);
            sched_yield();      /* 1 CPU: let the others run */
            continue;
        }
        size_t k = (size_t)(p - qt->jobs);
        if (k >= TOTAL || p->next) {
            __atomic_store_n(&qt->bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_exchange_n(&qt->seen[k], 1, __ATOMIC_RELAXED))
            __atomic_store_n(&qt->bad, 2, __ATOMIC_RELAXED);
        /* one producer's jobs in order, per consumer (main's first ten
         * count as producer 0's) */
        int prod = k < BEFORE + 1 ? 0 : 1 + (int)((k - BEFORE - 1) / PER);
        long idx = k < BEFORE + 1 ? (long)k : (long)((k - BEFORE - 1) % PER);
        if (idx <= last[prod])
            __atomic_store_n(&qt->bad, 3, __ATOMIC_RELAXED);
        last[prod] = idx;
        __atomic_add_fetch(&qt->popped, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

Test(sharedq_producers, a_stopped_producer_stops_no_other_producer_and_no_consumer, .timeout = 240)
{
    pthread_t vt, pt[PRODUCERS], ct[CONSUMERS];
    struct timespec d;

    qt = calloc(1, sizeof *qt);
    cr_assert_not_null(qt);
    cr_assert_eq(coro__sharedq_init(&qt->q, qslots, RING), 0);
    cr_assert_eq(sem_init(&qt->producers_done, 0, 0), 0);
    for (unsigned i = 0; i < BEFORE; i++)
        coro__sharedq_push(&qt->q, &qt->jobs[i]);
    hook_on();
    /* the victim claims ticket BEFORE and stops there */
    cr_assert_eq(pthread_create(&vt, NULL, q_victim, NULL), 0);
    d = deadline_in(BOUND_S);
    cr_assert(wait_until(&victim_stopped, &d), "the victim never reached its claim");
    for (intptr_t i = 0; i < CONSUMERS; i++)
        cr_assert_eq(pthread_create(&ct[i], NULL, q_consumer, NULL), 0);
    for (intptr_t i = 0; i < PRODUCERS; i++)
        cr_assert_eq(pthread_create(&pt[i], NULL, q_producer, (void *)i), 0);

    /* every other producer returns while the victim holds its slot: the
     * ring fills behind it, the rest go to the overflow list */
    d = deadline_in(BOUND_S);
    bool all = true;
    for (int i = 0; i < PRODUCERS && all; i++)
        all = wait_until(&qt->producers_done, &d);
    bool victim_back = __atomic_load_n(&qt->victim_returned, __ATOMIC_ACQUIRE);
    /* consumers took what came before the stopped slot and keep
     * returning from their pops (empty for now) */
    int64_t end = coro_now() + (int64_t)BOUND_S * 1000000000;
    while (__atomic_load_n(&qt->popped, __ATOMIC_RELAXED) < BEFORE && coro_now() < end)
        sched_yield();
    unsigned nulls = __atomic_load_n(&qt->nulls, __ATOMIC_RELAXED);
    while (__atomic_load_n(&qt->nulls, __ATOMIC_RELAXED) < nulls + 100 && coro_now() < end)
        sched_yield();
    unsigned popped_while_stopped = __atomic_load_n(&qt->popped, __ATOMIC_RELAXED);
    unsigned nulls_after = __atomic_load_n(&qt->nulls, __ATOMIC_RELAXED);

    sem_post(&victim_go);           /* the victim publishes; all drain */
    pthread_join(vt, NULL);
    end = coro_now() + (int64_t)BOUND_S * 1000000000;
    while (__atomic_load_n(&qt->popped, __ATOMIC_RELAXED) < TOTAL && coro_now() < end)
        sched_yield();
    __atomic_store_n(&qt->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    hook_off();

    cr_assert(all, "a producer waited for the stopped one (not back in %d s)", BOUND_S);
    cr_assert(!victim_back, "the victim's push returned before it was let go");
    cr_assert_eq(popped_while_stopped, BEFORE,
                 "consumers took %u jobs while the victim held ticket %d, want the %d before it",
                 popped_while_stopped, BEFORE, BEFORE);
    cr_assert_geq(nulls_after, nulls + 100, "a consumer's pop waited for the stopped producer");
    cr_assert_eq(qt->bad, 0, "a job out of order, corrupt or twice (%d)", qt->bad);
    cr_assert_eq(qt->popped, TOTAL, "popped %u of %u", qt->popped, (unsigned)TOTAL);
    cr_assert_null(coro__sharedq_pop(&qt->q));
    cr_assert_eq(coro__sharedq_size(&qt->q), 0);
    sem_destroy(&qt->producers_done);
    coro__sharedq_fini(&qt->q);
    free(qt);
}

Test(sharedq_producers, init_refuses_a_size_that_is_not_a_power_of_two, .timeout = 10)
{
    struct coro__sharedq q;
    struct coro__sharedq_slot s[8];

    cr_assert_eq(coro__sharedq_init(&q, s, 6), -EINVAL);
    cr_assert_eq(coro__sharedq_init(&q, s, 1), -EINVAL);
    cr_assert_eq(coro__sharedq_init(&q, s, 8), 0);
    coro__sharedq_fini(&q);
}

/* ---- 64 plain threads spawning into 2 workers --------------------------- */

enum { THREADS = 64, SPAWNS = 300 };

static coro_sched_t *sched64;
static unsigned ran;                /* atomic: jobs run */
static sem_t spawners_done;
static int spawn_fail;              /* atomic */

static int count_body(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

static void *spawner(void *a)
{
    intptr_t id = (intptr_t)a;
    /* HIGH: a plain thread's HIGH jobs go to the workers' inboxes, the
     * shared queues (NORMAL ones take its own submission ring) */
    coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH };

    tls_victim = id == 0;
    for (int i = 0; i < SPAWNS; i++) {
        coro_t *f = coro_frame_alloc(sched64, sizeof(coro_t));
        if (!f || coro_spawn(sched64, f, count_body, &o) != 0) {
            __atomic_store_n(&spawn_fail, 1, __ATOMIC_RELAXED);
            if (f)
                coro_frame_free(f);
        }
    }
    if (id != 0)
        sem_post(&spawners_done);
    return NULL;
}

Test(sharedq_producers, sixty_four_threads_spawn_into_two_workers_past_a_stopped_one, .timeout = 240)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    pthread_t t[THREADS];
    struct timespec d;

    cfg.workers = 2;
    cfg.pin = false;        /* 1 CPU too: the workers share it */
    cr_assert_eq(coro_sched_create(&sched64, &cfg), 0);
    cr_assert_eq(sem_init(&spawners_done, 0, 0), 0);
    ran = 0;
    hook_on();
    cr_assert_eq(pthread_create(&t[0], NULL, spawner, (void *)0), 0);
    d = deadline_in(BOUND_S);
    cr_assert(wait_until(&victim_stopped, &d), "the victim never reached its claim");
    unsigned ran_at_stop = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    for (intptr_t i = 1; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, spawner, (void *)i), 0);

    d = deadline_in(BOUND_S);
    int back = 0;
    while (back < THREADS - 1 && wait_until(&spawners_done, &d))
        back++;
    /* the workers go on running jobs meanwhile: those of the other inbox,
     * and in the stopped one's inbox those before its slot */
    int64_t end = coro_now() + (int64_t)BOUND_S * 1000000000;
    while (__atomic_load_n(&ran, __ATOMIC_RELAXED) < ran_at_stop + 1000 && coro_now() < end)
        sched_yield();
    unsigned ran_while_stopped = __atomic_load_n(&ran, __ATOMIC_RELAXED) - ran_at_stop;

    sem_post(&victim_go);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    end = coro_now() + (int64_t)BOUND_S * 1000000000;
    while (__atomic_load_n(&ran, __ATOMIC_RELAXED) < THREADS * SPAWNS && coro_now() < end)
        sched_yield();
    coro_sched_shutdown(sched64, CORO_DRAIN);
    coro_sched_destroy(sched64);
    hook_off();
    sem_destroy(&spawners_done);

    cr_assert_eq(back, THREADS - 1, "%d of %d spawning threads waited for the stopped one",
                 THREADS - 1 - back, THREADS - 1);
    cr_assert_geq(ran_while_stopped, 1000, "the workers ran %u jobs while a producer was stopped",
                  ran_while_stopped);
    cr_assert_eq(spawn_fail, 0);
    cr_assert_eq(ran, THREADS * SPAWNS, "ran %u of %d jobs", ran, THREADS * SPAWNS);
}
