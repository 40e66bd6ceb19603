/* SPDX-License-Identifier: MIT */
/* The plain threads' submission rings and their two-level map: which
 * rings may hold jobs (s->subring_bits), how a ring is listed, taken off and
 * made quiet, and how a worker takes half of a listed one (RINGS below),
 * after waiting for a batch when a thread streams jobs into it (BATCHES).
 */
#include "sched/worker.h"

/* RINGS.  A worker looks only at the plain threads' rings whose bit is set
 * in s->subring_bits (a second level, s->subring_top, says which words to read), so
 * a look costs the same with no plain thread and with thousands that once
 * spawned: an empty ring is off the map.  Each ring's `listed` word says
 * whether its bit is set; it changes with the bit.
 *   list (its producer after a push; a worker that found it not empty
 *   after taking it off): CAS listed 0 -> 1, the winner sets the bit, then
 *   the top bit if it reads clear (both seq_cst RMWs).
 *   unlist (a worker): clear the bit, then listed (seq_cst RMWs), then a
 *   full barrier and a look at the ring's size; not empty: list it again.
 * The top level: a worker that reads a word as 0 clears its top bit, then
 *   reads the word again and sets the bit back if it is not 0; the lister
 *   sets the word's bit, then reads the top bit.  Store-then-load on both
 *   sides (seq_cst), so one of them sees the other: a word with bits never
 *   stays hidden.
 * No job is left in a ring that nobody looks at.  The producer's push
 * (the slot, then the tail: ck_ring) is followed by notify's fence, then
 * its read of listed: it lists the ring when it reads 0.  When it reads 1
 * the ring is listed, or a worker is taking it off at that moment:
 *   - without s->use_membarrier the fence is full.  The read saw 1, so the
 *     worker's clear comes after it in the order of listed; the producer
 *     stored its push, fenced, read; the worker cleared, fenced, read the
 *     size: store-then-load on both sides (Dekker), so the worker sees the
 *     push and lists the ring again.
 *   - with s->use_membarrier the producer's fence is the compiler's only, and its
 *     read may pass its push: a look at the size right after the clear
 *     proves nothing.  So the worker that takes a ring off marks it quiet
 *     with its own name (quiet = its index + 1) and sets its bit in a
 *     second map, s->subring_quiet (two levels again, the same tidy protocol:
 *     a bit is cleared only by one who then reads the name as 0).  A
 *     quiet ring is looked at by every worker's periodic look (every
 *     CORO__GLOBAL_INTERVAL picks) and by the last look of every park,
 *     which comes after that worker's membarrier; one that holds jobs is
 *     listed again.  The
 *     worker whose name it bears ends the quiet at its next park, after
 *     its membarrier(2) (a CAS from its name to 0, then one more look
 *     at the size): a producer that read listed as 1 had issued its push
 *     before the take-off, so before that membarrier, which makes it
 *     visible to the look after.  Another worker's membarrier may precede
 *     the take-off, so only the name's owner ends a quiet (a ring taken
 *     off again by another worker bears that one's name, and the CAS
 *     fails).  Until then a push that raced the take-off waits at most
 *     for one of those looks: within CORO__GLOBAL_INTERVAL picks of any
 *     busy worker, or the next park of an idle one (the producer's
 *     notify wakes one, which parks again when it finds nothing).  Rings are taken off only at the periodic look there,
 *     so a producer that keeps a busy worker fed lists its ring again at
 *     most once per interval of each worker, and a worker whose rings are
 *     empty pays no look at them on its picks.  If the membarrier fails,
 *     the rings are listed again unseen.
 * tools/model/rings.pml checks both modes and rejects a take-off without
 * the second look, the membarrier mode without the quiet mark, and a park
 * that ends other workers' quiet.
 * A thread's ring lives with its frame cache: when the thread exits the
 * ring keeps its bit while jobs are left in it (the workers take them),
 * and the next thread to need a cache takes both over (lib/sched/frame.c):
 * the rings are never more than the threads alive at once. */

/* word k of a two-level map read as 0: clear its top bit unless it
 * refills */
static void map_top_tidy(uint64_t *top, const uint64_t *words, int k)
{
    uint64_t kb = coro__bit((size_t)k);
    /* seq_cst: the clear, then the read of the word (RINGS) */
    __atomic_fetch_and(top, ~kb, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&words[k], __ATOMIC_SEQ_CST) != 0)
        __atomic_fetch_or(top, kb, __ATOMIC_SEQ_CST);
}

