/* SPDX-License-Identifier: MIT */
/* A worker's spawn of the pool frame it has just allocated (SPAWNING A
 * FRESH FRAME, lib/rt/runtime.c) and the plain finish (FINISHING A PLAIN
 * JOB, lib/rt/finish.c) keep coro_spawn's promises: a second spawn of a
 * live frame gets -EBUSY, a spawn after the close -ESHUTDOWN with the frame
 * left to its caller, and of a job and a plain thread that spawn the same
 * fresh frame at once exactly one wins and the job runs once.  0, 1 and 2
 * workers (with 0 the driver takes the general paths). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "white_box.h"

static const int counts[] = { 0, 1, 2 };
#define NCOUNTS 3

static long runs;       /* bodies run (atomic) */

struct leaf {
    coro_t co;
};

static int leaf_fn(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

/* ---- two spawns of one fresh frame, on its worker ------------------------ */

struct twice {
    coro_t co;
    int first, second;
};

static int twice_fn(coro_t *co)
{
    struct twice *t = CORO_SELF(co, struct twice);
    CORO_BEGIN(co);
    struct leaf *l = coro_frame_alloc(coro_sched_current(), sizeof *l);
    t->first = l ? coro_spawn(coro_sched_current(), &l->co, leaf_fn, NULL) : -ENOMEM;
    t->second = l ? coro_spawn(coro_sched_current(), &l->co, leaf_fn, NULL) : -ENOMEM;
    CORO_END(co);
}

Test(spawn_fresh, a_fresh_frame_spawned_twice_from_its_job_runs_once, .timeout = 20)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        runs = 0;
        for (long i = 0; i < 200; i++) {
            struct twice t = { 0 };
            intptr_t res;
            cr_assert_eq(coro_block_on(s, &t.co, twice_fn, NULL, &res), 0);
            if (counts[k] == 0)
                coro_sched_run(s);      /* the leaf, queued behind its spawner */
            cr_assert_eq(t.first, 0, "workers %d: %d", counts[k], t.first);
            cr_assert_eq(t.second, -EBUSY, "workers %d: %d", counts[k], t.second);
            /* the leaf may still be running on a worker: bounded wait */
            int64_t end = coro_now() + 20000000000LL;
            while (__atomic_load_n(&runs, __ATOMIC_RELAXED) < i + 1) {
                cr_assert_lt(coro_now(), end, "the leaf never ran");
                sched_yield();
            }
        }
        fin(s);
        cr_assert_eq(runs, 200, "workers %d: %ld bodies ran for 200 frames", counts[k], runs);
    }
}

/* ---- a spawn from a job after the close ----------------------------------- */

struct closer {
    coro_t co;
    coro_event_t *go;
    int rc;
    bool freed;
};

static int closer_fn(coro_t *co)
{
    struct closer *c = CORO_SELF(co, struct closer);
    CORO_BEGIN(co);
    /* a spawn first, so that this worker holds spare units of the count */
    {
        struct leaf *l = coro_frame_alloc(coro_sched_current(), sizeof *l);
        c->rc = l ? coro_spawn(coro_sched_current(), &l->co, leaf_fn, NULL) : -ENOMEM;
    }
    if (c->rc != 0)
        CORO_RETURN(co, c->rc);
    CORO_AWAIT(co, coro_event_wait(c->go, CORO_FOREVER));
    {
        struct leaf *l = coro_frame_alloc(coro_sched_current(), sizeof *l);
        if (!l)
            CORO_RETURN(co, -ENOMEM);
        c->rc = coro_spawn(coro_sched_current(), &l->co, leaf_fn, NULL);
        /* refused: still the caller's, so coro_frame_free takes it back
         * (it ignores a spawned frame); the same block comes out next */
        coro_frame_free(l);
        c->freed = coro_frame_alloc(coro_sched_current(), sizeof *l) == (void *)l;
        coro_frame_free(l);
    }
    CORO_END(co);
}

struct shut_arg {
    coro_sched_t *s;
    int rc;
};

static void *shut_main(void *arg)
{
    struct shut_arg *a = arg;
    a->rc = coro_sched_shutdown(a->s, CORO_DRAIN);
    return NULL;
}

