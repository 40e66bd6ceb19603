/* SPDX-License-Identifier: MIT */
/* private: pool frames (lib/sched/frame*.c, thread_subring.c) as the rest
 * of lib/ uses them - a scheduler's pools made and given back, the check
 * coro_spawn makes, a frame given back at its job's end, a plain thread's
 * submission ring; used by the runtime (rt/) and by the workers' files of
 * sched/.  The slabs' layout is frame_impl.h. */
#ifndef COROKIT_FRAME_H
#define COROKIT_FRAME_H

#include "sched/sched.h"

struct coro__frames;

/* coro__frames_init - make s's frame pools (one per worker slot) and
 * register them for thread-exit handling.  0 or -ENOMEM. */
CORO__HIDDEN int coro__frames_init(coro_sched_t *s);
/* coro__frames_fini - give every slab of s back to the allocator (after
 * the workers stopped).  NULL-safe. */
CORO__HIDDEN void coro__frames_fini(coro_sched_t *s);

/* coro__frames_held - bytes of the slabs s's pools hold (frames in use,
 * the empty and big slabs kept for reuse); racy, for tests and tools */
#ifdef CORO_TEST_HOOKS
CORO__HIDDEN size_t coro__frames_held(coro_sched_t *s);
#endif

/* a pool frame's state byte (lib/sched/frame_slab.c, FREE LISTS) */
enum { CORO__FRAME_FREE = 0, CORO__FRAME_ALLOC = 1, CORO__FRAME_SPAWNED = 2 };

/* coro_t.flags: a pool frame of a small slab, whose header is in the
 * slab's first 64 KiB (set by coro_spawn, read by coro__frame_release) */
#define CORO__FL_SMALL 64u

/* the frame a worker last took from its own pool (lib/sched/frame_slab.c,
 * FRESH); the calling thread's own */
struct coro__fresh {
    void *frame;
    uint8_t *st;
};
extern __thread struct coro__fresh coro__fresh CORO__HIDDEN;

CORO__HIDDEN int coro__frame_check_slow(coro_sched_t *s, const coro_t *co, uint8_t **state);

/* coro__frame_check - called by coro_spawn before it claims co.  Returns
 * 0 when co is not inside a pool frame; 1 when it is, a frame of s that
 * was allocated and not yet spawned (2: the same, of a small slab:
 * CORO__FL_SMALL); -EINVAL for a pool frame of another scheduler or one
 * that is not allocated (given back already); -EBUSY for a pool frame
 * already spawned.  A frame this worker just allocated needs no lookup
 * (FRESH); its state byte says the rest, as in the slow path. */
static inline int coro__frame_check(coro_sched_t *s, const coro_t *co, uint8_t **state)
{
    if ((const void *)co == coro__fresh.frame) {
        struct coro__worker *w = coro__tls_worker;
        if (CORO__LIKELY(w && w->s == s)) {
            *state = coro__fresh.st;
            switch (__atomic_load_n(coro__fresh.st, __ATOMIC_RELAXED)) {
            case CORO__FRAME_ALLOC:
                return 2;
            case CORO__FRAME_SPAWNED:
                return -EBUSY;
            default:
                return -EINVAL;
            }
        }
    }
    return coro__frame_check_slow(s, co, state);
}
/* coro__frame_mark_spawned - after coro_spawn claimed co (check said 1
 * or 2 and set *state).  relaxed: the spawner owns the frame (it won the
 * state CAS); the job's finisher reads it after acquiring the job through
 * a queue */
static inline void coro__frame_mark_spawned(uint8_t *state)
{
    __atomic_store_n(state, CORO__FRAME_SPAWNED, __ATOMIC_RELAXED);
}

/* coro__frame_release - give back the pool frame holding co (spawned);
 * any thread. */
CORO__HIDDEN void coro__frame_release(const coro_t *co);
/* coro__frame_release_on - the same, called on w, a worker of co's
 * scheduler (the caller checked w->s == co->sched) */
CORO__HIDDEN void coro__frame_release_on(struct coro__worker *w, const coro_t *co);

/* coro__frames_flush - a worker of s pushes the frames of other pools it
 * gave back and still holds (its outbox, lib/sched/frame_slab.c) to their
 * owners: before it parks and before it exits.  Other threads: nothing. */
CORO__HIDDEN void coro__frames_flush(coro_sched_t *s);
/* coro__thread_subring - the calling plain thread's submission ring for s,
 * made on first use with the thread's frame cache (lib/sched/thread_subring.c);
 * NULL when there is none (out of memory, or the thread uses more than 8
 * schedulers). */
CORO__HIDDEN struct coro__subring *coro__thread_subring(coro_sched_t *s);

#endif
