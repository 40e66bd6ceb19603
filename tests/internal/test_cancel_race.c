/* SPDX-License-Identifier: MIT */
/* coro_cancel of one job (lib/wait/parklot.c CANCEL ONE): after much history
 * it still ends the wait, and racing the wake it ends each wait exactly
 * once, with the wake's result or -ECANCELED, for every kind of wait:
 * a sync object (event, with and without a timeout), a job's end (its
 * joiner slot and the lot), an fd, a timer, a select and a blocking call. */
#include "rt/rt.h"
#include "white_box.h"

#include <corokit/sync.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum kind { K_EVENT, K_EVENT_TIMED, K_DONE, K_DONE_PARKLOT, K_FD, K_SLEEP, K_SELECT, K_BLOCKING,
            NKIND };

static const char *const kind_name[NKIND] = { "event", "timed event", "done (slot)",
                                              "done (lot)", "fd", "sleep", "select",
                                              "blocking" };

struct target {
    coro_t co;
    coro_event_t *ev;
};

static int target_body(coro_t *co)
{
    struct target *t = CORO_SELF(co, struct target);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(t->ev, CORO_FOREVER));
    CORO_RETURN(co, 5);
    CORO_END(co);
}

struct waiter {
    coro_t co;
    enum kind kind;
    coro_event_t *ev;
    coro_t *target;
    int fd;
    coro_select_t sel;
    intptr_t first, later;
};

static intptr_t short_call(void *arg)
{
    (void)arg;
    for (volatile int i = 0; i < 2000; i++)
        ;
    return 11;
}

static int waiter_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    switch (w->kind) {
    case K_EVENT: CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER)); break;
    case K_EVENT_TIMED: CORO_AWAIT(co, coro_event_wait(w->ev, 10000000000LL)); break;
    case K_DONE:
    case K_DONE_PARKLOT: CORO_AWAIT(co, coro_done(w->target)); break;
    case K_FD: CORO_AWAIT(co, coro_readable(w->fd, CORO_FOREVER)); break;
    case K_SLEEP: CORO_AWAIT(co, coro_sleep(50000)); break;
    case K_SELECT:
        coro_select_init(&w->sel);
        coro_select_event(&w->sel, w->ev);
        CORO_AWAIT(co, coro_select(&w->sel, CORO_FOREVER));
        coro_select_end(&w->sel, CORO_RESULT(co));
        break;
    case K_BLOCKING: CORO_AWAIT(co, coro_blocking(short_call, NULL)); break;
    default: break;
    }
    w->first = CORO_RESULT(co);
    /* a cancelled job's later awaits end at once; a woken one's would
     * wait: it ends here */
    if (w->first == -ECANCELED) {
        CORO_AWAIT(co, coro_sleep(10000000000LL));
        w->later = CORO_RESULT(co);
    }
    CORO_RETURN(co, 31);
    CORO_END(co);
}

/* the result a wait that was woken, not cancelled, gives */
static bool woken_result(enum kind k, intptr_t r)
{
    switch (k) {
    case K_DONE:
    case K_DONE_PARKLOT: return r == 5;
    case K_SELECT: return r >= 0;
    case K_BLOCKING: return r == 11;
    default: return r == 0;
    }
}

struct waker {
    pthread_t t;
    enum kind kind;
    coro_event_t *ev;
    int fd;
    atomic_int *go;
};

static void *waker_main(void *arg)
{
    struct waker *k = arg;
    while (!atomic_load(k->go))
        sched_yield();
    switch (k->kind) {
    case K_FD: {
        char c = 'x';
        cr_assert_eq(write(k->fd, &c, 1), 1);
        break;
    }
    case K_SLEEP:
    case K_BLOCKING: break;     /* they end on their own */
    default: coro_event_set(k->ev); break;  /* the target's event for K_DONE* */
    }
    return NULL;
}

