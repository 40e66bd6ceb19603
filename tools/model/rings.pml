/* SPDX-License-Identifier: MIT */
/* The map of submission rings that hold work (lib/sched/worker.c RINGS)
 * with the park protocol: a plain thread pushes NJ jobs into its ring and
 * lists the ring when its flag reads 0; workers read the ring only while
 * its bit is set, take a job, and take an empty ring off the map (bit,
 * then flag) before looking at it once more; a worker that finds nothing
 * parks (epoch, idle bit, last look, sleep).
 *
 * Abstracted: the ring is a count; a job runs at once and the worker
 * looks again; the map is one bit; the top level of the map is left out
 * (its protocol is the same store-then-load, one level up).  Each seq_cst
 * RMW or load is one statement, in program order.
 *
 * Checked: when nothing can move any more, every job ran - none is left
 * in a ring that is off the map while the workers sleep (monitor).
 *
 * Two modes, each verified (make check-model runs the model as it is and
 * with each -DALSO_* name below):
 *   (default)       asymmetric (s->asym, membarrier(2)): the producer's
 *                   fence after its push is the compiler's, so the push may
 *                   sit in its store buffer (pX) while it reads the flag and
 *                   the idle bits; workers take rings off the map only while
 *                   they park, before their membarrier (which drains the
 *                   buffer), and look at those rings again after it
 *   -DALSO_FENCE    the producer's full fence; workers take an empty ring
 *                   off at any look and look at it again at once
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_RECHECK  a worker takes the ring off and does not look at it
 *                     again (fence mode): the push it raced stays unseen
 *   -DBROKEN_LOOK     membarrier mode, but workers take empty rings off at
 *                     any look, as in fence mode: a push still in the
 *                     producer's buffer is missed by the look after
 */
#define NW 2
#define NJ 2

byte X;                 /* jobs in the ring, visible */
byte pX;                /* pushed, still in the producer's store buffer */
bit listed;             /* the ring's flag */
bit mapped;             /* its bit in s->xq_bits */
bit idle[NW];
byte epoch[NW];
byte ran;

#if defined(ALSO_FENCE) || defined(BROKEN_RECHECK)
#define FENCE 1
#else
#define FENCE 0
#endif

/* list the ring: flag 0 -> 1, the winner sets the bit */
inline list()
{
    if
    :: atomic { listed == 0 -> listed = 1 }; mapped = 1
    :: atomic { listed == 1 -> skip }
    fi
}

/* notify(any = false): claim one idle worker, if any */
inline notify()
{
    if
    :: atomic { idle[0] -> idle[0] = 0; epoch[0]++ }
    :: atomic { idle[1] -> idle[1] = 0; epoch[1]++ }
    :: atomic { !idle[0] && !idle[1] -> skip }
    fi
}

proctype producer()
{
    byte n = 0;
    do
    :: n < NJ ->
#if FENCE
        X++;                            /* push; full fence */
#else
        pX++;                           /* push, in the store buffer */
        if
        :: atomic { pX > 0 -> X = X + pX; pX = 0 }
        :: skip
        fi;
#endif
        if                              /* its flag, after the fence */
        :: listed == 0 -> list()
        :: else -> skip
        fi;
        notify();
        atomic { X = X + pX; pX = 0 };  /* drained by now, at the latest */
        n++
    :: else -> break
    od
}

proctype worker(byte me)
{
    byte e;
    bit off;

look:
    if
    :: atomic { mapped && X > 0 -> X--; ran++ }; goto look
    :: atomic { !(mapped && X > 0) -> skip }
    fi;
#if FENCE || defined(BROKEN_LOOK)
    if                                  /* an empty ring on the map: off */
    :: atomic { mapped && X == 0 -> mapped = 0 };
        listed = 0;
#ifndef BROKEN_RECHECK
        if                              /* full barrier, look again */
        :: X > 0 -> list()
        :: else -> skip
        fi;
#endif
        goto look
    :: else -> skip
    fi;
#endif

    /* park: epoch, idle bit, (membarrier mode) empty rings off, the
     * membarrier, those rings again; the last look; sleep */
    e = epoch[me];
    idle[me] = 1;
    off = 0;
#if !FENCE
    if
    :: atomic { mapped && X == 0 -> mapped = 0 }; listed = 0; off = 1
    :: else -> skip
    fi;
    atomic { X = X + pX; pX = 0 };      /* membarrier */
    if
    :: off && X > 0 -> list()
    :: else -> skip
    fi;
#endif
    if
    :: atomic { mapped && X > 0 -> X--; ran++ };
        if                              /* a claimer's wake passes on */
        :: atomic { idle[me] -> idle[me] = 0 }
        :: atomic { !idle[me] -> skip }; notify()
        fi;
        goto look
    :: else -> skip
    fi;
end_park:
    epoch[me] != e;
    idle[me] = 0;
    goto look
}

active proctype monitor()
{
    timeout -> assert(ran == NJ && X == 0 && pX == 0)
}

init
{
    atomic {
        run worker(0); run worker(1);
        run producer()
    }
}
