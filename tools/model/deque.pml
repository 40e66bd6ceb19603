/* SPDX-License-Identifier: MIT */
/* A worker's local ring as a work-stealing deque (lib/base/queues.c, TAKING
 * BACK): ck_ring's counters, c_head (the top, where thieves and the
 * owner's ordinary pops take the oldest job) and p_tail (the bottom, where
 * the owner pushes and takes its newest job back), and a count of the
 * thieves at work on the ring.
 *   owner push:     slot[t] = job; p_tail = t + 1
 *   owner pop:      ck's dequeue: c = c_head, p = p_tail; c == p: empty;
 *                   read slot[c]; CAS c_head c -> c + 1
 *   owner take-back (coro__localq_unpush): t = p_tail; p_tail = t - 1 (an
 *                   exchange); a thief at work: p_tail = t, refused; else
 *                   h = c_head; h <= t - 1: slot[t - 1] is the owner's;
 *                   h == t: p_tail = t, refused (a thief took it)
 *   thief (coro__localq_steal): stealing++; c = c_head, then d = p_tail - c
 *                   (signed); d > 0: n = ceil(d / 2), read slots c .. c +
 *                   n - 1, CAS c_head c -> c + n; stealing--
 *
 * Abstracted: one owner that pushes J jobs (ids 1..J) and, between pushes,
 * may pop or take back at any point; two thieves that steal at any point,
 * one steal each; the counters never wrap (the ring is larger than J),
 * each load, store, exchange, increment and CAS one step (sequentially
 * consistent: queues.c's exchange, increments and loads of these words are
 * seq_cst).
 *
 * Checked: every job is taken exactly once - by a thief, by a pop, by a
 * take-back, or by the owner's last pops once the thieves are done
 * (assert).  A thief whose copy of a slot went stale (the owner took it
 * back and pushed another job there) and whose CAS still succeeded would
 * take a job twice.
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_NO_GUARD  the owner takes back without looking at the count
 *                      of thieves: a thief that read the tail before
 *                      several take-backs takes a batch that reaches the
 *                      newest job from a head below it
 *   -DBROKEN_EARLY_GUARD  the owner reads the count before its tail
 *                      store: a thief that starts in between still reads
 *                      the old tail
 * By hand (not in make check-model, to keep make test short), spin
 * -DTHIEF_TAKES_ALL also verifies: a thief that takes every job it sees
 * (the count, not the half, is what keeps the newest job safe).
 */
#define J 3
#define RING 8

byte slot[RING];
byte head, tail;        /* c_head, p_tail */
byte taken[J + 1];      /* times each job was taken */
byte thieves_done;
byte stealing;          /* thieves at work */

active proctype owner()
{
    byte j = 1, t, h, c, v;

    do
    :: j <= J ->                                    /* push */
        slot[tail] = j;
        tail = tail + 1;
        j++
    :: tail != head ->                              /* pop the oldest (ck) */
        c = head;
        if
        :: c != tail ->
            v = slot[c];
            atomic {
                if
                :: head == c -> head = c + 1; taken[v]++
                :: else
                fi
            }
        :: else
        fi
    :: tail != head ->                              /* take the newest back */
        t = tail;
        v = slot[t - 1];
#ifdef BROKEN_EARLY_GUARD
        h = stealing;
        tail = t - 1;
#else
        tail = t - 1;                               /* the exchange */
        h = stealing;
#endif
        if
#ifndef BROKEN_NO_GUARD
        :: h != 0 -> tail = t                       /* refused */
#endif
        :: else ->
            h = head;
            if
            :: h <= t - 1 -> taken[v]++
            :: else -> tail = t                     /* a thief took it */
            fi
        fi
    :: j > J -> break
    od;
    thieves_done == 2;
    do                                              /* whatever is left */
    :: head != tail -> taken[slot[head]]++; head++
    :: else -> break
    od;
    for (j : 1 .. J) {
        assert(taken[j] == 1)
    }
}

proctype thief(byte steals)
{
    byte c, n, i, k = 0;
    short d;
    byte got[J];

    do
    :: k < steals ->
        k++;
        stealing++;
        c = head;
        d = tail - c;
        if
        :: d > 0 ->
#ifdef THIEF_TAKES_ALL
            n = d;
#else
            n = (d + 1) / 2;
#endif
            i = 0;
            do                                      /* copy the slots */
            :: i < n -> got[i] = slot[c + i]; i++
            :: else -> break
            od;
            atomic {
                if
                :: head == c ->
                    head = c + n;
                    i = 0;
                    do
                    :: i < n -> taken[got[i]]++; i++
                    :: else -> break
                    od
                :: else
                fi
            }
        :: else
        fi;
        stealing--
    :: break
    od;
    thieves_done++
}

init {
    atomic { run thief(1); run thief(1) }
}
