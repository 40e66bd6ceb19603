/* SPDX-License-Identifier: MIT */
/* Pins: what keeps a scheduler alive under a thread that is not its own
 * and is still inside it after a job's state changed.
 *
 * THE PROBLEM.  coro_sched_destroy frees s once every job ended (live ==
 * CLOSED) and its own threads are joined.  A thread that is none of them
 * - a plain thread, a worker of another scheduler, a thread driving s in
 * coro_join - can end a job's wait and still be inside s afterwards: a
 * wake pushes the job and then notifies (the idle words, a worker's
 * futex, the I/O context's eventfd); coro_cancel sweeps s's structures
 * after the wake; a joiner gives a pool frame back into s's pools after
 * the job ended; a driver runs the last job and then lets the drive go.
 * The woken job can run and end, and destroy free s, between two of those
 * instructions.  Every such call started before destroy could return, so
 * destroy waits for it (coro_sched_destroy(3)).
 *
 * THE PIN.  Each such thread owns a record of a few slots; a pin stores s
 * in a free slot (or counts one more on the slot that holds s already) and
 * an unpin clears it (release: every touch of s before it).  Destroy, once
 * every job ended, scans every record and waits while a slot holds s.  A
 * pin is two stores to memory only its thread writes: no shared line is
 * written on the wake path.  Records are never freed: a thread's record
 * is given back when it exits (a key destructor) and taken by the next
 * thread that pins, so there are as many as threads ever pinned at once.
 * A record whose slots are all in use (pins nested across more schedulers
 * than it holds) or that could not be made counts the pin in `spill`, one
 * process-wide word, which destroy also waits to see at 0.
 *
 * WHY DESTROY SEES EVERY PIN THAT MATTERS.  Three ways in:
 *   - coro__pin_owned: the caller owns a live job of s (it took it off a
 *     wait structure, or spawned it, and has not queued it yet).  Its
 *     relaxed slot store is sequenced before the push that publishes the
 *     job (a release); the worker that runs the job acquires it, the
 *     finish counts live down (acq_rel), destroy reads live == CLOSED
 *     (acquire).  So the slot store happens before destroy's scan, which
 *     reads it or the unpin's later store: never an older NULL.
 *   - coro__pin_job: the caller holds a job that may end any moment (a
 *     cancel, a join).  seq_cst slot store, then the caller's seq_cst
 *     read (or RMW) of the job's state word: DONE means unpin and leave s
 *     alone.  Destroy: the job's DONE happens before its seq_cst fence
 *     (through live), then the scan.  If the scan missed the slot store,
 *     the store follows the fence in the single order S, so does the
 *     caller's later read, which is then coherence-after the DONE that
 *     happens before the fence: it reads DONE.  So either destroy waits,
 *     or the caller saw DONE and never touches s (it read only the frame).
 *   - coro__pin_sched: a call on s itself (coro_close, coro_sched_run).
 *     seq_cst slot store, then a seq_cst load of s->pin_gone; destroy
 *     stores pin_gone (seq_cst) before its scan: Dekker, one of the two
 *     sees the other.  A call that sees pin_gone unpins and does its
 *     part without s.
 * The registry's head is pushed and read with seq_cst too, so a record
 * made for a pin the scan must see is on the list it walks.
 * tools/model/pin.pml checks the three against destroy's scan.
 */
#include <pthread.h>
#include <sched.h>

#include "sched/sched.h"

#define PIN_SLOTS 12    /* a group cancel pins up to 8 schedulers at once */

struct pinrec {
    coro_sched_t *slot[PIN_SLOTS];  /* atomic: the owner stores, destroy reads */
    uint32_t n[PIN_SLOTS];          /* owner-only: the pins each slot holds */
    uint32_t used;                  /* owner-only: slots in use */
    uint32_t taken;                 /* atomic: 1 while a thread owns the record */
    struct pinrec *next;            /* the registry: set before the push, never changed */
} __attribute__((aligned(CORO__CACHELINE)));

/* the records, in the image rather than on the heap: a record is never
 * freed (a thread that exits gives it to the next), and memory that lives
 * as long as the process belongs in its image, not in a leak checker's
 * "still reachable"; a thread that finds all of them owned pins through
 * spill */
#define PIN_RECS 256
static struct pinrec rec_pool[PIN_RECS];
static uint32_t rec_made;               /* records of rec_pool handed out */
static struct pinrec *reg_head;         /* every record ever made */
static uint64_t spill;                  /* pins that found no slot */
static __thread struct pinrec *tls_rec;
static pthread_key_t rec_key;
static pthread_once_t rec_once = PTHREAD_ONCE_INIT;
static bool rec_key_ok;

/* the thread exits holding no pin (a pin never outlives its call): the
 * record goes to the next thread */
static void rec_exit(void *p)
{
    struct pinrec *r = p;
    tls_rec = NULL;
    /* release: our last unpins before the next owner's first pin */
    __atomic_store_n(&r->taken, 0, __ATOMIC_RELEASE);
}

static void rec_init(void)
{
    rec_key_ok = pthread_key_create(&rec_key, rec_exit) == 0;
}

