/* SPDX-License-Identifier: MIT */
/* coro_group_cancel reaches a member whose coro_blocking call is still
 * queued for a pool thread: the call ends -ECANCELED at once and its
 * function never runs, as coro_cancel of that one job does - it does not
 * wait for the pool thread ahead of it to come free. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hold_go;         /* the first call returns once this is set */
static int hold_started;
static int queued_ran;      /* the queued call's function ran */

static intptr_t hold(void *arg)
{
    (void)arg;
    __atomic_store_n(&hold_started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&hold_go, __ATOMIC_ACQUIRE))
        sched_yield();
    return 7;
}

static intptr_t queued(void *arg)
{
    (void)arg;
    __atomic_store_n(&queued_ran, 1, __ATOMIC_RELEASE);
    return 1;
}

struct caller {
    coro_t co;
    intptr_t (*fn)(void *);
};

static int caller_body(coro_t *co)
{
    struct caller *c = CORO_SELF(co, struct caller);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(c->fn, NULL));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* whether s's dump shows a blocking call queued for a pool thread: the
 * member is then on the pool's FIFO, not about to await */
static bool dump_shows_queued(coro_sched_t *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_geq(coro_sched_dump(s, f), 0);
    fclose(f);
    bool yes = strstr(buf, "queued for a pool thread") != NULL;
    free(buf);
    return yes;
}

Test(sched_group_cancel_pool, a_member_queued_for_the_pool_ends_cancelled_without_waiting, .timeout = 20)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    coro_group_t g;
    struct caller busy = { .fn = hold }, member = { .fn = queued };
    intptr_t r = 0;

    hold_go = hold_started = queued_ran = 0;
    c.workers = 1;
    c.blocking_threads = 1;     /* the member queues behind busy's call */
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_group_init(&g), 0);
    cr_assert_eq(coro_spawn(s, &busy.co, caller_body, NULL), 0);
    while (!__atomic_load_n(&hold_started, __ATOMIC_ACQUIRE))
        sched_yield();
    cr_assert_eq(coro_spawn(s, &member.co, caller_body, &(coro_spawn_opts_t){ .group = &g }), 0);
    while (!dump_shows_queued(s))
        sched_yield();

    cr_assert_eq(coro_group_cancel(&g), 1);
    /* the pool's only thread is still inside hold: the member can end
     * only if the cancel took its call off the FIFO */
    cr_assert_eq(coro_join_timeout(&member.co, &r, 5000000000LL), 0,
                 "the queued member did not end while the pool thread was busy");
    cr_assert_eq(r, -ECANCELED);
    cr_assert_not(__atomic_load_n(&queued_ran, __ATOMIC_ACQUIRE), "a cancelled call never runs");

    __atomic_store_n(&hold_go, 1, __ATOMIC_RELEASE);
    cr_assert_eq(join_r(&busy.co), 7);
    cr_assert_eq(coro_group_destroy(&g), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
