/* SPDX-License-Identifier: MIT */
/* Select, read from its contract (include/corokit/sync.h): coro_select
 * over every branch kind (channel send/recv, event, fd readable/writable,
 * a job's end, a timer) at 0, 1, 2 and 4 workers, a select's own timeout
 * and the job's deadline, bad arguments, a timer branch without a
 * deadline.  The white-box select tests are in tests/internal/test_select.c.
 * A trigger comes from a plain thread once the select is parked
 * (coro_select_t's private state word, compared with lib/sync/select.c's
 * value): ordered by observation, never by a sleep. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corokit.h>
#include "fixture.h"

static const int nworkers[] = { 0, 1, 2, 4 };
#define NW (int)(sizeof nworkers / sizeof nworkers[0])
#define MS (1000000ll)
#define SEL_PARKED 1u   /* lib/sync/select.c's ST_PARKED */

static void wait_parked(coro_select_t *sel)
{
    while (__atomic_load_n(&sel->state, __ATOMIC_ACQUIRE) != SEL_PARKED)
        sched_yield();
}

/* ---- a job that selects once ------------------------------------------------------ */

struct sel_job {
    coro_t co;
    coro_select_t sel;
    int64_t timeout;
    intptr_t which, bres;
};

static int sel_body(coro_t *co)
{
    struct sel_job *f = CORO_SELF(co, struct sel_job);
    CORO_BEGIN(co);
    CORO_SELECT(co, &f->sel, f->timeout);
    f->which = CORO_RESULT(co);
    f->bres = f->which >= 0 ? coro_select_result(&f->sel, (int)f->which) : 0;
    CORO_RETURN(co, f->which);
    CORO_END(co);
}

/* a job that waits for an event and returns 42 */
struct ev_job {
    coro_t co;
    coro_event_t *ev;
};

static int ev_body(coro_t *co)
{
    struct ev_job *f = CORO_SELF(co, struct ev_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(f->ev, CORO_FOREVER));
    CORO_RETURN(co, 42);
    CORO_END(co);
}

/* ---- every kind, chosen by a trigger after parking -------------------------------- */

enum { K_RECV, K_SEND, K_EVENT, K_READ, K_WRITE, K_DONE, K_TIMER, K_N };

struct world {
    coro_sched_t *s;
    coro_chan_t rx, tx;             /* rx: empty; tx: full (cap 1) */
    void *rxbuf[1], *txbuf[1];
    coro_event_t ev, jev;
    int rsp[2];                     /* select reads rsp[0] */
    int wsp[2];                     /* select writes wsp[0], buffer full */
    struct ev_job done_job;
    struct sel_job j;
    void *got;
    int trigger;
    size_t filled;
};

static void fill(int fd, size_t *n)
{
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    *n = 0;
    for (;;) {
        ssize_t w = write(fd, buf, sizeof buf);
        if (w <= 0)
            break;
        *n += (size_t)w;
    }
}

static void *trigger_thread(void *arg)
{
    struct world *w = arg;
    char c = 'r', buf[65536];

    /* the timer fires by itself, 30 ms after the world was made: waiting
     * to see the select parked first hung when this thread was not
     * scheduled before it fired (it never saw PARKED) */
    if (w->trigger == K_TIMER)
        return NULL;
    wait_parked(&w->j.sel);
    switch (w->trigger) {
    case K_RECV: cr_assert_eq(coro_chan_try_send(&w->rx, (void *)7), 0); break;
    case K_SEND: {
        void *it;
        cr_assert_eq(coro_chan_try_recv(&w->tx, &it), 0);
        cr_assert_eq(it, (void *)1);
        break;
    }
    case K_EVENT: coro_event_set(&w->ev); break;
    case K_READ: cr_assert_eq(write(w->rsp[1], &c, 1), 1); break;
    case K_WRITE:
        /* drain until the writer side has room again */
        while (w->filled > 0) {
            ssize_t r = read(w->wsp[1], buf, sizeof buf);
            if (r <= 0)
                break;
            w->filled -= (size_t)r;
        }
        break;
    case K_DONE: coro_event_set(&w->jev); break;
    case K_TIMER: break;       /* not reached (above) */
    }
    return NULL;
}

