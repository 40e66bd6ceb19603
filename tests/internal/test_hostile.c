/* SPDX-License-Identifier: MIT */
/* Huge timeouts and deadlines, at 0, 1, 2 and 4 workers: a timeout near
 * INT64_MAX must neither overflow into the past (the wait would end at once
 * with -ETIMEDOUT) nor disturb the short timers beside it.  Every timed await
 * of the API is parked with each huge timeout, then satisfied; its result
 * must be success.  The blocking forms, coro_join_timeout, the job deadline
 * and coro_sleep_until(INT64_MAX) are checked the same way.  No sleep orders
 * events: the tests wait for the job's state word to say SUSPENDED. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"     /* the job state word */
#include "white_box.h"

#define MS 1000000LL

static const int wcounts[] = { 0, 1, 2, 4 };
static const int64_t huge[] = { INT64_MAX, INT64_MAX - 1, INT64_MAX / 2,
                                365LL * 24 * 3600 * 1000 * MS };
#define NHUGE (sizeof huge / sizeof huge[0])

/* ---- every timed await, parked with a huge timeout, then satisfied ------------- */

enum kind { K_EVENT, K_MUTEX, K_SEM, K_RECV, K_SEND, K_WG, K_SELECT, K_READABLE, K_READ,
            K_DONE, K_GROUP, K_SLEEP, K_N };
static const char *kname[K_N] = { "event", "mutex", "sem", "recv", "send", "waitgroup",
                                  "select", "readable", "read", "done_timeout", "group_wait",
                                  "sleep" };

struct objs {
    coro_event_t ev, stop;
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t ch;
    void *buf[1];
    coro_waitgroup_t wg;
    coro_group_t g;
    int sv[2];
};

struct target { coro_t co; coro_event_t *ev; };

static int target_body(coro_t *co)
{
    struct target *t = CORO_SELF(co, struct target);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(t->ev, CORO_FOREVER));
    CORO_RETURN(co, 77);
    CORO_END(co);
}

struct waiter {
    coro_t co;
    enum kind kind;
    int64_t timeout;
    struct objs *o;
    coro_t *target;
    coro_select_t sel;
    void *item;
    char byte;
    intptr_t own;
    intptr_t rc;
};

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    switch (w->kind) {
    case K_EVENT: CORO_AWAIT(co, coro_event_wait(&w->o->ev, w->timeout)); break;
    case K_MUTEX: CORO_AWAIT(co, coro_mutex_lock(&w->o->m, w->timeout)); break;
    case K_SEM: CORO_AWAIT(co, coro_sem_acquire(&w->o->sem, w->timeout)); break;
    case K_RECV: CORO_AWAIT(co, coro_chan_recv(&w->o->ch, &w->item, w->timeout)); break;
    case K_SEND: CORO_AWAIT(co, coro_chan_send(&w->o->ch, (void *)2, w->timeout)); break;
    case K_WG: CORO_AWAIT(co, coro_waitgroup_wait(&w->o->wg, w->timeout)); break;
    case K_SELECT:
        coro_select_init(&w->sel);
        coro_select_event(&w->sel, &w->o->ev);
        CORO_SELECT(co, &w->sel, w->timeout);
        break;
    case K_READABLE: CORO_AWAIT(co, coro_readable(w->o->sv[0], w->timeout)); break;
    case K_READ: CORO_AWAIT(co, coro_read(w->o->sv[0], &w->byte, 1, w->timeout)); break;
    case K_DONE: CORO_AWAIT(co, coro_done_timeout(w->target, &w->own, w->timeout)); break;
    case K_GROUP: CORO_AWAIT(co, coro_group_wait(&w->o->g, w->timeout)); break;
    case K_SLEEP: CORO_AWAIT(co, coro_sleep(w->timeout)); break;
    default: break;
    }
    w->rc = CORO_RESULT(co);
    CORO_END(co);
}

