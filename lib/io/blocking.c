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
 * started).  The FIFO, the idle stack and the counts are under the pool's
 * mutex.  A queued call is its job: the job is SUSPENDED (its arm
 * returned PENDING) and linked through coro_t.next on the FIFO; the pool
 * owns its wake-up.  A call goes either to an idle thread (handed over,
 * below) or to the FIFO, from which a thread that finishes a call takes
 * the oldest.  The thread that holds the job - unlinked under the mutex or
 * handed over - is its only waker: it reads the pending awaitable (the job
 * cannot run: nobody else may wake it), runs it through its ops' run
 * function (coro_blocking: fn(arg); lib/io/file.c: a read or write of a
 * regular file) and wakes the job with the result (coro__wake: a worker
 * its mask allows, at its priority).  Nothing is allocated per call.
 *
 * HAND-OVER.  An idle thread sits on a LIFO stack (the most recently used
 * thread is reused first, so the others reach their keep-alive and
 * retire) with a word of its own (struct bthread, on its stack): IDLE,
 * WORK (a job was handed over in .job), SLEEP (it waits on the word, a
 * futex), STOP.  An arm pops it under the mutex, stores the job and
 * exchanges WORK into the word; only when the old value was SLEEP does it
 * make the futex_wake system call - still under the mutex, since a thread
 * cannot leave the pool without taking it, so its word (on its stack) is
 * still there.  A thread that just finished a call first spins a little
 * (CORO__BLOCKING_SPIN_NS, yielding the CPU between looks) before it sleeps: a job that
 * makes calls one after another finds it awake and pays no wake-up.
 * Measured with tools/bench (blocking_roundtrip), see docs/benchmarks.md.
 *
 * STARTING THREADS OFF THE WORKERS.  pthread_create takes tens of
 * microseconds (more on a loaded machine): on a worker it delays every job
 * of that worker.  So the pool keeps a spare: whenever a thread takes a
 * call (from the FIFO, or handed over) and leaves no thread idle and none
 * starting, one more is started (up to .blocking_threads) - by that pool
 * thread, before it runs its call, outside the mutex.  A thread being
 * started is counted in nthreads and nstarting from the moment it is
 * reserved (under the mutex), so that "nidle > 0 or nstarting > 0" holds
 * whenever the pool is below its limit, and an arm finds an idle thread or
 * queues behind one that is starting.  A worker starts a thread (in the
 * arm) only when none exists - so that a failure refuses the call with
 * -EAGAIN / -ENOMEM, nothing queued - or after a spare could not be
 * started.  A burst of N calls costs its worker one pthread_create; the
 * rest start one after another on pool threads.
 *
 * START FAILS.  If a start fails, the queued calls wait for the threads
 * that exist: nothing is lost.  A pool thread that fails to start a spare
 * is itself one of them.  But calls may queue behind a thread that is only
 * starting (an arm found nthreads > 0 while another arm's start was under
 * way): when the failed start leaves nthreads == 0, nobody would ever take
 * them, so start_thread takes them off the FIFO, under the mutex in the
 * same step as the count, and wakes them with -EAGAIN (-ENOMEM) - fn never
 * runs, as for the arm that is refused.  Any thread that exists looks at
 * the FIFO before it leaves (a retiring one is idle, and an arm hands over
 * to an idle thread rather than queue), so nthreads > 0 means a taker.
 *
 * CANCEL AND DEADLINES.  A call has started when its thread, holding the
 * job, has checked the job's cancel flag, the scheduler's cancelling flag
 * and the job's .deadline and found none: then fn runs and the job waits
 * for it and gets its result, whatever happens meanwhile (its next await
 * sees the cancel or the deadline).  Before that point the call ends
 * -ECANCELED (or -ETIMEDOUT past the deadline) and fn never runs.
 * coro_sched_shutdown(CORO_CANCEL) sets s->cancelling (seq_cst), then
 * calls coro__blocking_cancel, which takes every queued job off the FIFO
 * under the mutex and wakes it with -ECANCELED.  An arm checks
 * s->cancelling under the same mutex before it queues, so a call is either
 * refused, found by that sweep, or held by a thread that checks the flag
 * before it starts.  coro_cancel(job) does the same for one job: it sets
 * CORO__F_CANCEL (seq_cst), then coro__blocking_cancel_one takes that job
 * off the FIFO if it is there (QUEUED, below); a sweep,
 * coro__blocking_cancel_jobs, takes every flagged job off.  A queued call
 * whose deadline passes is not woken at the deadline: it ends -ETIMEDOUT
 * when a thread reaches it.
 *
 * QUEUED.  The FIFO is linked both ways, so that a cancel of one job
 * unlinks it in O(1) whatever waits before it: coro_t.next, and the
 * previous job in coro_t.wait_obj (a call on the pool waits in no parking
 * lot, whose field that is; the joiner registry links its waiters the same
 * way).  CORO__F_POOLQ in the job's state word says the job is on the
 * FIFO: set and cleared under the mutex with the links, an atomic OR/AND
 * because other threads OR their flags into that word.  A canceller reads
 * it under the mutex: set, the links are the pool's to change; clear, the
 * job was taken (or never queued) and its fields are not ours to read.
 *
 * DESTROY.  coro__blocking_destroy runs after the scheduler drained (no
 * job is left, so nothing is queued or running): it tells idle threads to
 * stop, waits until every thread has left the pool's code (nthreads == 0,
 * signalled under the mutex by the last one out) and frees the pool.
 * Threads are detached: the count, not pthread_join, says they are gone;
 * the last thing a thread (or an arm whose start failed) does with the
 * pool is unlock its mutex after the final decrement, and destroy takes
 * that mutex before freeing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io_impl.h"     /* kick: the eventfd, inline (no symbol of the context's files) */