static void world_init(struct world *w, int workers, int trigger)
{
    memset(w, 0, sizeof *w);
    w->s = mk(workers);
    w->trigger = trigger;
    cr_assert_eq(coro_chan_init(&w->rx, w->rxbuf, 1), 0);
    cr_assert_eq(coro_chan_init(&w->tx, w->txbuf, 1), 0);
    cr_assert_eq(coro_chan_try_send(&w->tx, (void *)1), 0);
    coro_event_init(&w->ev);
    coro_event_init(&w->jev);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, w->rsp), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, w->wsp), 0);
    fill(w->wsp[0], &w->filled);
    w->done_job.ev = &w->jev;
    cr_assert_eq(coro_spawn(w->s, &w->done_job.co, ev_body, NULL), 0);

    coro_select_t *sel = &w->j.sel;
    cr_assert_eq(coro_select_init(sel), 0);
    cr_assert_eq(coro_select_recv(sel, &w->rx, &w->got), K_RECV);
    cr_assert_eq(coro_select_send(sel, &w->tx, (void *)2), K_SEND);
    cr_assert_eq(coro_select_event(sel, &w->ev), K_EVENT);
    cr_assert_eq(coro_select_readable(sel, NULL, w->rsp[0]), K_READ);
    cr_assert_eq(coro_select_writable(sel, NULL, w->wsp[0]), K_WRITE);
    cr_assert_eq(coro_select_done(sel, &w->done_job.co), K_DONE);
    int64_t far = coro_now() + 10000 * MS, near = coro_now() + 30 * MS;
    cr_assert_eq(coro_select_timer(sel, trigger == K_TIMER ? near : far), K_TIMER);
    w->j.timeout = CORO_FOREVER;
}

static void world_fini(struct world *w)
{
    coro_event_set(&w->jev);
    cr_assert_eq(join_r(&w->done_job.co), 42);
    fin(w->s);
    close(w->rsp[0]);
    close(w->rsp[1]);
    close(w->wsp[0]);
    close(w->wsp[1]);
}

static void run_kind(int trigger)
{
    for (int i = 0; i < NW; i++) {
        struct world w;
        pthread_t t;
        char c;

        world_init(&w, nworkers[i], trigger);
        int64_t t0 = coro_now();
        cr_assert_eq(coro_spawn(w.s, &w.j.co, sel_body, NULL), 0);
        cr_assert_eq(pthread_create(&t, NULL, trigger_thread, &w), 0);
        cr_assert_eq(join_r(&w.j.co), trigger, "workers %d kind %d: got %ld", nworkers[i],
                     trigger, (long)w.j.which);
        pthread_join(t, NULL);

        /* the chosen branch's own result */
        if (trigger == K_DONE)
            cr_assert_eq(w.j.bres, 42);
        else
            cr_assert_eq(w.j.bres, 0);
        if (trigger == K_TIMER)
            cr_assert_geq(coro_now() - t0, 30 * MS);
        /* the chosen one did its part, the others took and put nothing */
        if (trigger == K_RECV) {
            cr_assert_eq(w.got, (void *)7);
            cr_assert_eq(coro_chan_len(&w.rx), 0);
        } else {
            cr_assert_eq(w.got, NULL);
        }
        void *it = NULL;
        if (trigger == K_SEND) {
            cr_assert_eq(coro_chan_try_recv(&w.tx, &it), 0);
            cr_assert_eq(it, (void *)2, "the send branch's item was sent");
        } else {
            cr_assert_eq(coro_chan_len(&w.tx), 1);
            cr_assert_eq(coro_chan_try_recv(&w.tx, &it), 0);
            cr_assert_eq(it, (void *)1, "an unchosen send put nothing");
        }
        if (trigger == K_READ)
            cr_assert_eq(read(w.rsp[0], &c, 1), 1, "readiness chosen, the byte still there");
        else
            cr_assert_eq(read(w.rsp[0], &c, 1), -1);
        if (trigger != K_EVENT)
            cr_assert_eq(coro_event_is_set(&w.ev), 0);
        world_fini(&w);
    }
}

