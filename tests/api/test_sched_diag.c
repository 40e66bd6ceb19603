/* SPDX-License-Identifier: MIT */
/* Diagnostics: the stall detector, latency histograms, per-worker stats,
 * coro_sched_dump and the .name spawn option (docs/diagnostics.md). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void spin_ns(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

/* ---- the stall detector ------------------------------------------------------------ */

struct spinner {
    coro_t co;
    int steps;
    int64_t step_ns;
    int i;
};

/* A step of the spinner that spins is one whose report comes while its
 * i is still that step's: the hook runs on the worker right after the
 * step, before the next one moves i on.  Its other steps (the last one,
 * which only ends the job) are short, but on a loaded machine one can
 * lose its CPU past the threshold, and its report is then true: the log
 * keeps the spinning step's report apart and counts every report. */
struct stall_log {
    int n;                  /* every report */
    int spin_reports;       /* reports of step `spin_step` of the spinner `sp` */
    const struct spinner *sp;
    int spin_step;
    coro_stall_t last;      /* the last report of that step */
    char name[32];
};

static void on_stall(const coro_stall_t *info, void *arg)
{
    struct stall_log *l = arg;
    l->n++;
    if (l->sp && (info->job != &l->sp->co || l->sp->i != l->spin_step))
        return;
    l->spin_reports++;
    l->last = *info;
    snprintf(l->name, sizeof l->name, "%s", info->name ? info->name : "");
    l->last.name = NULL;
    l->last.symbol = NULL;
}

/* steps of step_ns each, a yield between them (not static: its symbol is
 * exported with -rdynamic, for dladdr) */
int diag_spinner_body(coro_t *co);
int diag_spinner_body(coro_t *co)
{
    struct spinner *sp = CORO_SELF(co, struct spinner);
    CORO_BEGIN(co);
    for (sp->i = 0; sp->i < sp->steps; sp->i++) {
        spin_ns(sp->step_ns);
        CORO_YIELD(co);
    }
    CORO_END(co);
}

static coro_sched_t *mk_stall(int workers, int64_t stall_ns, struct stall_log *log)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = workers;
    c.stall_ns = stall_ns;
    c.stall_hook = on_stall;
    c.stall_arg = log;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    return s;
}

Test(sched_diag, stall_detector_fires_for_a_20ms_step_with_name_worker_and_body, .timeout = 30)
{
    for (int workers = 0; workers <= 2; workers += 2) {
        struct spinner sp = { .steps = 1, .step_ns = 20 * 1000000LL };
        struct stall_log log = { .sp = &sp, .spin_step = 0 };
        coro_sched_t *s = mk_stall(workers, 10 * 1000000LL, &log);
        coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH, .name = "slowpoke" };
        cr_assert_eq(block_on_r(s, &sp.co, diag_spinner_body, &o), 0);
        /* the 20 ms step: one report; the job's last step, which only
         * ends it, may be reported too if the machine took its CPU away */
        cr_assert_eq(log.spin_reports, 1, "%d workers: %d reports of the 20 ms step (%d in all)",
                     workers, log.spin_reports, log.n);
        cr_assert_leq(log.n, 2, "%d workers: %d reports for a job of 2 steps", workers, log.n);
        cr_assert_str_eq(log.name, "slowpoke");
        cr_assert_eq(log.last.job, &sp.co);
        cr_assert_eq(log.last.fn, (void *)diag_spinner_body);
        cr_assert_geq(log.last.duration_ns, 20 * 1000000LL);
        cr_assert_eq(log.last.priority, CORO_PRIO_HIGH);
        cr_assert(log.last.worker >= 0 && log.last.worker < (workers ? workers : 1));
        if (workers == 0)
            cr_assert_eq(log.last.cpu, -1);
        coro_worker_stats_t w;
        cr_assert_eq(coro_sched_worker_stats(s, log.last.worker, &w), 0);
        cr_assert_geq(w.stalls, 1);
        if (workers)
            cr_assert_eq(log.last.cpu, w.cpu);
        coro_sched_stats_t st;
        cr_assert_eq(coro_sched_stats(s, &st), 0);
        cr_assert_eq(st.stalls, (uint64_t)log.n, "stats count %llu stalls, the hook saw %d",
                     (unsigned long long)st.stalls, log.n);
        coro_sched_destroy(s);
    }
}