static inline void subring_unlist(coro_sched_t *s, struct coro__subring *q)
{
    /* seq_cst: the bit, then the flag (a producer that lists it again
     * after seeing the flag clear sets the bit after ours is gone) */
    __atomic_fetch_and(&s->subring_bits[coro__bit_word(q->idx)], ~coro__bit(q->idx), __ATOMIC_SEQ_CST);
    __atomic_store_n(&q->listed, 0, __ATOMIC_SEQ_CST);
}

/* after subring_unlist without s->use_membarrier: list it again if it holds jobs */
static inline void subring_recheck(coro_sched_t *s, struct coro__subring *q)
{
    /* full barrier: our clear of listed before the look at the ring's
     * tail, against the producer's push then read of listed (RINGS) */
    coro__fence_seq_cst();
    if (coro__localq_size(&q->q) != 0)
        subring_list(s, q);
}

/* with s->use_membarrier: take an empty ring off the map, quiet in our name */
static void subring_quiet_off(struct coro__worker *w, struct coro__subring *q)
{
    coro_sched_t *s = w->s;

    subring_unlist(s, q);
    /* seq_cst: the name, then the quiet map's bit (a tidier clears the
     * bit, then reads the name) */
    __atomic_store_n(&q->quiet, (uint32_t)w->idx + 1, __ATOMIC_SEQ_CST);
    map_set(&s->subring_qtop, s->subring_quiet, q->idx);
}

/* ring q's quiet bit, its name read as 0: clear the bit unless a worker
 * named it again meanwhile */
static void subring_quiet_tidy(coro_sched_t *s, struct coro__subring *q)
{
    /* seq_cst: the clear, then the read of the name (RINGS) */
    __atomic_fetch_and(&s->subring_quiet[coro__bit_word(q->idx)], ~coro__bit(q->idx), __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&q->quiet, __ATOMIC_SEQ_CST) != 0)
        map_set(&s->subring_qtop, s->subring_quiet, q->idx);
}

/* a parking worker with s->use_membarrier, before its membarrier: take the rings
 * that look empty off the map, quiet in our name, and note in off[] (a
 * bit per ring, as in s->subring_bits) those and the quiet rings that bear
 * our name from earlier looks; returns whether it noted any */
bool coro__subring_unlist_empty(coro_sched_t *s, uint64_t *off)
{
    struct coro__worker *w = coro__tls_worker;
    uint32_t name = (uint32_t)w->idx + 1;
    bool any = false;
    uint64_t top = __atomic_load_n(&s->subring_top, __ATOMIC_ACQUIRE);

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: the entries of the bits read */
        uint64_t bits = __atomic_load_n(&s->subring_bits[k], __ATOMIC_ACQUIRE);
        while (bits) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            struct coro__subring *q = subring_at(s, (unsigned)k * 64 + b);
            bits &= bits - 1;
            if (coro__localq_size(&q->q) == 0)
                subring_quiet_off(w, q);
        }
        if (__atomic_load_n(&s->subring_bits[k], __ATOMIC_RELAXED) == 0)
            map_top_tidy(&s->subring_top, s->subring_bits, k);
    }
    /* acquire: the entries of the bits read */
    top = __atomic_load_n(&s->subring_qtop, __ATOMIC_ACQUIRE);
    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: pairs with the quieting worker's set of the bit; the
         * ring it names is then complete (RINGS) */
        for (uint64_t bits = __atomic_load_n(&s->subring_quiet[k], __ATOMIC_ACQUIRE); bits;
             bits &= bits - 1) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            /* relaxed: our own name, stored by this thread */
            if (__atomic_load_n(&subring_at(s, (unsigned)k * 64 + b)->quiet, __ATOMIC_RELAXED) ==
                name) {
                off[k] |= coro__bit(b);
                any = true;
            }
        }
    }
    return any;
}

/* after the membarrier: the quiet rings coro__subring_unlist_empty noted end their
 * quiet if they still bear our name, and are looked at again (relist:
 * listed again without looking, when the membarrier failed) */
void coro__subring_relook(coro_sched_t *s, const uint64_t *off, bool relist)
{
    uint32_t name = (uint32_t)coro__tls_worker->idx + 1;

    for (int k = 0; k < CORO__XQ_WORDS; k++)
        for (uint64_t bits = off[k]; bits; bits &= bits - 1) {
            struct coro__subring *q = subring_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            uint32_t mine = name;
            /* seq_cst: taken off again by another worker since, the ring
             * bears that one's name and stays quiet (RINGS) */
            if (!__atomic_compare_exchange_n(&q->quiet, &mine, 0, false, __ATOMIC_SEQ_CST,
                                             __ATOMIC_RELAXED))
                continue;
            subring_quiet_tidy(s, q);
            /* after the membarrier: a push that raced the take-off is
             * visible (RINGS) */
            if (relist || coro__localq_size(&q->q) != 0)
                subring_list(s, q);
        }
}

