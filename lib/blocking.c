/* SPDX-License-Identifier: MIT */
/* The blocking pool: coro_blocking runs a function that blocks (a library
 * without a non-blocking API, getaddrinfo, a read of a regular file) on a
 * thread of its own, so that no worker stalls.  tokio's blocking pool is
 * the model: threads start lazily up to a maximum, idle ones retire after
 * a keep-alive, calls queue FIFO.  It is the stackless form of tokio's
 * block_in_place: a stackless job cannot keep its stack while its worker
 * goes on, so the call moves to another thread instead of the worker's
 * other jobs.
 *
 * WHO TOUCHES WHAT.  One pool per scheduler, created with it (no thread
 * started).  Everything in struct coro__bpool is under its mutex.  A
 * queued call is its job: the job is SUSPENDED (its arm returned PENDING)
 * and linked through coro_t.next on the FIFO; the pool owns its wake-up.
 * A pool thread unlinks the oldest job under the mutex, then - unlocked -
 * reads fn and arg from the job's pending awaitable (the job cannot run:
 * nobody else may wake it), calls fn, and wakes the job with fn's result
 * (coro__wake: a worker its mask allows, at its priority).  Nothing is
 * allocated per call.
 *
 * CANCEL.  coro_sched_shutdown(CORO_CANCEL) sets s->cancelling (seq_cst),
 * then calls coro__blocking_cancel, which takes every queued job off the
 * FIFO under the mutex and wakes it with -ECANCELED: fn never runs for
 * them.  An arm checks s->cancelling under the same mutex before it
 * queues, so a call is either refused or found by that sweep.  A call
 * whose fn has started is waited for: its job resumes with fn's result.
 * coro_cancel(job) does the same for one job: it sets CORO__F_CANCEL
 * (seq_cst), then coro__blocking_cancel_jobs takes the flagged jobs off
 * the FIFO under the mutex; an arm checks the flag under the mutex too.
 *
 * DESTROY.  coro__blocking_destroy runs after the scheduler drained (no
 * job is left, so nothing is queued or running): it tells idle threads to
 * exit, waits until every thread has left the pool's code (nthreads == 0,
 * signalled under the mutex by the last one out) and frees the pool.
 * Threads are detached: the count, not pthread_join, says they are gone;
 * the last thing a thread does with the pool is unlock its mutex after
 * the final decrement, and destroy takes that mutex before freeing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_impl.h"

#define DEFAULT_THREADS 512
#define DEFAULT_KEEPALIVE_MS 10000

struct coro__bpool {
    coro_sched_t *s;
    pthread_mutex_t lock;
    pthread_cond_t work;        /* idle threads wait here */
    pthread_cond_t gone;        /* destroy waits here for nthreads == 0 */
    coro_t *head, *tail;        /* queued calls (their jobs), FIFO */
    coro_t *busy;               /* calls in progress (linked through next), for
                                   coro_sched_dump */
    uint32_t max;               /* thread limit */
    uint32_t nthreads, nidle;
    int64_t keepalive_ns;
    bool stopping;
    uint64_t started, retired;  /* counters (tests) */
};

/* test hook: make thread creation fail */
int (*coro__blocking_spawn_hook)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *) = pthread_create;

static void *pool_main(void *arg)
{
    struct coro__bpool *p = arg;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        coro_t *job = p->head;
        if (job) {
            p->head = job->next;
            if (!p->head)
                p->tail = NULL;
            job->next = p->busy;
            p->busy = job;
            pthread_mutex_unlock(&p->lock);
            coro_await_t *aw = &job->top->aw;
            intptr_t (*fn)(void *) = (intptr_t (*)(void *))aw->arg[0].p;
            intptr_t r = fn(aw->arg[1].p);
            pthread_mutex_lock(&p->lock);
            for (coro_t **pp = &p->busy; *pp; pp = &(*pp)->next)
                if (*pp == job) {
                    *pp = job->next;
                    break;
                }
            job->next = NULL;
            pthread_mutex_unlock(&p->lock);
            coro__wake(job, r);         /* from here the job is not ours */
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (p->stopping)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + p->keepalive_ns;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        p->nidle++;
        int rc = pthread_cond_timedwait(&p->work, &p->lock, &ts);
        p->nidle--;
        if (rc == ETIMEDOUT && !p->head) {
            p->retired++;
            break;                      /* idle for a whole keep-alive */
        }
    }
    if (--p->nthreads == 0)
        pthread_cond_broadcast(&p->gone);
    pthread_mutex_unlock(&p->lock);     /* the pool's last touch of p */
    return NULL;
}

