/* SPDX-License-Identifier: MIT */
/* coro_cancel: the cancel of one job - the pool frame's hold, the read of a
 * suspended job's awaitable, the sweeps that end its wait (the scheduler's
 * life is in runtime.c, every job's cancel at shutdown in shutdown.c). */

#include "sched/frame.h"
#include "rt/rt.h"

/* A pool frame goes back to its pool when its job finishes and nobody
 * holds it (a thread blocked in coro_join, a fork that has not joined
 * it).  Only the job itself and its fork's parent may cancel it
 * (docs/guide.md, "Frame lifetimes"); a cancel from anyone else races the
 * finish and the holders' leaving, and a flag set after the give-back
 * would land in a free block, or in the next job to get the frame.  So
 * the flag goes in with a CAS that fails on a finished (DONE) or idle
 * frame (a given-back block keeps its DONE state word until it is handed
 * out again, then IDLE), and with it, for a pool frame, one unit of
 * JOINERS: the frame stays until the sweeps below are done with it, and
 * whichever of us and the finish comes last gives it back (as a thread
 * joiner does, rt/join.c).  Nothing can protect a call that starts after
 * the give-back: a generation would not help, since the call carries
 * none.
 *
 * READING THE AWAITABLE.  A cancel that finds the job SUSPENDED reads its
 * awaitable to find where it waits (lib/wait/parklot.c CANCEL ONE,
 * lib/io/cancel.c): the innermost frame, aw.ops, the key, a sleep's timer
 * slot in aw.arg[2].  The CAS that saw SUSPENDED also acquired what the
 * body wrote there (its READY -> SUSPENDED RMW is a release), but any
 * waker may end the wait right after that CAS, and the job, run again,
 * would write its next awaitable over the one being read: a data race,
 * and a slot read that could name a later sleep's timer.  So the CAS sets
 * CREAD, and until the RMW that clears it the job cannot run: a wake
 * meanwhile (coro__wake) makes it READY with CQUEUE and does not queue
 * it - the clear returns CQUEUE and we queue it; an arm that completed at
 * once (the arm and our CAS overlap while the state is SUSPENDED) makes
 * it READY and its worker waits for the clear before the body goes on
 * (sched/run.c, ready_again).  Every change of the word is an RMW, so the
 * wake either came before the clear (CQUEUE seen there) or after it (it
 * sees no CREAD and queues the job itself): queued exactly once.  The
 * clear is a release and each side that lets the body run acquires it,
 * so every read of the awaitable here happens before the next write. */
static int cancel_pinned(coro_t *job, uint32_t old);

int coro__cancel_seen(coro_t *job, uint32_t old)
{
    uint32_t ls = old & CORO__S_MASK;
    if (ls == CORO__S_IDLE || ls == CORO__S_CHILD)
        return -EINVAL;
    if (ls == CORO__S_DONE || (old & CORO__F_CANCEL))
        return 0;
    /* the job may end, and destroy free its scheduler, between the CAS
     * below and our last touch of s (the sweeps, a pool frame's give-back):
     * a caller that is not s's own pins s first, and the CAS (seq_cst)
     * is the look at the job after the pin (sched/pin.c): one that finds
     * it DONE leaves s alone */
    coro_sched_t *s = job->sched;
    struct coro__worker *w = coro__tls_worker;
    if (w && w->s == s)
        return cancel_pinned(job, old);
    int tok = coro__pin_job(s);
    int rc = cancel_pinned(job, old);
    coro__unpin(tok);
    return rc;
}

static int cancel_pinned(coro_t *job, uint32_t old)
{
    uint32_t nw;
    for (;;) {
        uint32_t ls = old & CORO__S_MASK;
        if (ls == CORO__S_IDLE || ls == CORO__S_CHILD)
            return -EINVAL;
        if (ls == CORO__S_DONE || (old & CORO__F_CANCEL))
            return 0;
        nw = old | CORO__F_CANCEL;
        if (ls == CORO__S_SUSPENDED)
            nw |= CORO__F_CREAD;    /* READING THE AWAITABLE */
        if (old & CORO__F_POOL) {
            if ((old & CORO__JOINERS_MASK) == CORO__JOINERS_MASK) {
                sched_yield();      /* 255 holders already: one leaves soon */
                old = __atomic_load_n(&job->state, __ATOMIC_ACQUIRE);
                continue;
            }
            nw += CORO__JOINER_ONE;
        }
        /* seq_cst: the flag before the sweeps' loads of the registry bits
         * and the I/O request (lib/wait/parklot.c REGISTRY, lib/io/cancel.c);
         * a parker that misses it is found by them; and the look at the
         * job after a pin (sched/pin.c): a success read it before its end.
         * On failure, acquire as the load above (a failed look touches
         * nothing but the frame) */
        if (__atomic_compare_exchange_n(&job->state, &old, nw, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_ACQUIRE))
            break;
    }
    coro_sched_t *s = job->sched;
    /* what the job waits on, through its own awaitable (lib/wait/parklot.c
     * CANCEL ONE); else every structure it may wait in */
    if (!coro__wait_cancel_job(s, job, old) && !(s->io && coro__io_cancel_job(s->io, job))) {
        coro__parklot_cancel_jobs(s);
        if (s->io)
            coro__io_cancel_jobs(s->io);
        coro__blocking_cancel_jobs(s);
    }
    if (nw & CORO__F_CREAD) {
        /* done with the awaitable (READING THE AWAITABLE).  acq_rel:
         * release, our reads of it before the body's next writes (the
         * worker's acquire in cread_wait, or whoever runs the job we
         * queue); acquire, a wake's result before we queue its job */
        uint32_t prev = __atomic_fetch_and(&job->state, ~(CORO__F_CREAD | CORO__F_CQUEUE),
                                           __ATOMIC_ACQ_REL);
        if (prev & CORO__F_CQUEUE)
            coro__submit(s, job, false);    /* woken meanwhile: ours to queue */
    }
    if (nw & CORO__F_POOL) {
        /* acq_rel: our reads of the frame happen before whoever gives it
         * back; acquire: the finisher's writes before we do */
        uint32_t left = __atomic_sub_fetch(&job->state, CORO__JOINER_ONE, __ATOMIC_ACQ_REL);
        if (!(left & CORO__JOINERS_MASK) && (left & CORO__S_MASK) == CORO__S_DONE &&
            !(left & CORO__F_EXITING))
            coro__frame_release(job);
    }
    return 0;
}

int coro_cancel(coro_t *job)
{
    if (!job)
        return -EINVAL;
    /* acquire: a frame spawned by another thread has its sched set */
    return coro__cancel_seen(job, __atomic_load_n(&job->state, __ATOMIC_ACQUIRE));
}
