/* SPDX-License-Identifier: MIT */
/* coro_cancel of a pool frame (coro_frame_alloc): the library gives the
 * frame back when its job finishes and nobody holds it, so a holder's
 * cancel races the finish.  A cancel whose look at the state word the
 * finish and the give-back overtook writes nothing into the free block
 * (coro__cancel_seen replays that look); a cancel of a live pool job holds
 * the frame only for the call, and the frame still goes back once the job
 * ends.  0, 1 and 2 workers. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "rt/rt.h"
#include "sched/frame.h"    /* coro__frames_held */
#include "white_box.h"

struct pjob {
    coro_t co;
    coro_event_t *ev;       /* NULL: return at once */
};

static int pjob_fn(coro_t *co)
{
    struct pjob *p = CORO_SELF(co, struct pjob);
    CORO_BEGIN(co);
    if (p->ev) {
        CORO_AWAIT(co, coro_event_wait(p->ev, CORO_FOREVER));
        CORO_RETURN(co, CORO_RESULT(co));       /* 0, or -ECANCELED */
    }
    CORO_RETURN(co, coro_cancelled() ? -ECANCELED : 7);
    CORO_END(co);
}

static uint32_t state_of(coro_t *co)
{
    /* acquire: the word as the last RMW on it left it */
    return __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
}

/* until a thread is registered as a joiner of co (bounded: 20 s) */
static void wait_thread_joiner(coro_t *co)
{
    int64_t end = coro_now() + 20000000000LL;
    while (!(state_of(co) & CORO__F_THREAD_JOIN)) {
        cr_assert_lt(coro_now(), end, "the joiner never registered");
        sched_yield();
    }
}

/* spawn a pool frame's job and give the frame back at a known point: with
 * workers, a thread joins it while it waits on an event (registered, the
 * joiner is the last to let go and gives the frame back before coro_join
 * returns); without, the job returns at once and coro_sched_run's finish
 * gives it back.  Returns the frame's state word as a holder read it
 * while the job was live. */
static uint32_t finish_and_give_back(coro_sched_t *s, int workers, struct pjob **out)
{
    struct pjob *p = coro_frame_alloc(s, sizeof *p);
    cr_assert_not_null(p);
    *out = p;
    if (workers == 0) {
        p->ev = NULL;
        cr_assert_eq(coro_spawn(s, &p->co, pjob_fn, NULL), 0);
        uint32_t seen = state_of(&p->co);
        cr_assert_geq(coro_sched_run(s), 1);
        return seen;
    }
    coro_event_t ev;
    cr_assert_eq(coro_event_init(&ev), 0);
    p->ev = &ev;
    cr_assert_eq(coro_spawn(s, &p->co, pjob_fn, NULL), 0);
    wait_suspended(&p->co);
    uint32_t seen = state_of(&p->co);
    struct joiner j;
    join_start(&j, &p->co);
    wait_thread_joiner(&p->co);
    cr_assert_geq(coro_event_set(&ev), 0);
    cr_assert_eq(join_end(&j), 0);
    cr_assert_eq(coro_event_destroy(&ev), 0);
    return seen;
}

Test(cancel_pool, a_look_overtaken_by_the_give_back_writes_nothing_into_the_free_block,
     .timeout = 20)
{
    static const int counts[] = { 0, 1, 2 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        coro_sched_t *s = mk(counts[k]);
        struct pjob *p;
        uint32_t seen = finish_and_give_back(s, counts[k], &p);
        cr_assert_neq(seen & CORO__S_MASK, CORO__S_DONE);
        cr_assert(seen & CORO__F_POOL);
        /* the block is free now; its state word is the finished job's */
        uint32_t freed = state_of(&p->co);
        cr_assert_eq(freed & CORO__S_MASK, CORO__S_DONE, "%d workers", counts[k]);
        /* the holder's cancel, its look made while the job was live */
        cr_assert_eq(coro__cancel_seen(&p->co, seen), 0);
        cr_assert_eq(state_of(&p->co), freed,
                     "%d workers: the cancel wrote %#x into a given-back frame (was %#x)",
                     counts[k], state_of(&p->co), freed);
        /* the pool still hands out working frames */
        struct pjob *q = coro_frame_alloc(s, sizeof *q);
        cr_assert_not_null(q);
        q->ev = NULL;
        cr_assert_eq(coro_spawn(s, &q->co, pjob_fn, NULL), 0);
        cr_assert_eq(join_r(&q->co), 7);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        coro_sched_destroy(s);
    }
}

Test(cancel_pool, cancel_of_a_live_pool_job_holds_the_frame_only_for_the_call, .timeout = 20)
{
    static const int counts[] = { 0, 1, 2 };
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t ev;
        cr_assert_eq(coro_event_init(&ev), 0);
        size_t held = 0;
        for (int r = 0; r < 4; r++) {
            struct pjob *p = coro_frame_alloc(s, sizeof *p);
            cr_assert_not_null(p);
            p->ev = &ev;
            cr_assert_eq(coro_spawn(s, &p->co, pjob_fn, NULL), 0);
            if (counts[k] == 0)
                cr_assert_geq(coro_sched_run(s), 1);    /* runs up to its wait */
            wait_suspended(&p->co);
            struct joiner j;
            join_start(&j, &p->co);
            wait_thread_joiner(&p->co);
            cr_assert_eq(coro_cancel(&p->co), 0);
            /* the call's unit is gone again: at most the joiner's is left
             * (none once the joiner ran the job and left) */
            uint32_t st = state_of(&p->co);
            cr_assert_leq(st & CORO__JOINERS_MASK, CORO__JOINER_ONE, "%#x", st);
            cr_assert_eq(join_end(&j), -ECANCELED, "%d workers", counts[k]);
            if (r == 0)
                held = coro__frames_held(s);
            else if (counts[k] < 2)     /* one pool: its count is exact */
                cr_assert_eq(coro__frames_held(s), held, "%d workers, round %d", counts[k], r);
        }
        cr_assert_eq(coro_event_destroy(&ev), 0);
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        coro_sched_destroy(s);
    }
}
