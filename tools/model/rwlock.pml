/* SPDX-License-Identifier: MIT */
/* The hand-off of coro_rwlock_t (lib/sync/rwlock.c): every step runs under
 * the lock's bucket lock, so each is one atomic block here.  A reader
 * takes the lock when no writer holds it and no writer waits, a writer
 * when it is free; otherwise they wait.  grant() hands a released lock to
 * its next holders: after a write unlock every waiting reader, else a
 * writer; after the last read unlock a writer, else the readers; and
 * write_left() - a waiting writer that gave up (timeout, cancel, an
 * unchosen select branch) - admits the readers no writer holds back now.
 *
 * Abstracted: 2 readers and 2 writers, each taking the lock ROUNDS times;
 * a waiter may give up at any moment (its timeout); the writer granted is
 * any waiting one (the code takes the oldest: a superset of its orders).
 *
 * One round (make check-model) proves what more rounds would; make
 * check-full searches two (check-model: large instance -DROUNDS=2).
 * Every check reads the lock's state alone: st[], and readers and writer,
 * which each atomic step keeps equal to the holders st[] shows.  A process
 * between two rounds is IDLE and holds nothing: to the others the same as
 * one that has not begun.  A state the checks pass is one of: a
 * writer holding, readers holding, or nobody holding and nobody waiting;
 * waiters only behind a holder, readers only behind a writer that holds or
 * waits.  One round reaches each such state straight from the start, by
 * fresh requests in this order: the holders, then the waiting writers,
 * then the waiting readers.  From it every step open to a longer run is
 * open too, with the same effect on the state: a request (by a process
 * that has not begun), a waiter giving up or granted, a holder's release.
 * So the first state of a longer run that fails an assert is reached by
 * a run of one round too: more rounds add longer paths between the same
 * states, not new ones.  (No run of any length stops with a process
 * waiting: a waiter may always give up, a holder always release.)
 *
 * Checked at every step (the monitor's asserts):
 *   - exclusion: never a writer beside readers, never two writers;
 *   - no ghost: a reader waits only while a writer holds the lock or waits;
 *   - waiters only while it is held (so an acquire that finds it free
 *     takes it without looking at the lists);
 * and no process waits forever (spin's invalid end states).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_NO_LEAVE     a writer that gives up admits nobody (a reader
 *                         then waits behind a writer that is gone)
 *   -DBROKEN_NO_GRANT     the last read unlock hands the lock to nobody
 *                         (a waiting writer sleeps for ever)
 * Starvation (writer preference, reader batches) is a liveness matter that
 * these safety checks do not see: tests/internal/test_rwlock.c shows the
 * order.
 */
#ifndef ROUNDS
#define ROUNDS 1        /* the lock taken this many times by each process */
#endif
#define NR 2
#define NW 2
#define N (NR + NW)
#define IDLE 0
#define WAITING 1
#define HOLDING 2

byte readers;           /* read holds */
bit writer;             /* the write lock is held */
byte st[N];             /* 0 .. NR-1 readers, NR .. N-1 writers */
byte done;

inline rwait(r)
{
    r = 0;
    for (k : 0 .. NR - 1) { if :: st[k] == WAITING -> r = 1 :: else -> skip fi }
}

inline wwait(r)
{
    r = 0;
    for (k : NR .. N - 1) { if :: st[k] == WAITING -> r = 1 :: else -> skip fi }
}

inline admit_readers()
{
    for (k : 0 .. NR - 1) {
        if
        :: st[k] == WAITING -> st[k] = HOLDING; readers++
        :: else -> skip
        fi
    }
}

/* hand the lock to whoever may have it now */
inline grant(readers_first)
{
    rw = 0; ww = 0;
    rwait(rw);
    if
    :: writer -> skip
    :: else ->
        if
        :: readers_first && rw -> admit_readers()
        :: else ->
            wwait(ww);
            if
            :: readers == 0 && ww ->
                if      /* any waiting writer */
                :: st[NR] == WAITING -> st[NR] = HOLDING
                :: st[NR + 1] == WAITING -> st[NR + 1] = HOLDING
                fi;
                writer = 1
            :: else ->
                if
                :: !ww -> admit_readers()
                :: else -> skip
                fi
            fi
        fi
    fi
}

proctype reader(byte me)
{
    byte k, rw, ww, n = 0;
    do
    :: n < ROUNDS ->
        atomic {
            wwait(ww);
            if
            :: !writer && !ww -> readers++; st[me] = HOLDING
            :: else -> st[me] = WAITING
            fi
        }
        if
        :: st[me] == HOLDING -> skip
        :: atomic { st[me] == WAITING -> st[me] = IDLE }  /* gives up: nothing to admit */
        fi;
        if
        :: st[me] == HOLDING ->
            atomic {
                st[me] = IDLE;
                readers--;
#ifdef BROKEN_NO_GRANT
                skip
#else
                if :: readers == 0 -> grant(0) :: else -> skip fi
#endif
            }
        :: else -> skip
        fi;
        n++
    :: else -> break
    od;
    done++
}

proctype writer_(byte me)
{
    byte k, rw, ww, n = 0;
    do
    :: n < ROUNDS ->
        atomic {
            if
            :: !writer && readers == 0 -> writer = 1; st[me] = HOLDING
            :: else -> st[me] = WAITING
            fi
        }
        if
        :: st[me] == HOLDING -> skip
        :: atomic {
            st[me] == WAITING -> st[me] = IDLE;
#ifndef BROKEN_NO_LEAVE
            grant(0)        /* write_left */
#endif
           }
        fi;
        if
        :: st[me] == HOLDING ->
            atomic {
                st[me] = IDLE;
                writer = 0;
                grant(1)
            }
        :: else -> skip
        fi;
        n++
    :: else -> break
    od;
    done++
}

active proctype monitor()
{
    byte k, rw, ww, held;
    do
    :: done == N -> break
    :: atomic {
        done < N ->
        rwait(rw);
        wwait(ww);
        held = 0;
        for (k : NR .. N - 1) { if :: st[k] == HOLDING -> held++ :: else -> skip fi }
        assert(held <= 1 && (held == writer));
        assert(!(writer && readers > 0));
        assert(!rw || writer || ww);            /* no ghost */
        assert(!(rw || ww) || writer || readers > 0)
       }
    od
}

init
{
    atomic {
        run reader(0); run reader(1);
        run writer_(2); run writer_(3)
    }
}