/* The detector measures a step in wall time, and on a loaded machine a
 * 1 ms step can lose its CPU for longer than the threshold: a report of
 * such a step is true.  So the stepper bounds each step's length from
 * outside: a step began after the step before it yielded, and ended
 * before the hook (called on the worker right after the step) or the next
 * step began.  Every report must name a step that lasted over the
 * threshold and no longer than that bound; and steps that surely lasted
 * less than the threshold must have been seen, which a detector that
 * reports short steps then reports (a report of at most the threshold, or
 * of more than the step's bound, fails). */
struct stepper {
    coro_t co;
    int steps, i;
    int64_t step_ns, stall_ns;
    int64_t began_after;        /* the running step began after this */
    int64_t yielded;            /* when the last step yielded */
    int short_steps;            /* steps that surely lasted under stall_ns */
    int reports, false_reports;
    int64_t false_dur, false_bound;
};

static int stepper_body(coro_t *co)
{
    struct stepper *st = CORO_SELF(co, struct stepper);
    CORO_BEGIN(co);
    for (st->i = 0; st->i < st->steps; st->i++) {
        if (st->i > 0) {
            /* the previous step lasted less than now - its began_after */
            if (now_ns() - st->began_after < st->stall_ns)
                st->short_steps++;
            st->began_after = st->yielded;
        }
        spin_ns(st->step_ns);
        st->yielded = now_ns();
        CORO_YIELD(co);
    }
    CORO_END(co);
}

static void on_stall_step(const coro_stall_t *info, void *arg)
{
    struct stepper *st = arg;
    int64_t bound = now_ns() - st->began_after;

    st->reports++;
    if (info->duration_ns <= st->stall_ns || info->duration_ns > bound) {
        st->false_reports++;
        st->false_dur = info->duration_ns;
        st->false_bound = bound;
    }
}

/* Rounds go on until 20 steps surely lasted under the threshold: on a
 * loaded machine most steps of a round can lose their CPU past it, so the
 * number of rounds is bounded by time (40 s), not by a count. */
Test(sched_diag, stall_detector_is_silent_for_1ms_steps, .timeout = 90)
{
    struct stepper st = { .steps = 20, .step_ns = 1000000LL, .stall_ns = 15 * 1000000LL };
    int reports = 0, short_steps = 0, rounds = 0;
    int64_t end = now_ns() + 40 * 1000000000LL;

    for (; short_steps < 20 && (rounds < 10 || now_ns() < end); rounds++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_sched_t *s;
        c.workers = 2;
        c.stall_ns = st.stall_ns;
        c.stall_hook = on_stall_step;
        c.stall_arg = &st;
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        st.short_steps = st.reports = 0;
        st.began_after = now_ns();
        cr_assert_eq(block_on_r(s, &st.co, stepper_body, NULL), 0);
        coro_sched_destroy(s);
        cr_assert_eq(st.false_reports, 0,
                     "a report of %lld ns for a step of at most %lld ns (threshold %lld ns)",
                     (long long)st.false_dur, (long long)st.false_bound, (long long)st.stall_ns);
        reports += st.reports;
        short_steps += st.short_steps;
    }
    cr_assert_geq(short_steps, 20,
                  "only %d of the steps of %d rounds surely lasted under 15 ms (%d reports)",
                  short_steps, rounds, reports);
}

/* No hook: a line on stderr per report, naming the body by its symbol.
 * The 3 ms step is reported at 1 ms; the job's last step (it only ends
 * the job) may be too, when the machine took its CPU for a millisecond,
 * so the test reads what was written: 1 or 2 lines, as many as the stats
 * count, one of them for diag_spinner_body and at least 3 ms. */
