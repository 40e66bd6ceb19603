/* SPDX-License-Identifier: MIT */
/* Layer 1 (scheduling): how a job is reported - the stall detector's
 * report (hook or stderr) and one suspended job's line in coro_sched_dump
 * (each layer lists the jobs it holds with coro__dump_job; rt/diag.c
 * writes the rest of the dump). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"

const char *coro__prio_name(int p)
{
    return p > 0 ? "HIGH" : p < 0 ? "LOW" : "NORMAL";
}

const char *coro__sym_of(const void *fn, char *buf, size_t len)
{
    return coro__sym_name(fn, buf, len);
}

/* ---- the stall detector ---------------------------------------------------------- */

void coro__stall_report(struct coro__worker *w, coro_t *job, coro_fn fn, int64_t dur)
{
    coro_sched_t *s = w->s;
    coro_stall_t st;
    char sym[128];

    memset(&st, 0, sizeof st);
    st.job = job;
    st.name = coro__job_name(job);
    st.fn = (void *)fn;
    st.symbol = coro__sym_of((const void *)fn, sym, sizeof sym);
    st.duration_ns = dur;
    st.worker = w->idx;
    st.cpu = w->cpu;
    st.priority = job->prio;
    if (s->stall_hook) {
        s->stall_hook(&st, s->stall_arg);
        return;
    }
    fprintf(stderr,
            "corokit: stall: job %p%s%s%s body %s (%p) has run %.3f ms in one step "
            "on worker %d (CPU %d), priority %s\n",
            (void *)job, st.name ? " \"" : "", st.name ? st.name : "", st.name ? "\"" : "",
            st.symbol ? st.symbol : "?", st.fn, (double)dur / 1e6, st.worker, st.cpu,
            coro__prio_name(st.priority));
}

/* ---- the dump ------------------------------------------------------------------------ */

void coro__mask_text(coro_sched_t *s, unsigned cls, char *buf, int len)
{
    if (cls == 0) {
        snprintf(buf, (size_t)len, "any CPU");
        return;
    }
    struct coro__affinity_class *c = coro__affinity_get(s, cls);
    int n = coro_cpuset_count(&c->cpus);
    int k = snprintf(buf, (size_t)len, "%s ", n == 1 ? "CPU" : "CPUs");
    if (k >= 0 && k < len)
        coro_cpuset_format(&c->cpus, buf + k, (size_t)(len - k));
}

/* one suspended job, read under the lock of the structure that holds it */
void coro__dump_job(struct coro__dump *d, coro_t *job, const char *fmt, ...)
{
    char mask[96];
    const char *name = coro__job_name(job);
    coro_fn fn = job->top ? job->top->fn : job->fn;
    char symbuf[128];
    const char *sym = coro__sym_of((const void *)fn, symbuf, sizeof symbuf);
    va_list ap;

    coro__mask_text(d->s, job->cls, mask, sizeof mask);
    fprintf(d->f, "  job %p", (void *)job);
    if (name)
        fprintf(d->f, " \"%s\"", name);
    fprintf(d->f, " %s: SUSPENDED, waits on ", sym ? sym : "?");
    va_start(ap, fmt);
    vfprintf(d->f, fmt, ap);
    va_end(ap);
    fprintf(d->f, "; mask %s, priority %s", mask, coro__prio_name(job->prio));
    if (coro__job_deadline(job) > 0)
        fprintf(d->f, ", deadline in %.3f ms",
                (double)(coro__job_deadline(job) - d->now) / 1e6);
    if (coro__job_cancelled(job))
        fprintf(d->f, ", cancelled");
    fputc('\n', d->f);
    d->jobs++;
}

