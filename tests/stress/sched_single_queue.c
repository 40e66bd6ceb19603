/* SPDX-License-Identifier: MIT */
/* Scenario: the drive queue of a single-threaded scheduler (rt/drive.c)
 * under many plain threads at once.  Each thread calls coro_block_on over
 * and over (roots that spawn a chain and sleep), and every third one also
 * joins a slow job with coro_join_timeout, timing out before it ends and
 * then joining it for good; the last round ends with a shutdown from a
 * thread of its own while others still call.  Checks: every call returns
 * its root's value, every timed-out join is followed by the job's value,
 * nothing hangs (a waiter left asleep with the drive free would). */
#define _GNU_SOURCE
#include <pthread.h>
#include "scenario.h"

struct link { coro_t co; int n; };

static int link_body(coro_t *co)
{
    struct link *l = CORO_SELF(co, struct link);
    CORO_BEGIN(co);
    if (l->n > 0) {
        struct link *k = coro_frame_alloc(co->sched, sizeof *k);
        SCEN_CHECK(k != NULL, "frame");
        k->n = l->n - 1;
        int e = coro_spawn(co->sched, &k->co, link_body, NULL);
        if (e == -ESHUTDOWN)
            coro_frame_free(k);
        else
            SCEN_CHECK(e == 0, "link spawn: %s", coro_err_name(e));
    }
    CORO_END(co);
}

struct root { coro_t co; int n; struct link *l; };

static int root_body(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    CORO_BEGIN(co);
    r->l = coro_frame_alloc(co->sched, sizeof *r->l);
    SCEN_CHECK(r->l != NULL, "frame");
    r->l->n = r->n;
    if (coro_spawn(co->sched, &r->l->co, link_body, NULL) != 0)
        coro_frame_free(r->l);      /* shutting down */
    CORO_AWAIT(co, coro_sleep((r->n % 3) * 1000));
    CORO_RETURN(co, 100 + r->n);
    CORO_END(co);
}

struct slow { coro_t co; };

static int slow_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(3000000));
    CORO_RETURN(co, 5);
    CORO_END(co);
}

struct targ {
    coro_sched_t *s;
    int id, calls;
};

static void *caller(void *arg)
{
    struct targ *t = arg;
    for (int i = 0; i < t->calls; i++) {
        struct root r = { .n = (t->id + i) % 7 };
        intptr_t res = 0;
        int e = coro_block_on(t->s, &r.co, root_body, NULL, &res);
        if (e == -ESHUTDOWN)
            return NULL;    /* the last round's shutdown came first */
        SCEN_CHECK(e == 0 && res == 100 + r.n, "block_on: %s, %ld", coro_err_name(e), (long)res);
        if (t->id % 3 == 0 && i % 4 == 0) {
            struct slow sl;
            memset(&sl, 0, sizeof sl);
            if (coro_spawn(t->s, &sl.co, slow_body, NULL) != 0)
                return NULL;
            e = coro_join_timeout(&sl.co, &res, 200000);
            SCEN_CHECK(e == -ETIMEDOUT || (e == 0 && res == 5), "timed join: %s", coro_err_name(e));
            SCEN_CHECK(coro_join(&sl.co, &res) == 0 && res == 5, "join after timeout");
        }
    }
    return NULL;
}

struct sarg { coro_sched_t *s; };

static void *stopper(void *arg)
{
    struct sarg *a = arg;
    SCEN_CHECK(coro_sched_shutdown(a->s, CORO_DRAIN) == 0, "shutdown");
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 3, 6, 100);
    enum { T = 16 };

    for (int r = 0; r < rounds; r++) {
        coro_sched_t *s = scen_sched(0);
        struct targ t[T];
        pthread_t th[T], sth;
        struct sarg sa = { s };
        bool last = r == rounds - 1;

        for (int i = 0; i < T; i++) {
            t[i] = (struct targ){ .s = s, .id = i, .calls = SCEN_N(mode, 12, 20, 40) };
            SCEN_CHECK(pthread_create(&th[i], NULL, caller, &t[i]) == 0, "thread");
        }
        if (last)
            SCEN_CHECK(pthread_create(&sth, NULL, stopper, &sa) == 0, "thread");
        for (int i = 0; i < T; i++)
            pthread_join(th[i], NULL);
        if (last)
            pthread_join(sth, NULL);
        else
            SCEN_CHECK(coro_sched_shutdown(s, r % 2 ? CORO_CANCEL : CORO_DRAIN) == 0, "shutdown");
        SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    }
    printf("ok: %d rounds of %d threads in coro_block_on on 0 workers\n", rounds, T);
    return 0;
}
