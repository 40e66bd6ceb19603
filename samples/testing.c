/* SPDX-License-Identifier: MIT */
/* testing - timing code tested on a virtual clock, and orderings found by
 * a seed sweep (docs/testing.md quotes it by its markers).
 *
 *   testing              run every scenario, print what each saw
 *   testing --self-test  the same; exit 0 when every check holds
 *   testing --seed N     replay the racy counter under seed N only
 *
 * Ten virtual minutes of retries, timeouts and a rate limiter run in a few
 * milliseconds of real time: the scheduler's clock (.virtual_time) jumps to
 * the next deadline whenever no job can run. */
#define _GNU_SOURCE
#include <corokit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

static int failures;

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "testing: %s:%d: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

/* [vtime-sched] */
static coro_sched_t *virtual_sched(uint64_t seed)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = 0;              /* virtual time and seeds need one driving thread */
    c.virtual_time = true;      /* the clock starts at CORO_VIRTUAL_TIME_START */
    c.seed = seed;              /* 0: the queues' own order */
    if (coro_sched_create(&s, &c) < 0)
        exit(2);
    return s;
}
/* [/vtime-sched] */

/* ---- a job that retries with backoff --------------------------------------------------- */

/* [retry] */
/* the service is down for its first 100 s */
static int64_t service_up_at;

static int call_service(void)
{
    return coro_now() >= service_up_at ? 0 : -ECONNREFUSED;
}

struct retry {
    coro_t co;
    int64_t backoff;
    int attempts;
    int64_t done_at;
};

static int retry_body(coro_t *co)
{
    struct retry *r = CORO_SELF(co, struct retry);
    CORO_BEGIN(co);
    for (r->backoff = 1 * SEC;; r->backoff *= 2) {
        r->attempts++;
        if (call_service() == 0)
            break;
        CORO_AWAIT(co, coro_sleep(r->backoff));        /* 1, 2, 4, ... s: virtual */
    }
    r->done_at = coro_now();
    CORO_END(co);
}

static void test_retry(void)
{
    coro_sched_t *s = virtual_sched(0);
    struct retry r = { 0 };
    int64_t t0 = coro_sched_now(s);
    service_up_at = t0 + 100 * SEC;
    intptr_t res;
    coro_block_on(s, &r.co, retry_body, NULL, &res);
    /* tries at +0, 1, 3, 7, 15, 31, 63 and 127 s: the eighth succeeds */
    CHECK(r.attempts == 8, "retry: %d attempts", r.attempts);
    CHECK(r.done_at == t0 + 127 * SEC, "retry: done at +%" PRId64 " ns", r.done_at - t0);
    printf("retry:        %d attempts, done at +%" PRId64 " s virtual\n", r.attempts,
           (r.done_at - t0) / SEC);
    coro_sched_destroy(s);
}
/* [/retry] */

/* ---- a timeout race ---------------------------------------------------------------------- */

/* [timeout-race] */
struct replier {
    coro_t co;
    coro_event_t *reply;
    int64_t after;
};

static int replier_body(coro_t *co)
{
    struct replier *p = CORO_SELF(co, struct replier);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(p->after));
    coro_event_set(p->reply);
    CORO_END(co);
}

struct requester {
    coro_t co;
    coro_event_t *reply;
    intptr_t rc;
};

static int requester_body(coro_t *co)
{
    struct requester *q = CORO_SELF(co, struct requester);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(q->reply, 5 * SEC));    /* the timeout under test */
    q->rc = CORO_RESULT(co);
    CORO_END(co);
}

/* the reply comes `after` ns from now: does the request time out? */
static intptr_t race(int64_t after)
{
    coro_sched_t *s = virtual_sched(0);
    coro_event_t ev;
    struct replier p = { .reply = &ev, .after = after };
    struct requester q = { .reply = &ev };
    coro_event_init(&ev);
    coro_spawn(s, &p.co, replier_body, NULL);
    intptr_t res;
    coro_block_on(s, &q.co, requester_body, NULL, &res);
    coro_join(&p.co, &res);
    coro_sched_destroy(s);
    coro_event_destroy(&ev);
    return q.rc;
}