/* BATCHES.  A worker that keeps coming back from the jobs of its last
 * take to a ring a plain thread is still filling would take a few jobs
 * at a time; every take moves the ring's head and reads its tail and
 * slots, lines the producing thread must fetch back before its next
 * push, and that thread is often what the jobs wait for.  So a worker
 * whose last look at a ring found RING_STREAM jobs or more there
 * (ring_stream: a thread spawning a stream of them), and that has not
 * been idle since, finding fewer than RING_BATCH waits while the ring
 * grows: RING_STEP pauses, then a look, at most RING_WAIT pauses in
 * all, stopping at the first look that finds as many jobs as the one
 * before (the thread stopped pushing) or RING_BATCH of them.  It then
 * takes half, as always.  Never waited for: a job found by an idle worker
 * (a failed look since its last job), and a few jobs pushed together
 * (a last look that found fewer than RING_STREAM); what a wait costs a
 * job is one step past the producer's last push. */
#define RING_STREAM 8u
#define RING_BATCH 32u
#define RING_STEP 16
#define RING_WAIT 128

static __thread bool ring_stream;

/* the n jobs (0 < n < RING_BATCH) of ring q, once it stops growing
 * (BATCHES) */
static unsigned ring_wait_batch(struct coro__localq *q, unsigned n)
{
    for (int i = 0; i < RING_WAIT; i += RING_STEP) {
        for (int k = 0; k < RING_STEP; k++)
            coro__cpu_relax();
        unsigned m = coro__localq_size(q);
        if (m == n || m >= RING_BATCH)
            return m;
        n = m;
    }
    return n;
}

/* the rings on the map (RINGS), from pop_subring.  off: an empty ring is taken
 * off (with s->use_membarrier, at the periodic look only: quiet in our name) */
coro_t *coro__pop_subring_map(struct coro__worker *w, uint64_t top, bool keep_first, bool off,
                         unsigned *got)
{
    coro_sched_t *s = w->s;

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        uint64_t bits = __atomic_load_n(&s->subring_bits[k], __ATOMIC_ACQUIRE);
        if (!bits) {
            map_top_tidy(&s->subring_top, s->subring_bits, k);
            continue;
        }
        while (bits) {
            struct coro__subring *q = subring_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            bits &= bits - 1;
            unsigned n = coro__localq_size(&q->q);
            if (ring_stream && n != 0 && n < RING_BATCH && w->idle_looks == 0)
                n = ring_wait_batch(&q->q, n);
            ring_stream = n >= RING_STREAM;
            if (n == 0) {
                if (!s->use_membarrier) {
                    subring_unlist(s, q);
                    subring_recheck(s, q);
                } else if (off) {
                    subring_quiet_off(w, q);
                }
                continue;
            }
            coro_t *j = coro__take_half_localq(w, &q->q, n, &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)],
                                           keep_first, got, NULL, CORO__PRIO_IDX(CORO_PRIO_NORMAL),
                                           false);
            if (j || *got)
                return j;
        }
    }
    return NULL;
}

/* the quiet rings (RINGS: membarrier mode), at the periodic look and at
 * the park's last look: one that holds jobs, which a push racing
 * its take-off left there, is listed again and half of it taken */
__attribute__((noinline)) coro_t *coro__pop_subring_quiet(struct coro__worker *w, bool keep_first)
{
    coro_sched_t *s = w->s;
    unsigned got = 0;
    /* acquire: the words' bits, then the entries (RINGS) */
    uint64_t top = __atomic_load_n(&s->subring_qtop, __ATOMIC_ACQUIRE);

    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: as in the periodic look's read of the quiet words */
        uint64_t bits = __atomic_load_n(&s->subring_quiet[k], __ATOMIC_ACQUIRE);
        if (!bits) {
            map_top_tidy(&s->subring_qtop, s->subring_quiet, k);
            continue;
        }
        while (bits) {
            struct coro__subring *q = subring_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits));
            bits &= bits - 1;
            /* seq_cst: a tidier reads the name after its clear (RINGS) */
            if (__atomic_load_n(&q->quiet, __ATOMIC_SEQ_CST) == 0) {
                subring_quiet_tidy(s, q);
                continue;
            }
            unsigned n = coro__localq_size(&q->q);
            if (n == 0)
                continue;
            /* relaxed: a hint; subring_list's CAS decides */
            if (!__atomic_load_n(&q->listed, __ATOMIC_RELAXED))
                subring_list(s, q);
            coro_t *j = coro__take_half_localq(w, &q->q, n, &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)],
                                           keep_first, &got, NULL, CORO__PRIO_IDX(CORO_PRIO_NORMAL),
                                           false);
            if (j || got)
                return j;
        }
    }
    return NULL;
}