static void race_kind(int workers, enum kind kind, int rounds)
{
    coro_sched_t *s = mk(workers);
    int woken = 0, cancelled = 0;

    for (int r = 0; r < rounds; r++) {
        coro_event_t ev, tev;
        int p[2];
        struct target tg = { .ev = &tev };
        struct waiter *fw = NULL;      /* K_DONE_PARKLOT: the slot's holder */
        struct waiter w = { .kind = kind, .ev = &ev, .target = &tg.co };
        struct joiner jw, jt, jf;
        atomic_int go = 0;
        struct waker k = { .kind = kind, .ev = kind == K_DONE || kind == K_DONE_PARKLOT ? &tev : &ev,
                           .go = &go };

        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(coro_event_init(&tev), 0);
        cr_assert_eq(pipe(p), 0);
        w.fd = p[0];
        k.fd = p[1];
        cr_assert_eq(coro_spawn(s, &tg.co, target_body, NULL), 0);
        join_start(&jt, &tg.co);
        if (kind == K_DONE_PARKLOT) {
            /* the joiner slot is taken: our waiter uses the lot */
            fw = calloc(1, sizeof *fw);
            cr_assert_not_null(fw);
            *fw = (struct waiter){ .kind = K_DONE, .ev = &ev, .target = &tg.co };
            cr_assert_eq(coro_spawn(s, &fw->co, waiter_body, NULL), 0);
            join_start(&jf, &fw->co);
            wait_suspended(&fw->co);
        }
        cr_assert_eq(coro_spawn(s, &w.co, waiter_body, NULL), 0);
        join_start(&jw, &w.co);
        /* odd rounds: the cancel may meet the arm too; a sleep or a
         * blocking call ends on its own, maybe before anyone looks */
        if (r % 2 == 0 && kind != K_SLEEP && kind != K_BLOCKING)
            wait_suspended(&w.co);
        cr_assert_eq(pthread_create(&k.t, NULL, waker_main, &k), 0);
        atomic_store(&go, 1);
        if (r % 3 == 1)
            sched_yield();
        cr_assert_eq(coro_cancel(&w.co), 0);
        pthread_join(k.t, NULL);
        intptr_t jr = join_end(&jw);
        cr_assert_eq(jr, 31, "%s round %d: %ld", kind_name[kind], r, (long)jr);
        if (w.first == -ECANCELED) {
            cancelled++;
            cr_assert_eq(w.later, -ECANCELED, "%s round %d", kind_name[kind], r);
        } else {
            woken++;
            cr_assert(woken_result(kind, w.first), "%s round %d: result %ld", kind_name[kind], r,
                      (long)w.first);
        }
        coro_event_set(&tev);
        cr_assert_eq(join_end(&jt), 5);
        if (fw) {
            coro_event_set(&ev);
            cr_assert_eq(join_end(&jf), 31);
            free(fw);
        }
        close(p[0]);
        close(p[1]);
        coro_event_destroy(&ev);
        coro_event_destroy(&tev);
    }
    cr_assert_eq(coro__parklot_timers_count(s), 0, "%s: a cancelled wait's timer stayed",
                 kind_name[kind]);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_log_info("%s, %d workers: %d woken, %d cancelled", kind_name[kind], workers, woken,
                cancelled);
}

Test(cancel_race, a_cancel_racing_the_wake_ends_every_kind_of_wait_exactly_once,
     .timeout = 240)
{
    for (int workers = 1; workers <= 2; workers++)
        for (int kind = 0; kind < NKIND; kind++)
            race_kind(workers, (enum kind)kind, 60);
}

/* ---- after much history -------------------------------------------------------- */

static int history_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    w->first = CORO_RESULT(co);
    CORO_END(co);
}

Test(cancel_race, a_cancel_after_20000_objects_were_waited_on_ends_the_one_wait,
     .timeout = 120)
{
    enum { N = 20000, BATCH = 500 };
    coro_sched_t *s = mk(1);
    coro_event_t *evs = calloc(N, sizeof *evs);
    struct waiter *ws = calloc(BATCH, sizeof *ws);
    cr_assert(evs && ws);

    for (int done = 0; done < N; done += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            coro_event_init(&evs[done + i]);
            ws[i] = (struct waiter){ .ev = &evs[done + i] };
            cr_assert_eq(coro_spawn(s, &ws[i].co, history_body, NULL), 0);
        }
        for (int i = 0; i < BATCH; i++)
            wait_suspended(&ws[i].co);
        for (int i = 0; i < BATCH; i++)
            coro_event_set(&evs[done + i]);
        for (int i = 0; i < BATCH; i++)
            cr_assert_eq(join_r(&ws[i].co), 0);
    }
    /* the one wait, and a neighbour on another event that stays */
    coro_event_t ev, other;
    struct waiter w = { .ev = &ev }, n = { .ev = &other };
    coro_event_init(&ev);
    coro_event_init(&other);
    cr_assert_eq(coro_spawn(s, &w.co, history_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &n.co, history_body, NULL), 0);
    wait_suspended(&w.co);
    wait_suspended(&n.co);
    cr_assert_eq(coro_cancel(&w.co), 0);
    cr_assert_eq(join_r(&w.co), 0);
    cr_assert_eq(w.first, -ECANCELED);
    cr_assert(suspended(&n.co), "the neighbour was left alone");
    coro_event_set(&other);
    cr_assert_eq(join_r(&n.co), 0);
    cr_assert_eq(n.first, 0);
    for (int i = 0; i < N; i++)
        coro_event_destroy(&evs[i]);
    coro_event_destroy(&ev);
    coro_event_destroy(&other);
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(evs);
    free(ws);
}