/* make the wait of kind k succeed (the sleep can only be cancelled) */
static void satisfy(enum kind k, struct objs *o, struct waiter *w)
{
    switch (k) {
    case K_EVENT:
    case K_SELECT: cr_assert_geq(coro_event_set(&o->ev), 0); break;
    case K_MUTEX: cr_assert_eq(coro_mutex_unlock(&o->m), 0); break;
    case K_SEM: cr_assert_geq(coro_sem_release(&o->sem, 1), 0); break;
    case K_RECV: cr_assert_eq(coro_chan_try_send(&o->ch, (void *)1), 0); break;
    case K_SEND: {
        void *out = NULL;
        cr_assert_eq(coro_chan_try_recv(&o->ch, &out), 0);
        cr_assert_eq(out, (void *)1);
        break;
    }
    case K_WG: cr_assert_eq(coro_waitgroup_done(&o->wg), 0); break;
    case K_READABLE:
    case K_READ: cr_assert_eq(write(o->sv[1], "x", 1), 1); break;
    case K_DONE:
    case K_GROUP: cr_assert_geq(coro_event_set(&o->stop), 0); break;
    case K_SLEEP: cr_assert_eq(coro_cancel(&w->co), 0); break;
    default: break;
    }
}

static intptr_t expected(enum kind k)
{
    switch (k) {
    case K_READ: return 1;      /* one byte read */
    case K_SLEEP: return -ECANCELED;
    default: return 0;
    }
}

Test(hostile, every_timed_await_with_a_huge_timeout_waits_and_then_succeeds, .timeout = 120)
{
    for (size_t wi = 0; wi < 4; wi++) {
        for (size_t hi = 0; hi < NHUGE; hi++) {
            for (int k = 0; k < K_N; k++) {
                coro_sched_t *s = mk(wcounts[wi]);
                struct objs o;
                struct target t = { .ev = &o.stop };
                struct waiter w = { .kind = (enum kind)k, .timeout = huge[hi], .o = &o };
                struct joiner jw, jt;
                memset(&o, 0, sizeof o);
                cr_assert_eq(coro_event_init(&o.ev), 0);
                cr_assert_eq(coro_event_init(&o.stop), 0);
                cr_assert_eq(coro_mutex_init(&o.m), 0);
                cr_assert_eq(coro_mutex_lock_blocking(&o.m, 0), 0);
                cr_assert_eq(coro_sem_init(&o.sem, 0), 0);
                cr_assert_eq(coro_chan_init(&o.ch, o.buf, 1), 0);
                if (k == K_SEND)
                    cr_assert_eq(coro_chan_try_send(&o.ch, (void *)1), 0);
                cr_assert_eq(coro_waitgroup_init(&o.wg), 0);
                cr_assert_eq(coro_waitgroup_add(&o.wg, 1), 1);
                cr_assert_eq(coro_group_init(&o.g), 0);
                cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, o.sv), 0);
                coro_spawn_opts_t to = { .group = &o.g };
                cr_assert_eq(coro_spawn(s, &t.co, target_body, &to), 0);
                join_start(&jt, &t.co);
                w.target = &t.co;
                cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
                join_start(&jw, &w.co);
                wait_suspended(&w.co);
                /* the timer must not have fired in the past: still waiting */
                sched_yield();
                cr_assert(suspended(&w.co) || w.rc != -ETIMEDOUT,
                          "%s, timeout %lld: ended by itself", kname[k], (long long)huge[hi]);
                satisfy((enum kind)k, &o, &w);
                join_end(&jw);
                cr_assert_eq(w.rc, expected((enum kind)k),
                             "%s, timeout %lld, %d workers: %ld", kname[k],
                             (long long)huge[hi], wcounts[wi], (long)w.rc);
                if (k == K_DONE)
                    cr_assert_eq(w.own, 77);
                cr_assert_geq(coro_event_set(&o.stop), 0);
                cr_assert_eq(join_end(&jt), 77);
                cr_assert_eq(coro__parklot_timers_count(s), 0, "%s: the ended wait's timer went",
                             kname[k]);
                cr_assert_eq(coro_close(s, o.sv[0]), 0);
                cr_assert_eq(coro_close(s, o.sv[1]), 0);
                cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
                cr_assert_eq(coro_sched_destroy(s), 0);
                cr_assert_eq(coro_group_destroy(&o.g), 0);
                coro_chan_destroy(&o.ch);
                coro_event_destroy(&o.ev);
                coro_event_destroy(&o.stop);
            }
        }
    }
}

