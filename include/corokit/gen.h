/* SPDX-License-Identifier: MIT */
/* corokit: generators - a body that hands values to whoever pulls them
 * (C++20's co_yield, Python's yield, a tokio Stream).
 *
 *     struct squares { coro_t co; int i, n; };
 *
 *     static int squares(coro_t *co)
 *     {
 *         struct squares *g = CORO_SELF(co, struct squares);
 *         CORO_BEGIN(co);
 *         for (g->i = 1; g->i <= g->n; g->i++)
 *             CORO_YIELD_VALUE(co, g->i * g->i);
 *         CORO_END(co);
 *     }
 *
 *     struct squares sq = { .n = 10 };          (zeroed, as a job's frame)
 *     coro_gen_init(&sq.co, squares);
 *     intptr_t v;
 *     while (coro_gen_next(&sq.co, &v) == 1)    (plain code: no scheduler)
 *         sum += v;
 *
 * The same generator is pulled in a job with
 * CORO_AWAIT(co, coro_gen_await(&g->sq.co, &g->v)); its body may then
 * await anything between its values (I/O, timers, channels): an async
 * generator, run inside the awaiting job.
 *
 * THE BODY.  The usual macros (CORO_BEGIN ... CORO_END, locals in the
 * frame); CORO_YIELD_VALUE hands one value over and suspends until the next
 * pull; CORO_YIELD_FROM hands over every value of another generator;
 * falling off CORO_END (or CORO_RETURN(co, v) with v >= 0) ends it, and
 * CORO_RETURN(co, -errno) ends it with an error that the pull which met
 * the end returns (later pulls give 0).  After CORO_YIELD_VALUE(co, v),
 * CORO_RESULT(co) still holds v.
 *
 * THE FRAME.  As a job's: the caller's memory (static, in another frame,
 * malloc, coro_frame_alloc), zeroed before coro_gen_init, never moved
 * while in use; corokit allocates nothing for it and frees nothing (it
 * keeps one small record per thread that pulls: WHO PULLS).  A generator
 * frame cannot be spawned or coro_call'ed (-EBUSY); once ended or closed it
 * may be zeroed and initialised again.
 *
 * WHO PULLS.  One puller at a time: a pull (coro_gen_next, coro_gen_await,
 * coro_gen_close) while another pull of the same generator runs, or waits
 * in a job, is refused with -EBUSY, as is a body that pulls its own
 * generator.  Pulls from different threads or jobs one after another are
 * fine: they only need what orders them anyway (a join, a channel, a
 * mutex).  The thread that pulled a generator last keeps it: its next
 * pull takes it with plain loads and stores, no atomic instruction; a pull
 * from another thread takes it over with one compare-and-swap and one
 * membarrier(2) (lib/sched/gen.c, WHO PULLS).  For that corokit keeps a
 * record of a few words per thread that pulls, made at its first pull
 * and reused by a later thread once it ends.  Where membarrier(2) is
 * missing (or COROKIT_MEMBARRIER=0) every pull takes the generator with
 * one compare-and-swap instead, out of line.
 */
#ifndef COROKIT_GEN_H
#define COROKIT_GEN_H

#include <stddef.h>
#include <stdint.h>
#include "coro.h"
#include "sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the body macros ---------------------------------------------------- */

/* CORO_YIELD_VALUE(co, v) - in a generator's body: hand (intptr_t)v to the
 * puller and suspend until the next pull.  In a body that is not a
 * generator's (a job, a coro_call child) the step aborts with a message
 * naming the body, as a stray status word does. */
#define CORO_YIELD_VALUE(co, v) CORO__YIELD_VALUE_(co, v, CORO__ID)
#define CORO__YIELD_VALUE_(co, v, n)                                        \
    do {                                                                    \
        CORO__IN_BODY_;                                                     \
        (co)->result = (intptr_t)(v);                                       \
        CORO__SAVE_(co, n);                                                 \
        return CORO__ST_VALUE;                                              \
        CORO__MARK_(co, n)                                                  \
    } while (0)

