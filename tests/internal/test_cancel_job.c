/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_cancel(job) (issue 12, item 1): a cancelled job's pending wait ends
 * with -ECANCELED wherever it waits (the parking lot with and without a
 * timer, a joiner slot, an fd, a sleep), every later await of it and of its
 * coro_call children returns -ECANCELED, it still returns its own result,
 * and an operation that completed keeps its result: a cancelled reader
 * loses no bytes, a cancelled receiver no items.  At 0 (a helper thread
 * drives through coro_join), 1, 2 and 4 workers. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <fcntl.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "white_box.h"

static const int worker_counts[] = { 0, 1, 2, 4 };
#define NW (sizeof worker_counts / sizeof worker_counts[0])

/* ---- a reader and a receiver keep what they got ------------------------------ */

struct reader {
    coro_t co;
    int fd;
    char buf[37];
    long got;
    intptr_t err;
    intptr_t after;         /* a later await's result */
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_read(r->fd, r->buf, sizeof r->buf, CORO_FOREVER));
        if (CORO_RESULT(co) <= 0)
            break;
        r->got += CORO_RESULT(co);
    }
    r->err = CORO_RESULT(co);
    CORO_AWAIT(co, coro_sleep(1000000));
    r->after = CORO_RESULT(co);
    CORO_RETURN(co, 77);
    CORO_END(co);
}

Test(cancel_job, a_cancelled_reader_loses_no_bytes, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        for (int cut = 0; cut < 8; cut++) {
            coro_sched_t *s = mk(worker_counts[k]);
            struct reader r = { .fd = -1 };
            struct joiner j;
            int p[2];
            char chunk[53];
            long written = 0, left = 0;
            cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
            memset(chunk, 'x', sizeof chunk);
            r.fd = p[0];
            cr_assert_eq(coro_spawn(s, &r.co, reader_body, NULL), 0);
            join_start(&j, &r.co);
            for (int i = 0; i < 8; i++) {
                if (i == cut) {
                    if (cut % 2 == 0)
                        wait_suspended(&r.co);  /* even: withdraw a waiting reader */
                    cr_assert_eq(coro_cancel(&r.co), 0);
                }
                cr_assert_eq(write(p[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
                written += (long)sizeof chunk;
            }
            cr_assert_eq(join_end(&j), 77);
            ssize_t n;
            char buf[4096];
            while ((n = read(p[0], buf, sizeof buf)) > 0)
                left += n;
            cr_assert_eq(r.err, -ECANCELED, "workers %d cut %d: %ld", worker_counts[k], cut,
                         (long)r.err);
            cr_assert_eq(r.after, -ECANCELED);
            cr_assert_eq(r.got + left, written, "workers %d cut %d: read %ld + left %ld != %ld",
                         worker_counts[k], cut, r.got, left, written);
            close(p[0]);
            close(p[1]);
            cr_assert_eq(coro_sched_destroy(s), 0);
        }
    }
}

struct receiver {
    coro_t co;
    coro_chan_t *ch;
    void *item;
    long got;
    intptr_t err;
};

static int receiver_body(coro_t *co)
{
    struct receiver *r = CORO_SELF(co, struct receiver);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(r->ch, &r->item, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            break;
        r->got++;
    }
    r->err = CORO_RESULT(co);
    CORO_RETURN(co, 5);
    CORO_END(co);
}

Test(cancel_job, a_cancelled_receiver_loses_no_items, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        for (int cut = 0; cut < 8; cut++) {
            coro_sched_t *s = mk(worker_counts[k]);
            void *buf[64];
            coro_chan_t ch;
            struct receiver r = { .ch = &ch };
            struct joiner j;
            long sent = 0, left = 0;
            void *it;
            cr_assert_eq(coro_chan_init(&ch, buf, 64), 0);
            cr_assert_eq(coro_spawn(s, &r.co, receiver_body, NULL), 0);
            join_start(&j, &r.co);
            for (int i = 0; i < 40; i++) {
                if (i == cut * 5) {
                    if (cut % 2 == 0)
                        wait_suspended(&r.co);
                    cr_assert_eq(coro_cancel(&r.co), 0);
                }
                cr_assert_eq(coro_chan_try_send(&ch, (void *)(intptr_t)(i + 1)), 0);
                sent++;
            }
            cr_assert_eq(join_end(&j), 5);
            while (coro_chan_try_recv(&ch, &it) == 0)
                left++;
            cr_assert_eq(r.err, -ECANCELED);
            cr_assert_eq(r.got + left, sent, "workers %d cut %d: got %ld + left %ld != %ld",
                         worker_counts[k], cut, r.got, left, sent);
            cr_assert_eq(coro_sched_destroy(s), 0);
        }
    }
}

/* ---- every kind of wait ends ---------------------------------------------------- */

enum kind { K_EVENT, K_EVENT_TIMED, K_SLEEP, K_DONE, K_DONE_SECOND, K_SELECT, K_CALL, NKIND };

struct waiter {
    coro_t co;
    coro_t child;
    enum kind kind;
    coro_event_t *ev;
    coro_t *target;
    coro_select_t sel;
    intptr_t first, later;
    int64_t t0, t1;
};


/* a coro_call child: its awaits return -ECANCELED too */
struct kid { coro_t co; coro_event_t *ev; intptr_t r1, r2; };

static int kid_body(coro_t *co)
{
    struct kid *k = CORO_SELF(co, struct kid);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(k->ev, CORO_FOREVER));
    k->r1 = CORO_RESULT(co);
    CORO_AWAIT(co, coro_event_wait(k->ev, CORO_FOREVER));
    k->r2 = CORO_RESULT(co);
    CORO_RETURN(co, 9);
    CORO_END(co);
}

