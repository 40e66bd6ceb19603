/* SPDX-License-Identifier: MIT */
/* The I/O context: one epoll set per scheduler, the registration queue,
 * the fd table and the timers, run by a dedicated I/O thread (or, in
 * single-threaded mode, by the thread that drives the scheduler, inside
 * coro__io_poll).
 *
 * REGISTRATION.  An I/O awaitable's constructor has already tried its
 * system call on the worker and got EAGAIN.  The worker then calls
 * coro__io_arm (the job is SUSPENDED), which pushes the job itself onto
 * io->head, an intrusive Treiber stack linked through coro_t.next: no
 * allocation.  The push that finds the stack empty writes the eventfd
 * once; later pushes of the same batch see a non-empty stack and do not
 * (the I/O context reads the eventfd BEFORE it takes the stack, so a push
 * that saw "not empty" is always taken by a drain that follows the read).
 * The I/O context takes the whole stack with one exchange, reverses it
 * into arrival order and handles each registration.  After its push, arm
 * never touches the job again: only the I/O context owns it, until it
 * calls coro__wake exactly once.
 *
 * Why not ck_stack: its entries are struct ck_stack_entry, and the job's
 * link is a coro_t *; and ck's inline-assembly atomics are invisible to
 * ThreadSanitizer.  The stack here is the same algorithm (ck_stack_push_upmc
 * + ck_stack_batch_pop_upmc) on GCC atomics.  Push-only plus take-all has
 * no ABA problem: a push's CAS only checks that the head is still the
 * value its link points to.
 *
 * Who touches what: head and npending are shared (atomics).  Everything
 * else - the fd table, the heap, the epoll interest set's contents - is
 * touched by the I/O context only: the I/O thread, or in single-threaded
 * mode the one thread driving the scheduler (which holds its drive lock).
 *
 * READINESS.  Every waiting fd is armed EPOLLONESHOT with the directions
 * that have a waiter (EPOLL_CTL_MOD, or ADD when epoll does not know the
 * fd: it forgets fds on close).  MOD re-checks readiness, so data that
 * arrived between the worker's EAGAIN and the arming still reports.  One
 * readiness event disarms the fd: it resumes at most one reader and one
 * writer, once each.  The I/O context performs the operation itself
 * (read, write, accept ...), so the resumed job has its result; an
 * operation that still gets EAGAIN (spurious readiness) keeps waiting and
 * the fd is re-armed.
 *
 * TIMERS: one binary heap (lib/timer.c) behind one timerfd set, absolute,
 * to the earliest deadline.  A completed fd wait removes its timer
 * (O(log n)); sleeps are only removed by firing or by cancel.
 *
 * CANCEL: coro_sched_shutdown(CORO_CANCEL) sets s->cancelling, then calls
 * coro__io_cancel_all, which kicks the context.  The context checks the
 * flag for every registration it takes (completing it at once with
 * -ECANCELED) and, once it sees the flag, sweeps every waiter and timer
 * with -ECANCELED.  A registration taken before the flag was visible is
 * in the table when the sweep runs, which is after it: none slips between.
 *
 * ONE JOB (coro_cancel): the canceller sets the job's CORO__F_CANCEL
 * (seq_cst), then cancel_req (seq_cst) and kicks.  Each registration taken
 * is checked for the flag; each round, after its drain, exchanges
 * cancel_req and, if it was set, completes every waiter and sleep whose job
 * carries the flag with -ECANCELED.  A registration drained without seeing
 * the flag is in the table when the exchange that sees the request runs:
 * in this round or a later one, since the request follows the flag.
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "io_impl.h"

#define TAG_EVFD (1ull << 62)
#define TAG_TFD (1ull << 61)
#define TAG_LOT (1ull << 60)    /* the lot's timerfd (lib/lot.c owns it) */
#define MAX_EVENTS 256
#define NO_TIMER (-1)

struct fdent {
    coro_t *w[2];           /* the waiting reader / writer */
    int32_t hidx[2];        /* their timers' heap indexes, NO_TIMER = none */
};

