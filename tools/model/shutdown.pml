/* SPDX-License-Identifier: MIT */
/* The shutdown protocol of lib/rt/runtime.c (coro_sched_shutdown, its opening
 * comment and shutdown_): the live count with its CLOSED bit, spawns that
 * race the close, jobs that finish, a CORO_DRAIN on one thread and, on
 * another, a CORO_CANCEL or a timed shutdown (coro_sched_shutdown_timeout)
 * while the drain waits for a job that only a cancel ends (the cases
 * hostile::a_cancel_from_another_thread_ends_a_drain_that_waits_forever and
 * shutdown_pairs::drain_then_timeout_* reproduce).
 *
 * Abstracted: the live word is {live, closed} changed together by one
 * atomic statement (the C code's single RMW / CAS on one word); a job is
 * "wait until cancelling, then finish"; the futex wait on the live word is
 * "until live == 0"; a timed wait may also end at its deadline, at any
 * point (a nondeterministic choice); shut_lock (which guards the count of
 * calls inside, for destroy) and cancel_lock are spin-locked bits.
 *
 * Checked: no shutdown returns while a job lives (assert: so no spawn
 * succeeds after the close that let a shutdown return), every spawned job
 * finishes and both shutdowns return (monitor at timeout: no deadlock,
 * nothing lost), and no call is inside when both have returned (destroy
 * may free then).
 *
 * A worker's spare units (spawn.c SPARE UNITS), with a batch of 2: a
 * worker spawns jobs of its own, taking a spare unit when it has one and
 * its read of s->closed says open - modelled as a read that may always be
 * stale, the worst a relaxed load can do - and adding a batch otherwise;
 * its jobs finish on it (their unit becomes a spare; all are given back
 * once it sees s->closed, those above 2 batches otherwise); it gives
 * them all back when it parks, and may be woken to spawn again.  `alive`
 * counts the jobs really alive: live may be larger, never smaller.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_QUEUE   a call waits for the jobs holding shut_lock, so a
 *                    second call queues behind the first's wait (the timed
 *                    call behind a drain hung so; a CORO_CANCEL once too)
 *   -DBROKEN_SPAWN   a spawn checks CLOSED and counts itself in two steps
 *   -DBROKEN_SPARE   a worker that adds a batch keeps the whole batch as
 *                    spares (the unit of the job it spawns counted twice)
 *   -DBROKEN_PARK    a worker parks without giving its spares back
 */
#define BATCH 2
byte live;              /* units: jobs spawned and not finished, + spares */
byte alive;             /* jobs spawned and not finished */
bit closed;             /* the CLOSED bit of the same word */
bit closedflag;         /* s->closed, set after the bit */
byte spare;             /* the worker's spare units */
bit cancelling;         /* s->cancelling */
bit shut_lock, cancel_lock;
bit shut_done;
byte users;             /* calls inside (shut_users) */
byte spawned, finished, returned;

proctype job()
{
    cancelling;                 /* a wait only a cancel ends */
    atomic { live--; alive--; finished++ }
}

/* one worker: spawns up to 2 jobs of its own, which it runs itself */
proctype worker()
{
    byte k, running;            /* jobs it spawned, those still running */
    do
    :: k < 2 ->                 /* coro_spawn on the worker: count_live */
        k++;
        if
        :: spare > 0 ->         /* s->closed read "open", stale or not */
            atomic { spare--; alive++; spawned++; running++ }
        :: spare == 0 ->        /* "open", no spare: add a batch */
            atomic {
                if
                :: !closed -> live = live + BATCH; alive++; spawned++; running++;
#ifdef BROKEN_SPARE
                    spare = BATCH
#else
                    spare = BATCH - 1
#endif
                :: else -> skip                 /* -ESHUTDOWN */
                fi
            }
        :: closedflag ->        /* "closed" seen: add_live(1), fails */
            atomic { if :: !closed -> live++; alive++; spawned++; running++ :: else -> skip fi }
        fi
    :: running > 0 ->           /* one of its jobs ends: coro__finish */
        atomic { running--; alive--; finished++; spare++ };
        if
        :: closedflag -> atomic { live = live - spare; spare = 0 }
        :: !closedflag && spare >= 2 * BATCH -> atomic { live = live - (spare - BATCH); spare = BATCH }
        :: !closedflag && spare < 2 * BATCH -> skip
        fi
    :: running == 0 ->          /* idle: park (coro__flush_live(w, 0)) */
#ifndef BROKEN_PARK
        atomic { live = live - spare; spare = 0 };
#endif
        if
        :: k == 2 -> break
        :: else -> skip         /* woken: it may spawn again */
        fi
    od
}

proctype spawner()
{
    bit ok;
#ifdef BROKEN_SPAWN
    ok = !closed;
    if :: ok -> live++; alive++ :: else -> skip fi;
#else
    atomic { if :: !closed -> live++; alive++; ok = 1 :: else -> ok = 0 fi }
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

/* mode 0: CORO_DRAIN, 1: CORO_CANCEL, 2: a timed drain */
inline shutdown(mode)
{
    if
    :: shut_done -> skip        /* after the end: returns at once */
    :: else ->
        atomic { shut_lock == 0 -> shut_lock = 1 };
        users++;
#ifndef BROKEN_QUEUE
        shut_lock = 0;
#endif
        closed = 1;
        closedflag = 1;         /* s->closed, the store after the RMW */
        if :: mode == 1 -> cancel_all() :: else -> skip fi;
        if
        :: mode == 2 ->         /* wait_all with a deadline */
            if
            :: live == 0 -> skip
            :: true -> cancel_all(); live == 0      /* the deadline passed */
            fi
        :: else -> live == 0    /* wait_all: futex on the live word */
        fi;
        assert(live == 0 && alive == 0 && closed);
        shut_done = 1;
#ifndef BROKEN_QUEUE
        atomic { shut_lock == 0 -> shut_lock = 1 };
#endif
        users--;
        shut_lock = 0
    fi;
    assert(alive == 0);         /* no shutdown returns while a job lives */
    returned++
}

proctype drainer()  { shutdown(0) }
proctype canceller() { shutdown(1) }
proctype timed() { shutdown(2) }

active proctype monitor()
{
    timeout -> assert(returned == 2 && finished == spawned && live == 0 && alive == 0 &&
                      users == 0)
}

init
{
    atomic {
        run spawner(); run spawner(); run worker();
        run drainer();
        if
        :: run canceller()
        :: run timed()
        fi
    }
}
