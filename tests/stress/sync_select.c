/* SPDX-License-Identifier: MIT */
/* Scenario: selectors (jobs and a plain thread) each select over
 * receive-from-a, receive-from-b and a quit event, while producers feed a
 * and b and other selectors offer items with a send branch; then quit is
 * set.  Across 1/2/4/8 workers.  Checks every item is received exactly
 * once - a withdrawn branch never takes or drops an item - and that quit
 * ends every selector. */
#include <pthread.h>
#include "scenario.h"

enum { SEL = 4, PROD = 2 };

struct ctx {
    coro_chan_t a, b;
    coro_event_t quit;
    unsigned char *seen;
    long per;
    long got;   /* atomic */
};

static void take(struct ctx *x, void *item)
{
    long v = (long)(intptr_t)item - 1;
    SCEN_CHECK(__atomic_add_fetch(&x->seen[v], 1, __ATOMIC_RELAXED) == 1, "item %ld twice", v);
    __atomic_add_fetch(&x->got, 1, __ATOMIC_RELAXED);
}

struct selector {
    coro_t co;
    struct ctx *x;
    coro_select_t sel;
    void *ia, *ib;
};

static int selector_body(coro_t *co)
{
    struct selector *f = CORO_SELF(co, struct selector);
    CORO_BEGIN(co);
    coro_select_init(&f->sel);
    coro_select_recv(&f->sel, &f->x->a, &f->ia);
    coro_select_recv(&f->sel, &f->x->b, &f->ib);
    coro_select_event(&f->sel, &f->x->quit);
    for (;;) {
        CORO_SELECT(co, &f->sel, CORO_FOREVER);
        SCEN_CHECK(CORO_RESULT(co) >= 0, "select: %s", coro_err_name((int)CORO_RESULT(co)));
        if (CORO_RESULT(co) == 2)
            break;
        SCEN_CHECK(coro_select_result(&f->sel, (int)CORO_RESULT(co)) == 0, "branch result");
        take(f->x, CORO_RESULT(co) == 0 ? f->ia : f->ib);
    }
    CORO_END(co);
}

/* producers: alternate between a plain send to a and a select that sends
 * to whichever of a or b has room first */
struct producer {
    coro_t co;
    struct ctx *x;
    coro_select_t sel;
    long i, base;
    void *cur;
};

static int producer_body(coro_t *co)
{
    struct producer *f = CORO_SELF(co, struct producer);
    CORO_BEGIN(co);
    for (f->i = 0; f->i < f->x->per; f->i++) {
        f->cur = (void *)(intptr_t)(f->base + f->i + 1);
        if (f->i & 1) {
            CORO_AWAIT(co, coro_chan_send(&f->x->a, f->cur, CORO_FOREVER));
            SCEN_CHECK(CORO_RESULT(co) == 0, "send");
        } else {
            coro_select_init(&f->sel);
            coro_select_send(&f->sel, &f->x->a, f->cur);
            coro_select_send(&f->sel, &f->x->b, f->cur);
            CORO_SELECT(co, &f->sel, CORO_FOREVER);
            SCEN_CHECK(CORO_RESULT(co) == 0 || CORO_RESULT(co) == 1, "select send");
        }
    }
    CORO_END(co);
}

static void *thread_selector(void *arg)
{
    struct ctx *x = arg;
    coro_select_t sel;
    void *ia, *ib;
    int rc;

    coro_select_init(&sel);
    coro_select_recv(&sel, &x->a, &ia);
    coro_select_recv(&sel, &x->b, &ib);
    coro_select_event(&sel, &x->quit);
    while ((rc = coro_select_blocking(&sel, CORO_FOREVER)) != 2) {
        SCEN_CHECK(rc == 0 || rc == 1, "thread select: %s", coro_err_name(rc));
        take(x, rc == 0 ? ia : ib);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long per = SCEN_N(mode, 20000, 20000, 500000);

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct ctx x = { .per = per };
        struct selector *sl = calloc(SEL, sizeof *sl);
        struct producer *pr = calloc(PROD, sizeof *pr);
        pthread_t t;
        long total = PROD * per;
        void *item;

        x.seen = calloc(total, 1);
        coro_chan_init_alloc(&x.a, 2, NULL);
        coro_chan_init_alloc(&x.b, 2, NULL);
        coro_event_init(&x.quit);
        for (int i = 0; i < SEL; i++) {
            sl[i].x = &x;
            SCEN_CHECK(coro_spawn(s, &sl[i].co, selector_body, NULL) == 0, "spawn");
        }
        pthread_create(&t, NULL, thread_selector, &x);
        for (int i = 0; i < PROD; i++) {
            pr[i].x = &x;
            pr[i].base = i * per;
            SCEN_CHECK(coro_spawn(s, &pr[i].co, producer_body, NULL) == 0, "spawn");
        }
        for (int i = 0; i < PROD; i++)
            SCEN_CHECK(join_r(&pr[i].co) == 0, "producer");
        /* quit (selectors still prefer items: ties go to the lowest
         * branch), then drain what they left */
        coro_event_set(&x.quit);
        for (int i = 0; i < SEL; i++)
            SCEN_CHECK(join_r(&sl[i].co) == 0, "selector");
        pthread_join(t, NULL);
        while (coro_chan_try_recv(&x.a, &item) == 0 || coro_chan_try_recv(&x.b, &item) == 0)
            take(&x, item);
        SCEN_CHECK(x.got == total, "%d workers: got %ld of %ld", scen_workers[k], x.got, total);
        SCEN_CHECK(coro_chan_destroy(&x.a) == 0 && coro_chan_destroy(&x.b) == 0 &&
                   coro_event_destroy(&x.quit) == 0, "destroy: a stand-in left on a list");
        free(x.seen);
        free(sl);
        free(pr);
        coro_sched_destroy(s);
    }
    return 0;
}