struct coro__io {
    coro_sched_t *s;
    int epfd, evfd, tfd;
    bool threaded;
    pthread_t thread;

    /* shared */
    coro_t *head __attribute__((aligned(CORO__CACHELINE)));    /* registration stack */
    uint32_t npending;      /* registrations not yet completed (+ stand-ins) */
    uint32_t stop;          /* the I/O thread exits */
    uint32_t cancel_req;    /* coro_cancel: sweep the flagged jobs */

    /* the I/O context only */
    struct fdent *fds __attribute__((aligned(CORO__CACHELINE)));
    uint32_t nfds;
    struct coro__heap heap;
    int64_t tfd_deadline;   /* what the timerfd is set to, INT64_MAX = disarmed */
    bool swept;
};

static const struct coro__io_ops close_ops = {
    { "close", coro__io_arm }, CORO__IOK_CLOSE, 0, NULL, NULL, NULL,
};

/* ---- the registration stack --------------------------------------------------- */

static void kick(struct coro__io *io)
{
    uint64_t one = 1;
    ssize_t r = write(io->evfd, &one, sizeof one);
    (void)r;    /* EAGAIN: the counter is saturated, the context is awake anyway */
}

static void submit(struct coro__io *io, coro_t *node)
{
    /* relaxed: io_pending is a hint for the single-threaded driver, which
     * is the only pusher there (or is kicked) */
    __atomic_add_fetch(&io->npending, 1, __ATOMIC_RELAXED);
    coro_t *old = __atomic_load_n(&io->head, __ATOMIC_RELAXED);
    do {
        node->next = old;
        /* release: the job's frame (its awaitable) and link are visible to
         * the context's acquire exchange in take_all */
    } while (!__atomic_compare_exchange_n(&io->head, &old, node, true, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    if (!old)
        kick(io);
}

/* the whole stack, oldest first */
static coro_t *take_all(struct coro__io *io)
{
    /* acquire: pairs with submit's release CAS */
    coro_t *list = __atomic_exchange_n(&io->head, NULL, __ATOMIC_ACQUIRE), *rev = NULL;
    while (list) {
        coro_t *nx = list->next;
        list->next = rev;
        rev = list;
        list = nx;
    }
    return rev;
}

int coro__io_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    (void)aw;
    (void)res;
    submit(coro__sched_io(s), job);
    return CORO__ARM_PENDING;   /* the job is the context's now */
}

/* ---- completing ---------------------------------------------------------------------- */

static void finish(struct coro__io *io, coro_t *job, intptr_t res)
{
    const struct coro__io_ops *ops = coro__io_ops_of(&job->top->aw);
    if (ops->fini)
        ops->fini(&job->top->aw);
    __atomic_sub_fetch(&io->npending, 1, __ATOMIC_RELAXED);
    job->flags |= CORO__FL_IOWAKE;  /* counted by the worker that runs it */
    coro__wake(job, res);       /* from here the job is not ours */
}

static void node_free(struct coro__io *io, coro_t *node)
{
    coro__free(io->s, node, sizeof *node);
    __atomic_sub_fetch(&io->npending, 1, __ATOMIC_RELAXED);
}

/* ---- the fd table ------------------------------------------------------------------------ */

static void heap_moved(void *ctx, const struct coro__tnode *t, uint32_t idx)
{
    struct coro__io *io = ctx;
    io->fds[t->aux / 2].hidx[t->aux % 2] = (int32_t)idx;
}

static int fd_grow(struct coro__io *io, int fd)
{
    if ((uint32_t)fd < io->nfds)
        return 0;
    uint32_t n = io->nfds ? io->nfds : 1024;
    while (n <= (uint32_t)fd)
        n *= 2;
    struct fdent *t = coro__alloc(io->s, n * sizeof *t);
    if (!t)
        return -ENOMEM;
    if (io->nfds)
        memcpy(t, io->fds, io->nfds * sizeof *t);
    for (uint32_t i = io->nfds; i < n; i++)
        t[i].hidx[0] = t[i].hidx[1] = NO_TIMER;
    coro__free(io->s, io->fds, io->nfds * sizeof *t);
    io->fds = t;
    io->nfds = n;
    return 0;
}

/* take the waiter of fd in dir off the table (and its timer off the heap) */
static coro_t *fd_take(struct coro__io *io, int fd, int dir)
{
    struct fdent *e = &io->fds[fd];
    coro_t *job = e->w[dir];
    struct coro__tnode t;

    e->w[dir] = NULL;
    if (e->hidx[dir] != NO_TIMER) {
        coro__heap_remove(&io->heap, (uint32_t)e->hidx[dir], &t);
        e->hidx[dir] = NO_TIMER;
    }
    return job;
}

static void fd_complete(struct coro__io *io, int fd, int dir, intptr_t res)
{
    coro_t *job = fd_take(io, fd, dir);
    if (job)
        finish(io, job, res);
}

/* arm fd for the directions that have waiters; on failure resume them */
static void fd_arm(struct coro__io *io, int fd)
{
    struct fdent *e = &io->fds[fd];
    struct epoll_event ev = { .events = EPOLLONESHOT, .data.u64 = (uint64_t)fd };

    if (!e->w[0] && !e->w[1])
        return;
    if (e->w[0])
        ev.events |= EPOLLIN | EPOLLRDHUP;
    if (e->w[1])
        ev.events |= EPOLLOUT;
    if (epoll_ctl(io->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        return;
    if (errno == ENOENT && epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
        return;
    int err = errno == ENOENT ? EBADF : errno;
    fd_complete(io, fd, 0, -err);
    fd_complete(io, fd, 1, -err);
}

static void fd_event(struct coro__io *io, int fd, uint32_t events)
{
    static const uint32_t want[2] = {
        EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR,
        EPOLLOUT | EPOLLHUP | EPOLLERR,
    };
    struct fdent *e;

    if ((uint32_t)fd >= io->nfds)
        return;
    e = &io->fds[fd];
    for (int dir = 0; dir < 2; dir++) {
        coro_t *job = e->w[dir];
        intptr_t res;
        if (!job || !(events & want[dir]))
            continue;
        coro_await_t *aw = &job->top->aw;
        if (coro__io_ops_of(aw)->attempt(aw, &res))
            fd_complete(io, fd, dir, res);
    }
    fd_arm(io, fd);     /* ONESHOT disarmed it: re-arm for who still waits */
}

/* ---- timers --------------------------------------------------------------------------------- */

static void timer_fire(struct coro__io *io, const struct coro__tnode *t, intptr_t res)
{
    switch (t->kind) {
    case CORO__IOK_SLEEP: {
        coro_t *job = t->p;
        /* a sleep cut short by the job's deadline times out */
        if (res == 0 && t->deadline < job->top->aw.timeout)
            res = -ETIMEDOUT;
        finish(io, job, res);
        break;
    }
    case CORO__IOK_FD: {
        int fd = (int)(t->aux / 2), dir = (int)(t->aux % 2);
        io->fds[fd].hidx[dir] = NO_TIMER;      /* already off the heap */
        fd_complete(io, fd, dir, res == 0 ? -ETIMEDOUT : res);
        break;
    }
    }
}

static int expire(struct coro__io *io)
{
    const struct coro__tnode *top = coro__heap_top(&io->heap);
    struct coro__tnode t;
    int n = 0;

    if (!top)
        return 0;
    int64_t now = coro__now();
    while ((top = coro__heap_top(&io->heap)) && top->deadline <= now) {
        coro__heap_remove(&io->heap, 0, &t);
        timer_fire(io, &t, 0);
        n++;
    }
    return n;
}

static void tfd_update(struct coro__io *io)
{
    const struct coro__tnode *top = coro__heap_top(&io->heap);
    int64_t d = top ? top->deadline : INT64_MAX;
    struct itimerspec its = { { 0, 0 }, { 0, 0 } };

    if (d == io->tfd_deadline)
        return;
    io->tfd_deadline = d;
    if (d != INT64_MAX) {
        if (d <= 0)
            d = 1;      /* 0 would disarm */
        its.it_value.tv_sec = d / 1000000000;
        its.it_value.tv_nsec = d % 1000000000;
    }
    timerfd_settime(io->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ---- handling registrations -------------------------------------------------------------------- */

static int timer_add(struct coro__io *io, const struct coro__tnode *t)
{
    return coro__heap_push(&io->heap, t);
}

static void reg_close(struct coro__io *io, coro_t *node)
{
    int fd = (int)node->aw.arg[0].i;

    if ((uint32_t)fd < io->nfds) {
        fd_complete(io, fd, 0, -EBADF);
        fd_complete(io, fd, 1, -EBADF);
    }
    epoll_ctl(io->epfd, EPOLL_CTL_DEL, fd, NULL);      /* may not be there */
    close(fd);
    node_free(io, node);
}

static void reg_fd(struct coro__io *io, coro_t *job, coro_await_t *aw, int dir)
{
    int fd = (int)aw->arg[0].i;
    int rc;

    if ((rc = fd_grow(io, fd)) < 0) {
        finish(io, job, rc);
        return;
    }
    struct fdent *e = &io->fds[fd];
    if (e->w[dir]) {
        finish(io, job, -EBUSY);    /* one reader and one writer per fd */
        return;
    }
    int64_t deadline = coro__bound_deadline(job, aw->timeout);     /* .deadline */
    if (deadline >= 0) {
        struct coro__tnode t = { deadline, CORO__IOK_FD, (uint32_t)fd * 2 + (uint32_t)dir, NULL };
        if ((rc = timer_add(io, &t)) < 0) {
            finish(io, job, rc);
            return;
        }
        /* heap_moved has set e->hidx[dir] */
    }
    e->w[dir] = job;
    fd_arm(io, fd);
}

static void reg_one(struct coro__io *io, coro_t *job)
{
    coro_await_t *aw = &job->top->aw;
    const struct coro__io_ops *ops = coro__io_ops_of(aw);
    int rc;

    if (ops->kind == CORO__IOK_CLOSE) {
        reg_close(io, job);         /* even when cancelling: it frees an fd */
        return;
    }
    /* the check where the context inserts: see CANCEL at the top */
    if (coro__cancelling(io->s) || coro__job_cancelled(job)) {
        finish(io, job, -ECANCELED);
        return;
    }
    if (ops->kind == CORO__IOK_SLEEP) {
        /* bounded by the job's deadline: timer_fire tells the two apart */
        struct coro__tnode t = { coro__bound_deadline(job, aw->timeout), CORO__IOK_SLEEP, 0, job };
        if ((rc = timer_add(io, &t)) < 0)
            finish(io, job, rc);
        return;
    }
    if (ops->prepare && (rc = ops->prepare(aw)) < 0) {
        __atomic_sub_fetch(&io->npending, 1, __ATOMIC_RELAXED);
        coro__wake(job, rc);        /* nothing acquired: no fini */
        return;
    }
    reg_fd(io, job, aw, ops->dir);
}

static int drain(struct coro__io *io)
{
    int n = 0;

    for (coro_t *j = take_all(io), *nx; j; j = nx) {
        nx = j->next;       /* read first: the wake reuses the link */
        j->next = NULL;
        reg_one(io, j);
        n++;
    }
    return n;
}

/* resume every waiter and drop every timer: CORO_CANCEL */
static int sweep(struct coro__io *io)
{
    struct coro__tnode t;
    int n = 0;

    while (io->heap.n) {
        coro__heap_remove(&io->heap, io->heap.n - 1, &t);
        timer_fire(io, &t, -ECANCELED);
        n++;
    }
    for (uint32_t fd = 0; fd < io->nfds; fd++) {
        for (int dir = 0; dir < 2; dir++) {
            if (io->fds[fd].w[dir]) {
                fd_complete(io, (int)fd, dir, -ECANCELED);
                n++;
            }
        }
    }
    return n;
}

/* resume the waiters and sleeps of jobs that carry CORO__F_CANCEL */
static int sweep_flagged(struct coro__io *io)
{
    struct coro__tnode t;
    int n = 0;

    for (uint32_t i = 0; i < io->heap.n;) {
        const struct coro__tnode *e = &io->heap.a[i];
        if (e->kind == CORO__IOK_SLEEP && coro__job_cancelled(e->p)) {
            coro__heap_remove(&io->heap, i, &t);
            timer_fire(io, &t, -ECANCELED);
            n++;
            i = 0;      /* the heap moved entries: look again from the top */
        } else {
            i++;
        }
    }
    for (uint32_t fd = 0; fd < io->nfds; fd++) {
        for (int dir = 0; dir < 2; dir++) {
            coro_t *w = io->fds[fd].w[dir];
            if (w && coro__job_cancelled(w)) {
                fd_complete(io, (int)fd, dir, -ECANCELED);
                n++;
            }
        }
    }
    return n;
}

/* ---- the loop -------------------------------------------------------------------------------------- */

/* One round: registrations, cancel, timers, then wait in epoll up to
 * timeout_ns (0 when the round already did something) and handle what is
 * ready.  Returns registrations handled + jobs woken; *kicked tells
 * whether the eventfd fired. */
static int io_round(struct coro__io *io, int64_t timeout_ns, bool *kicked)
{
    struct epoll_event evs[MAX_EVENTS];
    int done = 0, ms;

    *kicked = false;
    done += drain(io);
    if (!io->swept && coro__cancelling(io->s)) {
        io->swept = true;
        done += sweep(io);
    }
    /* seq_cst: after the drain; pairs with coro__io_cancel_jobs' store,
     * made after the job's flag */
    if (__atomic_load_n(&io->cancel_req, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&io->cancel_req, 0, __ATOMIC_SEQ_CST))
        done += sweep_flagged(io);
    done += expire(io);
    tfd_update(io);
    if (done || timeout_ns == 0)
        ms = 0;
    else if (timeout_ns < 0)
        ms = -1;
    else
        ms = (int)((timeout_ns + 999999) / 1000000 > INT_MAX ? INT_MAX
                                                             : (timeout_ns + 999999) / 1000000);
    int n = epoll_wait(io->epfd, evs, MAX_EVENTS, ms);
    bool timer = false;
    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        if (tag == TAG_EVFD) {
            uint64_t v;
            ssize_t r = read(io->evfd, &v, sizeof v);   /* before the next take_all */
            (void)r;
            *kicked = true;
        } else if (tag == TAG_TFD) {
            uint64_t v;
            ssize_t r = read(io->tfd, &v, sizeof v);
            (void)r;
            timer = true;
        } else if (tag == TAG_LOT) {
            done += coro__lot_timers_fire(io->s);   /* reads its timerfd */
        } else {
            fd_event(io, (int)tag, evs[i].events);
            done++;
        }
    }
    if (timer || n > 0) {
        done += expire(io);
        tfd_update(io);
    }
    return done;
}

#define IO_SPIN 64

static void *io_main(void *arg)
{
    struct coro__io *io = arg;
    bool kicked;

    pthread_setname_np(pthread_self(), "coro-io");
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);     /* timers fire on time */
    int idle = 0;
    while (!__atomic_load_n(&io->stop, __ATOMIC_ACQUIRE)) {
        /* after a round that did something, look again without sleeping
         * for up to IO_SPIN rounds (giving the CPU away in between): the
         * next event of a conversation usually comes within microseconds,
         * and waking a thread blocked in epoll_wait costs tens of them on
         * a VM.  io_pingpong, 2 workers: 92 -> 10 us per round trip. */
        int did = io_round(io, idle < IO_SPIN ? 0 : -1, &kicked);
        if (did)
            idle = 0;
        else if (++idle < IO_SPIN)
            sched_yield();
    }
    return NULL;
}

/* ---- the hooks ---------------------------------------------------------------------------------------- */

int coro__io_create(coro_sched_t *s, struct coro__io **out)
{
    struct coro__io *io = coro__alloc_aligned(s, sizeof *io);     /* aligned members */
    struct epoll_event ev = { .events = EPOLLIN };
    int rc;

    *out = NULL;
    if (!io)
        return -ENOMEM;
    io->s = s;
    io->evfd = io->tfd = -1;
    io->tfd_deadline = INT64_MAX;
    io->heap.s = s;
    io->heap.moved = heap_moved;
    io->heap.ctx = io;
    io->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (io->epfd < 0)
        goto fail_errno;
    io->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (io->evfd < 0)
        goto fail_errno;
    io->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (io->tfd < 0)
        goto fail_errno;
    ev.data.u64 = TAG_EVFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->evfd, &ev) < 0)
        goto fail_errno;
    ev.data.u64 = TAG_TFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->tfd, &ev) < 0)
        goto fail_errno;
    ev.data.u64 = TAG_LOT;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, coro__lot_timer_fd(s), &ev) < 0)
        goto fail_errno;
    if (coro_sched_workers(s) > 0) {
        /* the I/O thread takes no signals: they go to the threads that
         * want them, or stay pending for coro_signal's signalfd */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = -pthread_create(&io->thread, NULL, io_main, io);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc < 0)
            goto fail;
        io->threaded = true;
    }
    *out = io;
    return 0;