Test(sched_diag, stall_detector_symbol_and_stderr_default, .timeout = 30)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    char path[] = "/tmp/corokit-test-stall-XXXXXX", line[512];
    int fd = mkstemp(path), saved = dup(2), lines = 0, spin_lines = 0;
    double ms = 0, longest = 0;

    cr_assert(fd >= 0 && saved >= 0);
    unlink(path);
    c.workers = 0;
    c.stall_ns = 1000000LL;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    struct spinner sp = { .steps = 1, .step_ns = 3 * 1000000LL };
    fflush(stderr);
    dup2(fd, 2);
    int rc = block_on_r(s, &sp.co, diag_spinner_body, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(rc, 0);
    coro_sched_stats_t st;
    coro_sched_stats(s, &st);
    coro_sched_destroy(s);
    FILE *f = fdopen(fd, "r");
    cr_assert(f);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "corokit: stall: job ", 20) != 0)
            continue;
        lines++;
        const char *run = strstr(line, "has run ");
        if (strstr(line, " body diag_spinner_body (") && run && sscanf(run, "has run %lf ms", &ms) == 1) {
            spin_lines++;
            longest = ms > longest ? ms : longest;
        }
    }
    fclose(f);
    cr_assert(lines >= 1 && lines <= 2, "%d stall lines for a job of 2 steps", lines);
    cr_assert_eq(st.stalls, (uint64_t)lines, "stats count %llu stalls, stderr has %d lines",
                 (unsigned long long)st.stalls, lines);
    cr_assert_geq(spin_lines, 1, "no line names diag_spinner_body");
    cr_assert_geq(longest, 3.0, "the 3 ms step was reported as %.3f ms", longest);
}

Test(sched_diag, negative_stall_ns_is_refused)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = (coro_sched_t *)&c;
    c.stall_ns = -1;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    cr_assert_null(s);
}

static char *dump_text(coro_sched_t *s, int *njobs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    int n = coro_sched_dump(s, f);
    fclose(f);
    cr_assert_geq(n, 0);
    if (njobs)
        *njobs = n;
    return buf;
}

/* ---- histograms ---------------------------------------------------------------------- */

static uint64_t hsum(const uint64_t *h)
{
    uint64_t n = 0;
    for (int i = 0; i < CORO_HIST_BUCKETS; i++)
        n += h[i];
    return n;
}

struct reader {
    coro_t co;
    int fd;
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_readable(r->fd, CORO_FOREVER));
    CORO_END(co);
}

Test(sched_diag, histograms_count_what_ran, .timeout = 30)
{
    for (int on = 0; on < 2; on++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_sched_t *s;
        c.workers = 1;
        c.histograms = on;
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        enum { N = 50 };
        struct spinner sp[N];
        memset(sp, 0, sizeof sp);
        for (int i = 0; i < N; i++) {
            sp[i].steps = 2;     /* 3 steps: two yields and the end */
            coro_spawn_opts_t o = { .priority = i < 10 ? CORO_PRIO_HIGH : CORO_PRIO_NORMAL };
            cr_assert_eq(coro_spawn(s, &sp[i].co, diag_spinner_body, &o), 0);
        }
        for (int i = 0; i < N; i++)
            cr_assert_eq(join_r(&sp[i].co), 0);
        int p[2];
        cr_assert_eq(pipe(p), 0);
        struct reader r = { .fd = p[0] };
        cr_assert_eq(coro_spawn(s, &r.co, reader_body, NULL), 0);
        /* until the reader waits for its fd (a condition, not a sleep) */
        char want[32];
        snprintf(want, sizeof want, "fd %d readable", p[0]);
        int64_t end = now_ns() + 20 * 1000000000LL;
        for (char *t = NULL;; sched_yield()) {
            t = dump_text(s, NULL);
            bool found = strstr(t, want) != NULL;
            free(t);
            if (found)
                break;
            cr_assert_lt(now_ns(), end);
        }
        cr_assert_eq(write(p[1], "x", 1), 1);
        cr_assert_eq(join_r(&r.co), 0);
        close(p[0]);
        close(p[1]);

        coro_sched_stats_t st;
        cr_assert_eq(coro_sched_stats(s, &st), 0);
        cr_assert_eq(st.histograms, (bool)on);
        if (!on) {
            cr_assert_eq(hsum(st.hist_step), 0);
            cr_assert_eq(hsum(st.hist_ready[1]), 0);
            coro_sched_destroy(s);
            continue;
        }
        cr_assert_eq(hsum(st.hist_step), st.jobs_run);
        cr_assert_eq(hsum(st.hist_ready[CORO_PRIO_HIGH + 1]), 3 * 10);
        cr_assert_eq(hsum(st.hist_ready[CORO_PRIO_NORMAL + 1]), 3 * 40 + 2);
        cr_assert_eq(hsum(st.hist_ready[CORO_PRIO_LOW + 1]), 0);
        cr_assert_eq(hsum(st.hist_io), 1, "the reader's wake by its fd");
        cr_assert_eq(st.jobs_run, 3 * N + 2);
        coro_sched_destroy(s);
    }
}

