/* SPDX-License-Identifier: MIT */
/* Running a job: the step loop (a body's steps until it suspends, yields
 * or finishes), its diagnostics (config .stall_ns, .histograms), the job
 * after a step that filled the LIFO slot (CONTINUING), and the child a
 * step awaits that runs inside it (JOINING INLINE).
 *
 * BUDGET AND CANCEL.  A job gets CORO__BUDGET (128) awaits that complete at
 * once per run; the next one (coro__complete) travels as a yield carrying
 * its result, so a job whose operations are always ready still lets the
 * others run.  Under CORO_CANCEL an await that has not completed returns
 * -ECANCELED before it is armed, but that yield is never rewritten: its
 * operation (an item received, bytes read, an fd accepted) already
 * happened, and a completed operation keeps its result.  coro_cancel(job)
 * (flag CORO__F_CANCEL in the state word) does the same for one job.  So
 * that a job whose operations always complete at once still sees its
 * cancel, the I/O constructors ask coro__cancel_due (sched/await.c) once
 * the budget is spent, and complete with -ECANCELED before their call.
 */
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/worker.h"

/* coro__trace_step with the trace's look here: the compiler keeps the
 * step loop's calls of it out of line, and a call with five arguments at
 * every step's end costs the steps of an untraced program */
static inline __attribute__((always_inline)) void trace_step(struct coro__worker *w, coro_t *job,
                                                             uint64_t *t0, unsigned why,
                                                             const coro_await_t *aw)
{
    if (CORO__UNLIKELY(w->trace_ring))
        coro__trace_step(w, job, t0, why, aw);
}

/* a step moves the job's innermost frame (a call, a generator's value,
 * end or link).  relaxed: coro_cancel reads it (wait/done.c) after its CAS
 * saw the job SUSPENDED while this worker still arms an await that then
 * completes at once; what it reads there only picks the wait to cancel,
 * which the state word's RMWs order */
static inline void set_top(coro_t *job, coro_t *f)
{
    __atomic_store_n(&job->top, f, __ATOMIC_RELAXED);
}

/* A body returned an int that no macro produces: a plain `return` in the
 * body (coro.h's status words are distinctive for this).  Refuse it here,
 * naming the body, rather than read a stale or NULL awaitable below.  The
 * name comes from the lookup coro_sched_dump uses (base/symbol.c: the
 * dynamic symbol table, else the object's own, which names a static body
 * of an unstripped program); the object and offset too, for addr2line. */
__attribute__((noreturn, noinline, cold))
void coro__bad_body(const coro_t *cur, int st)
{
    Dl_info di;
    void *fn = (void *)(uintptr_t)cur->fn;
    const char *obj = "?";
    char buf[256];
    const char *name = coro__sym_name(fn, buf, sizeof buf);
    uintptr_t off = (uintptr_t)fn;

    if (dladdr(fn, &di)) {
        if (di.dli_fname)
            obj = di.dli_fname;
        off = (uintptr_t)fn - (uintptr_t)di.dli_fbase;
    }
    bool gen = st == CORO__ST_VALUE || st == CORO__ST_FROM;
    fprintf(stderr,
            "corokit: coroutine body %s (%p, %s+0x%jx: addr2line -f -e %s 0x%jx) returned %d: %s\n",
            name ? name : "?", fn, obj, (uintmax_t)off, obj, (uintmax_t)off, st,
            gen ? "CORO_YIELD_VALUE or CORO_YIELD_FROM outside a generator's body "
                  "(a job's or a coro_call child's: make it a generator with coro_gen_init)"
                : "a body ends with CORO_END or CORO_RETURN, never a plain return");
    abort();
}

/* ---- diagnostics of a step (config .stall_ns, .histograms) ----------------- */

static inline void hist_inc(uint64_t *h, int64_t ns)
{
    stat_inc(&h[coro__hist_bucket(ns)]);
}

/* the step of job begins on w: returns its start (ns) */
static int64_t diag_begin(struct coro__worker *w, coro_t *job)
{
    coro_sched_t *s = w->s;
    int64_t t0 = coro__now();

    if (s->hist) {
        /* the ready stamp coro__submit left (64 ns units, wraps after
         * 274 s: an older stamp reads as a shorter wait) */
        uint32_t now_u = (uint32_t)((uint64_t)t0 >> CORO__READY_SHIFT);
        int64_t age = (int64_t)(uint32_t)(now_u - job->reserved) << CORO__READY_SHIFT;
        hist_inc(w->h_ready[CORO__PRIO_IDX(job->prio)], age);
        if (job->flags & CORO__FL_IOWAKE)
            hist_inc(w->h_io, age);
    }
    /* relaxed: read racily by coro_sched_dump, for display only */
    __atomic_store_n(&w->cur_t0, t0, __ATOMIC_RELAXED);
    return t0;
}

