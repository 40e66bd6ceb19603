/* SPDX-License-Identifier: MIT */
/* Generators (include/corokit/gen.h): the pull from plain code, the pull
 * in a job (the awaitable's constructor and the worker's part), yield-from
 * chains, close, and who may pull.  Layer 1 (scheduling): the step loop
 * (sched/run.c) hands a generator's status words here.
 *
 * CHAINS.  A generator that is pulled (a "root") keeps its innermost frame
 * in gen_leaf: itself, or the inner generator of a CORO_YIELD_FROM, or that
 * one's inner, and so on.  Each inner's parent is the generator that yields
 * from it, and the frame that runs (the leaf) has gen_root = the root.  A
 * pull runs gen_leaf's body: a value goes straight to the root's puller, an
 * inner's end resumes its parent, a CORO_YIELD_FROM makes the new inner
 * the leaf.  So a pull costs the same at any depth (cppcoro's
 * recursive_generator), and no depth grows the C stack.
 *
 * IN A JOB.  coro_gen_await's constructor pulls at once, on the job's
 * thread: a body that reaches its next value without waiting completes the
 * awaitable (coro__complete: the job's budget counts it, as any operation
 * that completes at once).  A body that awaits leaves its await, unarmed,
 * in its leaf (the root is PENDING) and the constructor returns
 * coro__gen_ops.  The worker then links the chain into the job as it links
 * a coro_call child (coro__gen_link: root->parent = the awaiting frame,
 * job->top = the leaf) and arms the leaf's await as its own; on wake-up
 * only the leaf resumes, and its value, end or yield-from comes back here
 * (coro__gen_step) from the step loop.  An await of a generator inside a
 * generator's body nests the same way: its root's parent is that body's
 * frame.
 *
 * CANCEL.  When a job is cancelled while a generator's body waits in it,
 * the pull ends with -ECANCELED at the outermost frame that pulled
 * (coro__gen_unwind): every generator on the way is released where its
 * body stands (the await it was in reads -ECANCELED when it is next
 * pulled), so it may be closed or pulled again.
 *
 * WHO PULLS.  One pull of a generator at a time, and no atomic
 * instruction in the pull of the thread that pulled last.  gen_run says
 * who may pull:
 *   0        nobody: the first pull takes it with a compare-and-swap
 *   T        kept by the thread whose record (struct coro__gen_self, gen.h)
 *            is at T - 1: its pulls are marked in its record, not here;
 *            only a generator that waits for its next pull is kept (not
 *            ended, its body not waiting, not shared), so gen.h's inline
 *            pull reads nothing but gen_run before it runs the body
 *   H | 2    held (LOCKED) for one pull that runs or waits: a job's frame,
 *            or a thread's token (T, or its thread pointer | 1 for a thread
 *            with no record); every other pull gets -EBUSY
 * The thread T pulls without a write to the generator (gen.h
 * CORO__GEN_MARK): it stores gen in a free slot of its record (slot[0] for
 * the inline pull, a NULL slot: free), and then reads gen_run; it runs the
 * body only if gen_run is T, and stores NULL in the slot at the end.  Any
 * other pull takes the generator (gen_take()): a compare-and-swap from
 * what it read to H | 2, and when that was another thread's T, a
 * membarrier(2) and a look at T's record: gen in one of its slots means T
 * pulls it now, and the taker puts T back and gets -EBUSY; else the
 * generator is the taker's.
 *
 * The argument.  T's mark (the slot's store) comes before its read of
 * gen_run in its program order, with only the compiler's fence between;
 * membarrier(2) makes every running thread of the process execute a full
 * fence at some moment M between its start and its return (a thread that
 * is not running passed one when it was switched out), and the taker's
 * compare-and-swap comes before it, its look after.  If T's second read
 * comes after M, it reads the compare-and-swap's value (T backs off
 * without running the body) or T put back by a taker that refused (which
 * touches nothing more).  Otherwise T's mark came before M too, so the look
 * sees it or the NULL T stored at the end of that pull - by then T has
 * stopped, and the look's acquire of that release store gives the taker
 * every write of T's pulls.  So the taker refuses whenever T may be
 * running the body, and T never runs it once the taker may.  A refused
 * taker's store of T back is no harm to a T that backed off: T then takes
 * the generator itself (its own token: a compare-and-swap, no
 * membarrier).  T's marks are in memory only T writes, so the store of a
 * T that lost the race cannot hide another thread's mark (a mark word in
 * the generator can: a late store of the loser lands after the new
 * owner's).  tools/model/gen.pml checks this with T's stores in a store
 * buffer, and rejects the protocol without the membarrier.
 *
 * Records (gen_self.c).  A thread's record is made at its first slow
 * pull when membarrier(2) works (registered once; COROKIT_MEMBARRIER=0
 * turns it off: every pull then takes the generator with a compare-and-
 * swap and gives it back to 0); until then coro__gen_me is coro__gen_none,
 * whose slot[0] is never free (gen.h reads it with no NULL check).  Never
 * freed: at the thread's exit it goes to a list for the next new thread,
 * which then keeps what the dead thread kept (it pulls nothing any more;
 * the list's lock orders its last pulls before the new thread's).  So a
 * taker may read any T's record.
 *
 * The rest.  A held pull (H | 2) gives the generator back with a release
 * store: to the thread's T (it keeps it, when it waits for a pull) or to 0
 * (a job's pull that waited, an inner of a yield-from that ended, a close).
 * A marked pull whose body waits in a job hands the generator to the job:
 * a compare-and-swap from T to job | 2 (a taker that raced the mark puts T
 * back first: that wait is one membarrier long); one that leaves it not
 * waiting for a pull (ended, waits in plain code) frees it the same way,
 * T to 0, before the mark's end (end_marked()).  The inners of a yield-from are held with the
 * root's token | 2 while linked.  A pull that takes a generator over from
 * another thread makes it shared for GEN_SHARED_PULLS held pulls (given
 * back to 0, a compare-and-swap each), so that threads that take turns
 * pay a membarrier(2) once in that many pulls, not at every one.  The
 * frames' other fields are written only by the holder or the marked
 * keeper; a body that pulls or closes its own generator finds it held or
 * marked in its own record: -EBUSY.
 */