Test(sync_select, a_recv_branch_is_chosen_and_no_other_branch_acts, .timeout = 60) { run_kind(K_RECV); }
Test(sync_select, a_send_branch_is_chosen_and_sends_its_item, .timeout = 60) { run_kind(K_SEND); }
Test(sync_select, an_event_branch_is_chosen, .timeout = 60) { run_kind(K_EVENT); }
Test(sync_select, a_readable_branch_is_chosen_and_leaves_the_bytes, .timeout = 60) { run_kind(K_READ); }
Test(sync_select, a_writable_branch_is_chosen_when_room_appears, .timeout = 60) { run_kind(K_WRITE); }
Test(sync_select, a_done_branch_is_chosen_with_the_jobs_result, .timeout = 60) { run_kind(K_DONE); }
Test(sync_select, a_timer_branch_fires_at_its_deadline, .timeout = 60) { run_kind(K_TIMER); }

/* ---- several ready at once: the lowest wins, the rest take nothing ---------------- */

struct loop_job {
    coro_t co;
    coro_select_t sel;
    intptr_t which[4];
    void *got;
};

static int loop_body(coro_t *co)
{
    struct loop_job *f = CORO_SELF(co, struct loop_job);
    CORO_BEGIN(co);
    CORO_SELECT(co, &f->sel, CORO_FOREVER);
    f->which[0] = CORO_RESULT(co);
    CORO_END(co);
}

Test(sync_select, unchosen_ready_branches_take_nothing_and_put_nothing, .timeout = 60)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        coro_chan_t in, out;
        void *inb[2], *outb[2], *it;
        coro_event_t ev;
        int sp[2];
        char c;
        struct loop_job j;

        coro_chan_init(&in, inb, 2);
        coro_chan_init(&out, outb, 2);
        coro_event_init(&ev);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
        coro_event_set(&ev);
        coro_chan_try_send(&in, (void *)5);
        cr_assert_eq(write(sp[1], "b", 1), 1);

        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_event(&j.sel, &ev);                 /* 0 */
        coro_select_recv(&j.sel, &in, &j.got);          /* 1 */
        coro_select_readable(&j.sel, NULL, sp[0]);            /* 2 */
        coro_select_send(&j.sel, &out, (void *)9);      /* 3 */

        cr_assert_eq(block_on_r(s, &j.co, loop_body, NULL), 0);
        cr_assert_eq(j.which[0], 0);
        cr_assert_eq(coro_chan_len(&in), 1, "the item stays in the channel");
        cr_assert_eq(coro_chan_len(&out), 0, "nothing was sent");

        coro_event_reset(&ev);
        cr_assert_eq(block_on_r(s, &j.co, loop_body, NULL), 0);
        cr_assert_eq(j.which[0], 1);
        cr_assert_eq(j.got, (void *)5);
        cr_assert_eq(coro_chan_len(&out), 0, "nothing was sent");

        /* readable twice: no readiness consumed */
        cr_assert_eq(block_on_r(s, &j.co, loop_body, NULL), 0);
        cr_assert_eq(j.which[0], 2);
        cr_assert_eq(block_on_r(s, &j.co, loop_body, NULL), 0);
        cr_assert_eq(j.which[0], 2);
        cr_assert_eq(coro_chan_len(&out), 0);
        cr_assert_eq(read(sp[0], &c, 1), 1);
        cr_assert_eq(c, 'b');

        cr_assert_eq(block_on_r(s, &j.co, loop_body, NULL), 0);
        cr_assert_eq(j.which[0], 3);
        cr_assert_eq(coro_chan_try_recv(&out, &it), 0);
        cr_assert_eq(it, (void *)9);

        fin(s);
        close(sp[0]);
        close(sp[1]);
    }
}

/* ---- 16 branches ------------------------------------------------------------------ */

struct ev16 {
    coro_event_t ev[CORO_SELECT_MAX];
    coro_select_t *sel;
    int which;
};

