/* SPDX-License-Identifier: MIT */
/* coro_spawn: the checks of its arguments and options, the claim of the
 * frame, the job's unit of the live count (the protocol is runtime.c's
 * SHUTDOWN), its words and its submit; and the worker's short paths for a
 * fork's hooked children (SPAWNING WITH A HOOK) and a fresh pool frame
 * (SPAWNING A FRESH FRAME).
 *
 * SPARE UNITS.  A worker holds units of live that belong to no job
 * (w->spare): the unit of a job that finished on it, and units it added
 * ahead, CORO__LIVE_BATCH at a time, for the jobs it spawns.  A spawn on a
 * worker takes a spare unit when it has one and s->closed looks clear -
 * no RMW: the unit is in the count already, so the job counted before any
 * close that comes later, and shutdown waits for it; a spawn that sees
 * closed set goes through the RMW and fails.  Spares only ever make live
 * larger than the jobs alive, never smaller, so no shutdown returns while a
 * job lives.  A worker gives its spares back above 2 * CORO__LIVE_BATCH
 * (down to one batch), all of them before it parks, and all at every
 * finish once s->closed is set, so a drain is never held up by them: the
 * last finishes before the drain ends happen on workers that then either
 * see closed or park (tools/model/shutdown.pml).
 */
#include <sched.h>
#include <string.h>

#include "sched/frame.h"
#include "rt/rt.h"
#include "sched/trace.h"

/* adds n to the live count unless it is closed (undone then: false).
 * acq_rel on the live word: ordered against shutdown's RMW (runtime.c SHUTDOWN) */
static bool add_live(coro_sched_t *s, uint32_t n)
{
    if (!(__atomic_fetch_add(&s->live, n, __ATOMIC_ACQ_REL) & CORO__LIVE_CLOSED))
        return true;
    coro__live_sub(&s->live, n);
    return false;
}

/* counts a new job in s->live; false once the scheduler is closed.  On a
 * worker, from its spare units (SPARE UNITS): a unit already in the count
 * changes owner, no RMW; with none left it adds a batch at once */
static inline __attribute__((always_inline)) bool count_live(coro_sched_t *s)
{
    struct coro__worker *w = coro__tls_worker;

    /* relaxed closed: a stale "open" takes a unit that is in the count
     * already, so the job counted before the close (SPARE UNITS) */
    if (w && w->s == s && s->nworkers > 0 && !__atomic_load_n(&s->closed, __ATOMIC_RELAXED)) {
        if (CORO__LIKELY(w->spare)) {
            /* owner-only; atomic store for coro_sched_stats' racy read */
            __atomic_store_n(&w->spare, w->spare - 1, __ATOMIC_RELAXED);
            return true;
        }
        if (add_live(s, CORO__LIVE_BATCH)) {
            __atomic_store_n(&w->spare, CORO__LIVE_BATCH - 1, __ATOMIC_RELAXED);
            return true;
        }
        return false;
    }
    return add_live(s, 1);
}

/* a spawned job's words, before its submit publishes it (spawn_ and the
 * fresh frame's path alike; only this thread writes them until then) */
static inline __attribute__((always_inline)) void job_words(coro_t *co, coro_fn fn, coro_sched_t *s,
                                                            void (*on_exit)(coro_t *), int cls,
                                                            int prio, uint8_t flags)
{
    co->fn = fn;
    co->resume = 0;
    co->result = 0;
    co->top = co;
    co->sched = s;
    co->next = NULL;
    co->on_exit = on_exit;
    co->cls = (uint16_t)cls;
    co->prio = (int8_t)prio;
    co->flags = flags;
    co->wait_obj = NULL;
}

/* spawn_'s steps, inlined in each of its copies */

/* coro_spawn's checks of the priority, the frame (a pool frame: of this
 * scheduler, allocated, not spawned yet; *pool and *pool_st as
 * coro__frame_check sets them), the affinity (its class into *cls), the
 * deadline and the exit hooks.  0 or the error */
