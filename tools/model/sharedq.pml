/* SPDX-License-Identifier: MIT */
/* A shared queue (lib/base/queues.c, SHARED QUEUES): the ring with a
 * sequence number per slot (Vyukov's bounded MPMC queue), its overflow
 * list under a mutex, and the notify that follows every push.
 *
 * Abstracted: a ring of S = 2 slots; tickets, seqs, head and tail as
 * small integers (they never wrap here); two producers: P0 pushes job 1
 * and may stop for good between its claim and its publication on the
 * ring's lock-free path (a thread pre-empted there for longer than the
 * rest of the run); P1 pushes jobs 2 then 3, so that the ring can fill
 * and P1's second job take the list; single pushes only (a batch claims
 * consecutive tickets with one CAS and publishes them in order, the same
 * steps n times); the overflow list a channel and the mutex a bit, taken
 * only on the full path (push_slow, pop_slow); two consumers that pop,
 * and sleep until the next notify when a pop gives nothing, as a worker
 * parks (park.pml checks that sleep).  Each load, store and CAS is one
 * step, sequentially consistent (x86: the one reordering that matters,
 * the job's write against its seq's, is the broken variant below).
 *
 * Checked:
 *   - every job is taken at most once, and the one its ticket names
 *     (assert at the take);
 *   - a producer's jobs are claimed by consumers in its order: P1's job 3
 *     is never taken before its job 2 (assert at the claim);
 *   - when nothing can move (timeout): P1 has returned and both
 *     consumers sleep, whether or not P0 stopped - no producer waits for
 *     another and no consumer waits for a producer; and unless P0
 *     stopped, every job was taken.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_PUBLISH_FIRST  the seq is stored before the job: a consumer
 *                      takes the slot's old contents
 *   -DBROKEN_CONSUMER_WAITS  a consumer that finds the head's slot
 *                      claimed but not published waits for it (a stopped
 *                      producer keeps it forever)
 *   -DBROKEN_ORDERED_COMMIT  a producer publishes only after the one
 *                      before it did (ck_ring's MPMC enqueue): the
 *                      producers behind a stopped one wait for it
 *   -DBROKEN_MUTEX     producers serialised by the list's mutex around
 *                      their claim and publication: the producers behind
 *                      a stopped one wait for it
 *   -DBROKEN_LIST_FIRST  pop_slow takes the list's head while the ring
 *                      still holds a claimed ticket: P1's job 3 (list)
 *                      overtakes its job 2 (ring, behind P0's slot)
 */
#define S 2
#define NJOBS 3

byte seq[S];
byte job[S];
byte tail, head;
byte overflow_n;
bit lock;
chan lst = [NJOBS] of { byte };
byte notified;               /* notifies so far */

byte taken[NJOBS + 1];      /* times each job was taken */
bit claimed2;               /* P1's first job was claimed by a consumer */
bit p1done, stopped;
bit asleep[2];

/* the lock-free claim of one ticket: t the ticket, ok 1, or ok 0 when full */
inline ring_claim(t, s, ok)
{
    ok = 0;
    t = tail;
    do
    :: s = seq[t % S];
       if
       :: s == t ->
           atomic {            /* CAS tail t -> t + 1 */
               if
               :: tail == t -> tail = t + 1; ok = 1
               :: else -> t = tail
               fi
           }
           if
           :: ok -> break
           :: else
           fi
       :: s < t -> ok = 0; break      /* ticket t - S's job is still there */
       :: s > t -> t = tail
       fi
    od
}

inline ring_publish(t, jid)
{
#ifdef BROKEN_ORDERED_COMMIT
    (t == 0 || seq[(t - 1) % S] >= t);
#endif
#ifdef BROKEN_PUBLISH_FIRST
    seq[t % S] = t + 1;
    job[t % S] = jid;
#else
    job[t % S] = jid;
    seq[t % S] = t + 1;
#endif
}

/* the take, where a consumer owns ticket h: checks, then frees the slot */
inline took(h, jid)
{
    assert(jid != 0 && taken[jid] == 0);
    taken[jid]++;
    seq[h % S] = h + S
}

