/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Pool frame memory follows the frames in use, whoever allocated and
 * whoever gave them back: a burst from a plain thread beside busy
 * workers, big frames reused instead of mapped per spawn.  Measured both
 * ways: the pools' own count of slab bytes (coro__frames_held) and the
 * process's RSS after malloc_trim (what the allocator could return). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <malloc.h>
#include <stdlib.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "rt/rt.h"
#include "sched/frame.h"
#include "white_box.h"

#if defined(__SANITIZE_ADDRESS__)
# define UNDER_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define UNDER_ASAN 1
# endif
#endif

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* a job that keeps its worker: without a yield until told to go (so that
 * every job of the burst waits until the spawner is done), then in slices
 * of work with a yield between them until told to stop */
struct busy {
    coro_t co;
    int *go, *stop;
};

static int busy_fn(coro_t *co)
{
    struct busy *b = CORO_SELF(co, struct busy);
    CORO_BEGIN(co);
    while (!__atomic_load_n(b->go, __ATOMIC_ACQUIRE))
        sched_yield();
    while (!__atomic_load_n(b->stop, __ATOMIC_ACQUIRE)) {
        int64_t end = coro_now() + 20000;
        while (coro_now() < end)
            ;
        CORO_YIELD(co);
    }
    CORO_END(co);
}

/* bounded (20 s): until a worker of s runs co (its w->cur) */
static void wait_running(coro_sched_t *s, coro_t *co)
{
    int64_t end = coro_now() + 20000000000LL;
    for (;;) {
        for (int i = 0; i < s->nslots; i++)
            if (__atomic_load_n(&s->w[i]->cur, __ATOMIC_RELAXED) == co)
                return;
        cr_assert_lt(coro_now(), end, "the job never ran");
        sched_yield();
    }
}

static long done;

struct small {
    coro_t co;
    char pad[200];
};

static int small_fn(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

static void wait_done(long n)
{
    int64_t end = coro_now() + 120000000000LL;
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n) {
        cr_assert_lt(coro_now(), end, "only %ld of %ld jobs ran", done, n);
        sched_yield();
    }
}

Test(frame_mem, a_burst_from_a_plain_thread_beside_busy_workers_gives_its_slabs_back,
     .timeout = 180)
{
    enum { N = 250000 };
    coro_sched_t *s = mk(2);
    int go = 0, stop = 0;
    struct busy b[2] = { { .go = &go, .stop = &stop }, { .go = &go, .stop = &stop } };
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(coro_spawn(s, &b[i].co, busy_fn, NULL), 0);
        wait_running(s, &b[i].co);
    }
    malloc_trim(0);
    long r0 = rss_kib();
    size_t h0 = coro__frames_held(s);

    done = 0;
    for (long i = 0; i < N; i++) {
        struct small *f = coro_frame_alloc(s, sizeof *f);
        cr_assert_not_null(f);
        cr_assert_eq(coro_spawn(s, &f->co, small_fn, NULL), 0);
    }
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    wait_done(N);
    /* every job's frame is given back by now, or sits in a worker's outbox
     * (a few blocks per worker); nothing here calls corokit again.  What
     * may stay: the thread's returned stack (CORO__FRAME_EMPTY_MAX slabs),
     * the slab it allocates from, the slabs of the outboxes' blocks */
    size_t bound = (size_t)(CORO__FRAME_EMPTY_MAX + 16) << 16;
    size_t h1 = coro__frames_held(s);
    malloc_trim(0);
    long r1 = rss_kib();
    cr_log_info("burst: pools %zu -> %zu KiB, RSS %ld -> %ld KiB", h0 >> 10, h1 >> 10, r0, r1);
    cr_assert_leq(h1, h0 + bound, "the pools hold %zu KiB after the burst (%zu before)",
                  h1 >> 10, h0 >> 10);
#ifndef UNDER_ASAN
    /* (AddressSanitizer holds freed memory in its quarantine: no RSS then) */
    cr_assert_lt(r1 - r0, 16 * 1024, "RSS grew %ld KiB over the burst", r1 - r0);