Test(spawn_fresh, a_fresh_frame_spawned_after_the_close_is_refused_and_stays_the_callers,
     .timeout = 20)
{
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t go;
        cr_assert_eq(coro_event_init(&go), 0);
        struct closer c = { .go = &go };
        runs = 0;
        cr_assert_eq(coro_spawn(s, &c.co, closer_fn, NULL), 0);
        wait_suspended(&c.co);
        cr_assert_eq(c.rc, 0, "the first spawn: %d", c.rc);
        struct shut_arg a = { .s = s };
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, shut_main, &a), 0);
        /* the close is in (white-box: the flag coro_spawn reads) before
         * the job goes on; the event's wake orders it for the job */
        int64_t end = coro_now() + 20000000000LL;
        while (!__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
            cr_assert_lt(coro_now(), end, "shutdown never closed");
            sched_yield();
        }
        coro_event_set(&go);
        pthread_join(th, NULL);
        cr_assert_eq(a.rc, 0);
        cr_assert_eq(c.rc, -ESHUTDOWN, "workers %d: %d", counts[k], c.rc);
        cr_assert(c.freed, "workers %d: the refused frame was not the caller's", counts[k]);
        cr_assert_eq(runs, 1, "workers %d: %ld", counts[k], runs);
        coro_event_destroy(&go);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a job and a plain thread spawn one fresh frame at once ---------------- */

#define RACES 2000

struct race {
    coro_t co;
    struct leaf *slot;      /* atomic: the frame offered to the thread */
    int done;               /* atomic: the thread's spawn returned */
    int thread_rc;
    long wins, busy, bad;
    int bad_rc, bad_trc;
};

static int racer_fn(coro_t *co)
{
    struct race *r = CORO_SELF(co, struct race);
    CORO_BEGIN(co);
    for (int i = 0; i < RACES; i++) {
        struct leaf *l = coro_frame_alloc(coro_sched_current(), sizeof *l);
        if (!l) {
            r->bad++;
            break;
        }
        __atomic_store_n(&r->done, 0, __ATOMIC_RELAXED);
        /* release: the frame's zeroing before the thread's spawn */
        __atomic_store_n(&r->slot, l, __ATOMIC_RELEASE);
        int rc = coro_spawn(coro_sched_current(), &l->co, leaf_fn, NULL);
        /* the thread's spawn returns before the frame may be given back
         * and handed out again (acquire: its result) */
        while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
            sched_yield();
        int trc = r->thread_rc;
        if ((rc == 0 && trc == -EBUSY) || (rc == -EBUSY && trc == 0)) {
            r->wins += rc == 0;
            r->busy += rc == -EBUSY;
        } else if (!r->bad++) {
            r->bad_rc = rc;
            r->bad_trc = trc;
        }
    }
    __atomic_store_n(&r->slot, (struct leaf *)(uintptr_t)1, __ATOMIC_RELEASE);
    CORO_END(co);
}

struct race_thread {
    coro_sched_t *s;
    struct race *r;
};

static void *race_main(void *arg)
{
    struct race_thread *t = arg;
    for (;;) {
        struct leaf *l;
        /* acquire: the frame as the job left it */
        while (!(l = __atomic_load_n(&t->r->slot, __ATOMIC_ACQUIRE)))
            sched_yield();
        if (l == (struct leaf *)(uintptr_t)1)
            return NULL;
        __atomic_store_n(&t->r->slot, NULL, __ATOMIC_RELAXED);
        t->r->thread_rc = coro_spawn(t->s, &l->co, leaf_fn, NULL);
        /* release: thread_rc before done */
        __atomic_store_n(&t->r->done, 1, __ATOMIC_RELEASE);
    }
}

Test(spawn_fresh, a_fresh_frame_spawned_by_its_job_and_a_plain_thread_at_once_runs_once,
     .timeout = 30)
{
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        struct race r = { 0 };
        struct race_thread t = { s, &r };
        pthread_t th;
        runs = 0;
        cr_assert_eq(pthread_create(&th, NULL, race_main, &t), 0);
        intptr_t res;
        cr_assert_eq(coro_block_on(s, &r.co, racer_fn, NULL, &res), 0);
        pthread_join(th, NULL);
        fin(s);
        cr_assert_eq(r.bad, 0, "workers %d: %ld races with no single winner (first: the job "
                     "got %d, the thread %d)", counts[k], r.bad, r.bad_rc, r.bad_trc);
        cr_assert_eq(r.wins + r.busy, RACES);
        cr_assert_eq(runs, RACES, "workers %d: %ld bodies ran for %d frames", counts[k], runs,
                     RACES);
    }
}