/* the body returned, the job is still ours: report a stall once per step */
static inline void diag_check(struct coro__worker *w, coro_t *job, coro_fn fn, int64_t t0,
                              bool *stalled)
{
    coro_sched_t *s = w->s;
    if (s->stall_ns > 0 && !*stalled) {
        int64_t d = coro__now() - t0;
        if (d > s->stall_ns) {
            *stalled = true;
            stat_inc(&w->n_stalls);
            coro__stall_report(w, job, fn, d);
        }
    }
}

/* the step ended (the job may no longer be ours: not touched) */
static void diag_end(struct coro__worker *w, int64_t t0)
{
    if (w->s->hist)
        hist_inc(w->h_step, coro__now() - t0);
    __atomic_store_n(&w->cur_t0, 0, __ATOMIC_RELAXED);
}

/* CONTINUING.  A step that hands off one NORMAL job puts it in the LIFO
 * slot (coro__submit): the child a chain link spawned, the parent a finishing
 * child woke (its coro_done), the first child a fork spawned before it
 * awaits it.  The worker would pick it next anyway (coro__pop_level takes the
 * slot first while lifo_streak < CORO__LIFO_MAX), after a trip through
 * its loop, find_own_ and coro__pop_level that costs more than the job itself
 * when the job is small.  So coro__run_job takes it at once, as coro__pop_level
 * would, under the same bounds: the streak (its other queued jobs still
 * get a pick after CORO__LIFO_MAX runs from the slot; with none queued,
 * the slot runs again, as find_own_ then takes it), the tick of the
 * periodic look at the shared queues (find_own_: when it is due and a
 * NORMAL job waits there, the loop makes it), no HIGH or LOW job queued
 * where we look (PRIORITIES), no yielder kept aside (DEFERRED YIELDS),
 * and a step count that is not due for a look at epoll while a job waits
 * on an fd (BUSY LOOKS: the loop's coro__look_due makes it; a yield ends
 * the run with its own look).  A look due with nothing to find counts as
 * made (looks_idle).  The exchange still takes the
 * slot from thieves, who may have stolen it meanwhile.  Worker threads
 * only: the single-threaded driver counts each finished job itself
 * (rt/drive.c).  The step's end calls run_next only when it filled the
 * slot: a step that yielded or handed nothing off pays one comparison. */