/* ---- a huge timer beside a short one: the short one still fires on time -------- */

struct sleeper { coro_t co; int64_t ns; intptr_t rc; int64_t took; };

static int sleeper_body(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    z->took = now_ns();
    CORO_AWAIT(co, coro_sleep(z->ns));
    z->rc = CORO_RESULT(co);
    z->took = now_ns() - z->took;
    CORO_END(co);
}

Test(hostile, huge_timers_do_not_hide_a_short_one, .timeout = 60)
{
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        struct sleeper big[NHUGE], small = { .ns = 5 * MS };
        struct joiner jb[NHUGE], js;
        for (size_t i = 0; i < NHUGE; i++) {
            memset(&big[i], 0, sizeof big[i]);
            big[i].ns = huge[i];
            cr_assert_eq(coro_spawn(s, &big[i].co, sleeper_body, NULL), 0);
            join_start(&jb[i], &big[i].co);
            wait_suspended(&big[i].co);
        }
        cr_assert_eq(coro_spawn(s, &small.co, sleeper_body, NULL), 0);
        join_start(&js, &small.co);
        join_end(&js);
        cr_assert_eq(small.rc, 0);
        cr_assert_geq(small.took, 5 * MS, "a sleep never ends early");
        cr_assert_lt(small.took, 10000 * MS, "generous bound");
        for (size_t i = 0; i < NHUGE; i++) {
            cr_assert(suspended(&big[i].co), "a huge sleep (%lld) ended",
                      (long long)huge[i]);
            cr_assert_eq(coro_cancel(&big[i].co), 0);
            join_end(&jb[i]);
            cr_assert_eq(big[i].rc, -ECANCELED);
        }
        cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- sleep_until(INT64_MAX), a deadline of INT64_MAX, join_timeout(INT64_MAX) --- */

struct until { coro_t co; int mode; coro_event_t *ev; intptr_t rc; };

static int until_body(coro_t *co)
{
    struct until *u = CORO_SELF(co, struct until);
    CORO_BEGIN(co);
    if (u->mode == 0)
        CORO_AWAIT(co, coro_sleep_until(INT64_MAX));
    else
        CORO_AWAIT(co, coro_event_wait(u->ev, CORO_FOREVER));
    u->rc = CORO_RESULT(co);
    CORO_RETURN(co, -5);
    CORO_END(co);
}

struct timed_joiner { pthread_t t; coro_t *co; int rc; intptr_t result; };

static void *timed_join_main(void *arg)
{
    struct timed_joiner *j = arg;
    j->rc = coro_join_timeout(j->co, &j->result, INT64_MAX);
    return NULL;
}

Test(hostile, sleep_until_int64_max_deadline_int64_max_and_join_timeout_int64_max, .timeout = 60)
{
    for (size_t wi = 0; wi < 4; wi++) {
        for (int mode = 0; mode < 2; mode++) {
            coro_sched_t *s = mk(wcounts[wi]);
            coro_event_t ev;
            struct until u = { .mode = mode, .ev = &ev };
            struct timed_joiner j = { .co = &u.co };
            coro_spawn_opts_t o = { .deadline = INT64_MAX };
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_spawn(s, &u.co, until_body, &o), 0);
            cr_assert_eq(pthread_create(&j.t, NULL, timed_join_main, &j), 0);
            wait_suspended(&u.co);
            sched_yield();
            cr_assert(suspended(&u.co), "mode %d: ended by itself", mode);
            if (mode == 0)
                cr_assert_eq(coro_cancel(&u.co), 0);
            else
                cr_assert_geq(coro_event_set(&ev), 0);
            pthread_join(j.t, NULL);
            cr_assert_eq(j.rc, 0, "join_timeout(INT64_MAX): %d", j.rc);
            cr_assert_eq(j.result, -5, "the job's own result, apart from errors");
            cr_assert_eq(u.rc, mode == 0 ? -ECANCELED : 0, "mode %d: %ld", mode, (long)u.rc);
            cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
            cr_assert_eq(coro_sched_destroy(s), 0);
            coro_event_destroy(&ev);
        }
    }
}

