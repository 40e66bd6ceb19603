/* SPDX-License-Identifier: MIT */
/* The drive queue of a single-threaded scheduler (lib/rt/drive.c): one
 * thread at a time drives (bit DRIVE_ON of the drive word); a thread that
 * joins a job while another drives queues a node of its own and sleeps on
 * the node's kick word until its job ended or the drive is free, and then
 * takes the drive over.  The end of a joined job kicks that job's nodes;
 * the driver's stop kicks one node; a node that leaves because its job
 * ended passes that kick on while the drive is free.
 *
 * Abstracted: three threads, each joining a job of its own (job 0 for
 * thread 0, which drives first); a driver ends ready jobs in any order
 * until its own has ended (a job ends in one RMW of its state, then the
 * joiners' wake); the queue's lock is a bit; the drive word is DRIVE_ON
 * and the count of queued threads, changed by RMWs; the kick of the
 * driver's stop goes to any queued node (the code takes the first it
 * finds); a futex sleep is a wait for kick == 1, a wake-up the store of 1
 * (a spurious wake-up only adds a look, left out).
 *
 * Checked: every thread returns with its job ended (the assert), and no
 * thread sleeps forever: spin's invalid end state is a thread asleep in
 * its queue while nobody drives.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_NO_PASS      a node that leaves because its job ended does
 *                         not pass the stop's kick on
 *   -DBROKEN_KICK_FIRST   the driver kicks a node before it clears DRIVE_ON
 */
#define NT 3

bit on = 1;             /* DRIVE_ON: thread 0 drives from the start */
byte nq;                /* the word's count of queued threads */
bit lk;                 /* drive_lock */
bit q[NT];              /* thread i's node is queued */
bit kick[NT];
bit ended[NT];          /* job i ended */

inline lock()   { atomic { lk == 0 -> lk = 1 } }
inline unlock() { lk = 0 }

/* under the lock: one queued node, any */
inline kick_one()
{
    if
    :: q[0] -> kick[0] = 1
    :: q[1] -> kick[1] = 1
    :: q[2] -> kick[2] = 1
    :: else
    fi
}

/* the driver ends job k: its state's RMW, then its joiner's kick */
inline end_job(k)
{
    ended[k] = 1;
    lock();
    if
    :: q[k] -> kick[k] = 1
    :: else
    fi;
    unlock()
}

/* drive until job `me` ended, ending any ready jobs meanwhile, then stop */
inline drive(me)
{
    do
    :: ended[me] -> break
    :: else ->
        if
        :: !ended[0] -> end_job(0)
        :: !ended[1] -> end_job(1)
        :: !ended[2] -> end_job(2)
        fi
    od;
#ifdef BROKEN_KICK_FIRST
    lock(); kick_one(); unlock();
    on = 0;
#else
    atomic { w = nq; on = 0 };
    if
    :: w > 0 -> lock(); kick_one(); unlock()
    :: else
    fi
#endif
}

inline unqueue(me, pass)
{
    atomic { nq-- };
    lock();
    q[me] = 0;
#ifndef BROKEN_NO_PASS
    if
    :: pass && !on -> kick_one()
    :: else
    fi;
#endif
    unlock()
}

proctype joiner(byte me)
{
    bit queued, v, k;
    byte w;             /* drive(): the count its stop's RMW read */
    if
    :: me == 0 -> goto driving     /* thread 0 took the drive first */
    :: else
    fi;
look:
    v = on;
    if
    :: ended[me] -> goto leave
    :: else
    fi;
    if
    :: !v ->
        if
        :: queued -> unqueue(me, 0); queued = 0
        :: else
        fi;
        if
        :: atomic { on == 0 -> on = 1 } -> goto driving
        :: atomic { on == 1 } -> goto look      /* another took it */
        fi
    :: else
    fi;
    if
    :: !queued ->
        lock(); q[me] = 1; unlock();
        atomic { nq++ };
        queued = 1;
        goto look
    :: else
    fi;
    atomic { k = kick[me]; kick[me] = 0 };
    if
    :: k -> goto look
    :: else
    fi;
    kick[me] == 1;          /* futex_wait(&kick, 0) */
    goto look;
driving:
    drive(me);
leave:
    if
    :: queued -> unqueue(me, 1)
    :: else
    fi;
    assert(ended[me])
}

init
{
    atomic {
        run joiner(0);
        run joiner(1);
        run joiner(2)
    }
}
