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
 * WHO PULLS.  One pull at a time: gen_run holds the token of the puller
 * whose pull runs or waits (0: none), taken by one CAS at the pull's start
 * (gen.h's inline coro_gen_next, coro_gen_await, claim()) and given back
 * by a release store at its end; a pull that finds it taken gets -EBUSY.
 * A token is a job's frame (coro_gen_await in a job) or a thread's thread
 * pointer | 1 (everything else), so that a body pulling its own generator
 * is told apart from another puller only in the message, never in the
 * outcome (both -EBUSY).  A pull that waits in a job keeps gen_run until
 * its value, its end or its cancel.  The frames' other fields are written
 * only by the holder of gen_run: the release and the next CAS's acquire
 * order them.  (A puller that keeps a generator without an atomic
 * instruction per pull - a sticky owner, taken over with membarrier(2) -
 * needs a mark that only its owner writes: a store of a puller that lost
 * the race lands on the shared word after the new owner's and hides it.)
 */
#define CORO__GEN_NO_INLINE 1
#include <errno.h>

#include "sched/frame.h"
#include "sched/sched.h"

enum {
    GEN_ENDED = 1u,     /* the body ended or was closed: pulls give 0 */
    GEN_PENDING = 2u,   /* its leaf waits in an await that nobody armed */
    GEN_LINKED = 4u,    /* the inner of another generator's CORO_YIELD_FROM */
};

#define TAKING ((uintptr_t)2)   /* never a token: tokens are odd or frames */
#define PULL_PENDING 2          /* pull(): the body waits (coro_gen_await) */

const struct coro_await_ops coro__gen_ops = { "generator", NULL };

static inline bool is_gen(const coro_t *g)
{
    return g->flags & CORO__FL_GEN;
}

/* relaxed: gen_st is written only by the holder of gen_run (OWNERS);
 * atomic because a claimer reads it before it knows it holds nothing */
static inline uint32_t st_get(const coro_t *g)
{
    return __atomic_load_n(&g->gen_st, __ATOMIC_RELAXED);
}

static inline void st_set(coro_t *g, uint32_t s)
{
    __atomic_store_n(&g->gen_st, s, __ATOMIC_RELAXED);
}

static inline uintptr_t thread_token(void)
{
    return (uintptr_t)__builtin_thread_pointer() | 1u;   /* gen.h's CORO__GEN_TOKEN */
}

static inline uintptr_t my_token(coro_t *job)
{
    return job ? (uintptr_t)job : thread_token();
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

/* ---- who pulls (OWNERS) ------------------------------------------------------ */

/* take g for the pull of token me: 0, or -EBUSY */
static inline int claim(coro_t *g, uintptr_t me)
{
    uintptr_t z = 0;
    /* acquire: the last holder's writes to the frames (its release) */
    return __atomic_compare_exchange_n(&g->gen_run, &z, me, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED) ? 0 : -EBUSY;
}

static inline void release(coro_t *g)
{
    /* release: this pull's writes to the frames before the next holder's
     * acquire of gen_run */
    __atomic_store_n(&g->gen_run, 0, __ATOMIC_RELEASE);
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
    /* relaxed: our own token, stored when this pull claimed root */
    if (claim(inner, __atomic_load_n(&root->gen_run, __ATOMIC_RELAXED)) < 0) {
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

/* the pull of coro_gen_next by a claimer, gen held */
static int next_held(coro_t *gen, intptr_t *value)
{
    uint32_t s = st_get(gen);
    int r;

    if (s & GEN_ENDED)
        r = 0;
    else if (s & GEN_PENDING)
        r = -EWOULDBLOCK;
    else {
        coro_t *leaf = gen->gen_leaf;
        r = pull(gen, leaf, leaf->fn(leaf), value, false);
    }
    release(gen);
    return r;
}

int coro__gen_next_slow(coro_t *gen, intptr_t *value)
{
    if (!gen || !value || !is_gen(gen))
        return -EINVAL;
    int r = claim(gen, thread_token());
    return r < 0 ? r : next_held(gen, value);
}

int coro__gen_next_held(coro_t *gen, intptr_t *value)
{
    return next_held(gen, value);
}

int coro__gen_next_more(coro_t *gen, int st, intptr_t *value)
{
    int r = pull(gen, gen->gen_leaf, st, value, false);
    release(gen);
    return r;
}

/* the exported coro_gen_next: gen.h's inline copy is for inlining only */
int coro_gen_next(coro_t *gen, intptr_t *value)
{
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

/* coro_gen_await's pull, gen held; leaf's body returned st (or, with
 * run false, has not run) */
static coro_await_t await_held(coro_t *gen, intptr_t *value, bool run, int st)
{
    int r;

    if (!run) {
        uint32_t s = st_get(gen);
        if (s & GEN_ENDED) {
            release(gen);
            return coro__complete(0);
        }
        if (s & GEN_PENDING)     /* the worker arms its leaf's await */
            return await_pending(gen, value);
        coro_t *leaf = gen->gen_leaf;
        st = leaf->fn(leaf);
    }
    r = pull(gen, gen->gen_leaf, st, value, true);
    if (r == PULL_PENDING)
        return await_pending(gen, value);   /* gen stays held: linked at the await */
    release(gen);
    return coro__complete(r);
}

coro_await_t coro_gen_await(coro_t *gen, intptr_t *value)
{
    uintptr_t me = my_token(current_job());

    /* gen.h's coro_gen_next, with the job's token */
    if (CORO__LIKELY(gen != NULL && value != NULL && is_gen(gen)) &&
        CORO__LIKELY(claim(gen, me) == 0)) {
        if (CORO__LIKELY(st_get(gen) == CORO__GEN_MAGIC)) {
            coro_t *leaf = gen->gen_leaf;
            int st = leaf->fn(leaf);
            if (CORO__LIKELY(st == CORO__ST_VALUE)) {
                *value = leaf->result;
                release(gen);
                return complete(1);
            }
            return await_held(gen, value, true, st);
        }
        return await_held(gen, value, false, 0);   /* held: ended or waiting */
    }
    return coro_ready(!gen || !value || !is_gen(gen) ? -EINVAL : -EBUSY);
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
    int r = claim(gen, my_token(coro__current_job()));
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