/* the periodic look is due: anything NORMAL where it would look */
static bool shared_waiting(struct coro__worker *w)
{
    coro_sched_t *s = w->s;
    const int pi = CORO__PRIO_IDX(CORO_PRIO_NORMAL);

    /* relaxed: hints, as the look's own size reads */
    if (coro__sharedq_size(&coro__affinity_get(s, 0)->q[pi]) || coro__sharedq_size(&w->inbox[pi]) ||
        coro__localq_size(&w->yielded[pi]))
        return true;
    /* the submission rings on the map (RINGS): an empty one may stay
     * there until a park, so their sizes */
    uint64_t top = __atomic_load_n(&s->subring_top, __ATOMIC_ACQUIRE);
    while (top) {
        int k = __builtin_ctzll(top);
        top &= top - 1;
        /* acquire: the words' bits, then the entries (RINGS) */
        uint64_t bits = __atomic_load_n(&s->subring_bits[k], __ATOMIC_ACQUIRE);
        for (; bits; bits &= bits - 1)
            if (coro__localq_size(&subring_at(s, (unsigned)k * 64 + (unsigned)__builtin_ctzll(bits))->q))
                return true;
    }
    /* acquire: as pop_classes */
    uint32_t n = __atomic_load_n(&w->nserved, __ATOMIC_ACQUIRE);
    const uint16_t *served = __atomic_load_n(&w->served, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (coro__sharedq_size(&coro__affinity_get(s, served[i])->q[pi]))
            return true;
    return false;
}

/* CONTINUING and JOINING INLINE run a job without the worker's loop: the
 * looks the loop would make now (the periodic look at the shared queues,
 * the busy look at epoll) are due only when something waits there; with
 * nothing, they count as made.  False: something waits, the caller ends
 * its run and the loop looks */
static __attribute__((noinline)) bool looks_idle_slow(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (w->tick == 0) {
        if (shared_waiting(w))
            return false;
        w->tick = CORO__GLOBAL_INTERVAL;
    }
    if (s->io && (w->poll_steps <= 1 || w->poll_yield)) {
        if (w->poll_yield || coro__driver_waiting(s))
            return false;
        w->poll_steps = CORO__IO_POLL_STEPS;
    }
    return true;
}

static inline bool looks_idle(struct coro__worker *w)
{
    if (CORO__LIKELY(w->tick != 0 &&
                     (!w->s->io || (w->poll_steps > 1 && !w->poll_yield))))
        return true;    /* no look due */
    return looks_idle_slow(w);
}

static inline __attribute__((always_inline)) coro_t *take_next(struct coro__worker *w)
{
    coro_sched_t *s = w->s;

    if (w->lifo_run != w->n_run || w->deferred || s->nworkers == 0 || prio_queued(w))
        return NULL;
    /* the caller's seat stops at its root's end: the caller returns, and
     * leaves the rest to the workers (sched/seat.c, LEAVING) */
    if (CORO__UNLIKELY(w->seat_root != NULL) && seat_root_over(w->seat_root))
        return NULL;
    if (w->lifo_streak >= CORO__LIFO_MAX) {
        /* the bound gives the worker's other queued jobs a pick: with
         * none, the slot runs again (as find_own_ takes it then) */
        if (coro__localq_size(&w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)]) || shared_waiting(w))
            return NULL;
        w->lifo_streak = 0;
    }
    if (!looks_idle(w))
        return NULL;
    /* acq_rel: as coro__pop_level's exchange (the job's frame is complete) */
    coro_t *j = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL);
    if (!j)
        return NULL;    /* a thief took it */
    w->lifo_streak++;
    w->tick--;
    if (s->io)
        w->poll_steps--;
    return found_(w, j);
}

/* the job after a step that filled the LIFO slot (CONTINUING); done: the
 * step's job finished.  Returns what coro__run_job returns for the last
 * job run */
static bool run_next(struct coro__worker *w, bool done);

/* errno as the jobs run on this thread left it: put back before each step
 * of a body, so that no system call, futex or allocation of the library's
 * own between two steps shows through (a job that resumes on the thread
 * it left finds the errno it left) */
static __thread int tls_job_errno;
/* this thread's &errno, asked of libc once: a call per step otherwise
 * (__errno_location), on the path of every step */
static __thread int *tls_errp;

/* JOINING INLINE.  A job that awaits coro_done of a child still queued,
 * unstarted or ready, on its own worker - in the LIFO slot, or the newest
 * job of the local NORMAL ring (a fork's first and last child) - runs that
 * child now, inside its own step, as oneTBB's task_group::wait runs the
 * tasks it spawned: no suspension of the parent, no joiner record, no
 * wake-up, no trip of either through a queue.  The child's step is an
 * ordinary one (coro__run_job's body, nested on the C stack), and:
 *   - finished: the parent's await completes with the child's result,
 *     taken before the finish (a pool frame may be given back there; the
 *     result travels by value as to any awaiter).  Other awaiters of the
 *     child are woken by its finish as always.
 *   - not finished (it awaits something pending, yields, reschedules):
 *     it is an ordinary job again, suspended or queued, and the parent
 *     arms its coro_done as it would have (lib/wait/done.c), which sees
 *     the child as it is now, running elsewhere or even done.
 * Taking the child out of the queue is the owner's take of its own queue:
 * an exchange of the LIFO slot, or the deque's take-back of the ring's
 * newest job (base/queues.c, TAKING BACK); a thief that got there first wins
 * and the parent waits as usual.  Idle workers still steal queued
 * children from the ring's oldest end.
 * Promises kept: only a class-0 NORMAL job is taken (the LIFO slot and
 * the NORMAL ring hold nothing else), so any worker's mask allows it;
 * never while a HIGH or LOW job is queued where the worker looks
 * (PRIORITIES): with a HIGH one the worker would pick that first, and a
 * LOW one is kept from starving by the pick counters, which an inline
 * run does not see - a NORMAL child runs inline only where it would be
 * the worker's next pick anyway; never past CORO__INLINE_DEPTH jobs deep
 * (each level is the worker's C stack); never while a yielder is kept
 * aside (DEFERRED YIELDS), nor on a single-threaded scheduler (its driver
 * counts each finished job, and a seeded run picks each job by its PRNG).
 * The periodic look (CORO__GLOBAL_INTERVAL ticks) and the busy look at
 * epoll (BUSY LOOKS) count inline runs as steps: when one is due and
 * something waits there - a NORMAL job in the global queue, a served
 * class queue, the inbox, a submission ring or the yield ring, or a job
 * waiting on an fd - the parent waits as usual, its step ends and the
 * worker's loop makes the look; when nothing waits the count starts
 * again.  Cancel and deadlines: the parent's own checks come first (an
 * await of a cancelled or late job never runs a child); the child's are
 * its own steps'.  The trace records the parent's step as ending at the
 * await, then the child's steps, then the parent's next one; the dump
 * lists the parents (w->nested) under the job their worker runs. */
