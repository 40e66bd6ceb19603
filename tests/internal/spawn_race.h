/* SPDX-License-Identifier: MIT */
/* What the tests of coro_spawn's short paths share (test_spawn_fresh.c:
 * a fresh pool frame; test_fib_path.c: a caller's frame with an on_exit
 * hook): the close that a job's next spawn must meet, and a job and a
 * plain thread spawning one frame at once, SPAWN_RACES times.  Each test
 * keeps its own frames, bodies and assertions. */
#ifndef COROKIT_TESTS_SPAWN_RACE_H
#define COROKIT_TESTS_SPAWN_RACE_H

#include <pthread.h>

#include "white_box.h"

#define SPAWN_RACES 2000

/* ---- the close --------------------------------------------------------------- */

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

/* a job of s waits on go: close s (a drain, from another thread, which
 * waits for that job), and set go only once the close is in (white-box:
 * the flag coro_spawn reads; the event's wake orders it for the job) */
static inline void close_then_set(coro_sched_t *s, coro_event_t *go)
{
    struct shut_arg a = { .s = s };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, shut_main, &a), 0);
    int64_t end = coro_now() + 20000000000LL;
    while (!__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE)) {
        cr_assert_lt(coro_now(), end, "shutdown never closed");
        sched_yield();
    }
    coro_event_set(go);
    pthread_join(th, NULL);
    cr_assert_eq(a.rc, 0);
}

/* ---- a job and a plain thread spawn one frame at once --------------------------- */

struct spawn_race {
    coro_t co;
    coro_fn fn;                         /* the raced frames' body */
    const coro_spawn_opts_t *opts;      /* both spawns' options */
    coro_t *(*frame)(struct spawn_race *r, int i);  /* race i's zeroed frame; NULL: none */
    void (*after)(struct spawn_race *r);            /* on the job, after the races, or NULL */
    coro_t *slot;                       /* atomic: the frame offered to the thread */
    int done;                           /* atomic: the thread's spawn returned */
    int thread_rc;
    long wins, busy, bad;
    int bad_rc, bad_trc;                /* the first race with no single winner */
};

static int spawn_racer_fn(coro_t *co)
{
    struct spawn_race *r = CORO_SELF(co, struct spawn_race);
    CORO_BEGIN(co);
    for (int i = 0; i < SPAWN_RACES; i++) {
        coro_t *f = r->frame(r, i);
        if (!f) {
            r->bad++;
            break;
        }
        __atomic_store_n(&r->done, 0, __ATOMIC_RELAXED);
        /* release: the frame's zeroing before the thread's spawn */
        __atomic_store_n(&r->slot, f, __ATOMIC_RELEASE);
        int rc = coro_spawn(coro_sched_current(), f, r->fn, r->opts);
        /* the thread's spawn returns before the frame may end and be
         * spawned or handed out again (acquire: its result) */
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
    /* release: the thread's last look */
    __atomic_store_n(&r->slot, (coro_t *)(uintptr_t)1, __ATOMIC_RELEASE);
    if (r->after)
        r->after(r);
    CORO_END(co);
}

struct spawn_race_thread {
    coro_sched_t *s;
    struct spawn_race *r;
};

static void *spawn_race_main(void *arg)
{
    struct spawn_race_thread *t = arg;
    for (;;) {
        coro_t *f;
        /* acquire: the frame as the job left it */
        while (!(f = __atomic_load_n(&t->r->slot, __ATOMIC_ACQUIRE)))
            sched_yield();
        if (f == (coro_t *)(uintptr_t)1)
            return NULL;
        __atomic_store_n(&t->r->slot, NULL, __ATOMIC_RELAXED);
        t->r->thread_rc = coro_spawn(t->s, f, t->r->fn, t->r->opts);
        /* release: thread_rc before done */
        __atomic_store_n(&t->r->done, 1, __ATOMIC_RELEASE);
    }
}

/* runs r's races on s (a job of s against a plain thread), to their end */
static inline void spawn_race_run(coro_sched_t *s, struct spawn_race *r)
{
    struct spawn_race_thread t = { s, r };
    pthread_t th;
    intptr_t res;
    cr_assert_eq(pthread_create(&th, NULL, spawn_race_main, &t), 0);
    cr_assert_eq(coro_block_on(s, &r->co, spawn_racer_fn, NULL, &res), 0);
    pthread_join(th, NULL);
}

#endif
