/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Allocation failure at every allocation of every scenario.
 *
 * Each scenario is a whole life of a scheduler whose config allocator
 * (.alloc, a coro_alloc_t) counts: coro_sched_create, pool frames
 * (coro_frame_alloc, several slabs and a big one), affinity classes, job
 * deadlines and groups (the spawn's extension record), the parking lot's
 * timers and the sleep heap past their preallocation, channels
 * (coro_chan_init_alloc), selects, I/O fd slots in several chunks,
 * coro_blocking, coro_done_timeout, and shutdown with waiters of every
 * kind.  The sweep runs a scenario once to count its N allocations, then
 * reruns it failing exactly the k-th allocation, for every k in 1..N: the
 * failure must come back as -ENOMEM (a call's return, an await's result,
 * a NULL frame) and nothing else may go wrong - no other error, no wrong
 * result, no crash, nothing left allocated (the allocator's count, and
 * LeakSanitizer under make check-asan).  A failure nobody reports is
 * allowed only where it is absorbed by design, and must then leave every
 * result right.
 *
 * Allocations that do not go through the config allocator (checked by
 * grep over lib/): the process-wide frame map leaves (lib/sched/frame.c,
 * shared by every scheduler, process lifetime), the default allocator
 * itself (malloc / posix_memalign when .alloc is NULL), coro_chan_init_alloc
 * with its own allocator argument (used here with the counting one), and
 * the threads' stacks (pthread_create: -EAGAIN, not injectable here). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the failing, counting allocator ------------------------------------------ */
static long n_allocs;       /* allocations asked for in this run */
static long fail_at;        /* the allocation (1-based) to refuse; 0 = none */
static long n_failed;       /* refusals made */
static long live_blocks, live_bytes;

static void *f_malloc(void *ctx, size_t n)
{
    (void)ctx;
    long k = __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    if (k == __atomic_load_n(&fail_at, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&n_failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    void *p = malloc(n);
    if (p) {
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&live_bytes, (long)n, __ATOMIC_RELAXED);
    }
    return p;
}

static void f_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (!p)
        return;
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&live_bytes, (long)n, __ATOMIC_RELAXED);
    free(p);
}

static coro_alloc_t failing = { .alloc = f_malloc, .free = f_free };

/* what a run saw: -ENOMEM reported somewhere, or another error (a bug) */
static long saw_enomem, saw_other;
static char other_what[160];

/* Record a result: 0 and positive values are fine, -ENOMEM is counted, any
 * error not in `ok` (a list of other acceptable codes, 0-terminated) is a
 * failure of the test. */
static void note(const char *what, intptr_t rc, const int *ok)
{
    if (rc >= 0)
        return;
    if (rc == -ENOMEM) {
        __atomic_add_fetch(&saw_enomem, 1, __ATOMIC_RELAXED);
        return;
    }
    for (; ok && *ok; ok++)
        if (rc == *ok)
            return;
    if (__atomic_add_fetch(&saw_other, 1, __ATOMIC_RELAXED) == 1)
        snprintf(other_what, sizeof other_what, "%s: %s", what, coro_err_name((int)rc));
}

static int mk_failing(coro_sched_t **s, int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    c.alloc = &failing;
    c.blocking_threads = 2;
    *s = NULL;
    int rc = coro_sched_create(s, &c);
    note("coro_sched_create", rc, NULL);
    return rc;
}

static void finish(coro_sched_t *s, int mode)
{
    int rc = coro_sched_shutdown(s, mode);
    note("coro_sched_shutdown", rc, NULL);
    rc = coro_sched_destroy(s);
    note("coro_sched_destroy", rc, NULL);
}

/* ---- the sweep ---------------------------------------------------------------------- */
typedef void (*scenario_fn)(int workers);

static void reset(long k)
{
    n_allocs = n_failed = 0;
    saw_enomem = saw_other = 0;
    other_what[0] = 0;
    fail_at = k;
}