static bool run_inline(struct coro__worker *w, coro_t *child, intptr_t *res);
static bool run_inline_diag(struct coro__worker *w, coro_t *child, intptr_t *res);

/* job's await aw (coro_done of aw->arg[0].p) at depth w->nest: 0 when the
 * child was not taken (the parent arms as usual, its step traced by the
 * caller); 1 when it ran and finished, *res its result; 2 when it ran and
 * did not finish (the parent arms as usual, its step already traced).
 * Inlined in the step loop's copy for nested steps (run_inline): below a
 * fork's root every await of a child comes from there, and a call of its
 * own would save and restore the loop's registers once more around the
 * nested step (run_inline's prologue already does); the other copies call
 * it (join_inline_call).  diag: the step loop's copy, with the diagnostics
 * or without (cur_t0 is written only by the copy with them) */
static inline __attribute__((always_inline)) int join_inline(struct coro__worker *w, coro_t *job,
                                                             coro_await_t *aw, uint64_t *tr0,
                                                             intptr_t *res, const bool diag)
{
    coro_sched_t *s = w->s;
    coro_t *child = aw->arg[0].p;
    struct coro__localq *ring = &w->local[CORO__PRIO_IDX(CORO_PRIO_NORMAL)];
    uint32_t d = w->nest;
    /* relaxed: only this worker fills its slot, so seen holding child it
     * holds child or nothing (a thief's exchange took it) */
    bool slot = __atomic_load_n(&w->lifo, __ATOMIC_RELAXED) == child;

    /* first the child's place (an await of a job queued elsewhere, or
     * running, pays two loads), then the rules */
    if ((!slot && coro__localq_newest(ring) != child) || d >= CORO__INLINE_DEPTH ||
        s->nworkers == 0 || w->deferred || prio_queued(w) || !looks_idle(w))
        return 0;
    if (slot) {
        /* acq_rel: as coro__pop_level's exchange (the job's frame is complete) */
        if (__atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL) != child)
            return 0;
    } else if (!coro__localq_unpush(ring, child)) {
        return 0;
    }
    w->tick--;
    if (s->io)
        w->poll_steps--;
    found_(w, child);
    trace_step(w, job, tr0, CORO__TRACE_END_AWAIT, aw);
    int budget = coro__tls_budget;
    int64_t t0 = diag ? w->cur_t0 : 0;
    const char *name = w->cur_name;
    /* relaxed: read racily by coro_sched_dump (addresses only) */
    __atomic_store_n(&w->nested[d], job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->nest, d + 1, __ATOMIC_RELAXED);
    bool done = diag ? run_inline_diag(w, child, res) : run_inline(w, child, res);
    __atomic_store_n(&w->nest, d, __ATOMIC_RELAXED);
    /* the parent's step goes on: what run_job_ set for it at its start */
    coro__tls_in_job = 1;
    coro__tls_budget = budget;
    __atomic_store_n(&w->cur, job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_fn, job->fn, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_name, name, __ATOMIC_RELAXED);
    if (diag)
        __atomic_store_n(&w->cur_t0, t0, __ATOMIC_RELAXED);
    return done ? 1 : 2;
}

/* join_inline out of line, for the step loop's copies that run a job
 * from the worker's loop or the LIFO slot: inlined there, its registers
 * would cost every step of a chain, which never awaits */