static void test_timeout_race(void)
{
    /* one nanosecond either side of the timeout, every run the same */
    CHECK(race(5 * SEC - 1) == 0, "race: a reply 1 ns early timed out");
    CHECK(race(5 * SEC + 1) == -ETIMEDOUT, "race: a reply 1 ns late was taken");
    printf("timeout race: reply at 5 s - 1 ns wins, at 5 s + 1 ns loses\n");
}
/* [/timeout-race] */

/* ---- a rate limiter over ten virtual minutes ------------------------------------------------ */

/* [rate-limiter] */
/* a token bucket: `rate` tokens a second, at most `burst` saved up */
struct bucket {
    int64_t rate, burst, tokens, last;
};

static int64_t bucket_wait(struct bucket *b)   /* ns until a token, taking it if 0 */
{
    int64_t now = coro_now(), per = SEC / b->rate;
    int64_t add = (now - b->last) / per;
    if (add > 0) {
        b->tokens = b->tokens + add > b->burst ? b->burst : b->tokens + add;
        b->last += add * per;
    }
    if (b->tokens > 0) {
        b->tokens--;
        return 0;
    }
    return b->last + per - now;
}

struct client {
    coro_t co;
    struct bucket *b;
    int64_t until;
    int64_t sent;
};

static int client_body(coro_t *co)
{
    struct client *c = CORO_SELF(co, struct client);
    CORO_BEGIN(co);
    while (coro_now() < c->until) {
        int64_t wait = bucket_wait(c->b);
        if (wait > 0) {
            CORO_AWAIT(co, coro_sleep(wait));
            continue;
        }
        c->sent++;
    }
    CORO_END(co);
}

static void test_rate_limiter(void)
{
    int64_t r0 = real_ns();
    coro_sched_t *s = virtual_sched(0);
    int64_t t0 = coro_sched_now(s);
    struct bucket b = { .rate = 10, .burst = 20, .tokens = 20, .last = t0 };
    struct client c[4];
    int64_t sent = 0;
    for (int i = 0; i < 4; i++) {
        c[i] = (struct client){ .b = &b, .until = t0 + 600 * SEC };    /* ten minutes */
        coro_spawn(s, &c[i].co, client_body, NULL);
    }
    coro_sched_run(s);
    for (int i = 0; i < 4; i++)
        sent += c[i].sent;
    /* the burst, then one token every 100 ms, at 0.1 s ... 599.9 s,
     * whoever asks */
    CHECK(sent == 20 + 5999, "limiter: %" PRId64 " requests in ten minutes", sent);
    int64_t virt = coro_sched_now(s) - t0;
    coro_sched_destroy(s);
    printf("rate limiter: %" PRId64 " requests in %" PRId64 " virtual minutes, %.1f ms real\n",
           sent, virt / (60 * SEC), (double)(real_ns() - r0) / MS);
    CHECK(virt == 600 * SEC, "limiter: the clock ended at +%" PRId64 " ns", virt);
}
/* [/rate-limiter] */

/* ---- a producer and a consumer under every interleaving ------------------------------------ */

/* [interleavings] */
struct party {
    coro_t co;
    coro_chan_t *ch;
    char who;
    int i;
    void *item;         /* in the frame: it outlives the await */
};

static char steps[16];
static int nsteps;

static int producer_body(coro_t *co)
{
    struct party *p = CORO_SELF(co, struct party);
    CORO_BEGIN(co);
    for (p->i = 1; p->i <= 3; p->i++) {
        CORO_AWAIT(co, coro_chan_send(p->ch, (void *)(intptr_t)p->i, CORO_FOREVER));
        steps[nsteps++] = (char)(p->who + p->i);       /* 'P'+1 ...: sent item i */
        CORO_YIELD(co);         /* a scheduling point, as any other await */
    }
    CORO_END(co);
}

