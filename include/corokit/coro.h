/* SPDX-License-Identifier: MIT */
/* corokit: the coroutine - frame header, body macros and core awaitables.
 *
 * A coroutine is a plain C function over a frame struct that the user owns.
 * Locals that must survive a suspension live in the frame, never on the C
 * stack:
 *
 *     struct counter { coro_t co; int i; };
 *
 *     static int count(coro_t *co)
 *     {
 *         struct counter *c = CORO_SELF(co, struct counter);
 *         CORO_BEGIN(co);
 *         for (c->i = 0; c->i < 3; c->i++)
 *             CORO_YIELD(co);
 *         CORO_RETURN(co, c->i);
 *         CORO_END(co);
 *     }
 *
 * Two back ends: GCC/Clang labels-as-values (the default where available;
 * a body may contain its own `switch`) and a portable switch/case one
 * (define CORO_USE_SWITCH before including, or build with
 * -DCORO_USE_SWITCH; a body then must not place an await inside a switch of
 * its own).  Both are built and tested.  Strict ISO C++ (-std=c++17, not
 * gnu++17) always gets the switch back end.  Both back ends are quiet
 * under -Wpedantic (the labels one marks its GNU extensions).
 */
#ifndef COROKIT_CORO_H
#define COROKIT_CORO_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "cpuset.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coro coro_t;
/* A scheduler (sched.h), always spelled coro_sched_t in the API. */
typedef struct coro_sched coro_sched_t;

/* An allocator for the memory corokit takes for itself (a scheduler's
 * structures, frame pools and trace rings through
 * coro_sched_config_t.alloc; a channel's buffer through
 * coro_chan_init_alloc).  alloc(ctx, size) returns size bytes (any
 * alignment: corokit aligns what it needs) or NULL; free(ctx, ptr, size)
 * gives back a block alloc returned, with the size asked for.  ctx is
 * passed through untouched.  Both functions must be set; they may be
 * called from any of the scheduler's threads at once, and never with a
 * lock of corokit's held that they could need.  The struct is read where
 * it is given and must outlive what uses it (the scheduler, the channel). */
typedef struct coro_alloc {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
} coro_alloc_t;

/* CORO_NODISCARD: on every awaitable constructor.  A constructor may
 * already complete the operation (coro_chan_recv takes an item, coro_read
 * reads: see coro_await_t), so an awaitable discarded as a statement may
 * have consumed data that is then lost: a mistake the compiler reports.  C++17 [[nodiscard]]; GCC/Clang warn_unused_result in C;
 * nothing elsewhere.  Define CORO_NODISCARD before the first include to
 * override it. */
#ifndef CORO_NODISCARD
# if defined(__cplusplus) && __cplusplus >= 201703L
#  define CORO_NODISCARD [[nodiscard]]
# elif defined(__GNUC__) || defined(__clang__)
#  define CORO_NODISCARD __attribute__((warn_unused_result))
# else
#  define CORO_NODISCARD
# endif
#endif

/* CORO_DEPRECATED(msg): on an old name kept for compatibility; a use
 * warns with msg (an error under -Werror), the symbol is still exported.
 * C++14 and later [[deprecated]]; GCC/Clang deprecated("msg") in C;
 * nothing elsewhere.  Define CORO_DEPRECATED(msg) (empty, to silence it)
 * before the first include to override it. */
#ifndef CORO_DEPRECATED
# if defined(__cplusplus) && __cplusplus >= 201402L
#  define CORO_DEPRECATED(msg) [[deprecated(msg)]]
# elif defined(__GNUC__) || defined(__clang__)
#  define CORO_DEPRECATED(msg) __attribute__((deprecated(msg)))
# else
#  define CORO_DEPRECATED(msg)
# endif
#endif

/* A coroutine body.  Its int return value is the library's business: only
 * the macros below produce it (distinctive status words, so that a plain
 * `return 7;` or `return 0;` in a body is caught: the worker aborts with a
 * message naming the body instead of crashing inside the library). */