fail_errno:
    rc = -errno;
fail:
    coro__io_destroy(io);
    return rc;
}

void coro__io_destroy(struct coro__io *io)
{
    if (!io)
        return;
    if (io->threaded) {
        __atomic_store_n(&io->stop, 1, __ATOMIC_RELEASE);
        kick(io);
        pthread_join(io->thread, NULL);
        io->threaded = false;
    }
    /* after a drain nothing but stand-ins can be left: close requests
     * still to perform */
    drain(io);
    struct coro__tnode t;
    while (io->heap.n) {
        coro__heap_remove(&io->heap, io->heap.n - 1, &t);
        timer_fire(io, &t, -ECANCELED);     /* cannot happen after a drain */
    }
    coro__heap_fini(&io->heap);
    coro__free(io->s, io->fds, io->nfds * sizeof *io->fds);
    if (io->tfd >= 0)
        close(io->tfd);
    if (io->evfd >= 0)
        close(io->evfd);
    if (io->epfd >= 0)
        close(io->epfd);
    coro__free_aligned(io->s, io, sizeof *io);
}

void coro__io_cancel_all(struct coro__io *io)
{
    /* s->cancelling is already set: the context sweeps once it sees it */
    kick(io);
}

void coro__io_cancel_jobs(struct coro__io *io)
{
    /* seq_cst: after the caller's flag, before the kick (CANCEL, top) */
    __atomic_store_n(&io->cancel_req, 1, __ATOMIC_SEQ_CST);
    kick(io);
}

