/* SPDX-License-Identifier: MIT */
/* Select over everything, white-box: channel send/recv, events, a job's
 * end, fd readable/writable, timers; 16 branches; an unchosen branch takes
 * nothing and puts nothing (items stay in the channel, readiness stays for
 * the next wait on the fd); cancel, the job's deadline and coro_close end a
 * select; every error path.  At 0, 1, 2 and 4 workers where it matters.
 * A job or a plain thread selects over channels and events.  No sleep
 * orders events: the tests wait for the selecting job to be SUSPENDED (its
 * state word) or parked in the lot under the select's key before they make
 * a branch ready.  The contract's own tests: tests/api/test_sync_select.c. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "white_box.h"

#define MS 1000000LL
static const int wcounts[] = { 0, 1, 2, 4 };

/* ---- one selecting job over a menu of branches ------------------------------------ */

enum { B_RECV, B_SEND, B_EVENT, B_DONE, B_READABLE, B_WRITABLE, B_TIMER, B_NKIND };
static const char *bname[B_NKIND] = { "recv", "send", "event", "done", "readable",
                                      "writable", "timer" };

struct world {
    coro_chan_t rch, sch;       /* rch: empty (recv waits), sch: full (send waits) */
    void *rbuf[1], *sbuf[1];
    coro_event_t ev, stop;
    int rd[2];                  /* rd[0] is read-selected */
    int wr[2];                  /* wr[0] is write-selected: filled up first */
    coro_t *target;
};

struct target { coro_t co; coro_event_t *ev; };

static int target_body(coro_t *co)
{
    struct target *t = CORO_SELF(co, struct target);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(t->ev, CORO_FOREVER));
    CORO_RETURN(co, -42);   /* a negative result of its own, kept apart */
    CORO_END(co);
}

struct selector {
    coro_t co;
    struct world *w;
    int kinds[CORO_SELECT_MAX];
    int n;
    int64_t timeout, timer_at;
    coro_select_t sel;
    void *item;
    intptr_t rc;
    int add_rc[CORO_SELECT_MAX];
};

static int add_branch(struct selector *x, int kind)
{
    struct world *w = x->w;
    switch (kind) {
    case B_RECV: return coro_select_recv(&x->sel, &w->rch, &x->item);
    case B_SEND: return coro_select_send(&x->sel, &w->sch, (void *)7);
    case B_EVENT: return coro_select_event(&x->sel, &w->ev);
    case B_DONE: return coro_select_done(&x->sel, w->target);
    case B_READABLE: return coro_select_readable(&x->sel, NULL, w->rd[0]);
    case B_WRITABLE: return coro_select_writable(&x->sel, NULL, w->wr[0]);
    case B_TIMER: return coro_select_timer(&x->sel, x->timer_at);
    default: return -EINVAL;
    }
}

static int selector_body(coro_t *co)
{
    struct selector *x = CORO_SELF(co, struct selector);
    CORO_BEGIN(co);
    coro_select_init(&x->sel);
    for (int i = 0; i < x->n; i++)
        x->add_rc[i] = add_branch(x, x->kinds[i]);
    CORO_SELECT(co, &x->sel, x->timeout);
    x->rc = CORO_RESULT(co);
    CORO_END(co);
}

static void world_init(struct world *w, coro_t *target)
{
    memset(w, 0, sizeof *w);
    cr_assert_eq(coro_chan_init(&w->rch, w->rbuf, 1), 0);
    cr_assert_eq(coro_chan_init(&w->sch, w->sbuf, 1), 0);
    cr_assert_eq(coro_chan_try_send(&w->sch, (void *)1), 0);
    cr_assert_eq(coro_event_init(&w->ev), 0);
    cr_assert_eq(coro_event_init(&w->stop), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, w->rd), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, w->wr), 0);
    static char junk[65536];
    while (write(w->wr[0], junk, sizeof junk) > 0)
        ;       /* wr[0] is full: not writable */
    w->target = target;
}

