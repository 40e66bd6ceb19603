/* SPDX-License-Identifier: MIT */
/* Scenario: select branches in fd slots race the pollers.  Per round, a
 * job selects in a loop over readable(socket), receive(channel), a timer
 * branch a few ms ahead and a stop event; on readable it reads what is
 * there, on an item it counts it, on the timer it moves the timer.  A plain
 * thread writes bytes and another sends items meanwhile; in every other
 * round a third thread cancels the job at a random point.  Afterwards:
 * bytes read + bytes left in the socket == bytes written, items taken +
 * items left in the channel == items sent (an unchosen or withdrawn branch
 * takes nothing), the job always ends, and the fd's slot is free again (a
 * coro_read on it completes).  Across 1/2/4/8 workers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>
#include "scenario.h"

#define MS 1000000LL

struct ctx {
    int sv[2];
    coro_chan_t ch;
    coro_event_t stop;
    long bytes, items;      /* to write / to send */
    long nbytes, nitems;    /* taken by the job */
    long drained;           /* read by the writer itself after a cancel */
    int job_over;           /* atomic: the job has ended */
};

static void drain_into(struct ctx *x)
{
    char buf[4096];
    ssize_t r;
    while ((r = read(x->sv[0], buf, sizeof buf)) > 0)
        x->drained += r;
}

struct sel_job {
    coro_t co;
    struct ctx *x;
    coro_select_t sel;
    int tick;
    void *item;
    char buf[256];
    long ticks;
};

static int sel_body(coro_t *co)
{
    struct sel_job *f = CORO_SELF(co, struct sel_job);
    CORO_BEGIN(co);
    coro_select_init(&f->sel);
    coro_select_readable(&f->sel, NULL, f->x->sv[0]);     /* 0 */
    coro_select_recv(&f->sel, &f->x->ch, &f->item);       /* 1 */
    f->tick = coro_select_timer(&f->sel, coro_now() + 2 * MS);  /* 2 */
    coro_select_event(&f->sel, &f->x->stop);              /* 3 */
    for (;;) {
        CORO_SELECT(co, &f->sel, CORO_FOREVER);
        if (CORO_RESULT(co) == 0) {
            SCEN_CHECK(coro_select_result(&f->sel, 0) == 0, "readable: %ld",
                       (long)coro_select_result(&f->sel, 0));
            CORO_AWAIT(co, coro_read(f->x->sv[0], f->buf, sizeof f->buf, 0));
            if (CORO_RESULT(co) > 0)
                f->x->nbytes += CORO_RESULT(co);
            else if (CORO_RESULT(co) != -ETIMEDOUT)
                break;      /* -ECANCELED */
        } else if (CORO_RESULT(co) == 1) {
            f->x->nitems++;
        } else if (CORO_RESULT(co) == 2) {
            f->ticks++;
            coro_select_set_timer(&f->sel, f->tick, coro_now() + 2 * MS);
        } else {
            SCEN_CHECK(CORO_RESULT(co) == 3 || CORO_RESULT(co) == -ECANCELED, "select: %ld",
                       (long)CORO_RESULT(co));
            break;
        }
    }
    __atomic_store_n(&f->x->job_over, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

/* small writes (each one an edge); a full socket buffer (unix sockets
 * count each write's overhead) waits for the reader */
static void *writer(void *arg)
{
    struct ctx *x = arg;
    for (long i = 0; i < x->bytes;) {
        long n = x->bytes - i < 7 ? x->bytes - i : 7;
        ssize_t w = write(x->sv[1], "abcdefg", (size_t)n);
        if (w < 0 && errno == EAGAIN) {
            if (__atomic_load_n(&x->job_over, __ATOMIC_ACQUIRE))
                drain_into(x);      /* the job was cancelled: nobody reads */
            sched_yield();
            continue;
        }
        SCEN_CHECK(w > 0, "write: %s", strerror(errno));
        i += w;
        if ((i & 63) == 0)
            sched_yield();
    }
    return NULL;
}

static void *sender(void *arg)
{
    struct ctx *x = arg;
    for (long i = 0; i < x->items; i++) {
        SCEN_CHECK(coro_chan_try_send(&x->ch, (void *)(intptr_t)(i + 1)) == 0, "send");
        if ((i & 7) == 0)
            sched_yield();
    }
    return NULL;
}

struct canceller { coro_t *co; unsigned spins; };

static void *cancel_main(void *arg)
{
    struct canceller *c = arg;
    for (volatile unsigned i = 0; i < c->spins; i++)
        ;
    SCEN_CHECK(coro_cancel(c->co) == 0, "cancel");
    return NULL;
}

struct reader { coro_t co; int fd; char c; intptr_t rc; };

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(r->fd, &r->c, 1, 10000 * MS));
    r->rc = CORO_RESULT(co);
    CORO_END(co);
}

