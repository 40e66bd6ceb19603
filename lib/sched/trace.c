/* SPDX-License-Identifier: MIT */
/* The built-in tracer: per-thread event rings kept as a flight recorder,
 * written out as a Chrome trace (JSON) that Perfetto and chrome://tracing
 * open, and that tools/timeline draws.
 *
 * OFF.  s->trace and every worker's tring are NULL; each hook (lib/sched/trace.h)
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
 * release; CORO__TR_BATCH is that most).  A
 * reader (coro_sched_trace_write, any thread, while the scheduler runs)
 * loads head with acquire, copies the last min(head, cap) slots with
 * relaxed loads, then - after a full fence, so that its copies are ordered
 * before the second load (a seqlock's read side) - loads head again: the
 * slots the writer may have overwritten meanwhile (index < head2 - cap,
 * plus the CORO__TR_BATCH slots the writer may be filling without having
 * published them yet) are dropped.  Every access to an event word is atomic, so a
 * reader racing a writer reads stale or new words, never torn ones, and
 * the dropped range covers every slot that could be a mix.  When the
 * workers have stopped (coro_sched_destroy) nothing races.
 *
 * Time: rdtsc on x86 (cheaper than clock_gettime: 11 ns against 22-27 in
 * a loop here; the CPU has constant_tsc and nonstop_tsc), converted to
 * coro_now() nanoseconds with two calibration points: ring creation and the
 * write; coro_now() itself elsewhere.  A reading still cost about 20 ns in
 * the spawn path, most of what tracing cost a short job, so a worker reads
 * the clock about once per run of up to CORO__TRACE_RUN_MAX short steps
 * (lib/sched/trace.h, "Runs", which says what the times then promise), and
 * a plain thread once per CORO__TRACE_THREAD_RUN events or coarse-clock
 * tick (coro__tr_thread_stamp, trace.h).  Events not read carry ts 0 and
 * get their time here, when the trace is written (resolve, resolve_thread).
 * A virtual scheduler (.virtual_time) stamps every event with its virtual
 * clock instead - its one worker's ring through coro__trace_clock on the
 * driving thread, the other rings through coro__tr_other_stamp - and is
 * written in those nanoseconds, from the clock's start: a seeded run's
 * trace is the same file every time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "sched/trace.h"

#define TRACE_MAX_EVENTS (1u << 24)


static __thread coro_sched_t *tls_io_sched;

int coro__tr_rdtsc;

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
 * NULL ring: the thread uses the shared one (trace.h, coro__tr_any) */
__thread struct coro__tr_thr coro__tls_trthr;
#define tls_thr coro__tls_trthr
static uint64_t trace_gens;     /* atomic: the last trace number given */

#define clock_raw coro__trace_clock

static size_t ring_size(uint32_t cap)
{
    return sizeof(struct coro__tring) + (size_t)cap * sizeof(struct coro__tev);
}

/* A ring, cache-line aligned; its slots are not zeroed (nothing reads a
 * slot before it is written), so their pages are touched only as the ring
 * fills: no memset of cap * 32 bytes per thread at create. */
static struct coro__tring *ring_new(coro_sched_t *s, uint32_t cap)
{
    size_t n = ring_size(cap) + CORO__CACHELINE + sizeof(void *);
    char *raw = s->alloc ? s->alloc->alloc(s->alloc->ctx, n) : malloc(n);
    if (!raw)
        return NULL;
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + CORO__CACHELINE - 1) &
                  ~(uintptr_t)(CORO__CACHELINE - 1);
    struct coro__tring *r = (struct coro__tring *)p;
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

static void ring_free(coro_sched_t *s, struct coro__tring *r, uint32_t cap)
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
    __atomic_store_n(&coro__tr_rdtsc, tsc_invariant(), __ATOMIC_RELAXED);
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
    if (!(w->tring = ring_new(s, t->cap)))
        return -ENOMEM;
    w->tring->run_lim = t->run_lim;
    return 0;
}

static int write_file(coro_sched_t *s, const char *path);

/* COROKIT_TRACE's files written by this process so far */
static uint32_t env_writes;

/* The first scheduler destroyed writes FILE, the n-th FILE with ".n"
 * before its extension (trace.json, trace.2.json, ...): a program with
 * several schedulers keeps every trace, none overwrites another. */
