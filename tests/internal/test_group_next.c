/* SPDX-License-Identifier: MIT */
/* coro_group_next (coro_group_init_collect(3)): a collecting group gives
 * each finished member once, in finishing order, members that finished
 * before anyone asked included; a timeout, the cancel of the awaiting
 * job, a plain thread's blocking form, 0, 1 and 2 workers, every error;
 * records of members nobody collected are freed by coro_group_destroy
 * (counted through the scheduler's allocator) and pool frames go back to
 * the library (`make check-asan` checks their use). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "white_box.h"

#define MS 1000000LL

/* a member: waits for its event (NULL: none), then returns r */
struct member { coro_t co; coro_event_t *ev; intptr_t r; };

static int member_body(coro_t *co)
{
    struct member *m = CORO_SELF(co, struct member);
    CORO_BEGIN(co);
    if (m->ev)
        CORO_AWAIT(co, coro_event_wait(m->ev, CORO_FOREVER));
    CORO_RETURN(co, m->r);
    CORO_END(co);
}

static coro_t *spawn_member(coro_sched_t *s, coro_group_t *g, struct member *m,
                            coro_event_t *ev, intptr_t r)
{
    coro_spawn_opts_t o = { .group = g };
    memset(m, 0, sizeof *m);        /* a frame never spawned */
    m->ev = ev;
    m->r = r;
    cr_assert_eq(coro_spawn(s, &m->co, member_body, &o), 0);
    return &m->co;
}

