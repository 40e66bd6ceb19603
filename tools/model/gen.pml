/* SPDX-License-Identifier: MIT */
/* Who pulls a generator (lib/sched/gen.c WHO PULLS): the thread that
 * pulled last keeps it (gen_run = its token) and pulls with a mark in its
 * own record - a store of the generator in its slot[0], then a read of
 * gen_run, the compiler's fence only between - and no atomic instruction
 * (a thread that does not keep it backs off and goes the slow way); any other
 * pull takes it with a compare-and-swap, and from a keeper with a
 * membarrier(2) and a look at the keeper's mark.
 *
 * Abstracted: 2 threads, each pulls P (3) times; gen_run is one of free,
 * kept by p (K(p)), held by p (H(p)); a thread's record is its mark
 * (slot[0] free or this generator), stored through
 * its store buffer (FIFO, 2 entries), which drains at any time, at the
 * thread's own compare-and-swap, and at a membarrier (every buffer); the
 * stores of gen_run and the reads are sequentially consistent (a late
 * store of gen_run only makes the other thread refuse longer).  A pull
 * that is held gives the generator back kept or free (a shared one) at
 * random.  A marked pull's body may wait (a job's await): the generator
 * is then handed to the job (a compare-and-swap from K(p) to H(p), which
 * waits for a refusing taker to put K(p) back) and the body ends later,
 * after the mark's end.  Or the body ends (or waits in plain code): a
 * generator kept is always one that waits for its next pull, so it is
 * freed (a compare-and-swap from K(p) to free, released, which waits in
 * the same way) before the mark's end.
 *
 * Checked: never two bodies at once (assert), and no deadlock (every
 * pull ends: a value or a refusal).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_NO_MEMBARRIER  the taker looks at the keeper's mark without a
 *                     membarrier: the mark still buffered is missed and
 *                     both run the body
 *   -DBROKEN_NO_RECHECK  the keeper does not read gen_run again after its
 *                     mark: a taker that came before the mark runs too
 *   -DBROKEN_HAND_OVER  a body that waits is handed to the job with a
 *                     plain store: a taker's compare-and-swap lands
 *                     first, its look sees the mark and it puts K(p)
 *                     back over the job's hold
 *   -DBROKEN_UNKEEP_AFTER_MARK  the body that ended is freed after the
 *                     mark's end: a taker may have taken it meanwhile,
 *                     and the keeper waits for K(p) for ever
 */
#define P 3
#define FREE 0
#define K(p) (1 + (p))
#define H(p) (3 + (p))

byte gr = FREE;         /* gen_run */
bit mark[2];            /* in memory */
bit buf[4];             /* buf[2p], buf[2p+1]: a thread's pending stores */
byte nbuf[2];
byte inbody;

/* a store of the mark through p's buffer */
inline store_mark(p, v)
{
    atomic { nbuf[p] < 2 -> buf[2 * (p) + nbuf[p]] = v; nbuf[p]++ }
}

/* p's oldest pending store reaches memory */
inline drain_one(p)
{
    atomic {
        nbuf[p] > 0 ->
        mark[p] = buf[2 * (p)];
        buf[2 * (p)] = buf[2 * (p) + 1];
        nbuf[p]--
    }
}

inline drain_all(p)
{
    do
    :: nbuf[p] > 0 ->
        mark[p] = buf[2 * (p)];
        buf[2 * (p)] = buf[2 * (p) + 1];
        nbuf[p]--
    :: else -> break
    od
}

inline body_in()
{
    atomic { inbody++; assert(inbody == 1) }
}

inline body_out()
{
    inbody--
}

proctype puller(byte me)
{
    byte other = 1 - me;
    byte n = 0, r;

    do
    :: n < P ->
        if
        :: true ->
            /* gen.h CORO__GEN_MARK: no look at gr before the mark */
            store_mark(me, 1);
#ifndef BROKEN_NO_RECHECK
            if
            :: gr != K(me) ->
                store_mark(me, 0);      /* back off, then the slow path */
                goto slow
            :: else
            fi;
#endif
            body_in();
            if
            :: true ->
                body_out();
                store_mark(me, 0)
            :: true ->
                /* gen.c end_marked: the body ended, K(me) -> free */
                body_out();
#ifdef BROKEN_UNKEEP_AFTER_MARK
                store_mark(me, 0);
                atomic { drain_all(me); gr == K(me) -> gr = FREE };
#else
                atomic { drain_all(me); gr == K(me) -> gr = FREE };
                store_mark(me, 0);
#endif
                goto next
            :: true ->
                /* gen.c hand_over: K(me) -> H(me) */
#ifdef BROKEN_HAND_OVER
                gr = H(me);
#else
                atomic { drain_all(me); gr == K(me) -> gr = H(me) };
#endif
                store_mark(me, 0);
                body_out();             /* the job's pull ends */
                gr = FREE
            fi;
            goto next
        :: else
        fi;
slow:   /* gen.c take() */
        r = gr;
        if
        :: r == H(0) || r == H(1) ->
            goto next                   /* refused: LOCKED */
        :: r == FREE || r == K(me) ->
            atomic {
                drain_all(me);
                if
                :: gr == r -> gr = H(me)
                :: else -> goto slow
                fi
            }
        :: r == K(other) ->
            atomic {
                drain_all(me);
                if
                :: gr == r -> gr = H(me)
                :: else -> goto slow
                fi
            };
#ifndef BROKEN_NO_MEMBARRIER
            atomic { drain_all(0); drain_all(1) };
#endif
            if
            :: mark[other] == 1 ->
                gr = K(other);         /* the keeper pulls: put it back */
                goto next
            :: else
            fi
        fi;
        body_in();
        body_out();
        if                              /* give_back: kept, or shared */
        :: gr = K(me)
        :: gr = FREE
        fi;
next:
        n++
    :: else -> break
    od
}

/* store buffers drain at any time */
active proctype drainer()
{
end:
    do
    :: drain_one(0)
    :: drain_one(1)
    od
}

init
{
    atomic {
        gr = K(0);             /* thread 0 pulled last */
        run puller(0);
        run puller(1)
    }
}
