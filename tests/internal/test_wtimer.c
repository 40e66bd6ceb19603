/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A worker's timers (lib/wait/wtimer.c): a timed wait begun on a worker -
 * a lot wait (an event), a sleep, an fd wait - keeps its timer in that
 * worker's heap, not the scheduler's; a wait ended or cancelled from the
 * other worker removes it there; a worker stuck in a long step has its
 * due timers fired by the I/O thread, and the job they wake runs on the
 * other worker, on time; a scheduler without workers keeps the
 * scheduler's heap. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt/rt.h"
#include "wait/wait.h"  /* white box: the timers' homes and counts */
#include "white_box.h"

#define MS 1000000LL

enum kind { K_EVENT, K_SLEEP, K_READ };

struct waiter {
    coro_t co;
    enum kind k;
    coro_event_t *ev;
    int fd;
    int64_t ns;
    int begun_on, ended_on;     /* worker indexes */
    intptr_t res;
    int64_t took;
    atomic_int done;            /* set once the wait ended */
};

static int worker_idx(void)
{
    return coro__tls_worker ? coro__tls_worker->idx : -1;
}

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    static char b;
    CORO_BEGIN(co);
    w->begun_on = worker_idx();
    w->took = coro_now();
    if (w->k == K_EVENT)
        CORO_AWAIT(co, coro_event_wait(w->ev, w->ns));
    else if (w->k == K_SLEEP)
        CORO_AWAIT(co, coro_sleep(w->ns));
    else
        CORO_AWAIT(co, coro_read(w->fd, &b, 1, w->ns));
    w->took = coro_now() - w->took;
    w->res = CORO_RESULT(co);
    w->ended_on = worker_idx();
    atomic_store(&w->done, 1);
    CORO_END(co);
}

/* ends w's wait from where it runs: sets the event, writes the fd's peer,
 * or cancels the sleep */
struct ender {
    coro_t co;
    struct waiter *w;
    int peer;
    int on;
};

static int ender_body(coro_t *co)
{
    struct ender *e = CORO_SELF(co, struct ender);
    CORO_BEGIN(co);
    e->on = worker_idx();
    if (e->w->k == K_EVENT)
        coro_event_set(e->w->ev);
    else if (e->w->k == K_SLEEP)
        coro_cancel(&e->w->co);
    else if (write(e->peer, "x", 1) != 1)
        CORO_RETURN(co, -EIO);
    CORO_END(co);
}