static struct kid kids[NKIND];

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    w->t0 = now_ns();
    switch (w->kind) {
    case K_EVENT: CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER)); break;
    case K_EVENT_TIMED: CORO_AWAIT(co, coro_event_wait(w->ev, 10000000000LL)); break;
    case K_SLEEP: CORO_AWAIT(co, coro_sleep(10000000000LL)); break;
    case K_DONE:
    case K_DONE_SECOND: CORO_AWAIT(co, coro_done(w->target)); break;
    case K_SELECT:
        coro_select_init(&w->sel);
        coro_select_event(&w->sel, w->ev);
        CORO_AWAIT(co, coro_select(&w->sel, CORO_FOREVER));
        coro_select_end(&w->sel, CORO_RESULT(co));
        break;
    case K_CALL:
        kids[w->kind].ev = w->ev;
        CORO_AWAIT(co, coro_call(&kids[w->kind].co, kid_body));
        break;
    default: break;
    }
    w->first = CORO_RESULT(co);
    w->t1 = now_ns();
    CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    w->later = CORO_RESULT(co);
    CORO_RETURN(co, 31);
    CORO_END(co);
}

struct blocker { coro_t co; coro_event_t *ev; };

static int blocker_body(coro_t *co)
{
    struct blocker *b = CORO_SELF(co, struct blocker);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(b->ev, CORO_FOREVER));
    CORO_RETURN(co, 3);
    CORO_END(co);
}

Test(cancel_job, every_kind_of_wait_ends_with_ecanceled_and_later_awaits_too, .timeout = 60)
{

    for (unsigned k = 0; k < NW; k++) {
        for (int kind = 0; kind < NKIND; kind++) {
            coro_sched_t *s = mk(worker_counts[k]);
            coro_event_t ev, stop;
            struct waiter w = { .kind = (enum kind)kind, .ev = &ev };
            struct waiter first = { .kind = K_DONE, .ev = &ev };
            struct blocker b = { .ev = &stop };
            struct joiner j, jb, jf;
            memset(&kids, 0, sizeof kids);
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_event_init(&stop), 0);
            cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
            join_start(&jb, &b.co);
            w.target = first.target = &b.co;
            if (kind == K_DONE_SECOND) {
                /* the joiner slot is taken: the second awaiter uses the lot */
                cr_assert_eq(coro_spawn(s, &first.co, waiter_body, NULL), 0);
                join_start(&jf, &first.co);
                wait_suspended(&first.co);
            }
            cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
            join_start(&j, &w.co);
            wait_suspended(&w.co);
            int64_t t = now_ns();
            cr_assert_eq(coro_cancel(&w.co), 0);
            cr_assert_eq(join_end(&j), 31, "workers %d kind %d", worker_counts[k], kind);
            cr_assert_eq(w.first, kind == K_CALL ? 9 : -ECANCELED, "workers %d kind %d: %ld",
                         worker_counts[k], kind, (long)w.first);
            if (kind == K_CALL) {
                cr_assert_eq(kids[K_CALL].r1, -ECANCELED);
                cr_assert_eq(kids[K_CALL].r2, -ECANCELED);
            }
            cr_assert_eq(w.later, -ECANCELED);
            cr_assert_lt(w.t1 - t, 5000000000LL, "generous bound");
            cr_assert_eq(coro_cancel(&w.co), 0, "a finished job: nothing happens");
            /* the waited-on job is untouched: it finishes normally */
            coro_event_set(&stop);
            cr_assert_eq(join_end(&jb), 3);
            if (kind == K_DONE_SECOND) {
                coro_event_set(&ev);
                cr_assert_eq(join_end(&jf), 31);
                cr_assert_eq(first.first, 3);
            }
            cr_assert_eq(coro__parklot_timers_count(s), 0, "the cancelled wait's timer went");
            cr_assert_eq(coro_sched_destroy(s), 0);
            coro_event_destroy(&ev);
            coro_event_destroy(&stop);
        }
    }
}

