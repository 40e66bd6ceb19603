/* SPDX-License-Identifier: MIT */
/* Virtual time and seeded runs (config .virtual_time, .seed;
 * coro_sched_now, coro_sched_advance; docs/testing.md): timers fire at
 * their deadlines in deadline order without real waiting, advance stops
 * exactly where told, a deadlock is an error and never a hang, the same
 * seed replays the same order and others find other orders, and the
 * outside world (fds, blocking calls) keeps real time. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL
#define SEC 1000000000LL

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static coro_sched_t *mkv(bool vtime, uint64_t seed)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = 0;
    c.virtual_time = vtime;
    c.seed = seed;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

/* ---- sleepers ------------------------------------------------------------------------ */

#define NSLEEP 10000

struct sleeper {
    coro_t co;
    int64_t dur, woke;
    intptr_t rc;
};

static int *order;          /* indexes of the sleepers in the order they woke */
static int norder;
static struct sleeper *sleepers;

static int sleeper_body(coro_t *co)
{
    struct sleeper *z = CORO_SELF(co, struct sleeper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(z->dur));
    z->rc = CORO_RESULT(co);
    z->woke = coro_now();
    order[norder++] = (int)(z - sleepers);
    CORO_END(co);
}

Test(sched_vtime, ten_thousand_sleepers_of_up_to_an_hour_wake_at_their_deadlines_in_order,
     .timeout = 30)
{
    coro_sched_t *s = mkv(true, 0);
    sleepers = calloc(NSLEEP, sizeof *sleepers);
    order = calloc(NSLEEP, sizeof *order);
    norder = 0;
    cr_assert(sleepers && order);
    srand(7);
    int64_t t0 = coro_sched_now(s), r0 = real_ns();
    cr_assert_eq(t0, CORO_VIRTUAL_TIME_START);
    for (int i = 0; i < NSLEEP; i++) {
        sleepers[i].dur = ((int64_t)rand() * 1000003 + rand()) % (3600 * SEC + 1);
        cr_assert_eq(coro_spawn(s, &sleepers[i].co, sleeper_body, NULL), 0);
    }
    cr_assert_geq(coro_sched_run(s), NSLEEP);
    int64_t real = real_ns() - r0;
    cr_assert_eq(norder, NSLEEP);
    for (int i = 0; i < NSLEEP; i++) {
        struct sleeper *z = &sleepers[order[i]];
        cr_assert_eq(z->rc, 0);
        cr_assert_eq(z->woke, t0 + z->dur, "sleeper %d woke at +%lld, its deadline +%lld",
                     order[i], (long long)(z->woke - t0), (long long)z->dur);
        if (i)
            cr_assert_geq(z->dur, sleepers[order[i - 1]].dur, "out of deadline order at %d", i);
    }
    cr_assert_eq(coro_sched_now(s), t0 + sleepers[order[NSLEEP - 1]].dur);
    cr_assert_lt(real, SEC, "an hour of virtual sleeps took %lld ms of real time",
                 (long long)(real / MS));
    cr_assert_eq(coro_sched_destroy(s), 0);
    free(sleepers);
    free(order);
}