static __attribute__((noinline)) struct pinrec *rec_take(void)
{
    struct pinrec *r;

    pthread_once(&rec_once, rec_init);
    if (!rec_key_ok)
        return NULL;
    /* seq_cst: see the top of file, the registry's head */
    for (r = __atomic_load_n(&reg_head, __ATOMIC_SEQ_CST); r; r = r->next) {
        uint32_t z = 0;
        /* acquire: the last owner's unpins before our pins */
        if (!__atomic_load_n(&r->taken, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&r->taken, &z, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            goto got;
    }
    /* relaxed: the index only; the record is published by the push below */
    uint32_t i = __atomic_fetch_add(&rec_made, 1, __ATOMIC_RELAXED);
    if (i >= PIN_RECS)
        return NULL;
    r = &rec_pool[i];
    r->taken = 1;       /* zeroed in the image; ours alone until the push */
    r->next = __atomic_load_n(&reg_head, __ATOMIC_RELAXED);
    /* seq_cst: the record is on the list before any slot store of ours
     * (top of file); release for its zeroed slots */
    while (!__atomic_compare_exchange_n(&reg_head, &r->next, r, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
        ;
got:
    if (pthread_setspecific(rec_key, r) != 0) {
        rec_exit(r);        /* we would not hear of our exit: pin through spill */
        return NULL;
    }
    tls_rec = r;
    return r;
}

static inline int pin(coro_sched_t *s, int order)
{
    struct pinrec *r = tls_rec;

    if (CORO__UNLIKELY(!r) && !(r = rec_take()))
        goto spilled;
    if (CORO__LIKELY(r->used == 0)) {
        r->used = 1;
        r->n[0] = 1;
        __atomic_store_n(&r->slot[0], s, order);
        return 0;
    }
    int free_i = -1;
    for (int i = 0; i < PIN_SLOTS; i++) {
        /* relaxed: our own slots */
        coro_sched_t *p = __atomic_load_n(&r->slot[i], __ATOMIC_RELAXED);
        if (p == s) {
            r->n[i]++;      /* pinned already: destroy waits for the outer pin */
            return i;
        }
        if (!p && free_i < 0)
            free_i = i;
    }
    if (free_i >= 0) {
        r->used++;
        r->n[free_i] = 1;
        __atomic_store_n(&r->slot[free_i], s, order);
        return free_i;
    }
spilled:
    /* seq_cst: as a slot store (top of file) */
    __atomic_fetch_add(&spill, 1, __ATOMIC_SEQ_CST);
    return -1;
}

int coro__pin_owned(coro_sched_t *s)
{
    /* relaxed: the push of the job that follows publishes it (top of file) */
    return pin(s, __ATOMIC_RELAXED);
}

int coro__pin_job(coro_sched_t *s)
{
    /* seq_cst: before the caller's seq_cst look at the job (top of file) */
    return pin(s, __ATOMIC_SEQ_CST);
}

int coro__pin_sched(coro_sched_t *s)
{
    /* seq_cst store, seq_cst load: Dekker with destroy (top of file) */
    int tok = pin(s, __ATOMIC_SEQ_CST);
    if (CORO__LIKELY(!__atomic_load_n(&s->pin_gone, __ATOMIC_SEQ_CST)))
        return tok;
    coro__unpin(tok);
    return CORO__PIN_NONE;
}

void coro__unpin(int tok)
{
    if (tok == CORO__PIN_NONE)
        return;
    if (tok < 0) {
        /* release: every touch of s before destroy's acquire load */
        __atomic_fetch_sub(&spill, 1, __ATOMIC_RELEASE);
        return;
    }
    struct pinrec *r = tls_rec;
    if (--r->n[tok] == 0) {
        r->used--;
        /* release: as above */
        __atomic_store_n(&r->slot[tok], NULL, __ATOMIC_RELEASE);
    }
}

void coro__pin_drain(coro_sched_t *s)
{
    struct pinrec *me = tls_rec;

    /* seq_cst: the pin_gone store before the scan (coro__pin_sched) */
    __atomic_store_n(&s->pin_gone, 1, __ATOMIC_SEQ_CST);
    /* seq_cst: every job's DONE and the flag above before the scan's loads
     * (top of file) */
    coro__fence_seq_cst();
    for (struct pinrec *r = __atomic_load_n(&reg_head, __ATOMIC_SEQ_CST); r; r = r->next) {
        if (r == me)
            continue;   /* this thread's own pins: destroy called under them */
        for (int i = 0; i < PIN_SLOTS; i++)
            /* acquire: pairs with the unpin's release store */
            while (__atomic_load_n(&r->slot[i], __ATOMIC_ACQUIRE) == s)
                sched_yield();      /* a pinned call never waits for destroy */
    }
    /* acquire: as above.  Any scheduler's spilled pins: rare, and short */
    while (__atomic_load_n(&spill, __ATOMIC_ACQUIRE))
        sched_yield();
}

#ifdef CORO_TEST_HOOKS
/* the pins this thread holds (tests) */
int coro__pins_held(void)
{
    struct pinrec *r = tls_rec;
    return r ? (int)r->used : 0;
}
#endif
