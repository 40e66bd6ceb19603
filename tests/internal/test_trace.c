/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The built-in tracer (issue 14): the Chrome trace it writes is valid JSON
 * with a lane per worker and one for the I/O thread, holds the events of a
 * known workload, keeps only the last N events; COROKIT_TRACE; every error
 * of coro_sched_trace_write.  The JSON is checked by python3's json module
 * (tools/timeline needs python3 too). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "rt/rt.h"     /* white-box: the job state word, wait_obj, idle bits */

/* python3: load the trace, then exit 0 when EXPR (argv[2]) holds, with
 * t = the events, lanes = {tid: thread name}, jobs = the job steps */
/* the CPU of worker i (coro_sched_worker_stats) */
static int wcpu(coro_sched_t *s, int i)
{
    coro_worker_stats_t w;
    cr_assert_eq(coro_sched_worker_stats(s, i, &w), 0);
    return w.cpu;
}

static const char *PY =
    "import json,sys\n"
    "t=json.load(open(sys.argv[1]))['traceEvents']\n"
    "lanes={e['tid']:e['args']['name'] for e in t if e.get('name')=='thread_name'}\n"
    "jobs=[e for e in t if e.get('cat')=='job']\n"
    "def lane(e): return lanes.get(e['tid'])\n"
    "ok=eval(sys.argv[2])\n"
    "print('check failed:', sys.argv[2], file=sys.stderr) if not ok else None\n"
    "sys.exit(0 if ok else 1)\n";

static bool pycheck(const char *file, const char *expr)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execlp("python3", "python3", "-c", PY, file, expr, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 127, "python3 is needed to check the JSON");
    return WEXITSTATUS(st) == 0;
}

static void tmpname(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/corokit-test-trace-%d-%s.json", (int)getpid(), tag);
}

static coro_sched_t *traced(int workers, uint64_t events)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.trace_events = events;
    int rc = coro_sched_create(&s, &c);
    cr_assert_eq(rc, 0, "create: %s", coro_strerror(rc));
    return s;
}

struct job {
    coro_t co;
    int n;
};

static int empty_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 7);
    CORO_END(co);
}

static void run_some(coro_sched_t *s, int n)
{
    struct job *j = calloc((size_t)n, sizeof *j);
    for (int i = 0; i < n; i++)
        cr_assert_eq(coro_spawn(s, &j[i].co, empty_body, NULL), 0);
    for (int i = 0; i < n; i++)
        cr_assert_eq(join_r(&j[i].co), 7);
    free(j);
}

Test(trace, the_trace_is_valid_json_with_every_workers_lane_and_the_io_lane, .timeout = 60)
{
    char f[128], expr[512];
    coro_sched_t *s = traced(2, 1024);
    coro_sched_stats_t *st = malloc(sizeof *st);

    tmpname(f, sizeof f, "lanes");
    run_some(s, 100);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    coro_sched_stats(s, st);
    snprintf(expr, sizeof expr,
             "sorted(lanes.values())==sorted(['coro-w%d','coro-w%d','coro-io','threads'])"
             " and len(jobs)>=100 and all(e['ph'] in 'XiM' for e in t)",
             wcpu(s, 0), wcpu(s, 1));
    cr_assert(pycheck(f, expr));
    free(st);
    coro_sched_destroy(s);
    unlink(f);
}

Test(trace, a_single_threaded_scheduler_has_one_run_lane_and_the_io_lane, .timeout = 60)
{
    char f[128];
    coro_sched_t *s = traced(0, 1024);

    tmpname(f, sizeof f, "st");
    run_some(s, 10);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    cr_assert(pycheck(f, "sorted(lanes.values())==['coro-io','coro-run','threads']"
                         " and len([e for e in jobs if lane(e)=='coro-run'])==10"));
    coro_sched_destroy(s);
    unlink(f);
}

/* empty_body is static: not in the dynamic symbol table, so dladdr alone
 * named it "corokit_tests+0x..."; the trace must name it */
