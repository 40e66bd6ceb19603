/* SPDX-License-Identifier: MIT */
/* Scenario: one channel shared by producer jobs, consumer jobs, a producer
 * thread and a consumer thread, a small buffer, then close; across 1/2/4/8
 * workers.  Checks every item is received exactly once and close wakes
 * everyone. */
#include <pthread.h>
#include "scenario.h"

enum { P = 3, C = 3 };

struct ctx {
    coro_chan_t ch;
    unsigned char *seen;
    long per;           /* items per producer (jobs and the thread) */
    long got;           /* atomic */
};

struct prod {
    coro_t co;
    struct ctx *x;
    long i, base;
};

static int prod_body(coro_t *co)
{
    struct prod *f = CORO_SELF(co, struct prod);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->x->per; f->i++) {
        CORO_AWAIT(co, coro_chan_send(&f->x->ch, (void *)(intptr_t)(f->base + f->i + 1),
                                      CORO_FOREVER));
        SCEN_CHECK(CORO_RESULT(co) == 0, "send: %s", coro_err_name((int)CORO_RESULT(co)));
    }
    CORO_END(co);
}

static void take(struct ctx *x, void *item)
{
    long v = (long)(intptr_t)item - 1;
    SCEN_CHECK(__atomic_add_fetch(&x->seen[v], 1, __ATOMIC_RELAXED) == 1, "item %ld twice", v);
    __atomic_add_fetch(&x->got, 1, __ATOMIC_RELAXED);
}

struct cons {
    coro_t co;
    struct ctx *x;
    void *item;
};

static int cons_body(coro_t *co)
{
    struct cons *f = CORO_SELF(co, struct cons);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(&f->x->ch, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) == -EPIPE)
            break;
        SCEN_CHECK(CORO_RESULT(co) == 0, "recv: %s", coro_err_name((int)CORO_RESULT(co)));
        take(f->x, f->item);
    }
    CORO_END(co);
}

static void *thread_prod(void *arg)
{
    struct ctx *x = arg;
    for (long i = 0; i < x->per; i++)
        SCEN_CHECK(coro_chan_send_blocking(&x->ch, (void *)(intptr_t)(P * x->per + i + 1),
                                           CORO_FOREVER) == 0, "thread send");
    return NULL;
}

static void *thread_cons(void *arg)
{
    struct ctx *x = arg;
    void *item;
    int rc;
    while ((rc = coro_chan_recv_blocking(&x->ch, &item, CORO_FOREVER)) == 0)
        take(x, item);
    SCEN_CHECK(rc == -EPIPE, "thread recv: %s", coro_err_name(rc));
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long per = SCEN_N(mode, 20000, 20000, 500000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct ctx x = { .per = per };
        struct prod p[P] = { 0 };
        struct cons c[C] = { 0 };
        pthread_t tp, tc;
        long total = (P + 1) * per;

        x.seen = calloc(total, 1);
        SCEN_CHECK(coro_chan_init_alloc(&x.ch, 4, NULL) == 0, "init");
        for (int i = 0; i < C; i++) {
            c[i].x = &x;
            SCEN_CHECK(coro_spawn(s, &c[i].co, cons_body, NULL) == 0, "spawn");
        }
        for (int i = 0; i < P; i++) {
            p[i].x = &x;
            p[i].base = i * per;
            SCEN_CHECK(coro_spawn(s, &p[i].co, prod_body, NULL) == 0, "spawn");
        }
        pthread_create(&tp, NULL, thread_prod, &x);
        pthread_create(&tc, NULL, thread_cons, &x);
        for (int i = 0; i < P; i++)
            SCEN_CHECK(join_r(&p[i].co) == 0, "producer");
        pthread_join(tp, NULL);
        SCEN_CHECK(coro_chan_close(&x.ch) == 0, "close");
        for (int i = 0; i < C; i++)
            SCEN_CHECK(join_r(&c[i].co) == 0, "consumer");
        pthread_join(tc, NULL);
        SCEN_CHECK(x.got == total, "%d workers: got %ld of %ld", scen_workers[k], x.got, total);
        SCEN_CHECK(coro_chan_destroy(&x.ch) == 0, "destroy");
        free(x.seen);
        coro_sched_destroy(s);
    }
    return 0;
}
