/* SPDX-License-Identifier: MIT */
/* A plain thread's burst of fire-and-forget jobs gives its slabs back once
 * the jobs are over, though the thread never calls corokit again
 * (docs/guide.md, frame memory): the pools' count of slab bytes
 * (coro__frames_held) comes back to the slab its class allocates from once
 * the workers idle, within a bound in time (a wait for the condition,
 * never a sleep that orders). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>

#include "rt/rt.h"
#include "sched/frame.h"
#include "white_box.h"

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

/* bounded (120 s, a sanitizer build on a loaded machine): n jobs ran */
static void wait_done(long n)
{
    int64_t end = coro_now() + 120000000000LL;
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n) {
        cr_assert_lt(coro_now(), end, "only %ld of %ld jobs ran", done, n);
        sched_yield();
    }
}

static void burst(int workers)
{
    enum { N = 250000 };
    coro_sched_t *s = mk(workers);
    size_t h0 = coro__frames_held(s);

    done = 0;
    for (long i = 0; i < N; i++) {
        struct small *f = coro_frame_alloc(s, sizeof *f);
        cr_assert_not_null(f);
        cr_assert_eq(coro_spawn(s, &f->co, small_fn, NULL), 0);
    }
    wait_done(N);
    /* what may stay once a worker went idle after the burst (TRIM in
     * lib/sched/frame_sched.c): the slab the thread allocates from, one
     * whose last frees it has not collected, and CORO__FRAME_THREAD_KEEP
     * empty ones - not the CORO__FRAME_EMPTY_MAX its cache keeps while it
     * spawns */
    size_t bound = (size_t)(CORO__FRAME_THREAD_KEEP + 2) << 16;
    int64_t end = coro_now() + 20000000000LL;
    size_t h;
    while ((h = coro__frames_held(s)) > h0 + bound && coro_now() < end)
        sched_yield();
    cr_log_info("workers %d: pools %zu KiB before, %zu KiB after the burst", workers, h0 >> 10,
                h >> 10);
    cr_assert_leq(h, h0 + bound,
                  "workers %d: the pools still hold %zu KiB after the burst (%zu before)",
                  workers, h >> 10, h0 >> 10);
    fin(s);
}

Test(frame_release, a_plain_threads_burst_gives_its_slabs_back_once_the_workers_idle,
     .timeout = 240)
{
    burst(2);
}

Test(frame_release, a_plain_threads_burst_on_one_worker_gives_its_slabs_back, .timeout = 240)
{
    burst(1);
}