Test(trace, a_static_body_is_named_by_its_symbol, .timeout = 60)
{
    char f[128];
    coro_sched_t *s = traced(0, 1024);

    tmpname(f, sizeof f, "static");
    run_some(s, 3);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    cr_assert(pycheck(f, "len(jobs)==3 and all(e['name']=='empty_body' for e in jobs)"));
    coro_sched_destroy(s);
    unlink(f);
}

struct waiter {
    coro_t co;
    coro_event_t *ev;
};

static int wait_body(coro_t *co)
{
    struct waiter *w = CORO_SELF(co, struct waiter);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(w->ev, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co) == 0 ? 5 : -1);
    CORO_END(co);
}

Test(trace, a_jobs_steps_and_its_wake_from_a_plain_thread_appear, .timeout = 60)
{
    char f[128], expr[1024];
    coro_sched_t *s = traced(2, 4096);
    coro_event_t ev;
    struct waiter w = { .ev = &ev };
    coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH };

    tmpname(f, sizeof f, "wake");
    coro_event_init(&ev);
    cr_assert_eq(coro_spawn(s, &w.co, wait_body, &o), 0);
    /* wait (no sleep) until the job waits on the event in the lot */
    while ((__atomic_load_n(&w.co.state, __ATOMIC_ACQUIRE) & CORO__S_MASK) != CORO__S_SUSPENDED ||
           __atomic_load_n(&w.co.wait_obj, __ATOMIC_ACQUIRE) != (void *)&ev)
        sched_yield();
    cr_assert_eq(coro_event_set(&ev), 1, "the job was woken by this thread");
    cr_assert_eq(join_r(&w.co), 5);
    /* every worker idle (its bit in s->idle) before the write: the rings
     * are read while nobody writes them (bounded 10 s).  The steps are
     * compared in time order: they may be on two workers' lanes */
    for (int64_t end = coro_now() + 10000000000LL; coro_now() < end;) {
        int all = 1;
        for (int i = 0; i < s->nworkers; i++)
            all = all && (__atomic_load_n(&s->idle[i / 64], __ATOMIC_ACQUIRE) >> (i % 64) & 1);
        if (all)
            break;
        sched_yield();
    }
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    snprintf(expr, sizeof expr,
             "(lambda ends: 'await' in ends and 'done' in ends and ends.index('await') < ends.index('done'))"
             "([e['args']['end'].split()[0] for e in sorted(jobs, key=lambda e: e['ts'])"
             "  if e['args']['job']=='%p'])"
             " and all(e['args']['prio']=='HIGH' and lane(e).startswith('coro-w')"
             "         for e in jobs if e['args']['job']=='%p')"
             " and any(e['name']=='wake' and e['args']['job']=='%p' and e['args']['from']=='thread'"
             "         and lane(e)=='threads' for e in t)"
             " and any(e['name']=='spawn' and e['args']['job']=='%p' for e in t)",
             (void *)&w.co, (void *)&w.co, (void *)&w.co, (void *)&w.co);
    cr_assert(pycheck(f, expr));
    coro_event_destroy(&ev);
    coro_sched_destroy(s);
    unlink(f);
}

Test(trace, affinity_classes_appear_in_the_job_args, .timeout = 60)
{
    char f[128], expr[512];
    coro_sched_t *s = traced(2, 1024);
    coro_sched_stats_t *st = malloc(sizeof *st);
    coro_cpuset_t one;
    struct job j = { 0 };

    coro_sched_stats(s, st);
    coro_cpuset_zero(&one);
    coro_cpuset_add(&one, wcpu(s, 1));
    coro_spawn_opts_t o = { .affinity = &one, .priority = CORO_PRIO_LOW };
    cr_assert_eq(block_on_r(s, &j.co, empty_body, &o), 7);
    tmpname(f, sizeof f, "cls");
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    /* on one CPU (taskset -c 0) both workers sit on it: the mask covers
     * every worker, which is class 0, the unrestricted one ("any") */
    char cpus[16] = "any";
    bool shared = wcpu(s, 0) == wcpu(s, 1);
    if (!shared)
        snprintf(cpus, sizeof cpus, "%d", wcpu(s, 1));
    snprintf(expr, sizeof expr,
             "any(e['args']['job']=='%p' and e['args']['class']%s0 and e['args']['cpus']=='%s'"
             "    and e['args']['prio']=='LOW' for e in jobs)",
             (void *)&j.co, shared ? "==" : ">", cpus);
    cr_assert(pycheck(f, expr));
    free(st);
    coro_sched_destroy(s);
    unlink(f);
}

