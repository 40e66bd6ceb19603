/* SPDX-License-Identifier: MIT */
/* fire_and_forget - spawn jobs nobody joins, with frames from the library.
 *
 * Each job gets its frame from coro_frame_alloc and is spawned once; the
 * library gives the frame back when the job is over.  The jobs signal
 * their end themselves (a counter and an event), since a finished pool
 * frame is gone: nobody may join it afterwards. */
#include <corokit.h>
#include <stdatomic.h>
#include <stdio.h>

/* [fire-and-forget] */
struct task {
    coro_t co;
    int n;                      /* the job's input */
};

static atomic_long left;
static atomic_long sum;
static coro_event_t all_done;

static int task_fn(coro_t *co)
{
    struct task *t = CORO_SELF(co, struct task);
    CORO_BEGIN(co);
    atomic_fetch_add(&sum, t->n);
    if (atomic_fetch_sub(&left, 1) == 1)
        coro_event_set(&all_done);          /* the last one says so */
    CORO_END(co);
}

static int spawn_task(coro_sched_t *s, int n)
{
    struct task *t = coro_frame_alloc(s, sizeof *t);   /* zeroed, 64-byte aligned */
    if (!t)
        return -ENOMEM;
    t->n = n;
    int rc = coro_spawn(s, &t->co, task_fn, NULL);
    if (rc < 0)
        coro_frame_free(t);                 /* never spawned: still ours */
    return rc;
}
/* [fire-and-forget] */

int main(void)
{
    enum { N = 100000 };
    coro_sched_t *s;
    int rc = coro_sched_create(&s, NULL);
    if (rc < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_event_init(&all_done);
    atomic_store(&left, N);
    for (int i = 1; i <= N; i++)
        if ((rc = spawn_task(s, i)) < 0) {
            fprintf(stderr, "spawn: %s\n", coro_strerror(rc));
            return 1;
        }
    coro_event_wait_blocking(&all_done, CORO_FOREVER);
    long expect = (long)N * (N + 1) / 2;
    printf("%d jobs, sum %ld (expected %ld)\n", N, atomic_load(&sum), expect);
    coro_event_destroy(&all_done);
    coro_sched_destroy(s);                  /* every pool frame's memory goes back */
    return atomic_load(&sum) == expect ? 0 : 1;
}
