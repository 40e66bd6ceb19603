/* SPDX-License-Identifier: MIT */
/* samples/pipeline.c - a three-stage pipeline over channels.
 *
 *   generate (CPU a) --ch1--> square (CPU b) --ch2--> sum (CPU c)
 *
 * Each stage is a job pinned with coro_spawn_opts_t.affinity to its own
 * CPU, taken round-robin from the CPUs this process may use, so the same
 * program runs on 1 CPU (all three share it) or on many.  Closing a
 * channel tells the next stage the stream has ended.  Exits 0 when the
 * sum is right.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <corokit.h>

#define N 100000

/* [pipeline-stages] */
struct stage {
    coro_t co;              /* the frame header, first */
    coro_chan_t *in, *out;  /* in is NULL for the generator, out for the sink */
    long i;
    void *item;
    long long sum;
};

static int generate(coro_t *co)
{
    struct stage *f = CORO_SELF(co, struct stage);
    CORO_BEGIN(co);
    for (f->i = 1; f->i <= N; f->i++) {
        CORO_AWAIT(co, coro_chan_send(f->out, (void *)(intptr_t)f->i, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, CORO_RESULT(co));
    }
    coro_chan_close(f->out);            /* end of stream */
    CORO_END(co);
}

static int square(coro_t *co)
{
    struct stage *f = CORO_SELF(co, struct stage);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(f->in, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) == -EPIPE)  /* closed and drained */
            break;
        intptr_t v = (intptr_t)f->item;
        CORO_AWAIT(co, coro_chan_send(f->out, (void *)(v * v), CORO_FOREVER));
    }
    coro_chan_close(f->out);
    CORO_END(co);
}

static int sum(coro_t *co)
{
    struct stage *f = CORO_SELF(co, struct stage);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(f->in, &f->item, CORO_FOREVER));
        if (CORO_RESULT(co) == -EPIPE)
            break;
        f->sum += (intptr_t)f->item;
    }
    CORO_END(co);
}
/* [pipeline-stages] */

int main(void)
{
    coro_sched_t *s;
    coro_chan_t ch1, ch2;
    void *buf1[64], *buf2[64];          /* the caller's storage: no allocation */
    struct stage gen = { 0 }, sq = { 0 }, sink = { 0 };
    cpu_set_t os;
    int cpus[3], n = 0, rc;

    /* three CPUs round-robin from the usable ones (one CPU: all the same) */
    CPU_ZERO(&os);
    sched_getaffinity(0, sizeof os, &os);
    for (int c = 0; c < CPU_SETSIZE && n < 3; c++)
        if (CPU_ISSET(c, &os))
            cpus[n++] = c;
    for (int k = n; k < 3; k++)
        cpus[k] = cpus[k % n];

    if ((rc = coro_sched_create(&s, NULL)) < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_chan_init(&ch1, buf1, 64);
    coro_chan_init(&ch2, buf2, 64);
    gen.out = &ch1;
    sq.in = &ch1;
    sq.out = &ch2;
    sink.in = &ch2;

    /* [pipeline-pinning] */
    coro_cpuset_t m[3];
    struct stage *st[3] = { &gen, &sq, &sink };
    coro_fn fn[3] = { generate, square, sum };
    for (int k = 0; k < 3; k++) {
        coro_cpuset_zero(&m[k]);
        coro_cpuset_add(&m[k], cpus[k]);
        coro_spawn_opts_t o = { .affinity = &m[k] };
        if ((rc = coro_spawn(s, &st[k]->co, fn[k], &o)) < 0) {
            fprintf(stderr, "coro_spawn: %s\n", coro_strerror(rc));
            return 1;
        }
    }
    /* [pipeline-pinning] */

    for (int k = 0; k < 3; k++) {
        intptr_t r = 0;
        if ((rc = coro_join(&st[k]->co, &r)) != 0 || (rc = (int)r) != 0) {
            fprintf(stderr, "stage %d: %s\n", k, coro_strerror(rc));
            return 1;
        }
    }
    long long want = (long long)N * (N + 1) * (2LL * N + 1) / 6;
    printf("pipeline: sum of squares 1..%d = %lld on CPUs %d, %d, %d\n", N, sink.sum, cpus[0],
           cpus[1], cpus[2]);
    coro_chan_destroy(&ch1);
    coro_chan_destroy(&ch2);
    coro_sched_destroy(s);
    return sink.sum == want ? 0 : 1;
}