static inline __attribute__((always_inline)) int spawn_check(coro_sched_t *s, coro_t *co,
                                                             const coro_spawn_opts_t *opts,
                                                             int prio, int *cls, int *pool,
                                                             uint8_t **pool_st)
{
    if (prio < CORO_PRIO_LOW || prio > CORO_PRIO_HIGH)
        return -EINVAL;
    if ((*pool = coro__frame_check(s, co, pool_st)) < 0)
        return *pool;
    if (opts && opts->affinity && (*cls = coro__affinity_intern(s, opts->affinity)) < 0)
        return *cls;
    if (opts && (opts->deadline < 0 || (opts->on_exit && opts->on_exit_with)))
        return -EINVAL;
    return 0;
}

/* the job's ext when its options need one (a deadline, a group, a name,
 * an on_exit_with hook); NULL when out of memory */
static struct coro__ext *ext_new(coro_sched_t *s, coro_t *co, const coro_spawn_opts_t *opts)
{
    struct coro__ext *x = coro__alloc(s, sizeof *x);

    if (!x)
        return NULL;
    memset(x, 0, sizeof *x);
    x->on_exit = opts->on_exit;
    x->on_exit_with = opts->on_exit_with;
    x->on_exit_ctx = opts->on_exit_ctx;
    x->deadline = opts->deadline;
    x->group = opts->group;
    x->job = co;
    x->name = opts->name;
    return x;
}

/* claim the frame: only an idle or finished frame may start, and a
 * finished one only once its finisher let go (EXITING).  set: the state
 * the claim stores.  True with *oldp the state it replaced; false when
 * the frame is busy */
static inline __attribute__((always_inline)) bool claim_frame(coro_t *co, uint32_t set,
                                                              uint32_t *oldp)
{
    /* acquire: the frame's previous life (its finisher's release) is
     * over; the CAS makes one of two racing spawns win */
    uint32_t old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t st = old & CORO__S_MASK;
        if (st == CORO__S_DONE && (old & CORO__F_EXITING) && !(old & CORO__JOINERS_MASK) &&
            !coro__exiting_here(co)) {
            /* finished, its finisher between its CAS and its last touch
             * (rt/finish.c, NO TOUCH AFTER THE WAKE): a thread that saw
             * DONE may spawn it again.  Wait for the finisher to let go (a
             * few instructions; a thread-joined frame's on_exit at most),
             * then look again.  acquire: as the load above */
            for (unsigned spin = 0; (old = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE)) &
                                    CORO__F_EXITING; spin++)
                if (spin > 64)
                    sched_yield();
            continue;
        }
        if ((st != CORO__S_IDLE && st != CORO__S_DONE) ||
            (old & (CORO__F_EXITING | CORO__JOINERS_MASK)))
            return false;
        /* acq_rel: claims the frame against a racing spawn, coro_call or
         * joiner (one CAS wins); acquire pairs with the finisher's release
         * of EXITING (its last touch of the frame happened before) */
        if (__atomic_compare_exchange_n(&co->state, &old, set, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *oldp = old;
            return true;
        }
    }
}

/* the scheduler closed after the claim: give the frame back as it was
 * (old, its state before the claim); a joiner that came meanwhile sees it
 * (acq_rel) and is woken */
static void unclaim_frame(coro_sched_t *s, coro_t *co, uint32_t old)
{
    uint32_t prev = __atomic_exchange_n(&co->state, old & CORO__S_MASK, __ATOMIC_ACQ_REL);
    if (prev & CORO__F_THREAD_JOIN)
        coro__thread_joiners_wake(s, co);
}

/* the job, its words written, to its queue */
static inline __attribute__((always_inline)) void submit_new(coro_sched_t *s, coro_t *co)
{
    struct coro__worker *w = coro__tls_worker;

    if (CORO__LIKELY(w && w->s == s)) {
        coro__submit_spawned(s, co);
    } else {
        /* from outside: the job may run and end, and destroy free s,
         * before the notify after the push is done with s (sched/pin.c) */
        int tok = coro__pin_owned(s);
        coro__submit_spawned(s, co);
        coro__unpin(tok);
    }
}

/* coro_spawn's body; plain is a constant: the compiler makes one copy for
 * spawns without options (the usual case: no option to read or check) and
 * one for the rest */