Test(trace, the_flight_recorder_keeps_only_the_last_n_events, .timeout = 60)
{
    char f[128], expr[512];
    enum { N = 400 };
    coro_sched_t *s = traced(1, 50);    /* rounded up to 64 per ring */
    struct job *j = calloc(N, sizeof *j);

    for (int i = 0; i < N; i++)
        cr_assert_eq(block_on_r(s, &j[i].co, empty_body, NULL), 7);
    tmpname(f, sizeof f, "ring");
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    /* a ring of 64 holds at most 64 events: 64 steps at most on the worker
     * lane (one event each), 64 spawns on the threads lane; the last job is
     * there, the first is gone */
    snprintf(expr, sizeof expr,
             "0<len(jobs)<=64 and len([e for e in t if e['name']=='spawn'])<=64"
             " and any(e['args']['job']=='%p' for e in jobs)"
             " and not any(e.get('args',{}).get('job')=='%p' for e in t)",
             (void *)&j[N - 1].co, (void *)&j[0].co);
    cr_assert(pycheck(f, expr));
    coro_sched_destroy(s);
    free(j);
    unlink(f);
}

Test(trace, corokit_trace_in_the_environment_writes_the_file_at_destroy, .timeout = 60)
{
    char f[128];
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    tmpname(f, sizeof f, "env");
    unlink(f);
    setenv("COROKIT_TRACE", f, 1);
    c.workers = 2;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    unsetenv("COROKIT_TRACE");
    run_some(s, 20);
    cr_assert_eq(access(f, F_OK), -1, "nothing is written before destroy");
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert(pycheck(f, "'coro-io' in lanes.values() and len(jobs)>=20"));
    unlink(f);
}

/* two schedulers under one COROKIT_TRACE: the first destroyed writes
 * FILE, the second FILE.2 before the extension; neither is lost (the
 * last one destroyed overwrote the file before) */
Test(trace, corokit_trace_keeps_every_schedulers_file, .timeout = 60)
{
    char f[128], f2[160];
    coro_sched_t *s1 = NULL, *s2 = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    snprintf(f, sizeof f, "/tmp/corokit-test-trace-%d-two.json", (int)getpid());
    snprintf(f2, sizeof f2, "/tmp/corokit-test-trace-%d-two.2.json", (int)getpid());
    unlink(f);
    unlink(f2);
    setenv("COROKIT_TRACE", f, 1);
    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s1, &c), 0);
    cr_assert_eq(coro_sched_create(&s2, &c), 0);
    unsetenv("COROKIT_TRACE");
    run_some(s1, 5);
    run_some(s2, 7);
    cr_assert_eq(coro_sched_destroy(s1), 0);
    cr_assert_eq(coro_sched_destroy(s2), 0);
    cr_assert(pycheck(f, "len(jobs)==5"));
    cr_assert(pycheck(f2, "len(jobs)==7"));
    unlink(f);
    unlink(f2);
}

Test(trace, an_unwritable_corokit_trace_does_not_fail_destroy, .timeout = 60)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    setenv("COROKIT_TRACE", "/nonexistent-dir/trace.json", 1);
    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    unsetenv("COROKIT_TRACE");
    run_some(s, 3);
    cr_assert_eq(coro_sched_destroy(s), 0);
}

/* ---- names that are not UTF-8 ---------------------------------------------------------- */

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

/* strict: the file must decode as UTF-8 and parse as JSON, and a body
 * named by module+offset shows U+FFFD where argv[0] had a bad byte */
static const char *PY_UTF8 =
    "import json,sys\n"
    "t=json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))['traceEvents']\n"
    "names=[e['name'] for e in t]+[e.get('args',{}).get('body','') for e in t]\n"
    "sys.exit(0 if any(n.startswith('bad\\ufffd\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffdname\"\\\\\\x01\u00e9+0x') for n in names) else 1)\n";