void coro__io_kick(struct coro__io *io)
{
    kick(io);
}

bool coro__io_pending(struct coro__io *io)
{
    return __atomic_load_n(&io->npending, __ATOMIC_RELAXED) != 0 ||
           __atomic_load_n(&io->head, __ATOMIC_RELAXED) != NULL ||
           coro__lot_timers_pending(io->s);
}

int coro__io_poll(struct coro__io *io, int64_t timeout_ns)
{
    bool kicked;

    if (io->threaded)
        return -EINVAL;
    if (!coro__io_pending(io) && !(coro__cancelling(io->s) && !io->swept) &&
        !__atomic_load_n(&io->cancel_req, __ATOMIC_RELAXED))
        return -EAGAIN;     /* nothing waits on I/O: never block */
    return io_round(io, timeout_ns, &kicked);
}

static coro_t *node_new(struct coro__io *io, const struct coro__io_ops *ops)
{
    coro_t *node = coro__alloc(io->s, sizeof *node);
    if (!node)
        return NULL;
    node->top = node;
    node->aw.ops = &ops->base;
    return node;
}

int coro_close(coro_sched_t *s, int fd)
{
    coro_t *node;

    if (fd < 0)
        return -EBADF;
    if (!s)
        s = coro_sched_current();
    if (!s)
        return close(fd) == 0 ? 0 : -errno;
    struct coro__io *io = coro__sched_io(s);
    if (!(node = node_new(io, &close_ops)))
        return -ENOMEM;
    node->aw.arg[0].i = fd;
    submit(io, node);
    return 0;
}
