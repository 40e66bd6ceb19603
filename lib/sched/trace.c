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
 * I/O thread (written only by it), and one shared by every other thread
 * (plain threads spawning or waking jobs), whose writers take its
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
 * Time: rdtsc on x86 (cheaper than clock_gettime), converted to coro_now()
 * nanoseconds with two calibration points: ring creation and the write.
 * A reading still costs 11-19 ns, most of what tracing costs a short job,
 * so a worker reads the clock about once per job (lib/sched/trace.h,
 * coro__tr_stamp and coro__trace_begin): its spawns and wakes take the
 * start of the step that made them, and a step that follows a finished
 * job with nothing in between starts at that job's end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ck_malloc.h>

#include "sched/trace.h"

#define TRACE_MAX_EVENTS (1u << 24)

struct coro__trace {
    uint32_t cap;
    struct coro__tring *io, *ext;
    char *path;             /* COROKIT_TRACE, or NULL */
    uint64_t tsc0;
    int64_t ns0;
};

static __thread coro_sched_t *tls_io_sched;

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
    char *raw = s->alloc ? s->alloc->malloc(n) : malloc(n);
    if (!raw)
        return NULL;
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + CORO__CACHELINE - 1) &
                  ~(uintptr_t)(CORO__CACHELINE - 1);
    struct coro__tring *r = (struct coro__tring *)p;
    memcpy((char *)r - sizeof(void *), &raw, sizeof raw);
    memset(r, 0, sizeof *r);
    r->mask = cap - 1;
    return r;
}

static void ring_free(coro_sched_t *s, struct coro__tring *r, uint32_t cap)
{
    void *raw;

    if (!r)
        return;
    memcpy(&raw, (char *)r - sizeof(void *), sizeof raw);
    if (s->alloc)
        s->alloc->free(raw, ring_size(cap) + CORO__CACHELINE + sizeof(void *), false);
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
    for (int i = 0; i < s->nslots; i++)
        if (!(s->w[i]->tring = ring_new(s, cap)))
            goto fail;
    t->ns0 = coro__now();
    t->tsc0 = clock_raw();
    s->trace = t;
    return 0;
fail:
    s->trace = t;
    coro__trace_fini(s);
    return -ENOMEM;
}

static int write_file(coro_sched_t *s, const char *path);

void coro__trace_write_env(coro_sched_t *s)
{
    struct coro__trace *t = s->trace;

    if (t && t->path) {
        int rc = write_file(s, t->path);
        if (rc < 0)
            fprintf(stderr, "corokit: COROKIT_TRACE=%s: %s\n", t->path, coro_strerror(rc));
    }
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
    if (t->path)
        coro__free(s, t->path, strlen(t->path) + 1);
    s->trace = NULL;
    coro__free(s, t, sizeof *t);
}

/* ---- recording ---------------------------------------------------------------- */

void coro__trace_long(struct coro__tring *r, const void *job, const void *fn, uint64_t meta,
                      uint64_t t0, uint64_t now, const char *await)
{
    coro__tr_put_at(r, t0, job, fn, meta | (uint64_t)UINT32_MAX << 32);
    coro__tr_put_at(r, now, job, NULL, CORO__TR_LONG);
    if (await)
        coro__tr_put_at(r, now, job, await, CORO__TR_AWAIT);
}

void coro__trace_io_thread_(coro_sched_t *s)
{
    tls_io_sched = s;
}

void coro__trace_any(coro_sched_t *s, const void *a, const void *b, uint64_t meta)
{
    struct coro__worker *w = coro__tls_worker;
    struct coro__trace *t = s->trace;

    if (w && w->s == s) {
        coro__tr_put_at(w->tring, coro__tr_stamp(w->tring), a, b, meta);
    } else if (tls_io_sched == s) {
        coro__tr_put(t->io, a, b, meta);
    } else {
        coro__spin_lock(&t->ext->lock);
        coro__tr_put(t->ext, a, b, meta);
        coro__spin_unlock(&t->ext->lock);
    }
}

/* ---- writing the Chrome trace ------------------------------------------------- */

struct snap {
    struct coro__tev *ev;
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
    if (!out->ev)
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

static double to_us(const struct wctx *c, uint64_t ts)
{
#if defined(__x86_64__) || defined(__i386__)
    return ((double)(int64_t)(ts - c->tsc0) * c->ns_per_tick) / 1000.0;
#else
    return (double)((int64_t)ts - c->ns0) / 1000.0;
#endif
}

static void json_str(FILE *f, const char *p)
{
    fputc('"', f);
    for (; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static const char *fn_name(struct wctx *c, const void *fn)
{
    Dl_info di;

    if (fn == c->last_fn)
        return c->last_name;
    c->last_fn = fn;
    if (fn && dladdr(fn, &di) && di.dli_sname && di.dli_saddr == fn) {
        snprintf(c->last_name, sizeof c->last_name, "%s", di.dli_sname);
    } else if (fn && dladdr(fn, &di) && di.dli_fname && di.dli_fbase) {
        /* a static function: its module and offset (nm / addr2line find it) */
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

        switch (type) {
        case CORO__TR_STEP: {
            const char *await = NULL;
            double dur = to_us(c, e->ts + x) - to_us(c, e->ts);
            size_t k = i + 1;
            if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TR_LONG && sn->ev[k].a == e->a)
                dur = to_us(c, sn->ev[k++].ts) - to_us(c, e->ts);
            if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TR_AWAIT && sn->ev[k].a == e->a)
                await = (const char *)(uintptr_t)sn->ev[k].b;
            ev_head(c, fn_name(c, (const void *)(uintptr_t)e->b), "job", 'X', tid, e->ts);
            fprintf(c->f, ",\"dur\":%.3f,\"args\":{", dur);
            job_args(c, e->a, eprio, ecls);
            fprintf(c->f, ",\"fn\":\"0x%" PRIx64 "\",\"end\":\"%s%s%s\"}}", e->b,
                    end_name(why), await ? " " : "", await ? await : "");
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
    int n = s->nslots, rc = 0;
    struct snap *sn = coro__alloc(s, (size_t)(n + 2) * sizeof *sn);
    struct wctx c = { .s = s, .first = true, .tsc0 = t->tsc0, .ns0 = t->ns0 };

    if (!sn)
        return -ENOMEM;
    memset(sn, 0, (size_t)(n + 2) * sizeof *sn);
    for (int i = 0; i < n + 2 && rc == 0; i++) {
        struct coro__tring *r = i < n ? s->w[i]->tring : i == n ? t->io : t->ext;
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
    c.ns_per_tick = tsc1 > t->tsc0 ? (double)(ns1 - t->ns0) / (double)(tsc1 - t->tsc0) : 1.0;
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
        for (int i = 0; i < n + 2; i++)
            emit_ring(&c, &sn[i], i);
        fputs("\n]}\n", c.f);
        if (ferror(c.f))
            rc = -EIO;
        if (fclose(c.f) != 0 && rc == 0)
            rc = -errno;
    }
    for (int i = 0; i < n + 2; i++)
        if (sn[i].ev)
            coro__free(s, sn[i].ev, (size_t)t->cap * sizeof *sn[i].ev);
    coro__free(s, sn, (size_t)(n + 2) * sizeof *sn);
    return rc;
}

int coro_sched_trace_write(coro_sched_t *s, const char *path)
{
    if (!s || !path || !*path)
        return -EINVAL;
    if (!s->trace)
        return -EOPNOTSUPP;     /* ENOTSUP: the same code on Linux */
    return write_file(s, path);
}
