/* SPDX-License-Identifier: MIT */
/* A worker's spawn of the pool frame it has just allocated (SPAWNING A
 * FRESH FRAME, lib/rt/spawn.c) and the plain finish (FINISHING A PLAIN
 * JOB, lib/rt/finish.c) keep coro_spawn's promises: a second spawn of a
 * live frame gets -EBUSY, a spawn after the close -ESHUTDOWN with the frame
 * left to its caller, and of a job and a plain thread that spawn the same
 * fresh frame at once exactly one wins and the job runs once.  0, 1 and 2
 * workers (with 0 the driver takes the general paths). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "spawn_race.h"

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
        close_then_set(s, &go);
        cr_assert_eq(c.rc, -ESHUTDOWN, "workers %d: %d", counts[k], c.rc);
        cr_assert(c.freed, "workers %d: the refused frame was not the caller's", counts[k]);
        cr_assert_eq(runs, 1, "workers %d: %ld", counts[k], runs);
        coro_event_destroy(&go);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a job and a plain thread spawn one fresh frame at once ---------------- */

/* race i's frame: a fresh pool frame of the job's worker */
static coro_t *fresh_frame(struct spawn_race *r, int i)
{
    (void)r, (void)i;
    struct leaf *l = coro_frame_alloc(coro_sched_current(), sizeof *l);
    return l ? &l->co : NULL;
}

Test(spawn_fresh, a_fresh_frame_spawned_by_its_job_and_a_plain_thread_at_once_runs_once,
     .timeout = 30)
{
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        struct spawn_race r = { .fn = leaf_fn, .frame = fresh_frame };
        runs = 0;
        spawn_race_run(s, &r);
        fin(s);
        cr_assert_eq(r.bad, 0, "workers %d: %ld races with no single winner (first: the job "
                     "got %d, the thread %d)", counts[k], r.bad, r.bad_rc, r.bad_trc);
        cr_assert_eq(r.wins + r.busy, SPAWN_RACES);
        cr_assert_eq(runs, SPAWN_RACES, "workers %d: %ld bodies ran for %d frames", counts[k],
                     runs, SPAWN_RACES);
    }
}