static void sweep(const char *name, scenario_fn run, int workers)
{
    reset(0);
    run(workers);
    cr_assert_eq(saw_other, 0, "%s/%d without failure: %s", name, workers, other_what);
    cr_assert_eq(saw_enomem, 0, "%s/%d: -ENOMEM without a failed allocation", name, workers);
    cr_assert_eq(live_blocks, 0, "%s/%d: %ld blocks left", name, workers, live_blocks);
    long n = n_allocs;
    cr_assert_gt(n, 0, "%s: no allocation went through the config allocator", name);

    long absorbed = 0, reported = 0;
    /* a few more than counted: runs with workers vary a little */
    for (long k = 1; k <= n + 4; k++) {
        reset(k);
        run(workers);
        cr_assert_eq(saw_other, 0, "%s/%d failing allocation %ld of %ld: %s", name, workers, k,
                     n, other_what);
        cr_assert_eq(live_blocks, 0, "%s/%d failing allocation %ld: %ld blocks (%ld bytes) left",
                     name, workers, k, live_blocks, live_bytes);
        cr_assert_eq(live_bytes, 0, "%s/%d failing allocation %ld: %ld bytes left", name,
                     workers, k, live_bytes);
        if (!n_failed) {
            cr_assert_eq(saw_enomem, 0, "%s/%d: -ENOMEM without a failed allocation", name,
                         workers);
            continue;
        }
        if (saw_enomem)
            reported++;
        else
            absorbed++;
    }
    cr_log_info("%s, %d workers: %ld allocations; %ld failures reported as -ENOMEM, "
                "%ld absorbed", name, workers, n, reported, absorbed);
    cr_assert_gt(reported, 0, "%s/%d: no failure was ever reported", name, workers);
}

/* ---- scenario: create and destroy -------------------------------------------------- */
static void scen_create(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    finish(s, CORO_DRAIN);
}

/* ---- scenario: pool frames, classes, deadlines, groups -------------------------- */
struct pjob {
    coro_t co;
    long *done;
    char pad[512];
};