/* ---- from a job --------------------------------------------------------------- */

struct canceller { coro_t co; coro_t *victim; intptr_t rc; };

static int canceller_body(coro_t *co)
{
    struct canceller *c = CORO_SELF(co, struct canceller);
    CORO_BEGIN(co);
    c->rc = coro_cancel(c->victim);
    CORO_END(co);
}

Test(cancel_job, a_job_can_cancel_another, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct waiter w = { .kind = K_EVENT, .ev = &ev };
        struct canceller c = { .victim = &w.co, .rc = 1 };
        struct joiner j;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        join_start(&j, &w.co);
        wait_suspended(&w.co);
        cr_assert_eq(block_on_r(s, &c.co, canceller_body, NULL), 0);
        cr_assert_eq(c.rc, 0);
        cr_assert_eq(join_end(&j), 31);
        cr_assert_eq(w.first, -ECANCELED);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

Test(cancel_job, a_cancel_before_the_first_run_ends_every_await, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct waiter w = { .kind = K_EVENT, .ev = &ev };
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        cr_assert_eq(coro_cancel(&w.co), 0);
        cr_assert_eq(join_r(&w.co), 31);
        cr_assert_eq(w.first, -ECANCELED);
        cr_assert_eq(w.later, -ECANCELED);
        /* spawned again, the frame is not cancelled any more */
        w.first = w.later = 0;
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        cr_assert_geq(coro_event_set(&ev), 0);   /* 0 or 1: the job may wait already */
        cr_assert_eq(join_r(&w.co), 31);
        cr_assert_eq(w.first, 0);
        cr_assert_eq(w.later, 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

/* an await whose operation completes at once (here: a set event) has
 * completed: it keeps its result, as under CORO_CANCEL */
Test(cancel_job, an_await_that_completes_at_once_keeps_its_result, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct waiter w = { .kind = K_EVENT, .ev = &ev };
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_event_set(&ev), 0);
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        cr_assert_eq(coro_cancel(&w.co), 0);
        cr_assert_eq(join_r(&w.co), 31);
        cr_assert_eq(w.first, 0);
        cr_assert_eq(w.later, 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

Test(cancel_job, bad_frames_give_einval, .timeout = 10)
{
    coro_t idle;
    memset(&idle, 0, sizeof idle);
    cr_assert_eq(coro_cancel(NULL), -EINVAL);
    cr_assert_eq(coro_cancel(&idle), -EINVAL);
}

/* ---- .deadline (issue 12, item 2) ------------------------------------------------ */

enum dkind { D_EVENT, D_EVENT_TIMED, D_SLEEP, D_DONE, D_READ, D_CHAN, D_CALL, NDKIND };

struct dl {
    coro_t co;
    coro_t child;
    enum dkind kind;
    coro_event_t *ev;
    coro_t *target;
    coro_chan_t *ch;
    int fd;
    char buf[8];
    void *item;
    intptr_t first, later;
    int64_t t1;
};

static struct kid dkids[NDKIND];

static int dl_body(coro_t *co)
{
    struct dl *w = CORO_SELF(co, struct dl);
    CORO_BEGIN(co);
    switch (w->kind) {
    case D_EVENT: CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER)); break;
    case D_EVENT_TIMED: CORO_AWAIT(co, coro_event_wait(w->ev, 10000000000LL)); break;
    case D_SLEEP: CORO_AWAIT(co, coro_sleep(10000000000LL)); break;
    case D_DONE: CORO_AWAIT(co, coro_done(w->target)); break;
    case D_READ: CORO_AWAIT(co, coro_read(w->fd, w->buf, sizeof w->buf, CORO_FOREVER)); break;
    case D_CHAN: CORO_AWAIT(co, coro_chan_recv(w->ch, &w->item, CORO_FOREVER)); break;
    case D_CALL:
        dkids[D_CALL].ev = w->ev;
        CORO_AWAIT(co, coro_call(&dkids[D_CALL].co, kid_body));
        break;
    default: break;
    }
    w->first = CORO_RESULT(co);
    w->t1 = now_ns();
    CORO_AWAIT(co, coro_sleep(1000));
    w->later = CORO_RESULT(co);
    CORO_RETURN(co, 44);
    CORO_END(co);
}

Test(cancel_job, deadline_a_50ms_deadline_ends_a_wait_that_has_no_timeout_of_its_own, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        for (int kind = 0; kind < NDKIND; kind++) {
            coro_sched_t *s = mk(worker_counts[k]);
            coro_event_t ev, stop;
            void *cbuf[4];
            coro_chan_t ch;
            struct blocker b = { .ev = &stop };
            int p[2];
            cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
            cr_assert_eq(coro_event_init(&ev), 0);
            cr_assert_eq(coro_event_init(&stop), 0);
            cr_assert_eq(coro_chan_init(&ch, cbuf, 4), 0);
            memset(&dkids, 0, sizeof dkids);
            struct dl w = { .kind = (enum dkind)kind, .ev = &ev, .target = &b.co, .ch = &ch,
                            .fd = p[0] };
            struct joiner jb;
            cr_assert_eq(coro_spawn(s, &b.co, blocker_body, NULL), 0);
            join_start(&jb, &b.co);
            int64_t t0 = coro_now();
            coro_spawn_opts_t o = { .deadline = t0 + 50000000 };
            cr_assert_eq(coro_spawn(s, &w.co, dl_body, &o), 0);
            cr_assert_eq(join_r(&w.co), 44);
            if (kind == D_CALL) {
                cr_assert_eq(w.first, 9);
                cr_assert_eq(dkids[D_CALL].r1, -ETIMEDOUT);
                cr_assert_eq(dkids[D_CALL].r2, -ETIMEDOUT);
            } else {
                cr_assert_eq(w.first, -ETIMEDOUT, "workers %d kind %d: %ld", worker_counts[k],
                             kind, (long)w.first);
            }
            cr_assert_geq(w.t1, t0 + 50000000, "not before the deadline");
            cr_assert_lt(w.t1, t0 + 5000000000LL, "generous bound");
            cr_assert_eq(w.later, -ETIMEDOUT, "every await after it");
            cr_assert_eq(coro__parklot_timers_count(s), 0);
            coro_event_set(&stop);
            cr_assert_eq(join_end(&jb), 3);
            cr_assert_eq(coro_sched_destroy(s), 0);
            coro_event_destroy(&ev);
            coro_event_destroy(&stop);
            close(p[0]);
            close(p[1]);
        }
    }
}

/* a wait's own shorter timeout still wins; a completed await keeps its
 * result after the deadline; a frame spawned again without a deadline has
 * none */
Test(cancel_job, deadline_an_earlier_own_timeout_wins_and_completed_awaits_keep_their_result, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct dl w = { .kind = D_EVENT_TIMED, .ev = &ev };
        cr_assert_eq(coro_event_init(&ev), 0);
        /* own timeout 10 s > deadline: the deadline ends it */
        coro_spawn_opts_t o = { .deadline = coro_now() + 20000000 };
        cr_assert_eq(coro_spawn(s, &w.co, dl_body, &o), 0);
        cr_assert_eq(join_r(&w.co), 44);
        cr_assert_eq(w.first, -ETIMEDOUT);
        /* a deadline already past, the event set: the wait completes at once */
        cr_assert_eq(coro_event_set(&ev), 0);
        w.kind = D_EVENT;
        o.deadline = 1;
        cr_assert_eq(coro_spawn(s, &w.co, dl_body, &o), 0);
        cr_assert_eq(join_r(&w.co), 44);
        cr_assert_eq(w.first, 0);
        cr_assert_eq(w.later, -ETIMEDOUT);
        /* no deadline any more */
        cr_assert_eq(coro_spawn(s, &w.co, dl_body, NULL), 0);
        cr_assert_eq(join_r(&w.co), 44);
        cr_assert_eq(w.first, 0);
        cr_assert_eq(w.later, 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

Test(cancel_job, deadline_bad_spawn_options_give_einval, .timeout = 10)
{
    coro_sched_t *s = mk(1);
    struct dl w = { .kind = D_EVENT };
    coro_spawn_opts_t neg = { .deadline = -5 };
    cr_assert_eq(coro_spawn(s, &w.co, dl_body, &neg), -EINVAL);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

static int gate_fail;
static long gate_live;

static void *gate_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (__atomic_load_n(&gate_fail, __ATOMIC_ACQUIRE))
        return NULL;
    __atomic_add_fetch(&gate_live, 1, __ATOMIC_RELAXED);
    return malloc(n);
}

static void gate_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    __atomic_sub_fetch(&gate_live, 1, __ATOMIC_RELAXED);
    free(p);
}

Test(cancel_job, deadline_a_deadline_record_that_cannot_be_had_gives_enomem_and_leaks_nothing, .timeout = 30)
{
    coro_alloc_t gate = { .alloc = gate_malloc, .free = gate_free };
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_sched_t *s;
        coro_event_t ev;
        struct dl w = { .kind = D_EVENT, .ev = &ev };
        c.workers = worker_counts[k];
        c.pin = false;
        c.alloc = &gate;
        gate_live = 0;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_event_set(&ev), 0);
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        coro_spawn_opts_t o = { .deadline = coro_now() + 10000000000LL };
        __atomic_store_n(&gate_fail, 1, __ATOMIC_RELEASE);
        cr_assert_eq(coro_spawn(s, &w.co, dl_body, &o), -ENOMEM);
        __atomic_store_n(&gate_fail, 0, __ATOMIC_RELEASE);
        cr_assert_eq(coro_cancel(&w.co), -EINVAL, "the frame never started");
        cr_assert_eq(coro_spawn(s, &w.co, dl_body, &o), 0);
        cr_assert_eq(join_r(&w.co), 44);
        cr_assert_eq(w.first, 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(gate_live, 0, "%ld blocks leaked", gate_live);
        coro_event_destroy(&ev);
    }
}

/* ---- coro_join_timeout / coro_done_timeout (issue 12, item 3) ------------------- */

struct neg { coro_t co; coro_event_t *ev; };

static int neg_body(coro_t *co)
{
    struct neg *n = CORO_SELF(co, struct neg);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(n->ev, CORO_FOREVER));
    CORO_RETURN(co, -ETIMEDOUT);    /* its own result: looks like an error */
    CORO_END(co);
}

