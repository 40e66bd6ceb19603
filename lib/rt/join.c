/* SPDX-License-Identifier: MIT */
/* Waiting for jobs from outside: coro_join, coro_join_timeout and
 * coro_block_on.  On a scheduler without workers the joining thread drives
 * it (rt/drive.c); with workers, coro_block_on may run the root itself on
 * the caller's seat first (sched/seat.c).  Layer 5 (the runtime). */

#include "rt/rt.h"
#include "sched/frame.h"
#include "sched/trace.h"

/* finished, and a blocked joiner may leave: on_exit has returned */
static bool job_done(void *arg)
{
    coro_t *co = arg;
    /* acquire: pairs with coro__finish's release: the result is there */
    uint32_t st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    return (st & CORO__S_MASK) == CORO__S_DONE && !(st & CORO__F_EXITING);
}

/* done, or back to IDLE: its spawn failed after coro_join looked */
static bool job_over(void *arg)
{
    coro_t *co = arg;
    /* acquire: pairs with coro__finish's release: the result is there */
    uint32_t st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    return job_done(co) || (st & CORO__S_MASK) == CORO__S_IDLE;
}

/* Single-threaded: drive s until done(arg), or, while another thread
 * drives, sleep until done(arg) or the drive is free (then take it over).
 * The protocol is rt/drive.c's. */

static void drive_until(coro_sched_t *s, coro_t *co, bool (*done)(void *), void *arg)
{
    coro__drive_until_dl(s, co, done, arg, -1);
}

struct late { coro_t *co; int64_t deadline; };

static bool job_over_or_late(void *arg)
{
    struct late *l = arg;
    return job_over(l->co) || (l->deadline >= 0 && coro__now() >= l->deadline);
}

/* join_dl's steps */

/* the job may end, and destroy free s, while we are still inside s
 * (driving it, leaving its drive queue, giving a pool frame back): s stays
 * pinned until we leave (*tok), and the look after the pin (seq_cst) tells
 * whether it still lives (sched/pin.c).  Returns s, or NULL when the job
 * ended already (nothing pinned: the caller reads the frame only) */
static coro_sched_t *join_pin(coro_t *co, int *tok)
{
    coro_sched_t *s = co->sched;

    *tok = coro__pin_job(s);
    if ((__atomic_load_n(&co->state, __ATOMIC_SEQ_CST) & CORO__S_MASK) == CORO__S_DONE) {
        coro__unpin(*tok);
        *tok = CORO__PIN_NONE;
        return NULL;
    }
    return s;
}

/* register as co's blocked joiner (*st: its state as last read, neither
 * DONE nor IDLE): THREAD_JOIN, and for a pool frame (*pool) one more
 * joiner, so that the frame stays until we have read the result.  True
 * with *st the state stored; false: read the state again */
