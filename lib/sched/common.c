/* SPDX-License-Identifier: MIT */
/* Layer 1 (scheduling): memory through the scheduler's allocator, small
 * accessors every layer uses, the calling thread's worker. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

/* ---- the calling thread ------------------------------------------------------ */

__thread struct coro__worker *coro__tls_worker;     /* NULL: not a worker */
__thread int coro__tls_budget;      /* awaits left before a forced yield */
__thread int coro__tls_in_job;      /* inside a body or an arm */
__thread int64_t coro__tls_drive_deadline;

/* ---- memory ---------------------------------------------------------------- */

void *coro__alloc(coro_sched_t *s, size_t n)
{
    int e = errno;      /* a failed malloc sets it: errno is the caller's */
    void *p = (s && s->alloc) ? s->alloc->alloc(s->alloc->ctx, n) : malloc(n);
    errno = e;
    if (p)
        memset(p, 0, n);
    return p;
}

void coro__free(coro_sched_t *s, void *p, size_t n)
{
    if (!p)
        return;
    if (s && s->alloc)
        s->alloc->free(s->alloc->ctx, p, n);
    else
        free(p);
}

/* The scheduler and worker structs hold cache-line aligned members, which
 * malloc (16 bytes) and a user's coro_alloc_t (no alignment at all) do not
 * honour.  Over-allocate by a line plus a pointer, align up, and keep the
 * allocator's pointer just below the block for the free (the size is the
 * caller's n plus the same overhead). */
#define ALIGN_EXTRA (CORO__CACHELINE + sizeof(void *))

void *coro__alloc_aligned(coro_sched_t *s, size_t n)
{
    if (n > SIZE_MAX - ALIGN_EXTRA)
        return NULL;
    char *raw = coro__alloc(s, n + ALIGN_EXTRA);
    if (!raw)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(void *) + CORO__CACHELINE - 1) &
                  ~(uintptr_t)(CORO__CACHELINE - 1);
    memcpy((void *)(a - sizeof(void *)), &raw, sizeof raw);
    return (void *)a;
}

void coro__free_aligned(coro_sched_t *s, void *p, size_t n)
{
    void *raw;

    if (!p)
        return;
    memcpy(&raw, (char *)p - sizeof(void *), sizeof raw);
    coro__free(s, raw, n + ALIGN_EXTRA);
}

/* ---- helpers used across the library --------------------------------------- */

bool coro__in_job(void)
{
    return coro__tls_in_job != 0;
}

bool coro__cancelling(const coro_sched_t *s)
{
    /* acquire: pairs with coro_sched_shutdown's store of the flag */
    return __atomic_load_n(&s->cancelling, __ATOMIC_ACQUIRE) != 0;
}

coro_sched_t *coro_sched_current(void)
{
    struct coro__worker *w = coro__tls_worker;
    return w ? w->s : NULL;
}

coro_t *coro__current_job(void)
{
    struct coro__worker *w = coro__tls_worker;
    if (!w || !coro__tls_in_job)
        return NULL;
    /* relaxed: this thread's own store (run_job_) */
    return __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
}

bool coro_cancelled(void)
{
    coro_t *job = coro__current_job();
    return job && (coro__job_cancelled(job) || coro__cancelling(coro__tls_worker->s));
}

int coro_sched_workers(const coro_sched_t *s)
{
    return s ? s->nworkers : -EINVAL;
}

unsigned coro_version(void)
{
    return CORO_VERSION_HEX;
}
