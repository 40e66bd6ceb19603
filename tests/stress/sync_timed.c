/* SPDX-License-Identifier: MIT */
/* Scenario (issue 9's soak): timed waits on every sync kind - event,
 * mutex, semaphore, channel receive and send, wait group, select - with
 * timeouts from 1 ns to 10 ms (log-uniform), on 2 workers while a plain
 * thread hogs a CPU.  Pokers complete some waits, the others time out.
 * Checks: no hang (alarm), every wait ends with 0 or -ETIMEDOUT (select: a
 * branch index or -ETIMEDOUT), no lot timer left at the end, RSS flat
 * (from 10% of the waits to the end).
 *
 * Waits in all: quick 20,000, full 60,000, stress 1,000,000; the
 * environment variable CORO_SOAK_WAITS overrides (the 10 million run). */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include "scenario.h"

enum { K_EVENT, K_MUTEX, K_SEM, K_RECV, K_SEND, K_WG, K_SELECT, K_N };
enum { PER_KIND = 16, CAP = 4 };

static const char *kind_name[K_N] = { "event", "mutex", "sem", "recv", "send", "waitgroup",
                                      "select" };

struct ctx {
    coro_event_t ev, ev2;
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t rc, sc, c2;
    void *rbuf[CAP], *sbuf[CAP], *c2buf[CAP];
    coro_waitgroup_t wg;
    long per_waiter;
    int waiters_left;   /* atomic */
    long waits_done;    /* atomic */
    long ok, timedout;  /* atomic */
    long kind_ok[K_N], kind_to[K_N];    /* atomic */
    long rss_at_10;     /* KiB, written once */
    int stop;           /* atomic: the hog stops */
};

static long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* 1 ns .. 10 ms, log-uniform */
static int64_t pick_timeout(uint64_t *s)
{
    int64_t t = 1;
    unsigned e = (unsigned)(rnd(s) % 7);
    for (unsigned i = 0; i < e; i++)
        t *= 10;
    return t + (int64_t)(rnd(s) % (uint64_t)(9 * t));
}

struct waiter {
    coro_t co;
    struct ctx *x;
    int kind;
    long i;
    uint64_t seed;
    void *item;
    coro_select_t sel;
};