static size_t drain(int fd)
{
    static char junk[65536];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd, junk, sizeof junk)) > 0)
        n += (size_t)r;
    return n;
}

/* make the branch of kind k ready */
static void fire(struct world *w, int k)
{
    switch (k) {
    case B_RECV: cr_assert_eq(coro_chan_try_send(&w->rch, (void *)9), 0); break;
    case B_SEND: {
        void *o;
        cr_assert_eq(coro_chan_try_recv(&w->sch, &o), 0);
        break;
    }
    case B_EVENT: cr_assert_geq(coro_event_set(&w->ev), 0); break;
    case B_DONE: cr_assert_geq(coro_event_set(&w->stop), 0); break;
    case B_READABLE: cr_assert_eq(write(w->rd[1], "r", 1), 1); break;
    case B_WRITABLE: cr_assert_gt(drain(w->wr[1]), 0); break;
    default: break;
    }
}

static void world_fini(coro_sched_t *s, struct world *w)
{
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(coro_close(s, w->rd[i]), 0);
        cr_assert_eq(coro_close(s, w->wr[i]), 0);
    }
    coro_chan_destroy(&w->rch);
    coro_chan_destroy(&w->sch);
    coro_event_destroy(&w->ev);
    coro_event_destroy(&w->stop);
}

/* all seven kinds in one select (the timer far away); the chosen one fires
 * after the job parked: it is the result, with its own result, and the
 * others left no trace */
Test(select, each_kind_of_branch_is_chosen_and_the_others_take_nothing, .timeout = 120)
{
    for (size_t wi = 0; wi < 4; wi++) {
        for (int k = 0; k < B_NKIND; k++) {
            coro_sched_t *s = mk(wcounts[wi]);
            struct world w;
            struct target t;
            struct selector x;
            struct joiner jx, jt;
            memset(&t, 0, sizeof t);
            memset(&x, 0, sizeof x);
            world_init(&w, &t.co);
            t.ev = &w.stop;
            cr_assert_eq(coro_spawn(s, &t.co, target_body, NULL), 0);
            join_start(&jt, &t.co);
            x.w = &w;
            x.n = B_NKIND;
            for (int i = 0; i < B_NKIND; i++)
                x.kinds[i] = i;
            x.timeout = CORO_FOREVER;
            /* the timer branch: far away unless it is the one under test */
            x.timer_at = coro_now() + (k == B_TIMER ? 50 * MS : 3600000 * MS);
            cr_assert_eq(coro_spawn(s, &x.co, selector_body, NULL), 0);
            join_start(&jx, &x.co);
            wait_suspended(&x.co);
            fire(&w, k);
            join_end(&jx);
            for (int i = 0; i < B_NKIND; i++)
                cr_assert_eq(x.add_rc[i], i, "%s: add gave %d", bname[i], x.add_rc[i]);
            cr_assert_eq(x.rc, k, "%s, %d workers: rc %ld", bname[k], wcounts[wi], (long)x.rc);
            intptr_t own = coro_select_result(&x.sel, k);
            cr_assert_eq(own, k == B_DONE ? -42 : 0, "%s: own result %ld", bname[k], (long)own);
            if (k == B_RECV)
                cr_assert_eq(x.item, (void *)9);
            /* the unchosen send put nothing; the unchosen receive took nothing */
            void *o = NULL;
            if (k != B_SEND) {
                cr_assert_eq(coro_chan_try_recv(&w.sch, &o), 0);
                cr_assert_eq(o, (void *)1, "the unchosen send put nothing");
            } else {
                cr_assert_eq(coro_chan_try_recv(&w.sch, &o), 0);
                cr_assert_eq(o, (void *)7, "the chosen send put its item");
            }
            cr_assert_eq(coro_chan_try_recv(&w.rch, &o), -EAGAIN);
            if (k == B_READABLE) {
                char c;
                cr_assert_eq(read(w.rd[0], &c, 1), 1, "the byte is still there to read");
            }
            coro_event_set(&w.stop);
            cr_assert_eq(join_end(&jt), -42);
            world_fini(s, &w);
            cr_assert_eq(coro_sched_destroy(s), 0);
        }
    }
}