#define CORO__GEN_NO_INLINE 1
#include <errno.h>
#include <sched.h>

#include "sched/frame.h"
#include "sched/gen.h"
#include "sched/sched.h"

enum {
    GEN_ENDED = 1u,     /* the body ended or was closed: pulls give 0 */
    GEN_PENDING = 2u,   /* its leaf waits in an await that nobody armed */
    GEN_LINKED = 4u,    /* the inner of another generator's CORO_YIELD_FROM */
    GEN_SHARED_ONE = 0x100u,        /* held pulls left before it is kept again */
    GEN_SHARED_MASK = 0xff00u,
};
#define GEN_SHARED_PULLS 64u

#define LOCKED ((uintptr_t)2)   /* gen_run: held for one pull (WHO PULLS) */
#define PULL_PENDING 2          /* pull(): the body waits (coro_gen_await) */

_Static_assert(CORO__GEN_BUDGET_PULLS == CORO__GEN_PULLS_PER_BUDGET, "gen.h's is tunables.h's");
_Static_assert((CORO__GEN_BUDGET_PULLS & (CORO__GEN_BUDGET_PULLS - 1)) == 0, "a power of 2");

const struct coro_await_ops coro__gen_ops = { "generator", NULL };

/* the calling thread's record, NULL when it has none (gen_self.c) */
static inline struct coro__gen_self *self_now(void)
{
    struct coro__gen_self *me = coro__gen_me;
    return me == &coro__gen_none ? NULL : me;
}

static inline bool is_gen(const coro_t *g)
{
    return g->flags & CORO__FL_GEN;
}

