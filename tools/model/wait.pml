/* SPDX-License-Identifier: MIT */
/* The wait / timeout / cancel protocol of the parking lot (lib/wait/parklot.c,
 * TIMERS and REGISTRY; the fire path of lib/wait/wtimer.c): a job waits on
 * an event with a timeout, in a bucket, with an entry in the timer heap;
 * a waker sets the event, the timer thread fires due entries, a third
 * thread cancels the job.  Then the same frame waits again on the same key
 * with NO timeout (a frame reused at the same address): no stale timer of
 * the first wait may end the second.
 *
 * Abstracted: one bucket, one waiter; the heap is {heap, due} for the
 * current entry; "due" becomes true at any moment once the entry exists
 * (time passes nondeterministically); bucket lock and hlock are bits.
 *
 * Checked: each wait is ended exactly once (assert in wake); a heap entry
 * exists only while its waiter is linked, whenever the bucket lock is free
 * (assert at every unlock); the second wait (no timeout) is never ended
 * by a timer (assert); every wait ends and every thread finishes (monitor
 * at timeout: no deadlock, no wait that outlives its timer).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_REDECIDE  the fire path fires what it peeked at under hlock
 *                      without deciding again under the bucket lock
 *   -DBROKEN_UNLINK    a wake-up leaves the waiter's heap entry in place
 *                      (its timer outlives the wait)
 */
bit bl, hl;             /* the bucket lock, hlock */
bit linked;             /* the waiter is on the bucket's list */
bit heap, due;          /* its timer entry; its deadline has passed */
bit ev;                 /* the event */
bit cancel;             /* CORO__F_CANCEL */
byte round;             /* which wait: 1 (timed), 2 (no timeout) */
byte ended;             /* wake-ups of the current wait */
byte result;            /* 0 set, 1 timed out, 2 cancelled */
bit job_done, waker_done, canceller_done;

inline lock(l)   { atomic { l == 0 -> l = 1 } }
inline unlock_b() { assert(!heap || linked); bl = 0 }

inline wake(r)
{
    ended++;
    assert(ended == 1);         /* exactly once */
    assert(!(round == 2 && r == 1));    /* no stale timer ends wait 2 */
    result = r
}

proctype job()
{
    byte r;
    for (r : 1 .. 2) {
        lock(bl);
        ended = 0;
        round = r;
        if
        :: ev || cancel ->          /* completes at once: no park */
            ended = 1
        :: else ->
            linked = 1;
            if
            :: r == 1 -> lock(hl); heap = 1; due = 0; hl = 0
            :: else -> skip         /* CORO_FOREVER: no timer */
            fi
        fi;
        unlock_b();
        ended > 0;                  /* suspended until woken */
        ev = 0                      /* the event is reset between the waits */
    }
    job_done = 1
}

/* a waker or a cancel: take the waiter off the list under the bucket lock */
inline take(r)
{
    lock(bl);
    if
    :: linked ->
        linked = 0;
#ifndef BROKEN_UNLINK
        lock(hl); heap = 0; hl = 0;     /* its timer goes with it */
#endif
        wake(r)
    :: else -> skip
    fi;
    unlock_b()
}

proctype waker()
{
    ev = 1;
    take(0);
    waker_done = 1
}

proctype canceller()
{
    cancel = 1;
    take(2);
    canceller_done = 1
}

proctype clock()
{
end:
    do
    :: atomic { heap && !due -> due = 1 }       /* time passes */
    od
}

proctype timers()
{
    bit t;
end:
    do
    :: atomic { hl == 0 && heap && due -> hl = 1 } ->   /* peek under hlock */
        hl = 0;
        lock(bl);
        lock(hl);
#ifdef BROKEN_REDECIDE
        t = 1;                          /* fires what it peeked at */
        heap = 0;
#else
        t = heap && due;                /* decided again under the bucket lock */
        if :: t -> heap = 0 :: else -> skip fi;
#endif
        hl = 0;
        if
        :: t && linked -> linked = 0; wake(1)
        :: else -> skip
        fi;
        unlock_b()
    od
}

active proctype monitor()
{
    timeout -> assert(job_done && waker_done && canceller_done && !linked && !heap)
}

init
{
    atomic { run job(); run waker(); run canceller(); run clock(); run timers() }
}
