/* SPDX-License-Identifier: MIT */
/* The searching protocol of lib/sched/worker.c (its opening comment,
 * STEALING and PARKING, and coro__worker_main) with batches: a plain
 * thread's submission ring, a worker that takes half of a ring into its
 * local ring and runs one, thieves, searchers, parked workers.
 *
 * Abstracted: every job runs for ever once started (the worst case for
 * the jobs left queued: a worker that runs one never looks again); rings
 * are counts; "half" of n is (n + 1) / 2; a worker parks on its epoch
 * (the epoll variant of the park is park.pml's).  Each seq_cst RMW or
 * load is one statement, in program order.
 *
 * Thieves skip parked workers (their rings are empty), and the last look
 * before parking leaves the others' rings alone while the searchers are
 * at their cap.
 *
 * Checked: when nothing can move any more, every job runs - none is left
 * in a ring while a worker sleeps (monitor).  NW workers, NJ = NW jobs
 * pushed by one plain thread; at most MAXS searchers (s->nslots / 2).
 *
 * Two modes, each verified (make check-model runs the model as it is and
 * with each -DALSO_* name below):
 *   (default)       asymmetric (s->use_membarrier, membarrier(2)): every notify's
 *                   fence is the compiler's only, so the pushes before it
 *                   (the plain thread's to its ring, a worker's of the rest
 *                   of a batch to its own) may sit in a store buffer (pX,
 *                   pL) while it reads s->searching and the idle bits; a
 *                   parking worker's membarrier after its bit-set drains
 *                   every buffer before its last look
 *   -DALSO_FENCE    the fallback: notify's seq_cst fence, no membarrier
 *
 * The default mode stores about 143 million states (8.7 GB): make test
 * checks it by bitstate hashing, make check-model-full exhaustively
 * (check-model: supertrace).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_FENCE  neither: light notifies and no membarrier
 *   -DBROKEN_ANY    the ring push's notify skips when a worker searches
 *                   (the code before 8e87f54, whose other two changes - a
 *                   woken worker searches, a worker that took more than
 *                   it runs wakes one - this model shows are not needed
 *                   for a plain thread's burst; they are for pushes to a
 *                   worker's own ring, whose notify counts on searchers):
 *                   a burst left jobs queued behind running ones with
 *                   workers parked (io_standby under check-tsan)
 *   -DBROKEN_BATON  a worker whose last look before parking found a job
 *                   after a notifier claimed it keeps the wake (found by
 *                   this model: the job the wake was for stayed queued)
 */
#define NW 3
#define NJ 3
#define MAXS 1

byte X;                 /* the plain thread's submission ring */
byte L[NW];             /* local rings */
byte searching;         /* s->searching */
bit idle[NW];           /* s->idle */
byte epoch[NW];         /* w->futex */
byte ran;               /* jobs started */
byte pX;                /* pushes to X still in the plain thread's store buffer */
byte pL[NW];            /* pushes to L[i] still in worker i's */

#ifdef ALSO_FENCE
#define PUSHL(i, n) L[i] = L[i] + (n)
#else
#define PUSHL(i, n) pL[i] = pL[i] + (n)
#endif

/* membarrier(2) in a parking worker: every thread's buffer drained */
inline drain_all()
{
    atomic {
        X = X + pX; pX = 0;
        L[0] = L[0] + pL[0]; pL[0] = 0;
        L[1] = L[1] + pL[1]; pL[1] = 0;
        L[2] = L[2] + pL[2]; pL[2] = 0
    }
}

/* worker i's buffer drains (before its notify's reads, or after) */
inline drain_own(i)
{
    atomic { L[i] = L[i] + pL[i]; pL[i] = 0 }
}

/* notify(any): a fence, then (any: no searcher) claim one idle worker */
inline notify(any)
{
    if
    :: any && searching > 0 -> skip
    :: else ->
        if
        :: atomic { idle[0] -> idle[0] = 0; epoch[0]++ }
        :: atomic { idle[1] -> idle[1] = 0; epoch[1]++ }
        :: atomic { idle[2] -> idle[2] = 0; epoch[2]++ }
        :: atomic { !idle[0] && !idle[1] && !idle[2] -> skip }
        fi
    fi
}

proctype submitter()
{
    byte n = 0;
    do
    :: n < NJ ->
#ifdef ALSO_FENCE
        X++;                            /* lock-free push to its ring; fence */
#else
        pX++;                           /* the push, in its store buffer */
        if
        :: atomic { pX > 0 -> X = X + pX; pX = 0 }
        :: skip
        fi;
#endif
#ifdef BROKEN_ANY
        notify(1);
#else
        notify(0);                      /* wake an idle worker even if one searches */
#endif
        atomic { X = X + pX; pX = 0 };  /* drained by now, at the latest */
        n++
    :: else -> break
    od
}