static void *set_one(void *arg)
{
    struct ev16 *e = arg;
    wait_parked(e->sel);
    coro_event_set(&e->ev[e->which]);
    return NULL;
}

Test(sync_select, sixteen_branches_and_the_seventeenth_is_enospc, .timeout = 60)
{
    cr_assert_geq(CORO_SELECT_MAX, 16);
    for (int i = 0; i < NW; i++) {
        for (int which = 0; which < CORO_SELECT_MAX; which += 5) {
            coro_sched_t *s = mk(nworkers[i]);
            struct ev16 e;
            struct sel_job j;
            pthread_t t;
            coro_event_t extra;

            memset(&j, 0, sizeof j);
            coro_select_init(&j.sel);
            coro_event_init(&extra);
            for (int k = 0; k < CORO_SELECT_MAX; k++) {
                coro_event_init(&e.ev[k]);
                cr_assert_eq(coro_select_event(&j.sel, &e.ev[k]), k);
            }
            cr_assert_eq(coro_select_event(&j.sel, &extra), -ENOSPC);
            cr_assert_eq(coro_select_readable(&j.sel, NULL, 0), -ENOSPC);
            cr_assert_eq(coro_select_writable(&j.sel, NULL, 0), -ENOSPC);
            cr_assert_eq(coro_select_timer(&j.sel, 0), -ENOSPC);
            cr_assert_eq(coro_select_done(&j.sel, &j.co), -EINVAL);   /* never spawned */
            e.sel = &j.sel;
            e.which = which;
            j.timeout = CORO_FOREVER;
            cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
            pthread_create(&t, NULL, set_one, &e);
            cr_assert_eq(join_r(&j.co), which);
            pthread_join(t, NULL);
            fin(s);
        }
    }
}

/* ---- cancel and deadline end a select ----------------------------------------------- */

static void *cancel_it(void *arg)
{
    struct sel_job *j = arg;
    wait_parked(&j->sel);
    cr_assert_eq(coro_cancel(&j->co), 0);
    return NULL;
}

Test(sync_select, coro_cancel_ends_a_select_and_no_branch_acts, .timeout = 60)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        coro_chan_t ch;
        void *buf[1], *got = NULL, *it;
        int sp[2];
        char c;
        struct sel_job j;
        pthread_t t;

        coro_chan_init(&ch, buf, 1);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_recv(&j.sel, &ch, &got);
        coro_select_readable(&j.sel, NULL, sp[0]);
        coro_select_timer(&j.sel, coro_now() + 10000 * MS);
        j.timeout = CORO_FOREVER;
        cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
        pthread_create(&t, NULL, cancel_it, &j);
        cr_assert_eq(join_r(&j.co), -ECANCELED);
        pthread_join(t, NULL);
        /* after: an item sent and a byte written stay for others */
        cr_assert_eq(coro_chan_try_send(&ch, (void *)3), 0);
        cr_assert_eq(write(sp[1], "z", 1), 1);
        cr_assert_eq(got, NULL);
        cr_assert_eq(coro_chan_try_recv(&ch, &it), 0);
        cr_assert_eq(it, (void *)3);
        cr_assert_eq(read(sp[0], &c, 1), 1);
        fin(s);
        close(sp[0]);
        close(sp[1]);
    }
}

Test(sync_select, a_job_deadline_ends_a_select_without_timeout, .timeout = 60)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        coro_event_t ev;
        int sp[2];
        struct sel_job j;

        coro_event_init(&ev);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_event(&j.sel, &ev);
        coro_select_readable(&j.sel, NULL, sp[0]);
        coro_select_timer(&j.sel, coro_now() + 10000 * MS);     /* later than the deadline */
        j.timeout = CORO_FOREVER;
        int64_t t0 = coro_now();
        coro_spawn_opts_t o = { .deadline = t0 + 50 * MS };
        cr_assert_eq(coro_spawn(s, &j.co, sel_body, &o), 0);
        cr_assert_eq(join_r(&j.co), -ETIMEDOUT);
        int64_t dt = coro_now() - t0;
        cr_assert_geq(dt, 50 * MS);
        cr_assert_lt(dt, 5000 * MS);
        fin(s);
        close(sp[0]);
        close(sp[1]);
    }
}