/* CORO_YIELD_FROM(co, inner) - in a generator's body: hand over every value
 * of the generator inner (initialised, not pulled by anyone else), then go
 * on.  A pull through any depth of CORO_YIELD_FROM costs what a pull of one
 * generator costs: the outermost generator keeps its innermost one (as
 * cppcoro's recursive_generator).  Afterwards CORO_RESULT(co) is 0 (inner
 * ended, or had ended before), inner's error (it ended with
 * CORO_RETURN(co, -errno)), -EINVAL (inner NULL, not a generator, or co
 * itself), -EBUSY (inner pulled elsewhere) or -ECANCELED (inner was closed
 * part way by coro_gen_close of this generator: the body is not resumed
 * then).  Outside a generator's body: the abort of CORO_YIELD_VALUE. */
#define CORO_YIELD_FROM(co, inner) CORO__YIELD_FROM_(co, inner, CORO__ID)
#define CORO__YIELD_FROM_(co, inner, n)                                     \
    do {                                                                    \
        CORO__IN_BODY_;                                                     \
        (co)->aw.ops = NULL;                                                \
        (co)->aw.arg[0].p = (inner);                                        \
        CORO__SAVE_(co, n);                                                 \
        return CORO__ST_FROM;                                               \
        CORO__MARK_(co, n)                                                  \
    } while (0)

/* ---- generators ----------------------------------------------------------- */

/* coro_gen_init - make gen (a zeroed frame header, the member `co` of the
 * generator's frame) a generator with body fn that has not started.  No
 * scheduler, no allocation: the body runs only when pulled.  0, or -EINVAL
 * (gen or fn NULL, gen not zeroed: a live job's, a generator's that has not
 * ended).  Any thread; does not block. */
CORO_EXTERN int coro_gen_init(coro_t *gen, coro_fn fn);

/* coro_gen_await - awaitable, in a job: the next value of gen into *value.
 * Result 1 (a value in *value), 0 (gen has ended; every later pull gives 0
 * too), or -errno: the error gen's body ended with, -EINVAL (gen not a
 * generator, value NULL), -EBUSY (another pull of gen runs or waits),
 * -ECANCELED (the awaiting job was cancelled while the body waited: the
 * generator stays where its body was - its pending await then reads
 * -ECANCELED - and may be closed or pulled again).  The body runs inside
 * the awaiting job, on its thread: in the constructor up to its next value
 * when it needs no wait (no queue, no suspension), and when it awaits,
 * the whole job suspends and only the generator's innermost frame resumes
 * (as a coro_call child).  So build it inside CORO_AWAIT and await it once
 * (coro.h): the value is taken when it is built.  *value is written only
 * with 1 and must stay valid until the await completes (keep it in the
 * frame).  Not for coro_select. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_gen_await(coro_t *gen, intptr_t *value);

/* coro_gen_close - end gen early, from its puller, when no pull runs:
 * every generator it is yielding from (CORO_YIELD_FROM, at any depth) ends
 * too, and later pulls of each give 0.  The bodies are not resumed: what a
 * body holds (an fd it opened, memory) is for the owner of its frame to
 * release.  0 (also for a generator that has ended), -EINVAL (NULL, not a
 * generator), -EBUSY (a pull of it runs or waits in a job).  Any thread;
 * does not block. */
CORO_EXTERN int coro_gen_close(coro_t *gen);

/* coro_gen_next - from plain code (any thread, no scheduler needed; also
 * inside a job's body, where it runs as plain code): run gen's body on
 * this thread up to its next CORO_YIELD_VALUE or its end.  1 and *value;
 * 0 when it has ended (every later call gives 0 too); -errno: the error
 * its body ended with (once; then 0), -EINVAL (gen not a generator, value
 * NULL), -EBUSY (another pull of gen runs or waits, or its body pulls
 * itself), -EWOULDBLOCK (the body awaits something other than another
 * generator: it stays suspended there, and every coro_gen_next gives
 * -EWOULDBLOCK again until a job pulls it with coro_gen_await, which
 * completes that wait).  Never blocks by itself (a body's blocking call
 * blocks, as in any plain code).  Inline: the pull of the thread that
 * pulled last is a few plain loads and stores and a call of the innermost
 * body (lib/sched/gen.c, WHO PULLS). */