static inline __attribute__((always_inline)) int spawn_(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                        const coro_spawn_opts_t *opts,
                                                        const bool plain, const uint32_t pin)
{
    if (plain)
        opts = NULL;
    int prio = opts ? opts->priority : CORO_PRIO_NORMAL;
    int cls = 0, pool, rc;
    uint8_t *pool_st = NULL;
    uint32_t old;

    if ((rc = spawn_check(s, co, opts, prio, &cls, &pool, &pool_st)) < 0)
        return rc;
    struct coro__ext *x = NULL;
    if (opts && (opts->deadline > 0 || opts->group || opts->name || opts->on_exit_with) &&
        !(x = ext_new(s, co, opts)))
        return -ENOMEM;
    if (!claim_frame(co, CORO__S_READY | (pool ? CORO__F_POOL : 0) | pin, &old)) {
        if (x)
            coro__free(s, x, sizeof *x);
        return -EBUSY;
    }
    if (!count_live(s)) {
        unclaim_frame(s, co, old);
        if (x)
            coro__free(s, x, sizeof *x);
        return -ESHUTDOWN;      /* a pool frame stays the caller's: coro_frame_free */
    }
    if (pool)
        coro__frame_mark_spawned(pool_st);
    job_words(co, fn, s, opts ? opts->on_exit : NULL, cls, prio, pool == 2 ? CORO__FL_SMALL : 0);
    if (x) {
        co->ext = x;
        co->flags |= CORO__FL_EXT;
        if (x->group)
            coro__group_join(x->group, x);
    }
    coro__trace_spawn(s, co);
    submit_new(s, co);
    return 0;
}

/* spawns with options, and pinned ones (pin: the state bits the claim
 * sets beside READY) */
static __attribute__((noinline)) int spawn_opts(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                const coro_spawn_opts_t *opts, uint32_t pin)
{
    return spawn_(s, co, fn, opts, false, pin);
}

/* spawns without options: spawn_'s copy for them */
static __attribute__((noinline)) int spawn_plain(coro_sched_t *s, coro_t *co, coro_fn fn)
{
    return spawn_(s, co, fn, NULL, true, 0);
}

/* the end of the worker's short spawn paths (SPAWNING WITH A HOOK, A
 * FRESH FRAME), once their CAS claimed co: count_live's usual case (a
 * spare unit changes owner), the pool's spawned mark (pool_st, NULL for a
 * caller's frame), the job's words, the submit.  Inlined in each, which
 * keep their own registers */
static inline __attribute__((always_inline)) int spawned_here(struct coro__worker *w,
                                                              coro_sched_t *s, coro_t *co,
                                                              coro_fn fn,
                                                              void (*on_exit)(coro_t *),
                                                              uint32_t spare, uint8_t *pool_st,
                                                              uint8_t flags)
{
    /* owner-only; atomic store for coro_sched_stats' racy read */
    __atomic_store_n(&w->spare, spare - 1, __ATOMIC_RELAXED);
    if (pool_st)
        coro__frame_mark_spawned(pool_st);
    job_words(co, fn, s, on_exit, 0, CORO_PRIO_NORMAL, flags);
    if (!coro__submit_spawned_lifo(w, s, co))
        coro__submit(s, co, false);
    return 0;
}

/* SPAWNING WITH A HOOK.  A fork's children are often spawned with an
 * on_exit hook and nothing else (the hook frees the block the children's
 * frames share), from a worker of s that has a spare unit in hand.  Then
 * spawn_'s option checks have one answer each (NORMAL, class 0, no ext),
 * and its claim, count and submit reduce to the fresh frame's below: this
 * path checks, claims the frame with spawn_'s CAS (from IDLE or DONE, with
 * no finisher or thread joiner still holding it: anything else fails the
 * CAS or the look before it and goes the long way), takes the spare unit
 * and submits, without spawn_'s register saves.  Anything else (other
 * options, no spare, closing, the trace on, a pool frame that is not this
 * one's to spawn) is spawn_'s, whole.  coro_spawn with options jumps
 * here first: inlined there, its calls would cost the fresh frame's path
 * the register saves that path avoids. */
