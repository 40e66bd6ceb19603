/* SPDX-License-Identifier: MIT */
/* Writing the trace: the rings of sched/trace.c copied (the read side of
 * its writer protocol), their unstamped events given times (resolve), and
 * the events written as a Chrome trace (JSON) that Perfetto,
 * chrome://tracing and tools/timeline open. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/trace.h"

#define clock_raw coro__trace_clock

struct snap {
    struct coro__tev *ev;
    uint64_t *end;          /* a STEP's end, once resolved (resolve) */
    uint32_t *run;          /* the steps of its run (1: read on its own) */
    size_t n;
};

/* copy ring r's recorded events (sched/trace.c's essay: the read side) */
static int snapshot(coro_sched_t *s, struct coro__trace_ring *r, uint32_t cap, struct snap *out)
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
    /* valid: index >= h2 - cap + CORO__TRACE_BATCH (the writer may be filling
     * the CORO__TRACE_BATCH slots after h2 before it publishes them) */
    uint64_t lo = h2 + CORO__TRACE_BATCH > cap ? h2 + CORO__TRACE_BATCH - cap : 0;
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
        if ((sn->ev[i].meta & 0xf) == CORO__TRACE_STEP)
            m++;
    if (p->a && b < p->a)
        b = p->a;           /* a clock that went back (another CPU's TSC): no negative length */
    for (size_t i = p->first; i <= last; i++) {
        if ((sn->ev[i].meta & 0xf) != CORO__TRACE_STEP)
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

        if (type == CORO__TRACE_STEP) {
            if (!(why & CORO__TRACE_NOSTART)) {
                close_run(sn, &p, i ? i - 1 : 0, e->ts);   /* its start: a reading */
                p.a = e->ts;
                if (why & CORO__TRACE_NOEND) {
                    p.first = i;
                } else {
                    sn->end[i] = e->ts + x;
                    if (x == UINT32_MAX && i + 1 < n &&
                        (sn->ev[i + 1].meta & 0xf) == CORO__TRACE_LONG && sn->ev[i + 1].a == e->a)
                        sn->end[i] = sn->ev[i + 1].ts;
                    sn->run[i] = 1;
                    p.a = sn->end[i];
                }
            } else {
                if (p.first == SIZE_MAX)
                    p.first = i;
                if (!(why & CORO__TRACE_NOEND)) {
                    uint64_t b = e->ts;                 /* its end: the run's */
                    close_run(sn, &p, i, b);
                    p.a = b;
                }
            }
        } else if (type != CORO__TRACE_AWAIT && type != CORO__TRACE_LONG && e->ts) {
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
        if (type == CORO__TRACE_STEP)
            next = e->ts;
        else if (!e->ts && type != CORO__TRACE_AWAIT)
            e->ts = next;
    }
}

/* A plain thread's ring (coro__trace_ring_thread_stamp): an event with ts 0 lies between
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

/* STABLE NAMES.  A seeded or virtual scheduler's run is the same run every
 * time (docs/testing.md), and so must its trace be, byte for byte; but a
 * job's address and a body's move with ASLR.  So its trace names a job
 * by a number, given in the order the writer meets the job's address (the
 * rings in a fixed order, each in its own order: the same every run; a
 * frame that a later job reuses keeps its number, as it kept its
 * address), a thread's wait record the same way, and a body by its module
 * and offset.  Other traces keep the addresses, which a debugger reads. */
struct idmap {
    uint64_t *key;          /* open addressing, linear probing; 0 = empty */
    uint32_t *val;
    size_t mask;
    uint32_t next;          /* the number the next new address gets */
};

static int idmap_init(coro_sched_t *s, struct idmap *m, size_t nev)
{
    size_t cap = 16;
    while (cap < 2 * nev + 2)
        cap *= 2;
    m->key = coro__alloc(s, cap * sizeof *m->key);
    m->val = coro__alloc(s, cap * sizeof *m->val);
    if (!m->key || !m->val)
        return -ENOMEM;
    memset(m->key, 0, cap * sizeof *m->key);
    m->mask = cap - 1;
    m->next = 1;
    return 0;
}

static void idmap_fini(coro_sched_t *s, struct idmap *m)
{
    if (m->key)
        coro__free(s, m->key, (m->mask + 1) * sizeof *m->key);
    if (m->val)
        coro__free(s, m->val, (m->mask + 1) * sizeof *m->val);
}

