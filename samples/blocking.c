/* SPDX-License-Identifier: MIT */
/* blocking: calls that block, off the workers.
 *
 * 64 jobs each make a call that blocks for 100 ms (usleep stands in for a
 * library without a non-blocking API, getaddrinfo, a read of a regular
 * file) through coro_blocking, on a scheduler of 2 workers, while a ticker
 * job sleeps 1 ms at a time on the same workers.  Run serially the calls
 * would take 6.4 s and the ticker would stall; on the blocking pool they
 * overlap and the ticker keeps its cadence.  Prints the total time and the
 * ticker's worst gap. */
#include <corokit.h>
#include <stdio.h>
#include <unistd.h>

#define N 64

/* [blocking-call] */
static intptr_t slow_lookup(void *arg)
{
    usleep(100 * 1000);                 /* blocks its pool thread, not a worker */
    return (intptr_t)arg * 2;
}

struct lookup { coro_t co; intptr_t key, value; };

static int lookup(coro_t *co)
{
    struct lookup *l = CORO_SELF(co, struct lookup);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(slow_lookup, (void *)l->key));
    l->value = CORO_RESULT(co);         /* fn's return, or -ECANCELED/-EAGAIN/-ENOMEM */
    CORO_END(co);
}
/* [blocking-call] */

struct ticker { coro_t co; int stop; int64_t last, worst; int ticks; };

static int ticker(coro_t *co)
{
    struct ticker *t = CORO_SELF(co, struct ticker);
    CORO_BEGIN(co);
    t->last = coro_now();
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        CORO_AWAIT(co, coro_sleep(1000 * 1000));
        int64_t now = coro_now();
        if (now - t->last > t->worst)
            t->worst = now - t->last;
        t->last = now;
        t->ticks++;
    }
    CORO_END(co);
}

int main(void)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    static struct lookup l[N];
    static struct ticker t;
    coro_sched_t *s;
    int rc;

    c.workers = 2;
    if ((rc = coro_sched_create(&s, &c)) < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_spawn(s, &t.co, ticker, NULL);
    int64_t t0 = coro_now();
    for (int i = 0; i < N; i++) {
        l[i].key = i;
        if ((rc = coro_spawn(s, &l[i].co, lookup, NULL)) < 0) {
            fprintf(stderr, "coro_spawn: %s\n", coro_strerror(rc));
            return 1;
        }
    }
    int bad = 0;
    for (int i = 0; i < N; i++) {
        intptr_t r;
        bad += coro_join(&l[i].co, &r) != 0 || l[i].value != 2 * i;
    }
    int64_t took = coro_now() - t0;
    __atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
    intptr_t r;
    coro_join(&t.co, &r);
    coro_sched_destroy(s);
    printf("%d blocking calls of 100 ms on 2 workers: %.0f ms in all (serially: 6400 ms)\n", N,
           took / 1e6);
    printf("ticker: %d ticks of 1 ms meanwhile, worst gap %.1f ms\n", t.ticks, t.worst / 1e6);
    return bad != 0;
}
