/* SPDX-License-Identifier: MIT */
/* The built-in tracer's recording: per-thread event rings kept as a flight
 * recorder.  sched/trace_write.c writes them out as a Chrome trace (JSON)
 * that Perfetto and chrome://tracing open, and that tools/timeline draws.
 *
 * OFF.  s->trace and every worker's trace_ring are NULL; each hook (lib/sched/trace.h)
 * is one load and one branch the compiler lays out as not taken.
 *
 * ON (config .trace_events > 0, or COROKIT_TRACE=FILE in the environment).
 * Rings: one per worker (written only by that worker: its thread, or the
 * thread driving a single-threaded scheduler, one at a time), one for the
 * I/O thread (written only by it), one for each of the first
 * CORO__TRACE_THREAD_RINGS plain threads that record (spawning or waking
 * jobs; written only by that thread, found through a thread-local cache),
 * and one shared by the plain threads after those, whose writers take its
 * spinlock.  Each ring holds the last `cap` events (a power of two): a
 * writer overwrites the oldest, so the rings are a flight recorder of the
 * recent past, whatever ran before.
 *
 * Writer protocol (one writer per ring at a time): the event's four words
 * are stored relaxed into slot head % cap, then head+1 with release (a
 * step and the await that ended it: both slots, then head+2 with one
 * release; CORO__TRACE_BATCH is that most).  A
 * reader (coro_sched_trace_write, any thread, while the scheduler runs)
 * loads head with acquire, copies the last min(head, cap) slots with
 * relaxed loads, then - after a full fence, so that its copies are ordered
 * before the second load (a seqlock's read side) - loads head again: the
 * slots the writer may have overwritten meanwhile (index < head2 - cap,
 * plus the CORO__TRACE_BATCH slots the writer may be filling without having
 * published them yet) are dropped.  Every access to an event word is atomic, so a
 * reader racing a writer reads stale or new words, never torn ones, and
 * the dropped range covers every slot that could be a mix.  When the
 * workers have stopped (coro_sched_destroy) nothing races.
 *
 * Time: rdtsc on x86 (about half the cost of clock_gettime; the CPU must
 * have constant_tsc and nonstop_tsc), converted to coro_now() nanoseconds
 * with two calibration points: ring creation and the write; coro_now()
 * itself elsewhere.  A reading is still most of what tracing costs a short
 * job (docs/benchmarks.md), so a worker reads
 * the clock about once per run of up to CORO__TRACE_RUN_MAX short steps
 * (lib/sched/trace.h, "Runs", which says what the times then promise), and
 * a plain thread once per CORO__TRACE_THREAD_RUN events or coarse-clock
 * tick (coro__trace_ring_thread_stamp, trace.h).  Events not read carry ts 0 and
 * get their time when the trace is written (resolve, resolve_thread in
 * sched/trace_write.c).
 * A virtual scheduler (.virtual_time) stamps every event with its virtual
 * clock instead - its one worker's ring through coro__trace_clock on the
 * driving thread, the other rings through coro__trace_ring_other_stamp - and is
 * written in those nanoseconds, from the clock's start: a seeded run's
 * trace is the same file every time.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "sched/trace.h"

#define TRACE_MAX_EVENTS (1u << 24)


static __thread coro_sched_t *tls_io_sched;

int coro__trace_ring_rdtsc;

/* the TSC runs at one rate on every CPU, in every C- and P-state: its
 * readings on two CPUs compare, and one rate converts them */
static int tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d >> 8 & 1);
#else
    return 0;
#endif
}

/* the ring of this plain thread for the trace numbered gen (thread_ring);
 * NULL ring: the thread uses the shared one (trace.h, coro__trace_ring_any) */
__thread struct coro__trace_ring_thr coro__tls_trthr;
#define tls_thr coro__tls_trthr
static uint64_t trace_gens;     /* atomic: the last trace number given */

#define clock_raw coro__trace_clock

static size_t ring_size(uint32_t cap)
{
    return sizeof(struct coro__trace_ring) + (size_t)cap * sizeof(struct coro__tev);
}

/* A ring, cache-line aligned; its slots are not zeroed (nothing reads a
 * slot before it is written), so their pages are touched only as the ring
 * fills: no memset of cap * 32 bytes per thread at create. */
static struct coro__trace_ring *ring_new(coro_sched_t *s, uint32_t cap)
{
    size_t n = ring_size(cap) + CORO__CACHELINE + sizeof(void *);
    char *raw = s->alloc ? s->alloc->alloc(s->alloc->ctx, n) : malloc(n);
    if (!raw)
        return NULL;
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + CORO__CACHELINE - 1) &
                  ~(uintptr_t)(CORO__CACHELINE - 1);
    struct coro__trace_ring *r = (struct coro__trace_ring *)p;
    memcpy((char *)r - sizeof(void *), &raw, sizeof raw);
    memset(r, 0, sizeof *r);
    r->mask = cap - 1;
    r->krun = 1;            /* the first steps are read one by one */
    return r;
}