enum { B_IDLE, B_WORK, B_SLEEP, B_STOP };

struct bthread {
    uint32_t word;              /* atomic: B_* */
    coro_t *job;                /* handed over with B_WORK */
    bool spare;                 /* with it: a thread was reserved for us to start */
    struct bthread *next;       /* the idle stack, under the mutex */
};

struct coro__bpool {
    coro_sched_t *s;
    pthread_mutex_t lock;
    pthread_cond_t gone;        /* destroy waits here for nthreads == 0 */
    coro_t *head, *tail;        /* queued calls (their jobs), FIFO */
    coro_t *busy;               /* calls in progress (linked through next), for
                                   coro_sched_dump */
    struct bthread *idle;       /* idle threads, LIFO */
    uint32_t max;               /* thread limit */
    uint32_t nthreads, nidle;
    uint32_t nstarting;         /* reserved or created, not yet in the pool's loop */
    int64_t keepalive_ns;
    bool stopping;
    uint64_t started, retired;  /* counters (tests) */
    uint64_t arm_starts;        /* threads a worker (an arm) started (tests) */
    /* atomic: calls armed and not yet woken, counted for a virtual clock's
     * driver only (coro__blocking_calls): taken off after the wake, so
     * that a driver that reads 0 then finds the job in its queues */
    uint32_t calls;
    bool count;                 /* s->vtime: count calls */
};

#ifdef CORO_TEST_HOOKS
/* test hook: make thread creation fail */
int (*coro__blocking_spawn_hook)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *) = pthread_create;
#endif

static void *pool_main(void *arg);

/* the pool whose thread this is; NULL on every other thread */
static __thread struct coro__bpool *tls_pool;

bool coro__blocking_on_pool(const coro_sched_t *s)
{
    return tls_pool && tls_pool->s == s;
}

static void wake_list(struct coro__bpool *p, coro_t *list, intptr_t res);

/* ---- the FIFO (QUEUED at the top), all under the mutex ---------------------- */

