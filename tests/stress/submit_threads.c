/* SPDX-License-Identifier: MIT */
/* Scenario: plain threads submitting to the workers through their own
 * rings (lib/sched/worker.c coro__submit, lib/sched/frame.c
 * coro__thread_subring) while the workers take half of a ring at a time and
 * steal from each other: 4 threads at once, each spawning NORMAL jobs
 * (some of which spawn a child, so thieves have local work to take), a
 * HIGH job now and then (an inbox), and exiting with jobs still in its
 * ring, whose ring the next thread takes over; rounds in which one job
 * holds the only worker so the rings fill and spill into the inboxes.
 * Across 1/2/4/8 workers; every job runs exactly once (a bit per job). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "scenario.h"

static coro_sched_t *S;
static unsigned char *seen;     /* one byte per job id: runs of it */
static long ran;

struct job {
    coro_t co;
    long id;
    int child;
};

static int job_fn(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    SCEN_CHECK(__atomic_add_fetch(&seen[j->id], 1, __ATOMIC_RELAXED) == 1, "job %ld ran twice",
               j->id);
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    if (j->child) {         /* local work for the thieves */
        struct job *k = coro_frame_alloc(S, sizeof *k);
        SCEN_CHECK(k != NULL, "alloc in job");
        k->id = j->id + 1;
        int rc = coro_spawn(S, &k->co, job_fn, NULL);
        SCEN_CHECK(rc == 0, "spawn in job: %s", coro_strerror(rc));
    }
    CORO_END(co);
}

struct arg {
    long first, n;      /* ids first .. first + 2n - 1 (a job and its child) */
};

static void *submitter(void *p)
{
    struct arg *a = p;
    coro_spawn_opts_t hi = { .priority = CORO_PRIO_HIGH };
    for (long i = 0; i < a->n; i++) {
        struct job *j = coro_frame_alloc(S, sizeof *j);
        SCEN_CHECK(j != NULL, "alloc on thread");
        j->id = a->first + 2 * i;
        j->child = 1;
        SCEN_CHECK(coro_spawn(S, &j->co, job_fn, i % 97 == 0 ? &hi : NULL) == 0,
                   "spawn from thread");
    }
    return NULL;        /* exits with jobs still in its ring */
}

struct hold {
    coro_t co;
    int started, release;
};

static int hold_fn(coro_t *co)
{
    struct hold *h = CORO_SELF(co, struct hold);
    CORO_BEGIN(co);
    __atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
        usleep(50);
    CORO_END(co);
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long n = SCEN_N(mode, 3000, 20000, 200000);     /* per thread and round */
    const int threads = 4, rounds = 3;
    long total = (long)threads * rounds * n * 2;

    seen = calloc((size_t)total, 1);
    SCEN_CHECK(seen != NULL, "calloc");
    for (int wi = 0; wi < SCEN_NWORKERS; wi++) {
        S = scen_sched(scen_workers[wi]);
        memset(seen, 0, (size_t)total);
        ran = 0;
        for (int r = 0; r < rounds; r++) {
            /* round 1 on one worker: the worker is held, the rings fill */
            struct hold h = { 0 };
            bool held = r == 1 && scen_workers[wi] == 1;
            if (held) {
                SCEN_CHECK(coro_spawn(S, &h.co, hold_fn, NULL) == 0, "spawn hold");
                while (!__atomic_load_n(&h.started, __ATOMIC_ACQUIRE))
                    sched_yield();
            }
            pthread_t t[4];
            struct arg a[4];
            for (int i = 0; i < threads; i++) {
                a[i].first = ((long)r * threads + i) * n * 2;
                a[i].n = n;
                SCEN_CHECK(pthread_create(&t[i], NULL, submitter, &a[i]) == 0, "thread");
            }
            for (int i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
            if (held) {
                __atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
                SCEN_CHECK(join_r(&h.co) == 0, "join hold");
            }
        }
        /* the children spawn as they go (a spawn after shutdown would
         * fail): wait for every job first, bounded */
        int64_t end = coro_now() + 120000000000LL;
        while (__atomic_load_n(&ran, __ATOMIC_RELAXED) < total) {
            SCEN_CHECK(coro_now() < end, "workers %d: %ld of %ld ran in 120 s",
                       scen_workers[wi], __atomic_load_n(&ran, __ATOMIC_RELAXED), total);
            sched_yield();
        }
        SCEN_CHECK(coro_sched_shutdown(S, CORO_DRAIN) == 0, "shutdown");
        SCEN_CHECK(ran == total, "workers %d: ran %ld of %ld", scen_workers[wi], ran, total);
        for (long i = 0; i < total; i++)
            SCEN_CHECK(seen[i] == 1, "workers %d: job %ld ran %d times", scen_workers[wi], i,
                       seen[i]);
        SCEN_CHECK(coro_sched_destroy(S) == 0, "destroy");
    }
    free(seen);
    printf("submit_threads: ok\n");
    return 0;
}