static int pjob_body(coro_t *co)
{
    struct pjob *j = CORO_SELF(co, struct pjob);
    CORO_BEGIN(co);
    CORO_YIELD(co);
    __atomic_add_fetch(j->done, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

struct bigjob {
    coro_t co;
    long *done;
    char pad[8192];         /* above 2 KiB: a slab of its own */
};

static int bigjob_body(coro_t *co)
{
    struct bigjob *j = CORO_SELF(co, struct bigjob);
    CORO_BEGIN(co);
    __atomic_add_fetch(j->done, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

#define NPOOL 300           /* 300 x 576 bytes: several 64 KiB slabs */

static void scen_pool(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    coro_group_t g;
    coro_group_init(&g);
    coro_cpuset_t one;
    coro_cpuset_zero(&one);
    coro_cpuset_add(&one, 0);
    static long done;
    long spawned = 0;
    done = 0;
    for (int i = 0; i < NPOOL + 2; i++) {
        coro_spawn_opts_t o = { 0 };
        coro_t *co;
        coro_fn fn;
        if (i % 3 == 1)
            o.group = &g;
        if (i % 3 == 2)
            o.deadline = coro_now() + 60 * 1000000000LL;
        if (i % 50 == 7)
            o.affinity = &one;
        if (i >= NPOOL) {
            struct bigjob *b = coro_frame_alloc(s, sizeof *b);
            if (!b) {
                note("coro_frame_alloc", -ENOMEM, NULL);
                continue;
            }
            b->done = &done;
            co = &b->co;
            fn = bigjob_body;
        } else {
            struct pjob *p = coro_frame_alloc(s, sizeof *p);
            if (!p) {
                note("coro_frame_alloc", -ENOMEM, NULL);
                continue;
            }
            p->done = &done;
            co = &p->co;
            fn = pjob_body;
        }
        int rc = coro_spawn(s, co, fn, &o);
        note("coro_spawn", rc, NULL);
        if (rc < 0)
            coro_frame_free(co);
        else
            spawned++;
    }
    if (workers == 0)
        coro_sched_run(s);
    note("coro_group_wait_blocking", coro_group_wait_blocking(&g, CORO_FOREVER), NULL);
    finish(s, CORO_DRAIN);
    cr_assert_eq(coro_group_destroy(&g), 0);
    cr_assert_eq(done, spawned, "%ld of %ld jobs ran", done, spawned);
}

/* ---- scenario: timers (lot waits, sleeps, coro_done_timeout) past prealloc ------ */
#define NTIMED 300          /* above TIMER_PREALLOC (256) and the sleep heap's 256 */

struct tjob {
    coro_t co;
    int kind;
    coro_event_t *ev;
    coro_t *target;
    intptr_t res, got;
};

static int tjob_body(coro_t *co)
{
    struct tjob *j = CORO_SELF(co, struct tjob);
    CORO_BEGIN(co);
    if (j->kind == 0)
        CORO_AWAIT(co, coro_event_wait(j->ev, 30 * 1000000000LL));
    else if (j->kind == 1)
        CORO_AWAIT(co, coro_sleep(1000000));
    else if (j->kind == 2)
        CORO_AWAIT(co, coro_done_timeout(j->target, &j->got, 30 * 1000000000LL));
    else
        coro_event_set(j->ev);
    j->res = CORO_RESULT(co);
    CORO_END(co);
}

static int hold_body(coro_t *co)
{
    struct tjob *j = CORO_SELF(co, struct tjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
    j->res = CORO_RESULT(co);
    CORO_RETURN(co, 42);
    CORO_END(co);
}

static void scen_timers(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    static struct tjob j[3 * NTIMED + 2];
    static coro_event_t ev;
    memset(j, 0, sizeof j);
    coro_event_init(&ev);
    struct tjob *hold = &j[3 * NTIMED + 1], *setter = &j[3 * NTIMED];
    hold->ev = &ev;
    note("coro_spawn hold", coro_spawn(s, &hold->co, hold_body, NULL), NULL);
    for (int i = 0; i < 3 * NTIMED; i++) {
        j[i].kind = i % 3;
        j[i].ev = &ev;
        j[i].target = &hold->co;
        int rc = coro_spawn(s, &j[i].co, tjob_body, NULL);
        cr_assert_eq(rc, 0, "spawn: %s", coro_err_name(rc));
    }
    setter->kind = 3;
    setter->ev = &ev;
    cr_assert_eq(coro_spawn(s, &setter->co, tjob_body, NULL), 0);
    for (int i = 0; i < 3 * NTIMED + 2; i++)
        join_r(&j[i].co);
    for (int i = 0; i < 3 * NTIMED; i++) {
        note(j[i].kind == 0 ? "event wait" : j[i].kind == 1 ? "sleep" : "done_timeout",
             j[i].res, NULL);
        if (j[i].kind == 2 && j[i].res == 0)
            cr_assert_eq(j[i].got, 42);
    }
    note("hold", hold->res, NULL);
    finish(s, CORO_DRAIN);
}

/* ---- scenario: channels and selects ---------------------------------------------------- */
#define NCHJ 300           /* waiters at once: above TIMER_PREALLOC */

struct cjob {
    coro_t co;
    int kind;
    coro_chan_t *ch;
    coro_event_t *ev;
    coro_select_t sel;
    void *item;
    intptr_t res;
    int i;
};

static int cjob_body(coro_t *co)
{
    struct cjob *j = CORO_SELF(co, struct cjob);
    CORO_BEGIN(co);
    if (j->kind == 0) {             /* producer: waits for room, with a timer */
        CORO_AWAIT(co, coro_chan_send(j->ch, (void *)(intptr_t)1, 30 * 1000000000LL));
    } else if (j->kind == 1) {      /* consumer */
        CORO_AWAIT(co, coro_chan_recv(j->ch, &j->item, 30 * 1000000000LL));
    } else if (j->kind == 3) {      /* last: end whatever still waits */
        coro_event_set(j->ev);
        coro_chan_close(j->ch);
    } else {                        /* select on an event and the channel */
        coro_select_init(&j->sel);
        coro_select_event(&j->sel, j->ev);
        coro_select_recv(&j->sel, j->ch, &j->item);
        CORO_SELECT(co, &j->sel, 30 * 1000000000LL);
    }
    j->res = CORO_RESULT(co);
    CORO_END(co);
}

static void scen_chan(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    coro_chan_t ch;
    coro_event_t ev;
    int rc = coro_chan_init_alloc(&ch, 4, &failing);
    note("coro_chan_init_alloc", rc, NULL);
    if (rc < 0) {
        finish(s, CORO_DRAIN);
        return;
    }
    coro_event_init(&ev);
    static struct cjob j[3 * NCHJ + 1];
    memset(j, 0, sizeof j);
    /* producers first: most of them wait for room; then consumers; the
     * selects take what is left or the event; the last job sets the event
     * and closes the channel (on one thread, once every other job waits;
     * with workers, maybe earlier: the waits then end at once) */
    for (int i = 0; i < 3 * NCHJ + 1; i++) {
        j[i].kind = i < 3 * NCHJ ? i / NCHJ : 3;
        j[i].ch = &ch;
        j[i].ev = &ev;
        cr_assert_eq(coro_spawn(s, &j[i].co, cjob_body, NULL), 0);
    }
    join_r(&j[3 * NCHJ].co);
    static const int ok[] = { -EPIPE, 0 };
    long sent = 0, got = 0;
    for (int i = 0; i < 3 * NCHJ; i++) {
        join_r(&j[i].co);
        note(j[i].kind == 0 ? "send" : j[i].kind == 1 ? "recv" : "select", j[i].res, ok);
        if (j[i].kind == 0 && j[i].res == 0)
            sent++;
        if (j[i].kind == 1 && j[i].res == 0)
            got++;
        if (j[i].kind == 2 && j[i].res == 1 && coro_select_result(&j[i].sel, 1) == 0)
            got++;
    }
    void *it;
    while (coro_chan_try_recv(&ch, &it) == 0)
        got++;
    cr_assert_eq(sent, got, "sent %ld, received %ld", sent, got);
    finish(s, CORO_DRAIN);
    cr_assert_eq(coro_chan_destroy(&ch), 0);
    coro_event_destroy(&ev);
}

/* ---- scenario: I/O fd slots in several chunks ------------------------------------- */
struct iojob {
    coro_t co;
    int fd, write;
    char buf[8];
    intptr_t res;
};

static int iojob_body(coro_t *co)
{
    struct iojob *j = CORO_SELF(co, struct iojob);
    CORO_BEGIN(co);
    if (j->write)
        CORO_AWAIT(co, coro_write_all(j->fd, "ping", 4, 30 * 1000000000LL));
    else
        CORO_AWAIT(co, coro_read(j->fd, j->buf, 4, 30 * 1000000000LL));
    j->res = CORO_RESULT(co);
    CORO_END(co);
}

#define NIO 3               /* pipes whose fds sit in chunks 1, 2, 3 (256 fds each) */

static void scen_io(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    int fds[NIO][2];
    static struct iojob j[2 * NIO];
    memset(j, 0, sizeof j);
    for (int i = 0; i < NIO; i++) {
        int p[2];
        cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        /* high fd numbers: each pair lands in a chunk of its own */
        fds[i][0] = fcntl(p[0], F_DUPFD_CLOEXEC, 300 + 256 * i);
        fds[i][1] = fcntl(p[1], F_DUPFD_CLOEXEC, 400 + 256 * i);
        cr_assert(fds[i][0] >= 0 && fds[i][1] >= 0);
        close(p[0]);
        close(p[1]);
        /* readers first, so that they wait in epoll */
        j[i] = (struct iojob){ .fd = fds[i][0] };
        j[NIO + i] = (struct iojob){ .fd = fds[i][1], .write = 1 };
    }
    for (int i = 0; i < 2 * NIO; i++)
        cr_assert_eq(coro_spawn(s, &j[i].co, iojob_body, NULL), 0);
    for (int i = 0; i < NIO; i++) {
        /* a writer that failed leaves its reader waiting: close its end */
        join_r(&j[NIO + i].co);
        note("write", j[NIO + i].res, NULL);
        if (j[NIO + i].res < 0)
            coro_sched_shutdown(s, CORO_CANCEL);
    }
    static const int ok[] = { -ECANCELED, 0 };
    for (int i = 0; i < NIO; i++) {
        join_r(&j[i].co);
        note("read", j[i].res, ok);
        if (j[i].res >= 0)
            cr_assert_eq(j[i].res, 4);
    }
    for (int i = 0; i < NIO; i++) {
        note("coro_close", coro_close(s, fds[i][0]), NULL);
        note("coro_close", coro_close(s, fds[i][1]), NULL);
    }
    finish(s, CORO_DRAIN);
}

/* ---- scenario: coro_blocking ---------------------------------------------------------- */
static intptr_t twice(void *arg)
{
    return 2 * (intptr_t)arg;
}

struct bjob {
    coro_t co;
    intptr_t arg, res;
};

static int bjob_body(coro_t *co)
{
    struct bjob *j = CORO_SELF(co, struct bjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(twice, (void *)j->arg));
    j->res = CORO_RESULT(co);
    CORO_END(co);
}

static void scen_blocking(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    static struct bjob j[8];
    memset(j, 0, sizeof j);
    for (int i = 0; i < 8; i++) {
        j[i].arg = i + 1;
        cr_assert_eq(coro_spawn(s, &j[i].co, bjob_body, NULL), 0);
    }
    for (int i = 0; i < 8; i++) {
        join_r(&j[i].co);
        note("coro_blocking", j[i].res, NULL);
        if (j[i].res >= 0)
            cr_assert_eq(j[i].res, 2 * (i + 1));
    }
    finish(s, CORO_DRAIN);
}

/* ---- scenario: shutdown with waiters of every kind --------------------------------- */
struct wjob {
    coro_t co;
    int kind, fd;
    coro_event_t *ev;
    coro_chan_t *ch;
    coro_mutex_t *m;
    char buf[4];
    void *item;
    intptr_t res;
};

static int wjob_body(coro_t *co)
{
    struct wjob *j = CORO_SELF(co, struct wjob);
    CORO_BEGIN(co);
    switch (j->kind) {
    case -1:                /* the marker: spawned last */
        break;
    case 0:
        CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
        break;
    case 1:
        CORO_AWAIT(co, coro_event_wait(j->ev, 60 * 1000000000LL));
        break;
    case 2:
        CORO_AWAIT(co, coro_sleep(60 * 1000000000LL));
        break;
    case 3:
        CORO_AWAIT(co, coro_read(j->fd, j->buf, 1, CORO_FOREVER));
        break;
    case 4:
        CORO_AWAIT(co, coro_chan_recv(j->ch, &j->item, 60 * 1000000000LL));
        break;
    default:
        CORO_AWAIT(co, coro_mutex_lock(j->m, 60 * 1000000000LL));
        break;
    }
    j->res = CORO_RESULT(co);
    CORO_END(co);
}

#define NW 6

static void scen_shutdown(int workers)
{
    coro_sched_t *s;
    if (mk_failing(&s, workers) < 0)
        return;
    coro_event_t ev;
    coro_chan_t ch;
    coro_mutex_t m;
    void *buf[2];
    int p[4][2];            /* one pipe per reader: one waiter per fd */
    coro_event_init(&ev);
    coro_chan_init(&ch, buf, 2);
    coro_mutex_init(&m);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pipe2(p[i], O_NONBLOCK | O_CLOEXEC), 0);
    cr_assert_eq(coro_mutex_try_lock(&m), 0);     /* held: the lockers wait */
    static struct wjob j[4 * NW + 1];
    memset(j, 0, sizeof j);
    for (int i = 0; i < 4 * NW + 1; i++) {
        j[i].kind = i < 4 * NW ? i % NW : -1;
        j[i].fd = p[i < 4 * NW ? i / NW : 0][0];     /* the marker reads nothing */
        j[i].ev = &ev;
        j[i].ch = &ch;
        j[i].m = &m;
        cr_assert_eq(coro_spawn(s, &j[i].co, wjob_body, NULL), 0);
    }
    /* on one thread, joining the marker runs every waiter up to its wait
     * first; with workers, a waiter not waiting yet is cancelled at its
     * await just the same */
    join_r(&j[4 * NW].co);
    int rc = coro_sched_shutdown(s, CORO_CANCEL);
    note("coro_sched_shutdown", rc, NULL);
    static const int ok[] = { -ECANCELED, 0 };
    for (int i = 0; i < 4 * NW; i++) {
        join_r(&j[i].co);
        note("waiter", j[i].res, ok);
        cr_assert_neq(j[i].res, 0, "waiter %d (kind %d) was not cancelled", i, j[i].kind);
    }
    note("coro_sched_destroy", coro_sched_destroy(s), NULL);
    for (int i = 0; i < 4; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
    coro_mutex_unlock(&m);
    coro_mutex_destroy(&m);
    coro_chan_destroy(&ch);
    coro_event_destroy(&ev);
}

/* ---- the tests --------------------------------------------------------------------------- */
#define SWEEP(name, fn)                                                         \
    Test(sched_enomem, name##_every_allocation_fails_cleanly, .timeout = 240)       \
    {                                                                           \
        sweep(#name, fn, 0);                                                    \
        sweep(#name, fn, 1);                                                    \
        sweep(#name, fn, 2);                                                    \
    }

SWEEP(sched_create, scen_create)
SWEEP(pool_frames_classes_deadlines_groups, scen_pool)
SWEEP(parklot_timers_sleeps_done_timeout, scen_timers)
SWEEP(channels_and_selects, scen_chan)
SWEEP(io_fd_slots, scen_io)
SWEEP(blocking, scen_blocking)
SWEEP(shutdown_with_waiters, scen_shutdown)