Test(group_next, a_member_that_finished_before_the_first_call_is_given, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    coro_group_t g;
    struct member m;
    coro_t *co = NULL;
    intptr_t r = 0;

    cr_assert_eq(coro_group_init_collect(&g), 0);
    spawn_member(s, &g, &m, NULL, 7);
    cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
    cr_assert_eq(coro_group_next_blocking(&g, &co, &r, 0), 0);
    cr_assert_eq(co, &m.co);
    cr_assert_eq(r, 7);
    cr_assert_eq(coro_group_next_blocking(&g, &co, &r, CORO_FOREVER), -ENOENT,
                 "given once: nothing is left");
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

Test(group_next, members_are_given_in_finishing_order, .timeout = 10)
{
    coro_sched_t *s = mk(2);
    coro_group_t g;
    struct member m[3];
    coro_event_t ev[3];
    static const int order[3] = { 2, 0, 1 };

    cr_assert_eq(coro_group_init_collect(&g), 0);
    for (int i = 0; i < 3; i++) {
        coro_event_init(&ev[i]);
        spawn_member(s, &g, &m[i], &ev[i], 10 + i);
    }
    for (int i = 0; i < 3; i++) {
        coro_event_set(&ev[order[i]]);
        cr_assert_eq(join_r(&m[order[i]].co), 10 + order[i]);
    }
    for (int i = 0; i < 3; i++) {
        coro_t *co = NULL;
        intptr_t r = -1;
        cr_assert_eq(coro_group_next_blocking(&g, &co, &r, CORO_FOREVER), 0);
        cr_assert_eq(co, &m[order[i]].co);
        cr_assert_eq(r, 10 + order[i]);
    }
    cr_assert_eq(coro_group_next_blocking(&g, &(coro_t *){ NULL }, NULL, 0), -ENOENT);
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

Test(group_next, a_timeout_then_the_member, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    coro_group_t g;
    struct member m;
    coro_event_t ev;
    coro_t *co = NULL;

    cr_assert_eq(coro_group_init_collect(&g), 0);
    coro_event_init(&ev);
    spawn_member(s, &g, &m, &ev, 3);
    cr_assert_eq(coro_group_next_blocking(&g, &co, NULL, 0), -ETIMEDOUT, "just look");
    cr_assert_eq(coro_group_next_blocking(&g, &co, NULL, 2 * MS), -ETIMEDOUT);
    cr_assert_null(co, "nothing written on a timeout");
    coro_event_set(&ev);
    cr_assert_eq(coro_group_next_blocking(&g, &co, NULL, CORO_FOREVER), 0, "result may be NULL");
    cr_assert_eq(co, &m.co);
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

/* a job that collects: once (n = 1) or until -ENOENT (n = 0), with t */
struct collector {
    coro_t co;
    coro_group_t *g;
    int64_t t;
    int once, started, count;
    coro_t *last;
    intptr_t sum, r, rc;
};

static int collect_body(coro_t *co)
{
    struct collector *c = CORO_SELF(co, struct collector);
    CORO_BEGIN(co);
    __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
    for (;;) {
        CORO_AWAIT(co, coro_group_next(c->g, &c->last, &c->r, c->t));
        c->rc = CORO_RESULT(co);
        if (c->rc < 0)
            break;
        c->count++;
        c->sum += c->r;
        if (c->once)
            break;
    }
    CORO_END(co);
}

Test(group_next, cancel_of_the_awaiting_job_loses_no_member, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    coro_group_t g;
    struct member m;
    coro_event_t ev;
    struct collector c = { .g = &g, .t = CORO_FOREVER, .once = 1 };

    cr_assert_eq(coro_group_init_collect(&g), 0);
    coro_event_init(&ev);
    spawn_member(s, &g, &m, &ev, 5);
    cr_assert_eq(coro_spawn(s, &c.co, collect_body, NULL), 0);
    wait_suspended(&c.co);
    cr_assert_eq(coro_cancel(&c.co), 0);
    join_r(&c.co);
    cr_assert_eq(c.rc, -ECANCELED);
    cr_assert_eq(c.count, 0);
    coro_event_set(&ev);
    coro_t *co = NULL;
    intptr_t r = 0;
    cr_assert_eq(coro_group_next_blocking(&g, &co, &r, CORO_FOREVER), 0);
    cr_assert_eq(co, &m.co);
    cr_assert_eq(r, 5);
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

/* plain threads blocked in coro_group_next_blocking */
struct tnext { pthread_t t; coro_group_t *g; coro_t *co; intptr_t r; int rc, started; };

static void *tnext_main(void *arg)
{
    struct tnext *t = arg;
    __atomic_store_n(&t->started, 1, __ATOMIC_RELEASE);
    t->rc = coro_group_next_blocking(t->g, &t->co, &t->r, CORO_FOREVER);
    return NULL;
}

/* bounded: until a plain thread is linked on the group's next key (the
 * lot's, white-box) */
static void wait_linked(coro_group_t *g)
{
    int64_t end = coro_now() + 20000000000LL;
    for (;;) {
        coro__parklot_bucket_t *b = coro__parklot_lock(&g->done);
        bool linked = coro__parklot_waiting(b, &g->done);
        coro__parklot_unlock(b);
        if (linked)
            return;
        cr_assert_lt(coro_now(), end, "the thread never waited");
        sched_yield();
    }
}

Test(group_next, a_blocked_thread_is_woken_and_the_others_get_enoent, .timeout = 10)
{
    coro_sched_t *s = mk(2);
    coro_group_t g;
    struct member m;
    coro_event_t ev;
    struct tnext a = { .g = &g }, b = { .g = &g };

    cr_assert_eq(coro_group_init_collect(&g), 0);
    coro_event_init(&ev);
    spawn_member(s, &g, &m, &ev, 9);
    cr_assert_eq(pthread_create(&a.t, NULL, tnext_main, &a), 0);
    wait_linked(&g);
    cr_assert_eq(pthread_create(&b.t, NULL, tnext_main, &b), 0);
    /* b may or may not be linked yet: either way one thread gets the
     * member and the other -ENOENT (the group has nothing left) */
    coro_event_set(&ev);
    pthread_join(a.t, NULL);
    pthread_join(b.t, NULL);
    cr_assert_eq(a.rc, 0, "the oldest waiter gets the member");
    cr_assert_eq(a.co, &m.co);
    cr_assert_eq(a.r, 9);
    cr_assert_eq(b.rc, -ENOENT);
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

/* N members finish while a job collects; every one given once */
static void collect_all(int workers)
{
    enum { N = 64 };
    coro_sched_t *s = mk(workers);
    coro_group_t g;
    static struct member m[N];
    struct collector c = { .g = &g, .t = CORO_FOREVER };
    intptr_t res = 0, want = 0;

    cr_assert_eq(coro_group_init_collect(&g), 0);
    for (int i = 0; i < N; i++) {
        spawn_member(s, &g, &m[i], NULL, i + 1);
        want += i + 1;
    }
    cr_assert_eq(coro_block_on(s, &c.co, collect_body, NULL, &res), 0);
    cr_assert_eq(c.rc, -ENOENT);
    cr_assert_eq(c.count, N, "workers %d", workers);
    cr_assert_eq(c.sum, want);
    cr_assert_eq(coro_group_destroy(&g), 0);
    coro_sched_destroy(s);
}

Test(group_next, a_job_collects_every_member_once_with_0_workers, .timeout = 10)
{
    collect_all(0);
}

Test(group_next, a_job_collects_every_member_once_with_1_worker, .timeout = 10)
{
    collect_all(1);
}

Test(group_next, a_job_collects_every_member_once_with_2_workers, .timeout = 10)
{
    collect_all(2);
}

static int next_in_job_body(coro_t *co)
{
    struct collector *c = CORO_SELF(co, struct collector);
    CORO_BEGIN(co);
    c->rc = coro_group_next_blocking(c->g, &c->last, NULL, 0);
    CORO_END(co);
}

Test(group_next, every_error, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    coro_group_t g, plain;
    coro_t *co = NULL;
    intptr_t r = 0;

    cr_assert_eq(coro_group_init_collect(NULL), -EINVAL);
    cr_assert_eq(coro_group_init_collect(&g), 0);
    cr_assert_eq(coro_group_init(&plain), 0);
    cr_assert_eq(coro_group_next_blocking(NULL, &co, &r, 0), -EINVAL);
    cr_assert_eq(coro_group_next_blocking(&g, NULL, &r, 0), -EINVAL);
    cr_assert_eq(coro_group_next_blocking(&plain, &co, &r, 0), -EINVAL, "not collecting");
    cr_assert_eq(coro_group_next_blocking(&g, &co, &r, -2), -EINVAL);
    cr_assert_eq(coro_group_next_blocking(&g, &co, &r, CORO_FOREVER), -ENOENT, "empty");
    /* the awaitable's checks, as a job sees them */
    cr_assert_eq(coro_group_next(NULL, &co, &r, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_group_next(&plain, &co, &r, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_group_next(&g, NULL, &r, 0).arg[0].i, -EINVAL);
    cr_assert_eq(coro_group_next(&g, &co, &r, -2).arg[0].i, -EINVAL);
    /* the blocking form from a job */
    struct member m;
    coro_event_t ev;
    coro_event_init(&ev);
    spawn_member(s, &g, &m, &ev, 1);
    struct collector c = { .g = &g, .rc = 1 };
    cr_assert_eq(coro_spawn(s, &c.co, next_in_job_body, NULL), 0);
    join_r(&c.co);
    cr_assert_eq(c.rc, -EDEADLK);
    /* a job's timeout, and its 0 = just look */
    struct collector t = { .g = &g, .t = 2 * MS, .once = 1 };
    cr_assert_eq(coro_spawn(s, &t.co, collect_body, NULL), 0);
    join_r(&t.co);
    cr_assert_eq(t.rc, -ETIMEDOUT);
    struct collector t0 = { .g = &g, .t = 0, .once = 1 };
    cr_assert_eq(coro_spawn(s, &t0.co, collect_body, NULL), 0);
    join_r(&t0.co);
    cr_assert_eq(t0.rc, -ETIMEDOUT);
    cr_assert_eq(coro_group_destroy(&g), -EBUSY, "a live member");
    coro_event_set(&ev);
    cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
    cr_assert_eq(coro_group_destroy(&g), 0, "the uncollected member is dropped");
    cr_assert_eq(coro_group_destroy(&plain), 0);
    coro_sched_destroy(s);
}

/* pool frames: given back by the library; the records of members given
 * and of members nobody collected freed by coro_group_next and
 * coro_group_destroy: counted through the scheduler's allocator (ASan
 * cannot see a leak in Criterion's forked runs) */
static long live_allocs;

static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    __atomic_add_fetch(&live_allocs, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    __atomic_sub_fetch(&live_allocs, 1, __ATOMIC_RELAXED);
    free(p);
}

static const coro_alloc_t counting = { count_alloc, count_free, NULL };

static int pool_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 4);
    CORO_END(co);
}

/* spawn 8 members on pool frames into g, wait for them all */
static void pool_round(coro_sched_t *s, coro_group_t *g, coro_t **f)
{
    coro_spawn_opts_t o = { .group = g };
    for (int i = 0; i < 8; i++) {
        f[i] = coro_frame_alloc(s, sizeof(coro_t));
        cr_assert_not_null(f[i]);
        cr_assert_eq(coro_spawn(s, f[i], pool_body, &o), 0);
    }
    cr_assert_eq(coro_group_wait_blocking(g, CORO_FOREVER), 0);
}

Test(group_next, pool_frames_and_records_are_given_back, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    coro_group_t g;
    coro_t *f[8];

    c.workers = 1;
    c.pin = false;
    c.alloc = &counting;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    /* a warm-up round in a group that does not collect: what the
     * scheduler keeps for itself afterwards is the baseline */
    cr_assert_eq(coro_group_init(&g), 0);
    pool_round(s, &g, f);
    cr_assert_eq(coro_group_destroy(&g), 0);
    long base = __atomic_load_n(&live_allocs, __ATOMIC_RELAXED);

    cr_assert_eq(coro_group_init_collect(&g), 0);
    pool_round(s, &g, f);
    cr_assert_eq(__atomic_load_n(&live_allocs, __ATOMIC_RELAXED), base + 8,
                 "the 8 finished members' records are kept");
    for (int i = 0; i < 4; i++) {
        coro_t *co = NULL;
        intptr_t r = 0;
        cr_assert_eq(coro_group_next_blocking(&g, &co, &r, 0), 0);
        bool known = false;
        for (int k = 0; k < 8; k++)
            known |= co == f[k];        /* compared, never dereferenced */
        cr_assert(known);
        cr_assert_eq(r, 4);
    }
    cr_assert_eq(__atomic_load_n(&live_allocs, __ATOMIC_RELAXED), base + 4);
    cr_assert_eq(coro_group_destroy(&g), 0, "4 dropped");
    cr_assert_eq(__atomic_load_n(&live_allocs, __ATOMIC_RELAXED), base);
    coro_sched_destroy(s);
    cr_assert_eq(__atomic_load_n(&live_allocs, __ATOMIC_RELAXED), 0);
}
