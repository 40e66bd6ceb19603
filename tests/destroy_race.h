/* SPDX-License-Identifier: MIT */
/* One round of a wake racing coro_sched_destroy: a job of s waits, a
 * plain thread (or another scheduler's worker) ends that wait while the
 * main thread destroys s, which drains the job and frees s.  The waker
 * started before destroy returned, so it must be done with s before s is
 * freed (coro_sched_destroy(3)); under ASan a touch of s after the free
 * is a heap-use-after-free, under TSan a race.  Public API only: used by
 * tests/api/test_sched_destroy_race.c (ASan) and tests/stress/destroy_wake.c
 * (TSan, minutes in make stress). */
#ifndef COROKIT_TESTS_DESTROY_RACE_H
#define COROKIT_TESTS_DESTROY_RACE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* pipe2 */
#endif

#include <corokit.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum dr_kind {
    DR_EVENT,           /* coro_event_set */
    DR_SEM,             /* coro_sem_release */
    DR_CHAN_TRY,        /* coro_chan_try_send */
    DR_CHAN_BLOCKING,   /* coro_chan_send_blocking */
    DR_CHAN_CLOSE,      /* coro_chan_close */
    DR_MUTEX,           /* coro_mutex_unlock */
    DR_WAITGROUP,       /* coro_waitgroup_done */
    DR_CANCEL,          /* coro_cancel of a sleeping job */
    DR_GROUP_CANCEL,    /* coro_group_cancel */
    DR_CLOSE,           /* coro_close of the fd the job reads */
    DR_JOIN,            /* a thread in coro_join */
    DR_JOIN_TIMEOUT,    /* a thread in coro_join_timeout */
    DR_DONE_CROSS,      /* a job of s awaits coro_done of a job of another scheduler */
    DR_FORK_CROSS,      /* a job of s forks a child on another scheduler */
    DR_NKINDS
};

static const char *const dr_names[DR_NKINDS] = {
    "event_set", "sem_release", "chan_try_send", "chan_send_blocking", "chan_close",
    "mutex_unlock", "waitgroup_done", "cancel", "group_cancel", "close", "join",
    "join_timeout", "done_cross", "fork_cross",
};

struct dr_round;

struct dr_job {
    coro_t co;
    struct dr_round *r;
    int i;
    void *got;
    char byte;
    coro_fork_t f;
    coro_t *kids[1];
    intptr_t results[1];
};

struct dr_round {
    enum dr_kind kind;
    coro_sched_t *s, *other;
    coro_event_t ev;
    coro_sem_t sem;
    coro_chan_t ch;
    void *buf[1];
    coro_mutex_t mu;
    coro_waitgroup_t wg;
    coro_group_t g;
    int fds[2];
    int armed, locked;          /* the job is about to wait; the thread holds mu */
    int rc;                     /* the waker's call's result */
    struct dr_job job, kid;
};

/* the other scheduler's job: a few steps, then it ends (and its worker
 * wakes the job of s that awaits it) */
static int dr_kid_body(coro_t *co)
{
    struct dr_job *j = CORO_SELF(co, struct dr_job);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < 3; j->i++)
        CORO_YIELD(co);
    CORO_RETURN(co, 7);
    CORO_END(co);
}

static int dr_body(coro_t *co)
{
    struct dr_job *j = CORO_SELF(co, struct dr_job);
    struct dr_round *r = j->r;
    CORO_BEGIN(co);
    /* release: the thread's acquire load sees the job about to wait */
    __atomic_store_n(&r->armed, 1, __ATOMIC_RELEASE);
    if (r->kind == DR_EVENT) {
        CORO_AWAIT(co, coro_event_wait(&r->ev, CORO_FOREVER));
    } else if (r->kind == DR_SEM) {
        CORO_AWAIT(co, coro_sem_acquire(&r->sem, CORO_FOREVER));
    } else if (r->kind == DR_CHAN_TRY || r->kind == DR_CHAN_BLOCKING ||
               r->kind == DR_CHAN_CLOSE) {
        CORO_AWAIT(co, coro_chan_recv(&r->ch, &j->got, CORO_FOREVER));
    } else if (r->kind == DR_MUTEX) {
        CORO_AWAIT(co, coro_mutex_lock(&r->mu, CORO_FOREVER));
        if (CORO_RESULT(co) == 0)
            coro_mutex_unlock(&r->mu);
    } else if (r->kind == DR_WAITGROUP) {
        CORO_AWAIT(co, coro_waitgroup_wait(&r->wg, CORO_FOREVER));
    } else if (r->kind == DR_CANCEL || r->kind == DR_GROUP_CANCEL) {
        CORO_AWAIT(co, coro_sleep(60 * (int64_t)1000000000));
    } else if (r->kind == DR_CLOSE) {
        /* bounded: a close that comes before the read parks lets the
         * number be reused by another thread's new fd (the test runner
         * has one), which nobody wakes (coro_close, include/corokit/io.h) */
        CORO_AWAIT(co, coro_read(r->fds[0], &j->byte, 1, 2 * (int64_t)1000000000));
    } else if (r->kind == DR_JOIN || r->kind == DR_JOIN_TIMEOUT) {
        for (j->i = 0; j->i < 3; j->i++)
            CORO_YIELD(co);
    } else if (r->kind == DR_DONE_CROSS) {
        CORO_AWAIT(co, coro_done(&r->kid.co));
    } else if (r->kind == DR_FORK_CROSS) {
        coro_fork_init(&j->f, j->kids, j->results, 1);
        if (coro_fork_spawn(&j->f, r->other, &r->kid.co, dr_kid_body, NULL) == 0)
            CORO_FORK_JOIN(co, &j->f);
    }
    CORO_RETURN(co, 1);
    CORO_END(co);
}