/* relaxed: gen_st is written only by the holder or the marked keeper
 * (WHO PULLS); atomic because gen.h's inline pull reads it before it
 * knows that it keeps the generator */
static inline uint32_t st_get(const coro_t *g)
{
    return __atomic_load_n(&g->gen_st, __ATOMIC_RELAXED);
}

static inline void st_set(coro_t *g, uint32_t s)
{
    __atomic_store_n(&g->gen_st, s, __ATOMIC_RELAXED);
}

/* coro__current_job, inlined for coro_gen_await's path */
static inline coro_t *current_job(void)
{
    struct coro__worker *w = coro__tls_worker;
    if (!w || !coro__tls_in_job)
        return NULL;
    /* relaxed: this thread's own store (run_job_) */
    return __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
}

static __thread unsigned tls_pulls;    /* CORO__GEN_PULLS_PER_BUDGET */

/* coro__complete, inlined for coro_gen_await's path: a completed await
 * with result r, or with the budget spent the yield that carries it */
static inline coro_await_t complete(intptr_t r)
{
    typedef long long pair __attribute__((vector_size(16), may_alias));
    const struct coro_await_ops *ops = NULL;
    coro_await_t a;

    if (coro__tls_in_job && ++tls_pulls % CORO__GEN_PULLS_PER_BUDGET == 0 &&
        --coro__tls_budget < 0)
        ops = &coro__yield_ops;
    /* .ops and .arg[0] in one 16-byte store: CORO_AWAIT copies the
     * awaitable with 16-byte loads, which a store of 8 bytes would not
     * forward to (a stall of a dozen cycles a value); the fields it does
     * not read for a completed await are left as they are */
    pair p = { (long long)(intptr_t)ops, (long long)r };
    __builtin_memcpy(&a, &p, sizeof p);
    return a;
}

/* gen.h's inline await counted CORO__GEN_BUDGET_PULLS pulls: one unit of
 * the job's budget, and the yield that carries the value when it is spent */
coro_await_t coro__gen_await_budget(void)
{
    coro_await_t a = coro_ready(1);

    if (coro__tls_in_job && --coro__tls_budget < 0)
        a.ops = &coro__yield_ops;       /* the yield's result: arg[0], 1 */
    return a;
}

static inline uintptr_t tok_of(const struct coro__gen_self *me)
{
    return (uintptr_t)me + 1;   /* records are 64-aligned: bits 1-5 clear */
}

/* the calling thread's holder token (without LOCKED) */
static inline uintptr_t thread_token(const struct coro__gen_self *me)
{
    return me ? tok_of(me) : (uintptr_t)__builtin_thread_pointer() | 1u;
}

/* me's thread marks a pull of g now (its own record: relaxed) */
static bool marked(const struct coro__gen_self *me, const coro_t *g)
{
    for (size_t i = 0; i < CORO__GEN_SLOTS; i++)
        if (__atomic_load_n(&me->slot[i], __ATOMIC_RELAXED) == g)
            return true;
    return false;
}

/* a free slot of me's record for one more pull, or CORO__GEN_SLOTS */
static size_t free_slot(const struct coro__gen_self *me)
{
    size_t d = 0;
    /* relaxed: its own record */
    while (d < CORO__GEN_SLOTS && __atomic_load_n(&me->slot[d], __ATOMIC_RELAXED))
        d++;
    return d;
}

/* mark a pull of g at me->slot[d] (gen.h CORO__GEN_MARK, in any slot):
 * true when me still keeps g after the mark */
static bool mark(struct coro__gen_self *me, coro_t *g, size_t d)
{
    /* release: see gen.h CORO__GEN_MARK */
    __atomic_store_n(&me->slot[d], g, __ATOMIC_RELEASE);
    /* the compiler's fence: the taker's membarrier is the heavy side */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* relaxed: WHO PULLS, the argument */
    return __atomic_load_n(&g->gen_run, __ATOMIC_RELAXED) == tok_of(me);
}