/* ---- per-worker stats ---------------------------------------------------------------- */

Test(sched_diag, worker_stats_per_index_and_errors)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 3;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    coro_sched_stats_t st;
    coro_worker_stats_t w;
    cr_assert_eq(coro_sched_stats(s, &st), 0);
    cr_assert_eq(st.workers, 3);
    uint64_t runs = 0;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(coro_sched_worker_stats(s, i, &w), 0);
        cr_assert_geq(w.cpu, 0);
        runs += w.jobs_run;
    }
    cr_assert_eq(runs, st.jobs_run);
    cr_assert_eq(coro_sched_worker_stats(s, -1, &w), -ERANGE);
    cr_assert_eq(coro_sched_worker_stats(s, 3, &w), -ERANGE);
    cr_assert_eq(coro_sched_worker_stats(s, 0, NULL), -EINVAL);
    cr_assert_eq(coro_sched_worker_stats(NULL, 0, &w), -EINVAL);
    cr_assert_eq(coro_sched_stats(s, NULL), -EINVAL);
    cr_assert_eq(coro_sched_stats(NULL, &st), -EINVAL);
    coro_sched_destroy(s);

    c.workers = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_sched_worker_stats(s, 0, &w), 0);
    cr_assert_eq(w.cpu, -1);
    cr_assert_eq(coro_sched_worker_stats(s, 1, &w), -ERANGE);
    coro_sched_destroy(s);
}

/* ---- the dump ------------------------------------------------------------------------ */

struct evw {
    coro_t co;
    coro_event_t *ev;
};

static int evw_body(coro_t *co)
{
    struct evw *e = CORO_SELF(co, struct evw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(e->ev, CORO_FOREVER));
    CORO_END(co);
}

struct sleeper {
    coro_t co;
};

static int sleeper_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sleep(10 * 1000000000LL));
    CORO_END(co);
}

struct join_job {
    coro_t co;
    coro_t *target;
};

static int joiner_body(coro_t *co)
{
    struct join_job *j = CORO_SELF(co, struct join_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_done(j->target));
    CORO_END(co);
}

static intptr_t blocking_read(void *arg)
{
    char c;
    return read((int)(intptr_t)arg, &c, 1);
}

struct blk {
    coro_t co;
    int fd;
};

static int blk_body(coro_t *co)
{
    struct blk *b = CORO_SELF(co, struct blk);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(blocking_read, (void *)(intptr_t)b->fd));
    CORO_END(co);
}

static bool has_line(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        if (strstr(line, a) && (!b || strstr(line, b)))
            return true;
        l = nl ? nl + 1 : NULL;
    }
    return false;
}

