/* SPDX-License-Identifier: MIT */
/* Two shutdown calls on one scheduler from two threads, every pair of
 * CORO_DRAIN, CORO_CANCEL, coro_sched_shutdown_timeout and
 * coro_sched_destroy in both orders, on a scheduler whose one job waits on
 * an event that nobody sets unless both calls only drain.  The first call
 * is inside (counted in shut_users, or already returned) before the second
 * starts; no sleep orders anything. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "rt/rt.h"      /* white-box: s->shut_users says a call is inside */
#include "white_box.h"

enum kind { DRAIN, CANCEL, TIMEOUT, DESTROY };

struct call {
    pthread_t t;
    coro_sched_t *s;
    enum kind kind;
    int64_t timeout;    /* TIMEOUT */
    int rc;
    int done;           /* atomic */
};

static void *call_main(void *arg)
{
    struct call *c = arg;
    switch (c->kind) {
    case DRAIN:   c->rc = coro_sched_shutdown(c->s, CORO_DRAIN); break;
    case CANCEL:  c->rc = coro_sched_shutdown(c->s, CORO_CANCEL); break;
    case TIMEOUT: c->rc = coro_sched_shutdown_timeout(c->s, c->timeout); break;
    case DESTROY: c->rc = coro_sched_destroy(c->s); break;
    }
    /* release: rc before done */
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static uint32_t users(coro_sched_t *s)
{
    pthread_mutex_lock(&s->shut_lock);
    uint32_t n = s->shut_users;
    pthread_mutex_unlock(&s->shut_lock);
    return n;
}

static bool done(struct call *c)
{
    return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

struct waiter { coro_t co; coro_event_t *ev; intptr_t r; };

static int wait_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    w->r = CORO_RESULT(co);
    CORO_END(co);
}

/* sets the event once the test says go; gives up when cancelled.  The
 * event is set from a job of s, which is live while it sets it: a plain
 * thread's wake may still touch s after the woken job could have finished,
 * and a destroy in the other thread could then have freed s */
struct setter { coro_t co; coro_event_t *ev; int go; /* atomic */ };

static int setter_body(coro_t *co)
{
    struct setter *t = CORO_SELF(co, struct setter);
    CORO_BEGIN(co);
    while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE)) {
        CORO_AWAIT(co, coro_sleep(100000));
        if (CORO_RESULT(co) == -ECANCELED)
            CORO_RETURN(co, 0);
    }
    coro_event_set(t->ev);
    CORO_END(co);
}

static bool cancels(enum kind k)
{
    return k == CANCEL || k == TIMEOUT;
}

/* the timeout of a TIMEOUT call: short when it is the one that must end
 * the job, long when the other call cancels first (then it returns 0) */
static int64_t timeout_for(enum kind other, bool first)
{
    if (other == CANCEL)
        return 30 * 1000000000LL;
    if (first && other == TIMEOUT)
        return 30 * 1000000000LL;   /* the second's short one fires first */
    return first ? 100 * 1000000LL : 50 * 1000000LL;
}

static void run_pair(enum kind a, enum kind b)
{
    static const int workers[] = { 0, 2 };
    for (size_t wi = 0; wi < sizeof workers / sizeof workers[0]; wi++) {
        coro_sched_t *s = mk(workers[wi]);
        coro_event_t ev;
        struct waiter *w = calloc(1, sizeof *w);    /* outlives s: destroy may free s first */
        struct setter *set = calloc(1, sizeof *set);
        cr_assert_eq(coro_event_init(&ev), 0);
        w->ev = &ev;
        w->r = 1;
        cr_assert_eq(coro_spawn(s, &w->co, wait_body, NULL), 0);
        if (workers[wi] == 0)
            coro_sched_run(s);      /* the job reaches its wait */
        wait_suspended(&w->co);
        set->ev = &ev;
        cr_assert_eq(coro_spawn(s, &set->co, setter_body, NULL), 0);

        struct call x = { .s = s, .kind = a, .timeout = timeout_for(b, true) };
        struct call y = { .s = s, .kind = b, .timeout = timeout_for(a, false) };
        cr_assert_eq(pthread_create(&x.t, NULL, call_main, &x), 0);
        /* the first is inside before the second starts (or is over: a
         * CORO_CANCEL or a timed call may end by itself) */
        while (!done(&x) && users(s) < 1)
            sched_yield();
        cr_assert_eq(pthread_create(&y.t, NULL, call_main, &y), 0);
        if (!cancels(a) && !cancels(b)) {
            /* both only drain: both inside, then the job may finish */
            while (users(s) < 2)
                sched_yield();
            __atomic_store_n(&set->go, 1, __ATOMIC_RELEASE);
        }
        pthread_join(x.t, NULL);
        pthread_join(y.t, NULL);

        int want_x = 0, want_y = 0;
        if (a == TIMEOUT && !cancels(b))
            want_x = -ETIMEDOUT;        /* nothing else ends the job */
        if (b == TIMEOUT && a != CANCEL)
            want_y = -ETIMEDOUT;        /* its 50 ms end first */
        cr_assert_eq(x.rc, want_x, "workers %d: first call rc %d", workers[wi], x.rc);
        cr_assert_eq(y.rc, want_y, "workers %d: second call rc %d", workers[wi], y.rc);
        cr_assert_eq(w->r, cancels(a) || cancels(b) ? -ECANCELED : 0,
                     "workers %d: job result %ld", workers[wi], (long)w->r);
        if (a != DESTROY && b != DESTROY)
            cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
        free(w);
        free(set);
    }
}

#define PAIR(a, b, name) \
    Test(shutdown_pairs, name, .timeout = 60) { run_pair(a, b); }

PAIR(DRAIN, DRAIN, drain_then_drain_both_return_once_the_job_finishes)
PAIR(DRAIN, CANCEL, drain_then_cancel_cancels_the_job_the_drain_waits_for)
PAIR(DRAIN, TIMEOUT, drain_then_timeout_cancels_when_its_time_is_up_and_both_return)
PAIR(DRAIN, DESTROY, drain_then_destroy_frees_only_after_the_drain_returned)
PAIR(CANCEL, DRAIN, cancel_then_drain_both_return)
PAIR(CANCEL, CANCEL, cancel_then_cancel_both_return)
PAIR(CANCEL, TIMEOUT, cancel_then_timeout_returns_0_in_time)
PAIR(CANCEL, DESTROY, cancel_then_destroy_both_return)
PAIR(TIMEOUT, DRAIN, timeout_then_drain_the_timeout_cancels_and_both_return)
PAIR(TIMEOUT, CANCEL, timeout_then_cancel_the_timed_call_returns_0)
PAIR(TIMEOUT, TIMEOUT, timeout_then_shorter_timeout_the_shorter_cancels)
PAIR(TIMEOUT, DESTROY, timeout_then_destroy_the_timeout_cancels_then_destroy_frees)
PAIR(DESTROY, DRAIN, destroy_then_drain_destroy_frees_after_the_drain_returned)
PAIR(DESTROY, CANCEL, destroy_then_cancel_cancels_and_destroy_frees)
PAIR(DESTROY, TIMEOUT, destroy_then_timeout_cancels_and_destroy_frees)
