/* SPDX-License-Identifier: MIT */
/* An fd wait's timer and its stale handle (lib/io/timers.c, STALE
 * HANDLES; lib/wait/wtimer.c): the fd slot keeps the handle of its
 * waiter's timer, written under the entry lock only.  A fire pops the
 * timer under the heap lock and does not touch the slot (the worker
 * heap's fire hands the record back to the I/O layer in a struct
 * coro__wt_batch); it then locks the entry and ends the wait only if the
 * slot still holds the record's job and sequence.  Readiness takes the
 * waiter under the entry lock and removes its timer by the slot's handle,
 * under the heap lock, only if the handle's record is still that wait's
 * (coro__heap_get: the job; the kind and the sequence).
 *
 * Actors: job A waits twice on the fd with a timer (sequence 1, then 2
 * once the first wait ended); job B sleeps, its timer in the same heap;
 * the firer pops any timer (every one is due) and fires it; readiness
 * comes twice.  A handle freed by a pop or a removal may be taken by any
 * later push (the heap's free stack, taken as any free handle).  Locks
 * are bits; any thread may stop between two statements.
 *
 * Checked: every wait ends exactly once (assert in end_wait); a wait ends
 * by a timeout only once its own timer left the heap (assert in fire);
 * when nothing can move, both of A's waits and B's sleep ended (no
 * invalid end state: B's timer was never removed by A's wait) and the
 * heap is empty.
 *
 * Broken variants (make check-model expects spin to reject them):
 *   -DBROKEN_UNCHECKED   readiness removes whatever timer the slot's
 *                        handle names (a stale handle removes B's sleep)
 *   -DBROKEN_FIRE_NOSEQ  the fire ends the slot's wait when the job
 *                        matches, whatever the sequence (a late fire of
 *                        the first wait's timer ends the second)
 */
#define NH 3

bit taken[NH];          /* the handle's record is in the heap */
byte rec_p[NH];         /* its job: 1 = A, 2 = B */
byte rec_seq[NH];
bit rec_fd[NH];         /* an fd wait's timer (else a sleep's) */

bit E, H;               /* the entry's lock, the heap's lock */
byte w;                 /* the slot's waiter (0 none) */
byte wseq;              /* the slot's wait sequence */
bit timed;
byte slot;              /* the waiter's timer handle + 1, 0 none */

bit ended[3];           /* A's waits 1 and 2 */
bit bended;             /* B's sleep */

inline lock(l)   { atomic { l == 0 -> l = 1 } }
inline unlock(l) { l = 0 }

inline end_wait(k) { atomic { assert(!ended[k]); ended[k] = 1 } }

/* under H: a timer into any free handle; its handle + 1 into s */
inline push(p, seq, fd, s)
{
    if
    :: !taken[0] -> h = 0
    :: !taken[1] -> h = 1
    :: !taken[2] -> h = 2
    fi;
    taken[h] = 1; rec_p[h] = p; rec_seq[h] = seq; rec_fd[h] = fd;
    s = h + 1
}

proctype A()
{
    byte h, k, s;
    for (k : 1 .. 2) {
        lock(E);
        wseq = k;
        lock(H); push(1, k, 1, s); unlock(H);
        slot = s; timed = 1; w = 1;
        unlock(E);
        ended[k]        /* until woken */
    }
}

proctype B()
{
    byte h, s;
    lock(H); push(2, 0, 0, s); unlock(H);
    bended
}

/* readiness: takes the waiter, its timer off the heap by the slot */
proctype R()
{
    byte k, s, seq;
    for (k : 1 .. 2) {
        lock(E);
        if
        :: w ->
            w = 0; seq = wseq;
            if
            :: timed ->
                timed = 0; s = slot; slot = 0;
                if
                :: s ->
                    lock(H);
#ifdef BROKEN_UNCHECKED
                    if :: taken[s - 1] -> taken[s - 1] = 0; rec_p[s - 1] = 0 :: else fi;
#else
                    if
                    :: taken[s - 1] && rec_p[s - 1] == 1 && rec_fd[s - 1] && rec_seq[s - 1] == seq ->
                        taken[s - 1] = 0; rec_p[s - 1] = 0
                    :: else
                    fi;
#endif
                    unlock(H)
                :: else
                fi
            :: else
            fi;
            unlock(E);
            end_wait(seq)
        :: else -> unlock(E)
        fi
    }
}

proctype F()
{
    byte h, p, seq;
    bit fd;
    do
    :: ended[2] && bended -> break
    :: taken[0] || taken[1] || taken[2] ->
        lock(H);
        if
        :: taken[0] -> h = 0
        :: taken[1] -> h = 1
        :: taken[2] -> h = 2
        :: else -> h = NH
        fi;
        if
        :: h < NH ->
            p = rec_p[h]; seq = rec_seq[h]; fd = rec_fd[h];
            taken[h] = 0; rec_p[h] = 0;
            unlock(H);
            if
            :: fd ->
                lock(E);
#ifdef BROKEN_FIRE_NOSEQ
                if
                :: w == p ->
#else
                if
                :: w == p && wseq == seq ->
#endif
                    /* the wait's own timer has left the heap */
                    assert(!(taken[0] && rec_p[0] == 1 && rec_seq[0] == wseq) &&
                           !(taken[1] && rec_p[1] == 1 && rec_seq[1] == wseq) &&
                           !(taken[2] && rec_p[2] == 1 && rec_seq[2] == wseq));
                    w = 0; timed = 0; slot = 0;
                    seq = wseq;
                    unlock(E);
                    end_wait(seq)
                :: else -> unlock(E)
                fi
            :: else -> atomic { assert(!bended); bended = 1 }
            fi
        :: else -> unlock(H)
        fi
    od
}

init
{
    atomic {
        run A(); run B(); run R(); run F()
    }
    (_nr_pr == 1);
    assert(ended[1] && ended[2] && bended);
    assert(!taken[0] && !taken[1] && !taken[2])
}