/* CORO__TRACE_RUN_NS in clock ticks: the clock's rate against coro_now()
 * over 50 us (the runs' limit needs no more than a few per cent; 1 tick
 * per ns when the clock is coro_now()) */
static uint64_t run_lim(void)
{
    int64_t n0 = coro__now(), n1;
    uint64_t c0 = clock_raw(), c1;
    do {
        n1 = coro__now();
        c1 = clock_raw();
    } while (n1 - n0 < 50000);
    return (uint64_t)((double)(c1 - c0) / (double)(n1 - n0) * CORO__TRACE_RUN_NS);
}

static void ring_free(coro_sched_t *s, struct coro__trace_ring *r, uint32_t cap)
{
    void *raw;

    if (!r)
        return;
    memcpy(&raw, (char *)r - sizeof(void *), sizeof raw);
    if (s->alloc)
        s->alloc->free(s->alloc->ctx, raw, ring_size(cap) + CORO__CACHELINE + sizeof(void *));
    else
        free(raw);
}

int coro__trace_init(coro_sched_t *s, const coro_sched_config_t *c)
{
    const char *env = getenv("COROKIT_TRACE");
    uint64_t want = c->trace_events;
    struct coro__trace *t;

    if (want > TRACE_MAX_EVENTS)
        return -EINVAL;
    if (env && !*env)
        env = NULL;
    if (want == 0 && env)
        want = CORO__TRACE_DEFAULT_EVENTS;
    if (want == 0)
        return 0;
    uint32_t cap = 16;
    while (cap < want)
        cap <<= 1;
    if (!(t = coro__alloc(s, sizeof *t)))
        return -ENOMEM;
    memset(t, 0, sizeof *t);
    t->cap = cap;
    if (env) {
        size_t n = strlen(env) + 1;
        if (!(t->path = coro__alloc(s, n)))
            goto fail;
        memcpy(t->path, env, n);
    }
    if (!(t->io = ring_new(s, cap)) || !(t->ext = ring_new(s, cap)))
        goto fail;
    /* relaxed: the same answer whoever writes it (the CPU's), read by the
     * clock reads of any trace; no other data hangs on it */
    __atomic_store_n(&coro__trace_ring_rdtsc, tsc_invariant(), __ATOMIC_RELAXED);
    t->run_lim = run_lim();
    /* relaxed: a unique number is all it needs */
    t->gen = __atomic_add_fetch(&trace_gens, 1, __ATOMIC_RELAXED);
    t->ns0 = coro__now();
    t->tsc0 = clock_raw();
    s->trace = t;
    return 0;
fail:
    s->trace = t;
    coro__trace_fini(s);
    return -ENOMEM;
}

/* a worker's ring, made by the worker's own thread at its start (rt/runtime.c
 * FIRST TOUCH): its pages come from that thread's node */
int coro__trace_worker_init(coro_sched_t *s, struct coro__worker *w)
{
    struct coro__trace *t = s->trace;

    if (!t)
        return 0;
    if (!(w->trace_ring = ring_new(s, t->cap)))
        return -ENOMEM;
    w->trace_ring->run_lim = t->run_lim;
    return 0;
}

void coro__trace_fini(coro_sched_t *s)
{
    struct coro__trace *t = s->trace;

    if (!t)
        return;
    for (int i = 0; i < s->nslots; i++) {
        if (s->w[i])
            ring_free(s, s->w[i]->trace_ring, t->cap);
        if (s->w[i])
            s->w[i]->trace_ring = NULL;
    }
    ring_free(s, t->io, t->cap);
    ring_free(s, t->ext, t->cap);
    for (uint32_t i = 0; i < t->nthr; i++)
        ring_free(s, t->thr[i], t->cap);
    if (t->path)
        coro__free(s, t->path, strlen(t->path) + 1);
    s->trace = NULL;
    coro__free(s, t, sizeof *t);
}

/* ---- recording ---------------------------------------------------------------- */

void coro__trace_syscall_(struct coro__trace_ring *r, const void *a, uint64_t meta)
{
    uint64_t t = coro__trace_clock();
    coro__trace_ring_put_at(r, t, a, NULL, meta);
    r->t_next = 0;
    r->nrun = 0;
    r->t_run = t;
}

void coro__trace_idle_(struct coro__trace_ring *r, bool end)
{
    r->t_next = 0;
    if (r->nrun && !end && !r->idle++)
        return;             /* the first vain look: the run goes on */
    r->idle = 0;
    if (r->nrun) {
        r->nrun = 0;
        coro__trace_ring_put_at(r, coro__trace_clock(), NULL, NULL, CORO__TRACE_MARK);
    }
}

/* a step of at least 2^32 ticks: the step, then LONG (its end), then the
 * await's name if any */