static __attribute__((noinline)) int join_inline_call(struct coro__worker *w, coro_t *job,
                                                      coro_await_t *aw, uint64_t *tr0,
                                                      intptr_t *res, bool diag)
{
    return diag ? join_inline(w, job, aw, tr0, res, true) : join_inline(w, job, aw, tr0, res, false);
}

/* a coro_cancel reads the job's awaitable (CORO__F_CREAD): wait until it
 * is done, a few of its instructions, before the body writes the next */
static __attribute__((noinline, cold)) void cread_wait(coro_t *job)
{
    /* acquire: pairs with the canceller's release clear: its reads of the
     * awaitable happen before the body's next writes */
    for (unsigned spin = 0; __atomic_load_n(&job->state, __ATOMIC_ACQUIRE) & CORO__F_CREAD; spin++)
        if (spin > 64)
            sched_yield();
}

/* SUSPENDED -> READY after an arm that completed at once (READY, REQUEUE):
 * the body goes on, here or after the queue, and writes its next
 * awaitable; a cancel reading this one (CREAD, sched/sched.h) ends first.
 * No wake can meet it: the arm registered the job nowhere */
static inline void ready_again(coro_t *job)
{
    /* acq_rel: as set_state's */
    uint32_t now = __atomic_add_fetch(&job->state, CORO__S_READY - CORO__S_SUSPENDED,
                                      __ATOMIC_ACQ_REL);
    if (CORO__UNLIKELY(now & CORO__F_CREAD))
        cread_wait(job);
}

/* ---- the steps of a run (run_job_'s parts, inlined in each of its copies) */

/* this thread's &errno, for the errno the thread's jobs left (put back
 * before each step, kept after it: whatever the library did between their
 * steps, include/corokit/error.h) */
static inline __attribute__((always_inline)) int *job_errp(void)
{
    int *errp = tls_errp;
    if (CORO__UNLIKELY(!errp))
        errp = tls_errp = &errno;
    return errp;
}

/* a generator's body waited in this job and the job was cancelled: the
 * pull ends at its puller (sched/gen.c CANCEL).  Returns the frame that
 * runs next.  cur != job first: a job's own step pays no load of a frame
 * it does not run */
static inline __attribute__((always_inline)) coro_t *pull_cancelled(coro_sched_t *s, coro_t *job,
                                                                    coro_t *cur)
{
    if (CORO__UNLIKELY(cur != job) && CORO__UNLIKELY(cur->flags & CORO__FL_GEN) &&
        cur->result == -ECANCELED &&
        (coro__job_cancelled(job) || __atomic_load_n(&s->cancelling, __ATOMIC_RELAXED)))
        set_top(job, cur = coro__gen_unwind(job, cur, -ECANCELED));
    return cur;
}

/* a run of job begins on w: its budget, "in a job" (coro_join and the
 * blocking calls refuse), and what the dump shows; returns the
 * diagnostics' start (0 without them).  The job stays READY while it
 * runs: no store to its state word here (one locked instruction per step
 * saved).  Whoever dequeued it owns it, and nothing else tells a queued
 * job from a running one (the dump asks w->cur); the queue's pop acquired
 * what its waker wrote */
static inline __attribute__((always_inline)) int64_t step_begin(struct coro__worker *w,
                                                                coro_t *job, const bool diag)
{
    coro__tls_budget = CORO__BUDGET;
    coro__tls_in_job = 1;
    stat_inc(&w->n_run);
    /* relaxed: what this worker runs, for coro_sched_dump (never
     * dereferenced there: the job's identity and body only) */
    __atomic_store_n(&w->cur, job, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_fn, job->fn, __ATOMIC_RELAXED);
    __atomic_store_n(&w->cur_name, coro__job_name(job), __ATOMIC_RELAXED);
    return diag ? diag_begin(w, job) : 0;
}

/* readiness woke the job to make its own call here: true when its await
 * is to be armed again (the arm clears the flag; the body resumes only
 * once the operation completed) */
static inline __attribute__((always_inline)) bool io_woken(struct coro__worker *w, coro_t *job)
{
    job->flags &= (uint8_t)~CORO__FL_IOWAKE;
    stat_inc(&w->n_io);
    return job->flags & CORO__FL_REARM;
}

/* the run ends (the job may no longer be ours: not touched) */
static inline __attribute__((always_inline)) void step_end(struct coro__worker *w, int64_t t0,
                                                           const bool diag)
{
    if (diag)
        diag_end(w, t0);
    /* relaxed: as step_begin's */
    __atomic_store_n(&w->cur, NULL, __ATOMIC_RELAXED);
}

