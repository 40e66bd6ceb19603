/* SPDX-License-Identifier: MIT */
/* Diagnostics: coro_sched_dump (the stall detector's report, and the line
 * of one suspended job, are lib/sched/report.c's).
 *
 * THE DUMP'S REGISTRY.  There is no list of live jobs updated at spawn:
 * the dump walks what the scheduler already reaches, each part under the
 * lock that already guards it, so a spawn pays nothing for it:
 *   - running: each worker publishes the job it runs and its body (relaxed
 *     stores at a step's start and end, lib/sched/run.c); the dump prints
 *     them and never dereferences the job (it may finish meanwhile); and
 *     the jobs whose steps wait on its stack for a child they run inline
 *     (w->nested, JOINING INLINE), by address;
 *   - queued (READY): the workers' rings and inboxes and the classes'
 *     queues, read without locks (ring slots by relaxed loads); those jobs
 *     are shown by address only, per queue, with the reason they wait;
 *   - suspended: the parking lot's buckets this scheduler parked in and
 *     its joiner registries (lib/wait/parklot_dump.c), the fd slots and the
 *     sleeps in the timer heaps of the I/O context (lib/io/dump.c), the
 *     blocking pool's queue and calls in
 *     progress (lib/io/blocking.c), each under its own lock: a job found
 *     there cannot be woken (nor finish) while the lock is held, so its
 *     frame is read safely.
 * The text goes to a memory stream first and to the caller's FILE at the
 * end, so no lock is held while the caller's stream blocks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/rt.h"

/* a queue's jobs: how many, and the first 16 addresses */
struct qlist {
    unsigned n;
    void *a[16];
};

static void ql_add(struct qlist *q, void *p)
{
    if (q->n < 16)
        q->a[q->n] = p;
    q->n++;
}

/* the addresses a ring holds (racy snapshot; never dereferenced) */
static void dump_ring_peek(struct qlist *q, const ck_ring_t *r, ck_ring_buffer_t *buf)
{
    unsigned head = __atomic_load_n(&r->c_head, __ATOMIC_RELAXED);
    unsigned tail = __atomic_load_n(&r->p_tail, __ATOMIC_RELAXED);
    if (tail - head > r->size)
        return;         /* torn read */
    for (unsigned i = head; i != tail; i++)
        ql_add(q, __atomic_load_n(&buf[i & r->mask].value, __ATOMIC_RELAXED));
}

static void ql_add_cb(void *q, coro_t *p)
{
    ql_add(q, p);
}

/* an MPMC queue: its ring, then its overflow list under its lock */
static void sharedq_list(struct qlist *q, struct coro__sharedq *m)
{
    coro__sharedq_each(m, ql_add_cb, q);
}

static void ql_print(struct coro__dump *d, const struct qlist *q)
{
    for (unsigned i = 0; i < q->n && i < 16; i++)
        fprintf(d->f, " %p", q->a[i]);
    if (q->n > 16)
        fprintf(d->f, " ...");
}

/* what worker i is doing, for the reasons */
static void worker_doing(struct coro__dump *d, int i, char *buf, size_t len)
{
    struct coro__worker *w = d->s->w[i];
    coro_t *cur = __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
    coro_fn fn = __atomic_load_n(&w->cur_fn, __ATOMIC_RELAXED);
    int64_t t0 = __atomic_load_n(&w->cur_t0, __ATOMIC_RELAXED);
    char symbuf[96];
    const char *sym;

    if (!cur) {
        snprintf(buf, len, "is between jobs (or idle)");
        return;
    }
    sym = coro__sym_of((const void *)fn, symbuf, sizeof symbuf);
    if (t0 > 0 && d->now > t0)
        snprintf(buf, len, "has run one step of job %p (%s) for %.3f ms", (void *)cur,
                 sym ? sym : "?", (double)(d->now - t0) / 1e6);
    else
        snprintf(buf, len, "runs a step of job %p (%s)", (void *)cur, sym ? sym : "?");
}

/* worker i's queues (its ring, inbox and yield ring per priority, its
 * LIFO slot), or the caller's seat's */