/* addr's number (a new one the first time); the map holds at most one
 * key per event, half its slots: a free slot always ends the probe */
static uint32_t idmap_get(struct idmap *m, uint64_t addr)
{
    if (!addr)
        return 0;
    size_t i = (size_t)((addr * 0x9e3779b97f4a7c15u) >> 20) & m->mask;
    while (m->key[i] && m->key[i] != addr)
        i = (i + 1) & m->mask;
    if (!m->key[i]) {
        m->key[i] = addr;
        m->val[i] = m->next++;
    }
    return m->val[i];
}

struct wctx {
    FILE *f;
    coro_sched_t *s;
    bool first;
    bool stable;            /* STABLE NAMES */
    struct idmap jobs, records;
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

/* a job's or a record's name: its address, or under STABLE NAMES its number */
static void addr_name(struct wctx *c, struct idmap *m, uint64_t a, char *buf, size_t len)
{
    if (c->stable)
        snprintf(buf, len, "#%" PRIu32, idmap_get(m, a));
    else
        snprintf(buf, len, "0x%" PRIx64, a);
}

/* a body's address as args.fn: the address, or under STABLE NAMES its
 * module and offset (as fn_name writes a stripped body) */
static void fn_arg(struct wctx *c, uint64_t fn)
{
    Dl_info di;

    if (c->stable && fn && dladdr((void *)(uintptr_t)fn, &di) && di.dli_fname && di.dli_fbase) {
        const char *base = strrchr(di.dli_fname, '/');
        fputs(",\"fn\":", c->f);
        char buf[300];
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base ? base + 1 : di.dli_fname,
                 fn - (uint64_t)(uintptr_t)di.dli_fbase);
        json_str(c->f, buf);
        return;
    }
    fprintf(c->f, ",\"fn\":\"0x%" PRIx64 "\"", fn);
}

static void job_args(struct wctx *c, uint64_t job, int prio, unsigned cls)
{
    char cpus[256] = "any", id[24];

    /* acquire: pairs with coro__affinity_intern's release of the count */
    if (cls > 0 && cls < __atomic_load_n(&c->s->nclasses, __ATOMIC_ACQUIRE)) {
        struct coro__affinity_class *k = coro__affinity_get(c->s, cls);
        if (k && coro_cpuset_format(&k->cpus, cpus, sizeof cpus) >= (int)sizeof cpus)
            snprintf(cpus, sizeof cpus, "(long)");
    }
    addr_name(c, &c->jobs, job, id, sizeof id);
    fprintf(c->f, "\"job\":\"%s\",\"prio\":\"%s\",\"class\":%u,\"cpus\":\"%s\"", id,
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
    case CORO__TRACE_END_DONE: return "done";
    case CORO__TRACE_END_YIELD: return "yield";
    default: return "await";
    }
}

/* a step (event i of sn, a CORO__TRACE_STEP) as a complete event: its
 * body, its duration, how it ended (with the await's name when the events
 * after it say which) and the steps of its run */
static void emit_step(struct wctx *c, const struct snap *sn, size_t i, int tid)
{
    const struct coro__tev *e = &sn->ev[i];
    unsigned why = (unsigned)(e->meta >> 4 & 0xf);
    const char *await = NULL;
    double dur = to_us(c, sn->end[i]) - to_us(c, e->ts);
    size_t k = i + 1;

    if (!e->ts)
        return;         /* its run began before the window (resolve) */
    if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TRACE_LONG && sn->ev[k].a == e->a)
        k++;
    if (k < sn->n && (sn->ev[k].meta & 0xf) == CORO__TRACE_AWAIT && sn->ev[k].a == e->a)
        await = (const char *)(uintptr_t)sn->ev[k].b;
    ev_head(c, fn_name(c, (const void *)(uintptr_t)e->b), "job", 'X', tid, e->ts);
    fprintf(c->f, ",\"dur\":%.3f,\"args\":{", dur);
    job_args(c, e->a, (int8_t)(e->meta >> 8), (unsigned)((e->meta >> 16) & 0xffff));
    fn_arg(c, e->b);
    fprintf(c->f, ",\"end\":\"%s%s%s\"", end_name(why & 3), await ? " " : "",
            await ? await : "");
    if (sn->run[i] > 1)
        fprintf(c->f, ",\"run\":%" PRIu32, sn->run[i]);
    fputs("}}", c->f);
}

