/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: random sequences of API operations on a
 * single-threaded scheduler (workers = 0, so a run is reproducible).
 *
 * The input is a driver script of two-byte operations: spawn a job (into
 * one of NJ frames, reused at the same address: stale timers would show)
 * whose body is the next bytes of the input, interpreted as awaits (sleep,
 * event, mutex, semaphore, channel send/recv, wait group, select over a
 * channel, an event, a socket, a job's end and a timer, read/write on a
 * socketpair, coro_done, yield); set/reset an event, close the channel,
 * coro_cancel a job, coro_group_cancel, run the scheduler.  At the end the
 * scheduler is shut down with CORO_CANCEL and destroyed.
 *
 * Oracle: every await's result is one its contract allows (abort
 * otherwise), every job has finished after the shutdown, and
 * AddressSanitizer / UndefinedBehaviorSanitizer / LeakSanitizer watch the
 * rest.  Waits on sockets and sleeps are bounded (at most 200 us) so that
 * coro_sched_run, which waits for timers and fds, always returns. */
#include <corokit.h>
#include "../join_r.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NJ 6
#define US 1000LL

struct world {
    coro_sched_t *s;
    coro_event_t ev[2];
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t ch;
    void *chbuf[2];
    coro_waitgroup_t wg;
    coro_group_t g;
    int sv[2];
    int closed;
};

struct fjob {
    coro_t co;
    struct world *w;
    const uint8_t *prog;
    size_t len, pc;
    uint8_t op, arg;
    int id;
    coro_select_t *sel;         /* 2 KiB: on the heap, made once */
    void *item;
    char buf[16];
};

static struct fjob jobs[NJ];
static int live[NJ];    /* spawned, on_exit not yet run: the frame is the job's */

static void on_exit_fn(coro_t *co)
{
    live[CORO_SELF(co, struct fjob)->id] = 0;
}

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_api: %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* a wait's timeout from a byte: 0, 1 us, 50 us, 200 us, or none where the
 * wait cannot keep coro_sched_run waiting (lot waits only) */
static int64_t tmo(uint8_t b, int forever_ok)
{
    switch (b & 3) {
    case 0: return 0;
    case 1: return 1 * US / 1000 + 1;
    case 2: return 50 * US;
    default: return forever_ok ? CORO_FOREVER : 200 * US;
    }
}

static int ok_wait(intptr_t r)
{
    return r == 0 || r == -ETIMEDOUT || r == -ECANCELED;
}

