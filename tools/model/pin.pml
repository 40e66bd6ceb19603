/* SPDX-License-Identifier: MIT */
/* Pins (lib/sched/pin.c) against coro_sched_destroy's wait, and the
 * cancel's hold on a suspended job's awaitable (lib/rt/runtime.c, READING
 * THE AWAITABLE; CORO__F_CREAD / CQUEUE in sched/sched.h).
 *
 * Abstracted: spin interleaves statements, so every access is sequentially
 * consistent - the fences of pin.c (a seq_cst slot store, then a seq_cst
 * look; destroy's seq_cst flag store, fence, scan) give that order to the
 * accesses the argument there uses.  A pin is a bit per thread (its slot
 * holding s); the live count is the one job's DONE; "touching s" is an
 * assert that destroy has not freed it.
 *
 * The threads, each once, in any interleaving:
 *   - the job: waits (SUSPENDED) until a wake queues it, then runs (its
 *     body rewrites the awaitable) and ends;
 *   - an owning waker (a plain thread's coro_event_set: coro__pin_owned):
 *     takes the job off its wait, pins, queues it, touches s, unpins;
 *   - a canceller (coro__pin_job): looks at the job, pins, looks again
 *     (the CAS), and only if it is not DONE touches s; with CREAD when it
 *     found the job SUSPENDED, its reads of the awaitable meet no run of
 *     the job, and a wake meanwhile leaves the job to it to queue;
 *   - a call on s (coro_close, coro_sched_run: coro__pin_sched): pins,
 *     looks at pin_gone, touches s only if clear;
 *   - destroy: waits for DONE, stores pin_gone, waits while any pin is
 *     held, frees s.
 *
 * Checked: no touch of s after the free, the awaitable is never read while
 * the job runs, the job is queued at most once, and everything ends (a
 * timeout is a deadlock).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_LATE_PIN   the waker pins after it queued the job
 *   -DBROKEN_NO_RECHECK the canceller pins and touches s without looking again
 *   -DBROKEN_NO_GONE    a call on s does not look at pin_gone
 *   -DBROKEN_NO_CREAD   a wake queues the job while a cancel reads its awaitable
 */
#define SUSP  1
#define READY 2
#define DONE  3

byte state = SUSP;
bit cread, cqueue;      /* the cancel's hold; a wake left the job to it */
byte queued;            /* times the job was queued */
bit running;
bit owned;              /* a waker took the job off its wait */
bit freed, gone;
bit pin_w, pin_c, pin_x;        /* each thread's slot holding s */
byte ended;

inline touch() { assert(!freed) }

proctype job()
{
    atomic { queued > 0 -> running = 1 }
    /* the body runs: the awaitable is rewritten; a cancel must not read it */
    atomic { running = 0; state = DONE }
    ended++
}

proctype waker()
{
    if
    :: atomic { state == SUSP && !owned -> owned = 1 }  /* off the wait list */
    :: atomic { owned -> goto out }                     /* the cancel took it first */
    fi;
#ifndef BROKEN_LATE_PIN
    pin_w = 1;
#endif
    /* coro__wake: SUSPENDED -> READY, CQUEUE when a cancel holds CREAD */
    atomic {
        state = READY;
#ifdef BROKEN_NO_CREAD
        queued++
#else
        if
        :: cread -> cqueue = 1
        :: else -> queued++
        fi
#endif
    }
#ifdef BROKEN_LATE_PIN
    pin_w = 1;
#endif
    touch();                    /* the notify after the push */
    pin_w = 0;
out:
    ended++
}

proctype canceller()
{
    bit hold = 0;
    if
    :: state == DONE -> goto out        /* coro_cancel of a finished job: 0 */
    :: else
    fi;
    pin_c = 1;
#ifndef BROKEN_NO_RECHECK
    atomic {                            /* the seq_cst CAS: the look after the pin */
        if
        :: state == DONE -> pin_c = 0
        :: state == SUSP -> cread = 1; hold = 1
        :: state == READY
        fi
    }
    if
    :: state == DONE && !pin_c -> goto out
    :: else
    fi;
#else
    atomic { if :: state == SUSP -> cread = 1; hold = 1 :: else fi }
#endif
    touch();                            /* the sweep */
    if
    :: hold ->
        assert(!running);               /* reads the awaitable */
        /* ends the wait itself when no waker did */
        atomic {
            if
            :: state == SUSP && !owned -> owned = 1; state = READY; cqueue = 1
            :: else
            fi
        }
        atomic {                        /* the clear: queue what a wake left */
            cread = 0;
            if
            :: cqueue -> cqueue = 0; queued++
            :: else
            fi
        }
    :: else
    fi;
    touch();                            /* the pool frame's give-back */
    pin_c = 0;
out:
    ended++
}

proctype caller()
{
    pin_x = 1;
#ifndef BROKEN_NO_GONE
    if
    :: gone -> pin_x = 0; goto out
    :: else
    fi;
#endif
    touch();
    pin_x = 0;
out:
    ended++
}

proctype destroy()
{
    state == DONE;              /* live == CLOSED */
    gone = 1;
    !pin_w && !pin_c && !pin_x; /* coro__pin_drain */
    freed = 1;
    ended++
}

init
{
    atomic {
        run job();
        run waker();
        run canceller();
        run caller();
        run destroy()
    }
    (ended == 5);
    assert(queued <= 1)
}
