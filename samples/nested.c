/* SPDX-License-Identifier: MIT */
/* nested: coro_call chains.  A coroutine calls another as a nested call;
 * the caller continues the moment the callee returns, with no trip
 * through a queue, and a chain of any depth never grows the C stack.
 * Here: a recursive descent that sums a tree of depth 20000, where the
 * leaves suspend (yield), on 2 workers. */
#include <corokit.h>
#include <stdio.h>
#include <stdlib.h>

/* [call] */
struct node {
    coro_t co;
    int depth;
    struct node *below;     /* the callee's frame: preallocated by the caller */
};

static int descend(coro_t *co)
{
    struct node *n = CORO_SELF(co, struct node);

    CORO_BEGIN(co);
    if (n->depth == 0) {
        CORO_YIELD(co);                         /* the whole job suspends */
        CORO_RETURN(co, 1);
    }
    n->below->depth = n->depth - 1;
    n->below->below = n->below + 1;
    CORO_AWAIT(co, coro_call(&n->below->co, descend));
    CORO_RETURN(co, CORO_RESULT(co) + 1);       /* callee's result + 1 */
    CORO_END(co);
}
/* [call] */

int main(void)
{
    enum { DEPTH = 20000 };
    coro_sched_t *s;
    struct node *chain = calloc(DEPTH + 2, sizeof *chain);
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    int rc;

    cfg.workers = 2;
    if (!chain || (rc = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    chain[0].depth = DEPTH;
    chain[0].below = &chain[1];
    intptr_t r = 0;
    coro_block_on(s, &chain[0].co, descend, NULL, &r);
    printf("a chain of %d nested calls returned %ld\n", DEPTH + 1, (long)r);
    coro_sched_destroy(s);
    free(chain);
    return r == DEPTH + 1 ? 0 : 1;
}