/* the lock-free pop: got the job or 0 (empty for now) */
inline pop_ring(h, s, got)
{
    got = 0;
    h = head;
    do
    :: s = seq[h % S];
       if
       :: s == h + 1 ->
           atomic {            /* CAS head h -> h + 1; the slot is ours: its job */
               if
               :: head == h ->
                   head = h + 1;
                   got = job[h % S];
                   assert(got != 3 || claimed2);
                   claimed2 = claimed2 || got == 2
               :: else -> h = head
               fi
           }
           if
           :: got != 0 -> took(h, got); break
           :: else
           fi
#ifdef BROKEN_CONSUMER_WAITS
       :: s < h + 1 && tail > h -> (seq[h % S] == h + 1)
#endif
       :: s < h + 1 -> break
       :: s > h + 1 -> h = head
       fi
    od
}

inline acquire() { atomic { lock == 0 -> lock = 1 } }

/* the producers' mutex of the variant below: nothing in the protocol */
#ifdef BROKEN_MUTEX
#define MUTEX_ON() acquire()
#define MUTEX_OFF() lock = 0
#else
#define MUTEX_ON() skip
#define MUTEX_OFF() skip
#endif

/* the full path: the ring while the list is empty, else the list */
inline push_slow(t, s, ok, jid)
{
    acquire();
    ok = 0;
    if
    :: overflow_n == 0 -> ring_claim(t, s, ok)
    :: else
    fi;
    if
    :: ok -> ring_publish(t, jid)
    :: else -> lst!jid; overflow_n++
    fi;
    lock = 0
}

inline push(t, s, ok, jid)
{
    ok = 0;
    MUTEX_ON();
    if
    :: overflow_n == 0 -> ring_claim(t, s, ok)
    :: else
    fi;
    if
    :: ok -> ring_publish(t, jid); MUTEX_OFF()
    :: else -> MUTEX_OFF(); push_slow(t, s, ok, jid)
    fi;
    notified++
}

inline pop_slow(h, s, got, t, ok, m)
{
    acquire();
    pop_ring(h, s, got);
#ifdef BROKEN_LIST_FIRST
    ok = 1;
#else
    h = head;
    ok = (tail == h);           /* no claimed ticket in the ring */
#endif
    if
    :: got == 0 && ok && len(lst) > 0 ->
        lst?got;
        assert(got != 3 || claimed2);
        claimed2 = claimed2 || got == 2;
        assert(got != 0 && taken[got] == 0);
        taken[got]++;
        overflow_n--;
        /* the refill: what fits of the list into the ring */
        do
        :: len(lst) > 0 ->
            ring_claim(t, s, ok);
            if
            :: ok -> lst?m; ring_publish(t, m); overflow_n--
            :: else -> break
            fi
        :: len(lst) == 0 -> break
        od
    :: else
    fi;
    lock = 0
}

/* push's lock-free path, where P0 may stop for good after its claim */
proctype p0()
{
    byte t, s; bit ok;

    MUTEX_ON();
    if
    :: overflow_n == 0 -> ring_claim(t, s, ok)
    :: else
    fi;
    if
    :: ok ->
        if
        :: stopped = 1;
end_stopped:    false           /* pre-empted for good */
        :: true
        fi;
        ring_publish(t, 1);
        MUTEX_OFF()
    :: else -> MUTEX_OFF(); push_slow(t, s, ok, 1)
    fi;
    notified++
}

proctype p1()
{
    byte t, s; bit ok;
    push(t, s, ok, 2);
    push(t, s, ok, 3);
    p1done = 1
}

proctype consumer()
{
    byte h, s, t, n, got, m; bit ok;
    byte me = _pid - 3;

    do
    :: n = notified;            /* before the look (park.pml's epoch) */
       pop_ring(h, s, got);
       if
       :: got == 0 && overflow_n != 0 -> pop_slow(h, s, got, t, ok, m)
       :: else
       fi;
       if
       :: got == 0 ->
           asleep[me] = 1;
end_sleep:  (notified != n);
           asleep[me] = 0
       :: else
       fi
    od
}

proctype check()
{
end_check:
    timeout ->
    assert(p1done);
    assert(asleep[0] && asleep[1]);
    assert(stopped || (taken[1] == 1 && taken[2] == 1 && taken[3] == 1))
}

init
{
    atomic {
        byte i;
        for (i : 0 .. S - 1) {
            seq[i] = i          /* free for ticket i */
        }
        run p0(); run p1(); run consumer(); run consumer(); run check()
    }
}