Test(trace, a_program_whose_path_is_not_utf8_gets_a_valid_json_trace, .timeout = 60)
{
    char f[128];
    /* argv[0] names the main program's module (dladdr): stray bytes, a
     * lone lead byte, a surrogate, a quote, a backslash, a control
     * character, then a well-formed e-acute that stays as it is */
    char name[] = "/tmp/nowhere/bad" "\xff\xfe" "\xc3(" "\xed\xa0\x80" "name\"\\\x01" "\xc3\xa9";
    char *argv[] = { name, NULL };

    char stripped[160];

    tmpname(f, sizeof f, "utf8");
    unlink(f);
    /* a stripped copy: its static bodies have no symbol, so the trace
     * names them by module (argv[0]) and offset */
    snprintf(stripped, sizeof stripped, "%s.hello-stripped", f);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execlp("strip", "strip", "-o", stripped, CORO_BUILD_DIR "/samples/hello", (char *)NULL);
        _exit(127);
    }
    int st0 = 0;
    waitpid(pid, &st0, 0);
    cr_assert(WIFEXITED(st0) && WEXITSTATUS(st0) == 0, "strip failed: %#x", st0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        setenv("COROKIT_TRACE", f, 1);
        execv(stripped, argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "samples/hello failed: %#x", st);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execlp("python3", "python3", "-c", PY_UTF8, f, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 127, "python3 is needed to check the JSON");
    cr_assert_eq(WEXITSTATUS(st), 0, "the trace is not valid UTF-8 JSON, or the name is wrong");
    unlink(f);
    unlink(stripped);
}

Test(trace, write_with_null_arguments_fails_with_einval, .timeout = 30)
{
    coro_sched_t *s = traced(1, 64);
    cr_assert_eq(coro_sched_trace_write(NULL, "/tmp/x.json"), -EINVAL);
    cr_assert_eq(coro_sched_trace_write(s, NULL), -EINVAL);
    cr_assert_eq(coro_sched_trace_write(s, ""), -EINVAL);
    coro_sched_destroy(s);
}

Test(trace, write_with_tracing_off_fails_with_enotsup, .timeout = 30)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    unsetenv("COROKIT_TRACE");
    c.workers = 1;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(coro_sched_trace_write(s, "/tmp/corokit-never-written.json"), -ENOTSUP);
    cr_assert_eq(access("/tmp/corokit-never-written.json", F_OK), -1);
    coro_sched_destroy(s);
}

Test(trace, write_to_a_missing_directory_fails_with_its_errno, .timeout = 30)
{
    coro_sched_t *s = traced(1, 64);
    cr_assert_eq(coro_sched_trace_write(s, "/nonexistent-dir/trace.json"), -ENOENT);
    cr_assert_eq(coro_sched_trace_write(s, "/"), -EISDIR);
    coro_sched_destroy(s);
}

Test(trace, create_with_too_many_trace_events_fails_with_einval, .timeout = 30)
{
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;

    c.workers = 1;
    c.trace_events = (1u << 24) + 1;
    cr_assert_eq(coro_sched_create(&s, &c), -EINVAL);
    cr_assert_null(s);
}

/* a job may write the trace of its own scheduler while it runs */
struct writer {
    coro_t co;
    const char *path;
    int rc;
};

static int writer_body(coro_t *co)
{
    struct writer *w = CORO_SELF(co, struct writer);
    CORO_BEGIN(co);
    w->rc = coro_sched_trace_write(coro_sched_current(), w->path);
    CORO_END(co);
}

Test(trace, a_job_can_write_the_trace_while_the_workers_run, .timeout = 60)
{
    char f[128];
    coro_sched_t *s = traced(2, 256);
    struct writer w = { .path = f, .rc = 1 };

    tmpname(f, sizeof f, "job");
    cr_assert_eq(block_on_r(s, &w.co, writer_body, NULL), 0);
    cr_assert_eq(w.rc, 0);
    cr_assert(pycheck(f, "'coro-io' in lanes.values()"));
    coro_sched_destroy(s);
    unlink(f);
}

