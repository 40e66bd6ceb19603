/* SPDX-License-Identifier: MIT */
/* coro_sched_dump's part of the I/O context (lib/rt/diag.c): the jobs
 * waiting on fds and the sleepers.
 */
#include <pthread.h>

#include "io/io_impl.h"

/* the jobs waiting on fds (under each entry's lock; their timers under
 * hlock, taken after the entry's as fd_wait does) and the sleepers (under
 * hlock): none of them can be woken while the lock is held */
int coro__io_dump(struct coro__io *io, struct coro__dump *d)
{
    static const char *const dirs[2] = { "readable", "writable" };
    int64_t now = coro__now();
    int n = 0;

    for (uint32_t c = 0; c < NCHUNKS; c++) {
        /* acquire: pairs with ent_get's CAS that published a new chunk */
        struct fd_entry *ch = __atomic_load_n(&io->chunks[c], __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; ch && i < CHUNK; i++) {
            struct fd_entry *e = &ch[i];
            int fd = (int)(c * CHUNK + i);
            ent_lock(e);
            for (int dir = 0; dir < 2; dir++) {
                coro_t *job = e->w[dir];
                if (!job)
                    continue;
                const char *op = job->top->aw.ops ? job->top->aw.ops->name : "?";
                if (e->timed[dir]) {
                    int64_t dl = coro__io_timer_deadline(io, e, dir, now);
                    coro__dump_job(d, job, "fd %d %s (%s), timer %.3f ms left", fd, dirs[dir],
                                   op, (double)(dl - now) / 1e6);
                } else {
                    coro__dump_job(d, job, "fd %d %s (%s)", fd, dirs[dir], op);
                }
                n++;
            }
            ent_unlock(e);
        }
    }
    /* the sleeps: the scheduler's heap (home 0), then each worker's */
    for (uint32_t home = 0; home <= coro__wt_homes(io->s); home++) {
        pthread_mutex_t *lock = home ? &coro__wt_get(io->s, home)->lock : &io->hlock;
        struct coro__heap *h = home ? &coro__wt_get(io->s, home)->heap : &io->heap;
        pthread_mutex_lock(lock);
        for (uint32_t k = 0; k < h->cap; k++) {
            const struct coro__timer_record *t = coro__heap_rec(h, k);
            if (!t->p || t->kind != CORO__IOK_SLEEP)
                continue;
            coro__dump_job(d, t->p, "timer (sleep), %.3f ms left",
                           (double)(t->deadline - now) / 1e6);
            n++;
        }
        pthread_mutex_unlock(lock);
    }
    return n;
}