static void dump_worker_queues(struct coro__dump *d, int i)
{
    coro_sched_t *s = d->s;
    struct coro__worker *w = s->w[i];
    char why[160];
    coro_t *lifo = __atomic_load_n(&w->lifo, __ATOMIC_RELAXED);

    worker_doing(d, i, why, sizeof why);
    for (int p = CORO__NPRIO - 1; p >= 0; p--) {
        struct qlist q = { 0 };
        dump_ring_peek(&q, &w->local[p].ring, w->local[p].buf);
        sharedq_list(&q, &w->inbox[p]);
        dump_ring_peek(&q, &w->yielded[p].ring, w->yielded[p].buf);
        if (p == CORO__PRIO_IDX(CORO_PRIO_NORMAL) && lifo)
            ql_add(&q, lifo);
        unsigned n = q.n;
        if (!n)
            continue;
        if (i == s->nslots) {
            fprintf(d->f, "  the caller's seat's queue, %s:", coro__prio_name(p - 1));
            ql_print(d, &q);
            fprintf(d->f, "\n    %u READY; queued on the caller's seat (a thread in "
                    "coro_block_on), which %s; idle workers steal them\n", n, why);
            d->jobs += (int)n;
            continue;
        }
        fprintf(d->f, "  worker %d's queue, %s:", i, coro__prio_name(p - 1));
        ql_print(d, &q);
        fprintf(d->f, "\n    %u READY; queued for worker %d (CPU %d), which %s\n", n, i,
                w->cpu, why);
        d->jobs += (int)n;
    }
}

/* the plain threads' submission rings */
static void dump_subrings(struct coro__dump *d)
{
    int t = 0;

    /* acquire: pairs with coro__thread_subring's release CAS */
    for (struct coro__subring *x = __atomic_load_n(&d->s->subrings, __ATOMIC_ACQUIRE); x;
         x = x->next, t++) {
        struct qlist q = { 0 };
        dump_ring_peek(&q, &x->q.ring, x->q.buf);
        if (!q.n)
            continue;
        fprintf(d->f, "  plain thread %d's submission ring, NORMAL:", t);
        ql_print(d, &q);
        fprintf(d->f, "\n    %u READY; any worker may take them\n", q.n);
        d->jobs += (int)q.n;
    }
}

/* class c's queues (c 0: the global queue), and for a class what the
 * workers its mask allows are doing */
static void dump_class_queues(struct coro__dump *d, uint32_t c)
{
    coro_sched_t *s = d->s;
    struct coro__affinity_class *cl = coro__affinity_get(s, c);
    char why[160], mask[96];

    if (!cl)
        return;
    for (int p = CORO__NPRIO - 1; p >= 0; p--) {
        struct qlist q = { 0 };
        sharedq_list(&q, &cl->q[p]);
        unsigned n = q.n;
        if (!n)
            continue;
        coro__mask_text(s, c, mask, sizeof mask);
        fprintf(d->f, "  %s queue (mask %s), %s:", c ? "class" : "global", mask,
                coro__prio_name(p - 1));
        ql_print(d, &q);
        d->jobs += (int)n;
        fprintf(d->f, "\n    %u READY; ", n);
        if (c == 0) {
            fprintf(d->f, "any worker may take them\n");
            continue;
        }
        fprintf(d->f, "its mask allows only %s", mask);
        for (int i = 0; i < s->nslots; i++) {
            if (!coro__affinity_allows(cl, i))
                continue;
            worker_doing(d, i, why, sizeof why);
            fprintf(d->f, "; worker %d (CPU %d) %s", i, s->w[i]->cpu, why);
        }
        fputc('\n', d->f);
    }
}

static void dump_queues(struct coro__dump *d)
{
    coro_sched_t *s = d->s;
    /* acquire: pairs with coro__affinity_intern's release of the count (the classes
     * below it are published) */
    uint32_t nclasses = __atomic_load_n(&s->nclasses, __ATOMIC_ACQUIRE);

    fprintf(d->f, "queued (READY, not running; addresses only):\n");
    for (int i = 0; i < s->nall; i++)       /* the caller's seat last */
        dump_worker_queues(d, i);
    dump_subrings(d);
    for (uint32_t c = 0; c < nclasses; c++)
        dump_class_queues(d, c);
}

static int dump(coro_sched_t *s, FILE *out);

int coro_sched_dump(coro_sched_t *s, FILE *out)
{
    int e = errno;      /* stdio may set it: errno is the caller's */
    int rc = dump(s, out);
    errno = e;
    return rc;
}

