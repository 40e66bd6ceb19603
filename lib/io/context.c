/* SPDX-License-Identifier: MIT */
/* The I/O context: one per scheduler, made with it and ended with it.
 * Its epoll set holds the eventfd that wakes the poll token's holder, the
 * timerfd of its timers (lib/io/timers.c), the sources other layers add
 * (the parking lot's timerfd), and the fds jobs wait on
 * (lib/io/fd_wait.c); who waits in the set: lib/io/epoll.c.  The
 * scheduling layer reaches it through s->driver, the driver table at the
 * end of this file - a worker's turn, dispatched by its mode, and the
 * unpark - and reads the words create publishes in s->hints; the jobs a
 * turn wakes go back in the worker's batch (sched/sched.h, WOKEN
 * BATCHES).  The layout: lib/io/io_impl.h.
 */
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "io/io_impl.h"

int coro__io_add_source(struct coro__io *io, int fd, void (*cb)(void *arg, struct coro__woken *b),
                        void *arg)
{
    uint32_t i = __atomic_load_n(&io->nsrc, __ATOMIC_RELAXED);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_SRC | i };

    if (i >= MAX_SOURCES)
        return -ENOSPC;
    io->src[i] = (struct source){ fd, cb, arg };
    /* release: the entry before the registration that can report it */
    __atomic_store_n(&io->nsrc, i + 1, __ATOMIC_RELEASE);
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    return 0;
}

void coro__io_parklot_timers_cb(void *arg, struct coro__woken *b)
{
    coro__parklot_timers_fire(arg, b);  /* reads the lot's timerfd */
}

int coro__io_create(coro_sched_t *s, struct coro__io **out)
{
    struct coro__io *io = coro__alloc_aligned(s, sizeof *io);     /* aligned members */
    struct epoll_event ev = { .events = EPOLLIN };
    int rc;

    *out = NULL;
    if (!io)
        return -ENOMEM;
    memset(io, 0, sizeof *io);
    io->s = s;
    /* THE DRIVER'S HINTS (sched/sched.h): our words, which the workers
     * read; before any worker runs */
    s->hints = (struct coro__driver_hints){
        .fd_waiters = &io->nfd, .pending = &io->npending, .activity = &io->poll_gen,
        .lot_timers = coro__parklot_timers_word(s),
    };
    io->evfd = -1;
    coro__tfd_init(&io->timer, -1);
    io->next_deadline = INT64_MAX;
    s->timers_next[0] = INT64_MAX;     /* before any worker runs */
    coro__heap_init(&io->heap, s, 0);   /* no room yet: cannot fail */
    pthread_mutex_init(&io->hlock, NULL);
    io->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (io->epfd < 0)
        goto fail_errno;
    io->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (io->evfd < 0)
        goto fail_errno;
    io->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (io->timer.fd < 0)
        goto fail_errno;
    ev.data.u64 = TAG_EVFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->evfd, &ev) < 0)
        goto fail_errno;
    ev.data.u64 = TAG_TFD;
    if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, io->timer.fd, &ev) < 0)
        goto fail_errno;
    /* the parking lot's timers (lib/wait/wtimer.c) have a timerfd of their
     * own: whoever handles the I/O events fires them */
    if ((rc = coro__io_add_source(io, coro__parklot_timer_fd(s), coro__io_parklot_timers_cb, s)) < 0)
        goto fail;
    if (coro_sched_workers(s) > 0) {
        /* the I/O thread takes no signals: they go to the threads that
         * want them, or stay pending for coro_signal's signalfd */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        io->threaded = true;    /* before the thread reads it */
        rc = -pthread_create(&io->thread, NULL, coro__io_main, io);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc < 0) {
            io->threaded = false;
            goto fail;
        }
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
        /* release: what the caller did before the stop, for coro__io_main's acquire */
        __atomic_store_n(&io->stop, 1, __ATOMIC_RELEASE);
        kick(io);
        /* release: wakes coro__io_main, which acquires the word and then reads stop */
        __atomic_add_fetch(&io->standby, 1, __ATOMIC_RELEASE);
        coro__futex_wake(&io->standby, 1);
        pthread_join(io->thread, NULL);
        io->threaded = false;
    }
    /* every job is done: nothing remains (a frame an entry names may be
     * gone: the array goes without a look at them) */
    coro__heap_fini(&io->heap);
    for (uint32_t c = 0; c < NCHUNKS; c++)
        if (io->chunks[c])
            coro__free(io->s, io->chunks[c], CHUNK * sizeof(struct fd_entry));
    pthread_mutex_destroy(&io->hlock);
    if (io->timer.fd >= 0)
        close(io->timer.fd);
    coro__tfd_fini(&io->timer);
    if (io->evfd >= 0)
        close(io->evfd);
    if (io->epfd >= 0)
        close(io->epfd);
    coro__free_aligned(io->s, io, sizeof *io);
}

int coro__io_turn(struct coro__io *io, const struct coro__turn *t, struct coro__woken *b)
{
    /* the looks first, without the switch's table: a look is on the path
     * of every wake-up an idle worker takes */
    if (CORO__LIKELY(t->mode == CORO__TURN_LOOK))
        return coro__io_poll_now(io, b);
    switch (t->mode) {
    case CORO__TURN_LOOK:
        return coro__io_poll_now(io, b);
    case CORO__TURN_BUSY:
        return coro__io_poll_busy(io, t->idx, b);
    case CORO__TURN_PARK:
        return coro__io_park(io, t->idx, t->epoch_word, t->epoch, t->activity, b);
    case CORO__TURN_WAIT:
        return coro__io_poll(io, t->timeout_ns);
    case CORO__TURN_OWN_TIMERS:
        *t->next = coro__io_fire_own(io, t->idx, t->try_, b);
        return 0;
    case CORO__TURN_DUE_TIMERS:
        return coro__io_fire_due(io, b);
    }
    return -EINVAL;
}

bool coro__io_unpark(struct coro__io *io, int idx)
{
    if (!io->threaded) {
        kick(io);       /* the driving thread may wait in epoll */
        return false;
    }
    return coro__io_wake_poller(io, idx);
}

/* the event driver of the scheduling layer (sched/sched.h struct
 * coro__driver): the workers reach these through s->driver */
const struct coro__driver coro__io_driver = {
    .turn = coro__io_turn,
    .unpark = coro__io_unpark,
};