CORO_EXTERN int coro_gen_next(coro_t *gen, intptr_t *value);

/* coro_gen_next_of - coro_gen_next with the generator's body named at the
 * pull: the same pull, the same results and errors, on the same threads.
 * body is a hint, never trusted: where gen's innermost frame runs body (gen
 * itself, or the inner of a CORO_YIELD_FROM with the same body) the pull
 * calls it directly, so that a compiler that sees it may inline it into
 * the pull's loop; anything else (another body, an inner of another body,
 * NULL) pulls as coro_gen_next does.  Compilers do not inline a function
 * with a computed goto, so the body inlines where its translation unit uses
 * the switch back end (CORO_USE_SWITCH, coro.h) and is visible at the pull
 * (the same file, or link-time optimisation); with the labels back end the
 * call is direct but not inlined.  Never blocks by itself. */
CORO_EXTERN int coro_gen_next_of(coro_t *gen, coro_fn body, intptr_t *value);

/* ---- private: the inline fast paths --------------------------------------- */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(CORO__GEN_NO_INLINE)
# define CORO__GEN_INLINE 1
#endif

/* The generator magic in coro_t.gen_st's top byte: a status of exactly
 * this value is "started or not, not ended, not waiting, not linked". */
#define CORO__GEN_MAGIC 0x47000000u
/* how many pulls one thread marks at once without an atomic instruction
 * (a body that pulls another generator nests one more) */
#define CORO__GEN_SLOTS 6
/* pulls that complete at once per unit of a job's budget (a power of 2;
 * lib/base/tunables.h CORO__GEN_PULLS_PER_BUDGET) */
#define CORO__GEN_BUDGET_PULLS 16u

/* private: a thread's pulls (lib/sched/gen.c, WHO PULLS).  Only its
 * thread writes it; another thread reads slot[] after its membarrier(2).
 * Its address | 1 is the thread's token in coro_t.gen_run. */
struct coro__gen_self {
    coro_t *slot[CORO__GEN_SLOTS];      /* the generators pulled now (NULL: free) */
    unsigned pulls;                     /* completed awaits, for the job's budget */
    struct coro__gen_self *next_free;   /* lib/sched/gen.c's list of spare ones */
};

/* private: the out-of-line parts of the pulls (lib/sched/gen.c) */
CORO_EXTERN int coro__gen_next_slow(coro_t *gen, intptr_t *value);
CORO_EXTERN int coro__gen_next_of_slow(coro_t *gen, coro_fn body, intptr_t *value);
CORO_EXTERN int coro__gen_next_more(coro_t *gen, int st, intptr_t *value);
CORO_EXTERN int coro__gen_next_unmark(coro_t *gen, intptr_t *value);
CORO_EXTERN coro_await_t coro__gen_await_slow(coro_t *gen, intptr_t *value);
CORO_EXTERN coro_await_t coro__gen_await_more(coro_t *gen, int st, intptr_t *value);
CORO_EXTERN coro_await_t coro__gen_await_unmark(coro_t *gen, intptr_t *value);
CORO_EXTERN coro_await_t coro__gen_await_budget(void);

#ifdef CORO__GEN_INLINE
/* private: the calling thread's record; until its first pull (and for
 * good where membarrier(2) is missing) a shared one whose slot[0] is never
 * free, so that every pull goes out of line, where the generator is taken
 * with a compare-and-swap */
extern __thread struct coro__gen_self *coro__gen_me __attribute__((tls_model("initial-exec")));

