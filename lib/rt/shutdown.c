/* SPDX-License-Identifier: MIT */
/* coro_sched_shutdown, coro_sched_shutdown_timeout and the drain that
 * coro_sched_destroy begins with: close, cancel, wait until live ==
 * CLOSED (the protocol is runtime.c's SHUTDOWN). */

#include "rt/rt.h"

static bool all_done(void *arg)
{
    coro_sched_t *s = arg;
    /* acquire: every finished job's effects happen before shutdown returns */
    return __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) == CORO__LIVE_CLOSED;
}

struct all_late { coro_sched_t *s; int64_t deadline; };

static bool all_done_or_late(void *arg)
{
    struct all_late *a = arg;
    return all_done(a->s) || (a->deadline >= 0 && coro__now() >= a->deadline);
}

/* wait until every job finished or the absolute deadline (-1 = none)
 * passed; true when they all finished */
static bool wait_all(coro_sched_t *s, int64_t deadline)
{
    if (s->nworkers == 0) {
        struct all_late a = { s, deadline };
        coro__drive_until_dl(s, NULL, all_done_or_late, &a, deadline);
        return all_done(s);
    }
    for (;;) {
        /* acquire: pairs with the finishers' acq_rel decrements */
        uint32_t l = __atomic_load_n(&s->live, __ATOMIC_ACQUIRE);
        if (l == CORO__LIVE_CLOSED)
            return true;
        if (coro__futex_wait(&s->live, l, deadline) == -ETIMEDOUT)
            return all_done(s);
    }
}

/* Any thread, any number of times: one walk at a time (cancel_lock), since a
 * CORO_CANCEL from one thread may meet another thread's timed drain that
 * expires. */
static void cancel_all(coro_sched_t *s)
{
    pthread_mutex_lock(&s->cancel_lock);
    /* order: the flag first, so that a job arming now either sees it or
     * is already in a structure the walks below find */
    __atomic_store_n(&s->cancelling, 1, __ATOMIC_SEQ_CST);
    coro__parklot_cancel_sched(s);
    if (s->io)
        coro__io_cancel_all(s->io);
    coro__blocking_cancel(s);
    pthread_mutex_unlock(&s->cancel_lock);
}

/* no spawn succeeds from now on */
static void close_sched(coro_sched_t *s)
{
    /* acq_rel: the RMW that orders every racing spawn (top of file) */
    __atomic_fetch_or(&s->live, CORO__LIVE_CLOSED, __ATOMIC_ACQ_REL);
    /* seq_cst: workers that batch finished jobs see it and flush at once */
    __atomic_store_n(&s->closed, 1, __ATOMIC_SEQ_CST);
}

int coro_sched_shutdown_timeout(coro_sched_t *s, int64_t timeout)
{
    if (!s || timeout < CORO_FOREVER)
        return -EINVAL;
    int e = errno;      /* futex waits, pthread calls: errno is the caller's */
    int rc = coro__shutdown(s, CORO_DRAIN, timeout);
    errno = e;
    return rc;
}

int coro_sched_shutdown(coro_sched_t *s, int mode)
{
    if (!s || (mode != CORO_DRAIN && mode != CORO_CANCEL))
        return -EINVAL;
    int e = errno;      /* as above */
    int rc = coro__shutdown(s, mode, CORO_FOREVER);
    errno = e;
    return rc;
}

/* a thread that could never see the jobs finish: one that runs a job of
 * s, a worker of s, or a blocking-pool thread of s (its call's job is
 * live until the call returns) */
static bool would_deadlock(coro_sched_t *s)
{
    return coro__in_job() || (coro__tls_worker && coro__tls_worker->s == s) ||
           coro__blocking_on_pool(s);
}

/* Mode CORO_DRAIN with a timeout >= 0: drain until it passes, then cancel.
 *
 * CONCURRENT CALLS.  Every call closes s (idempotent), a CORO_CANCEL cancels
 * (cancel_all: any thread, any number of times), and then each call waits
 * on its own for live == CLOSED, with its own deadline: no call queues
 * behind another's wait, so a timed call or a CORO_CANCEL ends the jobs
 * that another thread's CORO_DRAIN (which may never end by itself) waits
 * for.  A timed call returns -ETIMEDOUT only when its own deadline passed
 * and it cancelled; jobs that another call cancelled finished in its time.
 * Each call counts itself in shut_users (under shut_lock) while it touches
 * s, so that coro_sched_destroy, which shuts down first too, frees s only
 * after every call that was inside has left. */
int coro__shutdown(coro_sched_t *s, int mode, int64_t timeout)
{
    int rc = 0;

    if (would_deadlock(s))
        return -EDEADLK;
    /* acquire: pairs with the release store below: a call after the end
     * sees the first's work and returns at once */
    if (__atomic_load_n(&s->shut_done, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&s->shut_lock);
    s->shut_users++;
    pthread_mutex_unlock(&s->shut_lock);
    close_sched(s);
    if (mode == CORO_CANCEL)
        cancel_all(s);
    int64_t deadline = coro__deadline(timeout);
    /* single-threaded: the waits take turns driving s (rt/drive.c) */
    if (!wait_all(s, deadline)) {
        cancel_all(s);      /* this call's drain time is up */
        wait_all(s, -1);
        rc = -ETIMEDOUT;
    }
    __atomic_store_n(&s->shut_done, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&s->shut_lock);
    if (--s->shut_users == 0)
        pthread_cond_broadcast(&s->shut_gone);
    pthread_mutex_unlock(&s->shut_lock);    /* this call's last touch of s */
    return rc;
}