Test(cancel_job, join_timeout_returns_a_jobs_own_negative_result_as_a_result, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct neg n = { .ev = &ev };
        intptr_t r = 12345;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &n.co, neg_body, NULL), 0);
        int64_t t0 = coro_now();
        cr_assert_eq(coro_join_timeout(&n.co, &r, 30000000), -ETIMEDOUT);
        cr_assert_geq(coro_now() - t0, 30000000);
        cr_assert_eq(r, 12345, "untouched on timeout");
        cr_assert_eq(coro_join_timeout(&n.co, &r, 0), -ETIMEDOUT);
        cr_assert_geq(coro_event_set(&ev), 0);
        cr_assert_eq(coro_join_timeout(&n.co, &r, CORO_FOREVER), 0);
        cr_assert_eq(r, -ETIMEDOUT, "the job's own result");
        r = 0;
        cr_assert_eq(coro_join_timeout(&n.co, &r, 0), 0, "a finished job at once");
        cr_assert_eq(r, -ETIMEDOUT);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

struct jt_in_job { coro_t co; coro_t *other; int rc; };

static int jt_in_job_body(coro_t *co)
{
    struct jt_in_job *j = CORO_SELF(co, struct jt_in_job);
    intptr_t r;
    CORO_BEGIN(co);
    j->rc = coro_join_timeout(j->other, &r, 1000);
    CORO_END(co);
}