/* the CPUs this process may use (taskset), one worker each */
static int cpus(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

static coro_spawn_opts_t on_cpu(coro_cpuset_t *set, int cpu)
{
    coro_cpuset_zero(set);
    coro_cpuset_add(set, cpu);
    return (coro_spawn_opts_t){ .affinity = set };
}

Test(wtimer, a_wait_keeps_its_timer_on_its_worker_and_the_other_worker_removes_it_there,
     .timeout = 20)
{
    if (cpus() < 2)
        cr_skip_test("needs two CPUs: one worker on each");
    coro_sched_t *s = mk(2);
    int cpu0 = s->w[0]->cpu, cpu1 = s->w[1]->cpu;
    for (int k = K_EVENT; k <= K_READ; k++) {
        coro_event_t ev;
        int fds[2];
        coro_cpuset_t a, b;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct waiter w = { .k = (enum kind)k, .ev = &ev, .fd = fds[0], .ns = 10000 * MS };
        struct ender e = { .w = &w, .peer = fds[1] };
        coro_spawn_opts_t o = on_cpu(&a, cpu0);
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, &o), 0);
        wait_suspended(&w.co);
        /* the worker arms the wait after the step that suspended it: its
         * timer is in a heap a moment after the job reads suspended */
        for (int64_t end = now_ns() + 5000 * MS; coro__wt_count(s) == 0 && now_ns() < end;)
            sleep_ms(1);
        /* its timer is worker 0's, none is the scheduler's */
        cr_assert_eq(w.begun_on, 0, "kind %d: began on worker %d (CPUs %d, %d)", k, w.begun_on,
                     cpu0, cpu1);
        cr_assert_eq(coro__wt_count(s), 1, "kind %d: the timer is not in a worker's heap", k);
        cr_assert_eq(coro__wt_get(s, 1)->npend, 1, "kind %d: not in worker 0's heap", k);
        cr_assert(!coro__parklot_timers_pending(s), "kind %d: in the scheduler's heap", k);
        cr_assert_eq(coro__io_next_timer(coro__sched_io(s)), INT64_MAX, "kind %d", k);
        /* ended from worker 1: the timer goes at once, marked in worker 0's heap */
        o = on_cpu(&b, cpu1);
        cr_assert_eq(coro_spawn(s, &e.co, ender_body, &o), 0);
        cr_assert_eq(join_r(&e.co), 0);
        cr_assert_eq(join_r(&w.co), 0);
        cr_assert_eq(e.on, 1);
        cr_assert_eq(w.res, k == K_SLEEP ? -ECANCELED : k == K_READ ? 1 : 0, "kind %d: %ld", k,
                     (long)w.res);
        cr_assert_lt(w.took, 5000 * MS, "kind %d: ended by its timer", k);
        cr_assert_eq(coro__parklot_timers_count(s), 0, "kind %d: the timer outlived its wait", k);
        coro_event_destroy(&ev);
        close(fds[0]);
        close(fds[1]);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* the long step: no yield until w's wait ended, or for at most cap_ms
 * milliseconds (then released stays 0: the wait waited for this step) */
struct hog {
    coro_t co;
    struct waiter *w;
    int64_t cap_ms;
    int released;
};

static int hog_body(coro_t *co)
{
    struct hog *h = CORO_SELF(co, struct hog);
    CORO_BEGIN(co);
    for (int64_t end = coro_now() + h->cap_ms * MS; coro_now() < end;)
        if (atomic_load(&h->w->done)) {
            h->released = 1;
            break;
        }
    CORO_END(co);
}

/* The worker stays stuck until the wait has ended: no bound on how soon
 * (a loaded machine may keep the other worker and the I/O thread off the
 * CPUs for hundreds of milliseconds, which once failed a 700 ms bound
 * here), only that the timer did not wait for the stuck step - which,
 * without the I/O thread firing it, would end only at the 4 s cap. */
Test(wtimer, a_stuck_workers_timer_fires_on_time_and_its_job_runs_on_the_other_worker,
     .timeout = 30)
{
    if (cpus() < 2)
        cr_skip_test("needs two CPUs: one worker stuck, the other free");
    for (int k = K_EVENT; k <= K_READ; k++) {
        coro_sched_t *s = mk(2);
        coro_event_t ev;
        int fds[2];
        coro_cpuset_t set;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        /* any CPU: where its wait begins is its timer's home; 200 ms,
         * time enough for the stuck step to start there first */
        struct waiter w = { .k = (enum kind)k, .ev = &ev, .fd = fds[0], .ns = 200 * MS };
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        wait_suspended(&w.co);
        cr_assert_geq(w.begun_on, 0);
        /* that worker is stuck until the wait ended */
        struct hog h = { .w = &w, .cap_ms = 4000 };
        coro_spawn_opts_t o = on_cpu(&set, s->w[w.begun_on]->cpu);
        cr_assert_eq(coro_spawn(s, &h.co, hog_body, &o), 0);
        cr_assert_eq(join_r(&w.co), 0);
        cr_assert_eq(w.res, k == K_SLEEP ? 0 : -ETIMEDOUT, "kind %d", k);
        cr_assert_geq(w.took, 200 * MS, "kind %d: fired early", k);
        cr_assert_eq(w.ended_on, 1 - w.begun_on, "kind %d: it ran on the stuck worker", k);
        cr_assert_eq(join_r(&h.co), 0);
        cr_assert_eq(h.released, 1, "kind %d: the timer waited for the stuck worker (%lld ms)", k,
                     (long long)(w.took / MS));
        cr_assert_eq(coro__parklot_timers_count(s), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
        close(fds[0]);
        close(fds[1]);
    }
}

Test(wtimer, without_workers_a_wait_keeps_the_schedulers_heap, .timeout = 20)
{
    coro_sched_t *s = mk(0);
    coro_event_t ev;
    cr_assert_eq(coro_event_init(&ev), 0);
    cr_assert_eq(coro__wt_homes(s), 0);
    struct waiter w = { .k = K_EVENT, .ev = &ev, .ns = 5 * MS };
    cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
    cr_assert_eq(join_r(&w.co), 0);
    cr_assert_eq(w.res, -ETIMEDOUT);
    cr_assert_geq(w.took, 5 * MS);
    cr_assert_eq(w.co.wait_slot, 0, "its timer went with the wait");
    cr_assert_eq(coro__parklot_timers_count(s), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
}
