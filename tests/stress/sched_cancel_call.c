/* SPDX-License-Identifier: MIT */
/* Scenario: CORO_CANCEL landing anywhere keeps completed work, and
 * coro_call claims a child frame once (issue 9, items 4 and 7), across
 * 1/2/4/8 workers.
 *
 * Cancel: jobs receive from a channel that a plain thread keeps feeding
 * (some receives complete at once, some wait and are handed an item by the
 * feeder), others send into a second channel and read a pipe; the main
 * thread cancels after a random number of spins.  Afterwards: every item
 * the feeder put in was received by a job that was told so, or is still in
 * the channel; every send a job was told succeeded is in the second
 * channel; every byte written to the pipe was reported read or is still
 * there.
 *
 * Call: rounds of 2..8 jobs coro_call one idle child frame at once: at
 * most one body runs it at a time, every caller gets the child's result
 * or -EBUSY, and the body ran exactly as often as callers got its result. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

#define CAP 256
#define CHUNK 16

struct worker_job {
    coro_t co;
    int kind;               /* 0 recv, 1 send, 2 read */
    coro_chan_t *in, *out;
    int fd;
    void *item;
    char buf[CHUNK];
    long i, ops, units;
    int bad;
};

static int worker_body(coro_t *co)
{
    struct worker_job *j = CORO_SELF(co, struct worker_job);
    CORO_BEGIN(co);
    for (j->i = 1;; j->i++) {
        if (j->kind == 0)
            CORO_AWAIT(co, coro_chan_recv(j->in, &j->item, CORO_FOREVER));
        else if (j->kind == 1)
            CORO_AWAIT(co, coro_chan_send(j->out, (void *)j->i, j->i % 3 ? 0 : CORO_FOREVER));
        else
            CORO_AWAIT(co, coro_read(j->fd, j->buf, CHUNK, CORO_FOREVER));
        intptr_t r = CORO_RESULT(co);
        if (r == -ECANCELED)
            break;
        if (j->kind == 1 && r == -ETIMEDOUT)
            continue;       /* full: try again */
        if (r < 0 || (j->kind == 2 && r == 0)) {
            j->bad = (int)r;
            break;
        }
        j->ops++;
        j->units += j->kind == 0 ? (intptr_t)j->item : j->kind == 1 ? j->i : r;
    }
    CORO_END(co);
}

struct feeder {
    coro_chan_t *ch;
    int fd;
    int stop;
    long items, units, bytes;
};

static void *feed(void *arg)
{
    struct feeder *f = arg;
    char buf[CHUNK * 4];
    long v = 1;

    memset(buf, 'y', sizeof buf);
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        if (coro_chan_try_send(f->ch, (void *)v) == 0) {
            f->items++;
            f->units += v++;
        }
        ssize_t n = write(f->fd, buf, (size_t)(v % (long)sizeof buf) + 1);
        if (n > 0)
            f->bytes += n;
        if (v % 16 == 0)
            sched_yield();
    }
    return NULL;
}