int coro__blocking_create(coro_sched_t *s, const coro_sched_config_t *c)
{
    struct coro__bpool *p = coro__alloc(s, sizeof *p);
    pthread_condattr_t ca;

    if (!p)
        return -ENOMEM;
    p->s = s;
    p->max = c->blocking_threads ? c->blocking_threads : DEFAULT_THREADS;
    p->keepalive_ns =
        (int64_t)(c->blocking_keepalive_ms ? c->blocking_keepalive_ms : DEFAULT_KEEPALIVE_MS) *
        1000000;
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&p->gone, NULL);
    s->blocking = p;
    return 0;
}

/* wake every job of a list taken off the FIFO with -ECANCELED */
static void wake_cancelled(coro_t *list)
{
    while (list) {
        coro_t *nx = list->next;
        list->next = NULL;
        coro__wake(list, -ECANCELED);
        list = nx;
    }
}

void coro__blocking_cancel(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;
    coro_t *list;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    list = p->head;
    p->head = p->tail = NULL;
    pthread_mutex_unlock(&p->lock);
    wake_cancelled(list);
}

void coro__blocking_cancel_jobs(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;
    coro_t *list = NULL, **tail = &list;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    for (coro_t *prev = NULL, *j = p->head, *nx; j; j = nx) {
        nx = j->next;
        if (!coro__job_cancelled(j)) {
            prev = j;
            continue;
        }
        if (prev)
            prev->next = nx;
        else
            p->head = nx;
        if (p->tail == j)
            p->tail = prev;
        j->next = NULL;
        *tail = j;
        tail = &j->next;
    }
    pthread_mutex_unlock(&p->lock);
    wake_cancelled(list);
}

void coro__blocking_destroy(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    while (p->nthreads)
        pthread_cond_wait(&p->gone, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->gone);
    pthread_mutex_destroy(&p->lock);
    coro__free(s, p, sizeof *p);
    s->blocking = NULL;
}

void coro__blocking_counts(coro_sched_t *s, uint32_t *threads, uint64_t *started,
                           uint64_t *retired)
{
    struct coro__bpool *p = s->blocking;

    pthread_mutex_lock(&p->lock);
    *threads = p->nthreads;
    *started = p->started;
    *retired = p->retired;
    pthread_mutex_unlock(&p->lock);
}

bool coro__blocking_queued(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;

    pthread_mutex_lock(&p->lock);
    bool q = p->head != NULL;
    pthread_mutex_unlock(&p->lock);
    return q;
}

static int blocking_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    struct coro__bpool *p = s->blocking;
    int r = CORO__ARM_PENDING;

    (void)aw;
    pthread_mutex_lock(&p->lock);
    if (coro__cancelling(s) || p->stopping || coro__job_cancelled(job)) {
        *res = -ECANCELED;
        r = CORO__ARM_READY;
        goto out;
    }
    if (p->nidle == 0 && p->nthreads < p->max) {
        pthread_attr_t at;
        pthread_t t;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = coro__blocking_spawn_hook(&t, &at, pool_main, p);
        pthread_attr_destroy(&at);
        if (rc == 0) {
            p->nthreads++;
            p->started++;
        } else if (p->nthreads == 0) {
            /* no thread to run it, and none can be started: refuse;
             * with threads busy, the call waits for one of them */
            *res = rc == ENOMEM ? -ENOMEM : -EAGAIN;
            r = CORO__ARM_READY;
            goto out;
        }
    }
    job->next = NULL;
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    pthread_cond_signal(&p->work);
out:
    pthread_mutex_unlock(&p->lock);
    return r;
}

static const struct coro_await_ops blocking_ops = { "blocking", blocking_arm };

coro_await_t coro_blocking(intptr_t (*fn)(void *arg), void *arg)
{
    coro_await_t a = { .ops = &blocking_ops };

    if (!fn)
        return coro_ready(-EINVAL);
    a.arg[0].p = (void *)fn;
    a.arg[1].p = arg;
    return a;
}

/* ---- coro_sched_dump (lib/diag.c) ------------------------------------------------- */

/* the queued calls and the calls in progress, under the pool's lock (a
 * job in either list is woken only after leaving it under that lock) */
int coro__blocking_dump(coro_sched_t *s, struct coro__dump *d)
{
    struct coro__bpool *p = s->blocking;
    int n = 0;

    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    for (coro_t *j = p->busy; j; j = j->next, n++)
        coro__dump_job(d, j, "blocking call %p(%p), running on a pool thread",
                       j->top->aw.arg[0].p, j->top->aw.arg[1].p);
    for (coro_t *j = p->head; j; j = j->next, n++)
        coro__dump_job(d, j, "blocking call %p(%p), queued for a pool thread",
                       j->top->aw.arg[0].p, j->top->aw.arg[1].p);
    pthread_mutex_unlock(&p->lock);
    return n;
}
