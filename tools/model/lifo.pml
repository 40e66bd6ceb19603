/* SPDX-License-Identifier: MIT */
/* A worker's LIFO slot (lib/sched/worker.c, submit_ and CONTINUING): its
 * owner fills it, and empties it (pop_level, find_own_, take_next); a
 * thief empties it (take_lifo).  The owner fills an empty slot with a
 * plain load and a plain store, a full one with an exchange, whose old
 * job goes to the owner's ring; every take is an exchange with NULL.
 *
 * Abstracted: one owner that hands off J jobs (ids 1..J), taking the slot
 * at any point between hand-offs; one thief that takes it at any point;
 * the slot a word; each load, store and exchange one step.
 *
 * Checked: every job is taken exactly once - by a take, by the owner's
 * exchange that moves it to its ring, or by the owner's last take once
 * the thief is done (assert).
 *
 * Broken variants (make check-model expects spin to reject each):
 *   -DBROKEN_STORE_ALWAYS  the plain store fills a full slot too: a job
 *                      the thief did not take is overwritten and lost
 *   -DBROKEN_SPLIT_SWAP  a full slot's old job read and the new one
 *                      stored in two steps: the thief takes the old one in
 *                      between and it is taken twice
 */
#define J 3

byte slot;              /* 0 = empty, else a job id */
byte taken[J + 1];      /* times each job was taken */
bit thief_done;

inline take(by)
{
    atomic { by = slot; slot = 0 }
    if
    :: by != 0 -> taken[by]++
    :: else
    fi
}

active proctype owner()
{
    byte j = 1, old, seen;

    do
    :: j <= J ->
        seen = slot;            /* relaxed load */
#ifdef BROKEN_STORE_ALWAYS
        slot = j;               /* release store */
#else
        if
        :: seen == 0 ->
            slot = j            /* release store: only the owner fills */
        :: else ->
#ifdef BROKEN_SPLIT_SWAP
            old = slot;
            slot = j;
#else
            atomic { old = slot; slot = j }     /* exchange */
#endif
            if
            :: old != 0 -> taken[old]++         /* to the owner's ring */
            :: else
            fi
        fi;
#endif
        j++
    :: j <= J -> take(old)      /* a pick from the slot between hand-offs */
    :: j > J -> break
    od;
    thief_done == 1;
    take(old);                  /* whatever is left */
    for (j : 1 .. J) {
        assert(taken[j] == 1)
    }
}

active proctype thief()
{
    byte got;

    do
    :: take(got)
    :: break
    od;
    thief_done = 1
}
