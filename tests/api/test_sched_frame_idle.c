/* SPDX-License-Identifier: MIT */
/* A plain thread spawns a burst of fire-and-forget jobs with pool frames
 * and never calls corokit again: once the jobs are over and the workers
 * idle, the slabs that held its frames go back to the allocator
 * (docs/guide.md, "Frame lifetimes"; coro_frame_alloc(3)) - all but the
 * one its size class allocates from, not a cache of empty ones kept for a
 * next burst that never comes.  Measured through the config allocator
 * (.alloc), which sees every byte the scheduler holds; a wait for the
 * condition with a generous bound (a loaded machine, a sanitizer build),
 * never a sleep that orders events. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdlib.h>

#include "fixture.h"

/* bytes the scheduler holds from its allocator */
static size_t held;

static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = malloc(n);
    if (p)      /* relaxed: a count, read after the jobs are over */
        __atomic_add_fetch(&held, n, __ATOMIC_RELAXED);
    return p;
}

static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    __atomic_sub_fetch(&held, n, __ATOMIC_RELAXED);
    free(p);
}

static const coro_alloc_t counting = { .alloc = count_alloc, .free = count_free };

static long done;

struct job {
    coro_t co;
    char pad[200];
};

static int job_fn(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

/* bounded (120 s): until n jobs have run */
static void wait_done(long n)
{
    int64_t end = now_ns() + 120000000000LL;
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n) {
        cr_assert_lt(now_ns(), end, "only %ld of %ld jobs ran", done, n);
        sched_yield();
    }
}

/* a slab as the config allocator sees it: 64 KiB, and 64 KiB more to
 * align it (coro_alloc_t gives no alignment) */
#define SLAB_RAW ((size_t)128 << 10)

static coro_sched_t *mk_counting(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.alloc = &counting;
    return mk_config(&c);
}

/* one burst of n jobs from this thread; then, within 20 s (the promise is
 * "when the workers next go idle": microseconds on a quiet machine), the
 * scheduler holds no more than before the burst plus `slack` slabs */
static void burst_then_idle(int workers, long n, int slack)
{
    held = 0;
    coro_sched_t *s = mk_counting(workers);
    /* this thread's cache and submission ring exist before the count */
    struct job *f = coro_frame_alloc(s, sizeof *f);
    cr_assert_not_null(f);
    done = 0;
    cr_assert_eq(coro_spawn(s, &f->co, job_fn, NULL), 0);
    wait_done(1);
    size_t h0 = __atomic_load_n(&held, __ATOMIC_RELAXED);

    done = 0;
    for (long i = 0; i < n; i++) {
        f = coro_frame_alloc(s, sizeof *f);
        cr_assert_not_null(f);
        cr_assert_eq(coro_spawn(s, &f->co, job_fn, NULL), 0);
    }
    wait_done(n);
    int64_t t0 = now_ns(), end = t0 + 20000000000LL;
    size_t bound = h0 + (size_t)slack * SLAB_RAW, h;
    while ((h = __atomic_load_n(&held, __ATOMIC_RELAXED)) > bound && now_ns() < end)
        sleep_ms(1);
    cr_log_info("workers %d: %zu KiB before the burst, %zu KiB %lld ms after it", workers,
                h0 >> 10, h >> 10, (long long)((now_ns() - t0) / 1000000));
    cr_assert_leq(h, bound,
                  "workers %d: the scheduler holds %zu KiB 20 s after the burst (%zu KiB before)",
                  workers, h >> 10, h0 >> 10);
    fin(s);
    cr_assert_eq(__atomic_load_n(&held, __ATOMIC_RELAXED), 0, "destroy gives everything back");
}

/* slack: the slab the class allocates from now (the one before the burst
 * may have filled), and one whose last frees the thread has not collected */
Test(sched_frame_idle, a_plain_threads_burst_into_two_workers_gives_its_slabs_back_once_they_idle,
     .timeout = 240)
{
    burst_then_idle(2, 250000, 2);
}

Test(sched_frame_idle, a_plain_threads_burst_into_one_worker_gives_its_slabs_back_once_it_idles,
     .timeout = 240)
{
    burst_then_idle(1, 250000, 2);
}

/* a job of the burst still runs (it waits for an event): the thread's
 * burst is not over, and its slabs may wait for it; once it ends, they
 * go back as above */
struct holder {
    coro_t co;
    coro_event_t *go;
};

static int holder_fn(coro_t *co)
{
    struct holder *h = CORO_SELF(co, struct holder);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(h->go, CORO_FOREVER));
    __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

Test(sched_frame_idle, a_burst_with_a_job_still_waiting_gives_its_slabs_back_when_it_ends,
     .timeout = 240)
{
    enum { N = 100000 };
    held = 0;
    coro_sched_t *s = mk_counting(2);
    coro_event_t go;
    coro_event_init(&go);
    struct job *f = coro_frame_alloc(s, sizeof *f);
    cr_assert_not_null(f);
    done = 0;
    cr_assert_eq(coro_spawn(s, &f->co, job_fn, NULL), 0);
    wait_done(1);
    size_t h0 = __atomic_load_n(&held, __ATOMIC_RELAXED);

    done = 0;
    struct holder *hd = coro_frame_alloc(s, sizeof(struct job));
    cr_assert_not_null(hd);
    hd->go = &go;
    cr_assert_eq(coro_spawn(s, &hd->co, holder_fn, NULL), 0);
    for (long i = 0; i < N; i++) {
        f = coro_frame_alloc(s, sizeof *f);
        cr_assert_not_null(f);
        cr_assert_eq(coro_spawn(s, &f->co, job_fn, NULL), 0);
    }
    wait_done(N);
    cr_assert_geq(coro_event_set(&go), 0);
    wait_done(N + 1);
    int64_t end = now_ns() + 20000000000LL;
    size_t bound = h0 + 2 * SLAB_RAW, h;
    while ((h = __atomic_load_n(&held, __ATOMIC_RELAXED)) > bound && now_ns() < end)
        sleep_ms(1);
    cr_assert_leq(h, bound, "%zu KiB held 20 s after the last job (%zu KiB before)", h >> 10,
                  h0 >> 10);
    fin(s);
    coro_event_destroy(&go);
}