Test(sched_vtime, advance_by_9s_leaves_a_10s_sleeper_asleep_and_1s_more_wakes_it, .timeout = 10)
{
    coro_sched_t *s = mkv(true, 0);
    struct sleeper z = { .dur = 10 * SEC };
    int o[1];
    sleepers = &z;
    order = o;
    norder = 0;
    int64_t t0 = coro_sched_now(s);
    cr_assert_eq(coro_spawn(s, &z.co, sleeper_body, NULL), 0);
    cr_assert_eq(coro_sched_advance(s, 0), 0);          /* it runs and sleeps */
    cr_assert_eq(coro_sched_advance(s, 9 * SEC), 0);
    cr_assert_eq(norder, 0, "woke after 9 s");
    cr_assert_eq(coro_sched_now(s), t0 + 9 * SEC);
    cr_assert_eq(coro_sched_advance(s, 1 * SEC), 0);
    cr_assert_eq(norder, 1);
    cr_assert_eq(z.woke, t0 + 10 * SEC);
    cr_assert_eq(coro_sched_now(s), t0 + 10 * SEC);
    cr_assert_eq(join_r(&z.co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_vtime, advance_stops_at_each_timer_on_the_way_and_ends_exactly_at_its_limit, .timeout = 10)
{
    coro_sched_t *s = mkv(true, 0);
    struct sleeper z[3] = { { .dur = 3 * SEC }, { .dur = 1 * SEC }, { .dur = 2 * SEC } };
    int o[3];
    sleepers = z;
    order = o;
    norder = 0;
    int64_t t0 = coro_sched_now(s);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(coro_spawn(s, &z[i].co, sleeper_body, NULL), 0);
    cr_assert_eq(coro_sched_advance(s, 2500 * MS), 0);
    cr_assert_eq(norder, 2);
    cr_assert_eq(o[0], 1);
    cr_assert_eq(o[1], 2);
    cr_assert_eq(z[1].woke, t0 + 1 * SEC);
    cr_assert_eq(z[2].woke, t0 + 2 * SEC);
    cr_assert_eq(coro_sched_now(s), t0 + 2500 * MS);
    cr_assert_eq(coro_sched_run(s), 1);     /* jumps to the last one */
    cr_assert_eq(z[0].woke, t0 + 3 * SEC);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- timed waits of every kind on the virtual clock --------------------------------------- */

struct timed {
    coro_t co;
    coro_event_t ev;
    coro_select_t sel;
    coro_group_t g;
    coro_t child;
    int64_t t0, t_ev, t_sel, t_grp, t_dl;
    intptr_t r_ev, r_sel, r_grp, r_dl;
};

static int hour_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(3600 * SEC));
    CORO_END(co);
}

static int timed_body(coro_t *co)
{
    struct timed *t = CORO_SELF(co, struct timed);
    CORO_BEGIN(co);
    t->t0 = coro_now();
    CORO_AWAIT(co, coro_event_wait(&t->ev, 5 * SEC));
    t->r_ev = CORO_RESULT(co);
    t->t_ev = coro_now();
    coro_select_init(&t->sel);
    coro_select_event(&t->sel, &t->ev);
    coro_select_timer(&t->sel, coro_now() + 7 * SEC);
    CORO_AWAIT(co, coro_select(&t->sel, CORO_FOREVER));
    t->r_sel = coro_select_end(&t->sel, CORO_RESULT(co));
    t->t_sel = coro_now();
    coro_spawn_opts_t o = { .group = &t->g };
    coro_spawn(coro_sched_current(), &t->child, hour_body, &o);
    CORO_AWAIT(co, coro_group_wait(&t->g, 60 * SEC));
    t->r_grp = CORO_RESULT(co);
    t->t_grp = coro_now();
    coro_group_cancel(&t->g);
    CORO_AWAIT(co, coro_group_wait(&t->g, CORO_FOREVER));
    CORO_END(co);
}

Test(sched_vtime, every_timeout_of_a_job_is_on_the_virtual_clock, .timeout = 10)
{
    coro_sched_t *s = mkv(true, 0);
    static struct timed t;
    memset(&t, 0, sizeof t);
    coro_event_init(&t.ev);
    coro_group_init(&t.g);
    int64_t r0 = real_ns();
    cr_assert_eq(block_on_r(s, &t.co, timed_body, NULL), 0);
    cr_assert_eq(t.r_ev, -ETIMEDOUT);
    cr_assert_eq(t.t_ev, t.t0 + 5 * SEC);
    cr_assert_geq(t.r_sel, 0, "the timer branch: %ld", (long)t.r_sel);
    cr_assert_eq(t.t_sel, t.t_ev + 7 * SEC);
    cr_assert_eq(t.r_grp, -ETIMEDOUT);
    cr_assert_eq(t.t_grp, t.t_sel + 60 * SEC);
    cr_assert_lt(real_ns() - r0, 5 * SEC);
    coro_group_destroy(&t.g);
    coro_event_destroy(&t.ev);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

struct dl_job {
    coro_t co;
    coro_event_t ev;
    intptr_t r;
    int64_t t;
};

static int dl_body(coro_t *co)
{
    struct dl_job *d = CORO_SELF(co, struct dl_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(&d->ev, CORO_FOREVER));
    d->r = CORO_RESULT(co);
    d->t = coro_now();
    CORO_END(co);
}

Test(sched_vtime, a_spawn_deadline_and_a_timed_join_are_on_the_virtual_clock, .timeout = 10)
{
    coro_sched_t *s = mkv(true, 0);
    struct dl_job d = { 0 };
    coro_event_init(&d.ev);
    int64_t t0 = coro_sched_now(s);
    coro_spawn_opts_t o = { .deadline = t0 + 90 * SEC };
    cr_assert_eq(coro_spawn(s, &d.co, dl_body, &o), 0);
    intptr_t res;
    cr_assert_eq(coro_join_timeout(&d.co, &res, 30 * SEC), -ETIMEDOUT);
    cr_assert_eq(coro_sched_now(s), t0 + 30 * SEC);
    cr_assert_eq(coro_join_timeout(&d.co, &res, CORO_FOREVER), 0);
    cr_assert_eq(d.r, -ETIMEDOUT);
    cr_assert_eq(d.t, t0 + 90 * SEC);
    coro_event_destroy(&d.ev);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- deadlock ---------------------------------------------------------------------------- */

Test(sched_vtime, a_join_on_a_job_waiting_for_an_event_nobody_sets_returns_edeadlk_at_once,
     .timeout = 10)
{
    coro_sched_t *s = mkv(true, 0);
    struct dl_job d = { 0 }, d2 = { 0 };
    coro_event_init(&d.ev);
    coro_event_init(&d2.ev);
    coro_spawn_opts_t o = { .name = "stuck-waiter" };
    cr_assert_eq(coro_spawn(s, &d.co, dl_body, &o), 0);
    int64_t r0 = real_ns();
    cr_assert_eq(join_r(&d.co), -EDEADLK);
    cr_assert_lt(real_ns() - r0, 200 * MS);
    cr_assert_eq(block_on_r(s, &d2.co, dl_body, NULL), -EDEADLK);
    cr_assert_geq(coro_sched_run(s), 0);        /* returns: nothing can run */

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_geq(coro_sched_dump(s, f), 2);
    fclose(f);
    cr_assert(strstr(buf, "stuck-waiter"), "%s", buf);
    cr_assert(strstr(buf, "event"), "the dump does not say what it waits on:\n%s", buf);
    free(buf);

    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(d.r, -ECANCELED);
    cr_assert_eq(coro_sched_destroy(s), 0);
    coro_event_destroy(&d.ev);
    coro_event_destroy(&d2.ev);
}

/* ---- seeds ---------------------------------------------------------------------------- */

#define NSTEP 6
#define NJOB 5

struct stepper {
    coro_t co;
    int id, i;
};

static char steps_log[NJOB * NSTEP + 1];
static int nsteps;

static int stepper_body(coro_t *co)
{
    struct stepper *p = CORO_SELF(co, struct stepper);
    CORO_BEGIN(co);
    for (p->i = 0; p->i < NSTEP; p->i++) {
        steps_log[nsteps++] = (char)('a' + p->id);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

/* the order of steps under seed (a string), and the trace into *trace
 * when trace is not NULL: whole on a virtual clock, without its real
 * timing on the real one */
static void run_seed(uint64_t seed, bool vtime, char *out, char **trace)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    static struct stepper p[NJOB];
    c.workers = 0;
    c.seed = seed;
    c.virtual_time = vtime;
    c.trace_events = trace ? 4096 : 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    memset(p, 0, sizeof p);
    nsteps = 0;
    for (int i = 0; i < NJOB; i++) {
        p[i].id = i;
        cr_assert_eq(coro_spawn(s, &p[i].co, stepper_body, NULL), 0);
    }
    cr_assert_geq(coro_sched_run(s), NJOB * NSTEP);
    cr_assert_eq(nsteps, NJOB * NSTEP);
    memcpy(out, steps_log, NJOB * NSTEP);
    out[NJOB * NSTEP] = 0;
    if (trace) {
        char path[] = "/tmp/corokit-vtime-XXXXXX";
        int fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(coro_sched_trace_write(s, path), 0);
        FILE *f = fopen(path, "r");
        cr_assert(f);
        static char raw[1 << 20];
        size_t n = fread(raw, 1, sizeof raw - 1, f);
        fclose(f);
        raw[n] = 0;
        cr_assert_lt(n, sizeof raw - 1);
        char *buf = malloc(n + 1), *o = buf;
        /* on the real clock, every event with its real timing dropped:
         * "ts":N, "dur":N, and "run":N (how many steps shared one clock
         * reading, which the tracer adapts to their real length) */
        for (const char *q = raw; *q;) {
            if (!vtime && (!strncmp(q, "\"ts\":", 5) || !strncmp(q, "\"dur\":", 6) ||
                           !strncmp(q, "\"run\":", 6))) {
                while (*q && *q != ',' && *q != '}')
                    q++;
                if (o > buf && o[-1] == ',')
                    o--;        /* "...","run":4}: the comma before it too */
                continue;
            }
            *o++ = *q++;
        }
        *o = 0;
        unlink(path);
        *trace = buf;
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_vtime, the_same_seed_twice_gives_the_same_order_of_steps_and_the_same_trace, .timeout = 20)
{
    char a[NJOB * NSTEP + 1], b[NJOB * NSTEP + 1];
    char *ta, *tb;
    run_seed(12345, true, a, &ta);
    run_seed(12345, true, b, &tb);
    cr_assert_str_eq(a, b);
    cr_assert(strstr(ta, "\"cat\":\"job\""), "no steps traced");
    size_t k = 0;
    while (ta[k] && ta[k] == tb[k])
        k++;
    cr_assert_eq(ta[k], tb[k], "two traces of one seed differ at %zu:\n%.300s\n---\n%.300s", k,
                 ta + (k > 150 ? k - 150 : 0), tb + (k > 150 ? k - 150 : 0));
    free(ta);
    free(tb);
    run_seed(777, false, a, &ta);       /* on the real clock too */
    run_seed(777, false, b, &tb);
    cr_assert_str_eq(a, b);
    cr_assert_str_eq(ta, tb, "two real-clock traces of one seed differ");
    free(ta);
    free(tb);
}

Test(sched_vtime, a_virtual_trace_is_stamped_with_the_virtual_clock, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    c.workers = 0;
    c.virtual_time = true;
    c.trace_events = 1024;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    struct sleeper z = { .dur = 1500 * MS };
    int o[1];
    sleepers = &z;
    order = o;
    norder = 0;
    cr_assert_eq(block_on_r(s, &z.co, sleeper_body, NULL), 0);
    char path[] = "/tmp/corokit-vtime-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(coro_sched_trace_write(s, path), 0);
    FILE *f = fopen(path, "r");
    static char raw[1 << 16];
    size_t n = fread(raw, 1, sizeof raw - 1, f);
    raw[n] = 0;
    fclose(f);
    unlink(path);
    /* its first step at the clock's start, its second 1.5 s later (in
     * microseconds from the start), both taking no time */
    cr_assert(strstr(raw, "\"ts\":0.000,\"dur\":0.000"), "%s", raw);
    cr_assert(strstr(raw, "\"ts\":1500000.000,\"dur\":0.000"), "%s", raw);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

Test(sched_vtime, a_hundred_seeds_give_more_than_one_order, .timeout = 20)
{
    char first[NJOB * NSTEP + 1], o[NJOB * NSTEP + 1];
    int differ = 0;
    run_seed(1, true, first, NULL);
    for (uint64_t seed = 2; seed <= 100; seed++) {
        run_seed(seed, true, o, NULL);
        differ += strcmp(first, o) != 0;
    }
    cr_assert_gt(differ, 0);
}

/* three jobs each take 10 from a balance of 20 after checking that it
 * holds 10 - a check-then-act with a yield between the two: some
 * orders let all three pass the check */
struct racer {
    coro_t co;
};

static int balance;

static int racer_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_YIELD(co);
    if (balance >= 10) {
        CORO_YIELD(co);         /* the window */
        balance -= 10;
    }
    CORO_END(co);
}

static bool race_fails(uint64_t seed)
{
    static struct racer r[3];
    coro_sched_t *s = mkv(true, seed);
    memset(r, 0, sizeof r);
    balance = 20;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(coro_spawn(s, &r[i].co, racer_body, NULL), 0);
    coro_sched_run(s);
    cr_assert_eq(coro_sched_destroy(s), 0);
    return balance < 0;
}

Test(sched_vtime, a_racy_check_then_act_fails_for_some_seed_under_1000_and_always_for_it,
     .timeout = 30)
{
    uint64_t bad = 0;
    int good = 0;
    for (uint64_t seed = 1; seed < 1000; seed++) {
        if (!race_fails(seed))
            good++;
        else if (!bad)
            bad = seed;
    }
    cr_assert_neq(bad, 0, "no seed under 1000 found the race");
    for (int i = 0; i < 5; i++)
        cr_assert(race_fails(bad), "seed %llu failed once, not again", (unsigned long long)bad);
    cr_assert_gt(good, 0, "every seed fails: the sweep shows no ordering");
}

/* ---- errors ---------------------------------------------------------------------------- */

Test(sched_vtime, virtual_time_or_a_seed_with_workers_is_einval, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = (coro_sched_t *)&c;
    c.virtual_time = true;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    cr_assert_null(s);
    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    c.virtual_time = false;
    c.seed = 42;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    c.workers = CORO_WORKERS_AUTO;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
}

struct adv {
    coro_t co;
    coro_sched_t *s;
    int rc;
};

static int adv_body(coro_t *co)
{
    struct adv *a = CORO_SELF(co, struct adv);
    CORO_BEGIN(co);
    a->rc = coro_sched_advance(a->s, SEC);
    CORO_END(co);
}

Test(sched_vtime, advance_is_einval_on_a_real_clock_or_backwards_and_edeadlk_from_a_job,
     .timeout = 10)
{
    coro_sched_t *r = mkv(false, 0), *v = mkv(true, 0);
    cr_assert_eq(coro_sched_advance(r, SEC), -EINVAL);
    cr_assert_eq(coro_sched_advance(NULL, SEC), -EINVAL);
    cr_assert_eq(coro_sched_advance(v, -1), -EINVAL);
    cr_assert_eq(coro_sched_now(v), CORO_VIRTUAL_TIME_START);
    struct adv a = { .s = v };
    cr_assert_eq(block_on_r(v, &a.co, adv_body, NULL), 0);
    cr_assert_eq(a.rc, -EDEADLK);
    cr_assert_eq(coro_sched_now(v), CORO_VIRTUAL_TIME_START);
    /* a real clock's now is coro_now()'s */
    int64_t n0 = coro_now(), n = coro_sched_now(r);
    cr_assert(n >= n0 && n <= coro_now());
    cr_assert_eq(coro_sched_destroy(r), 0);
    cr_assert_eq(coro_sched_destroy(v), 0);
}

/* ---- the outside world keeps real time ---------------------------------------------------- */

struct reader {
    coro_t co;
    int fd;
    char c;
    intptr_t r;
    int64_t t;
};

static int reader_body(coro_t *co)
{
    struct reader *rd = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(rd->fd, &rd->c, 1, 10 * SEC));
    rd->r = CORO_RESULT(co);
    rd->t = coro_now();
    CORO_END(co);
}

static void *late_writer(void *arg)
{
    usleep(30000);      /* real time passes while the reader waits */
    ssize_t n = write(*(int *)arg, "x", 1);
    (void)n;
    return NULL;
}

static intptr_t nap(void *arg)
{
    (void)arg;
    usleep(20000);
    return 7;
}

struct napper {
    coro_t co;
    intptr_t r;
    int64_t t;
};

static int napper_body(coro_t *co)
{
    struct napper *n = CORO_SELF(co, struct napper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(nap, NULL));
    n->r = CORO_RESULT(co);
    n->t = coro_now();
    CORO_END(co);
}

Test(sched_vtime, the_clock_does_not_jump_while_a_job_waits_on_an_fd_or_a_blocking_call,
     .timeout = 20)
{
    coro_sched_t *s = mkv(true, 0);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    struct reader rd = { .fd = p[0] };
    struct napper np = { 0 };
    struct sleeper z = { .dur = 3600 * SEC };
    int o[1];
    sleepers = &z;
    order = o;
    norder = 0;
    int64_t t0 = coro_sched_now(s);
    pthread_t t;
    cr_assert_eq(coro_spawn(s, &z.co, sleeper_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &rd.co, reader_body, NULL), 0);
    cr_assert_eq(coro_spawn(s, &np.co, napper_body, NULL), 0);
    cr_assert_eq(pthread_create(&t, NULL, late_writer, &p[1]), 0);
    cr_assert_geq(coro_sched_run(s), 3);
    pthread_join(t, NULL);
    cr_assert_eq(rd.r, 1);
    cr_assert_eq(rd.t, t0, "the clock moved while the reader waited");
    cr_assert_eq(np.r, 7);
    cr_assert_eq(np.t, t0, "the clock moved while the blocking call ran");
    cr_assert_eq(z.woke, t0 + 3600 * SEC);
    close(p[0]);
    close(p[1]);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- a seed keeps priorities; a drain jumps; a seed on the real clock ------------------- */

struct tagged {
    coro_t co;
    char tag;
};

static int tagged_body(coro_t *co)
{
    struct tagged *t = CORO_SELF(co, struct tagged);
    CORO_BEGIN(co);
    steps_log[nsteps++] = t->tag;
    CORO_END(co);
}

Test(sched_vtime, a_seed_draws_among_the_highest_ready_priority_only, .timeout = 20)
{
    for (uint64_t seed = 1; seed <= 50; seed++) {
        coro_sched_t *s = mkv(false, seed);
        struct tagged t[6];
        memset(t, 0, sizeof t);
        nsteps = 0;
        for (int i = 0; i < 6; i++) {
            t[i].tag = i < 2 ? 'H' : i < 4 ? 'N' : 'L';
            coro_spawn_opts_t o = { .priority = i < 2 ? CORO_PRIO_HIGH
                                                      : i < 4 ? CORO_PRIO_NORMAL : CORO_PRIO_LOW };
            cr_assert_eq(coro_spawn(s, &t[i].co, tagged_body, &o), 0);
        }
        cr_assert_eq(coro_sched_run(s), 6);
        steps_log[nsteps] = 0;
        cr_assert_str_eq(steps_log, "HHNNLL", "seed %llu", (unsigned long long)seed);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(sched_vtime, destroy_drains_sleepers_of_an_hour_at_once_on_the_virtual_clock, .timeout = 10)
{
    coro_sched_t *s = mkv(true, 3);
    struct sleeper z[4];
    int o[4];
    sleepers = z;
    order = o;
    norder = 0;
    int64_t t0 = coro_sched_now(s), r0 = real_ns();
    for (int i = 0; i < 4; i++) {
        z[i] = (struct sleeper){ .dur = (i + 1) * 900 * SEC };
        cr_assert_eq(coro_spawn(s, &z[i].co, sleeper_body, NULL), 0);
    }
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(norder, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(z[i].woke, t0 + z[i].dur);
    cr_assert_lt(real_ns() - r0, 5 * SEC);
}

Test(sched_vtime, a_seed_on_the_real_clock_still_waits_for_timers, .timeout = 10)
{
    coro_sched_t *s = mkv(false, 9);
    struct sleeper z[3];
    int o[3];
    sleepers = z;
    order = o;
    norder = 0;
    int64_t r0 = real_ns();
    for (int i = 0; i < 3; i++) {
        z[i] = (struct sleeper){ .dur = (3 - i) * 2 * MS };
        cr_assert_eq(coro_spawn(s, &z[i].co, sleeper_body, NULL), 0);
    }
    cr_assert_geq(coro_sched_run(s), 6);
    cr_assert_eq(norder, 3);     /* their order is the real clock's: not asserted */
    for (int i = 0; i < 3; i++)
        cr_assert_geq(z[i].woke - z[i].dur, r0, "woke before its deadline");
    cr_assert_eq(coro_sched_destroy(s), 0);
}
