/* SPDX-License-Identifier: MIT */
/* The readiness word of an fd (lib/io/fd_wait.c, READINESS; lib/io/io_try.h's
 * coro__rw_now; docs/architecture.md, "When a system call is skipped"): a reader job on a
 * byte stream, the peer that sends CH chunks and then its end (FIN, a
 * pipe's last writer gone), and the thread that collects epoll's
 * edge-triggered events.  The reader either reads with a wait (coro_read:
 * the constructor's call, then fd_wait's park or retry, then the attempt
 * of whoever takes it from its slot) or waits for "readable" and then
 * reads with a timeout of 0 (coro_readable, a select branch).
 *
 * Abstracted: one fd, one direction (reading); the kernel is {q, fin} and
 * one pending-edge bit (epoll's ready list: edges merge until collected,
 * and a collection reports the state at that moment, or nothing when the
 * fd is not readable then); every read asks for more than is queued, so
 * every read that returns data is short; the word is {rd, closed, tick},
 * its snapshot and its clear (a CAS on the tick) separate steps around
 * the system call; the entry lock is a bit.  The readable wait is taken as
 * a wait on the kernel's state (coro_readable polls before it reports).
 *
 * Checked: the reader never parks for good: when nothing can move, it has
 * seen the end (monitor at timeout); at the end it has every byte
 * (assert); a read of timeout 0 after "readable" never times out (assert).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_SHORT_READ_CLEARS  the old rule: a short read clears the
 *                      word's readiness, the constructor skips its call
 *                      when the word says not ready, and no end state is
 *                      kept (the end that came with the last data is lost)
 *   -DBROKEN_SKIP      only the constructor's skip: a read of timeout 0
 *                      after "readable" trusts a word the poller has not
 *                      yet updated, and times out
 *   -DBROKEN_NO_TICK   an EAGAIN clears the word whatever came since its
 *                      snapshot (the edge between the call and the clear
 *                      is lost)
 */
#define CH 2

byte q;                 /* chunks queued in the kernel */
bit fin;                /* the peer's end came */
bit pend;               /* an edge queued in epoll, not yet collected */
byte sent;              /* chunks the peer sent */

bit rd, closed;         /* the word's readable and read-closed bits */
byte tick;              /* its tick */
bit lk;                 /* the entry lock */
bit parked, woken;      /* the reader's slot; taken by an event */

bit readable_mode;      /* the reader waits for "readable", then reads with timeout 0 */
bit reader_done;
byte got;

inline lock()   { atomic { lk == 0 -> lk = 1 } }
inline unlock() { lk = 0 }

/* the system call: res 1 data (short), 0 end of file, 2 EAGAIN */
inline sys_read()
{
    atomic {
        if
        :: q > 0 -> got = got + q; q = 0; res = 1
        :: q == 0 && fin -> res = 0
        :: else -> res = 2
        fi
    }
}

/* an operation: the word read before the call, cleared after EAGAIN
 * unless the tick moved */
inline attempt()
{
    atomic { s_tick = tick };
    sys_read();
    atomic {
        if
#ifdef BROKEN_NO_TICK
        :: res == 2 -> rd = 0; closed = 0
#else
        :: tick == s_tick && res == 2 -> rd = 0; closed = 0
#endif
#ifdef BROKEN_SHORT_READ_CLEARS
        :: tick == s_tick && res == 1 -> rd = 0
#endif
        :: else -> skip
        fi
    }
}

/* the constructor: its call, or (broken) the word's "not ready" */
inline construct()
{
#if defined(BROKEN_SHORT_READ_CLEARS) || defined(BROKEN_SKIP)
    if
    :: atomic { !rd && !closed -> res = 2 }
    :: atomic { rd || closed -> skip }; attempt()
    fi
#else
    attempt()
#endif
}

proctype reader()
{
    byte res, s_tick;

    do
    :: readable_mode ->
        atomic { q > 0 || fin -> skip };        /* "readable" */
        construct();                            /* coro_read(..., 0) */
        assert(res != 2);                       /* readable, then timed out: a spin */
        if
        :: res == 0 -> break
        :: else -> skip
        fi
    :: !readable_mode ->
        construct();
        /* fd_wait: after EAGAIN, park or try again; the slot's taker
         * tries for the job */
        do
        :: res != 2 -> break
        :: res == 2 ->
            lock();
            if
            :: rd || closed -> unlock(); attempt()
            :: else ->
                parked = 1;
                unlock();
                woken == 1;
                woken = 0;
                attempt()
            fi
        od;
        if
        :: res == 0 -> break
        :: else -> skip
        fi
    od;
    assert(got == CH);                          /* no byte lost */
    reader_done = 1
}

proctype peer()
{
    do
    :: sent < CH -> atomic { q++; sent++; pend = 1 }
    :: sent == CH -> atomic { fin = 1; pend = 1 }; break
    od
}

proctype poller()
{
    bit ev_in, ev_hup;
end:
    do
    :: atomic { pend -> pend = 0; ev_in = (q > 0 || fin); ev_hup = fin };
        if
        :: ev_in ->
            lock();
            tick++;
            rd = 1;
#ifndef BROKEN_SHORT_READ_CLEARS
            if
            :: ev_hup -> closed = 1
            :: else -> skip
            fi;
#endif
            if
            :: parked -> parked = 0; woken = 1
            :: else -> skip
            fi;
            unlock()
        :: else -> skip                         /* not readable when collected: no event */
        fi
    od
}

init
{
    atomic {
        if
        :: readable_mode = 0
        :: readable_mode = 1
        fi;
        run reader();
        run peer();
        run poller()
    }
}

active proctype monitor()
{
    timeout -> assert(reader_done)
}