/* the job's own frame finished: its result to an inline joiner, its end
 * traced, the finish.  Returns what coro__run_job returns */
static inline __attribute__((always_inline)) bool step_done(struct coro__worker *w, coro_t *job,
                                                            int64_t t0, uint64_t *tr0,
                                                            const bool diag, const bool cont,
                                                            const bool nested, intptr_t *done_res)
{
    if (done_res)       /* JOINING INLINE: before the frame may go */
        *done_res = job->result;
    step_end(w, t0, diag);
    /* still "in a job" while the job finishes: its on_exit hook runs on
     * this worker, and a coro_join or blocking call there must get
     * -EDEADLK, not block the worker */
    trace_step(w, job, tr0, CORO__TRACE_END_DONE, NULL);
    w->s->finish(job);     /* the end of a job, set by the runtime at create */
    if (!nested)    /* the parent's step goes on (join_inline) */
        coro__tls_in_job = 0;
    /* a chain's next link, or the parent this end woke */
    return !cont && w->lifo_run == w->n_run ? run_next(w, true) : true;
}

/* an inner frame of the job finished: a generator's (its puller, or a
 * yield-from's outer, goes on) or a coro_call child's (its caller goes on
 * at once).  Returns the frame that runs next */
static inline __attribute__((always_inline)) coro_t *inner_done(coro_t *job, coro_t *cur, int st)
{
    if (CORO__UNLIKELY(cur->flags & CORO__FL_GEN)) {
        bool pend;
        return coro__gen_step(job, cur, st, &pend);
    }
    coro_t *parent = cur->parent;
    parent->result = cur->result;
    /* release: the child frame's last writes before a later spawn or
     * call of it acquires DONE */
    __atomic_store_n(&cur->state, CORO__S_DONE, __ATOMIC_RELEASE);
    return parent;
}

/* the job yielded: it is READY already, requeue it.  Returns false (the
 * job did not finish) */
static inline __attribute__((always_inline)) bool step_yield(struct coro__worker *w, coro_t *job,
                                                             int64_t t0, uint64_t *tr0,
                                                             const bool diag)
{
    coro_sched_t *s = w->s;

    step_end(w, t0, diag);
    trace_step(w, job, tr0, CORO__TRACE_END_YIELD, NULL);
    coro__tls_in_job = 0;
    w->poll_yield = true;     /* a point to look at epoll (BUSY LOOKS) */
    if (CORO__LIKELY(job->cls == 0) && CORO__LIKELY(!s->hist)) {
        /* the back of everything this worker has (submit_'s yield,
         * without the questions whose answers are known here: a class-0
         * job, on its own worker) */
        int pi = CORO__PRIO_IDX(job->prio);
        if (CORO__UNLIKELY(!own_localq_push(w, &w->yielded[pi], pi, job)))
            coro__push_global(s, job);
        /* with one worker, the caller's seat has it for a thief */
        if (s->nworkers > 1 || w->idx == s->nslots)
            notify(s, s->all_wmask, true);
        return false;
    }
    if (job->cls != 0 && s->nworkers > 0 && !w->deferred) {
        w->deferred = job;    /* behind the next picks (DEFERRED YIELDS) */
        /* a job only this worker may run waits behind up to
         * CORO__GLOBAL_INTERVAL picks; one that another may run, one
         * pick: then it is queued where that one looks */
        w->defer_picks = coro__affinity_get(s, job->cls)->nworkers > 1
                             ? CORO__GLOBAL_INTERVAL - 1 : 0;
        return false;
    }
    coro__submit(s, job, true);
    return false;
}

/* a status that is neither the end, a yield nor an await with its ops: a
 * generator's value (to its puller) or yield-from (the inner runs next),
 * in this job's chain (sched/gen.c), else a body's plain return, refused.
 * Returns the frame that runs next; *pend as coro__gen_step's */
static inline __attribute__((always_inline)) coro_t *gen_yielded(coro_t *job, coro_t *cur, int st,
                                                                 bool *pend)
{
    if (!(cur->flags & CORO__FL_GEN) || cur == job || (st != CORO__ST_VALUE && st != CORO__ST_FROM))
        coro__bad_body(cur, st);
    return coro__gen_step(job, cur, st, pend);
}