/* ---- the blocking forms on plain threads ------------------------------------------ */

struct bl { pthread_t t; int kind; int64_t timeout; coro_event_t *ev; coro_mutex_t *m;
            coro_sem_t *sem; coro_chan_t *ch; coro_waitgroup_t *wg; int rc; int started; };

static void *bl_main(void *arg)
{
    struct bl *b = arg;
    void *out;
    __atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
    switch (b->kind) {
    case 0: b->rc = coro_event_wait_blocking(b->ev, b->timeout); break;
    case 1:
        b->rc = coro_mutex_lock_blocking(b->m, b->timeout);
        if (b->rc == 0 && coro_mutex_unlock(b->m) != 0)   /* the owner unlocks */
            b->rc = -1000;
        break;
    case 2: b->rc = coro_sem_acquire_blocking(b->sem, b->timeout); break;
    case 3: b->rc = coro_chan_recv_blocking(b->ch, &out, b->timeout); break;
    case 4: b->rc = coro_waitgroup_wait_blocking(b->wg, b->timeout); break;
    default: break;
    }
    return NULL;
}

Test(hostile, blocking_waits_with_a_huge_timeout_wait_and_then_succeed, .timeout = 60)
{
    for (size_t hi = 0; hi < NHUGE; hi++) {
        for (int kind = 0; kind < 5; kind++) {
            coro_event_t ev;
            coro_mutex_t m;
            coro_sem_t sem;
            coro_chan_t ch;
            void *buf[1];
            coro_waitgroup_t wg;
            struct bl b = { .kind = kind, .timeout = huge[hi], .ev = &ev, .m = &m, .sem = &sem,
                            .ch = &ch, .wg = &wg, .rc = 99 };
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_mutex_init(&m), 0);
            cr_assert_eq(coro_mutex_lock_blocking(&m, 0), 0);
            cr_assert_eq(coro_sem_init(&sem, 0), 0);
            cr_assert_eq(coro_chan_init(&ch, buf, 1), 0);
            cr_assert_eq(coro_waitgroup_init(&wg), 0);
            cr_assert_eq(coro_waitgroup_add(&wg, 1), 1);
            cr_assert_eq(pthread_create(&b.t, NULL, bl_main, &b), 0);
            /* whether the waiter has parked yet or not, it must end with success */
            while (!__atomic_load_n(&b.started, __ATOMIC_ACQUIRE))
                sched_yield();
            for (int i = 0; i < 100; i++)
                sched_yield();
            cr_assert_eq(__atomic_load_n(&b.rc, __ATOMIC_RELAXED), 99,
                         "kind %d, timeout %lld: ended by itself", kind, (long long)huge[hi]);
            switch (kind) {
            case 0: cr_assert_geq(coro_event_set(&ev), 0); break;
            case 1: cr_assert_eq(coro_mutex_unlock(&m), 0); break;
            case 2: cr_assert_geq(coro_sem_release(&sem, 1), 0); break;
            case 3: cr_assert_eq(coro_chan_try_send(&ch, (void *)1), 0); break;
            case 4: cr_assert_eq(coro_waitgroup_done(&wg), 0); break;
            default: break;
            }
            pthread_join(b.t, NULL);
            cr_assert_eq(b.rc, 0, "kind %d, timeout %lld: %d", kind, (long long)huge[hi], b.rc);
            coro_event_destroy(&ev);
            coro_chan_destroy(&ch);
        }
    }
}

/* ---- two threads where one was assumed: CORO_CANCEL cuts another thread's drain -- */

struct stuck { coro_t co; coro_event_t *ev; intptr_t rc; };

static int stuck_body(coro_t *co)
{
    struct stuck *k = CORO_SELF(co, struct stuck);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(k->ev, CORO_FOREVER));
    k->rc = CORO_RESULT(co);
    CORO_END(co);
}