static void cancel_round(int workers, unsigned *seed)
{
    coro_sched_t *s = scen_sched(workers);
    coro_chan_t in, out;
    void *bin[CAP], *bout[CAP];
    int pfd[2];
    enum { NJ = 6 };
    struct worker_job jobs[NJ];
    struct feeder f = { .ch = &in };
    pthread_t th;

    SCEN_CHECK(coro_chan_init(&in, bin, CAP) == 0, "chan");
    SCEN_CHECK(coro_chan_init(&out, bout, CAP) == 0, "chan");
    SCEN_CHECK(pipe2(pfd, O_NONBLOCK) == 0, "pipe");
    f.fd = pfd[1];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < NJ; i++) {
        jobs[i].kind = i % 3;
        jobs[i].in = &in;
        jobs[i].out = &out;
        jobs[i].fd = pfd[0];
        /* one reader per fd: the second reader job stays on recv */
        if (jobs[i].kind == 2 && i != 2)
            jobs[i].kind = 0;
        SCEN_CHECK(coro_spawn(s, &jobs[i].co, worker_body, NULL) == 0, "spawn");
    }
    SCEN_CHECK(pthread_create(&th, NULL, feed, &f) == 0, "thread");
    for (unsigned k = rand_r(seed) % 20000; k > 0; k--)
        __asm__ volatile("" ::: "memory");
    if (rand_r(seed) & 1)
        sched_yield();
    SCEN_CHECK(coro_sched_shutdown(s, CORO_CANCEL) == 0, "cancel");
    __atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");

    long rops = 0, runits = 0, sops = 0, sunits = 0, bytes = 0;
    for (int i = 0; i < NJ; i++) {
        SCEN_CHECK(jobs[i].bad == 0, "job %d: %s", i, coro_err_name(jobs[i].bad));
        if (jobs[i].kind == 0) {
            rops += jobs[i].ops;
            runits += jobs[i].units;
        } else if (jobs[i].kind == 1) {
            sops += jobs[i].ops;
            sunits += jobs[i].units;
        } else {
            bytes += jobs[i].units;
        }
    }
    void *it;
    long lops = 0, lunits = 0;
    while (coro_chan_try_recv(&in, &it) == 0) {
        lops++;
        lunits += (intptr_t)it;
    }
    SCEN_CHECK(rops + lops == f.items && runits + lunits == f.units,
               "%d workers: %ld items fed, %ld received + %ld left", workers, f.items, rops, lops);
    lops = lunits = 0;
    while (coro_chan_try_recv(&out, &it) == 0) {
        lops++;
        lunits += (intptr_t)it;
    }
    SCEN_CHECK(lops == sops && lunits == sunits, "%d workers: %ld sends reported, %ld in the channel",
               workers, sops, lops);
    char tmp[4096];
    ssize_t n;
    while ((n = read(pfd[0], tmp, sizeof tmp)) > 0)
        bytes += n;
    SCEN_CHECK(bytes == f.bytes, "%d workers: %ld bytes written, %ld read or left", workers,
               f.bytes, bytes);
    close(pfd[0]);
    close(pfd[1]);
}

/* ---- the call race ------------------------------------------------------------------- */

struct child {
    coro_t co;
    int inside, overlap, k;
    long runs;
};

struct caller {
    coro_t co;
    struct child *c;
    intptr_t got;
};

static int child_body(coro_t *co)
{
    struct child *c = CORO_SELF(co, struct child);
    CORO_BEGIN(co);
    if (__atomic_add_fetch(&c->inside, 1, __ATOMIC_ACQ_REL) > 1)
        __atomic_store_n(&c->overlap, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->runs, 1, __ATOMIC_RELAXED);
    for (c->k = 0; c->k < 2; c->k++)
        CORO_YIELD(co);
    __atomic_sub_fetch(&c->inside, 1, __ATOMIC_ACQ_REL);
    CORO_RETURN(co, 5);
    CORO_END(co);
}

static int caller_body(coro_t *co)
{
    struct caller *c = CORO_SELF(co, struct caller);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_call(&c->c->co, child_body));
    c->got = CORO_RESULT(co);
    CORO_END(co);
}

static void call_race(int workers, int rounds)
{
    coro_sched_t *s = scen_sched(workers);
    struct child c;
    struct caller cl[8];
    long ran = 0, total = 0;
    int ncl = workers < 2 ? 2 : workers > 8 ? 8 : workers;

    memset(&c, 0, sizeof c);
    for (int r = 0; r < rounds; r++) {
        memset(cl, 0, sizeof cl);
        for (int i = 0; i < ncl; i++) {
            cl[i].c = &c;
            SCEN_CHECK(coro_spawn(s, &cl[i].co, caller_body, NULL) == 0, "spawn");
        }
        for (int i = 0; i < ncl; i++) {
            SCEN_CHECK(join_r(&cl[i].co) == 0, "join");
            SCEN_CHECK(cl[i].got == 5 || cl[i].got == -EBUSY, "caller got %ld", (long)cl[i].got);
            ran += cl[i].got == 5;
            total++;
        }
        SCEN_CHECK(!c.overlap, "%d workers, round %d: two bodies ran one child", workers, r);
    }
    SCEN_CHECK(ran == c.runs, "%d workers: %ld results, %ld runs", workers, ran, c.runs);
    printf("  call race, %d workers: %ld calls, %ld ran, %ld -EBUSY\n", workers, total, ran,
           total - ran);
    coro_sched_destroy(s);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int rounds = SCEN_N(mode, 40, 60, 3000);
    int calls = SCEN_N(mode, 500, 500, 100000);
    unsigned seed = 99;

    for (int k = 0; k < SCEN_NWORKERS; k++) {
        for (int r = 0; r < rounds; r++)
            cancel_round(scen_workers[k], &seed);
        printf("  cancel, %d workers: %d rounds, nothing lost\n", scen_workers[k], rounds);
        call_race(scen_workers[k], calls);
    }
    printf("ok\n");
    return 0;
}
