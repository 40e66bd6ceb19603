/* SPDX-License-Identifier: MIT */
/* Virtual time and seeded runs of a single-threaded scheduler (config
 * .virtual_time, .seed; docs/testing.md).  Layer 5 (the runtime).
 *
 * THE CLOCK.  s->vnow, one word written only by the thread that drives s
 * (the drive word of drive.c makes that one thread at a time).  While a
 * thread drives or joins a virtual scheduler, coro__tls_vclock points at
 * that word and coro__now() reads it (base/clock.c): so every deadline a
 * job computes - sleeps, timeouts of sync and I/O awaits, select timers,
 * group waits, timed joins - and every comparison the timer heaps make
 * when they fire is on the virtual clock, with no change to any of them.
 * The timerfds are never armed for it (coro__timerfd_arm does nothing
 * while the pointer is set): the driver fires the two heaps itself
 * (fire_due: the I/O heap through a poll that does not wait, the lot's
 * heap directly).
 *
 * WHEN IT MOVES.  The driver runs ready jobs at a fixed time.  When none
 * is ready (idle), in this order:
 *   1. timers already due fire (a job armed one for now, or earlier);
 *   2. a job waits on the outside world - an fd (signals and children are
 *      fds too) or a blocking call: wait for it in real time, clock still;
 *   3. the earliest deadline of both heaps, or of the drive itself (a
 *      timed join), whichever comes first: the clock jumps there and what
 *      is due fires (everything at that instant, nothing later);
 *   4. nothing at all: no job can ever run again.  The drive stops and
 *      says so (vt->stuck): coro_join answers -EDEADLK, coro_sched_run
 *      returns.
 * Step 2's look comes after step 1, and a blocking call's count drops
 * only after its wake pushed the job (io/blocking.c), so a driver that
 * reads no call in flight finds the job in its queue on the look that
 * follows (step 3 looks again before it jumps).  coro_sched_advance runs
 * the same loop with a limit: no step 2 (an explicit advance does not wait
 * for the outside world), jumps no further than the limit, and at the
 * limit it stops instead of step 4.
 *
 * THE SEEDED PICK.  With .seed, every job the worker's queues hold is
 * taken into a pool of this file (one array per priority) and the next
 * job is drawn from the highest non-empty level by a PRNG (splitmix64
 * seeds a xorshift64*).  So the order among the ready jobs of a level,
 * and among wake-ups made together (they enter the pool in the order the
 * library made them, which is the program's, and the draw ignores it), is
 * the seed's.  The queues' own order is deterministic in a single thread,
 * so the same seed gives the same steps.  A drive that ends with jobs in
 * the pool puts them back in the worker's queues (READY, as they were): a
 * job is never left where only this file sees it once no thread drives.
 *
 * Off (vt NULL): drive() in drive.c pays one branch per drive, nothing per
 * step; coro__now() one thread-local load.
 */
#include <limits.h>
#include <string.h>

#include "rt/rt.h"
#include "sched/trace.h"

struct coro__vt {
    uint64_t rng;               /* xorshift64* state; 0 = no seed */
    bool stuck;                 /* the last drive found that nothing can ever run */
    coro_t **pool[CORO__NPRIO]; /* seeded: ready jobs taken from the queues */
    uint32_t n[CORO__NPRIO], cap[CORO__NPRIO];
};

/* ---- life ------------------------------------------------------------------------ */

int coro__vt_init(coro_sched_t *s, const coro_sched_config_t *c)
{
    if (!c->virtual_time && !c->seed)
        return 0;
    if (s->nworkers != 0)
        return -EINVAL;
    struct coro__vt *vt = coro__alloc(s, sizeof *vt);
    if (!vt)
        return -ENOMEM;
    memset(vt, 0, sizeof *vt);
    if (c->seed) {
        /* splitmix64 of the seed: nearby seeds give unrelated streams */
        uint64_t z = c->seed + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        vt->rng = z ? z : 1;
    }
    s->vtime = c->virtual_time;
    s->vnow = CORO_VIRTUAL_TIME_START;
    s->vt = vt;
    return 0;
}

void coro__vt_fini(coro_sched_t *s)
{
    struct coro__vt *vt = s->vt;

    if (!vt)
        return;
    for (int p = 0; p < CORO__NPRIO; p++)
        coro__free(s, vt->pool[p], vt->cap[p] * sizeof *vt->pool[p]);
    coro__free(s, vt, sizeof *vt);
    s->vt = NULL;
}

bool coro__vt_stuck(const coro_sched_t *s)
{
    return s->vt && s->vt->stuck;
}

