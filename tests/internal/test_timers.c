/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Timed waits of every kind - a lot wait (an event), an fd wait, a sleep -
 * with tiny (1 ns - 50 us) and huge timeouts, the same frame waiting again
 * at once at the same address, waits ended from another thread or worker,
 * cancels at every point, at 0, 1 and 2 workers; every test ends with no
 * timer left (the lot's heap and the I/O context's).  And a sleep's cancel
 * finds its timer through the index its awaitable keeps: one heap entry
 * read per cancel, however many timers are pending. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

#include "rt/rt.h"      /* white box: the timer counts, coro__io_sleep_cancel_looks */
#include "white_box.h"

#define US 1000LL
#define MS 1000000LL

static void heap_empty(coro_sched_t *s, const char *what, int w)
{
    cr_assert_eq(coro__parklot_timers_count(s), 0, "%s, %d workers: a lot timer outlived its wait",
                 what, w);
    cr_assert_eq(coro__io_next_timer(coro__sched_io(s)), INT64_MAX,
                 "%s, %d workers: an I/O timer outlived its wait", what, w);
}

/* ---- tiny timeouts, the same frame again and again -------------------------------------- */

enum kind { K_EVENT, K_READ, K_SLEEP };

struct tiny {
    coro_t co;
    enum kind k;
    int64_t ns;
    int fd;
    coro_event_t *ev;
    intptr_t res;
    int64_t took;
};

static int tiny_body(coro_t *co)
{
    struct tiny *t = CORO_SELF(co, struct tiny);
    static char b;
    CORO_BEGIN(co);
    t->took = coro_now();
    if (t->k == K_EVENT)
        CORO_AWAIT(co, coro_event_wait(t->ev, t->ns));
    else if (t->k == K_READ)
        CORO_AWAIT(co, coro_read(t->fd, &b, 1, t->ns));
    else
        CORO_AWAIT(co, coro_sleep(t->ns));
    t->res = CORO_RESULT(co);
    t->took = coro_now() - t->took;
    CORO_END(co);
}

