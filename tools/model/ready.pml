/* SPDX-License-Identifier: MIT */
/* The readiness word of an fd (lib/io/fd_wait.c, READINESS; lib/io/io.h's
 * coro__readiness_clear_short and coro__readiness_skip; lib/io/ops.c's
 * rw_now; docs/architecture.md, "When a system call is skipped"): a reader
 * job on a byte stream, the peer that sends CH chunks and then its end
 * (FIN, a pipe's last writer gone), and the thread that collects epoll's
 * edge-triggered events.  The reader either reads with a wait (coro_read:
 * the constructor's call or its skip, then fd_wait's park or retry, then
 * the attempt of whoever takes it from its slot) or waits for "readable"
 * and then reads with a timeout of 0 (coro_readable, a select branch).
 *
 * Two kinds of fd, chosen at the start:
 *   plain TCP (kind_tcp): a read takes every byte queued, but stops short
 *     at the urgent mark (send(MSG_OOB): the peer may send one urgent
 *     chunk, and the chunks after it wait behind the mark, qb); epoll
 *     reports EPOLLPRI while the mark stands.  The word's rule for this
 *     kind: a short read clears the read bit (never the closed one) under
 *     the tick check, unless urgent data was seen (the sticky urg bit, set
 *     by an event that reports EPOLLPRI) or the end state stands; and a
 *     read with a timeout other than 0 skips its call while the word says
 *     not ready, not closed, no urgent data.
 *   any other (a datagram socket, a unix stream socket at an SCM_RIGHTS
 *     or credentials boundary, kTLS at a control record): a read takes
 *     one chunk and leaves the rest, with no new edge.  Only EAGAIN
 *     clears, and every read calls.
 *
 * Abstracted: one fd, one direction (reading); the kernel is {qa, qb,
 * mark, fin} and one pending-edge bit (epoll's ready list: edges merge
 * until collected, and a collection reports the state at that moment, or
 * nothing when the fd is not readable then); every read asks for more
 * than is queued, so every read that returns data is short; the word is
 * {rd, closed, urg, tick}, its snapshot and its clear (a CAS on the tick)
 * separate steps around the system call; the entry lock is a bit.  The
 * readable wait is taken as a wait on the kernel's state (coro_readable
 * polls before it reports).  The peer ends in one of two ways: its end
 * right after its last chunk (the end may come with the last data), or
 * only once the reader has every chunk (a request and its response: a
 * chunk the reader never wakes for is then never followed by anything).
 *
 * Checked: the reader never parks for good: when nothing can move, it has
 * seen the end (monitor at timeout); at the end it has every byte
 * (assert); a read of timeout 0 after "readable" never times out (assert).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_SHORT_READ_CLEARS  a short read clears the word's readiness
 *                      for every kind, the constructor skips its call when
 *                      the word says not ready whatever its timeout, and
 *                      no end state is kept (the end that came with the
 *                      last data is lost)
 *   -DBROKEN_ANY_KIND  the plain-TCP rule for every kind of fd: a short
 *                      read that left chunks behind clears, and the next
 *                      read parks without trying
 *   -DBROKEN_CLEARS_CLOSED  the plain-TCP short read clears the closed bit
 *                      too: the FIN that came with the last data, its
 *                      edge already counted, is never read
 *   -DBROKEN_NO_URGENT no EPOLLPRI, no sticky urgent bit: a read that
 *                      stops at the mark clears, and the chunks behind it
 *                      wait for an edge that never comes
 *   -DBROKEN_SKIP      a read of timeout 0 after "readable" trusts a word
 *                      the poller has not yet updated, and times out
 *   -DBROKEN_NO_TICK   an EAGAIN clears the word whatever came since its
 *                      snapshot (the edge between the call and the clear
 *                      is lost)
 */
#define CH 2

bit kind_tcp;           /* plain TCP, else a kind whose short read says nothing */
byte qa;                /* chunks queued in the kernel, before the urgent mark if any */
byte qb;                /* chunks queued behind the mark */
bit mark;               /* an urgent mark stands (TCP: urg_data valid, EPOLLPRI) */
bit urg_sent;
bit fin;                /* the peer's end came */
bit peer_waits;         /* the peer sends its end only once the reader has every chunk */
bit pend;               /* an edge queued in epoll, not yet collected */
byte sent;              /* chunks the peer sent */

