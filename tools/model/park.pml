/* SPDX-License-Identifier: MIT */
/* The park/wake protocol of lib/sched/worker.c (its opening comment, PARKING and
 * WAITING IN EPOLL INSTEAD) with the poll token of lib/io/epoll.c.
 *
 * Abstracted: the queues are one count q (a worker that looks finds any
 * queued job: a woken worker looks everywhere, steals included); a job's
 * run is one step; epoll_wait is "until the eventfd is readable", and the
 * read that empties it a statement of its own (I/O readiness itself is
 * not modelled: only the wake-up path through it).
 * Spin interleaves whole statements in one global order, so each seq_cst
 * RMW / load of the C code is one statement here, in program order; the
 * broken variants put back the reordering a missing fence would allow.
 *
 * Checked: no lost wake-up - when nothing can move any more (timeout),
 * every submitted job has run and every worker has left after the
 * stopper (stop_workers: stopping, then each worker's epoch and wake-up)
 * asked them to (monitor) - and no job runs twice (a job is
 * taken by one atomic decrement; ran counts them).
 *
 * Two modes, each verified (make check-model runs the model as it is and
 * with each -DALSO_* name below):
 *   (default)         asymmetric (s->use_membarrier, membarrier(2)): the submitter
 *                     fences with the compiler only, so its push may sit in
 *                     its store buffer (pend) while it reads the idle bits;
 *                     a parking worker's membarrier after step 2 drains
 *                     every thread's buffer before its last look
 *   -DALSO_FENCE      the fallback (no membarrier, COROKIT_MEMBARRIER=0):
 *                     the submitter's seq_cst fence of step a, no drain
 *
 * The idle summary (IDLE SUMMARY in worker.c): cnt counts the idle bits
 * (one idle word here: both workers' bits), up before a parker's bit is
 * set and down after a bit is cleared, by its claimer or its worker; a
 * notifier reads it first and wakes nobody when it reads 0.  Checked in
 * every mode, with the assertions that it never falls below the bits
 * and is back to 0 at the end.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_FENCE    neither: the submitter reads the idle bits before its
 *                     push is visible and the parker calls no membarrier
 *   -DBROKEN_RECHECK  a worker that took the poll token waits in epoll
 *                     without reading its epoch again
 *   -DBROKEN_LATEREAD a worker woken in epoll lets the token go before it
 *                     reads the eventfd (the code before the fix: its read
 *                     could take the kick written for the next holder,
 *                     which slept in epoll_wait for good)
 *   -DBROKEN_SUMMARY  a parker counts itself in the summary only after its
 *                     last look
 */
#define NW 2            /* workers */
#define NS 2            /* submitting threads */
#define PER 1           /* jobs each */

byte q;                 /* READY jobs queued */
byte ran;               /* jobs run */
bit idle[NW];           /* s->idle */
byte cnt;               /* s->idle_sum: the count of idle's word */
byte epoch[NW];         /* w->futex */
byte driver;            /* the poll token: 0 free, i + 1 = worker i */
bit evfd;               /* the eventfd: written -> the holder's epoll_wait ends */
bit stopping;           /* s->stopping (coro_sched_destroy) */
byte exited;            /* workers that saw it and left */
bit pend[NS];           /* a submitter's push still in its store buffer */

/* membarrier(2) in the parker: a full barrier on every CPU running one of
 * our threads, so every buffered push is visible after it */
inline drain_all()
{
    atomic { q = q + pend[0] + pend[1]; pend[0] = 0; pend[1] = 0 }
}

inline notify(snap0, snap1)
{
    /* b: the summary first: 0, nobody to wake.  c: for an idle worker,
     * clear its bit (one RMW picks one winner), count it down, bump its
     * epoch (seq_cst RMW), then wake it where it sleeps */
    won = 0;
    if
    :: cnt == 0 -> skip
    :: else ->
        if
        :: atomic { snap0 && idle[0] -> idle[0] = 0; won = 1; k = 0 }
        :: atomic { else -> won = 0 }
        fi;
        if
        :: !won ->
            if
            :: atomic { snap1 && idle[1] -> idle[1] = 0; won = 1; k = 1 }
            :: atomic { else -> skip }
            fi
        :: else -> skip
        fi
    fi;
    if
    :: won ->
        cnt--;
        assert(cnt >= idle[0] + idle[1]);    /* never below the bits */
        epoch[k]++;
        if
        :: driver == k + 1 -> evfd = 1     /* coro__io_wake_poller */
        :: else -> skip                    /* futex_wake: the epoch already moved */
        fi
    :: else -> skip
    fi
}