Test(sched_diag, dump_names_what_each_job_waits_on, .timeout = 60)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 2;
    cr_assert_eq(coro_sched_create(&s, &c), 0);

    int rp[2], bp[2];
    cr_assert_eq(pipe(rp), 0);
    cr_assert_eq(pipe(bp), 0);
    coro_event_t ev;
    coro_event_init(&ev);
    struct reader r = { .fd = rp[0] };
    struct evw e = { .ev = &ev };
    struct sleeper sl = { 0 };
    struct join_job j = { .target = &e.co };
    struct blk b = { .fd = bp[0] };
    coro_spawn_opts_t o_r = { .name = "the-reader" }, o_e = { .name = "the-event-waiter" },
                      o_s = { .name = "the-sleeper" }, o_j = { .name = "the-joiner" },
                      o_b = { .name = "the-blocker", .priority = CORO_PRIO_LOW };
    cr_assert_eq(coro_spawn(s, &r.co, reader_body, &o_r), 0);
    cr_assert_eq(coro_spawn(s, &e.co, evw_body, &o_e), 0);
    cr_assert_eq(coro_spawn(s, &sl.co, sleeper_body, &o_s), 0);
    cr_assert_eq(coro_spawn(s, &j.co, joiner_body, &o_j), 0);
    cr_assert_eq(coro_spawn(s, &b.co, blk_body, &o_b), 0);

    /* poll the dump until all five are suspended (a condition, not a sleep) */
    char *t = NULL;
    int n = 0;
    int64_t end = now_ns() + 20 * 1000000000LL;
    char fdtxt[32], evtxt[64], jtxt[64];
    snprintf(fdtxt, sizeof fdtxt, "fd %d readable", rp[0]);
    snprintf(evtxt, sizeof evtxt, "event_wait %p", (void *)&ev);
    snprintf(jtxt, sizeof jtxt, "%p", (void *)&e.co);
    for (;;) {
        free(t);
        t = dump_text(s, &n);
        if (n == 5 && has_line(t, "\"the-blocker\"", "blocking call") &&
            has_line(t, "\"the-sleeper\"", "timer") && has_line(t, "\"the-reader\"", fdtxt) &&
            has_line(t, "\"the-joiner\"", "done") && has_line(t, "\"the-event-waiter\"", evtxt))
            break;
        cr_assert_lt(now_ns(), end, "dump never showed the five waits:\n%s", t);
        sched_yield();
    }
    cr_assert(has_line(t, "\"the-joiner\"", jtxt), "%s", t);
    cr_assert(has_line(t, "\"the-sleeper\"", "ms left"), "%s", t);
    cr_assert(has_line(t, "\"the-blocker\"", "priority LOW"), "%s", t);
    cr_assert(has_line(t, "\"the-reader\"", "mask any CPU"), "%s", t);
    free(t);

    /* let everything go */
    cr_assert_eq(write(rp[1], "x", 1), 1);
    cr_assert_eq(write(bp[1], "x", 1), 1);
    coro_event_set(&ev);
    coro_cancel(&sl.co);
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(join_r(&e.co), 0);
    cr_assert_eq(join_r(&j.co), 0);
    cr_assert_eq(join_r(&b.co), 0);
    join_r(&sl.co);
    t = dump_text(s, &n);
    cr_assert_eq(n, 0, "%s", t);
    free(t);
    for (int i = 0; i < 2; i++) {
        close(rp[i]);
        close(bp[i]);
    }
    coro_sched_destroy(s);
}

struct holder {
    coro_t co;
    int *go;
};

static int holder_body(coro_t *co)
{
    struct holder *h = CORO_SELF(co, struct holder);
    CORO_BEGIN(co);
    while (!__atomic_load_n(h->go, __ATOMIC_ACQUIRE))
        ;       /* one long step: keeps its worker */
    CORO_END(co);
}

