/* SPDX-License-Identifier: MIT */
/* One round of "free the parent's frame right after coro_join": a parent
 * job whose children are embedded in its own frame joins them (with
 * CORO_FORK_JOIN, or coro_done on each), a plain thread joins the parent
 * and frees the frame at once (docs/guide.md, "Frame lifetimes").  The
 * children's finishers, on other threads, must be done with the children's
 * frames before they wake the parent: under ASan a later touch is a
 * use after free, under TSan a race.  Public API only: used by
 * tests/api/test_sched_fork_free.c and tests/stress/fork_free.c. */
#ifndef COROKIT_TESTS_FORK_FREE_H
#define COROKIT_TESTS_FORK_FREE_H

#include <corokit.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

enum { FF_KIDS = 3 };

struct ff_kid {
    coro_t co;
    int i;
};

struct ff_parent {
    coro_t co;
    coro_sched_t *kids_on;      /* where the children run */
    bool use_fork;              /* CORO_FORK_JOIN, else coro_done on each */
    int k;
    intptr_t sum;
    coro_fork_t fork;
    coro_t *kidp[FF_KIDS];
    intptr_t res[FF_KIDS];
    struct ff_kid kid[FF_KIDS]; /* embedded: freed with the parent */
};

static int ff_kid_body(coro_t *co)
{
    struct ff_kid *k = CORO_SELF(co, struct ff_kid);
    CORO_BEGIN(co);
    /* a yield or two: the child then ends on whichever worker took it,
     * often not the parent's, so its finisher races the parent's end */
    for (k->i = 0; k->i < 2; k->i++)
        CORO_YIELD(co);
    CORO_RETURN(co, 1);
    CORO_END(co);
}

static int ff_parent_body(coro_t *co)
{
    struct ff_parent *p = CORO_SELF(co, struct ff_parent);
    CORO_BEGIN(co);
    if (p->use_fork) {
        coro_fork_init(&p->fork, p->kidp, p->res, FF_KIDS);
        for (p->k = 0; p->k < FF_KIDS; p->k++)
            if (coro_fork_spawn(&p->fork, p->kids_on, &p->kid[p->k].co, ff_kid_body, NULL) < 0)
                CORO_RETURN(co, -1);
        CORO_FORK_JOIN(co, &p->fork);
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
        for (p->k = 0; p->k < FF_KIDS; p->k++)
            p->sum += p->res[p->k];
    } else {
        for (p->k = 0; p->k < FF_KIDS; p->k++)
            if (coro_spawn(p->kids_on, &p->kid[p->k].co, ff_kid_body, NULL) < 0)
                CORO_RETURN(co, -1);
        for (p->k = 0; p->k < FF_KIDS; p->k++) {
            CORO_AWAIT(co, coro_done(&p->kid[p->k].co));
            p->sum += CORO_RESULT(co);
        }
    }
    CORO_RETURN(co, p->sum);
    CORO_END(co);
}

/* one round on s, children on kids_on: the parent's result (FF_KIDS), or
 * a -errno */
static inline intptr_t ff_round(coro_sched_t *s, coro_sched_t *kids_on, bool use_fork)
{
    struct ff_parent *p = calloc(1, sizeof *p);
    intptr_t r = 0;

    if (!p)
        return -ENOMEM;
    p->kids_on = kids_on;
    p->use_fork = use_fork;
    int rc = coro_spawn(s, &p->co, ff_parent_body, NULL);
    if (rc == 0)
        rc = coro_join(&p->co, &r);
    free(p);            /* at once: the promise under test */
    return rc < 0 ? rc : r;
}

#endif
