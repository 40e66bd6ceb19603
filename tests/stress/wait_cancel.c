/* SPDX-License-Identifier: MIT */
/* Scenario: CORO_CANCEL races every kind of wait of lib/wait/parklot.c - jobs in
 * joiner slots (pairs that await each other, fork-join trees that finish
 * while the cancel runs), timed and untimed lot waits (event, mutex,
 * channel), timers firing - across 1/2/4/8 workers.  Checks: shutdown
 * returns, every job ends with 0, -ETIMEDOUT or -ECANCELED, no lot timer
 * is left.  Under TSan: the registry's locks and the joiner-slot CAS
 * against the finisher's exchange. */
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

enum { PAIRS = 16, TREES = 8, WAITERS = 32 };

struct ctx {
    coro_event_t ev;
    coro_mutex_t m;
    coro_chan_t ch;
    void *buf[2];
};

/* awaits its peer (and the peer awaits it): only CORO_CANCEL ends them */
struct pair {
    coro_t co;
    coro_t *peer;
    struct ctx *x;
};

static int pair_body(coro_t *co)
{
    struct pair *f = CORO_SELF(co, struct pair);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(&f->x->ev, CORO_FOREVER));
    CORO_AWAIT(co, coro_done(f->peer));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}

/* a binary fork-join tree: children finish while the cancel runs */
struct node {
    coro_t co;
    struct node *kid[2];
    int depth, i;
    intptr_t r;
};

static int node_body(coro_t *co)
{
    struct node *f = CORO_SELF(co, struct node);
    CORO_BEGIN(co);
    if (f->depth > 0) {
        for (f->i = 0; f->i < 2; f->i++) {
            f->kid[f->i] = calloc(1, sizeof(struct node));
            f->kid[f->i]->depth = f->depth - 1;
            if (coro_spawn(coro_sched_current(), &f->kid[f->i]->co, node_body, NULL) != 0) {
                free(f->kid[f->i]);
                f->kid[f->i] = NULL;
            }
        }
        for (f->i = 0; f->i < 2; f->i++) {
            if (!f->kid[f->i])
                continue;
            CORO_AWAIT(co, coro_done(&f->kid[f->i]->co));
            f->r = CORO_RESULT(co);
            SCEN_CHECK(f->r == 0 || f->r == -ECANCELED, "tree node ended %ld", (long)f->r);
        }
    }
    CORO_END(co);
}

static void tree_free(struct node *n)
{
    for (int i = 0; n && i < 2; i++) {
        if (n->kid[i]) {
            (void)join_r(&n->kid[i]->co);
            tree_free(n->kid[i]);
            free(n->kid[i]);
        }
    }
}

/* timed and untimed lot waits in a loop */
struct waiter {
    coro_t co;
    struct ctx *x;
    int i;
    void *item;
};

static int waiter_body(coro_t *co)
{
    struct waiter *f = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    for (;;) {
        f->i++;
        switch (f->i % 3) {
        case 0:
            CORO_AWAIT(co, coro_event_wait(&f->x->ev, f->i % 2 ? 1000 : CORO_FOREVER));
            break;
        case 1:
            CORO_AWAIT(co, coro_mutex_lock(&f->x->m, (f->i % 7) * 1000));
            if (CORO_RESULT(co) == 0)
                SCEN_CHECK(coro_mutex_unlock(&f->x->m) == 0, "unlock");
            break;
        default:
            CORO_AWAIT(co, coro_chan_recv(&f->x->ch, &f->item, f->i % 2 ? 500 : CORO_FOREVER));
            break;
        }
        if (CORO_RESULT(co) == -ECANCELED)
            CORO_RETURN(co, -ECANCELED);
        SCEN_CHECK(CORO_RESULT(co) == 0 || CORO_RESULT(co) == -ETIMEDOUT, "wait ended %ld",
                   (long)CORO_RESULT(co));
        if (f->i % 5 == 0)
            CORO_YIELD(co);
    }
    CORO_END(co);
}

static void round_(int workers, int spin)
{
    coro_sched_t *s = scen_sched(workers);
    struct ctx x;
    struct pair *p = calloc(2 * PAIRS, sizeof *p);
    struct node *t = calloc(TREES, sizeof *t);
    struct waiter *w = calloc(WAITERS, sizeof *w);

    SCEN_CHECK(coro_event_init(&x.ev) == 0, "init");
    SCEN_CHECK(coro_mutex_init(&x.m) == 0, "init");
    SCEN_CHECK(coro_chan_init(&x.ch, x.buf, 2) == 0, "init");
    for (int i = 0; i < PAIRS; i++) {
        p[2 * i].peer = &p[2 * i + 1].co;
        p[2 * i + 1].peer = &p[2 * i].co;
        p[2 * i].x = p[2 * i + 1].x = &x;
        SCEN_CHECK(coro_spawn(s, &p[2 * i].co, pair_body, NULL) == 0, "spawn");
        SCEN_CHECK(coro_spawn(s, &p[2 * i + 1].co, pair_body, NULL) == 0, "spawn");
    }
    for (int i = 0; i < WAITERS; i++) {
        w[i].x = &x;
        w[i].i = i;
        SCEN_CHECK(coro_spawn(s, &w[i].co, waiter_body, NULL) == 0, "spawn");
    }
    coro_event_set(&x.ev);      /* the pairs go on to await each other */
    coro_event_reset(&x.ev);
    for (int i = 0; i < TREES; i++) {
        t[i].depth = 5;
        SCEN_CHECK(coro_spawn(s, &t[i].co, node_body, NULL) == 0, "spawn");
    }
    for (int i = 0; i < spin; i++) {
        coro_chan_try_send(&x.ch, &x);
        sched_yield();
    }
    SCEN_CHECK(coro_sched_shutdown(s, CORO_CANCEL) == 0, "shutdown");
    for (int i = 0; i < 2 * PAIRS; i++) {
        intptr_t r = join_r(&p[i].co);
        /* the peer may have finished first (cancelled at its gate) */
        SCEN_CHECK(r == -ECANCELED, "pair ended %ld", (long)r);
    }
    for (int i = 0; i < WAITERS; i++)
        SCEN_CHECK(join_r(&w[i].co) == -ECANCELED, "waiter");
    for (int i = 0; i < TREES; i++) {
        intptr_t r = join_r(&t[i].co);
        SCEN_CHECK(r == 0 || r == -ECANCELED, "tree ended %ld", (long)r);
        tree_free(&t[i]);
    }
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    free(p);
    free(t);
    free(w);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 10, 200);

    alarm(600);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < SCEN_NWORKERS; k++)
            round_(scen_workers[k], (r * 37) % 200);
    printf("wait_cancel: %d rounds x %d worker counts\n", rounds, SCEN_NWORKERS);
    return 0;
}