static void q_push(struct coro__bpool *p, coro_t *job)
{
    job->next = NULL;
    job->wait_obj = p->tail;
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    /* relaxed: the mutex orders it for the canceller, who reads it under
     * the mutex; an RMW because other threads OR flags into the word */
    __atomic_fetch_or(&job->state, CORO__F_POOLQ, __ATOMIC_RELAXED);
}

static void q_unlink(struct coro__bpool *p, coro_t *job)
{
    coro_t *prev = job->wait_obj;

    if (prev)
        prev->next = job->next;
    else
        p->head = job->next;
    if (job->next)
        job->next->wait_obj = prev;
    else
        p->tail = prev;
    job->next = NULL;
    job->wait_obj = NULL;
    /* relaxed: as in q_push */
    __atomic_fetch_and(&job->state, ~CORO__F_POOLQ, __ATOMIC_RELAXED);
}

/* the whole FIFO, taken off: a list through next, no job marked queued */
static coro_t *q_take_all(struct coro__bpool *p)
{
    coro_t *list = p->head;

    for (coro_t *j = list; j; j = j->next) {
        j->wait_obj = NULL;
        /* relaxed: as in q_push */
        __atomic_fetch_and(&j->state, ~CORO__F_POOLQ, __ATOMIC_RELAXED);
    }
    p->head = p->tail = NULL;
    return list;
}

/* a virtual clock's driver: a call woken, then counted off.  The wake's
 * kick may have been taken (the driver ran the job) while the count still
 * read 1, and the driver then waits in epoll for the outside world with
 * nothing left to wake it: the last call counted off kicks it again */
static void call_done(struct coro__bpool *p)
{
    /* release: the wake's push before the count a driver acquires */
    if (__atomic_sub_fetch(&p->calls, 1, __ATOMIC_RELEASE) == 0 && p->s->io)
        kick(p->s->io);
}

/* start one pool thread, reserved (nthreads, nstarting, started) under
 * the mutex by the caller, who has since unlocked it.  On failure the
 * reservation is undone here, and if that leaves the pool without any
 * thread, the calls queued behind the one that was to start are refused
 * (START FAILS, top of file); returns 0 or the error (an errno) */
static int start_thread(struct coro__bpool *p)
{
    pthread_attr_t at;
    pthread_t t;
    coro_t *orphans = NULL;

    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = CORO__HOOK(coro__blocking_spawn_hook, pthread_create)(&t, &at, pool_main, p);
    pthread_attr_destroy(&at);
    if (rc == 0)
        return 0;
    pthread_mutex_lock(&p->lock);
    p->nthreads--;
    p->nstarting--;
    p->started--;
    if (p->nthreads == 0) {
        orphans = q_take_all(p);
        pthread_cond_broadcast(&p->gone);
    }
    pthread_mutex_unlock(&p->lock);     /* the last touch of p */
    /* a queued job is live: its scheduler, and p, stay until it is woken */
    wake_list(p, orphans, rc == ENOMEM ? -ENOMEM : -EAGAIN);
    return rc;
}

/* under the mutex: reserve a thread to start */
static void reserve_thread(struct coro__bpool *p)
{
    p->nthreads++;
    p->nstarting++;
    p->started++;
}

/* under the mutex, when a thread took a call: if that left no thread
 * idle and none starting, reserve a spare, which the taker starts */
static bool want_spare(struct coro__bpool *p)
{
    if (p->nidle || p->nstarting || p->nthreads >= p->max || p->stopping)
        return false;
    reserve_thread(p);
    return true;
}

/* under the mutex: hand job to an idle thread; false when none is idle */
static bool hand_over(struct coro__bpool *p, coro_t *job)
{
    struct bthread *t = p->idle;

    if (!t)
        return false;
    p->idle = t->next;
    p->nidle--;
    t->job = job;
    t->spare = want_spare(p);
    /* acq_rel: release publishes .job (and the job's awaitable) to the
     * thread, which loads the word with acquire; acquire pairs with its
     * CAS to SLEEP, so that SLEEP seen means it waits (or will) on the word */
    if (__atomic_exchange_n(&t->word, B_WORK, __ATOMIC_ACQ_REL) == B_SLEEP)
        coro__futex_wake(&t->word, 1);
    return true;
}