static inline void unmark(struct coro__gen_self *me, size_t d)
{
    /* release: this pull's writes before a taker's acquire of the slot */
    __atomic_store_n(&me->slot[d], NULL, __ATOMIC_RELEASE);
}

/* after a compare-and-swap took g from the thread of record o: whether
 * o may pull it now (the taker then gives it back to o) */
static bool keeper_pulls(const struct coro__gen_self *o, const coro_t *g)
{
    /* the heavy side of the fence: o's mark, or o's back-off (WHO PULLS).
     * It cannot fail once registered; if it did, o's state is unknown */
    if (coro__membarrier_heavy() != 0)
        return true;
    for (size_t i = 0; i < CORO__GEN_SLOTS; i++)
        /* acquire: o's writes of its pulls, up to the slot's last store
         * (a mark or the end of one: both release) */
        if (__atomic_load_n(&o->slot[i], __ATOMIC_ACQUIRE) == g)
            return true;
    return false;
}

/* take g for one pull held by h (a token | LOCKED) of the calling thread,
 * whose record is me (or NULL): 0, or -EBUSY */
static int gen_take(coro_t *g, uintptr_t h, struct coro__gen_self *me)
{
    for (;;) {
        /* acquire: the last holder's writes (its release of gen_run) */
        uintptr_t r = __atomic_load_n(&g->gen_run, __ATOMIC_ACQUIRE);
        if (r & LOCKED)
            return -EBUSY;
        bool mine = me && r == tok_of(me);
        if (mine && marked(me, g))
            return -EBUSY;      /* its own pull runs further up: a body pulls itself */
        /* acquire: as the load */
        if (!__atomic_compare_exchange_n(&g->gen_run, &r, h, false, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        if (r == 0 || mine)
            return 0;
        if (keeper_pulls((const struct coro__gen_self *)(r - 1), g)) {
            /* relaxed: nothing of ours to publish; only the keeper reads */
            __atomic_store_n(&g->gen_run, r, __ATOMIC_RELAXED);
            return -EBUSY;
        }
        /* threads that take turns: held pulls for a while (WHO PULLS) */
        st_set(g, (st_get(g) & ~(uint32_t)GEN_SHARED_MASK) |
                      GEN_SHARED_PULLS * GEN_SHARED_ONE);
        return 0;
    }
}

/* end a held pull: g is given back to 0 */
static inline void release(coro_t *g)
{
    /* release: this pull's writes to the frames before the next holder's
     * acquire of gen_run */
    __atomic_store_n(&g->gen_run, 0, __ATOMIC_RELEASE);
}

/* end a thread's held pull: its thread keeps g, unless g is shared or
 * does not wait for a pull (ended, its body waits: gen.h's inline pull
 * reads only gen_run, so a kept generator is always one that waits) */
static void give_back(coro_t *g, struct coro__gen_self *me)
{
    uintptr_t to = 0;

    if (me) {
        uint32_t s = st_get(g);
        if (s & GEN_SHARED_MASK)
            st_set(g, s - GEN_SHARED_ONE);
        else if (s == CORO__GEN_MAGIC)
            to = tok_of(me);
    }
    /* release: as release() */
    __atomic_store_n(&g->gen_run, to, __ATOMIC_RELEASE);
}

/* a marked pull of me's thread waits in a job: g is held for h from now
 * on; or (h 0) it ended or waits in plain code: g is free from now on.  A
 * taker that raced the mark has seen it and puts T back: wait for that
 * (one membarrier(2) long) */
static void gen_hand_over(coro_t *g, struct coro__gen_self *me, uintptr_t h)
{
    uintptr_t t = tok_of(me);
    unsigned spins = 0;

    /* release: this pull's writes before the acquire of the next holder
     * of a free g (a job's g stays this thread's until the job links it) */
    while (!__atomic_compare_exchange_n(&g->gen_run, &t, h, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
        t = tok_of(me);
        if (++spins % 64 == 0)
            sched_yield();      /* a taker on this CPU, switched out */
        else
            coro__cpu_relax();
    }
}

/* the end of a marked pull of g at me->slot[d]: g stays kept only when it
 * waits for its next pull (give_back) */
static void end_marked(coro_t *g, struct coro__gen_self *me, size_t d)
{
    if (st_get(g) != CORO__GEN_MAGIC)
        gen_hand_over(g, me, 0);
    unmark(me, d);
}

/* ---- the pull ------------------------------------------------------------------ */

/* the leaf ended with its body's result: 0 or its error (negative) */
static inline intptr_t end_result(const coro_t *f)
{
    return f->result < 0 ? f->result : 0;
}

/* inner, a yield-from inner of root, ended: its parent is the leaf again
 * and reads 0 or inner's error */
static coro_t *pop(coro_t *root, coro_t *inner)
{
    coro_t *outer = inner->parent;

    outer->result = end_result(inner);
    inner->parent = NULL;
    inner->gen_leaf = inner;
    inner->gen_root = inner;
    st_set(inner, CORO__GEN_MAGIC | GEN_ENDED);
    release(inner);
    root->gen_leaf = outer;
    outer->gen_root = root;
    return outer;
}

/* leaf's CORO_YIELD_FROM: the frame to run next (the new leaf, or leaf
 * with its CORO_RESULT set when the inner is refused or had ended);
 * *pending when the inner's body waits in an await (root PENDING) */
static coro_t *yield_from(coro_t *root, coro_t *leaf, bool *pending)
{
    coro_t *inner = leaf->aw.arg[0].p;

    *pending = false;
    if (!inner || inner == leaf || !is_gen(inner)) {
        leaf->result = -EINVAL;
        return leaf;
    }
    /* relaxed: root's holder token, or its keeper's (a taker that races
     * a keeper's pull may show its own for a moment: only LOCKED counts) */
    uintptr_t h = __atomic_load_n(&root->gen_run, __ATOMIC_RELAXED) | LOCKED;
    if (gen_take(inner, h, self_now()) < 0) {
        leaf->result = -EBUSY;  /* pulled elsewhere, or a circle of yield-froms */
        return leaf;
    }
    uint32_t s = st_get(inner);
    if (s & GEN_ENDED) {
        release(inner);
        leaf->result = 0;
        return leaf;
    }
    inner->parent = leaf;
    st_set(inner, (s | GEN_LINKED) & ~(uint32_t)GEN_PENDING);
    coro_t *l = inner->gen_leaf;  /* inner's own chain, if it had one */
    l->gen_root = root;
    root->gen_leaf = l;
    if (s & GEN_PENDING) {
        st_set(root, st_get(root) | GEN_PENDING);
        *pending = true;
    }
    return l;
}

/* run root's chain on from leaf, whose body just returned st: 1 (*value),
 * 0 (ended), -errno, or when the body awaits: -EWOULDBLOCK (plain) or
 * PULL_PENDING (await: the root PENDING, the await in its leaf) */
static int pull(coro_t *root, coro_t *leaf, int st, intptr_t *value, bool await)
{
    bool pending;

    for (;;) {
        switch (st) {
        case CORO__ST_VALUE:
            *value = leaf->result;
            return 1;
        case CORO__ST_DONE:
            if (leaf == root) {
                st_set(root, CORO__GEN_MAGIC | GEN_ENDED);
                return (int)end_result(root);
            }
            leaf = pop(root, leaf);
            break;
        case CORO__ST_FROM:
            leaf = yield_from(root, leaf, &pending);
            if (pending)
                return await ? PULL_PENDING : -EWOULDBLOCK;
            break;
        case CORO__ST_AWAIT:
            st_set(root, st_get(root) | GEN_PENDING);
            return await ? PULL_PENDING : -EWOULDBLOCK;
        case CORO__ST_YIELD:
            if (!await)
                break;          /* plain code: nobody to let run first */
            /* in a job: the yield goes through the worker, as a job's */
            leaf->aw = (coro_await_t){ .ops = &coro__yield_ops };
            st_set(root, st_get(root) | GEN_PENDING);
            return PULL_PENDING;
        default:
            coro__bad_body(leaf, st);
        }
        st = leaf->fn(leaf);
    }
}

int coro_gen_init(coro_t *gen, coro_fn fn)
{
    if (!gen || !fn || gen->fn || gen->resume ||
        __atomic_load_n(&gen->state, __ATOMIC_RELAXED) != CORO__S_IDLE ||
        (gen->flags & (uint8_t)~CORO__FL_SMALL) || gen->gen_st || gen->gen_run)
        return -EINVAL;
    gen->fn = fn;
    gen->parent = NULL;
    gen->gen_leaf = gen;
    gen->gen_root = gen;
    gen->flags |= CORO__FL_GEN;
    st_set(gen, CORO__GEN_MAGIC);
    /* not a job: spawn and coro_call refuse it (-EBUSY), joins and
     * awaits of it (-EINVAL) */
    __atomic_store_n(&gen->state, CORO__S_CHILD, __ATOMIC_RELAXED);
    return 0;
}

/* the pull of coro_gen_next, gen held or marked */
static int next_held(coro_t *gen, intptr_t *value)
{
    uint32_t s = st_get(gen);

    if (s & GEN_ENDED)
        return 0;
    if (s & GEN_PENDING)
        return -EWOULDBLOCK;
    coro_t *leaf = gen->gen_leaf;
    int st = leaf->fn(leaf);
    if (CORO__LIKELY(st == CORO__ST_VALUE)) {   /* pull()'s first case, without its call */
        *value = leaf->result;
        return 1;
    }
    return pull(gen, leaf, st, value, false);
}

/* a pull of coro_gen_next that gen.h's inline path did not take: marked
 * when the thread keeps gen (nested pulls too), else held */
int coro__gen_next_slow(coro_t *gen, intptr_t *value)
{
    if (!gen || !value || !is_gen(gen))
        return -EINVAL;
    struct coro__gen_self *me = coro__gen_record();
    if (me && __atomic_load_n(&gen->gen_run, __ATOMIC_RELAXED) == tok_of(me)) {
        size_t d = free_slot(me);
        if (d < CORO__GEN_SLOTS && !marked(me, gen)) {
            if (mark(me, gen, d)) {
                int r = next_held(gen, value);
                end_marked(gen, me, d);
                return r;
            }
            unmark(me, d);      /* taken over meanwhile */
        }
    }
    int r = gen_take(gen, thread_token(me) | LOCKED, me);
    if (r < 0)
        return r;
    r = next_held(gen, value);
    give_back(gen, me);
    return r;
}

/* gen.h's mark in slot[0] found gen not kept by this thread */
int coro__gen_next_unmark(coro_t *gen, intptr_t *value)
{
    struct coro__gen_self *me = coro__gen_me;

    /* relaxed: as in the mark; a taker that refused has put T back */
    if (__atomic_load_n(&gen->gen_run, __ATOMIC_RELAXED) == tok_of(me)) {
        int r = next_held(gen, value);
        end_marked(gen, me, 0);
        return r;
    }
    unmark(me, 0);
    return coro__gen_next_slow(gen, value);
}

/* gen.h's marked pull met something other than a value */
int coro__gen_next_more(coro_t *gen, int st, intptr_t *value)
{
    int r = pull(gen, gen->gen_leaf, st, value, false);
    end_marked(gen, coro__gen_me, 0);
    return r;
}

/* the exported coro_gen_next and coro_gen_next_of: gen.h's inline copies
 * are for inlining only (the body named is a hint the call needs not) */
int coro_gen_next(coro_t *gen, intptr_t *value)
{
    return coro__gen_next_slow(gen, value);
}

int coro__gen_next_of_slow(coro_t *gen, coro_fn body, intptr_t *value)
{
    (void)body;
    return coro__gen_next_slow(gen, value);
}

int coro_gen_next_of(coro_t *gen, coro_fn body, intptr_t *value)
{
    (void)body;
    return coro__gen_next_slow(gen, value);
}

/* ---- in a job -------------------------------------------------------------------- */

static coro_await_t await_pending(coro_t *gen, intptr_t *value)
{
    coro_await_t a = { .ops = &coro__gen_ops };

    a.arg[0].p = gen;
    a.arg[1].p = value;
    return a;
}

/* the holder token of a pull that waits: the job's frame, or outside a
 * job the thread's token */
static inline uintptr_t await_token(struct coro__gen_self *me)
{
    coro_t *job = current_job();
    return (job ? (uintptr_t)job : thread_token(me)) | LOCKED;
}

/* coro_gen_await's pull, gen held (me NULL: given back to 0 at the end)
 * or marked at me->slot[d] (me not NULL, kept: stays kept); leaf's body
 * returned st, or with run false has not run */
static coro_await_t await_held(coro_t *gen, intptr_t *value, bool run, int st,
                               struct coro__gen_self *me, size_t d, bool kept)
{
    int r;

    if (!run) {
        uint32_t s = st_get(gen);
        if (s & GEN_ENDED) {
            r = 0;
            goto done;
        }
        if (s & GEN_PENDING)    /* the worker arms its leaf's await */
            goto pending;
        coro_t *leaf = gen->gen_leaf;
        st = leaf->fn(leaf);
    }
    r = pull(gen, gen->gen_leaf, st, value, true);
    if (r != PULL_PENDING)
        goto done;
pending:
    if (kept) {
        gen_hand_over(gen, me, await_token(me));
        unmark(me, d);
    }
    return await_pending(gen, value);       /* gen stays held: linked at the await */
done:
    if (kept)
        end_marked(gen, me, d);
    else
        give_back(gen, me);
    return complete(r);
}

/* a pull of coro_gen_await that gen.h's inline path did not take */
coro_await_t coro__gen_await_slow(coro_t *gen, intptr_t *value)
{
    if (!gen || !value || !is_gen(gen))
        return coro_ready(-EINVAL);
    struct coro__gen_self *me = coro__gen_record();
    if (me && __atomic_load_n(&gen->gen_run, __ATOMIC_RELAXED) == tok_of(me)) {
        size_t d = free_slot(me);
        if (d < CORO__GEN_SLOTS && !marked(me, gen)) {
            if (mark(me, gen, d))
                return await_held(gen, value, false, 0, me, d, true);
            unmark(me, d);      /* taken over meanwhile */
        }
    }
    if (gen_take(gen, await_token(me), me) < 0)
        return coro_ready(-EBUSY);
    return await_held(gen, value, false, 0, me, 0, false);
}

coro_await_t coro__gen_await_unmark(coro_t *gen, intptr_t *value)
{
    struct coro__gen_self *me = coro__gen_me;

    /* relaxed: as in the mark */
    if (__atomic_load_n(&gen->gen_run, __ATOMIC_RELAXED) == tok_of(me))
        return await_held(gen, value, false, 0, me, 0, true);
    unmark(me, 0);
    return coro__gen_await_slow(gen, value);
}

coro_await_t coro__gen_await_more(coro_t *gen, int st, intptr_t *value)
{
    return await_held(gen, value, true, st, coro__gen_me, 0, true);
}

/* the exported coro_gen_await: gen.h's inline copy is for inlining only */
coro_await_t coro_gen_await(coro_t *gen, intptr_t *value)
{
    return coro__gen_await_slow(gen, value);
}

/* the step loop found cur awaiting coro__gen_ops: link the generator's
 * chain into job; returns the frame whose await the worker now handles */
coro_t *coro__gen_link(coro_t *job, coro_t *cur)
{
    (void)job;
    coro_t *gen = cur->aw.arg[0].p;
    gen->parent = cur;
    st_set(gen, st_get(gen) & ~(uint32_t)GEN_PENDING);
    coro_t *leaf = gen->gen_leaf;
    leaf->gen_root = gen;
    return leaf;
}

/* the step loop ran cur, a generator's frame in job's chain, and its body
 * returned st (a value, its end or a yield-from): the frame to go on with;
 * *pending when that frame's await is to be handled, not its body run */
coro_t *coro__gen_step(coro_t *job, coro_t *cur, int st, bool *pending)
{
    (void)job;
    coro_t *root = cur->gen_root, *p;

    *pending = false;
    switch (st) {
    case CORO__ST_VALUE:
        p = root->parent;
        *(intptr_t *)p->aw.arg[1].p = cur->result;
        p->result = 1;
        root->parent = NULL;
        release(root);
        return p;
    case CORO__ST_DONE:
        if (cur != root)
            return pop(root, cur);
        p = root->parent;
        p->result = end_result(root);
        st_set(root, CORO__GEN_MAGIC | GEN_ENDED);
        root->parent = NULL;
        release(root);
        return p;
    case CORO__ST_FROM:
        return yield_from(root, cur, pending);
    default:
        coro__bad_body(cur, st);
    }
}

/* CANCEL: cur, in job's chain, is to read err for the await it was in.
 * When a generator's frame is on the way up, every frame up to the
 * outermost generator's puller reads err (a coro_call child in a
 * generator's body is given up: DONE, its caller reads err), each
 * generator is released where it stands, and that puller is returned;
 * NULL when no generator is in the chain. */
coro_t *coro__gen_unwind(coro_t *job, coro_t *cur, intptr_t err)
{
    coro_t *outer = NULL, *g, *up;

    for (g = cur; g != job; g = g->parent)
        if (is_gen(g))
            outer = g = g->gen_root;
    if (!outer)
        return NULL;
    coro_t *p0 = outer->parent;
    for (g = cur; g != p0; g = up) {
        g->result = err;
        if (is_gen(g)) {
            coro_t *root = g->gen_root;
            up = root->parent;
            root->parent = NULL;
            st_set(root, st_get(root) & ~(uint32_t)GEN_PENDING);
            release(root);
        } else {
            up = g->parent;
            /* release: as a finished coro_call child (sched/run.c) */
            __atomic_store_n(&g->state, CORO__S_DONE, __ATOMIC_RELEASE);
        }
    }
    p0->result = err;
    return p0;
}

/* ---- close ------------------------------------------------------------------------- */

/* a waiting leaf's await of another generator: that one is let go (it
 * stays where its body waits: PENDING) */
static void let_go_awaited(coro_t *leaf)
{
    if (leaf->aw.ops == &coro__gen_ops) {
        coro_t *h = leaf->aw.arg[0].p;
        h->parent = NULL;
        release(h);
    }
}

int coro_gen_close(coro_t *gen)
{
    if (!gen || !is_gen(gen))
        return -EINVAL;
    struct coro__gen_self *me = coro__gen_record();
    int r = gen_take(gen, await_token(me), me);
    if (r < 0)
        return r;
    uint32_t s = st_get(gen);
    if (!(s & GEN_ENDED)) {
        coro_t *f = gen->gen_leaf;
        if (s & GEN_PENDING)
            let_go_awaited(f);
        while (f != gen) {      /* the yield-from chain, innermost first */
            coro_t *up = f->parent;
            f->parent = NULL;
            f->gen_leaf = f;
            f->gen_root = f;
            st_set(f, CORO__GEN_MAGIC | GEN_ENDED);
            release(f);
            f = up;
        }
        gen->gen_leaf = gen;
        st_set(gen, CORO__GEN_MAGIC | GEN_ENDED);
    }
    release(gen);
    return 0;
}