static void *dr_waker(void *arg)
{
    struct dr_round *r = arg;
    intptr_t res;

    if (r->kind == DR_MUTEX) {
        coro_mutex_lock_blocking(&r->mu, CORO_FOREVER);
        __atomic_store_n(&r->locked, 1, __ATOMIC_RELEASE);
    }
    /* acquire: pairs with the job's release store */
    while (!__atomic_load_n(&r->armed, __ATOMIC_ACQUIRE))
        sched_yield();
    switch (r->kind) {
    case DR_EVENT: r->rc = coro_event_set(&r->ev); break;
    case DR_SEM: r->rc = coro_sem_release(&r->sem, 1); break;
    case DR_CHAN_TRY:
        while ((r->rc = coro_chan_try_send(&r->ch, r)) == -EAGAIN)
            sched_yield();
        break;
    case DR_CHAN_BLOCKING: r->rc = coro_chan_send_blocking(&r->ch, r, CORO_FOREVER); break;
    case DR_CHAN_CLOSE: r->rc = coro_chan_close(&r->ch); break;
    case DR_MUTEX: r->rc = coro_mutex_unlock(&r->mu); break;
    case DR_WAITGROUP: r->rc = (int)coro_waitgroup_done(&r->wg); break;
    case DR_CANCEL: r->rc = coro_cancel(&r->job.co); break;
    case DR_GROUP_CANCEL: r->rc = coro_group_cancel(&r->g); break;
    case DR_CLOSE: r->rc = coro_close(r->s, r->fds[0]); break;
    case DR_JOIN: r->rc = coro_join(&r->job.co, &res); break;
    case DR_JOIN_TIMEOUT: r->rc = coro_join_timeout(&r->job.co, &res, 60 * (int64_t)1000000000); break;
    default: break;
    }
    return NULL;
}

/* one round of kind with `workers` workers on s: 0, or a step's -errno
 * (what failed is the caller's to say) */
static inline int dr_round(enum dr_kind kind, int workers)
{
    static struct dr_round zero;
    struct dr_round *r = malloc(sizeof *r);
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    pthread_t t;
    bool cross = kind == DR_DONE_CROSS || kind == DR_FORK_CROSS;
    int rc;

    if (!r)
        return -ENOMEM;
    *r = zero;
    r->kind = kind;
    r->job.r = r->kid.r = r;
    c.workers = workers;
    if ((rc = coro_sched_create(&r->s, &c)) < 0)
        goto out;
    c.workers = 1;
    if (cross && (rc = coro_sched_create(&r->other, &c)) < 0)
        goto out_s;
    coro_event_init(&r->ev);
    coro_sem_init(&r->sem, 0);
    coro_chan_init(&r->ch, r->buf, 1);
    coro_mutex_init(&r->mu);
    coro_waitgroup_init(&r->wg);
    coro_waitgroup_add(&r->wg, 1);
    coro_group_init(&r->g);
    r->fds[0] = r->fds[1] = -1;
    if (kind == DR_CLOSE && pipe2(r->fds, O_NONBLOCK | O_CLOEXEC) < 0) {
        rc = -errno;
        goto out_objs;
    }
    if (kind == DR_DONE_CROSS && (rc = coro_spawn(r->other, &r->kid.co, dr_kid_body, NULL)) < 0)
        goto out_objs;
    if ((rc = -pthread_create(&t, NULL, dr_waker, r)) < 0)
        goto out_objs;
    if (kind == DR_MUTEX)
        while (!__atomic_load_n(&r->locked, __ATOMIC_ACQUIRE))
            sched_yield();
    coro_spawn_opts_t o = { .group = &r->g };
    rc = coro_spawn(r->s, &r->job.co, dr_body, &o);
    if (rc < 0)
        __atomic_store_n(&r->armed, 1, __ATOMIC_RELEASE);  /* let the thread go */
    /* the race: destroy drains the job (and with no workers runs it)
     * while the waker ends its wait */
    int drc = coro_sched_destroy(r->s);
    r->s = NULL;
    pthread_join(t, NULL);
    if (rc == 0)
        rc = drc;
out_objs:
    if (r->fds[0] >= 0 && kind != DR_CLOSE)
        close(r->fds[0]);
    if (r->fds[1] >= 0)
        close(r->fds[1]);
    coro_group_destroy(&r->g);
    coro_waitgroup_destroy(&r->wg);
    coro_mutex_destroy(&r->mu);
    coro_chan_destroy(&r->ch);
    coro_sem_destroy(&r->sem);
    coro_event_destroy(&r->ev);
    if (r->other)
        coro_sched_destroy(r->other);
out_s:
    if (r->s)
        coro_sched_destroy(r->s);
out:
    free(r);
    return rc;
}

#endif
