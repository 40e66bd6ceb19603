/* SPDX-License-Identifier: MIT */
/* The map of submission rings that hold work (lib/sched/rings.c RINGS)
 * with the park protocol: a plain thread pushes NJ jobs into its ring and
 * lists the ring when its flag reads 0; workers read the ring while its
 * bit is set, take a job, and take an empty ring off the map (bit, then
 * flag); a worker that finds nothing parks (epoch, idle bit, last look,
 * sleep).
 *
 * Abstracted: the ring is a count; a job runs at once and the worker
 * looks again; each map is one bit; the top levels of the maps are left
 * out (their protocol is the same store-then-load, one level up), and so
 * is the quiet map's bit, which is set while the ring's quiet word is not
 * 0 (the same store-then-load tidy).  Each seq_cst RMW or load is one
 * statement, in program order.  Which look takes a ring off (in the code,
 * the periodic one) is left free: any look may.
 *
 * Checked: when nothing can move any more, every job ran - none is left
 * in a ring that is off both maps while the workers sleep (monitor).
 *
 * Two modes, each verified (make check-model runs the model as it is and
 * with each -DALSO_* name below):
 *   (default)       asymmetric (s->use_membarrier, membarrier(2)): the producer's
 *                   fence after its push is the compiler's, so the push may
 *                   sit in its store buffer (pX) while it reads the flag and
 *                   the idle bits.  A worker that takes an empty ring off
 *                   marks it quiet with its own name (quiet = me + 1): the
 *                   park's last look looks at quiet rings too (in the code
 *                   the periodic look as well, which only adds looks).  A parking worker takes its own empties off the
 *                   same way, makes its membarrier (which drains every
 *                   buffer), and only then ends the quiet of the rings that
 *                   still bear its name (a CAS), looking at each once more
 *   -DALSO_FENCE    the producer's full fence; workers take an empty ring
 *                   off at any look and look at it again at once
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_RECHECK  a worker takes the ring off and does not look at it
 *                     again (fence mode): the push it raced stays unseen
 *   -DBROKEN_LOOK     membarrier mode, but a ring taken off at a look is
 *                     not marked quiet, as in fence mode: a push still in
 *                     the producer's buffer is missed by the look after
 *   -DBROKEN_CONFIRM  membarrier mode, but a parking worker ends the quiet
 *                     of every quiet ring, also those another worker took
 *                     off after its membarrier: nothing drained the push
 *                     that other take-off raced
 */
#define NW 2
#define NJ 2

byte X;                 /* jobs in the ring, visible */
byte pX;                /* pushed, still in the producer's store buffer */
bit listed;             /* the ring's flag */
bit mapped;             /* its bit in s->subring_bits */
byte quiet;             /* 0, or 1 + the worker that took it off unconfirmed */
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

/* an empty ring on the map taken off (subring_quiet_off), after its bit's
 * clear (the guard where it is used) */
inline take_off()
{
    listed = 0;
#if !FENCE && !defined(BROKEN_LOOK)
    quiet = me + 1
#else
    skip
#endif
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

look:
    if
    :: atomic { mapped && X > 0 -> X--; ran++ }; goto look
    :: atomic { !(mapped && X > 0) -> skip }
    fi;
    if                                  /* an empty ring on the map: off */
    :: atomic { mapped && X == 0 -> mapped = 0 }; take_off();
#if FENCE
#ifndef BROKEN_RECHECK
        if                              /* full barrier, look again */
        :: X > 0 -> list()
        :: else -> skip
        fi;
#endif
#endif
        goto look
    :: atomic { !(mapped && X == 0) -> skip }
    fi;

    /* park: epoch, idle bit, (membarrier mode) empty rings off, the
     * membarrier, the quiet rings of our name confirmed and looked at
     * again; the last look; sleep */
    e = epoch[me];
    idle[me] = 1;
#if !FENCE
    if
    :: atomic { mapped && X == 0 -> mapped = 0 }; take_off()
    :: atomic { !(mapped && X == 0) -> skip }
    fi;
    atomic { X = X + pX; pX = 0 };      /* membarrier */
#ifdef BROKEN_CONFIRM
    if
    :: atomic { quiet != 0 -> quiet = 0 };
#else
    if
    :: atomic { quiet == me + 1 -> quiet = 0 };
#endif
        if
        :: X > 0 -> list()
        :: else -> skip
        fi
    :: else -> skip
    fi;
#endif
    if
    :: atomic { (mapped || quiet != 0) && X > 0 -> X--; ran++ };
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