/* an fd becomes ready while a select waits on it and on an event, both
 * nearly at once: whichever branch wins, the byte is still there for the
 * next read on the fd (with a timeout: a lost byte or a slot left taken
 * would fail it) */
struct after { coro_t co; int fd; coro_event_t *ev; coro_select_t sel; intptr_t rc, rd; char c; };

static int after_body(coro_t *co)
{
    struct after *a = CORO_SELF(co, struct after);
    CORO_BEGIN(co);
    coro_select_init(&a->sel);
    coro_select_event(&a->sel, a->ev);
    coro_select_readable(&a->sel, NULL, a->fd);
    CORO_SELECT(co, &a->sel, CORO_FOREVER);
    a->rc = CORO_RESULT(co);
    CORO_AWAIT(co, coro_read(a->fd, &a->c, 1, 10000 * MS));
    a->rd = CORO_RESULT(co);
    CORO_END(co);
}

Test(select, readiness_an_unchosen_fd_branch_saw_is_not_lost, .timeout = 120)
{
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        for (int round = 0; round < 100; round++) {
            coro_event_t ev;
            int sv[2];
            struct after a;
            struct joiner j;
            memset(&a, 0, sizeof a);
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
            a.fd = sv[0];
            a.ev = &ev;
            cr_assert_eq(coro_spawn(s, &a.co, after_body, NULL), 0);
            join_start(&j, &a.co);
            if (wcounts[wi] > 0)
                wait_suspended(&a.co);
            /* both ready, in either order: the event or the fd wins */
            if (round & 1) {
                coro_event_set(&ev);
                cr_assert_eq(write(sv[1], "x", 1), 1);
            } else {
                cr_assert_eq(write(sv[1], "x", 1), 1);
                coro_event_set(&ev);
            }
            join_end(&j);
            cr_assert(a.rc == 0 || a.rc == 1, "round %d: %ld", round, (long)a.rc);
            cr_assert_eq(a.rd, 1, "%d workers, round %d (select gave %ld): the byte's "
                         "readiness was lost: %ld", wcounts[wi], round, (long)a.rc, (long)a.rd);
            cr_assert_eq(coro_close(s, sv[0]), 0);
            cr_assert_eq(coro_close(s, sv[1]), 0);
            coro_event_destroy(&ev);
        }
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- 16 branches; the 17th is refused --------------------------------------------- */

struct many { coro_t co; coro_event_t ev[CORO_SELECT_MAX - 1]; int fd; coro_select_t sel;
              int extra; intptr_t rc; };

static int many_body(coro_t *co)
{
    struct many *m = CORO_SELF(co, struct many);
    CORO_BEGIN(co);
    coro_select_init(&m->sel);
    for (int i = 0; i < CORO_SELECT_MAX - 1; i++)
        coro_select_event(&m->sel, &m->ev[i]);
    coro_select_readable(&m->sel, NULL, m->fd);
    m->extra = coro_select_event(&m->sel, &m->ev[0]);
    CORO_SELECT(co, &m->sel, CORO_FOREVER);
    m->rc = CORO_RESULT(co);
    CORO_END(co);
}

Test(select, sixteen_branches_and_the_seventeenth_gives_enospc, .timeout = 60)
{
    cr_assert_geq(CORO_SELECT_MAX, 16);
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        struct many *m = calloc(1, sizeof *m);
        int sv[2];
        struct joiner j;
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        for (int i = 0; i < CORO_SELECT_MAX - 1; i++)
            coro_event_init(&m->ev[i]);
        m->fd = sv[0];
        cr_assert_eq(coro_spawn(s, &m->co, many_body, NULL), 0);
        join_start(&j, &m->co);
        wait_suspended(&m->co);
        cr_assert_eq(write(sv[1], "x", 1), 1);
        join_end(&j);
        cr_assert_eq(m->extra, -ENOSPC);
        cr_assert_eq(m->rc, CORO_SELECT_MAX - 1);
        cr_assert_eq(coro_close(s, sv[0]), 0);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        free(m);
    }
}