struct shutter { pthread_t t; coro_sched_t *s; int mode; int rc; };

static void *shut_main(void *arg)
{
    struct shutter *h = arg;
    h->rc = coro_sched_shutdown(h->s, h->mode);
    return NULL;
}

Test(hostile, a_cancel_from_another_thread_ends_a_drain_that_waits_forever, .timeout = 60)
{
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        coro_event_t ev;
        struct stuck k = { .ev = &ev, .rc = 99 };
        struct shutter drain = { .s = s, .mode = CORO_DRAIN, .rc = 99 };
        struct shutter cancel = { .s = s, .mode = CORO_CANCEL, .rc = 99 };
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &k.co, stuck_body, NULL), 0);
        if (wcounts[wi] > 0)
            wait_suspended(&k.co);
        cr_assert_eq(pthread_create(&drain.t, NULL, shut_main, &drain), 0);
        /* the drain has begun once the scheduler is closed */
        while (!__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE))
            sched_yield();
        cr_assert_eq(pthread_create(&cancel.t, NULL, shut_main, &cancel), 0);
        pthread_join(cancel.t, NULL);
        pthread_join(drain.t, NULL);
        cr_assert_eq(cancel.rc, 0);
        cr_assert_eq(drain.rc, 0);
        cr_assert_eq(k.rc, -ECANCELED, "%d workers: %ld", wcounts[wi], (long)k.rc);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

/* ---- two plain threads join one job; two threads spawn one frame --------------- */

Test(hostile, two_threads_joining_one_job_both_get_its_result, .timeout = 60)
{
    for (size_t wi = 1; wi < 4; wi++) {     /* single-threaded: covered by sched tests */
        for (int round = 0; round < 20; round++) {
            coro_sched_t *s = mk(wcounts[wi]);
            coro_event_t ev;
            struct target t = { .ev = &ev };
            struct joiner a, b;
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_spawn(s, &t.co, target_body, NULL), 0);
            join_start(&a, &t.co);
            join_start(&b, &t.co);
            if (round & 1)
                wait_suspended(&t.co);
            cr_assert_geq(coro_event_set(&ev), 0);
            cr_assert_eq(join_end(&a), 77, "%d workers, round %d", wcounts[wi], round);
            cr_assert_eq(join_end(&b), 77, "%d workers, round %d", wcounts[wi], round);
            cr_assert_eq(coro_sched_destroy(s), 0);
            coro_event_destroy(&ev);
        }
    }
}

struct spawner { pthread_t t; coro_sched_t *s; coro_t *co; int rc; int *go; };

static int count_runs;

static int count_body(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&count_runs, 1, __ATOMIC_RELAXED);
    CORO_RETURN(co, 5);
    CORO_END(co);
}

static void *spawn_main(void *arg)
{
    struct spawner *p = arg;
    while (!__atomic_load_n(p->go, __ATOMIC_ACQUIRE))
        ;
    p->rc = coro_spawn(p->s, p->co, count_body, NULL);
    return NULL;
}

Test(hostile, two_threads_spawning_one_frame_start_it_once, .timeout = 60)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        for (int round = 0; round < 200; round++) {
            coro_t co;
            int go = 0;
            memset(&co, 0, sizeof co);
            __atomic_store_n(&count_runs, 0, __ATOMIC_RELAXED);
            struct spawner a = { .s = s, .co = &co, .go = &go }, b = a;
            cr_assert_eq(pthread_create(&a.t, NULL, spawn_main, &a), 0);
            cr_assert_eq(pthread_create(&b.t, NULL, spawn_main, &b), 0);
            __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
            pthread_join(a.t, NULL);
            pthread_join(b.t, NULL);
            cr_assert(a.rc == 0 || b.rc == 0, "round %d: neither spawn took (%d, %d)", round,
                      a.rc, b.rc);
            /* the loser finds the frame live, or already finished and free again */
            cr_assert(a.rc == -EBUSY || b.rc == -EBUSY || (a.rc == 0 && b.rc == 0),
                      "round %d: %d, %d", round, a.rc, b.rc);
            cr_assert_eq(join_r(&co), 5);
            int want = (a.rc == 0) + (b.rc == 0);
            cr_assert_eq(__atomic_load_n(&count_runs, __ATOMIC_RELAXED), want,
                         "round %d: ran %d times for %d spawns", round, count_runs, want);
        }
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- coro_close of an fd a job waits on, from another thread ---------------------- */

