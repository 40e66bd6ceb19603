/* SPDX-License-Identifier: MIT */
/* Busy looks beside the I/O thread (lib/io/epoll.c: BUSY WORKERS LOOK
 * TOO, THE POLL TOKEN): a busy worker's look reaches the
 * epoll set whoever holds the token, except another worker.
 *
 * Abstracted: the epoll set's ready list is a count (ready); an
 * epoll_wait takes all of it at once (one statement: the kernel hands each
 * edge-triggered event to one caller), and the events it took are handled
 * later, in a statement of their own (handled).  The eventfd is one bit.
 * Spin may delay any process for as long as it likes between two
 * statements: that is a thread that holds the token but does not run
 * (woken from epoll_wait, waiting for a CPU the busy workers hold).
 *
 * Processes: src makes E events; the I/O thread takes the token when it
 * is free and either looks once without blocking and lets go, or
 * waits in epoll_wait until an event or the eventfd, letting go when a
 * worker asked (want); two busy workers make K looks each, holding the
 * token marked as a look's when they take it; a parking worker asks
 * for the token once (want + kick, as coro__io_park) and waits in epoll
 * with it.
 *
 * Checked:
 *   - every event that was ready when a busy look began is off the ready
 *     list when that look returns (taken by it or by another thread),
 *     unless an idle worker held the token (in epoll_wait, on a CPU of
 *     its own): no event waits for a token holder that does not run,
 *     whether the I/O thread or another busy look;
 *   - nothing is handled twice nor lost: handled never exceeds the
 *     events made, and when nothing can move, all are handled, and the
 *     parking worker got the token.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_TOKENLOOK a busy look that finds the I/O thread holding the
 *                      token asks for it and returns without looking (the
 *                      code before the busy look looked beside it)
 *   -DBROKEN_LOOKSKIP  a busy look that finds another busy look holding the
 *                      token returns without looking
 *   -DBROKEN_KICKREAD  a busy look beside the I/O thread reads the eventfd:
 *                      the kick of a parking worker's ask is lost, and the
 *                      I/O thread sleeps in epoll_wait holding the token
 */
#define E 2             /* events */
#define K 1             /* looks per busy worker */
#define FREE 0
#define PARKW 2         /* the parking worker */
#define IOT 3
#define LOOK 4          /* + i: busy worker i's look holds it (TOKEN_LOOK) */

byte token;             /* io->poll_token */
byte ready;             /* events on the epoll set's ready list */
byte arrived;           /* events made so far */
byte taken;             /* events taken off the ready list so far */
byte handled;           /* events handled */
bit evfd;               /* the eventfd */
bit want_park, want_busy;       /* io->want */
bit pdone;              /* the parking worker had its turn with the token */

inline handle(n)
{
    handled = handled + n;
    assert(handled <= arrived)
}

proctype src()
{
    do
    :: arrived < E -> atomic { ready++; arrived++ }
    :: else -> break
    od
}

proctype iot()
{
    byte n;
    do
    :: atomic { token == FREE -> token = IOT };
        if
        :: /* one look without blocking, then let go (a round of
           * iot_drive that finds a worker's ask) */
            atomic { n = ready; taken = taken + ready; ready = 0 };
            handle(n); n = 0
        :: /* every worker in a long step: wait in epoll */
end_epoll:  do
            :: atomic { ready > 0 || evfd ->
                    n = ready; taken = taken + ready; ready = 0; evfd = 0 };  /* the holder reads the kick */
                handle(n); n = 0;
                if
                :: want_park || want_busy -> break
                :: else -> skip
                fi
            od
        fi;
        atomic { want_busy = 0; want_park = 0 };
        token = FREE
    od
}

proctype busy(byte me)
{
    byte k = 0, a0, n;
    bit counts;
    do
    :: k < K ->
        a0 = arrived;               /* what was ready when the look began */
        counts = 1;
        if
        :: atomic { token == FREE -> token = LOOK + me };     /* took it, marked */
            atomic { n = ready; taken = taken + ready; ready = 0; evfd = 0 };
            token = FREE
        :: atomic { token == IOT -> want_busy = 1 };            /* ask it to let go */
#ifdef BROKEN_TOKENLOOK
            skip                    /* ... and look no further */
#else
            atomic {                /* look beside it, without the token */
                n = ready; taken = taken + ready; ready = 0
#ifdef BROKEN_KICKREAD
                ; evfd = 0          /* a kick that was not ours */
#endif
            }
#endif
        :: atomic { token >= LOOK && token != LOOK + me -> skip };  /* another busy look */
#ifdef BROKEN_LOOKSKIP
            skip                    /* left to it */
#else
            atomic { n = ready; taken = taken + ready; ready = 0 }   /* beside it */
#endif
        :: atomic { token == PARKW -> counts = 0 }            /* a worker in epoll sees them */
        fi;
        assert(!counts || taken >= a0);
        handle(n); n = 0;
        k++
    :: else -> break
    od
}

proctype parker()
{
    byte n;
    do
    :: atomic { token == IOT && !want_park -> want_park = 1 };       /* ask, */
        evfd = 1                                                    /* and kick */
    :: atomic { token == FREE -> token = PARKW }; break             /* took it */
    od;
    atomic { n = ready; taken = taken + ready; ready = 0; evfd = 0 };
    handle(n);
    pdone = 1;
    token = FREE
}

active proctype monitor()
{
    timeout -> assert(ready == 0 && handled == arrived && arrived == E && pdone)
}

init
{
    atomic { run src(); run iot(); run busy(0); run busy(1); run parker() }
}