Test(sync_select, the_selects_own_timeout_is_etimedout_and_a_later_timer_does_not_win,
     .timeout = 60)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        coro_event_t ev;
        struct sel_job j;

        coro_event_init(&ev);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_event(&j.sel, &ev);
        coro_select_timer(&j.sel, coro_now() + 10000 * MS);
        j.timeout = 20 * MS;
        cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), -ETIMEDOUT);
        /* a past timer is ready at once, also with timeout 0 */
        coro_select_init(&j.sel);
        coro_select_event(&j.sel, &ev);
        coro_select_timer(&j.sel, coro_now() - 1);
        j.timeout = 0;
        cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 1);
        fin(s);
    }
}

/* ---- select on a job's end -------------------------------------------------------- */

Test(sync_select, a_done_branch_on_a_finished_job_is_ready_at_once, .timeout = 30)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        coro_event_t ev, other;
        struct ev_job d = { .ev = &ev };
        struct sel_job j;

        coro_event_init(&ev);
        coro_event_init(&other);
        coro_event_set(&ev);
        cr_assert_eq(block_on_r(s, &d.co, ev_body, NULL), 42);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_event(&j.sel, &other);
        cr_assert_eq(coro_select_done(&j.sel, &d.co), 1);
        j.timeout = CORO_FOREVER;
        cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 1);
        cr_assert_eq(j.bres, 42);
        fin(s);
    }
}

/* ---- plain threads ---------------------------------------------------------------- */

Test(sync_select, blocking_select_takes_a_timer_and_a_done_branch_but_no_fd, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    coro_event_t ev;
    struct ev_job d;
    coro_select_t sel;

    coro_event_init(&ev);
    coro_select_init(&sel);
    coro_select_event(&sel, &ev);
    cr_assert_eq(coro_select_timer(&sel, coro_now() + 20 * MS), 1);
    int64_t t0 = coro_now();
    cr_assert_eq(coro_select_blocking(&sel, CORO_FOREVER), 1);
    cr_assert_geq(coro_now() - t0, 20 * MS);
    cr_assert_eq(coro_select_result(&sel, 1), 0);

    coro_event_t jev;
    coro_event_init(&jev);
    d.ev = &jev;
    memset(&d.co, 0, sizeof d.co);
    cr_assert_eq(coro_spawn(s, &d.co, ev_body, NULL), 0);
    coro_select_init(&sel);
    coro_select_event(&sel, &ev);
    cr_assert_eq(coro_select_done(&sel, &d.co), 1);
    cr_assert_eq(coro_select_blocking(&sel, 0), -ETIMEDOUT);
    coro_event_set(&jev);
    cr_assert_eq(coro_select_blocking(&sel, CORO_FOREVER), 1);
    cr_assert_eq(coro_select_result(&sel, 1), 42);
    cr_assert_eq(join_r(&d.co), 42);

    int sp[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    coro_select_init(&sel);
    coro_select_readable(&sel, NULL, sp[0]);
    cr_assert_eq(coro_select_blocking(&sel, 0), -EINVAL);
    close(sp[0]);
    close(sp[1]);
    fin(s);
}

/* ---- error paths ------------------------------------------------------------------ */

Test(sync_select, every_error_path_of_the_new_branches, .timeout = 30)
{
    coro_select_t sel, bad;
    coro_t never;

    memset(&bad, 0, sizeof bad);
    memset(&never, 0, sizeof never);
    cr_assert_eq(coro_select_init(NULL), -EINVAL);
    cr_assert_eq(coro_select_init(&sel), 0);
    cr_assert_eq(coro_select_readable(NULL, NULL, 0), -EINVAL);
    cr_assert_eq(coro_select_readable(&bad, NULL, 0), -EINVAL);
    cr_assert_eq(coro_select_readable(&sel, NULL, -1), -EBADF);
    cr_assert_eq(coro_select_writable(NULL, NULL, 0), -EINVAL);
    cr_assert_eq(coro_select_writable(&bad, NULL, 1), -EINVAL);
    cr_assert_eq(coro_select_writable(&sel, NULL, -3), -EBADF);
    cr_assert_eq(coro_select_done(&sel, NULL), -EINVAL);
    cr_assert_eq(coro_select_done(&sel, &never), -EINVAL);
    cr_assert_eq(coro_select_timer(&sel, -1), -EINVAL);
    cr_assert_eq(coro_select_timer(NULL, 5), -EINVAL);
    cr_assert_eq(coro_select_timer(&bad, 5), -EINVAL);
    cr_assert_eq(coro_select_result(&sel, 0), -EINVAL);     /* no branches */
    cr_assert_eq(coro_select_blocking(&sel, CORO_FOREVER), -EINVAL);
    cr_assert_eq(coro_select_timer(&sel, 1), 0);
    cr_assert_eq(coro_select_result(&sel, 1), -EINVAL);
    cr_assert_eq(coro_select_result(&sel, -1), -EINVAL);
    cr_assert_eq(coro_select_blocking(&sel, -5), -EINVAL);
}

Test(sync_select, a_closed_fd_is_an_ebadf_branch_result, .timeout = 30)
{
    for (int i = 0; i < NW; i++) {
        coro_sched_t *s = mk(nworkers[i]);
        struct sel_job j;
        int sp[2];

        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
        int dead = dup(sp[0]);
        close(dead);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        cr_assert_eq(coro_select_readable(&j.sel, NULL, dead), 0);
        j.timeout = CORO_FOREVER;
        cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 0);
        cr_assert_eq(j.bres, -EBADF);
        fin(s);
        close(sp[0]);
        close(sp[1]);
    }
}

