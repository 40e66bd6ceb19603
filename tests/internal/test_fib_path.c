/* SPDX-License-Identifier: MIT */
/* A fork's children as fib spawns them: caller-owned frames with an
 * on_exit hook and no other option, spawned from a job (SPAWNING WITH A
 * HOOK, lib/rt/spawn.c).  That path keeps coro_spawn's promises: a second
 * spawn of a live frame gets -EBUSY and its hook runs once; a finished
 * frame spawned again from its awaiter runs again, its hook once per
 * life; a spawn after the close gets -ESHUTDOWN and never runs the hook;
 * of a job and a plain thread that spawn one frame at once exactly one
 * wins.  0, 1 and 2 workers where the shape allows (with 0 the driver
 * takes spawn_'s path).  The awaits of those children (JOINING INLINE,
 * lib/sched/run.c) are held by tests/internal/test_fork.c. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "spawn_race.h"

static const int counts[] = { 0, 1, 2 };
#define NCOUNTS 3

static long runs;       /* bodies run (atomic) */
static long exits;      /* hooks run (atomic) */

struct kid {
    coro_t co;
    intptr_t v;
};

static int kid_fn(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED);
    CORO_RETURN(co, CORO_SELF(co, struct kid)->v);
    CORO_END(co);
}

static void kid_exit(coro_t *co)
{
    (void)co;
    __atomic_add_fetch(&exits, 1, __ATOMIC_RELAXED);
}

static const coro_spawn_opts_t hook = { .on_exit = kid_exit };

/* bounded wait for n hooks (the last may still run on a worker) */
static void wait_exits(long n)
{
    int64_t end = coro_now() + 20000000000LL;
    while (__atomic_load_n(&exits, __ATOMIC_ACQUIRE) < n) {
        cr_assert_lt(coro_now(), end, "%ld of %ld hooks ran", exits, n);
        sched_yield();
    }
}

/* ---- two spawns of one hooked frame, then spawns of it again --------------- */

struct twice {
    coro_t co;
    struct kid k;
    int first, second, again;
    intptr_t sum;
};

static int twice_fn(coro_t *co)
{
    struct twice *t = CORO_SELF(co, struct twice);
    CORO_BEGIN(co);
    t->k.v = 1;
    t->first = coro_spawn(coro_sched_current(), &t->k.co, kid_fn, &hook);
    t->second = coro_spawn(coro_sched_current(), &t->k.co, kid_fn, &hook);
    CORO_AWAIT(co, coro_done(&t->k.co));
    t->sum = CORO_RESULT(co);
    /* finished (its finisher may still hold it while its hook runs on
     * another worker: then the spawn waits for it): a new life */
    t->k.v = 2;
    t->again = coro_spawn(coro_sched_current(), &t->k.co, kid_fn, &hook);
    if (t->again == 0) {
        CORO_AWAIT(co, coro_done(&t->k.co));
        t->sum += CORO_RESULT(co);
    }
    CORO_END(co);
}

Test(fib_path, a_hooked_frame_spawned_twice_runs_once_and_again_after_its_end, .timeout = 20)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        runs = exits = 0;
        for (long i = 0; i < 200; i++) {
            struct twice t = { 0 };
            intptr_t res;
            cr_assert_eq(coro_block_on(s, &t.co, twice_fn, NULL, &res), 0);
            cr_assert_eq(t.first, 0, "workers %d: %d", counts[k], t.first);
            cr_assert_eq(t.second, -EBUSY, "workers %d: %d", counts[k], t.second);
            cr_assert_eq(t.again, 0, "workers %d: %d", counts[k], t.again);
            cr_assert_eq(t.sum, 3, "workers %d: results %ld", counts[k], (long)t.sum);
            /* the frame is on this stack: its second life's hook is over
             * before the next round reuses it */
            wait_exits(2 * (i + 1));
        }
        fin(s);
        cr_assert_eq(runs, 400, "workers %d: %ld bodies for 400 lives", counts[k], runs);
        cr_assert_eq(exits, 400, "workers %d: %ld hooks for 400 lives", counts[k], exits);
    }
}

/* ---- a hooked spawn from a job after the close ------------------------------ */

struct closer {
    coro_t co;
    coro_event_t *go;
    struct kid a, b;
    int rc;
};

static int closer_fn(coro_t *co)
{
    struct closer *c = CORO_SELF(co, struct closer);
    CORO_BEGIN(co);
    /* a spawn first, so that this worker holds spare units of the count */
    c->rc = coro_spawn(coro_sched_current(), &c->a.co, kid_fn, &hook);
    if (c->rc != 0)
        CORO_RETURN(co, c->rc);
    CORO_AWAIT(co, coro_event_wait(c->go, CORO_FOREVER));
    c->rc = coro_spawn(coro_sched_current(), &c->b.co, kid_fn, &hook);
    CORO_END(co);
}


Test(fib_path, a_hooked_spawn_after_the_close_is_refused_and_runs_no_hook, .timeout = 20)
{
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t go;
        cr_assert_eq(coro_event_init(&go), 0);
        struct closer c = { .go = &go };
        runs = exits = 0;
        cr_assert_eq(coro_spawn(s, &c.co, closer_fn, NULL), 0);
        wait_suspended(&c.co);
        cr_assert_eq(c.rc, 0, "the first spawn: %d", c.rc);
        close_then_set(s, &go);
        cr_assert_eq(c.rc, -ESHUTDOWN, "workers %d: %d", counts[k], c.rc);
        cr_assert_eq(runs, 1, "workers %d: %ld bodies", counts[k], runs);
        cr_assert_eq(exits, 1, "workers %d: %ld hooks", counts[k], exits);
        coro_event_destroy(&go);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a job and a plain thread spawn one hooked frame at once ------------------ */

/* a raced frame's body stays until the races are over, so that no frame
 * finishes (and may rightly be spawned again) before both spawns looked */
static coro_event_t gate;

static int gated_fn(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED);
    CORO_AWAIT(co, coro_event_wait(&gate, CORO_FOREVER));
    CORO_END(co);
}

/* race i's frame: the i-th of the caller's zeroed frames */
static struct kid *race_frames;

static coro_t *kid_frame(struct spawn_race *r, int i)
{
    (void)r;
    return &race_frames[i].co;
}

/* the races are over: the raced bodies may end */
static void open_gate(struct spawn_race *r)
{
    (void)r;
    coro_event_set(&gate);
}

Test(fib_path, a_hooked_frame_spawned_by_a_job_and_a_plain_thread_at_once_runs_once,
     .timeout = 30)
{
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        struct spawn_race r = { .fn = gated_fn, .opts = &hook, .frame = kid_frame,
                                .after = open_gate };
        race_frames = calloc(SPAWN_RACES, sizeof *race_frames);
        cr_assert_not_null(race_frames);
        runs = exits = 0;
        cr_assert_eq(coro_event_init(&gate), 0);
        spawn_race_run(s, &r);
        fin(s);
        cr_assert_eq(r.bad, 0, "workers %d: %ld races with no single winner (first: the job "
                     "got %d, the thread %d)", counts[k], r.bad, r.bad_rc, r.bad_trc);
        cr_assert_eq(r.wins + r.busy, SPAWN_RACES);
        cr_assert_eq(runs, SPAWN_RACES, "workers %d: %ld bodies ran for %d frames", counts[k],
                     runs, SPAWN_RACES);
        cr_assert_eq(exits, SPAWN_RACES, "workers %d: %ld hooks for %d frames", counts[k], exits,
                     SPAWN_RACES);
        coro_event_destroy(&gate);
        free(race_frames);
    }
}