typedef int (*coro_fn)(coro_t *co);

struct coro_await_ops;      /* private: lib/sched/sched.h */

/* One argument slot of an awaitable. */
typedef union coro_arg {
    intptr_t i;
    void *p;
    const void *cp;
    int64_t t;
} coro_arg_t;

/* An awaitable: a small value built by a coro_* constructor (coro_call,
 * coro_done, coro_read, coro_sleep, ...) and consumed by CORO_AWAIT.
 *
 * What a constructor does at once, on the calling thread: the part of the
 * operation that cannot block.  The sync ones and coro_select try the
 * operation (coro_chan_recv takes an item that is there, coro_chan_send
 * puts its item where there is room, coro_sem_acquire takes a unit, a
 * select takes its first ready branch); the I/O ones make their system
 * call (coro_read reads, coro_accept accepts); coro_done, coro_done_timeout
 * and coro_group_wait look whether the wait is over.  What completes there is the awaitable's result, and
 * CORO_AWAIT then continues without suspending.  Nothing ever waits, parks,
 * registers or sleeps before CORO_AWAIT consumes the awaitable, and
 * coro_call, coro_blocking, coro_mutex_lock and coro_reschedule do all
 * their work at the await.  So build each awaitable inside CORO_AWAIT and
 * await it exactly once: one built and dropped may have taken an item, a
 * unit, a connection or bytes, which are then lost.
 *
 * An awaitable whose ops is NULL has already completed; its result is in
 * arg[0].i.  Build them with the constructors only. */
typedef struct coro_await {
    const struct coro_await_ops *ops;   /* private */
    coro_arg_t arg[3];                  /* private */
    int64_t timeout;                    /* private: ns, CORO_FOREVER = -1 */
} coro_await_t;

/* The frame header.  Embed it as a member named `co` of the frame struct
 * and zero it before the first spawn (static storage, calloc, `= {0}`);
 * after that corokit keeps it consistent, and a finished frame may be
 * spawned again.  Its layout is public so that it can be embedded; read
 * only what is marked read-only, through the macros. */
struct coro {
    uintptr_t resume;           /* private: resume point, 0 = start */
    intptr_t result;            /* read-only: CORO_RESULT / final result */
    coro_fn fn;                 /* private: the body */
    union {
        coro_t *parent;         /* private: a coro_call child's caller frame */
        coro_t *top;            /* private: a job's innermost frame */
    };
    /* A generator's frame (gen.h) is never a job: it keeps its own state
     * in fields a job uses for its joiners, scheduler and queues (the
     * union names gen_*: private, read by gen.h's inline coro_gen_next). */
    union {
        coro_t *joiner;         /* private: the first job awaiting this one */
        coro_t *gen_leaf;       /* private: a generator's innermost frame */
    };
    union {
        coro_sched_t *sched;    /* private: owning scheduler */
        uintptr_t gen_run;      /* private: who runs a generator now */
    };
    union {
        coro_t *next;           /* private: intrusive link (queues, waits) */
        coro_t *gen_root;       /* private: the outermost generator it runs for */
    };
    union {
        void (*on_exit)(coro_t *);  /* private: from coro_spawn_opts_t */
        struct coro__ext *ext;      /* private: with flag CORO__FL_EXT */
    };
    coro_await_t aw;            /* private: pending awaitable */
    uint32_t state;             /* private: atomic state word */
    uint16_t cls;               /* private: affinity class index */
    int8_t prio;                /* private: CORO_PRIO_* */
    uint8_t flags;              /* private */
    void *wait_obj;             /* private: what it waits on in the parking lot */
    uint32_t wait_slot;         /* private: a lot timer's slot (home worker and handle,
                                 * + 1), or the joiner registry's index */
    union {
        uint32_t reserved;      /* reserved for growth (a job's) */
        uint32_t gen_st;        /* private: a generator's status bits */
    };
};