/* run the call job holds, unless it was cancelled or its deadline passed
 * before it started, and wake the job with the result */
static void run_call(struct coro__bpool *p, coro_t *job)
{
    /* relaxed: the queue's hand-off (the pool lock, the word's exchange)
     * ordered the arming step's writes of top before us, and the job does
     * not step again before our wake; atomic because the step loop's
     * stores of top are (sched/run.c set_top), as a cancel's read is */
    coro_await_t *aw = &__atomic_load_n(&job->top, __ATOMIC_RELAXED)->aw;
    int64_t dl = coro__job_deadline(job);
    intptr_t r;

    if (coro__cancelling(p->s) || coro__job_cancelled(job))
        r = -ECANCELED;
    else if (dl > 0 && coro__sched_clock(p->s) >= dl)      /* .deadline: s's clock */
        r = -ETIMEDOUT;
    else {
        /* listed while it runs, for coro_sched_dump (one uncontended lock
         * on each side) */
        pthread_mutex_lock(&p->lock);
        job->next = p->busy;
        p->busy = job;
        pthread_mutex_unlock(&p->lock);
        r = ((const struct coro__pool_ops *)aw->ops)->run(aw);
        pthread_mutex_lock(&p->lock);
        for (coro_t **pp = &p->busy; *pp; pp = &(*pp)->next)
            if (*pp == job) {
                *pp = job->next;
                break;
            }
        job->next = NULL;
        pthread_mutex_unlock(&p->lock);
    }
    coro__wake(job, r);         /* from here the job is not ours */
    if (p->count)
        call_done(p);
}

/* wait on the idle stack until a call is handed over (returns it), or a
 * keep-alive passes / destroy stops the thread (NULL: with the mutex held,
 * off the stack) */