static int job_body(coro_t *co)
{
    struct fjob *f = CORO_SELF(co, struct fjob);
    struct world *w = f->w;
    CORO_BEGIN(co);
    while (f->pc + 1 < f->len) {
        f->op = f->prog[f->pc++];
        f->arg = f->prog[f->pc++];
        switch (f->op % 16) {
        case 0:
            CORO_AWAIT(co, coro_sleep(tmo(f->arg, 0)));
            CHECK(ok_wait(CORO_RESULT(co)));
            break;
        case 1:
            CORO_AWAIT(co, coro_event_wait(&w->ev[f->arg & 1], tmo(f->arg >> 1, 1)));
            CHECK(ok_wait(CORO_RESULT(co)));
            break;
        case 2:
            coro_event_set(&w->ev[f->arg & 1]);
            break;
        case 3:
            CORO_AWAIT(co, coro_mutex_lock(&w->m, tmo(f->arg, 1)));
            CHECK(ok_wait(CORO_RESULT(co)));
            if (CORO_RESULT(co) == 0) {
                CORO_YIELD(co);
                CHECK(coro_mutex_unlock(&w->m) == 0);
            }
            break;
        case 4:
            CORO_AWAIT(co, coro_sem_acquire(&w->sem, tmo(f->arg, 1)));
            CHECK(ok_wait(CORO_RESULT(co)));
            break;
        case 5:
            CHECK(coro_sem_release(&w->sem, f->arg & 3) >= 0);
            break;
        case 6:
            CORO_AWAIT(co, coro_chan_send(&w->ch, (void *)(uintptr_t)(f->id + 1),
                                          tmo(f->arg, 1)));
            CHECK(ok_wait(CORO_RESULT(co)) || CORO_RESULT(co) == -EPIPE);
            break;
        case 7:
            CORO_AWAIT(co, coro_chan_recv(&w->ch, &f->item, tmo(f->arg, 1)));
            CHECK(ok_wait(CORO_RESULT(co)) || CORO_RESULT(co) == -EPIPE);
            if (CORO_RESULT(co) == 0)
                CHECK((uintptr_t)f->item >= 1 && (uintptr_t)f->item <= NJ);
            break;
        case 8:
            CHECK(coro_waitgroup_add(&w->wg, (f->arg & 1) ? 1 : -1) >= -EINVAL);
            break;
        case 9:
            CORO_AWAIT(co, coro_waitgroup_wait(&w->wg, tmo(f->arg, 1)));
            CHECK(ok_wait(CORO_RESULT(co)));
            break;
        case 10:
            /* a select over a channel, an event, the socket, a job's end
             * and a timer that bounds it (the socket keeps run waiting) */
            coro_select_init(f->sel);
            CHECK(coro_select_recv(f->sel, &w->ch, &f->item) == 0);
            CHECK(coro_select_event(f->sel, &w->ev[f->arg & 1]) == 1);
            CHECK(coro_select_readable(f->sel, NULL, w->sv[0]) == 2);
            CHECK(coro_select_timer(f->sel, coro_now() + 100 * US) == 3);
            if (jobs[(f->arg >> 1) % NJ].co.fn)
                (void)coro_select_done(f->sel, &jobs[(f->arg >> 1) % NJ].co);
            CORO_SELECT(co, f->sel, tmo(f->arg >> 4, 0) ? tmo(f->arg >> 4, 0) : CORO_FOREVER);
            CHECK((CORO_RESULT(co) >= 0 && CORO_RESULT(co) <= 4) ||
                  CORO_RESULT(co) == -ETIMEDOUT || CORO_RESULT(co) == -ECANCELED);
            break;
        case 11:
            CORO_AWAIT(co, coro_write(w->sv[1 - (f->arg & 1)], "abcdefgh", (f->arg >> 1) % 9,
                                      tmo(f->arg >> 5, 0)));
            CHECK(CORO_RESULT(co) >= 0 || ok_wait(CORO_RESULT(co)) ||
                  CORO_RESULT(co) == -EBADF || CORO_RESULT(co) == -EBUSY ||
                  CORO_RESULT(co) == -EPIPE);
            break;
        case 12:
            CORO_AWAIT(co, coro_read(w->sv[f->arg & 1], f->buf, sizeof f->buf,
                                     tmo(f->arg >> 1, 0)));
            CHECK(CORO_RESULT(co) >= 0 || ok_wait(CORO_RESULT(co)) ||
                  CORO_RESULT(co) == -EBADF || CORO_RESULT(co) == -EBUSY);
            break;
        case 13:
            if (&jobs[f->arg % NJ] != f && jobs[f->arg % NJ].co.fn) {
                CORO_AWAIT(co, coro_done(&jobs[f->arg % NJ].co));
                /* a job's own result (0 here), or the await's error
                 * (-ETIMEDOUT: this job's .deadline) */
                CHECK(CORO_RESULT(co) == 0 || ok_wait(CORO_RESULT(co)) ||
                      CORO_RESULT(co) == -EINVAL);
            }
            break;
        case 14:
            CORO_YIELD(co);
            break;
        default:
            CORO_AWAIT(co, coro_group_wait(&w->g, tmo(f->arg, 0)));
            CHECK(ok_wait(CORO_RESULT(co)) || CORO_RESULT(co) == -EDEADLK);
            break;
        }
    }
    CORO_END(co);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct world w;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    memset(&w, 0, sizeof w);
    c.workers = 0;
    if (coro_sched_create(&w.s, &c) != 0)
        return 0;
    coro_event_init(&w.ev[0]);
    coro_event_init(&w.ev[1]);
    coro_mutex_init(&w.m);
    coro_sem_init(&w.sem, 1);
    coro_chan_init(&w.ch, w.chbuf, 2);
    coro_waitgroup_init(&w.wg);
    coro_group_init(&w.g);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, w.sv) < 0)
        abort();
    memset(jobs, 0, sizeof jobs);
    memset(live, 0, sizeof live);
    for (int i = 0; i < NJ; i++) {
        jobs[i].sel = malloc(sizeof *jobs[i].sel);
        if (!jobs[i].sel)
            abort();
    }

    size_t i = 0;
    while (i + 1 < size) {
        uint8_t op = data[i++], arg = data[i++];
        struct fjob *f = &jobs[arg % NJ];
        switch (op % 8) {
        case 0: {       /* spawn: the next (arg >> 3) * 2 bytes are its body */
            size_t len = (size_t)(arg >> 3) * 2;
            if (len > size - i)
                len = size - i;
            if (live[arg % NJ]) {
                /* a live frame is the job's: spawning it again is refused
                 * and touches nothing */
                CHECK(coro_spawn(w.s, &f->co, job_body, NULL) == -EBUSY);
                i += len;
                break;
            }
            coro_select_t *sel = f->sel;
            memset(f, 0, sizeof *f);
            f->sel = sel;
            f->w = &w;
            f->prog = data + i;
            f->len = len;
            f->id = (int)(arg % NJ);
            coro_spawn_opts_t o = { .on_exit = on_exit_fn,
                                    .group = (op & 8) ? &w.g : NULL,
                                    .priority = (int)(op >> 4) % 3 - 1,
                                    .deadline = (op & 64) ? coro_now() + 100 * US : 0 };
            int rc = coro_spawn(w.s, &f->co, job_body, &o);
            CHECK(rc == 0 || rc == -ENOMEM);
            live[arg % NJ] = rc == 0;
            i += len;
            break;
        }
        case 1:
            coro_event_set(&w.ev[arg & 1]);
            break;
        case 2:
            coro_event_reset(&w.ev[arg & 1]);
            break;
        case 3:
            if (!w.closed) {
                CHECK(coro_chan_close(&w.ch) == 0);
                w.closed = 1;
            } else {
                CHECK(coro_chan_close(&w.ch) == 0);     /* a second close */
            }
            break;
        case 4:
            CHECK(coro_cancel(&f->co) == 0 || !f->co.fn);
            break;
        case 5:
            CHECK(coro_group_cancel(&w.g) >= 0);
            break;
        case 6: {
            char b[4];
            if (read(w.sv[arg & 1], b, sizeof b) < 0) { /* plain thread side: may be empty */ }
            break;
        }
        default:
            CHECK(coro_sched_run(w.s) >= 0);
            break;
        }
    }
    CHECK(coro_sched_shutdown(w.s, CORO_CANCEL) == 0);
    for (int k = 0; k < NJ; k++)
        if (jobs[k].co.fn)
            CHECK(join_r(&jobs[k].co) >= -EINVAL);      /* finished: returns at once */
    for (int k = 0; k < NJ; k++)
        CHECK(!live[k]);        /* every job finished, its on_exit ran */
    CHECK(coro_group_wait_blocking(&w.g, 0) == 0);
    coro_close(w.s, w.sv[0]);
    coro_close(w.s, w.sv[1]);
    CHECK(coro_sched_destroy(w.s) == 0);
    CHECK(coro_group_destroy(&w.g) == 0);
    CHECK(coro_chan_destroy(&w.ch) == 0);
    CHECK(coro_mutex_destroy(&w.m) == 0);
    CHECK(coro_sem_destroy(&w.sem) == 0);
    CHECK(coro_event_destroy(&w.ev[0]) == 0);
    CHECK(coro_event_destroy(&w.ev[1]) == 0);
    for (int k = 0; k < NJ; k++)
        free(jobs[k].sel);
    return 0;
}