static bool join_register(coro_t *co, uint32_t *st, bool *pool)
{
    *pool = *st & CORO__F_POOL;
    if (*pool && (*st & CORO__JOINERS_MASK) == CORO__JOINERS_MASK) {
        sched_yield();      /* 255 threads join it already */
        return false;
    }
    uint32_t nw = *st | CORO__F_THREAD_JOIN | (*pool ? CORO__JOINER_ONE : 0);
    /* acq_rel: the finisher's CAS to DONE either sees our flag (and wakes
     * us) or ours fails and we read DONE */
    if (!__atomic_compare_exchange_n(&co->state, st, nw, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    *st = nw;
    return true;
}

/* one wait for co's end (st: its state as registered) until the absolute
 * deadline (-1 none).  Single-threaded (s with no workers): drive until co
 * is done, or sleep while another thread drives and take the drive over
 * when it stops; -EDEADLK when virtual time finds that nothing can ever
 * run again.  Else a futex wait on the state word.  0: look again */
static int join_wait(coro_sched_t *s, coro_t *co, uint32_t st, int64_t deadline)
{
    if (!s || s->nworkers != 0) {
        coro__futex_wait(&co->state, st, deadline);
        return 0;
    }
    if (deadline < 0) {
        drive_until(s, co, job_over, co);
    } else {
        struct late l = { co, deadline };
        coro__drive_until_dl(s, co, job_over_or_late, &l, deadline);
    }
    if (CORO__UNLIKELY(coro__vt_stuck(s)) && !job_over(co))
        return -EDEADLK;
    return 0;
}

/* a registered joiner of a pool frame leaves: the last one out gives the
 * frame back once it is over */
static void join_leave_pool(coro_t *co)
{
    /* acq_rel: our read of the result happens before the frame is given
     * back, by us or by the last other joiner (or its finisher, when it
     * finished after we left) */
    uint32_t left = __atomic_sub_fetch(&co->state, CORO__JOINER_ONE, __ATOMIC_ACQ_REL);
    if (!(left & CORO__JOINERS_MASK) && (left & CORO__S_MASK) == CORO__S_DONE &&
        !(left & CORO__F_EXITING))
        coro__frame_release(co);
}

/* coro_join and coro_join_timeout: wait until co is done (and, when this
 * call was blocked, its finisher let go: EXITING clear) or timeout ns
 * (CORO_FOREVER none; on s's clock, virtual or not) pass.  0 with
 * *result, -ETIMEDOUT, -EINVAL, -EDEADLK.  A pool frame counts its
 * blocked joiners (JOINERS): the last one out gives the frame back, even
 * one that timed out just as the job finished. */
static int join_dl(coro_t *co, int64_t timeout, intptr_t *result)
{
    uint32_t st;
    bool reg = false, pool = false;
    int rc = 0, tok;

    /* acquire (here and in the loop below): pairs with coro__finish's
     * release, so a DONE frame's result is complete */
    st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
    if ((st & CORO__S_MASK) == CORO__S_IDLE || (st & CORO__S_MASK) == CORO__S_CHILD)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    if (job_done(co)) {
        *result = co->result;   /* its scheduler may be gone: do not touch it */
        return 0;
    }
    coro_sched_t *s = join_pin(co, &tok);
    /* a joiner of a virtual scheduler reads its clock (rt/vtime.c) */
    const int64_t *saved_clk = coro__tls_vclock;
    if (s && s->vtime)
        coro__tls_vclock = &s->vnow;
    int64_t deadline = coro__deadline(timeout);
    for (;;) {
        /* acquire: pairs with coro__finish's release (the result) */
        st = __atomic_load_n(&co->state, __ATOMIC_ACQUIRE);
        if ((st & CORO__S_MASK) == CORO__S_DONE) {
            if (!(st & CORO__F_EXITING))
                break;
            if (!reg) {
                /* finished just now, its finisher between its CAS and its
                 * last touch (rt/finish.c); it wakes only joiners
                 * registered before it finished: wait out those few
                 * instructions */
                sched_yield();
                continue;
            }
        } else if ((st & CORO__S_MASK) == CORO__S_IDLE) {
            /* its spawn failed meanwhile: the flags are wiped, there is
             * no registration to leave */
            rc = -EINVAL;
            reg = false;
            break;
        } else if (!reg) {
            if (!join_register(co, &st, &pool))
                continue;
            reg = true;
        }
        if (deadline >= 0 && coro__now() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        if ((rc = join_wait(s, co, st, deadline)) < 0)
            break;
    }
    coro__tls_vclock = saved_clk;
    if (rc == 0)
        *result = co->result;
    if (reg && pool)
        join_leave_pool(co);
    coro__unpin(tok);       /* our last touch of s */
    return rc;
}

int coro_join_timeout(coro_t *co, intptr_t *result, int64_t timeout_ns)
{
    if (!co || !result || timeout_ns < CORO_FOREVER)
        return -EINVAL;
    int e = errno;      /* as coro_sched_run */
    int rc = join_dl(co, timeout_ns, result);
    errno = e;
    return rc;
}

int coro_join(coro_t *co, intptr_t *result)
{
    return coro_join_timeout(co, result, CORO_FOREVER);
}

/* the root may run on the caller's seat (sched/seat.c, WHICH JOBS): no
 * mask, and a caller-owned frame.  A pool frame's finish gives it back
 * when no joiner is registered yet, and the seat reads the root's state
 * until it is over: only coro_join's registration keeps a pool frame */
static bool seat_fits(coro_sched_t *s, const coro_t *co, const coro_spawn_opts_t *opts)
{
    uint8_t *st;
    return s && co && (!opts || !opts->affinity) && coro__frame_check(s, co, &st) == 0;
}

int coro_block_on(coro_sched_t *s, coro_t *co, coro_fn fn, const coro_spawn_opts_t *opts,
                  intptr_t *result)
{
    if (coro__in_job())
        return -EDEADLK;
    if (!result)
        return -EINVAL;
    int e = errno;      /* the jobs it runs, the notifies: errno is the caller's */
    struct coro__worker *seat = seat_fits(s, co, opts) ? coro__seat_take(s) : NULL;
    int rc = coro_spawn(s, co, fn, opts);
    if (seat) {
        /* the calling thread runs the root and what it queues here, until
         * the root is over or nothing is left here; then it waits as any
         * joiner (sched/seat.c) */
        if (rc == 0)
            coro__seat_run(seat, co);
        coro__seat_leave(seat);
    }
    errno = e;
    if (rc < 0)
        return rc;
    return coro_join(co, result);
}