Test(sync_select, sizeof_select_is_documented, .timeout = 10)
{
    cr_assert_eq(sizeof(coro_select_t), CORO_SELECT_MAX * sizeof(coro_t) + 16);
    cr_assert_eq(sizeof(coro_select_t), 2064);
}

/* ---- bad arguments, and a timer branch without a deadline ---- */

Test(sync_select, select_errors, .timeout = 10)
{
    coro_select_t sel;
    coro_chan_t ch;
    void *b[1], *it;
    coro_event_t ev;

    coro_chan_init(&ch, b, 1);
    coro_event_init(&ev);
    coro_select_init(&sel);
    cr_assert_eq(coro_select_blocking(&sel, 0), -EINVAL);       /* no branches */
    cr_assert_eq(coro_select_recv(&sel, &ch, NULL), -EINVAL);
    cr_assert_eq(coro_select_recv(&sel, NULL, &it), -EINVAL);
    cr_assert_eq(coro_select_event(&sel, NULL), -EINVAL);
    for (int i = 0; i < CORO_SELECT_MAX; i++)
        cr_assert_eq(coro_select_event(&sel, &ev), i);
    cr_assert_eq(coro_select_event(&sel, &ev), -ENOSPC);
    cr_assert_eq(coro_select_result(&sel, CORO_SELECT_MAX), -EINVAL);
    cr_assert_eq(coro_select_result(&sel, -1), -EINVAL);
    cr_assert_eq(coro_select(NULL, 0).arg[0].i, -EINVAL);
}

Test(sync_select, a_select_timer_with_no_deadline_is_never_chosen, .timeout = 10)
{
    static coro_select_t sel;

    cr_assert_eq(coro_select_init(&sel), 0);
    cr_assert_eq(coro_select_timer(&sel, CORO_NO_DEADLINE), 0);
    cr_assert_eq(coro_select_blocking(&sel, 20 * 1000000), -ETIMEDOUT);
    cr_assert_eq(coro_select_set_timer(&sel, 0, 1), 0);
    cr_assert_eq(coro_select_blocking(&sel, CORO_FOREVER), 0, "a past deadline is chosen");
    cr_assert_eq(coro_select_set_timer(&sel, 0, -1), -EINVAL);
}