/* CORO__GEN_MARK: mark gen as pulled by me in slot[0], then look whether the
 * thread keeps it: true when the body may run.  A kept generator is
 * one that waits for its next pull (lib/sched/gen.c gives it back kept only
 * then), so nothing else is read.  The fence is the compiler's only: a
 * thread that takes gen over makes the heavy one, a membarrier(2), between
 * its compare-and-swap and its look at slot[] (lib/sched/gen.c, WHO
 * PULLS). */
# define CORO__GEN_MARK(me, gen)                                                  \
    (/* release: a taker that reads the slot sees the writes of this       \
      * thread's pulls before it */                                             \
     __atomic_store_n(&(me)->slot[0], (gen), __ATOMIC_RELEASE),                 \
     __atomic_signal_fence(__ATOMIC_SEQ_CST),                                   \
     /* relaxed: a taker's compare-and-swap is seen here or it sees the mark */ \
     __atomic_load_n(&(gen)->gen_run, __ATOMIC_RELAXED) == (uintptr_t)(me) + 1)

/* the end of a marked pull; release: its writes to the frames before a
 * taker's acquire */
# define CORO__GEN_UNMARK(me) __atomic_store_n(&(me)->slot[0], (coro_t *)0, __ATOMIC_RELEASE)

/* whether the calling thread pulls nothing now (its slot[0] is free): the
 * inline path's condition, with gen and value not NULL */
# define CORO__GEN_FREE(me, gen, value)                                           \
    (__builtin_expect((gen) != NULL && (value) != NULL &&                          \
                      __atomic_load_n(&(me)->slot[0], __ATOMIC_RELAXED) == NULL, 1))

/* GNU inline: these definitions are only for inlining; the library
 * exports the functions (calls through a pointer, compilers that do not
 * inline). */
extern __inline __attribute__((gnu_inline, always_inline)) int
coro_gen_next(coro_t *gen, intptr_t *value)
{
    struct coro__gen_self *me = coro__gen_me;

    if (CORO__GEN_FREE(me, gen, value)) {
        if (__builtin_expect(!CORO__GEN_MARK(me, gen), 0))
            return coro__gen_next_unmark(gen, value);
        coro_t *leaf = gen->gen_leaf;
        int st = leaf->fn(leaf);
        if (__builtin_expect(st == CORO__ST_VALUE, 1)) {
            *value = leaf->result;
            CORO__GEN_UNMARK(me);
            return 1;
        }
        return coro__gen_next_more(gen, st, value);     /* unmarks */
    }
    return coro__gen_next_slow(gen, value);
}

/* coro_gen_next's pull, with the body named called by its name where the
 * innermost frame runs it: inlined where the compiler can */
extern __inline __attribute__((gnu_inline, always_inline)) int
coro_gen_next_of(coro_t *gen, coro_fn body, intptr_t *value)
{
    struct coro__gen_self *me = coro__gen_me;

    if (CORO__GEN_FREE(me, gen, value)) {
        if (__builtin_expect(!CORO__GEN_MARK(me, gen), 0))
            return coro__gen_next_unmark(gen, value);
        coro_t *leaf = gen->gen_leaf;
        coro_fn fn = leaf->fn;
        int st = fn == body ? body(leaf) : fn(leaf);
        if (__builtin_expect(st == CORO__ST_VALUE, 1)) {
            *value = leaf->result;
            CORO__GEN_UNMARK(me);
            return 1;
        }
        return coro__gen_next_more(gen, st, value);     /* unmarks */
    }
    return coro__gen_next_of_slow(gen, body, value);
}

