/* SPDX-License-Identifier: MIT */
/* A timerfd decided under its heap's lock and programmed outside it: the
 * parking lot's (lib/wait/wtimer.c) and the I/O context's
 * (lib/io/timers.c).  timerfd_settime is a system call; under the heap
 * lock, every add, removal and fire of that heap would wait for it.
 *
 * The owner decides the deadline the fd must hold, want, under its heap
 * lock (coro__tfd_want), and after dropping that lock calls
 * coro__tfd_sync, which programs the fd with the newest want under the
 * fd's own lock.  Why the fd ends up right: want is written only under
 * the heap lock, so its modification order is the order of the
 * decisions.  A sync reads want under the fd lock; the lock orders the
 * syncs, and read-read coherence makes each read a decision no older
 * than the one the previous sync read, so the fd is programmed with
 * decisions in their order, never an older over a newer; and the thread
 * that made decision k reads, in its own sync, k or a newer one (its own
 * store comes first in its program).  So once the deciding thread's sync
 * returns, the fd holds its decision or a later one.  Between its unlock
 * and its sync the fd still holds the previous decision, as it did while
 * the system call ran under the heap lock.
 */
#include "wait/wait.h"

void coro__tfd_init(struct coro__tfd *t, int fd)
{
    t->fd = fd;
    t->want = t->set = INT64_MAX;
    pthread_mutex_init(&t->lock, NULL);
}

void coro__tfd_sync(struct coro__tfd *t)
{
    pthread_mutex_lock(&t->lock);
    /* relaxed: the fd lock orders the syncs' reads (see above) */
    int64_t d = __atomic_load_n(&t->want, __ATOMIC_RELAXED);
    if (d != t->set) {
        t->set = d;
        coro__timerfd_arm(t->fd, d);
    }
    pthread_mutex_unlock(&t->lock);
}

void coro__tfd_fini(struct coro__tfd *t)
{
    pthread_mutex_destroy(&t->lock);
}