/* A compile-time check that reads the same in C11 and C++11 and later. */
#ifdef __cplusplus
# define CORO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
# define CORO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#if defined(__x86_64__) || defined(__aarch64__)
CORO_STATIC_ASSERT(sizeof(struct coro) == 128, "coro_t must stay 128 bytes on LP64");
#endif
CORO_STATIC_ASSERT(sizeof(struct coro) <= 128, "coro_t must be at most 128 bytes");

/* TIME.  One convention for every call: a time is int64_t nanoseconds.
 * A timeout (every parameter named timeout_ns) is relative: CORO_FOREVER
 * waits without limit, 0 polls once, > 0 waits at most that long, and any
 * other negative value is refused with -EINVAL.  A deadline (every
 * parameter named deadline_ns, the `_until` forms, coro_spawn_opts_t
 * .deadline) is absolute, on coro_now()'s clock (CLOCK_MONOTONIC, or a
 * .virtual_time scheduler's clock inside its jobs); CORO_NO_DEADLINE
 * means none - it is 0, so that a zeroed options struct has no deadline -
 * a deadline already past completes at once, and a negative one is
 * -EINVAL.  The config's durations are in ns too (fields ending in _ns). */
#define CORO_FOREVER ((int64_t)-1)
#define CORO_NO_DEADLINE ((int64_t)0)

/* ---- the body macros -------------------------------------------------- */

/* The user's frame from its embedded header (a member named `co`), given
 * a pointer to that header under any name.  The parameter is not called
 * co: offsetof must name the member `co`, not the caller's variable. */
#define CORO_SELF(hdr, type) ((type *)(void *)((char *)(hdr) - offsetof(type, co)))

/* The intptr_t result of the last await: a value >= 0 on success, -errno
 * on failure. */
#define CORO_RESULT(co) ((co)->result)

/* Status words a body returns to the scheduler (private).  Not 0, 1, 2:
 * a stray plain `return` in a body returns some other int, which the worker
 * refuses (it aborts naming the body) instead of crashing in the library. */
#define CORO__ST_DONE  0x436b0d00   /* "Ck" + 0d00 */
#define CORO__ST_YIELD 0x436b0d01
#define CORO__ST_AWAIT 0x436b0d02
#define CORO__ST_VALUE 0x436b0d03   /* CORO_YIELD_VALUE (gen.h) */
#define CORO__ST_FROM  0x436b0d04   /* CORO_YIELD_FROM (gen.h) */

/* Quiet -Wpedantic inside the macros of the labels back end (a GNU
 * extension the user chose by not defining CORO_USE_SWITCH).  __extension__
 * covers the label addresses; `goto *` is a statement, so the pragma. */
#if defined(__GNUC__) || defined(__clang__)     /* clang reads GCC pragmas */
# define CORO__PEDANTIC_OFF_ _Pragma("GCC diagnostic push") \
    _Pragma("GCC diagnostic ignored \"-Wpedantic\"")
# define CORO__PEDANTIC_ON_ _Pragma("GCC diagnostic pop")
#else
# define CORO__PEDANTIC_OFF_
# define CORO__PEDANTIC_ON_
#endif

#define CORO__CAT_(a, b) a##b
#define CORO__CAT(a, b) CORO__CAT_(a, b)

#if defined(__COUNTER__)
# define CORO__ID __COUNTER__
#else
# define CORO__ID __LINE__      /* two awaits on one line: duplicate case error */
#endif

/* Strict ISO C++ (-std=c++17, which defines __STRICT_ANSI__) has no
 * labels-as-values: such a translation unit gets the switch back end, so
 * the macros compile under -pedantic.  Each body is compiled by one
 * translation unit, so translation units may use different back ends. */
#if defined(__cplusplus) && defined(__STRICT_ANSI__) && !defined(CORO_USE_SWITCH)
# define CORO_USE_SWITCH 1
#endif

/* CORO_BEGIN jumps (never, at run time) to a label only CORO_END defines,
 * so that a body without CORO_END names its mistake.  C only: in C++ that
 * goto would cross the body's initialised declarations. */
