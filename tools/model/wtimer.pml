/* SPDX-License-Identifier: MIT */
/* A worker's timers (lib/wait/wtimer.c): the owner pushes its timed
 * waits' timers into its own heap and fires them before it parks, its
 * park's timeout being the deadline it reads there; another thread ends
 * a wait and marks its timer (heap.c's removal by mark, and the rebuild
 * once the marked ones outnumber the live ones); the I/O thread fires
 * the heap of a worker it takes for stuck (its published deadline late),
 * under the same lock.
 *
 * Abstracted: three timers with fixed deadlines (t1 earliest); the heap is
 * heap.c's 4-ary one, whose root's children are every other entry at this
 * size; each entry move of a pop's take_root, a sift or a rebuild is a
 * step of its own, as the machine's stores are; the clock moves forward
 * at any moment, up to 3; the lock is a bit.
 *
 * Checked: the deadline a park reads is never later than the earliest
 * live timer (a park that oversleeps a timer fires it late by up to the
 * next wake-up: assert in park); the published deadline is never later
 * than the earliest live timer whenever the lock is free (assert in
 * unlock); a timer fires at most once and never after its removal
 * (assert in expire); every timer is in the end fired or removed.
 *
 * Broken variant (make check-model expects spin to reject it):
 *   -DBROKEN_PARK_UNLOCKED  the park reads its next deadline from the
 *                           heap's top without the lock
 */
#define NT 3
#define INF 9

byte dl[NT];            /* deadlines */
byte a[NT];             /* the heap: timer ids, a[0] the earliest */
byte n;                 /* entries, marked ones included */
byte ndead;             /* marked entries */
bit dead[NT];           /* marked (removed, still in a[]) */
bit live[NT];           /* pushed, neither fired nor removed */
bit fired[NT], removed[NT];
bit lk;
byte next = INF;        /* the published deadline (coro__worker.timer_next) */
byte now;
bit stopped;            /* the clock stopped: sleepers stop waiting for it */

inline minlive(m)
{
    m = INF;
    if :: live[0] && dl[0] < m -> m = dl[0] :: else fi;
    if :: live[1] && dl[1] < m -> m = dl[1] :: else fi;
    if :: live[2] && dl[2] < m -> m = dl[2] :: else fi
}

inline lock()   { atomic { lk == 0 -> lk = 1 } }
inline unlock() { atomic { minlive(m); assert(next <= m); lk = 0 } }

inline swap(i, j) { atomic { tmp = a[i]; a[i] = a[j]; a[j] = tmp } }

/* the root out (take_root): the last entry to the root, then sift down */
inline take_root()
{
    atomic { n--; a[0] = a[n] };
    if
    :: n > 2 && dl[a[2]] < dl[a[1]] && dl[a[2]] < dl[a[0]] -> swap(0, 2)
    :: n > 1 && (n < 3 || dl[a[1]] <= dl[a[2]]) && dl[a[1]] < dl[a[0]] -> swap(0, 1)
    :: else
    fi
}

/* under the lock: the marked entries at the top leave (coro__heap_next) */
inline drop_dead()
{
    do
    :: n > 0 && dead[a[0]] -> dead[a[0]] = 0; ndead--; take_root()
    :: else -> break
    od
}

/* under the lock: fire what is due, publish the next deadline */
inline expire()
{
    do
    :: drop_dead();
       if
       :: n > 0 && dl[a[0]] <= now ->
           t = a[0];
           assert(live[t] && !fired[t] && !removed[t]);
           fired[t] = 1; live[t] = 0;
           take_root()
       :: else -> break
       fi
    od;
    if :: n > 0 -> next = dl[a[0]] :: else -> next = INF fi
}

proctype owner()
{
    byte t, tmp, m, d, k;
    /* push t0 (2), t1 (1), t2 (3): append, sift up (parent of 1, 2: 0) */
    for (k : 0 .. 2) {
        lock();
        a[n] = k; n++; live[k] = 1;
        if :: n > 1 && dl[a[n - 1]] < dl[a[0]] -> swap(0, n - 1) :: else fi;
        if :: dl[k] < next -> next = dl[k] :: else fi;
        unlock()
    }
    /* park twice: fire what is due, read the timeout, sleep until it */
    for (k : 1 .. 2) {
        lock();
        expire();
#ifndef BROKEN_PARK_UNLOCKED
        atomic { d = next; minlive(m); assert(d <= m) };
        unlock();
#else
        unlock();
        atomic {
            if :: n > 0 -> d = dl[a[0]] :: else -> d = INF fi;
            minlive(m); assert(d <= m)
        };
#endif
        (now >= d || d > 3 || stopped)
    }
}

proctype remote()
{
    byte t, tmp, m, i, j;
    /* end the waits of t0 and t2 another way */
    for (t : 0 .. 2) {
        if
        :: t == 1 -> skip       /* t1 stays: it times out */
        :: else ->
        lock();
        if
        :: live[t] ->
            live[t] = 0; removed[t] = 1; dead[t] = 1; ndead++;
            if
            :: ndead > n - ndead ->     /* rebuild: the live ones, compacted, then heapified */
                j = 0;
                for (i : 0 .. 2) {
                    if
                    :: i < n && !dead[a[i]] -> a[j] = a[i]; j++
                    :: i < n && dead[a[i]] -> dead[a[i]] = 0
                    :: else
                    fi
                }
                n = j; ndead = 0;
                if
                :: n > 2 && dl[a[2]] < dl[a[1]] && dl[a[2]] < dl[a[0]] -> swap(0, 2)
                :: n > 1 && (n < 3 || dl[a[1]] <= dl[a[2]]) && dl[a[1]] < dl[a[0]] -> swap(0, 1)
                :: else
                fi
            :: else
            fi
        :: else
        fi;
        unlock()
        fi
    }
}

/* the I/O thread's standby: a worker whose deadline is late is fired here */
proctype iothread()
{
    byte t, tmp, m, k;
    for (k : 1 .. 2) {
        (now >= 1 || stopped);
        if
        :: next <= now -> lock(); expire(); unlock()
        :: else
        fi
    }
}

proctype clock()
{
    do
    :: now < 3 -> now++
    :: stopped = 1; break
    od
}

init
{
    byte t, tmp, m;
    dl[0] = 2; dl[1] = 1; dl[2] = 3;
    atomic {
        run owner(); run remote(); run iothread(); run clock()
    }
    (_nr_pr == 1);
    now = 3;
    lock(); expire(); unlock();
    assert((fired[0] || removed[0]) && (fired[1] || removed[1]) && (fired[2] || removed[2]))
}
