/* SPDX-License-Identifier: MIT */
/* The drive queue of a scheduler without workers (lib/rt/drive.c): a
 * thread that waits while another drives sleeps until its own job ends or
 * the drive is free, not once per job that others' jobs run; and the drive
 * is never left free while a waiter sleeps. */
#define _GNU_SOURCE     /* RUSAGE_THREAD */
#include <pthread.h>
#include <sys/resource.h>

#include "white_box.h"

/* bounded (20 s): until the drive word has one of mask's bits */
static void wait_word(coro_sched_t *s, uint32_t mask, uint32_t want)
{
    int64_t end = coro_now() + 20000000000LL;
    /* acquire: the word as the driver and the waiters leave it */
    while ((__atomic_load_n(&s->w[0]->started_st, __ATOMIC_ACQUIRE) & mask) != want) {
        cr_assert_lt(coro_now(), end, "the drive word never read %#x under %#x", want, mask);
        sched_yield();
    }
}

#define CHILDREN 300

struct child { coro_t co; };

static int child_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

/* A: once told, runs CHILDREN children one after another, each after a
 * short sleep (so that a waiter woken by each end would sleep in between),
 * then lets B go */
struct jobA {
    coro_t co;
    coro_event_t *go, *b_go;
    int i;
    struct child *c;
};

static int a_body(coro_t *co)
{
    struct jobA *a = CORO_SELF(co, struct jobA);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(a->go, CORO_FOREVER));
    for (a->i = 0; a->i < CHILDREN; a->i++) {
        CORO_AWAIT(co, coro_sleep(10000));
        a->c = coro_frame_alloc(co->sched, sizeof *a->c);
        if (!a->c || coro_spawn(co->sched, &a->c->co, child_body, NULL) != 0)
            CORO_RETURN(co, -1);
        CORO_AWAIT(co, coro_done(&a->c->co));
    }
    coro_event_set(a->b_go);
    CORO_RETURN(co, 1);
    CORO_END(co);
}

struct jobB {
    coro_t co;
    coro_event_t *go;
};

static int b_body(coro_t *co)
{
    struct jobB *b = CORO_SELF(co, struct jobB);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(b->go, CORO_FOREVER));
    CORO_RETURN(co, 2);
    CORO_END(co);
}

struct joinerB {
    coro_sched_t *s;
    struct jobB *b;
    coro_event_t *a_go;
    intptr_t got;
    int rc;
    long sleeps;        /* voluntary context switches during the join */
};

static void *join_b(void *arg)
{
    struct joinerB *t = arg;
    struct rusage r0, r1;

    wait_word(t->s, CORO__DRIVE_ON, CORO__DRIVE_ON);   /* join B while main drives */
    getrusage(RUSAGE_THREAD, &r0);
    t->rc = coro_join(&t->b->co, &t->got);
    getrusage(RUSAGE_THREAD, &r1);
    t->sleeps = r1.ru_nvcsw - r0.ru_nvcsw;
    return NULL;
}

static void *let_a_go(void *arg)
{
    struct joinerB *t = arg;
    /* once the joiner of B waits in the drive queue */
    wait_word(t->s, CORO__DRIVE_WMASK, CORO__DRIVE_WAITER);
    coro_event_set(t->a_go);
    return NULL;
}