#ifdef __cplusplus
# define CORO__END_CHECK_
# define CORO__END_LABEL_
#else
# define CORO__END_CHECK_ goto coro__this_body_lacks_CORO_END__;
# define CORO__END_LABEL_ coro__this_body_lacks_CORO_END__:
#endif

/* CORO_BEGIN declares this name and every suspending macro (CORO_AWAIT,
 * CORO_YIELD, CORO_SELECT) names it, so a suspension outside a body - in a
 * helper called by a body, which would save a resume point into a function
 * that is not the body and return a status word as the helper's value -
 * fails to compile on both back ends, with this name in the message.  An
 * enumeration constant: no storage, nothing for a case label to jump over. */
#define CORO__BODY_MARK_ enum { coro__await_outside_a_coroutine_body__ = 0 };
#define CORO__IN_BODY_ ((void)coro__await_outside_a_coroutine_body__)

#if !defined(CORO_USE_SWITCH) && (defined(__GNUC__) || defined(__clang__))
# define CORO_BACKEND_LABELS 1
# define CORO_BACKEND_NAME "labels"
/* Resume points are label addresses stored as uintptr_t (a void * draws a
 * false -Wdangling-pointer from gcc 12). */
# define CORO_BEGIN(co)                                                     \
    if ((co)->resume) {                                                     \
        CORO__PEDANTIC_OFF_                                                 \
        goto *(void *)(co)->resume;                                         \
        CORO__PEDANTIC_ON_                                                  \
    }                                                                       \
    if (0) {                                                                \
        (co)->resume = (uintptr_t)(__extension__ &&coro__begin__);          \
        CORO__END_CHECK_                                                    \
    }                                                                       \
    coro__begin__:;                                                         \
    {                                                                       \
    CORO__BODY_MARK_
# define CORO__SAVE_(co, n)                                                 \
    (co)->resume = (uintptr_t)(__extension__ &&CORO__CAT(coro__l_, n))
# define CORO__MARK_(co, n) CORO__CAT(coro__l_, n):;
# define CORO__END_BLOCK_ }
#else
# define CORO_BACKEND_SWITCH 1
# define CORO_BACKEND_NAME "switch"
# define CORO_BEGIN(co)                                                     \
    switch ((co)->resume) {                                                 \
    case 0:                                                                 \
        if (0) {                                                            \
            CORO__END_CHECK_                                                \
        }                                                                   \
        CORO__BODY_MARK_
# define CORO__SAVE_(co, n) (co)->resume = (uintptr_t)(n) + 1
# define CORO__MARK_(co, n) case (n) + 1:;
# define CORO__END_BLOCK_ }
#endif

#define CORO__SUSPEND_(co, st, n)                                           \
    do {                                                                    \
        CORO__IN_BODY_;                                                     \
        CORO__SAVE_(co, n);                                                 \
        return (st);                                                        \
        CORO__MARK_(co, n)                                                  \
    } while (0)

/* Close the body.  Falling off CORO_END finishes the job with result 0.
 * A body without CORO_END fails to compile: besides the unclosed brace,
 * "label 'coro__this_body_lacks_CORO_END__' used but not defined". */
#define CORO_END(co)                                                        \
    CORO__END_BLOCK_                                                        \
    CORO__END_LABEL_                                                        \
    (co)->result = 0;                                                       \
    return CORO__ST_DONE

/* Finish with intptr_t result v (a coroutine never uses plain `return`). */
#define CORO_RETURN(co, v)                                                  \
    do {                                                                    \
        (co)->result = (intptr_t)(v);                                       \
        return CORO__ST_DONE;                                               \
    } while (0)

/* Let the other ready jobs of this worker run first: the job goes to the
 * back of its worker's queue, at its priority. */
#define CORO_YIELD(co) CORO__SUSPEND_(co, CORO__ST_YIELD, CORO__ID)

/* Suspend until awaitable a completes; then CORO_RESULT(co) holds its
 * result.  An awaitable that is already complete does not suspend. */
#define CORO_AWAIT(co, a) CORO__AWAIT_(co, a, CORO__ID)
#define CORO__AWAIT_(co, a, n)                                              \
    do {                                                                    \
        CORO__IN_BODY_;                                                     \
        (co)->aw = (a);                                                     \
        if ((co)->aw.ops == NULL) {                                         \
            (co)->result = (co)->aw.arg[0].i;                               \
            break;                                                          \
        }                                                                   \
        CORO__SAVE_(co, n);                                                 \
        return CORO__ST_AWAIT;                                              \
        CORO__MARK_(co, n)                                                  \
    } while (0)

/* ---- core awaitables ---------------------------------------------------- */

/* coro_call - awaitable: run child (a zeroed or finished frame) with body
 * fn now, on this thread, as a nested call.  When the child finishes the
 * caller continues at once, with no trip through a queue; result = the
 * child's return value.  A child that awaits suspends the whole job, and
 * on wake-up only the innermost child is resumed: resuming costs the same
 * at any depth and no depth grows the C stack.  Completes at once with
 * -EINVAL for a NULL child or fn, -EBUSY when child is live (the frame is
 * claimed with one CAS: of two jobs calling one idle frame at once, one
 * runs it and the other gets -EBUSY); -ECANCELED when the job is cancelled
 * (CORO_CANCEL) while the child waits: the child sees it first. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_call(coro_t *child, coro_fn fn);

/* coro_done - awaitable: wait until spawned job finishes; result = its
 * return value, which shares the await's result with the errors below:
 * for a job that may return a negative value, await coro_done_timeout
 * (job, &result, CORO_FOREVER), which keeps the two apart.  coro_done is
 * the form for fork-join over results that are never negative (the
 * awaiter waits in the job's joiner slot, without the parking lot).  Any number of jobs may await the same job.  Completes at
 * once when job has already finished (with its result), with -EINVAL for a
 * NULL or never-spawned frame, and with -EDEADLK when a job awaits itself.
 * Under coro_sched_shutdown(CORO_CANCEL) of the awaiter's scheduler it
 * completes with -ECANCELED if job has not finished (also when jobs await
 * each other).  The job's frame must stay valid until its awaiters resume
 * (do not free it in on_exit while others wait for it). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_done(coro_t *job);

/* coro_done_timeout - awaitable: coro_done for at most timeout_ns
 * (CORO_FOREVER = no limit, 0 = just look), keeping the job's result apart
 * from the await's: 0 and *result = job's result (negative or not);
 * -ETIMEDOUT (the job goes on); -ECANCELED (the awaiter was cancelled:
 * coro_cancel, CORO_CANCEL); -ENOMEM (no memory for its timer);
 * -EINVAL (job or result NULL, timeout_ns < CORO_FOREVER, a
 * never-spawned frame); -EDEADLK (a job awaits itself).  *result is
 * written only with 0 and must stay valid until the await completes (keep
 * it in the frame).  The job's frame must stay valid until the awaiter
 * resumed. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_done_timeout(coro_t *job, intptr_t *result, int64_t timeout_ns);

/* coro_reschedule - awaitable: continue on a worker whose CPU is in aff
 * (NULL = any CPU) at priority prio (CORO_PRIO_LOW/NORMAL/HIGH), as Coop's
 * suspend(mask, prio).  The job goes to the back of that queue; it keeps the
 * new mask and priority afterwards.  Result 0, or -EINVAL (empty mask, mask
 * with no worker's CPU, bad priority, not called from a job), -ENOMEM (the
 * table of distinct masks is full), -ECANCELED (the job was cancelled while
 * it waited for its new worker).  The mask is
 * read when the awaitable is built: aff may point to a local. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_reschedule(const coro_cpuset_t *aff, int prio);

/* coro_ready - awaitable that is already complete with result r (handy
 * in coro_select arrays and in tests). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_ready(intptr_t r);

#ifdef __cplusplus
}
#endif
#endif