/* the caller's seat, when a thread holds it */
static void dump_seat(struct coro__dump *d)
{
    coro_sched_t *s = d->s;
    struct coro__worker *w = s->w[s->nslots];
    /* relaxed: a snapshot, as the rest */
    bool held = __atomic_load_n(&s->seat_word, __ATOMIC_RELAXED) != 0;
    coro_t *cur = __atomic_load_n(&w->cur, __ATOMIC_RELAXED);

    if (!held)      /* a free seat is no news: its queue is empty */
        return;
    fprintf(d->f, "  the caller's seat (a thread in coro_block_on runs jobs): ");
    if (cur) {
        char why[160];
        worker_doing(d, s->nslots, why, sizeof why);
        fprintf(d->f, "%s\n", why);
        d->jobs++;
    } else {
        fprintf(d->f, "held, between jobs\n");
    }
}

/* the job worker w runs (cur, its body fn, its name, since t0), and the
 * jobs whose steps wait on its stack for it (lib/sched/run.c, JOINING
 * INLINE): innermost first; addresses only */
static void dump_running(struct coro__dump *d, struct coro__worker *w, coro_t *cur)
{
    coro_fn fn = __atomic_load_n(&w->cur_fn, __ATOMIC_RELAXED);
    int64_t t0 = __atomic_load_n(&w->cur_t0, __ATOMIC_RELAXED);
    const char *name = __atomic_load_n(&w->cur_name, __ATOMIC_RELAXED);
    char symbuf[128];
    const char *sym = coro__sym_of((const void *)fn, symbuf, sizeof symbuf);

    fprintf(d->f, "RUNNING job %p %s", (void *)cur, sym ? sym : "?");
    if (!sym)   /* stripped: the address, for addr2line */
        fprintf(d->f, " (%p)", (void *)(uintptr_t)fn);
    if (name)
        fprintf(d->f, " \"%s\"", name);
    if (t0 > 0 && d->now > t0)
        fprintf(d->f, ", this step for %.3f ms", (double)(d->now - t0) / 1e6);
    fputc('\n', d->f);
    d->jobs++;
    uint32_t nest = __atomic_load_n(&w->nest, __ATOMIC_RELAXED);
    if (nest > CORO__INLINE_DEPTH)
        nest = CORO__INLINE_DEPTH;
    for (uint32_t k = nest; k-- > 0;) {
        fprintf(d->f, "    inside the step of job %p, which awaits it (coro_done)\n",
                __atomic_load_n(&w->nested[k], __ATOMIC_RELAXED));
        d->jobs++;
    }
}

/* worker i: what it runs, or whether it is idle */
static void dump_worker(struct coro__dump *d, int i)
{
    coro_sched_t *s = d->s;
    struct coro__worker *w = s->w[i];
    coro_t *cur = __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
    bool idle = __atomic_load_n(&s->idle[coro__bit_word(i)], __ATOMIC_RELAXED) & coro__bit(i);

    fprintf(d->f, "  worker %d (CPU %d%s): ", i, w->cpu,
            __atomic_load_n(&w->pinned, __ATOMIC_RELAXED) ? ", pinned" : "");
    if (cur)
        dump_running(d, w, cur);
    else
        fprintf(d->f, "%s\n", idle ? "idle (parked or about to)" : "looking for work");
}

static int dump(coro_sched_t *s, FILE *out)
{
    struct coro__dump d = { .s = s };
    char *text = NULL;
    size_t len = 0;

    if (!s || !out)
        return -EINVAL;
    d.f = open_memstream(&text, &len);
    if (!d.f)
        return -ENOMEM;
    d.now = coro__now();
    uint32_t live = __atomic_load_n(&s->live, __ATOMIC_RELAXED);
    fprintf(d.f, "corokit scheduler %p: %d worker%s%s, about %u live jobs%s%s\n", (void *)s,
            s->nworkers, s->nworkers == 1 ? "" : "s", s->nworkers ? "" : " (single-threaded)",
            live & ~CORO__LIVE_CLOSED, (live & CORO__LIVE_CLOSED) ? ", shut down" : "",
            __atomic_load_n(&s->cancelling, __ATOMIC_RELAXED) ? ", cancelling" : "");
    fprintf(d.f, "workers:\n");
    for (int i = 0; i < s->nslots; i++)
        dump_worker(&d, i);
    if (s->nall > s->nslots)        /* the caller's seat last */
        dump_seat(&d);
    dump_queues(&d);
    fprintf(d.f, "suspended:\n");
    coro__parklot_dump(s, &d);
    if (s->io)
        coro__io_dump(s->io, &d);
    coro__blocking_dump(s, &d);
    if (fclose(d.f) != 0) {
        free(text);
        return -ENOMEM;
    }
    size_t wr = fwrite(text, 1, len, out);
    free(text);
    if (wr != len || fflush(out) != 0)
        return -EIO;
    return d.jobs;
}