proctype submitter(byte me)
{
    byte n = 0, k;
    bit won, s0, s1;
    do
    :: n < PER ->
#ifdef ALSO_FENCE
        q++;                          /* the push of a READY job */
        s0 = 1; s1 = 1;               /* a: fence; b: read the bits now */
        notify(s0, s1);
#else
        pend[me] = 1;                 /* the push, in our store buffer */
        s0 = 1; s1 = 1;               /* a: the compiler's barrier only */
        if                            /* the buffer drains before our reads, */
        :: atomic { pend[me] -> q++; pend[me] = 0 }
        :: skip                       /* or after them (or a membarrier does) */
        fi;
        notify(s0, s1);
        if                            /* drained by now, at the latest */
        :: atomic { pend[me] -> q++; pend[me] = 0 }
        :: atomic { !pend[me] -> skip }
        fi
#endif
        n++
    :: else -> break
    od
}

proctype worker(byte me)
{
    byte e;
    bit had;
    do
    :: atomic { q > 0 -> q--; ran++ }          /* found work: run it */
    :: q == 0 && stopping -> break             /* nothing left: leave */
    :: q == 0 && !stopping ->
        e = epoch[me];                         /* 1. the park epoch */
#ifndef BROKEN_SUMMARY
        cnt++;                                 /* 2. the summary (seq_cst RMW) */
#endif
        idle[me] = 1;                          /* 2. seq_cst RMW */
#if !defined(ALSO_FENCE) && !defined(BROKEN_FENCE)
        drain_all();                           /* 2b. membarrier */
#endif
        if
        :: atomic { q > 0 -> q--; ran++ }      /* 3. one more look: found */
#ifdef BROKEN_SUMMARY
            ; cnt++
#endif
        :: q == 0 && stopping ->               /* 3. stopping: no wait */
#ifdef BROKEN_SUMMARY
            cnt++
#else
            skip
#endif
        :: q == 0 && !stopping ->              /* 3. nothing */
#ifdef BROKEN_SUMMARY
            cnt++;                             /* counted only now */
#endif
            if
            :: atomic { driver == 0 -> driver = me + 1 } ->  /* took the token */
#ifndef BROKEN_RECHECK
                if
                :: epoch[me] != e -> driver = 0  /* woken meanwhile: no wait */
                :: else ->
#endif
end_epoll:          evfd == 1;                          /* epoll_wait returns */
#ifdef BROKEN_LATEREAD
                    driver = 0;                         /* let the token go */
                    evfd = 0                            /* then read the eventfd */
#else
                    evfd = 0;                           /* read the eventfd */
                    driver = 0                          /* then let the token go */
#endif
#ifndef BROKEN_RECHECK
                fi
#endif
            :: else ->
end_futex:      epoch[me] != e                 /* 4. futex_wait(&futex, e) */
            fi
        fi;
        atomic { had = idle[me]; idle[me] = 0 };    /* 5. clear the bit if set */
        if
        :: had -> cnt--;                       /* then count it down */
            assert(cnt >= idle[0] + idle[1])
        :: else -> skip
        fi
    od;
    exited++
}

/* coro_sched_destroy after the drain: stop_workers sets stopping, then
 * bumps every worker's epoch and wakes it where it sleeps */
proctype stopper()
{
    byte k = 0;
    ran == NS * PER;            /* destroy drains first */
    stopping = 1;
    do
    :: k < NW ->
        epoch[k]++;
        if
        :: driver == k + 1 -> evfd = 1
        :: else -> skip
        fi;
        k++
    :: else -> break
    od
}

active proctype monitor()
{
    timeout -> assert(q == 0 && ran == NS * PER && exited == NW && cnt == 0)
}

init
{
    atomic {
        run worker(0); run worker(1);
        run submitter(0); run submitter(1); run stopper()
    }
}