proctype worker(byte me)
{
    bit srch, more, got, steal_ok;
    byte e, k, v;

look:
    /* one look (find_work_): own ring, the submission ring, then - as a
     * searcher, or in the last look before parking - the others' rings */
    got = 0; more = 0;
    if
    :: atomic { L[me] > 0 -> L[me]--; got = 1 }
    :: atomic { L[me] == 0 && X > 0 -> k = (X + 1) / 2; X = X - k; PUSHL(me, k - 1);
                more = (k > 1); got = 1 }
    :: atomic { L[me] == 0 && X == 0 -> skip }
    fi;
    if
    :: !got ->
        if
        :: srch -> steal_ok = 1
        :: !srch && searching < MAXS -> searching++; srch = 1; steal_ok = 1
        :: !srch && searching >= MAXS -> steal_ok = 0
        fi;
        if
        :: steal_ok ->
            v = 0;
            do
            :: v < NW && !got ->
                if
                :: atomic { v != me && !idle[v] && L[v] > 0 -> k = (L[v] + 1) / 2;
                            L[v] = L[v] - k; PUSHL(me, k - 1); more = (k > 1); got = 1 }
                :: else -> skip
                fi;
                v++
            :: else -> break
            od
        :: else -> skip
        fi
    :: else -> skip
    fi;
    if
    :: got -> goto found
    :: else -> skip
    fi;

    /* park: stop searching (no notify: the last look covers it), set the
     * idle bit, look once more everywhere, sleep on the epoch */
    if
    :: srch -> searching--; srch = 0
    :: else -> skip
    fi;
    e = epoch[me];
    idle[me] = 1;
#if !defined(ALSO_FENCE) && !defined(BROKEN_FENCE)
    drain_all();                        /* membarrier */
#endif
    got = 0; more = 0;
    if
    :: atomic { L[me] > 0 -> L[me]--; got = 1 }
    :: atomic { L[me] == 0 && X > 0 -> k = (X + 1) / 2; X = X - k; PUSHL(me, k - 1);
                more = (k > 1); got = 1 }
    :: atomic { L[me] == 0 && X == 0 -> skip }
    fi;
    /* the others' rings, skipping parked workers, unless the searchers
     * are at their cap (they cover those rings) */
    if
    :: !got && searching < MAXS ->
        v = 0;
        do
        :: v < NW && !got ->
            if
            :: atomic { v != me && !idle[v] && L[v] > 0 -> k = (L[v] + 1) / 2;
                        L[v] = L[v] - k; PUSHL(me, k - 1); more = (k > 1); got = 1 }
            :: else -> skip
            fi;
            v++
        :: else -> break
        od
    :: else -> skip
    fi;
    if
    :: got ->
        /* clear our bit; if a notifier cleared it first, its wake was
         * meant for a job we may not be taking: pass it on */
        if
        :: atomic { idle[me] -> idle[me] = 0 }
#ifndef BROKEN_BATON
        :: atomic { !idle[me] -> skip }; notify(0)
#else
        :: atomic { !idle[me] -> skip }
#endif
        fi;
        goto found
    :: else -> skip
    fi;
end_park:
    epoch[me] != e;                     /* futex_wait(&futex, e) */
    idle[me] = 0;
    if                                  /* a woken worker searches */
    :: searching < MAXS -> searching++; srch = 1
    :: else -> skip
    fi;
    goto look;

found:
    /* the last searcher to find work wakes another; a worker that was not
     * searching but took more than the one it runs wakes one for the rest */
    if
    :: drain_own(me)
    :: skip
    fi;
    if
    :: srch ->
        searching--; srch = 0;
        if
        :: searching == 0 -> notify(1)
        :: else -> skip
        fi
    :: !srch && more -> notify(1)
    :: else -> skip
    fi;
    drain_own(me);
    ran++
    /* runs its job for ever: never looks again */
}

active proctype monitor()
{
    timeout -> assert(ran == NJ && X == 0 && L[0] == 0 && L[1] == 0 && L[2] == 0 &&
                      pX == 0 && pL[0] == 0 && pL[1] == 0 && pL[2] == 0)
}

init
{
    atomic {
        run worker(0); run worker(1); run worker(2);
        run submitter()
    }
}