Test(drive_queue, a_waiting_joiner_sleeps_through_the_ends_of_other_jobs, .timeout = 30)
{
    coro_sched_config_t c = { .workers = 0 };
    coro_sched_t *s;
    coro_event_t a_go, b_go;
    struct jobA a = { .go = &a_go, .b_go = &b_go };
    struct jobB b = { .go = &b_go };
    struct joinerB t = { .b = &b, .a_go = &a_go };
    pthread_t tj, tg;
    intptr_t ra = 0;

    cr_assert_eq(coro_sched_create(&s, &c), 0);
    coro_event_init(&a_go);
    coro_event_init(&b_go);
    t.s = s;
    cr_assert_eq(coro_spawn(s, &a.co, a_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &b.co, b_body, NULL), 0);
    cr_assert_eq(pthread_create(&tj, NULL, join_b, &t), 0);
    cr_assert_eq(pthread_create(&tg, NULL, let_a_go, &t), 0);
    /* this thread drives A: 300 children end, each after a sleep, while
     * the other thread waits for B; then it hands the drive over */
    cr_assert_eq(coro_join(&a.co, &ra), 0);
    cr_assert_eq(ra, 1);
    pthread_join(tj, NULL);
    pthread_join(tg, NULL);
    cr_assert_eq(t.rc, 0);
    cr_assert_eq(t.got, 2);
    /* a few sleeps (the queue, the hand-over, B's own wait), not one per
     * end of A's children */
    cr_assert_lt(t.sleeps, CHILDREN / 6, "the joiner slept %ld times while %d other jobs ended",
                 t.sleeps, CHILDREN);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* Two threads wait while this one drives, for predicates set before it
 * stops: the stop kicks one, which leaves without driving; it must pass
 * the kick on, or the other sleeps with the drive free. */
struct waiter {
    coro_sched_t *s;
    coro_t key;             /* a job address to wait under; never spawned */
    int done;               /* atomic */
};

static bool waiter_done(void *arg)
{
    /* acquire: pairs with the main thread's release */
    return __atomic_load_n(&((struct waiter *)arg)->done, __ATOMIC_ACQUIRE);
}

static void *wait_in_queue(void *arg)
{
    struct waiter *w = arg;
    coro__drive_until_dl(w->s, &w->key, waiter_done, w, -1);
    return NULL;
}

Test(drive_queue, a_kicked_waiter_that_leaves_passes_the_drive_on, .timeout = 30)
{
    for (int round = 0; round < 20; round++) {
        coro_sched_config_t c = { .workers = 0 };
        coro_sched_t *s;
        struct waiter w[2] = { { .done = 0 }, { .done = 0 } };
        pthread_t t[2];

        cr_assert_eq(coro_sched_create(&s, &c), 0);
        cr_assert(coro__drive_begin(s));
        for (int i = 0; i < 2; i++) {
            w[i].s = s;
            cr_assert_eq(pthread_create(&t[i], NULL, wait_in_queue, &w[i]), 0);
        }
        wait_word(s, CORO__DRIVE_WMASK, 2 * CORO__DRIVE_WAITER);
        for (int i = 0; i < 2; i++)     /* release: waiter_done's acquire */
            __atomic_store_n(&w[i].done, 1, __ATOMIC_RELEASE);
        /* no job of theirs ends: only the stop's kick, and the pass, wake them */
        coro__drive_end(s);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        wait_word(s, CORO__DRIVE_WMASK | CORO__DRIVE_ON, 0);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* Many plain threads, each calling coro_block_on over and over on one
 * single-threaded scheduler: roots that spawn chains and sleep; every
 * result arrives and every job runs. */
#define THREADS 24
#define CALLS 40

struct link { coro_t co; int n; };

static unsigned long links_ran;     /* atomic */

static int link_body(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    __atomic_fetch_add(&links_ran, 1, __ATOMIC_RELAXED);
    if (l->n > 0) {
        struct link *k = coro_frame_alloc(co->sched, sizeof *k);
        if (!k)
            CORO_RETURN(co, -1);
        k->n = l->n - 1;
        if (coro_spawn(co->sched, &k->co, link_body, NULL) != 0)
            CORO_RETURN(co, -1);
    }
    CORO_END(co);
}

struct root { coro_t co; int n; struct link *l; };

static int root_body(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    CORO_BEGIN(co);
    r->l = coro_frame_alloc(co->sched, sizeof *r->l);
    if (!r->l)
        CORO_RETURN(co, -1);
    r->l->n = r->n;
    if (coro_spawn(co->sched, &r->l->co, link_body, NULL) != 0)
        CORO_RETURN(co, -1);
    CORO_AWAIT(co, coro_sleep(1000));
    CORO_RETURN(co, 7 + r->n);
    CORO_END(co);
}

struct caller { coro_sched_t *s; int bad; };

static void *call_many(void *arg)
{
    struct caller *c = arg;
    for (int i = 0; i < CALLS; i++) {
        struct root r = { .n = i % 9 };
        intptr_t res = 0;
        if (coro_block_on(c->s, &r.co, root_body, NULL, &res) != 0 || res != 7 + r.n)
            c->bad++;
    }
    return NULL;
}

Test(drive_queue, many_threads_block_on_one_single_threaded_scheduler, .timeout = 60)
{
    coro_sched_config_t c = { .workers = 0 };
    coro_sched_t *s;
    struct caller cl[THREADS];
    pthread_t t[THREADS];
    coro_sched_stats_t st;
    unsigned long links = 0;

    cr_assert_eq(coro_sched_create(&s, &c), 0);
    for (int i = 0; i < THREADS; i++) {
        cl[i] = (struct caller){ .s = s };
        cr_assert_eq(pthread_create(&t[i], NULL, call_many, &cl[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(cl[i].bad, 0, "thread %d: %d calls failed", i, cl[i].bad);
    }
    for (int i = 0; i < CALLS; i++)
        links += (unsigned long)(i % 9 + 1);    /* a root's chain: n + 1 links */
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(__atomic_load_n(&links_ran, __ATOMIC_RELAXED), THREADS * links);
    coro_sched_stats(s, &st);
    cr_assert_eq(st.live_jobs, 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