/* ---- cancel, deadline, close, timers ---------------------------------------------- */

struct fsel { coro_t co; int fd; int64_t timeout, timer_at; int with_timer; coro_select_t sel;
              intptr_t rc, own, rd; char c; };

static int fsel_body(coro_t *co)
{
    struct fsel *f = CORO_SELF(co, struct fsel);
    CORO_BEGIN(co);
    coro_select_init(&f->sel);
    coro_select_readable(&f->sel, NULL, f->fd);
    if (f->with_timer)
        coro_select_timer(&f->sel, f->timer_at);
    CORO_SELECT(co, &f->sel, f->timeout);
    f->rc = CORO_RESULT(co);
    f->own = f->rc >= 0 ? coro_select_result(&f->sel, (int)f->rc) : 0;
    CORO_END(co);
}

Test(select, cancel_ends_a_select_on_an_fd_and_frees_the_fd_for_the_next_reader, .timeout = 60)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        int sv[2];
        struct fsel f = { .timeout = CORO_FOREVER };
        struct joiner j;
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        f.fd = sv[0];
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        join_start(&j, &f.co);
        wait_suspended(&f.co);
        cr_assert_eq(coro_cancel(&f.co), 0);
        join_end(&j);
        cr_assert_eq(f.rc, -ECANCELED);
        /* the slot was given back: a select on the same fd works again */
        struct fsel g = { .fd = sv[0], .timeout = CORO_FOREVER };
        cr_assert_eq(coro_spawn(s, &g.co, fsel_body, NULL), 0);
        join_start(&j, &g.co);
        wait_suspended(&g.co);
        cr_assert_eq(write(sv[1], "x", 1), 1);
        join_end(&j);
        cr_assert_eq(g.rc, 0);
        cr_assert_eq(coro_close(s, sv[0]), 0);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(select, a_job_deadline_ends_a_select_and_a_timer_branch_after_it_is_not_chosen,
     .timeout = 60)
{
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        int64_t t0 = coro_now();
        struct fsel f = { .fd = sv[0], .timeout = CORO_FOREVER, .with_timer = 1,
                          .timer_at = t0 + 3600000 * MS };
        coro_spawn_opts_t o = { .deadline = t0 + 50 * MS };
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, &o), 0);
        cr_assert_eq(join_r(&f.co), 0);
        cr_assert_eq(f.rc, -ETIMEDOUT, "%d workers: %ld", wcounts[wi], (long)f.rc);
        cr_assert_geq(coro_now() - t0, 50 * MS);
        cr_assert_eq(coro_close(s, sv[0]), 0);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(select, a_timer_branch_is_chosen_when_it_comes_and_the_timeout_when_it_comes_first,
     .timeout = 60)
{
    for (size_t wi = 0; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        int64_t t0 = coro_now();
        struct fsel f = { .fd = sv[0], .timeout = 3600000 * MS, .with_timer = 1,
                          .timer_at = t0 + 20 * MS };
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        cr_assert_eq(join_r(&f.co), 0);
        cr_assert_eq(f.rc, 1, "%d workers: %ld", wcounts[wi], (long)f.rc);
        cr_assert_eq(f.own, 0);
        cr_assert_geq(coro_now() - t0, 20 * MS, "never early");
        /* the select's own timeout first */
        memset(&f, 0, sizeof f);
        f.fd = sv[0];
        f.timeout = 20 * MS;
        f.with_timer = 1;
        f.timer_at = coro_now() + 3600000 * MS;
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        cr_assert_eq(join_r(&f.co), 0);
        cr_assert_eq(f.rc, -ETIMEDOUT);
        /* a timer branch in the past is chosen at once; the readable one
         * before it wins a tie when it is ready */
        memset(&f, 0, sizeof f);
        f.fd = sv[0];
        f.timeout = CORO_FOREVER;
        f.with_timer = 1;
        f.timer_at = 1;       /* long past (0 is CORO_NO_DEADLINE) */
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        cr_assert_eq(join_r(&f.co), 0);
        cr_assert_eq(f.rc, 1);
        cr_assert_eq(write(sv[1], "x", 1), 1);
        memset(&f, 0, sizeof f);
        f.fd = sv[0];
        f.timeout = CORO_FOREVER;
        f.with_timer = 1;
        f.timer_at = 1;       /* long past (0 is CORO_NO_DEADLINE) */
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        cr_assert_eq(join_r(&f.co), 0);
        cr_assert_eq(f.rc, 0, "ties go to the lowest index");
        cr_assert_eq(coro_close(s, sv[0]), 0);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(select, coro_close_of_a_selected_fd_chooses_its_branch_with_ebadf, .timeout = 60)
{
    for (size_t wi = 1; wi < 4; wi++) {
        coro_sched_t *s = mk(wcounts[wi]);
        int sv[2];
        struct joiner j;
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        struct fsel f = { .fd = sv[0], .timeout = CORO_FOREVER };
        cr_assert_eq(coro_spawn(s, &f.co, fsel_body, NULL), 0);
        join_start(&j, &f.co);
        wait_suspended(&f.co);
        cr_assert_eq(coro_close(s, sv[0]), 0);
        join_end(&j);
        cr_assert_eq(f.rc, 0);
        cr_assert_eq(f.own, -EBADF);
        cr_assert_eq(coro_close(s, sv[1]), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- a plain thread selects on an fd of a scheduler -------------------------------- */

Test(select, a_plain_thread_selects_on_an_fd_and_an_event, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    int sv[2];
    coro_event_t ev;
    coro_select_t *sel = malloc(sizeof *sel);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    cr_assert_eq(coro_event_init(&ev), 0);
    cr_assert_eq(coro_select_init(sel), 0);
    /* outside a job with s NULL the branch is bound at the first select: a
     * plain thread's select has no scheduler to watch the fd: -EINVAL */
    cr_assert_eq(coro_select_readable(sel, NULL, sv[0]), 0);
    cr_assert_eq(coro_select_blocking(sel, 10 * MS), -EINVAL);
    cr_assert_eq(coro_select_init(sel), 0);
    cr_assert_eq(coro_select_event(sel, &ev), 0);
    cr_assert_eq(coro_select_readable(sel, s, sv[0]), 1);
    cr_assert_eq(coro_select_blocking(sel, 10 * MS), -ETIMEDOUT);
    cr_assert_eq(write(sv[1], "x", 1), 1);
    cr_assert_eq(coro_select_blocking(sel, 10000 * MS), 1);
    cr_assert_eq(coro_select_result(sel, 1), 0);
    cr_assert_geq(coro_event_set(&ev), 0);
    cr_assert_eq(coro_select_blocking(sel, CORO_FOREVER), 0, "ties: the lowest index");
    cr_assert_eq(coro_close(s, sv[0]), 0);
    cr_assert_eq(coro_close(s, sv[1]), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
    free(sel);
}

/* ---- error paths --------------------------------------------------------------------- */

struct busy { coro_t co; int fd; char c; intptr_t rc; };

static int busy_body(coro_t *co)
{
    struct busy *b = CORO_SELF(co, struct busy);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(b->fd, &b->c, 1, CORO_FOREVER));
    b->rc = CORO_RESULT(co);
    CORO_END(co);
}

Test(select, error_paths, .timeout = 60)
{
    coro_sched_t *s = mk(2);
    coro_select_t *sel = malloc(sizeof *sel);
    coro_t zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(coro_select_readable(NULL, s, 0), -EINVAL);
    cr_assert_eq(coro_select_writable(NULL, s, 0), -EINVAL);
    cr_assert_eq(coro_select_timer(NULL, 0), -EINVAL);
    cr_assert_eq(coro_select_done(NULL, &zero), -EINVAL);
    cr_assert_eq(coro_select_init(sel), 0);
    cr_assert_eq(coro_select_readable(sel, s, -1), -EBADF);
    cr_assert_eq(coro_select_writable(sel, s, -3), -EBADF);
    cr_assert_eq(coro_select_timer(sel, -1), -EINVAL);
    cr_assert_eq(coro_select_done(sel, NULL), -EINVAL);
    cr_assert_eq(coro_select_done(sel, &zero), -EINVAL, "never spawned");
    cr_assert_eq(coro_select_set_timer(sel, 0, 5), -EINVAL, "no branch 0 yet");
    coro_event_t ev;
    cr_assert_eq(coro_event_init(&ev), 0);
    cr_assert_eq(coro_select_event(sel, &ev), 0);
    cr_assert_eq(coro_select_set_timer(sel, 0, 5), -EINVAL, "branch 0 is not a timer");
    cr_assert_eq(coro_select_timer(sel, INT64_MAX), 1);
    cr_assert_eq(coro_select_set_timer(sel, 1, -2), -EINVAL);
    cr_assert_eq(coro_select_set_timer(sel, 1, 1), 0);
    cr_assert_eq(coro_select_blocking(sel, CORO_FOREVER), 1, "a past timer is chosen");

    /* an fd that cannot be polled (a regular file): the branch ends with -EPERM */
    char path[] = "/tmp/corokit-select-XXXXXX";
    int rf = mkstemp(path);
    cr_assert_geq(rf, 0);
    unlink(path);
    cr_assert_eq(coro_select_init(sel), 0);
    cr_assert_eq(coro_select_event(sel, &ev), 0);
    cr_assert_eq(coro_select_readable(sel, s, rf), 1);
    int r = coro_select_blocking(sel, 10000 * MS);
    /* a regular file is always ready for poll(2): chosen at once */
    cr_assert_eq(r, 1);
    close(rf);

    /* an fd that another job already waits on for reading: -EBUSY */
    int sv[2];
    struct busy b = { .rc = 99 };
    struct joiner j;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    b.fd = sv[0];
    cr_assert_eq(coro_spawn(s, &b.co, busy_body, NULL), 0);
    join_start(&j, &b.co);
    wait_suspended(&b.co);
    /* SUSPENDED comes before the job's wait is armed in the fd's slot:
     * wait until it is there (the only fd wait of s, no timers) */
    for (int64_t end = coro_now() + 20000 * MS; !coro__io_pending(coro__sched_io(s));)
        cr_assert_lt(coro_now(), end, "the read never parked in the fd's slot");
    cr_assert_eq(coro_select_init(sel), 0);
    cr_assert_eq(coro_select_event(sel, &ev), 0);
    cr_assert_eq(coro_select_readable(sel, s, sv[0]), 1);
    cr_assert_eq(coro_select_blocking(sel, 10000 * MS), 1);
    cr_assert_eq(coro_select_result(sel, 1), -EBUSY);
    cr_assert_eq(write(sv[1], "x", 1), 1);
    join_end(&j);
    cr_assert_eq(b.rc, 1, "the job's read was not disturbed");
    cr_assert_eq(coro_close(s, sv[0]), 0);
    cr_assert_eq(coro_close(s, sv[1]), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
    free(sel);
}

static const int nworkers[] = { 1, 2, 4, 8 };
#define NW (int)(sizeof nworkers / sizeof nworkers[0])

/* ---- a job or a plain thread selects over channels and events ------------------------------------------------------------------------------ */

struct sel_job {
    coro_t co;
    coro_select_t sel;
    coro_chan_t *a, *b;
    coro_event_t *ev;
    void *ia, *ib;
    int64_t t;
    intptr_t which, bres;
};

static int sel_body(coro_t *co)
{
    struct sel_job *f = CORO_SELF(co, struct sel_job);
    CORO_BEGIN(co);
    CORO_SELECT(co, &f->sel, f->t);
    f->which = CORO_RESULT(co);
    if (f->which >= 0)
        f->bres = coro_select_result(&f->sel, (int)f->which);
    CORO_END(co);
}

Test(select, select_picks_the_ready_side_and_leaves_the_other_untouched, .timeout = 60)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_chan_t a, b, full;
        void *ba[4], *bb[4], *bf[1];
        struct sel_job j;

        coro_chan_init(&a, ba, 4);
        coro_chan_init(&b, bb, 4);
        coro_chan_init(&full, bf, 1);
        coro_chan_try_send(&full, (void *)7);
        coro_chan_try_send(&b, (void *)42);
        /* ready now: branch 1 (b); branch 0 (recv on empty a) and branch 2
         * (send on full) must leave no trace */
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        cr_assert_eq(coro_select_recv(&j.sel, &a, &j.ia), 0);
        cr_assert_eq(coro_select_recv(&j.sel, &b, &j.ib), 1);
        cr_assert_eq(coro_select_send(&j.sel, &full, (void *)9), 2);
        j.t = CORO_FOREVER;
        cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 0);
        cr_assert_eq(j.which, 1);
        cr_assert_eq(j.bres, 0);
        cr_assert_eq((intptr_t)j.ib, 42);
        cr_assert_null(j.ia);
        cr_assert_eq(coro_chan_len(&a), 0);
        cr_assert_eq(coro_chan_len(&b), 0);
        cr_assert_eq(coro_chan_len(&full), 1);
        void *it;
        cr_assert_eq(coro_chan_try_recv(&full, &it), 0);
        cr_assert_eq((intptr_t)it, 7);

        /* nothing ready: it waits; a send on a completes it, b stays intact */
        coro_chan_init(&a, ba, 4);
        coro_chan_init(&full, bf, 1);
        coro_chan_try_send(&full, (void *)7);
        memset(&j, 0, sizeof j);
        coro_select_init(&j.sel);
        coro_select_recv(&j.sel, &a, &j.ia);
        coro_select_recv(&j.sel, &b, &j.ib);
        coro_select_send(&j.sel, &full, (void *)9);
        j.t = CORO_FOREVER;
        cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
        cr_assert(parked_on(&j.co, SEL_KEY(&j.sel)), "the select never waited");
        cr_assert_eq(coro_chan_send_blocking(&a, (void *)5, CORO_FOREVER), 0);
        cr_assert_eq(join_r(&j.co), 0);
        cr_assert_eq(j.which, 0);
        cr_assert_eq((intptr_t)j.ia, 5);
        cr_assert_null(j.ib);
        /* the withdrawn branches are off the lists: later items stay put */
        cr_assert_eq(coro_chan_try_send(&b, (void *)6), 0);
        cr_assert_eq(coro_chan_len(&b), 1);
        cr_assert_eq(coro_chan_len(&full), 1);
        cr_assert_eq(coro_chan_destroy(&a), 0);
        cr_assert_eq(coro_chan_destroy(&b), 0);
        cr_assert_eq(coro_chan_destroy(&full), 0);
        fin(s);
    }
}

Test(select, select_on_an_event_and_a_closed_channel, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_chan_t a;
    void *ba[1];
    coro_event_t ev;
    struct sel_job j;

    coro_chan_init(&a, ba, 1);
    coro_event_init(&ev);
    memset(&j, 0, sizeof j);
    coro_select_init(&j.sel);
    coro_select_recv(&j.sel, &a, &j.ia);
    coro_select_event(&j.sel, &ev);
    j.t = CORO_FOREVER;
    cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
    /* the select waits, so the set wakes exactly its branch (a usleep(5000)
     * here failed on a loaded machine: the set came first and woke 0) */
    cr_assert(parked_on(&j.co, SEL_KEY(&j.sel)), "the select never waited");
    cr_assert_eq(coro_event_set(&ev), 1);
    cr_assert_eq(join_r(&j.co), 0);
    cr_assert_eq(j.which, 1);
    coro_event_reset(&ev);
    /* the same select again: a close completes branch 0 with -EPIPE */
    cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
    cr_assert(parked_on(&j.co, SEL_KEY(&j.sel)), "the select never waited");
    cr_assert_eq(coro_chan_close(&a), 0);
    cr_assert_eq(join_r(&j.co), 0);
    cr_assert_eq(j.which, 0);
    cr_assert_eq(j.bres, -EPIPE);
    cr_assert_eq(coro_event_destroy(&ev), 0);
    cr_assert_eq(coro_chan_destroy(&a), 0);
    fin(s);
}

Test(select, select_times_out_when_nothing_is_ready, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_chan_t a;
    void *ba[1];
    struct sel_job j;

    coro_chan_init(&a, ba, 1);
    memset(&j, 0, sizeof j);
    coro_select_init(&j.sel);
    coro_select_recv(&j.sel, &a, &j.ia);
    j.t = 0;
    cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 0);
    cr_assert_eq(j.which, -ETIMEDOUT);
    j.t = 5 * MS;
    cr_assert_eq(block_on_r(s, &j.co, sel_body, NULL), 0);
    cr_assert_eq(j.which, -ETIMEDOUT);
    cr_assert_eq(coro_chan_destroy(&a), 0);
    fin(s);
}

Test(select, plain_thread_select_takes_the_ready_branch, .timeout = 30)
{
    coro_chan_t a, b;
    void *ba[2], *bb[2], *ia = NULL, *ib = NULL;
    coro_select_t sel;

    coro_chan_init(&a, ba, 2);
    coro_chan_init(&b, bb, 2);
    coro_chan_try_send(&b, (void *)3);
    coro_select_init(&sel);
    coro_select_recv(&sel, &a, &ia);
    coro_select_recv(&sel, &b, &ib);
    cr_assert_eq(coro_select_blocking(&sel, CORO_FOREVER), 1);
    cr_assert_eq((intptr_t)ib, 3);
    cr_assert_eq(coro_select_blocking(&sel, 0), -ETIMEDOUT);
    cr_assert_eq(coro_chan_destroy(&a), 0);
    cr_assert_eq(coro_chan_destroy(&b), 0);
}

/* ---- shutdown(CORO_CANCEL) reaches a select and a channel's receiver --------------------------------------------- */

struct recv_job {
    coro_t co;
    coro_chan_t *ch;
    void *item;
};

static int recv_body(coro_t *co)
{
    struct recv_job *f = CORO_SELF(co, struct recv_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_chan_recv(f->ch, &f->item, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

Test(select, cancel_resumes_channel_and_select_waiters_with_ecanceled, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_chan_t a;
    void *ba[1];
    struct recv_job r = { 0 };
    struct sel_job j;

    coro_chan_init(&a, ba, 1);
    r.ch = &a;
    memset(&j, 0, sizeof j);
    coro_select_init(&j.sel);
    coro_select_recv(&j.sel, &a, &j.ia);
    j.t = CORO_FOREVER;
    cr_assert_eq(coro_spawn(s, &r.co, recv_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &j.co, sel_body, NULL), 0);
    cr_assert(parked_on(&r.co, &a), "the receiver never waited");
    cr_assert(parked_on(&j.co, SEL_KEY(&j.sel)), "the select never waited");
    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(join_r(&r.co), -ECANCELED);
    cr_assert_eq(join_r(&j.co), 0);
    cr_assert_eq(j.which, -ECANCELED);
    cr_assert_eq(coro_chan_destroy(&a), 0);     /* nothing left on its lists */
    cr_assert_eq(coro_sched_destroy(s), 0);
}
