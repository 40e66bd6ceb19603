/* SPDX-License-Identifier: MIT */
/* (written independently of lib/sync/select.c, from issue 12's contract) */
/* Scenario: selectors, each over its own socket (readable), a shared
 * channel (recv), a quit event and a far timer, race a thread that writes
 * one byte at a time to every socket, a producer that feeds the channel,
 * and a canceller that coro_cancel()s every third selector midway.
 * Across 1/2/4/8 workers.  Checks that nothing is lost or taken twice:
 * every item is received exactly once or left in the channel, and bytes
 * read + bytes left in each socket == bytes written; that a readable
 * branch consumed no readiness (a selector reads only after choosing it,
 * with a non-blocking read that must find its byte); and that cancel and
 * quit end every selector. */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include "scenario.h"

enum { NSEL = 6 };

struct ctx {
    coro_chan_t ch;
    void *buf[8];
    coro_event_t quit;
    unsigned char *seen;
    long items, bytes_per;
    int sp[NSEL][2];
    long bytes_read[NSEL];      /* atomic */
    long written[NSEL];         /* the writer's (a full socket refuses some) */
    long got;                   /* atomic */
};

struct selector {
    coro_t co;
    struct ctx *x;
    int idx;
    coro_select_t sel;
    void *item;
    char c;
};

static int selector_body(coro_t *co)
{
    struct selector *f = CORO_SELF(co, struct selector);
    CORO_BEGIN(co);
    coro_select_init(&f->sel);
    coro_select_readable(&f->sel, NULL, f->x->sp[f->idx][0]);         /* 0 */
    coro_select_recv(&f->sel, &f->x->ch, &f->item);             /* 1 */
    coro_select_event(&f->sel, &f->x->quit);                    /* 2 */
    coro_select_timer(&f->sel, coro_now() + 3600ll * 1000000000ll);  /* 3 */
    for (;;) {
        CORO_SELECT(co, &f->sel, CORO_FOREVER);
        if (CORO_RESULT(co) == 0) {
            SCEN_CHECK(coro_select_result(&f->sel, 0) == 0, "readable: %ld",
                       (long)coro_select_result(&f->sel, 0));
            ssize_t n = read(f->x->sp[f->idx][0], &f->c, 1);
            /* chosen => readable and nobody else reads this socket */
            SCEN_CHECK(n == 1, "select said readable, read gave %zd", n);
            __atomic_add_fetch(&f->x->bytes_read[f->idx], 1, __ATOMIC_RELAXED);
        } else if (CORO_RESULT(co) == 1) {
            if (coro_select_result(&f->sel, 1) < 0)
                break;      /* closed */
            long v = (long)(intptr_t)f->item - 1;
            SCEN_CHECK(__atomic_add_fetch(&f->x->seen[v], 1, __ATOMIC_RELAXED) == 1,
                       "item %ld twice", v);
            __atomic_add_fetch(&f->x->got, 1, __ATOMIC_RELAXED);
        } else if (CORO_RESULT(co) == 2) {
            break;
        } else {
            SCEN_CHECK(CORO_RESULT(co) == -ECANCELED, "select: %ld", (long)CORO_RESULT(co));
            break;
        }
    }
    CORO_END(co);
}

struct run {
    struct ctx *x;
    struct selector *sel;
};

static void *writer(void *arg)
{
    struct ctx *x = arg;
    for (long i = 0; i < x->bytes_per; i++)
        for (int k = 0; k < NSEL; k++) {
            ssize_t n = write(x->sp[k][1], "b", 1);
            SCEN_CHECK(n == 1 || errno == EAGAIN, "write: %zd", n);
            x->written[k] += n == 1;
        }
    return NULL;
}

static void *producer(void *arg)
{
    struct ctx *x = arg;
    for (long i = 0; i < x->items; i++) {
        int rc = coro_chan_send_blocking(&x->ch, (void *)(intptr_t)(i + 1), CORO_FOREVER);
        SCEN_CHECK(rc == 0, "send: %d", rc);
    }
    return NULL;
}

static void *canceller(void *arg)
{
    struct run *r = arg;
    /* midway: once a third of the items went through */
    while (__atomic_load_n(&r->x->got, __ATOMIC_RELAXED) < r->x->items / 3)
        sched_yield();
    for (int k = 0; k < NSEL; k += 3)
        SCEN_CHECK(coro_cancel(&r->sel[k].co) == 0, "cancel");
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 2, 6, 40);

    for (int wi = 0; wi < SCEN_NWORKERS; wi++) {
        for (int round = 0; round < rounds; round++) {
            static struct ctx x;
            static struct selector sel[NSEL];
            coro_sched_t *s = scen_sched(scen_workers[wi]);
            pthread_t tw, tp, tc;
            struct run r = { &x, sel };

            memset(&x, 0, sizeof x);
            memset(sel, 0, sizeof sel);
            x.items = SCEN_N(mode, 2000, 10000, 50000);
            x.bytes_per = SCEN_N(mode, 200, 1000, 5000);
            x.seen = calloc((size_t)x.items, 1);
            SCEN_CHECK(coro_chan_init(&x.ch, x.buf, 8) == 0, "chan");
            coro_event_init(&x.quit);
            for (int k = 0; k < NSEL; k++) {
                SCEN_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, x.sp[k]) == 0,
                           "socketpair");
                sel[k].x = &x;
                sel[k].idx = k;
                SCEN_CHECK(coro_spawn(s, &sel[k].co, selector_body, NULL) == 0, "spawn");
            }
            pthread_create(&tw, NULL, writer, &x);
            pthread_create(&tp, NULL, producer, &x);
            pthread_create(&tc, NULL, canceller, &r);
            pthread_join(tw, NULL);
            pthread_join(tp, NULL);
            pthread_join(tc, NULL);
            coro_event_set(&x.quit);
            for (int k = 0; k < NSEL; k++)
                SCEN_CHECK(join_r(&sel[k].co) == 0, "join");

            /* items: received once, or still in the channel */
            void *it;
            long left = 0;
            while (coro_chan_try_recv(&x.ch, &it) == 0) {
                long v = (long)(intptr_t)it - 1;
                SCEN_CHECK(++x.seen[v] == 1, "item %ld received and left", v);
                left++;
            }
            SCEN_CHECK(x.got + left == x.items, "items: %ld got + %ld left != %ld", x.got, left,
                       x.items);
            /* bytes: read + left == written */
            for (int k = 0; k < NSEL; k++) {
                char b[4096];
                long rest = 0;
                ssize_t n;
                while ((n = read(x.sp[k][0], b, sizeof b)) > 0)
                    rest += n;
                SCEN_CHECK(x.bytes_read[k] + rest == x.written[k],
                           "socket %d: %ld read + %ld left != %ld", k, x.bytes_read[k], rest,
                           x.written[k]);
                close(x.sp[k][0]);
                close(x.sp[k][1]);
            }
            free(x.seen);
            SCEN_CHECK(coro_sched_shutdown(s, CORO_DRAIN) == 0, "shutdown");
            SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
        }
    }
    printf("select_all: ok\n");
    return 0;
}