extern __inline __attribute__((gnu_inline, always_inline)) coro_await_t
coro_gen_await(coro_t *gen, intptr_t *value)
{
    struct coro__gen_self *me = coro__gen_me;

    if (CORO__GEN_FREE(me, gen, value)) {
        if (__builtin_expect(!CORO__GEN_MARK(me, gen), 0))
            return coro__gen_await_unmark(gen, value);
        coro_t *leaf = gen->gen_leaf;
        int st = leaf->fn(leaf);
        if (__builtin_expect(st == CORO__ST_VALUE, 1)) {
            *value = leaf->result;
            CORO__GEN_UNMARK(me);
            if (__builtin_expect(++me->pulls % CORO__GEN_BUDGET_PULLS == 0, 0))
                return coro__gen_await_budget();
            /* completed: ops NULL, result 1, the rest 0; in 16-byte
             * stores, as CORO_AWAIT copies it (an 8-byte store that a
             * 16-byte load reads is not forwarded: a stall) */
            typedef long long coro__v2 __attribute__((vector_size(16), may_alias));
            const coro__v2 done = { 0, 1 }, zero = { 0, 0 };
            coro_await_t a;
            __builtin_memcpy(&a, &done, sizeof done);
            __builtin_memcpy(&a.arg[1], &zero, sizeof zero);
            a.timeout = 0;
            return a;
        }
        return coro__gen_await_more(gen, st, value);    /* unmarks */
    }
    return coro__gen_await_slow(gen, value);
}
#endif

/* ---- adapters --------------------------------------------------------------- */

/* coro_gen_lines_t - the lines of an fd as a generator: each value is a
 * `char *` to one line, its '\n' (and a '\r' before it) replaced by a NUL,
 * valid until the next pull; .len is its length.  A last line without '\n'
 * at end of file is a line too.  Reads through coro_read: in a job
 * (coro_gen_await) the job waits for the fd; from plain code
 * (coro_gen_next) it reads with read(2): a blocking fd blocks the thread,
 * and a non-blocking one with nothing to read gives -EWOULDBLOCK (the
 * generator then waits in coro_read for a job's pull, as any body that
 * awaits).  The pull that meets an error
 * returns it: the read's -errno, -ETIMEDOUT (timeout_ns passed with no
 * data), -ENOBUFS (a line longer than cap - 1 bytes).  The fd is the
 * caller's: never closed here.  Fields are private except .co and .len. */
typedef struct coro_gen_lines {
    coro_t co;              /* public: the generator to pull */
    size_t len;             /* read-only: the last line's length */
    int fd;                 /* private */
    int eof;                /* private */
    char *buf;              /* private */
    size_t cap;             /* private */
    size_t start, end;      /* private: unread bytes buf[start, end) */
    size_t scan;            /* private: bytes of them with no '\n' */
    char *line;             /* private: the line handed over */
    int64_t timeout;        /* private */
} coro_gen_lines_t;

/* coro_gen_lines_init - make g (zeroed) a generator of the lines of fd,
 * read into the caller's buf[cap] (which must outlive it), each read
 * waiting at most timeout_ns (CORO_FOREVER: no limit).  0 or -EINVAL (g or
 * buf NULL, cap < 2, fd < 0, bad timeout, g not zeroed).  Any thread. */
CORO_EXTERN int coro_gen_lines_init(coro_gen_lines_t *g, int fd, char *buf, size_t cap,
                                    int64_t timeout_ns);

/* coro_gen_chan_t - the items of a channel as a generator: each value is
 * one item (the void * cast to intptr_t), received with coro_chan_recv;
 * the generator ends when the channel is closed and drained.  The pull
 * that meets an error returns it: -ETIMEDOUT (timeout_ns passed with no
 * item), -EINVAL (a destroyed channel).  Fields are private except .co. */
typedef struct coro_gen_chan {
    coro_t co;              /* public: the generator to pull */
    coro_chan_t *ch;        /* private */
    void *item;             /* private */
    int64_t timeout;        /* private */
} coro_gen_chan_t;

/* coro_gen_chan_init - make g (zeroed) a generator of ch's items, each
 * receive waiting at most timeout_ns (CORO_FOREVER: no limit).  0 or
 * -EINVAL (g or ch NULL, bad timeout, g not zeroed).  Any thread. */
CORO_EXTERN int coro_gen_chan_init(coro_gen_chan_t *g, coro_chan_t *ch, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif
