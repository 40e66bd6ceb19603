/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_cancel of one job reaches its wait through the job's own awaitable
 * (lib/wait/parklot.c CANCEL ONE) for every kind of wait: a select, a group
 * wait, a call queued for the blocking pool, a signal, a child's exit, a
 * job's end (its joiner slot and the lot).  Many jobs wait, each on an
 * object of its own, after many other objects were waited on; they are
 * cancelled one at a time: each ends with -ECANCELED, every other one is
 * still suspended, and no cancel fell back to the sweep over every
 * structure the scheduler ever waited in (coro__parklot_cancel_sweeps). */
#include <criterion/criterion.h>
#include <corokit.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt/rt.h"      /* the state word, coro__parklot_cancel_sweeps */
#include "white_box.h"

enum kind { K_SELECT, K_GROUP, K_BLOCKING, K_SIGNAL, K_CHILD, K_DONE, NKINDS };
static const char *const kind_name[NKINDS] = { "select", "group", "blocking", "signal",
                                               "child", "done" };

#define NW 12           /* waiters per kind */
#define HISTORY 500     /* objects waited on before */

struct waiter {
    coro_t co;
    enum kind kind;
    coro_event_t *ev;       /* select: its branch */
    coro_select_t sel;
    coro_group_t *g;
    coro_t *target;         /* done */
    pid_t pid;              /* child */
    intptr_t res;
};

static int ran;             /* blocking calls that ran */
static int plug_in;         /* the pool's one thread holds the plug */
static int plug_go;

static intptr_t count_fn(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    return 0;
}

/* holds the pool's only thread until plug_go */
static intptr_t plug_fn(void *arg)
{
    (void)arg;
    __atomic_store_n(&plug_in, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&plug_go, __ATOMIC_ACQUIRE))
        usleep(200);
    return 0;
}

static int plug_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(plug_fn, NULL));
    CORO_END(co);
}

struct evjob {
    coro_t co;
    coro_event_t *ev;
};

static int ev_body(coro_t *co)
{
    struct evjob *j = CORO_SELF(co, struct evjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
    CORO_END(co);
}

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    switch (w->kind) {
    case K_SELECT:
        CORO_SELECT(co, &w->sel, CORO_FOREVER);
        break;
    case K_GROUP:
        CORO_AWAIT(co, coro_group_wait(w->g, CORO_FOREVER));
        break;
    case K_BLOCKING:
        CORO_AWAIT(co, coro_blocking(count_fn, NULL));
        break;
    case K_SIGNAL:
        CORO_AWAIT(co, coro_signal(SIGUSR2, CORO_FOREVER));
        break;
    case K_CHILD:
        CORO_AWAIT(co, coro_child(w->pid, CORO_FOREVER));
        break;
    case K_DONE:
        CORO_AWAIT(co, coro_done(w->target));
        break;
    default:
        break;
    }
    w->res = CORO_RESULT(co);
    CORO_END(co);
}

/* HISTORY jobs each wait on an event of its own, then all are set: the lot
 * buckets and registry bits a sweep would visit */
static void make_history(coro_sched_t *s)
{
    coro_event_t *ev = calloc(HISTORY, sizeof *ev);
    struct evjob *j = calloc(HISTORY, sizeof *j);
    cr_assert(ev && j);
    for (int i = 0; i < HISTORY; i++) {
        coro_event_init(&ev[i]);
        j[i].ev = &ev[i];
        cr_assert_eq(coro_spawn(s, &j[i].co, ev_body, NULL), 0);
    }
    for (int i = 0; i < HISTORY; i++)
        wait_suspended(&j[i].co);
    for (int i = 0; i < HISTORY; i++)
        coro_event_set(&ev[i]);
    for (int i = 0; i < HISTORY; i++)
        cr_assert_eq(join_r(&j[i].co), 0);
    for (int i = 0; i < HISTORY; i++)
        coro_event_destroy(&ev[i]);
    free(ev);
    free(j);
}

static void run_kind(enum kind k, int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = workers;
    c.pin = false;
    c.blocking_threads = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    make_history(s);

    static struct waiter w[2 * NW];
    static coro_event_t ev[NW];
    static coro_group_t g[NW];
    static struct evjob member[NW];
    coro_t plug;
    pid_t pid = -1;
    int n = k == K_DONE ? 2 * NW : NW;

    memset(w, 0, sizeof w);
    memset(&plug, 0, sizeof plug);
    __atomic_store_n(&ran, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&plug_in, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&plug_go, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < NW; i++) {
        coro_event_init(&ev[i]);
        member[i] = (struct evjob){ .ev = &ev[i] };
    }
    if (k == K_GROUP || k == K_DONE) {
        /* members / targets: one job per event, waiting on it */
        for (int i = 0; i < NW; i++) {
            coro_spawn_opts_t o = { .group = k == K_GROUP ? &g[i] : NULL };
            cr_assert_eq(coro_group_init(&g[i]), 0);
            cr_assert_eq(coro_spawn(s, &member[i].co, ev_body, &o), 0);
            wait_suspended(&member[i].co);
        }
    }
    if (k == K_BLOCKING) {
        cr_assert_eq(coro_spawn(s, &plug, plug_body, NULL), 0);
        while (!__atomic_load_n(&plug_in, __ATOMIC_ACQUIRE))
            sched_yield();
    }
    if (k == K_CHILD) {
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pause();
            _exit(0);
        }
    }
    for (int i = 0; i < n; i++) {
        w[i].kind = k;
        w[i].g = &g[i % NW];
        w[i].target = &member[i % NW].co;   /* done: two awaiters each */
        w[i].pid = pid;
        w[i].res = 1;
        if (k == K_SELECT) {
            cr_assert_eq(coro_select_init(&w[i].sel), 0);
            cr_assert_eq(coro_select_event(&w[i].sel, &ev[i]), 0);
        }
        cr_assert_eq(coro_spawn(s, &w[i].co, waiter_body, NULL), 0);
        wait_suspended(&w[i].co);
    }

    /* one at a time, from the middle outwards */
    bool gone[2 * NW] = { false };
    for (int step = 0; step < n; step++) {
        int i = (n / 2 + (step % 2 ? -(step + 1) / 2 : step / 2) + n) % n;
        uint64_t sweeps = coro__parklot_cancel_sweeps(s);
        cr_assert_eq(coro_cancel(&w[i].co), 0);
        cr_assert_eq(join_r(&w[i].co), 0);
        gone[i] = true;
        cr_assert_eq(w[i].res, -ECANCELED, "%s: waiter %d got %ld", kind_name[k], i,
                     (long)w[i].res);
        cr_assert_eq(coro__parklot_cancel_sweeps(s), sweeps,
                     "%s: the cancel of one job swept every wait structure", kind_name[k]);
        for (int j = 0; j < n; j++)
            if (!gone[j])
                cr_assert(suspended(&w[j].co), "%s: waiter %d woke with waiter %d",
                          kind_name[k], j, i);
    }
    cr_assert_eq(__atomic_load_n(&ran, __ATOMIC_RELAXED), 0, "a cancelled call ran");

    if (k == K_BLOCKING) {
        __atomic_store_n(&plug_go, 1, __ATOMIC_RELEASE);
        cr_assert_eq(join_r(&plug), 0);
    }
    if (k == K_GROUP || k == K_DONE) {
        for (int i = 0; i < NW; i++)
            coro_event_set(&ev[i]);
        for (int i = 0; i < NW; i++) {
            cr_assert_eq(join_r(&member[i].co), 0);
            cr_assert_eq(coro_group_destroy(&g[i]), 0);
        }
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < NW; i++)
        coro_event_destroy(&ev[i]);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    coro_sched_destroy(s);
}

static void block_sigusr2(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

#define KIND_TEST(name, k)                                                          \
    Test(cancel_one, name, .timeout = 30)                                          \
    {                                                                               \
        block_sigusr2();    /* before the workers start: they inherit it */         \
        for (int workers = 1; workers <= 2; workers++)                              \
            run_kind(k, workers);                                                   \
    }

KIND_TEST(a_select_among_many_ends_alone_without_a_sweep, K_SELECT)
KIND_TEST(a_group_wait_among_many_ends_alone_without_a_sweep, K_GROUP)
KIND_TEST(a_queued_blocking_call_among_many_ends_alone_without_a_sweep, K_BLOCKING)
KIND_TEST(a_signal_wait_among_many_ends_alone_without_a_sweep, K_SIGNAL)
KIND_TEST(a_child_wait_among_many_ends_alone_without_a_sweep, K_CHILD)
KIND_TEST(a_done_wait_among_many_ends_alone_without_a_sweep, K_DONE)
