/* SPDX-License-Identifier: MIT */
/* What a worker does with the jobs its own look at epoll made ready
 * (lib/sched/worker.c IDLE, lib/sched/park.c WOKEN BY ITS OWN EVENTS): the
 * first job it runs itself, with no queue; the other jobs any worker may
 * run go to its own queues with no notify each, and one notify follows
 * the batch; a job only another worker may run (a narrower class) is
 * pushed where that worker looks, with its own notify.
 *
 * Abstracted: readiness is a count of pending events per kind (jobs any
 * worker may run; jobs only worker k may run); the epoll set's ready list
 * is taken whole by one look.  An idle worker's first look (poll_now) may
 * take the events without the poll token; a parking worker takes the
 * token if it is free and waits in epoll until an event, its epoch moves
 * or the eventfd is written, else it waits on its futex (the activity
 * hint that sends it to its futex with the token free, and the I/O thread
 * that then takes the token, are left out: with them the I/O thread
 * handles the events, pushing each job with its notify).  The batch's
 * notify wakes nobody when a searcher exists (tokio's rule): that
 * searcher, a third worker, is left out but may be anywhere, so that
 * notify may always come to nothing.  The park
 * protocol itself (epoch, idle bit, one more look, claim) is park.pml's,
 * with every barrier in place: here each statement is seq_cst.  A job's
 * run is one step.
 *
 * Checked: when nothing can move, every event was taken and every job it
 * made ready ran (no lost wake-up), and no job ran twice.
 *
 * Broken variant (make check-model expects spin to reject it):
 *   -DBROKEN_PINNED  a job only the other worker may run is counted in
 *                    the batch like the others (no notify of its own): the
 *                    other worker, asleep on its futex, never learns of it
 */
#define NANY 2          /* events whose job any worker may run */
#define NPIN 1          /* events whose job only worker 1 may run */

byte ev_any, ev_pin;    /* ready in the epoll set, not yet taken */
byte q;                 /* READY jobs any worker may run (its queues: looked at by all) */
byte qp;                /* READY jobs only worker 1 may run (its class queue) */
byte ran;
bit idle[2];
byte epoch[2];
byte driver;            /* the poll token: 0 free, i + 1 = worker i */
bit evfd;
byte made;              /* events the device made ready */

/* claim worker k if parked: clear its bit, bump its epoch, wake it */
inline wake(k)
{
    if
    :: atomic { idle[k] -> idle[k] = 0; epoch[k]++ };
        if
        :: driver == k + 1 -> evfd = 1
        :: else -> skip
        fi
    :: atomic { !idle[k] -> skip }
    fi
}

/* notify(any): a parked worker, or nobody when a worker searches (a third
 * worker, not modelled, that covers jobs any worker may run - and may not
 * be in worker 1's class) */
inline notify_any()
{
    if
    :: won = 0                                /* a searcher exists */
    :: atomic { idle[0] -> idle[0] = 0; epoch[0]++; k = 0; won = 1 }
    :: atomic { !idle[0] && idle[1] -> idle[1] = 0; epoch[1]++; k = 1; won = 1 }
    :: atomic { !idle[0] && !idle[1] -> won = 0 }
    fi;
    if
    :: won && driver == k + 1 -> evfd = 1
    :: else -> skip
    fi
}

/* the events taken by one look: run the first job we may run, queue the
 * rest (batch), one notify for the batch */
inline handle(me)
{
    atomic { na = ev_any; np = ev_pin; ev_any = 0; ev_pin = 0 };
    caught = 0;
    if
    :: na > 0 -> na--; caught = 1            /* w->caught: runs next, no queue */
    :: else -> skip
    fi;
    batched = na;
    q = q + na;                              /* our own queues, no notify each */
    if
    :: np > 0 && me == 1 ->
        if
        :: caught == 0 -> np--; caught = 1   /* ours to run, as caught */
        :: else -> skip
        fi;
        qp = qp + np; batched = batched + np
    :: np > 0 && me == 0 ->
        qp = qp + np;                        /* a job of a class we are not in */
#ifdef BROKEN_PINNED
        batched = batched + np               /* counted as ours: no notify */
#else
        wake(1)                              /* its own notify, at its push */
#endif
    :: else -> skip
    fi;
    if
    :: batched > 0 -> notify_any()           /* batch_end: one for them all */
    :: else -> skip
    fi;
    if
    :: caught -> ran++
    :: else -> skip
    fi
}

proctype device()
{
    do
    :: made < NANY + NPIN ->
        if
        :: atomic { made < NANY + NPIN -> ev_any++; made++ }
        :: atomic { made < NANY + NPIN && ev_pin + qp + ran < NPIN + NANY -> ev_pin++; made++ }
        fi
    :: else -> break
    od
}

proctype worker(byte me)
{
    byte e, na, np, batched, k;
    bit caught, won;
    do
    :: atomic { q > 0 -> q--; ran++ }                /* its queues (or a steal) */
    :: atomic { me == 1 && qp > 0 -> qp--; ran++ }   /* the class queue */
    :: q == 0 && (me == 0 || qp == 0) ->
        handle(me);                                  /* the first look: epoll without the token */
        /* then park */
        e = epoch[me];
        idle[me] = 1;
        if
        :: atomic { q > 0 -> q--; ran++ }; idle[me] = 0     /* one more look */
        :: atomic { me == 1 && qp > 0 -> qp--; ran++ }; idle[me] = 0
        :: q == 0 && (me == 0 || qp == 0) ->
            if
            :: atomic { driver == 0 -> driver = me + 1 } ->
                if
                :: epoch[me] != e -> driver = 0
                :: else ->
end_epoll:          (evfd == 1 || ev_any > 0 || ev_pin > 0 || epoch[me] != e);
                    evfd = 0;
                    driver = 0;
                    idle[me] = 0;                    /* awake: before handling */
                    handle(me)
                fi
            :: else ->
end_futex:      epoch[me] != e
            fi;
            idle[me] = 0
        fi
    od
}

active proctype monitor()
{
    timeout -> assert(made == NANY + NPIN && ev_any == 0 && ev_pin == 0 && q == 0 && qp == 0 &&
                      ran == NANY + NPIN)
}

init
{
    atomic { run worker(0); run worker(1); run device() }
}