#endif

    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(join_r(&b[i].co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* a frame above the largest size class (a file-hashing job's buffer) */
struct big {
    coro_t co;
    char buf[69 << 10];
};

static int big_fn(coro_t *co)
{
    struct big *f = CORO_SELF(co, struct big);
    CORO_BEGIN(co);
    f->buf[sizeof f->buf - 1] = 1;
    __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

struct spawner {
    coro_t co;
    coro_sched_t *s;
    long i, n;
};

static int spawner_fn(coro_t *co)
{
    struct spawner *sp = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (sp->i = 0; sp->i < sp->n; sp->i++) {
        struct big *f = coro_frame_alloc(sp->s, sizeof *f);
        if (!f || coro_spawn(sp->s, &f->co, big_fn, NULL) != 0)
            CORO_RETURN(co, -1);
        if (sp->i % 16 == 15)
            CORO_YIELD(co);
    }
    CORO_END(co);
}

Test(frame_mem, big_frames_are_kept_for_reuse_within_a_bound, .timeout = 120)
{
    enum { N = 2000 };
    for (int workers = 0; workers <= 2; workers++) {
        coro_sched_t *s = mk(workers);
        /* from a plain thread, fire and forget */
        done = 0;
        for (long i = 0; i < N; i++) {
            struct big *f = coro_frame_alloc(s, sizeof *f);
            cr_assert_not_null(f);
            cr_assert_eq(f->buf[sizeof f->buf - 1], 0, "zeroed");
            cr_assert_eq(coro_spawn(s, &f->co, big_fn, NULL), 0);
            if (workers == 0)
                coro_sched_run(s);
        }
        wait_done(N);
        /* from a job */
        done = 0;
        struct spawner sp = { .s = s, .n = N };
        cr_assert_eq(block_on_r(s, &sp.co, spawner_fn, NULL), 0);
        if (workers == 0)
            coro_sched_run(s);
        wait_done(N);
        /* what is kept: a bounded number of slabs per pool (the workers'
         * and this thread's), not one per frame spawned */
        size_t slab = ((sizeof(struct big) + 1216 + 65535) / 65536) * 65536;
        size_t bound = (size_t)(workers + 1) * CORO__FRAME_BIG_KEEP * slab + ((size_t)2 << 20);
        cr_assert_leq(coro__frames_held(s), bound, "workers %d: %zu KiB held", workers,
                      coro__frames_held(s) >> 10);
        /* frames given back are handed out again, zeroed: no new slab */
        struct big *a = coro_frame_alloc(s, sizeof *a);
        cr_assert_not_null(a);
        size_t h = coro__frames_held(s);
        for (int i = 0; i < 1000; i++) {
            a->buf[100] = 7;
            coro_frame_free(a);
            a = coro_frame_alloc(s, sizeof *a);
            cr_assert_not_null(a);
            cr_assert_eq(a->buf[100], 0, "not zeroed");
        }
        cr_assert_leq(coro__frames_held(s), h, "workers %d: a slab per alloc", workers);
        coro_frame_free(a);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* a job that takes n frames of 256 B from its worker's pool and gives
 * them all back: its pool then holds about n / 250 empty slabs */
struct churn {
    coro_t co;
    coro_sched_t *s;
    void **f;
    int n;
};

static int churn_fn(coro_t *co)
{
    struct churn *c = CORO_SELF(co, struct churn);
    CORO_BEGIN(co);
    for (int i = 0; i < c->n; i++)
        cr_assert_not_null(c->f[i] = coro_frame_alloc(c->s, 256));
    for (int i = 0; i < c->n; i++)
        coro_frame_free(c->f[i]);
    CORO_END(co);
}

Test(frame_mem, a_parked_worker_keeps_a_few_empty_slabs, .timeout = 30)
{
    enum { N = 8000 };  /* about 32 slabs of 64 KiB */
    coro_sched_t *s = mk(1);
    struct churn c = { .s = s, .n = N };
    c.f = calloc(N, sizeof *c.f);
    cr_assert_not_null(c.f);
    cr_assert_eq(coro_spawn(s, &c.co, churn_fn, NULL), 0);
    cr_assert_eq(join_r(&c.co), 0);
    /* bounded (20 s): until the worker parked, after its pool's trim */
    int64_t end = coro_now() + 20000000000LL;
    while (!(__atomic_load_n(&s->idle[0], __ATOMIC_ACQUIRE) & 1)) {
        cr_assert_lt(coro_now(), end, "the worker never parked");
        sched_yield();
    }
    /* the empty slabs a parked worker keeps, and its classes' current
     * ones (one here), whatever it held while it ran */
    size_t bound = (size_t)(CORO__FRAME_EMPTY_PARK + 2) << 16;
    cr_assert_leq(coro__frames_held(s), bound, "a parked worker holds %zu bytes of slabs",
                  coro__frames_held(s));
    coro_sched_destroy(s);
    free(c.f);
}