Test(cancel_job, join_timeout_error_paths, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    coro_t idle;
    intptr_t r;
    struct jt_in_job j = { .other = NULL, .rc = 1 };
    coro_event_t ev;
    struct neg n = { .ev = &ev };
    memset(&idle, 0, sizeof idle);
    cr_assert_eq(coro_event_init(&ev), 0);
    cr_assert_eq(coro_join_timeout(NULL, &r, 0), -EINVAL);
    cr_assert_eq(coro_join_timeout(&idle, &r, 0), -EINVAL);
    cr_assert_eq(coro_spawn(s, &n.co, neg_body, NULL), 0);
    cr_assert_eq(coro_join_timeout(&n.co, NULL, 0), -EINVAL);
    cr_assert_eq(coro_join_timeout(&n.co, &r, -2), -EINVAL);
    j.other = &n.co;
    cr_assert_eq(block_on_r(s, &j.co, jt_in_job_body, NULL), 0);
    cr_assert_eq(j.rc, -EDEADLK);
    coro_event_set(&ev);
    cr_assert_eq(coro_join_timeout(&n.co, &r, CORO_FOREVER), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&ev);
}

struct dto {
    coro_t co;
    coro_t *target;
    int64_t timeout;
    intptr_t r1, res1, r2, res2;
};