Test(timers, tiny_timeouts_with_the_frame_reused, .timeout = 20)
{
    static const int64_t ns[] = { 1, 100, US, 10 * US, 50 * US };
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        coro_event_t ev;
        int fds[2];
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct tiny t;      /* one frame, at one address, for every wait */
        for (int rep = 0; rep < 20; rep++) {
            for (unsigned i = 0; i < sizeof ns / sizeof ns[0]; i++) {
                for (int k = K_EVENT; k <= K_SLEEP; k++) {
                    t = (struct tiny){ .k = (enum kind)k, .ns = ns[i], .fd = fds[0], .ev = &ev };
                    cr_assert_eq(coro_spawn(s, &t.co, tiny_body, NULL), 0);
                    cr_assert_eq(join_r(&t.co), 0);
                    cr_assert_eq(t.res, k == K_SLEEP ? 0 : -ETIMEDOUT,
                                 "%d workers, kind %d, %lld ns: %s", w, k, (long long)ns[i],
                                 coro_strerror((int)t.res));
                    cr_assert_geq(t.took, ns[i], "%d workers: woke before its deadline", w);
                }
            }
        }
        heap_empty(s, "tiny", w);
        close(fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- huge timeouts, ended by the event, from another thread ----------------------------- */

struct setter {
    pthread_t t;
    coro_t *co;
    coro_event_t *ev;
    int fd;
};

static void *setter_main(void *arg)
{
    struct setter *x = arg;
    wait_suspended(x->co);
    if (x->ev)
        coro_event_set(x->ev);
    else if (write(x->fd, "x", 1) != 1)
        abort();
    return NULL;
}

Test(timers, huge_timeouts_ended_from_another_thread, .timeout = 20)
{
    static const int64_t ns[] = { 3600LL * 1000 * MS, INT64_MAX / 2, INT64_MAX };
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        coro_event_t ev;
        int fds[2];
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct tiny t;
        for (unsigned i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            for (int k = K_EVENT; k <= K_READ; k++) {
                cr_assert_eq(coro_event_reset(&ev), 0);
                t = (struct tiny){ .k = (enum kind)k, .ns = ns[i], .fd = fds[0], .ev = &ev };
                struct setter x = { .co = &t.co, .ev = k == K_EVENT ? &ev : NULL, .fd = fds[1] };
                cr_assert_eq(coro_spawn(s, &t.co, tiny_body, NULL), 0);
                cr_assert_eq(pthread_create(&x.t, NULL, setter_main, &x), 0);
                cr_assert_eq(join_r(&t.co), 0);
                pthread_join(x.t, NULL);
                cr_assert_eq(t.res, k == K_EVENT ? 0 : 1, "%d workers, kind %d: %s", w, k,
                             coro_strerror((int)t.res));
                heap_empty(s, "huge", w);
            }
        }
        close(fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- cancel at every point: before the park, while parked, racing the timer ------------- */

static void spin_ns(int64_t ns)
{
    for (int64_t end = coro_now() + ns; coro_now() < end;)
        ;
}

Test(timers, cancel_at_every_point, .timeout = 30)
{
    static const int64_t delay[] = { 0, 1 * US, 5 * US, 20 * US, 50 * US, 100 * US };
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        coro_event_t ev;
        int fds[2];
        cr_assert_eq(coro_event_init(&ev), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        struct tiny t;
        int seen[3] = { 0, 0, 0 };  /* cancelled, timed out (or slept), other */
        for (int rep = 0; rep < 10; rep++) {
            for (unsigned d = 0; d < sizeof delay / sizeof delay[0]; d++) {
                for (int k = K_EVENT; k <= K_SLEEP; k++) {
                    /* the timeout about the cancel's time: either may win */
                    t = (struct tiny){ .k = (enum kind)k, .ns = delay[d] + 10 * US, .fd = fds[0],
                                       .ev = &ev };
                    cr_assert_eq(coro_spawn(s, &t.co, tiny_body, NULL), 0);
                    if (w > 0)
                        spin_ns(delay[d]);
                    int rc = coro_cancel(&t.co);
                    cr_assert_eq(rc, 0, "coro_cancel: %s", coro_strerror(rc));
                    intptr_t j = join_r(&t.co);
                    cr_assert(j == 0 || j == -ECANCELED, "join: %s", coro_strerror((int)j));
                    if (t.res == -ECANCELED || j == -ECANCELED)
                        seen[0]++;
                    else if (t.res == -ETIMEDOUT || (k == K_SLEEP && t.res == 0))
                        seen[1]++;
                    else
                        seen[2]++;
                    heap_empty(s, "cancel", w);
                }
            }
        }
        cr_assert_eq(seen[2], 0, "%d workers: %d waits ended otherwise", w, seen[2]);
        close(fds[0]);
        close(fds[1]);
        coro_sched_destroy(s);
    }
}

/* ---- many waits started and ended on different threads, the timers never firing -------- */

struct pinger {
    coro_t co;
    coro_event_t *mine, *theirs;
    int n;
    intptr_t err;
};

/* ping-pong through two events, each wait with a 10 s timeout that the
 * other side's set removes (a wait ended from another worker) */
static int pinger_body(coro_t *co)
{
    struct pinger *p = CORO_SELF(co, struct pinger);
    CORO_BEGIN(co);
    for (; p->n > 0; p->n--) {
        coro_event_set(p->theirs);
        CORO_AWAIT(co, coro_event_wait(p->mine, 10000 * MS));
        if (CORO_RESULT(co) != 0) {
            p->err = CORO_RESULT(co);
            break;
        }
        coro_event_reset(p->mine);
    }
    coro_event_set(p->theirs);
    CORO_END(co);
}

Test(timers, waits_ended_from_another_worker, .timeout = 30)
{
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        coro_event_t a, b;
        cr_assert_eq(coro_event_init(&a), 0);
        cr_assert_eq(coro_event_init(&b), 0);
        struct pinger p = { .mine = &a, .theirs = &b, .n = 2000 };
        struct pinger q = { .mine = &b, .theirs = &a, .n = 2000 };
        cr_assert_eq(coro_spawn(s, &p.co, pinger_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &q.co, pinger_body, NULL), 0);
        cr_assert_eq(join_r(&p.co), 0);
        cr_assert_eq(join_r(&q.co), 0);
        cr_assert_eq(p.err, 0, "%d workers: %s", w, coro_strerror((int)p.err));
        cr_assert_eq(q.err, 0, "%d workers: %s", w, coro_strerror((int)q.err));
        heap_empty(s, "ping-pong", w);
        coro_sched_destroy(s);
    }
}

/* ---- a sleep's cancel reads one heap entry ------------------------------------------------ */

#define NSLEEP 2000

struct sleeper {
    coro_t co;
    int64_t ns;
    intptr_t res;
};

static int sleeper_body(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(z->ns));
    z->res = CORO_RESULT(co);
    CORO_END(co);
}

struct canceller {
    coro_t co;
    struct sleeper *z;
    int order[NSLEEP];
    int ready, bad_rc, max_looks, still;   /* results, read after the join */
};

/* waits until every sleeper is suspended, then cancels them one at a time
 * in a shuffled order: each cancel reads one heap entry, and the sleepers
 * not yet cancelled stay suspended */
static int canceller_body(coro_t *co)
{
    struct canceller *c = CORO_SELF(co, struct canceller);
    struct coro__io *io = coro__sched_io(co->sched);
    CORO_BEGIN(co);
    for (;;) {
        c->ready = 0;
        for (int i = 0; i < NSLEEP; i++)
            c->ready += suspended(&c->z[i].co);
        if (c->ready == NSLEEP)
            break;
        CORO_YIELD(co);
    }
    for (int k = 0; k < NSLEEP; k++) {
        uint64_t before = coro__io_sleep_cancel_looks(io);
        if (coro_cancel(&c->z[c->order[k]].co) != 0)
            c->bad_rc++;
        int looks = (int)(coro__io_sleep_cancel_looks(io) - before);
        if (looks > c->max_looks)
            c->max_looks = looks;
        if (k + 1 < NSLEEP && !suspended(&c->z[c->order[k + 1]].co))
            c->still++;
    }
    CORO_END(co);
}

Test(timers, a_sleeps_cancel_reads_one_heap_entry_among_thousands, .timeout = 30)
{
    static struct sleeper z[NSLEEP];
    static struct canceller c;
    for (int w = 0; w <= 2; w++) {
        coro_sched_t *s = mk(w);
        memset(z, 0, sizeof z);
        memset(&c, 0, sizeof c);
        c.z = z;
        srand(29 + w);
        for (int i = 0; i < NSLEEP; i++) {
            /* distinct, far deadlines: the heap keeps moving them */
            z[i].ns = 3600LL * 1000 * MS + (int64_t)(rand() % 100000) * US;
            c.order[i] = i;
        }
        for (int i = NSLEEP - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = c.order[i];
            c.order[i] = c.order[j];
            c.order[j] = t;
        }
        for (int i = 0; i < NSLEEP; i++)
            cr_assert_eq(coro_spawn(s, &z[i].co, sleeper_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &c.co, canceller_body, NULL), 0);
        cr_assert_eq(join_r(&c.co), 0);
        for (int i = 0; i < NSLEEP; i++) {
            intptr_t j = join_r(&z[i].co);
            cr_assert(j == 0 || j == -ECANCELED, "%d workers: join: %s", w,
                      coro_strerror((int)j));
            cr_assert_eq(z[i].res, -ECANCELED, "%d workers, sleeper %d: %s", w, i,
                         coro_strerror((int)z[i].res));
        }
        cr_assert_eq(c.bad_rc, 0, "%d workers: coro_cancel failed %d times", w, c.bad_rc);
        cr_assert_eq(c.still, 0, "%d workers: %d sleepers woke before their cancel", w, c.still);
        cr_assert_leq(c.max_looks, 1, "%d workers: a cancel read %d heap entries", w,
                      c.max_looks);
        heap_empty(s, "sleep cancel", w);
        coro_sched_destroy(s);
    }
}

/* ---- the heap alone: order and handles through random pushes and removals ------------- */

#define NLIVE 3000

Test(timers, the_heap_keeps_order_and_handles_through_random_pushes_and_removals, .timeout = 20)
{
    coro_sched_t *s = mk(0);
    struct coro__heap h;
    static char job[NLIVE];             /* entry i names &job[i] */
    static uint32_t handle[NLIVE];
    static int64_t when[NLIVE];
    static bool live[NLIVE];
    struct coro__timer_record t;
    int nlive = 0;

    memset(live, 0, sizeof live);
    cr_assert_eq(coro__heap_init(&h, s, 0), 0);
    srand(2929);
    for (int step = 0; step < 60000; step++) {
        int i = rand() % NLIVE;
        if (!live[i]) {
            /* a push: few distinct deadlines, so that ties are common */
            t = (struct coro__timer_record){ .deadline = rand() % 500, .p = &job[i],
                                      .kind = CORO__TK_SLEEP };
            cr_assert_eq(coro__heap_push(&h, &t), 0);
            handle[i] = t.h;
            when[i] = t.deadline;
            live[i] = true;
            nlive++;
        } else if (rand() % 3) {
            /* a removal from the middle, through the handle */
            cr_assert_not_null(coro__heap_get(&h, handle[i], &job[i]),
                               "step %d: a live timer's handle found nothing", step);
            coro__heap_del(&h, handle[i], &t);
            cr_assert_eq(t.p, &job[i]);
            cr_assert_eq(t.deadline, when[i]);
            cr_assert_null(coro__heap_get(&h, handle[i], &job[i]),
                           "step %d: a removed timer's handle still finds it", step);
            live[i] = false;
            nlive--;
        } else {
            /* a pop: the earliest of the live ones */
            int64_t min = INT64_MAX;
            for (int k = 0; k < NLIVE; k++)
                if (live[k] && when[k] < min)
                    min = when[k];
            cr_assert_eq(coro__heap_next(&h), min);
            coro__heap_pop(&h, &t);
            cr_assert_eq(t.deadline, min, "step %d: popped %lld, the earliest is %lld", step,
                         (long long)t.deadline, (long long)min);
            int k = (int)((char *)t.p - job);
            cr_assert(live[k]);
            live[k] = false;
            nlive--;
        }
        cr_assert_eq(coro__heap_count(&h), (uint32_t)nlive);
        /* removed timers stay as marks, never more than the live ones
         * plus the slack before a rebuild */
        cr_assert_leq(h.dead, (uint32_t)nlive + 33);
    }
    coro__heap_fini(&h);
    coro_sched_destroy(s);
}