/* cur awaits coro_call of a child frame: claim it with one CAS, as
 * coro_spawn claims a frame: of two jobs calling one idle frame at once
 * exactly one runs it, the other gets -EBUSY.  Returns the frame that runs
 * next: the child, set up to run as cur's and the job's top, or cur with
 * -EBUSY when the child is busy */
static inline __attribute__((always_inline)) coro_t *call_child(coro_sched_t *s, coro_t *job,
                                                                coro_t *cur, coro_await_t *aw)
{
    coro_t *child = aw->arg[0].p;
    /* acquire (load and CAS): a child frame that finished elsewhere is
     * complete; the CAS makes one of two racing claimers (call or spawn)
     * win */
    uint32_t cs = __atomic_load_n(&child->state, __ATOMIC_ACQUIRE);
    do {
        uint32_t ls = cs & CORO__S_MASK;
        if (ls != CORO__S_IDLE && ls != CORO__S_DONE) {
            cur->result = -EBUSY;
            return cur;
        }
    } while (!__atomic_compare_exchange_n(&child->state, &cs, CORO__S_CHILD, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    child->fn = (coro_fn)aw->arg[1].p;
    child->resume = 0;
    child->result = 0;
    child->parent = cur;        /* a child's link: never its top */
    child->joiner = NULL;
    child->sched = s;
    child->cls = job->cls;
    child->prio = job->prio;
    set_top(job, child);
    return child;
}

/* cancel: an await that has not completed returns -ECANCELED at once;
 * past the job's deadline (.deadline), -ETIMEDOUT.  Never the budget
 * yield: it carries the result of an operation that already completed
 * (an item received, bytes read, an fd accepted), which must reach the
 * body.  True when the await of *curp is refused so: the frame that goes
 * on with that result is *curp (the puller, where a generator's pull
 * ends); false when the await goes on */
static inline __attribute__((always_inline)) bool await_refused(coro_sched_t *s, coro_t *job,
                                                                coro_t **curp, coro_await_t *aw)
{
    coro_t *cur = *curp;

    if (aw->ops != &coro__yield_ops &&
        (__atomic_load_n(&s->cancelling, __ATOMIC_RELAXED) ||
         /* relaxed: a hint; the wait structures check it again */
         (__atomic_load_n(&job->state, __ATOMIC_RELAXED) & CORO__F_CANCEL))) {
        coro_t *p0 = cur != job ? coro__gen_unwind(job, cur, -ECANCELED) : NULL;
        if (p0)             /* a generator's pull ends at its puller */
            set_top(job, *curp = p0);
        else
            cur->result = -ECANCELED;
        return true;
    }
    if (CORO__UNLIKELY(job->flags & CORO__FL_EXT) && aw->ops != &coro__yield_ops &&
        job->ext->deadline > 0 && coro__now() >= job->ext->deadline) {
        cur->result = -ETIMEDOUT;
        return true;
    }
    return false;
}

/* the arm left the job pending: it may already run elsewhere, do not
 * touch it.  Returns what coro__run_job returns */
static inline __attribute__((always_inline)) bool step_pending(struct coro__worker *w, int64_t t0,
                                                               const bool diag, const bool cont)
{
    step_end(w, t0, diag);
    coro__tls_in_job = 0;
    /* a fork's first child, which this job now awaits */
    return !cont && w->lifo_run == w->n_run ? run_next(w, false) : false;
}

/* CORO__ARM_REQUEUE: to the back of its (possibly new) queue.  Returns
 * false (the job did not finish) */
static inline __attribute__((always_inline)) bool step_requeue(struct coro__worker *w, coro_t *job,
                                                               int64_t t0, const bool diag)
{
    step_end(w, t0, diag);
    ready_again(job);
    coro__tls_in_job = 0;
    coro__submit(w->s, job, true);
    return false;
}

/* coro__run_job's body, the step loop: the job's innermost frame runs
 * until the job ends, yields or suspends; what each status asks is a part
 * above.  diag is a constant: the compiler makes one copy without the
 * diagnostics (the common case) and one with them; so are cont (run_next's
 * and run_inline's copies) and nested (run_inline's) */
static inline __attribute__((always_inline)) bool run_job_(struct coro__worker *w, coro_t *job,
                                                           const bool diag, const bool cont,
                                                           const bool nested, intptr_t *done_res)
{
    coro_sched_t *s = w->s;
    coro_t *cur = job->top;
    coro_await_t *aw;
    intptr_t res;
    bool stalled = false;
    int64_t t0 = step_begin(w, job, diag);
    int *errp = job_errp();
    uint64_t tr0 = coro__trace_begin(w);
    if ((job->flags & CORO__FL_IOWAKE) && io_woken(w, job)) {
        aw = &cur->aw;
        goto rearm;
    }
    cur = pull_cancelled(s, job, cur);
    for (;;) {
        *errp = tls_job_errno;
        int st = cur->fn(cur);
        tls_job_errno = *errp;
        if (diag)
            diag_check(w, job, cur->fn, t0, &stalled);
        if (st == CORO__ST_DONE) {
            if (cur == job)
                return step_done(w, job, t0, &tr0, diag, cont, nested, done_res);
            set_top(job, cur = inner_done(job, cur, st));
            continue;
        }
        if (st == CORO__ST_YIELD)
            return step_yield(w, job, t0, &tr0, diag);
        if (CORO__UNLIKELY(st != CORO__ST_AWAIT || !cur->aw.ops)) {
            bool pend;
            set_top(job, cur = gen_yielded(job, cur, st, &pend));
            if (!pend)
                continue;
        }
        aw = &cur->aw;
    dispatch:
        if (CORO__UNLIKELY(aw->ops == &coro__gen_ops)) {
            /* an await of a generator whose body waits: its chain joins
             * this job's, and its innermost await is handled as ours */
            set_top(job, cur = coro__gen_link(job, cur));
            aw = &cur->aw;
            goto dispatch;
        }
        if (aw->ops == &coro__call_ops) {
            cur = call_child(s, job, cur, aw);
            continue;
        }
        if (await_refused(s, job, &cur, aw)) {
            continue;
        }
        if (aw->ops->name == coro__join_name) {
            int k = nested ? join_inline(w, job, aw, &tr0, &res, diag)
                           : join_inline_call(w, job, aw, &tr0, &res, diag);
            if (k != 0 && diag)
                /* the stall check times the parent's own part of its step */
                t0 = w->cur_t0 = coro__now();
            if (k == 1) {
                cur->result = res;
                continue;
            }
            if (k == 2)
                goto arm;
        }
    rearm:
        trace_step(w, job, &tr0, CORO__TRACE_END_AWAIT, aw);
    arm:
        set_state(job, CORO__S_READY, CORO__S_SUSPENDED);
        int r = aw->ops->arm(s, job, aw, &res);
        if (r == CORO__ARM_PENDING)
            return step_pending(w, t0, diag, cont);
        cur->result = res;
        if (r != CORO__ARM_READY)
            return step_requeue(w, job, t0, diag);
        ready_again(job);
    }
}

bool coro__run_job(struct coro__worker *w, coro_t *job)
{
    /* the one branch the diagnostics cost when off (fixed at create) */
    if (CORO__UNLIKELY(w->s->diag))
        return run_job_(w, job, true, false, false, NULL);
    return run_job_(w, job, false, false, false, NULL);
}

/* the jobs after a step that filled the LIFO slot (CONTINUING); done: the
 * step's job finished.  Returns what coro__run_job returns for the last
 * job run.  Its own copy of the step loop (cont: the steps it runs do not
 * call back here), so that the loop's registers cost nothing to the steps
 * that end without a hand-off */
static __attribute__((noinline)) bool run_next(struct coro__worker *w, bool done)
{
    coro_t *j;

    if (CORO__UNLIKELY(w->s->diag)) {
        while ((j = take_next(w)))
            done = run_job_(w, j, true, true, false, NULL);
        return done;
    }
    while ((j = take_next(w)))
        done = run_job_(w, j, false, true, false, NULL);
    return done;
}

/* JOINING INLINE: the child's step, nested in its parent's; its own
 * copy of the step loop as run_next's (cont: it never goes on to the LIFO
 * slot's job: the parent continues next), with the diagnostics or without
 * as the parent's copy (the scheduler's setting, fixed at create).  True
 * when the child finished, *res its result */
static __attribute__((noinline)) bool run_inline(struct coro__worker *w, coro_t *child,
                                                 intptr_t *res)
{
    return run_job_(w, child, false, true, true, res);
}

static __attribute__((noinline)) bool run_inline_diag(struct coro__worker *w, coro_t *child,
                                                      intptr_t *res)
{
    return run_job_(w, child, true, true, true, res);
}
