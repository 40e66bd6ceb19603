/* SPDX-License-Identifier: MIT */
/* Forks: children spawned together and awaited together (coro_fork_init,
 * coro_fork_spawn, CORO_FORK_JOIN).  Layer 5 (the runtime).
 *
 * A fork is the parent's own: only the job that spawns into it joins it,
 * so its fields need no atomics.  Each child is spawned pinned
 * (coro__spawn_pinned): its claim takes one JOINERS unit of its state
 * word, so that its finish leaves the frame where it is - a pool frame is
 * not given back, a caller-owned one cannot be spawned again - until the
 * fork has read its result and dropped the unit.  Whoever comes last of
 * the finish and that drop gives a pool frame back, as for a thread
 * joiner (rt/join.c): the finisher when the unit was gone at its CAS or
 * when it clears EXITING, else the fork.
 *
 * The join awaits each child with coro_done, so that a child still queued
 * on the parent's worker runs at once inside the parent's step (JOINING
 * INLINE, sched/run.c): the first child spawned in a step waits in the
 * LIFO slot, the later ones in the local ring, the last the newest.  So
 * the join takes the first, then the others from the last back: each is
 * then where the parent's worker takes it back, unless a thief took it. */
#include <errno.h>
#include <limits.h>

#include "rt/rt.h"
#include "sched/frame.h"

int coro_fork_init(coro_fork_t *f, coro_t **kids, intptr_t *results, size_t cap)
{
    if (!f || !kids || cap == 0 || cap > INT_MAX)
        return -EINVAL;
    f->kids = kids;
    f->results = results;
    f->cap = (uint32_t)cap;
    f->n = f->joined = 0;
    f->out = 0;
    return 0;
}

int coro_fork_spawn(coro_fork_t *f, coro_sched_t *s, coro_t *co, coro_fn fn,
                    const coro_spawn_opts_t *opts)
{
    if (!f || !f->kids)
        return -EINVAL;
    if (f->out || f->joined)
        return -EBUSY;      /* a join is under way */
    if (f->n >= f->cap)
        return -ENOSPC;
    int rc = coro__spawn_pinned(s, co, fn, opts);
    if (rc < 0)
        return rc;
    f->kids[f->n++] = co;
    return 0;
}

/* the index of the child the join awaits p-th (top of file) */
static inline uint32_t order(const coro_fork_t *f, uint32_t p)
{
    return p == 0 ? 0 : f->n - p;
}

/* drop the fork's unit of co; the last of it and the finish gives a pool
 * frame back */
static void unpin(coro_t *co)
{
    /* acq_rel: our reads of the frame (its result) happen before whoever
     * gives it back; acquire: the finisher's writes before we do */
    uint32_t left = __atomic_sub_fetch(&co->state, CORO__JOINER_ONE, __ATOMIC_ACQ_REL);
    if ((left & CORO__F_POOL) && !(left & CORO__JOINERS_MASK) &&
        (left & CORO__S_MASK) == CORO__S_DONE && !(left & CORO__F_EXITING))
        coro__frame_release(co);
}

int coro_fork_pending(coro_fork_t *f, intptr_t last)
{
    if (!f || !f->kids)
        return -EINVAL;
    if (f->out) {
        f->out = 0;
        uint32_t k = order(f, f->joined);
        coro_t *co = f->kids[k];
        /* acquire: pairs with the finish's release: the result is there */
        uint32_t st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
        if ((st & CORO__S_MASK) == CORO__S_DONE) {
            if (f->results)
                f->results[k] = co->result;
            unpin(co);
            f->joined++;
        } else {
            /* the await ended before the child did: the parent was
             * cancelled or passed its deadline.  The children left are
             * cancelled and let go (a pool frame goes back at its finish) */
            int err = last < 0 ? (int)last : -ECANCELED;
            for (; f->joined < f->n; f->joined++) {
                coro_t *c = f->kids[order(f, f->joined)];
                coro_cancel(c);
                unpin(c);
            }
            f->n = f->joined = 0;
            return err;
        }
    }
    if (f->joined == f->n) {
        f->n = f->joined = 0;       /* joined: the fork may be used again */
        return 0;
    }
    return (int)(f->n - f->joined);
}

coro_await_t coro_fork_next(coro_fork_t *f)
{
    if (!f || !f->kids || f->joined >= f->n)
        return coro_ready(-EINVAL);
    f->out = 1;
    return coro_done(f->kids[order(f, f->joined)]);
}
