/* SPDX-License-Identifier: MIT */
/* The waiter's hand-off slot of lib/sched/worker.c (WAITING) and
 * lib/sched/submit.c (handoff): threads outside the workers hand a ready
 * job to the one idle worker that waits, instead of queueing it and
 * waking a parked worker.
 *
 * s->spinner names the waiter (0 = none, else 1 + its index); each worker
 * has a slot: CLOSED, OPEN, or a job.  A worker's idle phase: CAS the
 * name 0 -> itself (lose: no wait), open its slot, wait (it may close at
 * any point: work found elsewhere, its looks ran out), then clear the
 * name if it is still its own and close the slot with an exchange, and
 * run what the exchange returned.  A hander reads the name (at any time
 * before its CAS: a stale name), then CASes that worker's slot OPEN ->
 * job; a failed CAS queues the job the usual way (a push and a notify:
 * here, counted as run).  2 workers, each with 2 idle phases; 2 handers,
 * each with one job.  Each atomic operation is one statement.
 *
 * Checked: every job runs exactly once (assert at each run); when
 * nothing can move any more, every job ran and every slot is closed
 * (monitor): none is left in a slot nobody will close.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_CLOSE  the close reads the slot, then stores CLOSED (two
 *                   steps): a hand-off between them is lost
 *   -DBROKEN_OPEN   the slot opens before the name is won, and a worker
 *                   that loses the name closes it with a store: a hander
 *                   holding that worker's name from its earlier phase
 *                   fills the slot meanwhile, and the job is lost
 */
#define NW 2
#define NH 2
#define CLOSED 0
#define OPEN 9

byte spinner;           /* s->spinner: 0, or 1 + a worker's index */
byte slot[NW];          /* w->handoff: CLOSED, OPEN or 1 + a job */
byte ran[NH];           /* times each job ran */
byte handers_done;

inline run_job(x)
{
    ran[x - 1]++;
    assert(ran[x - 1] == 1)
}

proctype worker(byte me)
{
    byte phase = 0, none, x;

    do
    :: phase < 2 ->
        phase++;
#ifdef BROKEN_OPEN
        slot[me] = OPEN;
        if
        :: atomic { spinner == 0 -> spinner = me + 1 }
        :: atomic { spinner != 0 -> slot[me] = CLOSED }; goto next
        fi;
#else
        if
        :: atomic { spinner == 0 -> spinner = me + 1 }
        :: atomic { spinner != 0 -> skip }; goto next
        fi;
        slot[me] = OPEN;
#endif
        /* waits; it may close at any point */
        if
        :: skip
        :: slot[me] != OPEN
        fi;
        atomic { if :: spinner == me + 1 -> spinner = 0 :: else -> skip fi };
#ifdef BROKEN_CLOSE
        x = slot[me];
        slot[me] = CLOSED;
#else
        atomic { x = slot[me]; slot[me] = CLOSED };
#endif
        if
        :: x != OPEN && x != CLOSED -> run_job(x)
        :: else -> skip
        fi;
next:
        skip
    :: else -> break
    od
}

proctype hander(byte job)
{
    byte sp;

    sp = spinner;               /* a hint, read at any time before the CAS */
    if
    :: sp != 0 ->
        if
        :: atomic { slot[sp - 1] == OPEN -> slot[sp - 1] = job }
        :: atomic { slot[sp - 1] != OPEN -> run_job(job) }     /* queued */
        fi
    :: else -> run_job(job)                                     /* queued */
    fi;
    handers_done++
}

active proctype monitor()
{
    timeout -> assert(handers_done == NH && ran[0] == 1 && ran[1] == 1 &&
                      slot[0] == CLOSED && slot[1] == CLOSED)
}

init
{
    atomic {
        run worker(0); run worker(1);
        run hander(1); run hander(2)
    }
}
