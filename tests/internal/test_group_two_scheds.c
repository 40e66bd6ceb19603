/* SPDX-License-Identifier: MIT */
/* A group whose members run on two schedulers, as coro_group_init(3) and
 * coro_cancel(3) say: coro_group_wait (a job's, on either scheduler) and
 * coro_group_wait_blocking end once the members of both have finished;
 * coro_group_cancel reaches the members of both; coro_cancel of a job
 * that waits in coro_group_wait ends that wait at once. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "white_box.h"


struct member { coro_t co; coro_event_t *ev; intptr_t r; };

static int member_body(coro_t *co)
{
    struct member *m = CORO_SELF(co, struct member);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(m->ev, CORO_FOREVER));
    m->r = CORO_RESULT(co);
    CORO_END(co);
}

struct gwaiter { coro_t co; coro_group_t *g; intptr_t r; int started; };

static int gwait_body(coro_t *co)
{
    struct gwaiter *w = CORO_SELF(co, struct gwaiter);
    CORO_BEGIN(co);
    __atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
    CORO_AWAIT(co, coro_group_wait(w->g, CORO_FOREVER));
    w->r = CORO_RESULT(co);
    CORO_END(co);
}

/* bounded: until both members wait on their event (the group wait would
 * see them anyway: they are members from their spawn) */
static void settle(struct gwaiter *a, struct gwaiter *b)
{
    int64_t end = coro_now() + 20000000000LL;
    while (!__atomic_load_n(&a->started, __ATOMIC_ACQUIRE) ||
           !__atomic_load_n(&b->started, __ATOMIC_ACQUIRE)) {
        cr_assert_lt(coro_now(), end);
        sched_yield();
    }
}

Test(group_two_scheds, waits_end_when_the_members_of_both_schedulers_finish, .timeout = 30)
{
    coro_sched_t *s1 = mk(1), *s2 = mk(2);
    coro_group_t g;
    coro_event_t ev1, ev2;
    struct member m1 = { .ev = &ev1, .r = 1 }, m2 = { .ev = &ev2, .r = 1 };
    struct gwaiter w1 = { .g = &g, .r = 1 }, w2 = { .g = &g, .r = 1 };
    coro_spawn_opts_t o = { .group = &g };

    coro_group_init(&g);
    coro_event_init(&ev1);
    coro_event_init(&ev2);
    cr_assert_eq(coro_spawn(s1, &m1.co, member_body, &o), 0);
    cr_assert_eq(coro_spawn(s2, &m2.co, member_body, &o), 0);
    cr_assert_eq(coro_spawn(s1, &w1.co, gwait_body, NULL), 0);
    cr_assert_eq(coro_spawn(s2, &w2.co, gwait_body, NULL), 0);
    settle(&w1, &w2);
    cr_assert_eq(coro_group_wait_blocking(&g, 1000000), -ETIMEDOUT);
    coro_event_set(&ev1);                           /* s1's member ends */
    cr_assert_eq(join_r(&m1.co), 0);
    cr_assert_eq(coro_group_wait_blocking(&g, 1000000), -ETIMEDOUT, "s2's member is live");
    coro_event_set(&ev2);
    cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
    join_r(&w1.co);
    join_r(&w2.co);
    cr_assert_eq(w1.r, 0);
    cr_assert_eq(w2.r, 0);
    cr_assert_eq(m2.r, 0);
    cr_assert_eq(coro_group_destroy(&g), 0);
    cr_assert_eq(coro_sched_destroy(s1), 0);
    cr_assert_eq(coro_sched_destroy(s2), 0);
}

Test(group_two_scheds, group_cancel_reaches_the_members_of_both_schedulers, .timeout = 30)
{
    static const int w2s[] = { 0, 2 };
    for (size_t k = 0; k < 2; k++) {
        coro_sched_t *s1 = mk(1), *s2 = mk(w2s[k]);
        coro_group_t g;
        coro_event_t ev;
        struct member m1 = { .ev = &ev, .r = 1 }, m2 = { .ev = &ev, .r = 1 };
        coro_spawn_opts_t o = { .group = &g };

        coro_group_init(&g);
        coro_event_init(&ev);
        cr_assert_eq(coro_spawn(s1, &m1.co, member_body, &o), 0);
        cr_assert_eq(coro_spawn(s2, &m2.co, member_body, &o), 0);
        if (w2s[k] == 0)
            coro_sched_run(s2);     /* m2 reaches its wait */
        cr_assert_geq(coro_group_cancel(&g), 0);
        if (w2s[k])     /* a single-threaded s2 runs m2 in the join below */
            cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
        join_r(&m1.co);
        join_r(&m2.co);          /* single-threaded s2: runs it here */
        cr_assert_eq(m1.r, -ECANCELED);
        cr_assert_eq(m2.r, -ECANCELED);
        cr_assert_eq(coro_group_wait_blocking(&g, 0), 0);
        cr_assert_eq(coro_group_destroy(&g), 0);
        cr_assert_eq(coro_sched_destroy(s1), 0);
        cr_assert_eq(coro_sched_destroy(s2), 0);
    }
}

Test(group_two_scheds, coro_cancel_ends_a_group_wait_at_once, .timeout = 30)
{
    coro_sched_t *s1 = mk(1), *s2 = mk(1);
    coro_group_t g;
    coro_event_t ev;
    struct member m = { .ev = &ev, .r = 1 };
    struct gwaiter w = { .g = &g, .r = 1 };
    coro_spawn_opts_t o = { .group = &g };

    coro_group_init(&g);
    coro_event_init(&ev);
    cr_assert_eq(coro_spawn(s2, &m.co, member_body, &o), 0);
    cr_assert_eq(coro_spawn(s1, &w.co, gwait_body, NULL), 0);
    wait_suspended(&w.co);      /* in the group wait */
    cr_assert_eq(coro_cancel(&w.co), 0);
    cr_assert_eq(join_r(&w.co), 0);
    cr_assert_eq(w.r, -ECANCELED, "the group wait ended: %ld", (long)w.r);
    cr_assert_eq(coro_group_wait_blocking(&g, 0), -ETIMEDOUT, "the member still lives");
    coro_event_set(&ev);
    cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
    cr_assert_eq(coro_group_destroy(&g), 0);
    cr_assert_eq(coro_sched_destroy(s1), 0);
    cr_assert_eq(coro_sched_destroy(s2), 0);
}
