/* SPDX-License-Identifier: MIT */
/* Scenario: deep fork-join as users write it - fib(n), each call
 * spawning its two children (frames in one calloc'd block, freed by the
 * last of the two children's on_exit and the parent) and awaiting each
 * with coro_done - across 1/2/4/8 workers.  Children still queued on the
 * awaiting worker run inside the awaiting step (lib/sched/worker.c,
 * JOINING INLINE), the others are stolen or waited for.  Checks the
 * result and that every block went back (run it under ASan, make
 * check-asan, for the leaks and the use of freed frames).  Sizes: quick
 * fib(20), full fib(18) (the TSan build), stress fib(30). */
#include <stdatomic.h>
#include "scenario.h"

static atomic_long blocks_out;

struct fibkids;
struct fib {
    coro_t co;
    long n;
    intptr_t r;
    struct fibkids *kids;   /* this call's children */
    struct fibkids *home;   /* the block this frame lives in (NULL: root) */
};
struct fibkids {
    atomic_int refs;        /* the two children's on_exit and the parent */
    struct fib k[2];
};

static void kids_put(struct fibkids *b)
{
    if (atomic_fetch_sub(&b->refs, 1) == 1) {
        atomic_fetch_sub(&blocks_out, 1);
        free(b);
    }
}

static void fib_exit(coro_t *co)
{
    kids_put(CORO_SELF(co, struct fib)->home);
}

static const coro_spawn_opts_t fib_opts = { .on_exit = fib_exit };

static int fib_fn(coro_t *co)
{
    struct fib *f = CORO_SELF(co, struct fib);
    CORO_BEGIN(co);
    if (f->n < 2)
        CORO_RETURN(co, f->n);
    f->kids = calloc(1, sizeof *f->kids);
    SCEN_CHECK(f->kids != NULL, "calloc");
    atomic_fetch_add(&blocks_out, 1);
    atomic_init(&f->kids->refs, 3);
    for (int i = 0; i < 2; i++) {
        f->kids->k[i].n = f->n - 1 - i;
        f->kids->k[i].home = f->kids;
        int rc = coro_spawn(coro_sched_current(), &f->kids->k[i].co, fib_fn, &fib_opts);
        SCEN_CHECK(rc == 0, "coro_spawn: %s", coro_strerror(rc));
    }
    CORO_AWAIT(co, coro_done(&f->kids->k[0].co));
    f->r = CORO_RESULT(co);
    CORO_AWAIT(co, coro_done(&f->kids->k[1].co));
    f->r += CORO_RESULT(co);
    kids_put(f->kids);
    CORO_RETURN(co, f->r);
    CORO_END(co);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long n = SCEN_N(mode, 20, 18, 30);
    intptr_t want = 0;

    for (long a = 0, b = 1, i = 0; i < n; i++) {
        long c = a + b;
        a = b;
        b = c;
        want = a;
    }
    for (int k = 0; k < SCEN_NWORKERS; k++) {
        coro_sched_t *s = scen_sched(scen_workers[k]);
        struct fib root = { .n = n };
        atomic_store(&blocks_out, 0);
        intptr_t r = block_on_r(s, &root.co, fib_fn, NULL);
        SCEN_CHECK(r == want, "workers %d: fib(%ld) = %ld, not %ld", scen_workers[k], n, (long)r,
                   (long)want);
        int rc = coro_sched_destroy(s);
        SCEN_CHECK(rc == 0, "coro_sched_destroy: %s", coro_strerror(rc));
        SCEN_CHECK(atomic_load(&blocks_out) == 0, "workers %d: %ld blocks kept", scen_workers[k],
                   atomic_load(&blocks_out));
    }
    printf("fork_fib: fib(%ld) right at 1/2/4/8 workers, every block back\n", n);
    return 0;
}