static coro_t *wait_idle(struct coro__bpool *p, struct bthread *me)
{
    int64_t t0 = coro__now(), deadline = coro__ns_add(t0, p->keepalive_ns);
    uint32_t w;

    /* spin: acquire pairs with hand_over's exchange (.job is set) */
    while ((w = __atomic_load_n(&me->word, __ATOMIC_ACQUIRE)) == B_IDLE &&
           coro__now() - t0 < CORO__BLOCKING_SPIN_NS)
        sched_yield();
    if (w == B_IDLE) {
        uint32_t idle = B_IDLE;
        /* acq_rel: on failure (a hand-over came) acquire as above; on
         * success release orders nothing but pairs with hand_over's
         * exchange, which then sees SLEEP and wakes us */
        if (__atomic_compare_exchange_n(&me->word, &idle, B_SLEEP, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            w = B_SLEEP;
        else
            w = idle;
    }
    while (w == B_SLEEP) {
        int rc = coro__futex_wait(&me->word, B_SLEEP, deadline);
        /* acquire: pairs with hand_over's exchange (B_WORK: .job is set) */
        w = __atomic_load_n(&me->word, __ATOMIC_ACQUIRE);
        if (w == B_SLEEP && rc == -ETIMEDOUT) {
            pthread_mutex_lock(&p->lock);
            /* acquire: as above; under the lock a hand-over cannot start */
            w = __atomic_load_n(&me->word, __ATOMIC_ACQUIRE);
            if (w == B_SLEEP) {
                /* still on the stack: nobody handed us anything; leave */
                struct bthread **pp = &p->idle;
                while (*pp != me)
                    pp = &(*pp)->next;
                *pp = me->next;
                p->nidle--;
                p->retired++;
                return NULL;
            }
            pthread_mutex_unlock(&p->lock);
        }
    }
    if (w == B_STOP) {
        pthread_mutex_lock(&p->lock);
        return NULL;
    }
    return me->job;
}

static void *pool_main(void *arg)
{
    struct coro__bpool *p = arg;
    struct bthread me = { B_IDLE, NULL, false, NULL };

    tls_pool = p;
    pthread_mutex_lock(&p->lock);
    p->nstarting--;
    for (;;) {
        coro_t *job = p->head;
        if (job) {
            q_unlink(p, job);
            bool spare = want_spare(p);
            pthread_mutex_unlock(&p->lock);
            if (spare)
                start_thread(p);        /* failure: the queue waits for us */
            run_call(p, job);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (p->stopping)
            break;
        __atomic_store_n(&me.word, B_IDLE, __ATOMIC_RELAXED);   /* the mutex orders it */
        me.job = NULL;
        me.spare = false;
        me.next = p->idle;
        p->idle = &me;
        p->nidle++;
        pthread_mutex_unlock(&p->lock);
        job = wait_idle(p, &me);
        if (!job)
            break;                      /* retired or stopped: mutex held */
        if (me.spare)
            start_thread(p);
        run_call(p, job);
        pthread_mutex_lock(&p->lock);
    }
    if (--p->nthreads == 0)
        pthread_cond_broadcast(&p->gone);
    pthread_mutex_unlock(&p->lock);     /* the pool's last touch of p */
    return NULL;
}

int coro__blocking_create(coro_sched_t *s, const coro_sched_config_t *c)
{
    struct coro__bpool *p = coro__alloc(s, sizeof *p);

    if (!p)
        return -ENOMEM;
    memset(p, 0, sizeof *p);
    p->s = s;
    p->max = c->blocking_threads ? c->blocking_threads : CORO__BLOCKING_THREADS;
    p->keepalive_ns = c->blocking_keepalive_ns ? c->blocking_keepalive_ns
                                               : (int64_t)CORO__BLOCKING_KEEPALIVE_MS * 1000000;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->gone, NULL);
    p->count = s->vtime;        /* known by now: create sets up vt first */
    s->blocking = p;
    return 0;
}

/* wake every job of a list taken off the FIFO with res */
static void wake_list(struct coro__bpool *p, coro_t *list, intptr_t res)
{
    while (list) {
        coro_t *nx = list->next;
        list->next = NULL;
        coro__wake(list, res);
        if (p->count)
            call_done(p);
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
    list = q_take_all(p);
    pthread_mutex_unlock(&p->lock);
    wake_list(p, list, -ECANCELED);
}

void coro__blocking_cancel_jobs(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;
    coro_t *list = NULL, **tail = &list;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    for (coro_t *j = p->head, *nx; j; j = nx) {
        nx = j->next;
        if (!coro__job_cancelled(j))
            continue;
        q_unlink(p, j);
        *tail = j;
        tail = &j->next;
    }
    pthread_mutex_unlock(&p->lock);
    wake_list(p, list, -ECANCELED);
}

/* coro_cancel of one job whose awaitable runs on the pool: take it off
 * the FIFO if it is still queued (a thread that holds it checks the flag
 * before the call starts, CANCEL AND DEADLINES), in O(1) (QUEUED) */
void coro__blocking_cancel_one(coro_sched_t *s, coro_t *job)
{
    struct coro__bpool *p = s->blocking;
    coro_t *list = NULL;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    /* relaxed: the bit changes only under the mutex we hold */
    if (__atomic_load_n(&job->state, __ATOMIC_RELAXED) & CORO__F_POOLQ) {
        q_unlink(p, job);
        list = job;
    }
    pthread_mutex_unlock(&p->lock);
    wake_list(p, list, -ECANCELED);
}

void coro__blocking_destroy(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    while (p->idle) {
        struct bthread *t = p->idle;
        p->idle = t->next;
        p->nidle--;
        /* release: pairs with wait_idle's acquire loads; under the mutex,
         * which the thread must take to leave: its word is still there */
        if (__atomic_exchange_n(&t->word, B_STOP, __ATOMIC_ACQ_REL) == B_SLEEP)
            coro__futex_wake(&t->word, 1);
    }
    while (p->nthreads)
        pthread_cond_wait(&p->gone, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_cond_destroy(&p->gone);
    pthread_mutex_destroy(&p->lock);
    coro__free(s, p, sizeof *p);
    s->blocking = NULL;
}

uint32_t coro__blocking_calls(coro_sched_t *s)
{
    /* acquire: pairs with the release after a call's wake */
    return __atomic_load_n(&s->blocking->calls, __ATOMIC_ACQUIRE);
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

#ifdef CORO_TEST_HOOKS
uint64_t coro__blocking_arm_starts(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;

    pthread_mutex_lock(&p->lock);
    uint64_t n = p->arm_starts;
    pthread_mutex_unlock(&p->lock);
    return n;
}
#endif

bool coro__blocking_queued(coro_sched_t *s)
{
    struct coro__bpool *p = s->blocking;

    pthread_mutex_lock(&p->lock);
    bool q = p->head != NULL;
    pthread_mutex_unlock(&p->lock);
    return q;
}

int coro__blocking_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    struct coro__bpool *p = s->blocking;
    bool start = false;

    (void)aw;
    /* counted before any thread can take it (relaxed: only this thread's
     * driver reads it, after the arm); taken off again if refused */
    if (p->count)
        __atomic_add_fetch(&p->calls, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (coro__cancelling(s) || p->stopping || coro__job_cancelled(job)) {
            *res = -ECANCELED;
            pthread_mutex_unlock(&p->lock);
            if (p->count)
                __atomic_sub_fetch(&p->calls, 1, __ATOMIC_RELAXED);
            return CORO__ARM_READY;
        }
        if (hand_over(p, job)) {
            pthread_mutex_unlock(&p->lock);
            return CORO__ARM_PENDING;
        }
        if (p->nthreads > 0)
            break;
        /* no thread at all: start one before queueing, so that a failure
         * refuses the call with nothing queued (outside the mutex: the
         * pool threads and other arms go on meanwhile) */
        reserve_thread(p);
        p->arm_starts++;
        pthread_mutex_unlock(&p->lock);
        int rc = start_thread(p);
        pthread_mutex_lock(&p->lock);
        if (rc != 0 && p->nthreads == 0) {
            /* no thread to run it, and none can be started: refuse */
            *res = rc == ENOMEM ? -ENOMEM : -EAGAIN;
            pthread_mutex_unlock(&p->lock);
            if (p->count)
                __atomic_sub_fetch(&p->calls, 1, __ATOMIC_RELAXED);
            return CORO__ARM_READY;
        }
        /* look again: the new thread may be idle by now */
    }
    /* every thread is busy: queue; start one more here only when no
     * thread is starting (a spare could not be started) */
    if (p->nstarting == 0 && p->nthreads < p->max) {
        reserve_thread(p);
        p->arm_starts++;
        start = true;
    }
    q_push(p, job);
    pthread_mutex_unlock(&p->lock);
    /* the job is not ours any more; p is: the reservation keeps destroy
     * waiting until the thread has left, or start_thread's undo */
    if (start)
        start_thread(p);    /* failure: the busy threads take the call */
    return CORO__ARM_PENDING;
}

static intptr_t run_fn(coro_await_t *aw)
{
    intptr_t (*fn)(void *) = (intptr_t (*)(void *))aw->arg[0].p;
    return fn(aw->arg[1].p);
}

static const struct coro__pool_ops blocking_ops = { { "blocking", coro__blocking_arm }, run_fn };

coro_await_t coro_blocking(intptr_t (*fn)(void *arg), void *arg)
{
    coro_await_t a = { .ops = &blocking_ops.base };

    if (!fn)
        return coro_ready(-EINVAL);
    a.arg[0].p = (void *)fn;
    a.arg[1].p = arg;
    return a;
}

/* ---- coro_sched_dump (lib/rt/diag.c) ------------------------------------------------- */

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