struct fdwait { coro_t co; int fd; char byte; intptr_t rc; };

static int fdwait_body(coro_t *co)
{
    struct fdwait *f = CORO_SELF(co, struct fdwait);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(f->fd, &f->byte, 1, CORO_FOREVER));
    f->rc = CORO_RESULT(co);
    CORO_END(co);
}

Test(hostile, closing_an_fd_a_job_waits_on_ends_the_wait, .timeout = 60)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        struct fdwait f = { .fd = sv[0], .rc = 99 };
        struct joiner j;
        cr_assert_eq(coro_spawn(s, &f.co, fdwait_body, NULL), 0);
        join_start(&j, &f.co);
        wait_suspended(&f.co);
        cr_assert_eq(coro_close(s, sv[0]), 0);
        join_end(&j);
        cr_assert_eq(f.rc, -EBADF, "%d workers: %ld", wcounts[wi], (long)f.rc);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a frame spawned again by the job that awaited its end ------------------------- */

struct respawner { coro_t co; coro_t kid; coro_sched_t *s; long i, n, busy; };

static int kid_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 1);
    CORO_END(co);
}

static int respawner_body(coro_t *co)
{
    struct respawner *r = CORO_SELF(co, struct respawner);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->n; r->i++) {
        int rc = coro_spawn(r->s, &r->kid, kid_body, NULL);
        if (rc == -EBUSY)
            r->busy++;
        else
            cr_assert_eq(rc, 0);
        CORO_AWAIT(co, coro_done(&r->kid));
        cr_assert_eq(CORO_RESULT(co), 1);
    }
    CORO_END(co);
}

/* coro_done wakes its awaiter before the finisher's last touch of the
 * frame: the awaiter, resumed at once on another worker, spawns the frame
 * again - that spawn must succeed (it waits the few instructions until the
 * finisher lets go), never -EBUSY */
Test(hostile, a_frame_spawned_again_right_after_coro_done_is_never_busy, .timeout = 120)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        struct respawner r = { .s = s, .n = 20000 };
        cr_assert_eq(coro_spawn(s, &r.co, respawner_body, NULL), 0);
        cr_assert_eq(join_r(&r.co), 0);
        cr_assert_eq(r.busy, 0, "%d workers: %ld of %ld spawns after coro_done gave -EBUSY",
                     wcounts[wi], r.busy, r.n);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a plain thread joins a job right after a select saw it end ------------------- */

/* The select's job-end branch (like coro_done) is woken before the
 * finisher's last touch; a coro_join made at once then met DONE with
 * EXITING, did not register, and slept on the state word that the
 * finisher never woke: a hang (tests/api/test_sync_select.c caught it under ASan). */
Test(hostile, a_join_right_after_a_select_saw_the_job_end_returns, .timeout = 120)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        coro_select_t *sel = malloc(sizeof *sel);
        for (int round = 0; round < 2000; round++) {
            coro_event_t ev;
            struct target t = { .ev = &ev };
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_spawn(s, &t.co, target_body, NULL), 0);
            cr_assert_eq(coro_select_init(sel), 0);
            cr_assert_eq(coro_select_done(sel, &t.co), 0);
            cr_assert_geq(coro_event_set(&ev), 0);
            cr_assert_eq(coro_select_blocking(sel, 20000 * MS), 0);
            cr_assert_eq(coro_select_result(sel, 0), 77);
            intptr_t r = 0;
            cr_assert_eq(coro_join_timeout(&t.co, &r, 20000 * MS), 0, "round %d", round);
            cr_assert_eq(r, 77);
            coro_event_destroy(&ev);
        }
        free(sel);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}