static int consumer_body(coro_t *co)
{
    struct party *p = CORO_SELF(co, struct party);
    CORO_BEGIN(co);
    for (p->i = 1; p->i <= 3; p->i++) {
        CORO_AWAIT(co, coro_chan_recv(p->ch, &p->item, CORO_FOREVER));
        if ((intptr_t)p->item != p->i)
            failures++;                 /* the invariant: items in order */
        steps[nsteps++] = (char)('a' + p->i);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

/* one run under seed: the order of the five parties' steps */
static void run_channel(uint64_t seed, char *out)
{
    coro_sched_t *s = virtual_sched(seed);
    void *buf[1];
    coro_chan_t ch;
    struct party p = { .ch = &ch, .who = 'P' }, q = { .ch = &ch, .who = 'c' };
    coro_chan_init(&ch, buf, 1);
    nsteps = 0;
    coro_spawn(s, &p.co, producer_body, NULL);
    coro_spawn(s, &q.co, consumer_body, NULL);
    coro_sched_run(s);
    coro_sched_destroy(s);
    coro_chan_destroy(&ch);
    memcpy(out, steps, (size_t)nsteps);
    out[nsteps] = 0;
}

static void test_interleavings(void)
{
    static char seen[64][16];
    int nseen = 0, quiet = 0;
    /* sweep seeds until 500 in a row find no new order: the state space
     * is small, so the sweep has seen every order the scheduler can give */
    for (uint64_t seed = 1; quiet < 500 && nseen < 64; seed++) {
        char o[16];
        int k;
        run_channel(seed, o);
        for (k = 0; k < nseen && strcmp(seen[k], o) != 0; k++)
            ;
        if (k == nseen) {
            strcpy(seen[nseen++], o);
            quiet = 0;
        } else {
            quiet++;
        }
    }
    CHECK(nseen > 1, "interleavings: only one order");
    printf("interleavings: %d orders of a producer and a consumer, items in order in each\n",
           nseen);
}
/* [/interleavings] */

/* ---- a seed sweep that finds an ordering bug ------------------------------------------------- */

/* [seed-sweep] */
/* two jobs add to a counter with a read, a yield (an await) and a write:
 * a lost update when both read before either writes */
static int counter;

struct adder {
    coro_t co;
    int seen;
};

static int adder_body(coro_t *co)
{
    struct adder *a = CORO_SELF(co, struct adder);
    CORO_BEGIN(co);
    CORO_YIELD(co);
    a->seen = counter;          /* read */
    CORO_YIELD(co);             /* anything that awaits: a lookup, a log write */
    counter = a->seen + 1;      /* write */
    CORO_END(co);
}

static bool counter_ok(uint64_t seed)
{
    coro_sched_t *s = virtual_sched(seed);
    struct adder a[2] = { 0 };
    counter = 0;
    for (int i = 0; i < 2; i++)
        coro_spawn(s, &a[i].co, adder_body, NULL);
    coro_sched_run(s);
    coro_sched_destroy(s);
    return counter == 2;
}

static void test_seed_sweep(void)
{
    uint64_t bad = 0;
    for (uint64_t seed = 1; seed <= 1000 && !bad; seed++)
        if (!counter_ok(seed))
            bad = seed;
    CHECK(bad != 0, "sweep: no seed lost an update");
    if (!bad)
        return;
    printf("seed sweep:   seed %" PRIu64 " loses an update (replay: testing --seed %" PRIu64
           ")\n", bad, bad);
    for (int i = 0; i < 10; i++)
        CHECK(!counter_ok(bad), "sweep: seed %" PRIu64 " did not fail again", bad);
}
/* [/seed-sweep] */

int main(int argc, char **argv)
{
    char *end = NULL;
    uint64_t seed = 0;

    if (argc == 3 && strcmp(argv[1], "--seed") == 0)
        seed = strtoull(argv[2], &end, 0);      /* any uint64_t, 0x... too */
    if (end && *end == 0 && end != argv[2] && argv[2][0] != '-') {
        bool ok = counter_ok(seed);
        printf("seed %" PRIu64 ": counter %s\n", seed, ok ? "ok" : "lost an update");
        return ok ? 0 : 1;
    }
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "--self-test") != 0)) {
        fprintf(stderr, "usage: %s [--seed SEED] | --self-test\n", argv[0]);
        return 2;
    }
    int64_t r0 = real_ns();
    test_retry();
    test_timeout_race();
    test_rate_limiter();
    test_interleavings();
    test_seed_sweep();
    printf("real time:    %" PRId64 " ms in all\n", (real_ns() - r0) / MS);
    if (failures)
        fprintf(stderr, "testing: %d checks failed\n", failures);
    return failures ? 1 : 0;
}
