/* SPDX-License-Identifier: MIT */
/* The shutdown protocol of lib/rt/runtime.c (coro_sched_shutdown, its opening
 * comment and shutdown_): the live count with its CLOSED bit, spawns that
 * race the close, jobs that finish, a CORO_DRAIN on one thread and a
 * CORO_CANCEL on another while the drain waits for a job that only a
 * cancel ends (the case hostile::a_cancel_from_another_thread_ends_a_drain
 * _that_waits_forever reproduces).
 *
 * Abstracted: the live word is {live, closed} changed together by one
 * atomic statement (the C code's single RMW / CAS on one word); a job is
 * "wait until cancelling, then finish"; the futex wait on the live word is
 * "until live == 0"; shut_lock and cancel_lock are spin-locked bits.
 *
 * Checked: no shutdown returns while a job lives (assert: so no spawn
 * succeeds after the close that let a shutdown return), every spawned job
 * finishes and both shutdowns return (monitor at timeout: no deadlock,
 * nothing lost).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_ORDER   CORO_CANCEL takes shut_lock before it cancels (the
 *                    order before the fix: it waits behind the drain)
 *   -DBROKEN_SPAWN   a spawn checks CLOSED and counts itself in two steps
 */
byte live;              /* jobs spawned and not finished */
bit closed;             /* the CLOSED bit of the same word */
bit cancelling;         /* s->cancelling */
bit shut_lock, cancel_lock;
bit shut_done;
byte spawned, finished, returned;

proctype job()
{
    cancelling;                 /* a wait only a cancel ends */
    atomic { live--; finished++ }
}

proctype spawner()
{
    bit ok;
#ifdef BROKEN_SPAWN
    ok = !closed;
    if :: ok -> live++ :: else -> skip fi;
#else
    atomic { if :: !closed -> live++; ok = 1 :: else -> ok = 0 fi }
#endif
    if
    :: ok -> atomic { spawned++; run job() }
    :: else -> skip             /* -ESHUTDOWN: nothing runs */
    fi
}

inline cancel_all()
{
    atomic { cancel_lock == 0 -> cancel_lock = 1 };
    cancelling = 1;
    cancel_lock = 0
}

inline shutdown(mode)
{
#ifndef BROKEN_ORDER
    if
    :: mode == 1 && !shut_done -> closed = 1; cancel_all()
    :: else -> skip
    fi;
#endif
    atomic { shut_lock == 0 -> shut_lock = 1 };
    if
    :: shut_done -> skip
    :: else ->
        closed = 1;
#ifdef BROKEN_ORDER
        if :: mode == 1 -> cancel_all() :: else -> skip fi;
#endif
        live == 0;              /* wait_all: futex on the live word */
        assert(live == 0 && closed);
        shut_done = 1
    fi;
    shut_lock = 0;
    assert(live == 0);          /* no shutdown returns while a job lives */
    returned++
}

proctype drainer()  { shutdown(0) }
proctype canceller() { shutdown(1) }

active proctype monitor()
{
    timeout -> assert(returned == 2 && finished == spawned && live == 0)
}

init
{
    atomic {
        run spawner(); run spawner();
        run drainer(); run canceller()
    }
}