static void step_long(struct coro__trace_ring *r, const void *job, const void *fn, uint64_t meta,
                      uint64_t t0, uint64_t now, const char *await)
{
    coro__trace_ring_put_at(r, t0, job, fn, meta | (uint64_t)UINT32_MAX << 32);
    coro__trace_ring_put_at(r, now, job, NULL, CORO__TRACE_LONG);
    if (await)
        coro__trace_ring_put_at(r, now, job, await, CORO__TRACE_AWAIT);
}

void coro__trace_step_end(struct coro__trace_ring *r, coro_t *job, uint64_t *t0, unsigned why,
                          const char *await)
{
    uint64_t h = coro__trace_ring_head(r), start = *t0, now = coro__trace_clock();
    uint64_t meta = CORO__TRACE_META(CORO__TRACE_STEP | why << 4, job->prio, job->cls, 0);
    uint32_t n = r->nrun + 1;

    if (!start) {
        /* the last step of a run: its end is the run's */
        coro__trace_ring_set(r, h, now, job, (const void *)job->fn,
                     meta | (uint64_t)CORO__TRACE_NOSTART << 4);
        if (await)
            coro__trace_ring_set(r, ++h, now, job, await, CORO__TRACE_AWAIT);
        coro__trace_ring_publish(r, h + 1);
        start = r->t_run;
    } else if (CORO__UNLIKELY(now - start >= UINT32_MAX)) {
        step_long(r, job, (const void *)job->fn, meta, start, now, await);
    } else {
        coro__trace_ring_set(r, h, start, job, (const void *)job->fn, meta | (now - start) << 32);
        if (await)
            coro__trace_ring_set(r, ++h, now, job, await, CORO__TRACE_AWAIT);
        coro__trace_ring_publish(r, h + 1);
    }
    /* the next run's length: one step after a run of long steps, twice
     * this one's after short ones (a run's first step that was not read -
     * a reading between steps ended the run - leaves t_run stale: the run
     * looks long, the safe side) */
    if (now - start > n * r->run_lim)
        r->krun = 1;
    else if (r->krun < CORO__TRACE_RUN_MAX)
        r->krun <<= 1;
    r->nrun = 0;
    *t0 = now;
    r->t_now = now;     /* the step goes on when the await completes at once */
    /* a finished job: coro__finish frees its frame and wakes its joiner,
     * then the worker takes its next job, which starts here - unless an
     * on_exit hook (user code) runs first, or the finish wakes a thread or
     * a parked worker (a system call: those hooks clear t_next) */
    if (why == CORO__TRACE_END_DONE)
        r->t_next = job->on_exit ? 0 : now;
}

void coro__trace_io_thread_(coro_sched_t *s)
{
    tls_io_sched = s;
}

/* The ring of the calling plain thread, made at its first event: cached
 * in tls_thr for one trace at a time (a thread that records into two
 * traced schedulers by turns takes the slow path at each switch, and
 * gets one ring per scheduler all the same: it finds its ring by its
 * owner).  NULL when CORO__TRACE_THREAD_RINGS threads have one already. */
static struct coro__trace_ring *thread_ring(coro_sched_t *s, struct coro__trace *t)
{
    pthread_t self = pthread_self();
    struct coro__trace_ring *r = NULL;

    coro__spin_lock(&t->thr_lock);
    for (uint32_t i = 0; i < t->nthr && !r; i++)
        if (pthread_equal(t->thr[i]->owner, self))
            r = t->thr[i];
    if (!r && t->nthr < CORO__TRACE_THREAD_RINGS && (r = ring_new(s, t->cap))) {
        r->owner = self;
        t->thr[t->nthr] = r;
        /* release: the ring and its slot before the count a writer of the
         * trace file acquires */
        __atomic_store_n(&t->nthr, t->nthr + 1, __ATOMIC_RELEASE);
    }
    coro__spin_unlock(&t->thr_lock);
    tls_thr.gen = t->gen;
    tls_thr.ring = r;
    return r;
}

void coro__trace_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta)
{
    struct coro__worker *w = coro__tls_worker;
    struct coro__trace *t = s->trace;
    struct coro__trace_ring *r;

    /* a plain thread with a ring in this trace took coro__trace_ring_any's inline
     * path; the others (a worker of s, the I/O thread) never take one */
    if (w && w->s == s) {
        coro__trace_ring_put_at(w->trace_ring, coro__trace_ring_stamp(w->trace_ring), a, b, meta);
    } else if (tls_io_sched == s) {
        coro__trace_ring_put(t->io, a, b, meta);
    } else {
        r = tls_thr.gen == t->gen ? tls_thr.ring : thread_ring(s, t);
        if (CORO__LIKELY(r)) {
            coro__trace_ring_put_at(r, coro__trace_ring_other_stamp(s, coro__trace_ring_thread_stamp(r)), a, b, meta);
        } else {
            coro__spin_lock(&t->ext->lock);
            coro__trace_ring_put_at(t->ext, coro__trace_ring_other_stamp(s, coro__trace_clock_real()), a, b,
                            meta);
            coro__spin_unlock(&t->ext->lock);
        }
    }
}