/* What the clock readings saved by the recorder must not distort (lib/sched/trace.h,
 * coro__trace_ring_stamp, coro__trace_begin): the spawns a step makes are stamped
 * inside that step, on its lane; a worker's steps never overlap; a step that
 * follows an idle spell starts after the spawn of its job, not at the end of
 * the worker's previous step. */
struct parent {
    coro_t co;
    struct job kid[3];
};

static int parent_body(coro_t *co)
{
    struct parent *p = CORO_SELF(co, struct parent);
    CORO_BEGIN(co);
    for (int i = 0; i < 3; i++)
        coro_spawn(coro_sched_current(), &p->kid[i].co, empty_body, NULL);
    CORO_END(co);
}

/* python: the step of job J, and the spawn event of job J */
#define PY_STEP(j) "[e for e in jobs if e['args']['job']=='" j "']"
#define PY_SPAWN(j) "[e for e in t if e.get('name')=='spawn' and e['args']['job']=='" j "']"

Test(trace, the_spawns_of_a_step_are_stamped_inside_it_on_its_lane, .timeout = 60)
{
    char f[128], expr[2048], pj[32], kj[3][32];
    coro_sched_t *s = traced(1, 1024);
    struct parent *p = calloc(1, sizeof *p);

    tmpname(f, sizeof f, "instep");
    cr_assert_eq(block_on_r(s, &p->co, parent_body, NULL), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(join_r(&p->kid[i].co), 7);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    snprintf(pj, sizeof pj, "0x%" PRIxPTR, (uintptr_t)&p->co);
    for (int i = 0; i < 3; i++)
        snprintf(kj[i], sizeof kj[i], "0x%" PRIxPTR, (uintptr_t)&p->kid[i].co);
    snprintf(expr, sizeof expr,
             "(lambda P, K: len(P)==1 and all(len(k)==1 and k[0]['tid']==P[0]['tid'] and"
             " P[0]['ts'] <= k[0]['ts'] <= P[0]['ts']+P[0]['dur'] for k in K))("
             PY_STEP("%s") ", [" PY_SPAWN("%s") "," PY_SPAWN("%s") "," PY_SPAWN("%s") "])"
             " and all(a['ts']+a['dur'] <= b['ts']+0.002 for l in set(e['tid'] for e in jobs)"
             " for a,b in zip(sorted([e for e in jobs if e['tid']==l], key=lambda e:e['ts']),"
             " sorted([e for e in jobs if e['tid']==l], key=lambda e:e['ts'])[1:]))",
             pj, kj[0], kj[1], kj[2]);
    cr_assert(pycheck(f, expr));
    coro_sched_destroy(s);
    free(p);
    unlink(f);
}

Test(trace, a_step_after_an_idle_worker_starts_after_its_jobs_spawn, .timeout = 60)
{
    char f[128], expr[1024], aj[32], bj[32];
    struct job a = { 0 }, b = { 0 };

    for (int workers = 0; workers <= 1; workers++) {
        coro_sched_t *s = traced(workers, 1024);
        tmpname(f, sizeof f, "idle");
        cr_assert_eq(coro_spawn(s, &a.co, empty_body, NULL), 0);
        cr_assert_eq(join_r(&a.co), 7);
        /* the worker runs out of work and parks (its idle bit); a
         * single-threaded scheduler is driven again by coro_join */
        while (workers > 0 && !(__atomic_load_n(&s->idle[0], __ATOMIC_ACQUIRE) & 1))
            sched_yield();
        cr_assert_eq(coro_spawn(s, &b.co, empty_body, NULL), 0);
        cr_assert_eq(join_r(&b.co), 7);
        cr_assert_eq(coro_sched_trace_write(s, f), 0);
        snprintf(aj, sizeof aj, "0x%" PRIxPTR, (uintptr_t)&a.co);
        snprintf(bj, sizeof bj, "0x%" PRIxPTR, (uintptr_t)&b.co);
        snprintf(expr, sizeof expr,
                 "(lambda A, B, SB: len(A)==1 and len(B)==1 and len(SB)==1 and"
                 " B[0]['ts'] >= SB[0]['ts'] and B[0]['ts'] >= A[0]['ts']+A[0]['dur'])("
                 PY_STEP("%s") "," PY_STEP("%s") "," PY_SPAWN("%s") ")",
                 aj, bj, bj);
        cr_assert(pycheck(f, expr), "workers=%d", workers);
        coro_sched_destroy(s);
        unlink(f);
    }
}

/* Every step is read (CORO__TRACE_RUN_MAX 1, lib/base/tunables.h): no
 * step shares a reading (the "run" arg), a worker's steps never overlap,
 * and every spawn lies inside a step of its lane. */
struct spawner {
    coro_t co;
    struct job *kids;
    int n;
};

static int spawner_body(coro_t *co)
{
    struct spawner *p = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (int i = 0; i < p->n; i++)
        coro_spawn(coro_sched_current(), &p->kids[i].co, empty_body, NULL);
    CORO_END(co);
}

Test(trace, every_step_is_read_and_keeps_its_place, .timeout = 60)
{
    char f[128];
    enum { N = 2000 };
    coro_sched_t *s = traced(1, 1 << 13);
    struct spawner *p = calloc(1, sizeof *p);

    p->kids = calloc(N, sizeof *p->kids);
    p->n = N;
    tmpname(f, sizeof f, "runs");
    cr_assert_eq(block_on_r(s, &p->co, spawner_body, NULL), 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(join_r(&p->kids[i].co), 7);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    /* the parent's step and its 2,000 spawns, then 2,000 steps: the last
     * 8,192 events of the ring hold all of them */
    cr_assert(pycheck(
        f, "(lambda L: len(L)==2001 and all('run' not in e['args'] for e in L)"
           " and all(a['ts']+a['dur'] <= b['ts']+0.002 for a,b in zip(L, L[1:]))"
           " and all(any(x['ts']-0.002 <= e['ts'] <= x['ts']+x['dur']+0.002 for x in L[:1])"
           "         for e in t if e.get('name')=='spawn' and lane(e).startswith('coro-w')))"
           "(sorted([e for e in jobs if lane(e).startswith('coro-w')], key=lambda e:e['ts']))"));
    coro_sched_destroy(s);
    free(p->kids);
    free(p);
    unlink(f);
}

/* A long step among short ones shows its own length, and so do they: a
 * single-threaded scheduler runs 40 empty jobs, one job whose one step
 * works 2 ms, and 40 empty jobs, back to back.  When short steps shared a
 * reading, the run holding the long step spread its 2 ms evenly over its
 * steps: the long step was drawn a fraction of its length and its
 * neighbours 100 us and more.  (The short steps' median: a preempted one
 * may really be long.) */
static int64_t spin_until(int64_t t)
{
    int64_t now;
    while ((now = coro_now()) < t)
        ;
    return now;
}

static int long_body(coro_t *co)
{
    CORO_BEGIN(co);
    spin_until(coro_now() + 2000000);
    CORO_RETURN(co, 7);
    CORO_END(co);
}

static int mixed_spawner_body(coro_t *co)
{
    struct spawner *p = CORO_SELF(co, struct spawner);
    CORO_BEGIN(co);
    for (int i = 0; i < p->n; i++)
        coro_spawn(coro_sched_current(), &p->kids[i].co, i == 40 ? long_body : empty_body, NULL);
    CORO_END(co);
}

Test(trace, a_long_step_among_short_ones_shows_its_own_length, .timeout = 60)
{
    char f[128], expr[512];
    coro_sched_t *s = traced(1, 1 << 12);
    struct spawner p = { .n = 81 };
    struct job *j = p.kids = calloc(81, sizeof *j);

    tmpname(f, sizeof f, "long");
    /* spawned from a job: the worker runs them back to back */
    cr_assert_eq(block_on_r(s, &p.co, mixed_spawner_body, NULL), 0);
    for (int i = 0; i < 81; i++)
        cr_assert_eq(join_r(&j[i].co), 7);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    snprintf(expr, sizeof expr,
             "(lambda L, S: len(L)==1 and L[0]['dur'] >= 1900 and len(S)==80"
             " and sorted(e['dur'] for e in S)[40] < 100)"
             "([e for e in jobs if e['args']['job']=='%p'],"
             " [e for e in jobs if e['args']['job']!='%p' and e['name']=='empty_body'])",
             (void *)&j[40].co, (void *)&j[40].co);
    cr_assert(pycheck(f, expr));
    coro_sched_destroy(s);
    free(j);
    unlink(f);
}

/* tools/timeline --steps on a known trace (tests/timeline/known.json):
 * each step's true start and length per lane, a 10 us step between two
 * 0.25 us ones as 10 us, and a step with a shared reading marked as such;
 * the expected text is tests/timeline/known.steps */
Test(trace, timeline_steps_of_a_known_trace, .timeout = 30)
{
    char out[128], cmd[512];
    snprintf(out, sizeof out, "/tmp/corokit-test-timeline-%d.txt", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "python3 tools/timeline.py --steps tests/timeline/known.json > %s && "
             "cmp -s %s tests/timeline/known.steps", out, out);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "tools/timeline --steps differs from "
              "tests/timeline/known.steps (diff %s tests/timeline/known.steps)", out);
    unlink(out);
}

/* Plain threads: each of the first CORO__TRACE_THREAD_RINGS gets a ring of
 * its own, the others share the locked one; all their events go to the
 * "threads" lane.  20 threads spawn 50 jobs each: every spawn is there,
 * stamped (none dropped: a thread's first event reads the clock), and each
 * thread's spawns are in the order it made them. */
enum { THREADS = 20, PER_THREAD = 50 };

struct spawning_thread {
    coro_sched_t *s;
    struct job jobs[PER_THREAD];
};

static void *spawn_thread(void *arg)
{
    struct spawning_thread *st = arg;
    for (int i = 0; i < PER_THREAD; i++)
        cr_assert_eq(coro_spawn(st->s, &st->jobs[i].co, empty_body, NULL), 0);
    for (int i = 0; i < PER_THREAD; i++)
        cr_assert_eq(join_r(&st->jobs[i].co), 7);
    return NULL;
}

Test(trace, plain_threads_spawns_all_appear_in_the_order_each_made_them, .timeout = 60)
{
    char f[128];
    static struct spawning_thread st[THREADS];
    pthread_t th[THREADS];
    coro_sched_t *s = traced(2, 1 << 12);
    FILE *order;
    char of[160];

    tmpname(f, sizeof f, "threads");
    for (int i = 0; i < THREADS; i++) {
        st[i].s = s;
        cr_assert_eq(pthread_create(&th[i], NULL, spawn_thread, &st[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    /* the jobs of each thread, in spawn order, one line per thread */
    snprintf(of, sizeof of, "%s.order", f);
    cr_assert_not_null(order = fopen(of, "w"));
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < PER_THREAD; k++)
            fprintf(order, "%p%c", (void *)&st[i].jobs[k].co, k + 1 < PER_THREAD ? ' ' : '\n');
    fclose(order);
    char expr[1024];
    snprintf(expr, sizeof expr,
             "(lambda S, O: len(S)==%d and all(lane(e)=='threads' and e['ts']>0 for e in S.values())"
             " and all(S[a]['ts'] <= S[b]['ts'] for l in O for a,b in zip(l, l[1:])))"
             "({e['args']['job']: e for e in t if e.get('name')=='spawn'},"
             " [l.split() for l in open('%s')])",
             THREADS * PER_THREAD, of);
    cr_assert(pycheck(f, expr));
    coro_sched_destroy(s);
    unlink(f);
    unlink(of);
}

/* A plain thread reads the clock at its first event, at every
 * CORO__TRACE_THREAD_RUN-th and whenever the coarse clock ticked
 * (sched/trace.h, coro__trace_ring_thread_stamp); an event between readings is
 * drawn at the reading before it, or spread over a burst: never later than
 * it happened, at most one coarse tick (1-10 ms) earlier.  So a spawn made
 * after a pause of 50 ms, with no reading due by the count, is drawn at
 * least 40 ms after the spawn before the pause, and not after its job's
 * step (the worker was idle: that step starts at a reading after it). */
Test(trace, a_plain_threads_spawn_after_a_pause_is_drawn_after_the_pause, .timeout = 60)
{
    char f[128], expr[1024], aj[32], bj[32];
    static struct job j[3];

    coro_sched_t *s = traced(1, 1 << 12);
    tmpname(f, sizeof f, "pause");
    cr_assert_eq(coro_spawn(s, &j[0].co, empty_body, NULL), 0);   /* read: the first */
    cr_assert_eq(coro_spawn(s, &j[1].co, empty_body, NULL), 0);
    cr_assert_eq(join_r(&j[0].co), 7);
    cr_assert_eq(join_r(&j[1].co), 7);
    /* the pause is what is measured here, not a way to order events */
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    cr_assert_eq(coro_spawn(s, &j[2].co, empty_body, NULL), 0);
    cr_assert_eq(join_r(&j[2].co), 7);
    cr_assert_eq(coro_sched_trace_write(s, f), 0);
    snprintf(aj, sizeof aj, "0x%" PRIxPTR, (uintptr_t)&j[1].co);
    snprintf(bj, sizeof bj, "0x%" PRIxPTR, (uintptr_t)&j[2].co);
    snprintf(expr, sizeof expr,
             "(lambda A, B, SB: len(A)==1 and len(B)==1 and len(SB)==1 and"
             " B[0]['ts'] - A[0]['ts'] >= 40000 and B[0]['ts'] <= SB[0]['ts'])("
             PY_SPAWN("%s") "," PY_SPAWN("%s") "," PY_STEP("%s") ")",
             aj, bj, bj);
    cr_assert(pycheck(f, expr));
    coro_sched_destroy(s);
    unlink(f);
}

/* A plain thread finds its ring through a thread-local cache, checked
 * inline against the trace's number (sched/trace.h, coro__trace_ring_any): a
 * thread that spawns into two traced schedulers by turns records each
 * spawn in the trace of the scheduler it went to, and so does a thread
 * whose cached ring belonged to a scheduler destroyed since (a new one may
 * get the old one's address). */
static bool spawns_are(const char *f, coro_t *const *jobs, int n)
{
    char expr[1024];
    int k = snprintf(expr, sizeof expr,
                     "(lambda S: all(lane(e)=='threads' and e['ts']>0 for e in S) and"
                     " [e['args']['job'] for e in S]==[");
    for (int i = 0; i < n; i++)
        k += snprintf(expr + k, sizeof expr - (size_t)k, "'0x%" PRIxPTR "',", (uintptr_t)jobs[i]);
    snprintf(expr + k, sizeof expr - (size_t)k,
             "])(sorted([e for e in t if e.get('name')=='spawn'], key=lambda e: e['ts']))");
    return pycheck(f, expr);
}

Test(trace, a_thread_spawning_into_two_traced_schedulers_records_each_in_its_own, .timeout = 60)
{
    char f1[128], f2[128];
    static struct job j[6];

    for (int round = 0; round < 2; round++) {
        coro_sched_t *s1 = traced(1, 1 << 10), *s2 = traced(0, 1 << 10);
        tmpname(f1, sizeof f1, "two1");
        tmpname(f2, sizeof f2, "two2");
        for (int i = 0; i < 6; i++)
            cr_assert_eq(coro_spawn(i % 2 ? s2 : s1, &j[i].co, empty_body, NULL), 0);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(join_r(&j[i].co), 7);
        cr_assert_eq(coro_sched_trace_write(s1, f1), 0);
        cr_assert_eq(coro_sched_trace_write(s2, f2), 0);
        coro_t *in1[] = { &j[0].co, &j[2].co, &j[4].co }, *in2[] = { &j[1].co, &j[3].co, &j[5].co };
        cr_assert(spawns_are(f1, in1, 3), "round %d", round);
        cr_assert(spawns_are(f2, in2, 3), "round %d", round);
        /* the next round's schedulers: this thread's cached ring is s2's
         * (or s1's), both freed here */
        coro_sched_destroy(s1);
        coro_sched_destroy(s2);
        unlink(f1);
        unlink(f2);
    }
}