static int waiter_body(coro_t *co)
{
    struct waiter *f = CORO_SELF(co, struct waiter);
    struct ctx *x = f->x;
    CORO_BEGIN(co);
    for (f->i = 0; f->i < x->per_waiter; f->i++) {
        switch (f->kind) {
        case K_EVENT:
            CORO_AWAIT(co, coro_event_wait(&x->ev, pick_timeout(&f->seed)));
            break;
        case K_MUTEX:
            CORO_AWAIT(co, coro_mutex_lock(&x->m, pick_timeout(&f->seed)));
            if (CORO_RESULT(co) == 0) {
                if (rnd(&f->seed) % 4 == 0)     /* hold it: others time out */
                    CORO_AWAIT(co, coro_sleep((int64_t)(rnd(&f->seed) % 20000)));
                SCEN_CHECK(coro_mutex_unlock(&x->m) == 0, "unlock");
                co->result = 0;
            }
            break;
        case K_SEM:
            CORO_AWAIT(co, coro_sem_acquire(&x->sem, pick_timeout(&f->seed)));
            break;
        case K_RECV:
            CORO_AWAIT(co, coro_chan_recv(&x->rc, &f->item, pick_timeout(&f->seed)));
            break;
        case K_SEND:
            CORO_AWAIT(co, coro_chan_send(&x->sc, f, pick_timeout(&f->seed)));
            break;
        case K_WG:
            CORO_AWAIT(co, coro_waitgroup_wait(&x->wg, pick_timeout(&f->seed)));
            break;
        default:
            coro_select_init(&f->sel);
            coro_select_event(&f->sel, &x->ev2);
            coro_select_recv(&f->sel, &x->c2, &f->item);
            CORO_AWAIT(co, coro_select(&f->sel, pick_timeout(&f->seed)));
            co->result = coro_select_end(&f->sel, CORO_RESULT(co));
            if (CORO_RESULT(co) >= 0)
                co->result = 0;
            break;
        }
        SCEN_CHECK(CORO_RESULT(co) == 0 || CORO_RESULT(co) == -ETIMEDOUT, "%s wait ended %ld",
                   kind_name[f->kind], (long)CORO_RESULT(co));
        __atomic_add_fetch(CORO_RESULT(co) == 0 ? &x->ok : &x->timedout, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(CORO_RESULT(co) == 0 ? &x->kind_ok[f->kind] : &x->kind_to[f->kind], 1,
                           __ATOMIC_RELAXED);
        __atomic_add_fetch(&x->waits_done, 1, __ATOMIC_RELAXED);
    }
    __atomic_sub_fetch(&x->waiters_left, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

/* completes some waits of every kind until the waiters are done */
struct poker {
    coro_t co;
    struct ctx *x;
    uint64_t seed;
    void *item;
};

static int poker_body(coro_t *co)
{
    struct poker *f = CORO_SELF(co, struct poker);
    struct ctx *x = f->x;
    CORO_BEGIN(co);
    /* acquire: pairs with the waiters' release decrement */
    while (__atomic_load_n(&x->waiters_left, __ATOMIC_ACQUIRE) > 0) {
        switch (rnd(&f->seed) % 6) {
        case 0:
            coro_event_set(&x->ev);
            coro_event_reset(&x->ev);
            break;
        case 1:
            if (coro_sem_value(&x->sem) < CAP)
                coro_sem_release(&x->sem, 1);
            break;
        case 2:
            coro_chan_try_send(&x->rc, x);
            break;
        case 3:
            coro_chan_try_recv(&x->sc, &f->item);
            break;
        case 4:
            if (coro_waitgroup_add(&x->wg, -1) < 0)
                coro_waitgroup_add(&x->wg, 1);
            else
                coro_waitgroup_add(&x->wg, 1);
            break;
        default:
            if (rnd(&f->seed) % 2) {
                coro_event_set(&x->ev2);
                coro_event_reset(&x->ev2);
            } else {
                coro_chan_try_send(&x->c2, x);
            }
            break;
        }
        /* 0 .. 50 us between pokes: short timeouts mostly expire, long
         * ones mostly end with 0 */
        CORO_AWAIT(co, coro_sleep((int64_t)(rnd(&f->seed) % 50000)));
    }
    CORO_END(co);
}

static void *hog(void *arg)
{
    struct ctx *x = arg;
    uint64_t v = 0;
    while (!__atomic_load_n(&x->stop, __ATOMIC_RELAXED)) {
        for (int i = 0; i < 100000; i++)
            v += (uint64_t)i;
        __asm__ volatile("" : : "r"(v));    /* keep the loop */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    long total = SCEN_N(mode, 20000L, 60000L, 1000000L);
    const char *env = getenv("CORO_SOAK_WAITS");
    if (env && atol(env) > 0)
        total = atol(env);
    int nwait = K_N * PER_KIND;
    struct ctx *x = calloc(1, sizeof *x);
    struct waiter *w = calloc((size_t)nwait, sizeof *w);
    struct poker p = { .seed = 0x9e3779b97f4a7c15ull };
    pthread_t th;

    alarm((unsigned)(120 + total / 20000));     /* a hang fails the scenario */
    x->per_waiter = (total + nwait - 1) / nwait;
    x->waiters_left = nwait;
    SCEN_CHECK(coro_event_init(&x->ev) == 0, "init");
    SCEN_CHECK(coro_event_init(&x->ev2) == 0, "init");
    SCEN_CHECK(coro_mutex_init(&x->m) == 0, "init");
    SCEN_CHECK(coro_sem_init(&x->sem, 0) == 0, "init");
    SCEN_CHECK(coro_chan_init(&x->rc, x->rbuf, CAP) == 0, "init");
    SCEN_CHECK(coro_chan_init(&x->sc, x->sbuf, CAP) == 0, "init");
    SCEN_CHECK(coro_chan_init(&x->c2, x->c2buf, CAP) == 0, "init");
    SCEN_CHECK(coro_waitgroup_init(&x->wg) == 0, "init");
    SCEN_CHECK(coro_waitgroup_add(&x->wg, 1) == 1, "wg");
    for (int i = 0; i < CAP; i++)
        SCEN_CHECK(coro_chan_try_send(&x->sc, x) == 0, "fill");

    coro_sched_t *s = scen_sched(2);
    SCEN_CHECK(pthread_create(&th, NULL, hog, x) == 0, "hog");
    int64_t t0 = coro_now();
    p.x = x;
    for (int i = 0; i < nwait; i++) {
        w[i].x = x;
        w[i].kind = i % K_N;
        w[i].seed = 0x2545f4914f6cdd1dull * (uint64_t)(i + 1);
        SCEN_CHECK(coro_spawn(s, &w[i].co, waiter_body, NULL) == 0, "spawn");
    }
    SCEN_CHECK(coro_spawn(s, &p.co, poker_body, NULL) == 0, "spawn");
    long want = x->per_waiter * nwait;
    long rss10 = 0;
    while (__atomic_load_n(&x->waiters_left, __ATOMIC_ACQUIRE) > 0) {
        if (!rss10 && __atomic_load_n(&x->waits_done, __ATOMIC_RELAXED) >= want / 10)
            rss10 = rss_kib();
        usleep(2000);
    }
    for (int i = 0; i < nwait; i++)
        SCEN_CHECK(join_r(&w[i].co) == 0, "join");
    SCEN_CHECK(join_r(&p.co) == 0, "join poker");
    int64_t t1 = coro_now();
    long rss_end = rss_kib();
    __atomic_store_n(&x->stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);

    SCEN_CHECK(x->waits_done == want, "%ld of %ld waits", x->waits_done, want);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    rss10 = 0;  /* the sanitizers' shadow memory and quarantine grow on their own */
#endif
    if (rss10)
        SCEN_CHECK(rss_end - rss10 < 2048, "RSS grew %ld KiB after 10%% of the waits",
                   rss_end - rss10);
    printf("sync_timed: %ld timed waits (%ld ended 0, %ld timed out) in %.2f s, "
           "RSS %ld KiB at 10%%, %ld KiB at the end\n",
           want, x->ok, x->timedout, (double)(t1 - t0) / 1e9, rss10, rss_end);
    for (int k = 0; k < K_N; k++)
        printf("  %-9s %ld ended 0, %ld timed out\n", kind_name[k], x->kind_ok[k], x->kind_to[k]);
    SCEN_CHECK(coro_sched_shutdown(s, CORO_DRAIN) == 0, "shutdown");
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    free(w);
    free(x);
    return 0;
}