static int dto_body(coro_t *co)
{
    struct dto *d = CORO_SELF(co, struct dto);
    CORO_BEGIN(co);
    d->res1 = 777;
    CORO_AWAIT(co, coro_done_timeout(d->target, &d->res1, d->timeout));
    d->r1 = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done_timeout(d->target, &d->res2, CORO_FOREVER));
    d->r2 = CORO_RESULT(co);
    CORO_END(co);
}

Test(cancel_job, done_timeout_times_out_then_returns_the_jobs_own_result_apart, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct neg n = { .ev = &ev };
        struct dto d = { .target = &n.co, .timeout = 20000000 };
        struct joiner jd;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &n.co, neg_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &d.co, dto_body, NULL), 0);
        join_start(&jd, &d.co);
        /* bounded: until the second await waits (after the timeout) */
        int64_t end = now_ns() + 20000000000LL;
        while (__atomic_load_n(&d.r1, __ATOMIC_ACQUIRE) != -ETIMEDOUT)
            cr_assert_lt(now_ns(), end);
        wait_suspended(&d.co);
        cr_assert_geq(coro_event_set(&ev), 0);
        cr_assert_eq(join_end(&jd), 0);
        cr_assert_eq(d.r1, -ETIMEDOUT);
        cr_assert_eq(d.res1, 777, "untouched on timeout");
        cr_assert_eq(d.r2, 0);
        cr_assert_eq(d.res2, -ETIMEDOUT, "the job's own result, apart");
        /* a finished job: at once */
        d.timeout = 0;
        cr_assert_eq(block_on_r(s, &d.co, dto_body, NULL), 0);
        cr_assert_eq(d.r1, 0);
        cr_assert_eq(d.res1, -ETIMEDOUT);
        cr_assert_eq(coro__parklot_timers_count(s), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

Test(cancel_job, done_timeout_a_cancelled_awaiter_gets_ecanceled, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct neg n = { .ev = &ev };
        struct dto d = { .target = &n.co, .timeout = 10000000000LL };
        struct joiner jd;
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_spawn(s, &n.co, neg_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &d.co, dto_body, NULL), 0);
        join_start(&jd, &d.co);
        wait_suspended(&d.co);
        cr_assert_eq(coro_cancel(&d.co), 0);
        cr_assert_eq(join_end(&jd), 0);
        cr_assert_eq(d.r1, -ECANCELED);
        cr_assert_eq(d.r2, -ECANCELED);
        cr_assert_eq(d.res1, 777);
        coro_event_set(&ev);
        intptr_t r;
        cr_assert_eq(coro_join_timeout(&n.co, &r, CORO_FOREVER), 0);
        cr_assert_eq(r, -ETIMEDOUT);
        cr_assert_eq(coro__parklot_timers_count(s), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

struct dto_err { coro_t co; coro_t idle; intptr_t r[4]; intptr_t res; };

static int dto_err_body(coro_t *co)
{
    struct dto_err *e = CORO_SELF(co, struct dto_err);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done_timeout(NULL, &e->res, 0));
    e->r[0] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done_timeout(&e->idle, &e->res, 0));
    e->r[1] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done_timeout(co, &e->res, CORO_FOREVER));
    e->r[2] = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done_timeout(co, &e->res, -7));
    e->r[3] = CORO_RESULT(co);
    CORO_END(co);
}