/* a spawn (its body) or a wake (its waker: from, the lane's name) as an
 * instant event */
static void emit_spawn_wake(struct wctx *c, const struct coro__tev *e, unsigned type, int tid,
                            const char *from)
{
    ev_head(c, type == CORO__TRACE_SPAWN ? "spawn" : "wake", type == CORO__TRACE_SPAWN ? "spawn" : "wake", 'i', tid, e->ts);
    fputs(",\"args\":{", c->f);
    job_args(c, e->a, (int8_t)(e->meta >> 8), (unsigned)((e->meta >> 16) & 0xffff));
    if (type == CORO__TRACE_SPAWN) {
        fn_arg(c, e->b);
        fputs(",\"body\":", c->f);
    } else
        fputs(",\"from\":", c->f);
    json_str(c->f, type == CORO__TRACE_SPAWN ? fn_name(c, (const void *)(uintptr_t)e->b)
                                          : from);
    fputs("}}", c->f);
}

/* a wake of a plain thread (its record) as an instant event */
static void emit_thread_wake(struct wctx *c, const struct coro__tev *e, int tid)
{
    char id[24];

    ev_head(c, "wake thread", "wake", 'i', tid, e->ts);
    addr_name(c, &c->records, e->a, id, sizeof id);
    fprintf(c->f, ",\"args\":{\"record\":\"%s\"}}", id);
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
        unsigned type = (unsigned)(e->meta & 0xf);
        unsigned x = (unsigned)(e->meta >> 32);

        if (!e->ts)
            continue;           /* made in a step that is not in the window */
        switch (type) {
        case CORO__TRACE_STEP:
            emit_step(c, sn, i, tid);
            break;
        case CORO__TRACE_SPAWN:
        case CORO__TRACE_WAKE:
            emit_spawn_wake(c, e, type, tid, from);
            break;
        case CORO__TRACE_STEAL:
            ev_head(c, "steal", "sched", 'i', tid, e->ts);
            fprintf(c->f, ",\"args\":{\"victim\":%" PRIu64 ",\"jobs\":%u}}", e->a, x);
            break;
        case CORO__TRACE_NUDGE:
            ev_head(c, "unpark", "sched", 'i', tid, e->ts);
            fprintf(c->f, ",\"args\":{\"worker\":%u,\"from\":\"%s\"}}", x, from);
            break;
        case CORO__TRACE_THREAD_WAKE:
            emit_thread_wake(c, e, tid);
            break;
        case CORO__TRACE_PARK:
            parked = true;
            park0 = e->ts;
            break;
        case CORO__TRACE_UNPARK:
            if (!parked)
                break;
            parked = false;
            ev_head(c, "parked", "idle", 'X', tid, park0);
            fprintf(c->f, ",\"dur\":%.3f}", to_us(c, e->ts) - to_us(c, park0));
            break;
        case CORO__TRACE_POLL0:
            polling = true;
            poll0 = e->ts;
            break;
        case CORO__TRACE_POLL1:
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

/* write_file's steps.  The rings are nr snapshots: the n workers', the I/O
 * thread's, the shared ring, then the plain threads' */

/* a snapshot of every ring: 0 or -ENOMEM */
static int snap_all(coro_sched_t *s, struct snap *sn, int nr)
{
    struct coro__trace *t = s->trace;
    int n = s->nslots, rc = 0;

    for (int i = 0; i < nr && rc == 0; i++) {
        struct coro__trace_ring *r = i < n ? s->w[i]->trace_ring : i == n ? t->io : i == n + 1 ? t->ext
                                                                                 : t->thr[i - n - 2];
        if (r == t->ext) {
            coro__spin_lock(&r->lock);      /* its writers do not hold head */
            rc = snapshot(s, r, t->cap, &sn[i]);
            coro__spin_unlock(&r->lock);
        } else {
            rc = snapshot(s, r, t->cap, &sn[i]);
        }
    }
    return rc;
}

/* the steps' ends resolved and the clock's scale read, now */
static void resolve_all(coro_sched_t *s, struct snap *sn, int nr, struct wctx *c)
{
    struct coro__trace *t = s->trace;
    uint64_t tsc1 = clock_raw();
    int64_t ns1 = coro__now();

    if (s->vtime) {
        /* every event is stamped in virtual ns (coro__trace_clock,
         * coro__trace_ring_other_stamp): shown from the clock's start, unscaled */
        c->tsc0 = CORO_VIRTUAL_TIME_START;
        tsc1 = (uint64_t)coro__sched_clock(s);
    }
    for (int i = 0; i < nr; i++) {
        if (i < s->nslots + 2)
            resolve(&sn[i], tsc1);
        else
            resolve_thread(&sn[i], t->run_lim);
    }
    c->ns_per_tick = s->vtime ? 1.0
                   : tsc1 > t->tsc0 ? (double)(ns1 - t->ns0) / (double)(tsc1 - t->tsc0) : 1.0;
}

/* STABLE NAMES: the maps of jobs and records to their numbers, sized for
 * every event.  0 or -ENOMEM */
static int stable_init(coro_sched_t *s, const struct snap *sn, int nr, struct wctx *c)
{
    size_t nev = 0;
    int rc;

    for (int i = 0; i < nr; i++)
        nev += sn[i].n;
    rc = idmap_init(s, &c->jobs, nev);
    if (rc == 0)
        rc = idmap_init(s, &c->records, nev);
    return rc;
}

/* the JSON file at path: the lanes' names, then every ring's events.  0,
 * -errno of fopen or fclose, or -EIO */
static int emit_file(coro_sched_t *s, const struct snap *sn, int nr, struct wctx *c,
                     const char *path)
{
    int n = s->nslots, rc = 0;
    char name[32];

    c->f = fopen(path, "w");
    if (!c->f)
        return -errno;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"corokit\"},"
          "\"traceEvents\":[", c->f);
    c->first = false;
    fprintf(c->f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
                  "\"args\":{\"name\":\"corokit\"}}");
    for (int i = 0; i < n; i++) {
        if (s->nworkers > 0)
            snprintf(name, sizeof name, "coro-w%d", s->w[i]->cpu);
        else
            snprintf(name, sizeof name, "coro-run");
        lane_name(c, i, name);
    }
    lane_name(c, n, "coro-io");
    lane_name(c, n + 1, "threads");
    for (int i = 0; i < nr; i++)
        emit_ring(c, &sn[i], i < n + 2 ? i : n + 1);  /* every plain thread: "threads" */
    fputs("\n]}\n", c->f);
    if (ferror(c->f))
        rc = -EIO;
    if (fclose(c->f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

static void snaps_free(coro_sched_t *s, struct snap *sn, int nr)
{
    uint32_t cap = s->trace->cap;

    for (int i = 0; i < nr; i++) {
        if (sn[i].ev)
            coro__free(s, sn[i].ev, (size_t)cap * sizeof *sn[i].ev);
        if (sn[i].end)
            coro__free(s, sn[i].end, (size_t)cap * sizeof *sn[i].end);
        if (sn[i].run)
            coro__free(s, sn[i].run, (size_t)cap * sizeof *sn[i].run);
    }
    coro__free(s, sn, (size_t)nr * sizeof *sn);
}

static int write_file(coro_sched_t *s, const char *path)
{
    struct coro__trace *t = s->trace;
    /* acquire: pairs with thread_ring's release (the rings in thr) */
    int nthr = (int)__atomic_load_n(&t->nthr, __ATOMIC_ACQUIRE);
    int nr = s->nslots + 2 + nthr;  /* workers, io, the shared ring, plain threads' */
    struct snap *sn = coro__alloc(s, (size_t)nr * sizeof *sn);
    struct wctx c = { .s = s, .first = true, .tsc0 = t->tsc0, .ns0 = t->ns0 };
    int rc;

    if (!sn)
        return -ENOMEM;
    memset(sn, 0, (size_t)nr * sizeof *sn);
    rc = snap_all(s, sn, nr);
    if (rc == 0)
        resolve_all(s, sn, nr, &c);
    c.stable = s->vt != NULL;       /* .seed or .virtual_time: STABLE NAMES */
    if (rc == 0 && c.stable)
        rc = stable_init(s, sn, nr, &c);
    if (rc == 0)
        rc = emit_file(s, sn, nr, &c, path);
    snaps_free(s, sn, nr);
    idmap_fini(s, &c.jobs);
    idmap_fini(s, &c.records);
    return rc;
}

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