/* ---- the seeded pick -------------------------------------------------------------------- */

static uint64_t vt_rand(struct coro__vt *vt)
{
    uint64_t x = vt->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    vt->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* into the pool; false (-ENOMEM growing it): the caller runs j itself */
static bool pool_add(coro_sched_t *s, struct coro__vt *vt, coro_t *j)
{
    int p = CORO__PRIO_IDX(j->prio);

    if (vt->n[p] == vt->cap[p]) {
        uint32_t cap = vt->cap[p] ? vt->cap[p] * 2 : 64;
        coro_t **a = coro__alloc(s, cap * sizeof *a);
        if (!a)
            return false;
        if (vt->n[p])
            memcpy(a, vt->pool[p], vt->n[p] * sizeof *a);
        coro__free(s, vt->pool[p], vt->cap[p] * sizeof *a);
        vt->pool[p] = a;
        vt->cap[p] = cap;
    }
    vt->pool[p][vt->n[p]++] = j;
    return true;
}

/* the next job to run: the queues' next, or with a seed a draw among all
 * the ready jobs of the highest ready priority */
static coro_t *pick(coro_sched_t *s, struct coro__vt *vt, struct coro__worker *w)
{
    coro_t *j;

    if (!vt->rng)
        return coro__find_work(w);
    while ((j = coro__find_work(w)))
        if (!pool_add(s, vt, j))
            return j;
    for (int p = CORO__NPRIO - 1; p >= 0; p--) {
        uint32_t n = vt->n[p];
        if (!n)
            continue;
        /* multiply-shift: an index below n without a division */
        uint32_t i = (uint32_t)(((unsigned __int128)vt_rand(vt) * n) >> 64);
        j = vt->pool[p][i];
        vt->pool[p][i] = vt->pool[p][--vt->n[p]];
        return j;
    }
    return NULL;
}

/* a job found another way (a wait's last look): into the draw */
static coro_t *repick(coro_sched_t *s, struct coro__vt *vt, struct coro__worker *w, coro_t *j)
{
    if (!j || !vt->rng || !pool_add(s, vt, j))
        return j;
    return pick(s, vt, w);
}

/* the drive ends: pooled jobs back into the worker's queues, in pool order */
static void pool_return(coro_sched_t *s, struct coro__vt *vt)
{
    for (int p = CORO__NPRIO - 1; p >= 0; p--) {
        for (uint32_t i = 0; i < vt->n[p]; i++)
            coro__submit(s, vt->pool[p][i], false);
        vt->n[p] = 0;
    }
}

/* ---- the clock ------------------------------------------------------------------------ */

/* fire every timer of both heaps due on the current clock, and take the
 * fd events there are; returns how many woke or fired.  A system call
 * only when one is due or an fd is awaited: a jump costs one epoll_wait */
static int fire_due(coro_sched_t *s)
{
    int64_t now = coro__due_by(s->vnow);
    int n = 0;

    if (s->io && (coro__io_next_timer(s->io) <= now || coro__io_fd_waiters(s->io) != 0)) {
        int r = coro__io_poll(s->io, 0);    /* epoll without waiting, then the I/O heap */
        if (r > 0)
            n += r;
    }
    if (coro__parklot_timers_next(s) <= now)
        n += coro__parklot_timers_fire(s, NULL);
    return n;
}

static bool outside_waits(coro_sched_t *s)
{
    return (s->io && coro__io_fd_waiters(s->io) != 0) || coro__blocking_calls(s) != 0;
}

static int64_t next_deadline(coro_sched_t *s)
{
    int64_t a = s->io ? coro__io_next_timer(s->io) : INT64_MAX;
    int64_t b = coro__parklot_timers_next(s);
    return a < b ? a : b;
}

static void set_now(coro_sched_t *s, int64_t t)
{
    /* relaxed: read by coro_sched_now from any thread, a single word */
    __atomic_store_n(&s->vnow, t, __ATOMIC_RELAXED);
}

static bool live_jobs(coro_sched_t *s)
{
    /* relaxed: a count only; the jobs it counts run on this thread (the
     * driver), and a spawn from elsewhere is ordered by its queue */
    return __atomic_load_n(&s->live, __ATOMIC_RELAXED) & ~CORO__LIVE_CLOSED;
}

enum { IDLE_GO, IDLE_STOP };

/* a virtual drive found no job ready: the steps of WHEN IT MOVES.
 * limit >= 0: coro_sched_advance's end.  dl: the drive's own deadline
 * (a timed join, 0 = none).  *j: a job found meanwhile */
static int idle_virtual(coro_sched_t *s, struct coro__vt *vt, struct coro__worker *w,
                        bool block, int64_t limit, int64_t dl, coro_t **j)
{
    int64_t now = s->vnow;

    if (fire_due(s) > 0)
        return IDLE_GO;
    if (limit < 0 && outside_waits(s)) {
        if (!block && !live_jobs(s))
            return IDLE_STOP;
        /* the clock stands still while the outside world is awaited: a
         * plain park, which waits in epoll or on the worker's futex (a
         * blocking call's wake) without a deadline - none of ours is real */
        int64_t saved = coro__tls_drive_deadline;
        coro__tls_drive_deadline = 0;
        *j = repick(s, vt, w, coro__park(w));
        coro__tls_drive_deadline = saved;
        return IDLE_GO;
    }
    if ((*j = pick(s, vt, w)))      /* a blocking call's job woken meanwhile */
        return IDLE_GO;
    if (limit < 0 && !block && !live_jobs(s))
        return IDLE_STOP;
    int64_t next = next_deadline(s);
    if (dl > 0 && dl < next)
        next = dl;
    /* >=: an advance to exactly INT64_MAX ends there, though a timer
     * kept at INT64_MAX (a sleep without end) never fires */
    if (limit >= 0 && next >= limit) {
        if (now >= limit)
            return IDLE_STOP;
        next = limit;
    } else if (next == INT64_MAX) {
        vt->stuck = true;           /* nothing can ever run again */
        return IDLE_STOP;
    }
    if (next > now)
        set_now(s, next);
    fire_due(s);
    return IDLE_GO;
}

/* ---- the drive ----------------------------------------------------------------------- */

int coro__vt_drive(coro_sched_t *s, bool (*done)(void *), void *arg, bool block, int64_t limit)
{
    struct coro__vt *vt = s->vt;
    struct coro__worker *w = s->w[0];
    struct coro__worker *saved = coro__tls_worker;
    const int64_t *saved_clk = coro__tls_vclock;
    int64_t dl = coro__tls_drive_deadline;
    unsigned since_poll = 0;
    int steps = 0;

    coro__tls_worker = w;
    if (s->vtime)
        coro__tls_vclock = &s->vnow;
    vt->stuck = false;
    coro__trace_pause(w);       /* as drive() in drive.c */
    while (!done || !done(arg)) {
        coro_t *j = pick(s, vt, w);
        if (!j && s->vtime) {
            if (idle_virtual(s, vt, w, block, limit, dl, &j) == IDLE_STOP)
                break;
        } else if (!j) {
            /* a seeded scheduler on the real clock waits as drive() does */
            if (!block) {
                if (coro__drive_may_wake(s)) {
                    coro__io_poll(s->io, -1);
                    since_poll = 0;
                    continue;
                }
                break;
            }
            j = repick(s, vt, w, coro__park(w));
            since_poll = 0;
        } else if (++since_poll >= CORO__GLOBAL_INTERVAL) {
            /* jobs keep being ready: timers due and fds ready get a look
             * anyway (drive() in drive.c says why) */
            since_poll = 0;
            if (s->vtime)
                fire_due(s);
            else if (s->io && coro__io_pending(s->io))
                coro__io_poll(s->io, 0);
        }
        if (j) {
            if (coro__run_job(w, j))
                coro__drive_finished(w);
            if (steps < INT_MAX)    /* coro_sched_run's count: held at INT_MAX */
                steps++;
        }
    }
    pool_return(s, vt);
    coro__trace_pause(w);
    coro__tls_vclock = saved_clk;
    coro__tls_worker = saved;
    return steps;
}

/* ---- the API ----------------------------------------------------------------------- */

int64_t coro_sched_now(const coro_sched_t *s)
{
    return s ? coro__sched_clock(s) : coro__now();
}

int coro_sched_advance(coro_sched_t *s, int64_t ns)
{
    if (!s || !s->vtime || ns < 0)
        return -EINVAL;
    if (coro__in_job())
        return -EDEADLK;
    if (!coro__drive_begin(s))
        return -EBUSY;
    int64_t limit = coro__ns_add(s->vnow, ns);     /* too far: as far as the clock goes */
    int64_t saved = coro__tls_drive_deadline;
    coro__tls_drive_deadline = 0;
    coro__vt_drive(s, NULL, NULL, false, limit);
    coro__tls_drive_deadline = saved;
    coro__drive_end(s);
    return 0;
}