static __attribute__((noinline)) int spawn_hooked(coro_sched_t *s, coro_t *co, coro_fn fn,
                                                  const coro_spawn_opts_t *opts)
{
    struct coro__worker *w = coro__tls_worker;
    uint8_t *pool_st = NULL;
    int pool;

    if (!s || !co || !fn)
        return -EINVAL;
    if (!w || w->s != s || opts->priority != CORO_PRIO_NORMAL || opts->affinity ||
        opts->deadline || opts->group || opts->name || opts->on_exit_with || !w->spare || s->nworkers == 0 || s->trace ||
        /* relaxed: as count_live's */
        __atomic_load_n(&s->closed, __ATOMIC_RELAXED) || (pool = coro__frame_check(s, co, &pool_st)) < 0)
        return spawn_opts(s, co, fn, opts, 0);
    /* relaxed: the CAS below acquires (spawn_'s claim) */
    uint32_t old = __atomic_load_n(&co->state, __ATOMIC_RELAXED);
    uint32_t st = old & CORO__S_MASK;
    if ((st != CORO__S_IDLE && st != CORO__S_DONE) || (old & (CORO__F_EXITING | CORO__JOINERS_MASK)))
        return spawn_opts(s, co, fn, opts, 0);
    /* read before the CAS: after its acquire the compiler would read it
     * again, though only this thread writes it */
    uint32_t spare = w->spare;
    /* acq_rel, as spawn_'s claim: one of two racing spawns wins, and the
     * frame's previous life (its finisher's release) is over */
    if (!__atomic_compare_exchange_n(&co->state, &old, CORO__S_READY | (pool ? CORO__F_POOL : 0),
                                     false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return spawn_opts(s, co, fn, opts, 0);
    return spawned_here(w, s, co, fn, opts->on_exit, spare, pool ? pool_st : NULL,
                        pool == 2 ? CORO__FL_SMALL : 0);
}

/* SPAWNING A FRESH FRAME.  A worker's usual spawn is of the pool frame it
 * has just allocated (FRESH, lib/sched/frame_slab.c), without options, with
 * a spare unit of the live count in hand: a chain's next link, a fork's
 * children.  Every answer spawn_ would look up is known then: the state
 * byte says allocated and not spawned (2: a small slab), the state word is
 * still the zero coro_frame_alloc wrote (no spawn, call or join has
 * touched it: anything else fails the CAS below and goes the long way),
 * the job is NORMAL, class 0, with no ext.  So this path only checks, then
 * claims the frame with the same CAS (a racing spawn of the same frame from
 * another thread still meets exactly one winner), and submits: in the
 * usual case a store to the LIFO slot, else a call to coro__submit as its
 * last act: no register to save.
 * Anything it does not know - options, another frame, no spare unit, the
 * scheduler closing, the trace on - is spawn_'s, whole. */
int coro_spawn(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    struct coro__worker *w = coro__tls_worker;

    if (opts)
        return spawn_hooked(s, co, fn, opts);
    if (CORO__LIKELY(co && (void *)co == coro__fresh.frame && fn && w && w->s == s &&
                     w->spare && s->nworkers > 0 && !s->trace &&
                     /* relaxed: as count_live's */
                     !__atomic_load_n(&s->closed, __ATOMIC_RELAXED) &&
                     /* relaxed: the owner wrote it (coro__frame_check) */
                     __atomic_load_n(coro__fresh.st, __ATOMIC_RELAXED) == CORO__FRAME_ALLOC)) {
        uint32_t idle = CORO__S_IDLE;
        /* read before the CAS: after its acquire the compiler would read
         * them again, though only this thread writes them */
        uint32_t spare = w->spare;
        uint8_t *st = coro__fresh.st;
        /* acq_rel, as spawn_'s claim (one of two racing spawns wins) */
        if (CORO__LIKELY(__atomic_compare_exchange_n(&co->state, &idle,
                                                     CORO__S_READY | CORO__F_POOL, false,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))) {
            return spawned_here(w, s, co, fn, NULL, spare, st, CORO__FL_SMALL);
        }
    }
    if (!s || !co || !fn)
        return -EINVAL;
    return spawn_plain(s, co, fn);
}

int coro__spawn_pinned(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts)
{
    if (!s || !co || !fn)
        return -EINVAL;
    return spawn_opts(s, co, fn, opts, CORO__JOINER_ONE);
}