Test(cancel_job, done_timeout_error_paths, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct dto_err e;
    memset(&e, 0, sizeof e);
    cr_assert_eq(block_on_r(s, &e.co, dto_err_body, NULL), 0);
    cr_assert_eq(e.r[0], -EINVAL);
    cr_assert_eq(e.r[1], -EINVAL);
    cr_assert_eq(e.r[2], -EDEADLK);
    cr_assert_eq(e.r[3], -EINVAL);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- coro_sched_shutdown_timeout (issue 12, item 4) ------------------------------ */

Test(cancel_job, shutdown_timeout_drains_in_time_or_cancels_the_rest_after_the_timeout, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        /* drains: every job finishes by itself */
        coro_sched_t *s = mk(worker_counts[k]);
        coro_event_t ev;
        struct waiter w[8];
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_geq(coro_event_set(&ev), 0);
        memset(w, 0, sizeof w);
        for (int i = 0; i < 8; i++) {
            w[i].kind = K_EVENT;
            w[i].ev = &ev;
            cr_assert_eq(coro_spawn(s, &w[i].co, waiter_body, NULL), 0);
        }
        cr_assert_eq(coro_sched_shutdown_timeout(s, 10000000000LL), 0);
        for (int i = 0; i < 8; i++)
            cr_assert_eq(w[i].first, 0);
        cr_assert_eq(coro_sched_shutdown_timeout(s, 0), 0, "a second call");
        cr_assert_eq(coro_sched_destroy(s), 0);

        /* does not drain: cancelled after the timeout */
        s = mk(worker_counts[k]);
        coro_event_reset(&ev);
        memset(w, 0, sizeof w);
        for (int i = 0; i < 8; i++) {
            w[i].kind = i % 2 ? K_EVENT : K_SLEEP;
            w[i].ev = &ev;
            cr_assert_eq(coro_spawn(s, &w[i].co, waiter_body, NULL), 0);
        }
        int64_t t0 = coro_now();
        cr_assert_eq(coro_sched_shutdown_timeout(s, 50000000), -ETIMEDOUT);
        int64_t t = coro_now() - t0;
        cr_assert_geq(t, 50000000);
        cr_assert_lt(t, 5000000000LL, "generous bound");
        for (int i = 0; i < 8; i++) {
            cr_assert_eq(w[i].first, -ECANCELED, "workers %d job %d", worker_counts[k], i);
            cr_assert_eq(w[i].later, -ECANCELED);
        }
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

struct sd_in_job { coro_t co; coro_sched_t *s; int rc; };

static int sd_in_job_body(coro_t *co)
{
    struct sd_in_job *j = CORO_SELF(co, struct sd_in_job);
    CORO_BEGIN(co);
    j->rc = coro_sched_shutdown_timeout(j->s, 0);
    CORO_END(co);
}

Test(cancel_job, shutdown_timeout_error_paths, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    struct sd_in_job j = { .s = s, .rc = 1 };
    cr_assert_eq(coro_sched_shutdown_timeout(NULL, 0), -EINVAL);
    cr_assert_eq(coro_sched_shutdown_timeout(s, -2), -EINVAL);
    cr_assert_eq(block_on_r(s, &j.co, sd_in_job_body, NULL), 0);
    cr_assert_eq(j.rc, -EDEADLK);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- groups (issue 12, item 5) ------------------------------------------------------ */

#define NMEMB 100

struct member { coro_t co; intptr_t r; int64_t t1; };

static int member_body(coro_t *co)
{
    struct member *m = CORO_SELF(co, struct member);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(10000000000LL));
    m->r = CORO_RESULT(co);
    m->t1 = now_ns();
    CORO_RETURN(co, 2);
    CORO_END(co);
}

struct drv { pthread_t t; struct member *m; int n; };

static void *drv_main(void *arg)
{
    struct drv *d = arg;
    for (int i = 0; i < d->n; i++)
        (void)join_r(&d->m[i].co);
    return NULL;
}

Test(cancel_job, group_members_sleeping_10s_all_see_ecanceled_soon_after_coro_group_cancel, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_group_t g;
        struct member *m = calloc(NMEMB, sizeof *m);
        struct drv d = { .m = m, .n = NMEMB };
        cr_assert_eq(coro_group_init(&g), 0);
        coro_spawn_opts_t o = { .group = &g };
        for (int i = 0; i < NMEMB; i++)
            cr_assert_eq(coro_spawn(s, &m[i].co, member_body, &o), 0);
        cr_assert_eq(pthread_create(&d.t, NULL, drv_main, &d), 0);
        for (int i = 0; i < NMEMB; i++)
            wait_suspended(&m[i].co);
        cr_assert_eq(coro_group_wait_blocking(&g, 0), -ETIMEDOUT);
        cr_assert_eq(coro_group_destroy(&g), -EBUSY);
        int64_t t0 = now_ns();
        cr_assert_eq(coro_group_cancel(&g), NMEMB);
        cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
        int64_t worst = 0;
        for (int i = 0; i < NMEMB; i++) {
            cr_assert_eq(m[i].r, -ECANCELED, "workers %d member %d: %ld", worker_counts[k], i,
                         (long)m[i].r);
            if (m[i].t1 - t0 > worst)
                worst = m[i].t1 - t0;
        }
        cr_assert_lt(worst, 2000000000LL, "generous bound: %lld ns", (long long)worst);
        pthread_join(d.t, NULL);
        for (int i = 0; i < NMEMB; i++) {
            intptr_t r;
            cr_assert_eq(coro_join_timeout(&m[i].co, &r, 0), 0, "finished once the wait returned");
            cr_assert_eq(r, 2);
        }
        cr_assert_eq(coro_group_cancel(&g), 0, "no member left");
        cr_assert_eq(coro_group_destroy(&g), 0);
        cr_assert_eq(coro__parklot_timers_count(s), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        free(m);
    }
}

struct gw { coro_t co; coro_group_t *g; intptr_t r1, r2; };

static int gw_body(coro_t *co)
{
    struct gw *w = CORO_SELF(co, struct gw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_group_wait(w->g, 20000000));
    w->r1 = CORO_RESULT(co);
    CORO_AWAIT(co, coro_group_wait(w->g, CORO_FOREVER));
    w->r2 = CORO_RESULT(co);
    CORO_END(co);
}

Test(cancel_job, group_a_job_waits_for_the_group_with_a_timeout, .timeout = 60)
{
    for (unsigned k = 0; k < NW; k++) {
        coro_sched_t *s = mk(worker_counts[k]);
        coro_group_t g;
        coro_event_t ev;
        struct neg n[3];
        memset(n, 0, sizeof n);
        struct gw w = { .g = &g };
        struct joiner jw;
        cr_assert_eq(coro_group_init(&g), 0);
        cr_assert_eq(coro_event_init(&ev), 0);
        coro_spawn_opts_t o = { .group = &g };
        for (int i = 0; i < 3; i++) {
            n[i].ev = &ev;
            cr_assert_eq(coro_spawn(s, &n[i].co, neg_body, &o), 0);
        }
        cr_assert_eq(coro_spawn(s, &w.co, gw_body, NULL), 0);
        join_start(&jw, &w.co);
        int64_t end = now_ns() + 20000000000LL;
        while (__atomic_load_n(&w.r1, __ATOMIC_ACQUIRE) != -ETIMEDOUT)
            cr_assert_lt(now_ns(), end);
        cr_assert_geq(coro_event_set(&ev), 0);
        cr_assert_eq(join_end(&jw), 0);
        cr_assert_eq(w.r2, 0);
        cr_assert_eq(coro_group_wait_blocking(&g, 0), 0);
        cr_assert_eq(coro_group_destroy(&g), 0);
        /* a group is reusable after its members finished */
        cr_assert_eq(coro_spawn(s, &n[0].co, neg_body, &o), 0);
        cr_assert_eq(join_r(&n[0].co), -ETIMEDOUT);  /* drives at 0 workers */
        cr_assert_eq(coro_group_wait_blocking(&g, CORO_FOREVER), 0);
        cr_assert_eq(coro_sched_destroy(s), 0);
        coro_event_destroy(&ev);
    }
}

struct gb_in_job { coro_t co; coro_group_t *g; int rc; intptr_t r; };

static int gb_in_job_body(coro_t *co)
{
    struct gb_in_job *j = CORO_SELF(co, struct gb_in_job);
    CORO_BEGIN(co);
    j->rc = coro_group_wait_blocking(j->g, 0);
    CORO_AWAIT(co, coro_group_wait(j->g, -2));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

Test(cancel_job, group_error_paths, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    coro_group_t g;
    struct gb_in_job j = { .g = &g };
    cr_assert_eq(coro_group_init(NULL), -EINVAL);
    cr_assert_eq(coro_group_cancel(NULL), -EINVAL);
    cr_assert_eq(coro_group_destroy(NULL), -EINVAL);
    cr_assert_eq(coro_group_wait_blocking(NULL, 0), -EINVAL);
    cr_assert_eq(coro_group_init(&g), 0);
    cr_assert_eq(coro_group_wait_blocking(&g, -2), -EINVAL);
    cr_assert_eq(block_on_r(s, &j.co, gb_in_job_body, NULL), 0);
    cr_assert_eq(j.rc, -EDEADLK);
    cr_assert_eq(j.r, -EINVAL);
    cr_assert_eq(coro_group_destroy(&g), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}