Test(sched_diag, dump_says_why_a_ready_job_is_not_running, .timeout = 60)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 2;
    c.histograms = true;        /* diagnostics on: the dump knows step times */
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    coro_worker_stats_t w, w0;
    cr_assert_eq(coro_sched_worker_stats(s, 1, &w), 0);
    cr_assert_eq(coro_sched_worker_stats(s, 0, &w0), 0);
    if (w.cpu == w0.cpu) {
        coro_sched_destroy(s);
        cr_skip_test("both workers share one CPU here: a one-CPU mask allows both");
    }
    coro_cpuset_t m;
    coro_cpuset_zero(&m);
    coro_cpuset_add(&m, w.cpu);
    int go = 0;
    struct holder h = { .go = &go };
    struct spinner sp = { .steps = 0 };
    coro_spawn_opts_t oh = { .affinity = &m, .name = "hog" }, os = { .affinity = &m, .name = "starved" };
    cr_assert_eq(coro_spawn(s, &h.co, holder_body, &oh), 0);
    char *t = NULL;
    int64_t end = now_ns() + 20 * 1000000000LL;
    for (;;) {          /* until the hog runs */
        free(t);
        t = dump_text(s, NULL);
        if (has_line(t, "RUNNING", "\"hog\""))
            break;
        cr_assert_lt(now_ns(), end, "%s", t);
        sched_yield();
    }
    free(t);
    cr_assert_eq(coro_spawn(s, &sp.co, diag_spinner_body, &os), 0);
    t = dump_text(s, NULL);
    char want[64];
    snprintf(want, sizeof want, "its mask allows only CPU %d", w.cpu);
    cr_assert(has_line(t, want, "has run one step"), "%s", t);
    free(t);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    cr_assert_eq(join_r(&h.co), 0);
    cr_assert_eq(join_r(&sp.co), 0);
    coro_sched_destroy(s);
}

/* diagnostics off (no .stall_ns, no .histograms): a running job is still
 * shown with its name and its body, and the bodies are static functions
 * of this program (not in the dynamic symbol table even with -rdynamic):
 * their names come from the program's own symbol table */
Test(sched_diag, dump_names_running_and_suspended_jobs_with_static_bodies, .timeout = 30)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    int go = 0, fds[2];
    cr_assert_eq(pipe(fds), 0);
    struct holder h = { .go = &go };
    struct reader r = { .fd = fds[0] };
    coro_spawn_opts_t oh = { .name = "the-hog" }, orr = { .name = "the-reader" };
    cr_assert_eq(coro_spawn(s, &r.co, reader_body, &orr), 0);
    cr_assert_eq(coro_spawn(s, &h.co, holder_body, &oh), 0);
    char *t = NULL;
    int64_t end = now_ns() + 20 * 1000000000LL;
    for (;;) {          /* until the hog runs and the reader waits */
        free(t);
        t = dump_text(s, NULL);
        if (has_line(t, "RUNNING", "\"the-hog\"") && has_line(t, "\"the-reader\"", "SUSPENDED"))
            break;
        cr_assert_lt(now_ns(), end, "%s", t);
        sched_yield();
    }
    cr_assert(has_line(t, "RUNNING job", "holder_body \"the-hog\""), "%s", t);
    cr_assert(has_line(t, "\"the-reader\"", "reader_body: SUSPENDED"), "%s", t);
    cr_assert_null(strstr(t, " ?"), "an unnamed body:\n%s", t);
    free(t);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    cr_assert_eq(join_r(&h.co), 0);
    cr_assert_eq(write(fds[1], "x", 1), 1);
    cr_assert_eq(join_r(&r.co), 0);
    close(fds[0]);
    close(fds[1]);
    coro_sched_destroy(s);
}

Test(sched_diag, dump_error_paths)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_sched_dump(NULL, stdout), -EINVAL);
    cr_assert_eq(coro_sched_dump(s, NULL), -EINVAL);
    FILE *ro = fopen("/dev/null", "r");     /* writes fail */
    cr_assert_not_null(ro);
    cr_assert_eq(coro_sched_dump(s, ro), -EIO);
    fclose(ro);
    coro_sched_destroy(s);
}
