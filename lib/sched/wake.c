/* SPDX-License-Identifier: MIT */
/* Waking parked workers: the idle bitmap (s->idle), its summary
 * (s->idle_sum), and the submitter's side of the park protocol - a push
 * reads the bits of the workers its job may run on and claims one of them
 * to wake it (sched/park.c, PARKING, has the parker's side and why no
 * wake-up is lost).  One idea: who is asleep, and who wakes them.
 */
#include "sched/worker.h"

void coro__unpark(coro_sched_t *s, int idx)
{
    struct coro__worker *w = s->w[idx];

    /* seq_cst: the push that made this wake necessary happens before the
     * epoch change the parked worker observes (release), and the change is
     * ordered before our read of the poll token in coro__io_wake_poller
     * (Dekker with the worker's token CAS and epoch read, coro__io_park) */
    __atomic_add_fetch(&w->futex, 1, __ATOMIC_SEQ_CST);
    coro__trace_nudge(s, idx);
    if (s->io && s->driver->unpark(s->io, idx))
        return;     /* it waits in epoll: the eventfd woke it */
    coro__futex_wake(&w->futex, 1);
}

/* IDLE SUMMARY.  s->idle_sum holds, for each word k of s->idle, a 16-bit
 * field that counts the bits of that word: a parker counts itself up
 * (seq_cst RMW) before it sets its bit, and whoever clears a bit - its
 * claimer, or the worker itself - counts it down after the clear.  So a
 * field is never below its word's bits (a count-down follows a clear,
 * which follows the set, which follows the count-up: all ordered through
 * the bit).  It is above them only by the claimers between their clear
 * and their count-down (a worker woken otherwise may park and count
 * itself again meanwhile): 64 plus those stays far below 0x8000, so a
 * field never carries into its neighbour.  A notifier reads the
 * summary first: a zero byte means no bit in that word, in the sense the
 * park protocol needs - the parker's count-up is a store before its last
 * look, exactly as its bit is (sched/park.c, PARKING: if the notifier's read
 * misses the count, the parker's look sees the push).  So a push while no
 * worker is parked reads one word per 256 workers (one word up to 256, 4 at
 * CORO_MAX_WORKERS) where it read one per 64; with some parked it reads
 * only the words of s->idle that hold them. */
#define SUM_FIELDS 4                    /* fields per word of s->idle_sum */
#define SUM_ONE(k) (1ull << (16 * ((k) % SUM_FIELDS)))
#define SUM_LOW 0x7fff7fff7fff7fffull
#define SUM_HIGH 0x8000800080008000ull
/* words of s->idle_sum in use: one per 256 workers */
#define SUM_USED(s) (((s)->nslots + 64 * SUM_FIELDS - 1) / (64 * SUM_FIELDS))

/* the words of s->idle that hold a bit, as the high bit of each field of
 * summary word g (a field below 0x8000 plus 0x7fff carries out of no
 * field, and sets its high bit when it was not zero) */
static inline uint64_t sum_nonzero(coro_sched_t *s, int g)
{
    /* relaxed: the caller's fence (notify) or RMW orders it */
    return (__atomic_load_n(&s->idle_sum[g], __ATOMIC_RELAXED) + SUM_LOW) & SUM_HIGH;
}

/* worker idx parks: counted, then its bit set (step 2 of PARKING) */
void coro__idle_set(coro_sched_t *s, int idx)
{
    size_t k = coro__bit_word((size_t)idx);
    /* seq_cst: both stores before the parker's last look (PARKING) */
    __atomic_fetch_add(&s->idle_sum[k / SUM_FIELDS], SUM_ONE(k), __ATOMIC_SEQ_CST);
    __atomic_fetch_or(&s->idle[k], coro__bit((size_t)idx), __ATOMIC_SEQ_CST);
}

/* a bit of word k was cleared: count it down */
static void idle_uncount(coro_sched_t *s, size_t k)
{
    /* relaxed: ordered after the count-up through the bit (above) */
    __atomic_fetch_sub(&s->idle_sum[k / SUM_FIELDS], SUM_ONE(k), __ATOMIC_RELAXED);
}

/* worker idx clears its own bit: whether it was still set (nobody claimed
 * it).  relaxed: the bit only; a claimer's push is ours to see through
 * the queue it used */
bool coro__idle_clear(coro_sched_t *s, int idx)
{
    uint64_t bit = coro__bit((size_t)idx);
    bool had = __atomic_fetch_and(&s->idle[coro__bit_word((size_t)idx)], ~bit, __ATOMIC_RELAXED) & bit;
    if (had)
        idle_uncount(s, coro__bit_word((size_t)idx));
    return had;
}

/* claim worker idx if its bit is set: true when this call cleared it */
bool coro__claim_one(coro_sched_t *s, int idx)
{
    uint64_t bit = coro__bit((size_t)idx);
    /* acq_rel: one claimer wins the bit; it sees the parker's epoch read
     * and publishes the push it wakes the worker for */
    if (!(__atomic_fetch_and(&s->idle[coro__bit_word((size_t)idx)], ~bit, __ATOMIC_ACQ_REL) & bit))
        return false;
    idle_uncount(s, coro__bit_word((size_t)idx));
    return true;
}

/* claim one parked worker among wmask: returns its index or -1 */
int coro__claim_idle(coro_sched_t *s, const uint64_t *wmask)
{
    for (int g = 0, groups = SUM_USED(s); g < groups; g++) {
        for (uint64_t f = sum_nonzero(s, g); f; f &= f - 1) {
            int k = g * SUM_FIELDS + __builtin_ctzll(f) / 16;
            /* relaxed: a candidate; coro__claim_one's acq_rel fetch_and decides */
            uint64_t bits = __atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k];
            while (bits) {
                int idx = k * 64 + __builtin_ctzll(bits);
                if (coro__claim_one(s, idx))
                    return idx;
                bits = __atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k];
            }
        }
    }
    return -1;
}

void coro__notify_fenced(coro_sched_t *s, const uint64_t *wmask, bool any)
{
    /* no parked worker the job may run on: nothing to do (one that parks
     * later looks once more after its bit is set).  Read first: the idle
     * words change only at parks, the searcher count at every steal, and
     * a busy spawner would miss on it at every push */
    bool some = false;
    /* relaxed: notify's fence orders these reads after our push; the
     * summary first (IDLE SUMMARY) */
    for (int g = 0, groups = SUM_USED(s); g < groups && !some; g++)
        for (uint64_t f = sum_nonzero(s, g); f && !some; f &= f - 1) {
            int k = g * SUM_FIELDS + __builtin_ctzll(f) / 16;
            some = (__atomic_load_n(&s->idle[k], __ATOMIC_RELAXED) & wmask[k]) != 0;
        }
    if (!some)
        return;
    if (any && __atomic_load_n(&s->searching, __ATOMIC_RELAXED) != 0)
        return;
    /* the woken worker counts itself as a searcher once it runs (tokio
     * counts it here, in the waker; a claim racing the worker's own
     * return from park then leaks a count, which silences every later
     * notify: a lost wake-up TSan's slow scheduling found) */
    int idx = coro__claim_idle(s, wmask);
    if (idx >= 0)
        coro__unpark(s, idx);
}

bool coro__io_wake_idle_worker(coro_sched_t *s)
{
    int idx = coro__claim_idle(s, s->all_wmask);
    if (idx < 0)
        return false;
    coro__unpark(s, idx);
    return true;
}

void coro__wake_all_workers(coro_sched_t *s)
{
    for (int i = 0; i < s->nslots; i++)
        coro__unpark(s, i);
}