bit rd, closed, urg;    /* the word's readable, read-closed and urgent bits */
byte tick;              /* its tick */
bit lk;                 /* the entry lock */
bit parked, woken;      /* the reader's slot; taken by an event */

bit readable_mode;      /* the reader waits for "readable", then reads with timeout 0 */
bit reader_done;
byte got;

inline lock()   { atomic { lk == 0 -> lk = 1 } }
inline unlock() { lk = 0 }

#ifdef BROKEN_ANY_KIND
#define RULE_KIND 1
#else
#define RULE_KIND kind_tcp
#endif

/* the system call: res 1 data (short), 0 end of file, 2 EAGAIN */
inline sys_read()
{
    atomic {
        if
        :: kind_tcp && qa == 0 && mark ->
            mark = 0; qa = qb; qb = 0       /* the read passes the mark */
        :: else -> skip
        fi;
        if
        :: kind_tcp && qa > 0 -> got = got + qa; qa = 0; res = 1
        :: !kind_tcp && qa > 0 -> got++; qa--; res = 1
        :: qa == 0 && fin -> res = 0
        :: qa == 0 && !fin -> res = 2
        fi
    }
}

/* an operation: the word read before the call, cleared after EAGAIN
 * unless the tick moved; a short read of the plain-TCP kind clears the
 * read bit under the same check */
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
#if defined(BROKEN_SHORT_READ_CLEARS)
        :: tick == s_tick && res == 1 -> rd = 0
#elif defined(BROKEN_CLEARS_CLOSED)
        :: tick == s_tick && res == 1 && RULE_KIND && !urg -> rd = 0; closed = 0
#else
        :: tick == s_tick && res == 1 && RULE_KIND && !urg && !closed -> rd = 0
#endif
        :: else -> skip
        fi
    }
}

/* the constructor: its call, or its skip (res 2 without a call).  tmo0:
 * a timeout of 0, which always calls */
inline construct(tmo0)
{
#if defined(BROKEN_SHORT_READ_CLEARS) || defined(BROKEN_SKIP)
    if
    :: atomic { !rd && !closed -> res = 2 }
    :: atomic { rd || closed -> skip }; attempt()
    fi
#else
    if
    :: atomic { !tmo0 && RULE_KIND && !rd && !closed && !urg -> res = 2 }
    :: atomic { else -> skip }; attempt()
    fi
#endif
}

proctype reader()
{
    byte res, s_tick;

    do
    :: readable_mode ->
        atomic { qa > 0 || qb > 0 || fin -> skip };     /* "readable" */
        construct(1);                                   /* coro_read(..., 0) */
        assert(res != 2);                               /* readable, then timed out: a spin */
        if
        :: res == 0 -> break
        :: else -> skip
        fi
    :: !readable_mode ->
        construct(0);
        /* fd_wait: after EAGAIN (or the skip), park or try again; the
         * slot's taker tries for the job */
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
    :: sent < CH -> atomic {
            if
            :: mark -> qb++
            :: else -> qa++
            fi;
            sent++; pend = 1 }
    :: kind_tcp && !urg_sent && sent < CH ->
        atomic { qa++; mark = 1; urg_sent = 1; sent++; pend = 1 }   /* send(MSG_OOB) */
    :: sent == CH ->
        if
        :: !peer_waits -> skip                  /* the end with the last data */
        :: peer_waits -> got == CH              /* the end once all was read */
        fi;
        atomic { fin = 1; pend = 1 };
        break
    od
}

proctype poller()
{
    bit ev_in, ev_hup, ev_pri;
end:
    do
    :: atomic { pend -> pend = 0; ev_in = (qa > 0 || qb > 0 || fin || mark); ev_hup = fin;
                ev_pri = mark };
        if
        :: ev_in ->
            lock();
            /* one RMW of the word (readiness_update's CAS): the tick, the
             * ready bit and what the event says of the end and of urgent
             * data move together */
            atomic {
                tick++;
                rd = 1;
#ifndef BROKEN_SHORT_READ_CLEARS
                if
                :: ev_hup -> closed = 1
                :: else -> skip
                fi;
#endif
#ifndef BROKEN_NO_URGENT
                if
                :: ev_pri && kind_tcp -> urg = 1    /* EPOLLPRI: registered for plain TCP */
                :: else -> skip
                fi
#endif
            };
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
        if
        :: kind_tcp = 0
        :: kind_tcp = 1
        fi;
        if
        :: peer_waits = 0
        :: peer_waits = 1
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