static long drain(int fd)
{
    char buf[4096];
    long n = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        n += r;
    return n;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 40, 200, 4000);
    unsigned seed = 12345;
    long tot_bytes = 0, tot_items = 0, tot_ticks = 0;

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        for (int r = 0; r < rounds; r++) {
            struct ctx x = { .bytes = 2000, .items = 200 };
            struct sel_job *f = calloc(1, sizeof *f);
            pthread_t tw, ts, tc;
            struct canceller c;
            void *item;
            SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, x.sv) == 0, "pair");
            SCEN_CHECK(coro_chan_init_alloc(&x.ch, 256, NULL) == 0, "chan");
            coro_event_init(&x.stop);
            f->x = &x;
            SCEN_CHECK(coro_spawn(s, &f->co, sel_body, NULL) == 0, "spawn");
            pthread_create(&tw, NULL, writer, &x);
            pthread_create(&ts, NULL, sender, &x);
            bool cancel = r & 1;
            if (cancel) {
                seed = seed * 1103515245u + 12345u;
                c = (struct canceller){ &f->co, (seed >> 8) % 200000 };
                pthread_create(&tc, NULL, cancel_main, &c);
            }
            pthread_join(tw, NULL);
            pthread_join(ts, NULL);
            if (cancel)
                pthread_join(tc, NULL);
            coro_event_set(&x.stop);
            SCEN_CHECK(join_r(&f->co) == 0, "join");
            long left_bytes = drain(x.sv[0]) + x.drained;
            long left_items = 0;
            while (coro_chan_try_recv(&x.ch, &item) == 0)
                left_items++;
            SCEN_CHECK(x.nbytes + left_bytes == x.bytes, "%d workers, round %d: bytes %ld + %ld "
                       "!= %ld", scen_workers[k], r, x.nbytes, left_bytes, x.bytes);
            SCEN_CHECK(x.nitems + left_items == x.items, "%d workers, round %d: items %ld + %ld "
                       "!= %ld", scen_workers[k], r, x.nitems, left_items, x.items);
            /* the slot is free: a plain read waits there and completes */
            struct reader rd = { .fd = x.sv[0] };
            SCEN_CHECK(coro_spawn(s, &rd.co, reader_body, NULL) == 0, "spawn reader");
            SCEN_CHECK(write(x.sv[1], "z", 1) == 1, "write");
            SCEN_CHECK(join_r(&rd.co) == 0 && rd.rc == 1, "round %d: the slot stayed taken: %ld",
                       r, (long)rd.rc);
            SCEN_CHECK(coro_chan_destroy(&x.ch) == 0, "a stand-in left on the channel");
            coro_event_destroy(&x.stop);
            coro_close(s, x.sv[0]);
            coro_close(s, x.sv[1]);
            tot_bytes += x.nbytes;
            tot_items += x.nitems;
            tot_ticks += f->ticks;
            free(f);
        }
        coro_sched_destroy(s);
    }
    printf("select_fd: the selects took %ld bytes, %ld items, %ld ticks\n", tot_bytes, tot_items,
           tot_ticks);
    SCEN_CHECK(tot_bytes > 0 && tot_items > 0, "the fd and channel branches were never chosen");
    return 0;
}