void coro__trace_write_env(coro_sched_t *s)
{
    struct coro__trace *t = s->trace;
    char buf[4096];
    const char *path;

    if (!t || !t->path)
        return;
    /* relaxed: a unique number is all it needs */
    uint32_t n = __atomic_add_fetch(&env_writes, 1, __ATOMIC_RELAXED);
    path = t->path;
    if (n > 1) {
        const char *dot = strrchr(t->path, '.');
        const char *slash = strrchr(t->path, '/');
        if (!dot || (slash && dot < slash) || dot == t->path || (slash && dot == slash + 1))
            dot = t->path + strlen(t->path);        /* no extension */
        snprintf(buf, sizeof buf, "%.*s.%u%s", (int)(dot - t->path), t->path, n, dot);
        path = buf;
    }
    int rc = write_file(s, path);
    if (rc < 0)
        fprintf(stderr, "corokit: COROKIT_TRACE=%s: %s\n", path, coro_strerror(rc));
}

void coro__trace_fini(coro_sched_t *s)
{
    struct coro__trace *t = s->trace;

    if (!t)
        return;
    for (int i = 0; i < s->nslots; i++) {
        if (s->w[i])
            ring_free(s, s->w[i]->tring, t->cap);
        if (s->w[i])
            s->w[i]->tring = NULL;
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

void coro__trace_syscall_(struct coro__tring *r, const void *a, uint64_t meta)
{
    uint64_t t = coro__trace_clock();
    coro__tr_put_at(r, t, a, NULL, meta);
    r->t_next = 0;
    r->nrun = 0;
    r->t_run = t;
}

void coro__trace_idle_(struct coro__tring *r, bool end)
{
    r->t_next = 0;
    if (r->nrun && !end && !r->idle++)
        return;             /* the first vain look: the run goes on */
    r->idle = 0;
    if (r->nrun) {
        r->nrun = 0;
        coro__tr_put_at(r, coro__trace_clock(), NULL, NULL, CORO__TR_MARK);
    }
}

/* a step of at least 2^32 ticks: the step, then LONG (its end), then the
 * await's name if any */
static void step_long(struct coro__tring *r, const void *job, const void *fn, uint64_t meta,
                      uint64_t t0, uint64_t now, const char *await)
{
    coro__tr_put_at(r, t0, job, fn, meta | (uint64_t)UINT32_MAX << 32);
    coro__tr_put_at(r, now, job, NULL, CORO__TR_LONG);
    if (await)
        coro__tr_put_at(r, now, job, await, CORO__TR_AWAIT);
}

void coro__trace_step_end(struct coro__tring *r, coro_t *job, uint64_t *t0, unsigned why,
                          const char *await)
{
    uint64_t h = coro__tr_head(r), start = *t0, now = coro__trace_clock();
    uint64_t meta = CORO__TR_META(CORO__TR_STEP | why << 4, job->prio, job->cls, 0);
    uint32_t n = r->nrun + 1;

    if (!start) {
        /* the last step of a run: its end is the run's */
        coro__tr_set(r, h, now, job, (const void *)job->fn,
                     meta | (uint64_t)CORO__TR_NOSTART << 4);
        if (await)
            coro__tr_set(r, ++h, now, job, await, CORO__TR_AWAIT);
        coro__tr_publish(r, h + 1);
        start = r->t_run;
    } else if (CORO__UNLIKELY(now - start >= UINT32_MAX)) {
        step_long(r, job, (const void *)job->fn, meta, start, now, await);
    } else {
        coro__tr_set(r, h, start, job, (const void *)job->fn, meta | (now - start) << 32);
        if (await)
            coro__tr_set(r, ++h, now, job, await, CORO__TR_AWAIT);
        coro__tr_publish(r, h + 1);
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
    if (why == CORO__TR_END_DONE)
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
static struct coro__tring *thread_ring(coro_sched_t *s, struct coro__trace *t)
{
    pthread_t self = pthread_self();
    struct coro__tring *r = NULL;

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
    struct coro__tring *r;

    /* a plain thread with a ring in this trace took coro__tr_any's inline
     * path; the others (a worker of s, the I/O thread) never take one */
    if (w && w->s == s) {
        coro__tr_put_at(w->tring, coro__tr_stamp(w->tring), a, b, meta);
    } else if (tls_io_sched == s) {
        coro__tr_put(t->io, a, b, meta);
    } else {
        r = tls_thr.gen == t->gen ? tls_thr.ring : thread_ring(s, t);
        if (CORO__LIKELY(r)) {
            coro__tr_put_at(r, coro__tr_other_stamp(s, coro__tr_thread_stamp(r)), a, b, meta);
        } else {
            coro__spin_lock(&t->ext->lock);
            coro__tr_put_at(t->ext, coro__tr_other_stamp(s, coro__trace_clock_real()), a, b,
                            meta);
            coro__spin_unlock(&t->ext->lock);
        }
    }
}

/* ---- writing the Chrome trace ------------------------------------------------- */

struct snap {
    struct coro__tev *ev;
    uint64_t *end;          /* a STEP's end, once resolved (resolve) */
    uint32_t *run;          /* the steps of its run (1: read on its own) */
    size_t n;
};

/* copy ring r's recorded events (opening essay: the read side) */
static int snapshot(coro_sched_t *s, struct coro__tring *r, uint32_t cap, struct snap *out)
{
    /* acquire: pairs with the writer's release of head */
    uint64_t h1 = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    uint64_t first = h1 > cap ? h1 - cap : 0;

    out->n = 0;
    out->ev = coro__alloc(s, (size_t)cap * sizeof *out->ev);
    out->end = coro__alloc(s, (size_t)cap * sizeof *out->end);
    out->run = coro__alloc(s, (size_t)cap * sizeof *out->run);
    if (!out->ev || !out->end || !out->run)
        return -ENOMEM;
    for (uint64_t i = first; i < h1; i++) {
        struct coro__tev *e = &r->ev[i & r->mask], *d = &out->ev[i - first];
        d->ts = __atomic_load_n(&e->ts, __ATOMIC_RELAXED);
        d->a = __atomic_load_n(&e->a, __ATOMIC_RELAXED);
        d->b = __atomic_load_n(&e->b, __ATOMIC_RELAXED);
        d->meta = __atomic_load_n(&e->meta, __ATOMIC_RELAXED);
    }
    /* full fence: the copies above happen before the second look at head */
    coro__fence_seq_cst();
    uint64_t h2 = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
    /* valid: index >= h2 - cap + CORO__TR_BATCH (the writer may be filling
     * the CORO__TR_BATCH slots after h2 before it publishes them) */
    uint64_t lo = h2 + CORO__TR_BATCH > cap ? h2 + CORO__TR_BATCH - cap : 0;
    if (lo < first)
        lo = first;
    if (lo >= h1) {
        out->n = 0;
        return 0;
    }
    memmove(out->ev, out->ev + (lo - first), (size_t)(h1 - lo) * sizeof *out->ev);
    out->n = (size_t)(h1 - lo);
    return 0;
}

/* The times of a worker's runs ("Runs" in sched/trace.h).  Walk the
 * events in their order, keeping A, the last reading; the steps of an open
 * run wait until a reading B ends it (a step's read end or start, or any
 * event stamped between steps), then get equal shares of [A, B] in their
 * order.  Then every event with ts 0 (made in a step of a run) takes the
 * start of the step that follows it in the ring: the step that made it.
 * A run whose A fell out of the flight recorder is dropped; a run still
 * open when the trace is written ends at t_end (the write). */
struct pend {
    size_t first;           /* the run's first step, SIZE_MAX = no run open */
    uint64_t a;             /* the reading before it, 0 = not recorded */
};

static void close_run(struct snap *sn, struct pend *p, size_t last, uint64_t b)
{
    uint32_t m = 0, k = 0;

    if (p->first == SIZE_MAX)
        return;
    for (size_t i = p->first; i <= last; i++)
        if ((sn->ev[i].meta & 0xf) == CORO__TR_STEP)
            m++;
    if (p->a && b < p->a)
        b = p->a;           /* a clock that went back (another CPU's TSC): no negative length */
    for (size_t i = p->first; i <= last; i++) {
        if ((sn->ev[i].meta & 0xf) != CORO__TR_STEP)
            continue;
        if (p->a) {
            sn->ev[i].ts = p->a + (b - p->a) * k / m;
            sn->end[i] = p->a + (b - p->a) * (k + 1) / m;
        } else {
            sn->ev[i].ts = sn->end[i] = 0;     /* dropped: its run began before the window */
        }
        sn->run[i] = m;
        k++;
    }
    p->first = SIZE_MAX;
}

static void resolve(struct snap *sn, uint64_t t_end)
{
    struct pend p = { SIZE_MAX, 0 };
    size_t n = sn->n;

    for (size_t i = 0; i < n; i++) {
        struct coro__tev *e = &sn->ev[i];
        unsigned type = (unsigned)(e->meta & 0xf), why = (unsigned)(e->meta >> 4 & 0xf);
        uint32_t x = (uint32_t)(e->meta >> 32);

        if (type == CORO__TR_STEP) {
            if (!(why & CORO__TR_NOSTART)) {
                close_run(sn, &p, i ? i - 1 : 0, e->ts);   /* its start: a reading */
                p.a = e->ts;
                if (why & CORO__TR_NOEND) {
                    p.first = i;
                } else {
                    sn->end[i] = e->ts + x;
                    if (x == UINT32_MAX && i + 1 < n &&
                        (sn->ev[i + 1].meta & 0xf) == CORO__TR_LONG && sn->ev[i + 1].a == e->a)
                        sn->end[i] = sn->ev[i + 1].ts;
                    sn->run[i] = 1;
                    p.a = sn->end[i];
                }
            } else {
                if (p.first == SIZE_MAX)
                    p.first = i;
                if (!(why & CORO__TR_NOEND)) {
                    uint64_t b = e->ts;                 /* its end: the run's */
                    close_run(sn, &p, i, b);
                    p.a = b;
                }
            }
        } else if (type != CORO__TR_AWAIT && type != CORO__TR_LONG && e->ts) {
            close_run(sn, &p, i, e->ts);                /* a reading between steps */
            p.a = e->ts;
        }
    }
    close_run(sn, &p, n ? n - 1 : 0, t_end);
    /* events made in a step of a run: the start of that step */
    uint64_t next = 0;
    for (size_t i = n; i-- > 0;) {
        struct coro__tev *e = &sn->ev[i];
        unsigned type = (unsigned)(e->meta & 0xf);
        if (type == CORO__TR_STEP)
            next = e->ts;
        else if (!e->ts && type != CORO__TR_AWAIT)
            e->ts = next;
    }
}

/* A plain thread's ring (coro__tr_thread_stamp): an event with ts 0 lies between
 * the readings before and after it.  When those are at most
 * CORO__TRACE_RUN_NS apart per event (a burst), the events between are
 * spread evenly over them; else (the thread paused, or the next reading
 * is not recorded yet) each is placed at the reading before it, which is
 * at most one coarse-clock tick earlier than the event.  An event with
 * no reading before it in the window is dropped. */
static void resolve_thread(struct snap *sn, uint64_t lim)
{
    size_t n = sn->n, i = 0;

    while (i < n && !sn->ev[i].ts)
        i++;                            /* no reading before: dropped (ts 0) */
    while (i < n) {
        size_t j = i + 1;               /* ev[i] is a reading */
        while (j < n && !sn->ev[j].ts)
            j++;
        uint64_t a = sn->ev[i].ts, m = j - i;
        bool spread = j < n && sn->ev[j].ts >= a && sn->ev[j].ts - a <= m * lim;
        for (size_t k = i + 1; k < j; k++)
            sn->ev[k].ts = spread ? a + (sn->ev[j].ts - a) * (k - i) / m : a;
        i = j;
    }
}

struct wctx {
    FILE *f;
    coro_sched_t *s;
    bool first;
    uint64_t tsc0;
    int64_t ns0;
    double ns_per_tick;
    const void *last_fn;
    char last_name[256];
};

/* ticks to microseconds since the trace began (ns_per_tick is 1 when the
 * clock is coro_now()) */
static double to_us(const struct wctx *c, uint64_t ts)
{
    return ((double)(int64_t)(ts - c->tsc0) * c->ns_per_tick) / 1000.0;
}

/* the length of the well-formed UTF-8 sequence at p (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), 0 if there is
 * none (the NUL that ends p is never part of one) */
static int utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    unsigned char lo = 0x80, hi = 0xbf;
    int n;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;          /* overlong below */
        else if (c == 0xed)
            hi = 0x9f;          /* U+D800..DFFF, surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;          /* overlong below */
        else if (c == 0xf4)
            hi = 0x8f;          /* above U+10FFFF */
    } else
        return 0;               /* a continuation byte, C0, C1, F5..FF */
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* p as a JSON string.  Names come from the system (a module's file name
 * holds whatever bytes the program's path has) and may be cut at a byte
 * limit, so they need not be UTF-8, which JSON requires: each byte that
 * begins no well-formed sequence becomes U+FFFD */
static void json_str(FILE *f, const char *p)
{
    const unsigned char *u = (const unsigned char *)p;

    fputc('"', f);
    while (*u) {
        unsigned char ch = *u;
        int n = utf8_len(u);
        if (n == 0) {
            fputs("\\ufffd", f);
            u++;
        } else if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
            u++;
        } else if (ch < 0x20) {
            fprintf(f, "\\u%04x", ch);
            u++;
        } else {
            fwrite(u, 1, (size_t)n, f);
            u += n;
        }
    }
    fputc('"', f);
}

static const char *fn_name(struct wctx *c, const void *fn)
{
    if (fn == c->last_fn)
        return c->last_name;
    c->last_fn = fn;
    /* static bodies too (base/symbol.c reads the object's symbol table) */
    if (fn && coro__sym_name(fn, c->last_name, sizeof c->last_name))
        return c->last_name;
    Dl_info di;
    if (fn && dladdr(fn, &di) && di.dli_fname && di.dli_fbase) {
        /* a stripped object: its module and offset (addr2line finds it
         * with the unstripped file) */
        const char *base = strrchr(di.dli_fname, '/');
        snprintf(c->last_name, sizeof c->last_name, "%s+0x%tx", base ? base + 1 : di.dli_fname,
                 (const char *)fn - (const char *)di.dli_fbase);
    } else
        snprintf(c->last_name, sizeof c->last_name, "%p", fn);
    return c->last_name;
}

static const char *prio_name(int prio)
{
    return prio > 0 ? "HIGH" : prio < 0 ? "LOW" : "NORMAL";
}

static void ev_head(struct wctx *c, const char *name, const char *cat, char ph, int tid,
                    uint64_t ts)
{
    fputs(c->first ? "\n" : ",\n", c->f);
    c->first = false;
    fputs("{\"name\":", c->f);
    json_str(c->f, name);
    fprintf(c->f, ",\"cat\":\"%s\",\"ph\":\"%c\",\"pid\":1,\"tid\":%d,\"ts\":%.3f", cat, ph, tid,
            to_us(c, ts));
    if (ph == 'i')
        fputs(",\"s\":\"t\"", c->f);
}

static void job_args(struct wctx *c, uint64_t job, int prio, unsigned cls)
{
    char cpus[256] = "any";

    /* acquire: pairs with coro__cls_intern's release of the count */
    if (cls > 0 && cls < __atomic_load_n(&c->s->ncls, __ATOMIC_ACQUIRE)) {
        struct coro__cls *k = coro__cls_get(c->s, cls);
        if (k && coro_cpuset_format(&k->cpus, cpus, sizeof cpus) >= (int)sizeof cpus)
            snprintf(cpus, sizeof cpus, "(long)");
    }
    fprintf(c->f, "\"job\":\"0x%" PRIx64 "\",\"prio\":\"%s\",\"class\":%u,\"cpus\":\"%s\"", job,
            prio_name(prio), cls, cpus);
}

static const char *from_name(int tid, int nslots, char *buf, size_t len)
{
    if (tid < nslots)
        snprintf(buf, len, "worker %d", tid);
    else if (tid == nslots)
        snprintf(buf, len, "io");
    else
        snprintf(buf, len, "thread");
    return buf;
}

static const char *end_name(unsigned why)
{
    switch (why) {
    case CORO__TR_END_DONE: return "done";
    case CORO__TR_END_YIELD: return "yield";
    default: return "await";
    }
}

/* one ring's events as trace events on lane tid */
static void emit_ring(struct wctx *c, const struct snap *sn, int tid)
{
    char from[32];
    bool parked = false, polling = false;
    uint64_t park0 = 0, poll0 = 0;

    from_name(tid, c->s->nslots, from, sizeof from);
    for (size_t i = 0; i < sn->n; i++) {
        const struct coro__tev *e = &sn->ev[i];
        unsigned type = (unsigned)(e->meta & 0xf), why = (unsigned)(e->meta >> 4 & 0xf);
        int eprio = (int8_t)(e->meta >> 8);
        unsigned ecls = (unsigned)((e->meta >> 16) & 0xffff);
        unsigned x = (unsigned)(e->meta >> 32);

        if (!e->ts)
            continue;           /* made in a step that is not in the window */
        switch (type) {
        case CORO__TR_STEP: {
            const char *await = NULL;
            double dur = to_us(c, sn->end[i]) - to_us(c, e->ts);
            size_t k = i + 1;
            if (!e->ts)
                break;          /* its run began before the window (resolve) */
            if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TR_LONG && sn->ev[k].a == e->a)
                k++;
            if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TR_AWAIT && sn->ev[k].a == e->a)
                await = (const char *)(uintptr_t)sn->ev[k].b;
            ev_head(c, fn_name(c, (const void *)(uintptr_t)e->b), "job", 'X', tid, e->ts);
            fprintf(c->f, ",\"dur\":%.3f,\"args\":{", dur);
            job_args(c, e->a, eprio, ecls);
            fprintf(c->f, ",\"fn\":\"0x%" PRIx64 "\",\"end\":\"%s%s%s\"", e->b,
                    end_name(why & 3), await ? " " : "", await ? await : "");
            if (sn->run[i] > 1)
                fprintf(c->f, ",\"run\":%" PRIu32, sn->run[i]);
            fputs("}}", c->f);
            break;
        }
        case CORO__TR_SPAWN:
        case CORO__TR_WAKE:
            ev_head(c, type == CORO__TR_SPAWN ? "spawn" : "wake", type == CORO__TR_SPAWN ? "spawn" : "wake", 'i', tid, e->ts);
            fputs(",\"args\":{", c->f);
            job_args(c, e->a, eprio, ecls);
            if (type == CORO__TR_SPAWN)
                fprintf(c->f, ",\"fn\":\"0x%" PRIx64 "\",\"body\":", e->b);
            else
                fputs(",\"from\":", c->f);
            json_str(c->f, type == CORO__TR_SPAWN ? fn_name(c, (const void *)(uintptr_t)e->b)
                                                  : from);
            fputs("}}", c->f);
            break;
        case CORO__TR_STEAL:
            ev_head(c, "steal", "sched", 'i', tid, e->ts);
            fprintf(c->f, ",\"args\":{\"victim\":%" PRIu64 ",\"jobs\":%u}}", e->a, x);
            break;
        case CORO__TR_NUDGE:
            ev_head(c, "unpark", "sched", 'i', tid, e->ts);
            fprintf(c->f, ",\"args\":{\"worker\":%u,\"from\":\"%s\"}}", x, from);
            break;
        case CORO__TR_THREAD_WAKE:
            ev_head(c, "wake thread", "wake", 'i', tid, e->ts);
            fprintf(c->f, ",\"args\":{\"record\":\"0x%" PRIx64 "\"}}", e->a);
            break;
        case CORO__TR_PARK:
            parked = true;
            park0 = e->ts;
            break;
        case CORO__TR_UNPARK:
            if (!parked)
                break;
            parked = false;
            ev_head(c, "parked", "idle", 'X', tid, park0);
            fprintf(c->f, ",\"dur\":%.3f}", to_us(c, e->ts) - to_us(c, park0));
            break;
        case CORO__TR_POLL0:
            polling = true;
            poll0 = e->ts;
            break;
        case CORO__TR_POLL1:
            if (!polling)
                break;
            polling = false;
            ev_head(c, "epoll_wait", "io", 'X', tid, poll0);
            fprintf(c->f, ",\"dur\":%.3f,\"args\":{\"events\":%u}}",
                    to_us(c, e->ts) - to_us(c, poll0), x);
            break;
        default:
            break;
        }
    }
}

static void lane_name(struct wctx *c, int tid, const char *name)
{
    fputs(c->first ? "\n" : ",\n", c->f);
    c->first = false;
    fprintf(c->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":",
            tid);
    json_str(c->f, name);
    fprintf(c->f, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                  "\"args\":{\"sort_index\":%d}}", tid, tid);
}

static int write_file(coro_sched_t *s, const char *path)
{
    struct coro__trace *t = s->trace;
    /* acquire: pairs with thread_ring's release (the rings in thr) */
    int n = s->nslots, nthr = (int)__atomic_load_n(&t->nthr, __ATOMIC_ACQUIRE), rc = 0;
    int nr = n + 2 + nthr;  /* workers, io, the shared ring, plain threads' */
    struct snap *sn = coro__alloc(s, (size_t)nr * sizeof *sn);
    struct wctx c = { .s = s, .first = true, .tsc0 = t->tsc0, .ns0 = t->ns0 };

    if (!sn)
        return -ENOMEM;
    memset(sn, 0, (size_t)nr * sizeof *sn);
    for (int i = 0; i < nr && rc == 0; i++) {
        struct coro__tring *r = i < n ? s->w[i]->tring : i == n ? t->io : i == n + 1 ? t->ext
                                                                                 : t->thr[i - n - 2];
        if (r == t->ext) {
            coro__spin_lock(&r->lock);      /* its writers do not hold head */
            rc = snapshot(s, r, t->cap, &sn[i]);
            coro__spin_unlock(&r->lock);
        } else {
            rc = snapshot(s, r, t->cap, &sn[i]);
        }
    }
    uint64_t tsc1 = clock_raw();
    int64_t ns1 = coro__now();
    if (s->vtime) {
        /* every event is stamped in virtual ns (coro__trace_clock,
         * coro__tr_other_stamp): shown from the clock's start, unscaled */
        c.tsc0 = CORO_VIRTUAL_TIME_START;
        tsc1 = (uint64_t)coro__sched_clock(s);
    }
    for (int i = 0; i < nr && rc == 0; i++) {
        if (i < n + 2)
            resolve(&sn[i], tsc1);
        else
            resolve_thread(&sn[i], t->run_lim);
    }
    c.ns_per_tick = s->vtime ? 1.0
                  : tsc1 > t->tsc0 ? (double)(ns1 - t->ns0) / (double)(tsc1 - t->tsc0) : 1.0;
    if (rc == 0) {
        c.f = fopen(path, "w");
        if (!c.f)
            rc = -errno;
    }
    if (rc == 0) {
        char name[32];
        fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"corokit\"},"
              "\"traceEvents\":[", c.f);
        c.first = false;
        fprintf(c.f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
                     "\"args\":{\"name\":\"corokit\"}}");
        for (int i = 0; i < n; i++) {
            if (s->nworkers > 0)
                snprintf(name, sizeof name, "coro-w%d", s->w[i]->cpu);
            else
                snprintf(name, sizeof name, "coro-run");
            lane_name(&c, i, name);
        }
        lane_name(&c, n, "coro-io");
        lane_name(&c, n + 1, "threads");
        for (int i = 0; i < nr; i++)
            emit_ring(&c, &sn[i], i < n + 2 ? i : n + 1);  /* every plain thread: "threads" */
        fputs("\n]}\n", c.f);
        if (ferror(c.f))
            rc = -EIO;
        if (fclose(c.f) != 0 && rc == 0)
            rc = -errno;
    }
    for (int i = 0; i < nr; i++) {
        if (sn[i].ev)
            coro__free(s, sn[i].ev, (size_t)t->cap * sizeof *sn[i].ev);
        if (sn[i].end)
            coro__free(s, sn[i].end, (size_t)t->cap * sizeof *sn[i].end);
        if (sn[i].run)
            coro__free(s, sn[i].run, (size_t)t->cap * sizeof *sn[i].run);
    }
    coro__free(s, sn, (size_t)nr * sizeof *sn);
    return rc;
}

int coro_sched_trace_write(coro_sched_t *s, const char *path)
{
    if (!s || !path || !*path)
        return -EINVAL;
    if (!s->trace)
        return -EOPNOTSUPP;     /* ENOTSUP: the same code on Linux */
    int e = errno;      /* stdio and open set it: errno is the caller's */
    int rc = write_file(s, path);
    errno = e;
    return rc;
}
