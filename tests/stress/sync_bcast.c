/* SPDX-License-Identifier: MIT */
/* Scenario: a coro_bcast_t with a small ring, two sender threads and a
 * sender job, receiver jobs and a receiver thread; receivers that fall
 * behind are told so.  Each receiver checks every sender's items come in
 * order and that what it received plus what it was told it missed is
 * everything sent; across 1/2/4/8 workers. */
#include <pthread.h>
#include "scenario.h"

enum { SENDERS = 3, RJOBS = 6, RING = 8 };

struct ctx {
    coro_bcast_t bc;
    void *ring[RING];
    long per_sender;
    int senders_left;   /* atomic: the last sender closes */
};

/* item: sender in the low 2 bits, index + 1 above */
static void *item_of(int sender, long i)
{
    return (void *)(intptr_t)(((i + 1) << 2) | sender);
}

static void sent_one_more(struct ctx *x)
{
    if (__atomic_sub_fetch(&x->senders_left, 1, __ATOMIC_ACQ_REL) == 0)
        SCEN_CHECK(coro_bcast_close(&x->bc) == 0, "close");
}

struct tally {
    long next[SENDERS];     /* each sender's next index, at least */
    long got, missed;
};

/* one result of a receive: an item (in order per sender) or a lag report */
static void tally_one(struct tally *t, coro_bcast_rx_t *rx, int rc, void *item)
{
    if (rc == -EOVERFLOW) {
        long m = (long)coro_bcast_missed(rx);
        SCEN_CHECK(m > 0, "a lag report of %ld", m);
        t->missed += m;
        return;
    }
    SCEN_CHECK(rc == 0, "receive: %d", rc);
    int from = (int)((intptr_t)item & 3);
    long idx = ((intptr_t)item >> 2) - 1;
    SCEN_CHECK(from < SENDERS && idx >= t->next[from], "out of order");
    t->next[from] = idx + 1;
    t->got++;
}

struct rjob {
    coro_t co;
    struct ctx *x;
    coro_bcast_rx_t rx;
    struct tally t;
    void *item;
};

static int rjob_body(coro_t *co)
{
    struct rjob *f = CORO_SELF(co, struct rjob);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_bcast_recv(&f->rx, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) == -EPIPE)
            break;
        tally_one(&f->t, &f->rx, (int)CORO_RESULT(co), f->item);
        if (f->t.got % 5 == 0)
            CORO_YIELD(co);     /* fall behind now and then */
    }
    CORO_END(co);
}

struct sjob {
    coro_t co;
    struct ctx *x;
    long i;
};

static int sjob_body(coro_t *co)
{
    struct sjob *f = CORO_SELF(co, struct sjob);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->x->per_sender; f->i++) {
        SCEN_CHECK(coro_bcast_send(&f->x->bc, item_of(2, f->i)) >= 0, "job send");
        if (f->i % 16 == 0)
            CORO_YIELD(co);
    }
    sent_one_more(f->x);
    CORO_END(co);
}

struct tsend { struct ctx *x; int id; };

static void *thread_send(void *arg)
{
    struct tsend *t = arg;
    for (long i = 0; i < t->x->per_sender; i++)
        SCEN_CHECK(coro_bcast_send(&t->x->bc, item_of(t->id, i)) >= 0, "thread send");
    sent_one_more(t->x);
    return NULL;
}

struct trecv { struct ctx *x; coro_bcast_rx_t rx; struct tally t; };

static void *thread_recv(void *arg)
{
    struct trecv *r = arg;
    void *item;
    int rc;
    while ((rc = coro_bcast_recv_blocking(&r->rx, &item, CORO_FOREVER)) != -EPIPE)
        tally_one(&r->t, &r->rx, rc, item);
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long n = SCEN_N(mode, 2000, 2000, 200000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct ctx x = { .per_sender = n, .senders_left = SENDERS };
        struct rjob *r = calloc(RJOBS, sizeof *r);
        struct sjob sj = { .x = &x };
        struct tsend ts[2] = { { &x, 0 }, { &x, 1 } };
        struct trecv tr = { .x = &x };
        pthread_t st[2], rt;

        coro_bcast_init(&x.bc, x.ring, RING);
        for (int i = 0; i < RJOBS; i++) {
            r[i].x = &x;
            SCEN_CHECK(coro_bcast_subscribe(&x.bc, &r[i].rx) == 0, "subscribe");
            SCEN_CHECK(coro_spawn(s, &r[i].co, rjob_body, NULL) == 0, "spawn");
        }
        SCEN_CHECK(coro_bcast_subscribe(&x.bc, &tr.rx) == 0, "subscribe");
        pthread_create(&rt, NULL, thread_recv, &tr);
        SCEN_CHECK(coro_spawn(s, &sj.co, sjob_body, NULL) == 0, "spawn");
        for (int i = 0; i < 2; i++)
            pthread_create(&st[i], NULL, thread_send, &ts[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(st[i], NULL);
        join_r(&sj.co);
        pthread_join(rt, NULL);
        SCEN_CHECK(tr.t.got + tr.t.missed == SENDERS * n, "thread: %ld + %ld", tr.t.got,
                   tr.t.missed);
        for (int i = 0; i < RJOBS; i++) {
            join_r(&r[i].co);
            SCEN_CHECK(r[i].t.got + r[i].t.missed == SENDERS * n, "%d workers, job %d: %ld + %ld",
                       scen_workers[k], i, r[i].t.got, r[i].t.missed);
            SCEN_CHECK(coro_bcast_unsubscribe(&r[i].rx) == 0, "unsubscribe");
        }
        SCEN_CHECK(coro_bcast_unsubscribe(&tr.rx) == 0, "unsubscribe");
        SCEN_CHECK(coro_bcast_destroy(&x.bc) == 0, "destroy");
        free(r);
        coro_sched_destroy(s);
    }
    return 0;
}
