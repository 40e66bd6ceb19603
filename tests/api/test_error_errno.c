/* SPDX-License-Identifier: MIT */
/* errno is never read or written on corokit's behalf (include/corokit/
 * error.h): a sentinel stored in errno is still there after every public
 * function, on its error and its success paths, and, inside a job on a
 * scheduler with 0 or 1 worker (the job resumes on the thread it left),
 * after every kind of await. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SENT 4711       /* no errno value */

/* a plain call: errno is SENT after it */
#define KEEP(call)                                                                     \
    do {                                                                               \
        errno = SENT;                                                                  \
        (void)(call);                                                                  \
        int e__ = errno;                                                               \
        cr_expect_eq(e__, SENT, "line %d: %s left errno %d (%s)", __LINE__, #call, e__, \
                     strerror(e__));                                                   \
    } while (0)

static int empty_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

struct evjob { coro_t co; coro_event_t *ev; };

static int ev_body(coro_t *co)
{
    struct evjob *j = CORO_SELF(co, struct evjob);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(j->ev, CORO_FOREVER));
    CORO_END(co);
}

/* ---- the scheduler's functions ----------------------------------------------------- */

Test(error_errno, sched_create_destroy_spawn_join_and_shutdown_keep_errno, .timeout = 60)
{
    static const int workers[] = { 0, 1, 2 };
    coro_sched_config_t bad = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    bad.workers = -7;
    KEEP(coro_sched_create(&s, &bad));
    KEEP(coro_sched_create(NULL, NULL));
    for (size_t wi = 0; wi < 3; wi++) {
        coro_t a, b;
        intptr_t r;
        coro_spawn_opts_t hi = { .priority = 9 };
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        errno = SENT;
        s = mk(workers[wi]);
        cr_expect_eq(errno, SENT, "coro_sched_create left errno %d", errno);
        KEEP(coro_sched_workers(s));
        KEEP(coro_sched_current());
        KEEP(coro_spawn(s, &a, empty_body, NULL));
        KEEP(coro_spawn(s, &a, empty_body, NULL) == -EBUSY);
        KEEP(coro_spawn(s, &b, empty_body, &hi));
        KEEP(join_r(&a));
        KEEP(coro_join_timeout(&a, &r, 0));
        KEEP(block_on_r(s, &a, empty_body, NULL));
        if (workers[wi] == 0)
            KEEP(coro_sched_run(s));
        else
            KEEP(coro_sched_run(s) == -EINVAL);

        /* a job that waits: join_timeout and shutdown_timeout time out */
        coro_event_t ev;
        struct evjob j = { .ev = &ev };
        coro_event_init(&ev);
        KEEP(coro_spawn(s, &j.co, ev_body, NULL));
        if (workers[wi] == 0)
            coro_sched_run(s);
        KEEP(coro_join_timeout(&j.co, &r, 1000000));       /* -ETIMEDOUT */
        KEEP(coro_join_timeout(&j.co, &r, 0));
        KEEP(coro_cancel(&j.co));
        KEEP(join_r(&j.co));
        KEEP(coro_spawn(s, &j.co, ev_body, NULL));
        if (workers[wi] == 0)
            coro_sched_run(s);
        coro_sched_stats_t st;
        coro_worker_stats_t ws;
        KEEP(coro_sched_stats(s, &st));
        KEEP(coro_sched_worker_stats(s, 0, &ws));
        KEEP(coro_sched_worker_stats(s, 99, &ws));
        FILE *f = tmpfile();
        KEEP(coro_sched_dump(s, f));
        fclose(f);
        KEEP(coro_sched_trace_write(s, "/nonexistent/dir/trace.json"));   /* tracing off */
        KEEP(coro_sched_shutdown(s, 77));
        KEEP(coro_sched_shutdown_timeout(s, 1000000));     /* -ETIMEDOUT, cancels */
        KEEP(coro_sched_shutdown(s, CORO_DRAIN));
        KEEP(coro_sched_shutdown(s, CORO_CANCEL));
        KEEP(coro_spawn(s, &b, empty_body, NULL) == -ESHUTDOWN);
        KEEP(coro_sched_destroy(s));
        coro_event_destroy(&ev);
    }
    KEEP(coro_sched_destroy(NULL));
}

Test(error_errno, trace_writes_keep_errno_on_success_and_failure, .timeout = 30)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    char dir[] = "/tmp/corokit-errno-XXXXXX", path[128];
    coro_t a;
    memset(&a, 0, sizeof a);
    c.workers = 1;
    c.pin = false;
    c.trace_events = 256;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    cr_assert_eq(block_on_r(s, &a, empty_body, NULL), 0);
    cr_assert_not_null(mkdtemp(dir));
    KEEP(coro_sched_trace_write(s, dir));                  /* -EISDIR */
    KEEP(coro_sched_trace_write(s, "/nonexistent/dir/trace.json"));
    snprintf(path, sizeof path, "%s/t.json", dir);
    KEEP(coro_sched_trace_write(s, path));
    KEEP(coro_sched_trace_write(s, ""));
    KEEP(coro_sched_destroy(s));
    unlink(path);
    rmdir(dir);
}

/* an allocator that fails, as malloc does (NULL, errno ENOMEM), once told */
static int alloc_fails;

static void *failing_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (__atomic_load_n(&alloc_fails, __ATOMIC_RELAXED)) {
        errno = ENOMEM;
        return NULL;
    }
    return malloc(n);
}

static void plain_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

Test(error_errno, frames_cpusets_errors_and_version_keep_errno, .timeout = 30)
{
    static coro_alloc_t failing = { .alloc = failing_malloc, .free = plain_free };
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    void *f = NULL;
    coro_t a;
    memset(&a, 0, sizeof a);
    c.workers = 1;
    c.pin = false;
    c.alloc = &failing;
    alloc_fails = 0;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    KEEP(f = coro_frame_alloc(s, 256));
    KEEP(coro_frame_free(f));
    alloc_fails = 1;
    KEEP(coro_frame_alloc(s, (size_t)1 << 20));             /* a new slab: NULL */
    KEEP(coro_spawn(s, &a, empty_body, &(coro_spawn_opts_t){ .deadline = 1 << 30 }));
    alloc_fails = 0;
    KEEP(coro_frame_alloc(NULL, 64));
    coro_sched_destroy(s);

    coro_cpuset_t set;
    char buf[64];
    KEEP(coro_cpuset_zero(&set));
    KEEP(coro_cpuset_add(&set, 3));
    KEEP(coro_cpuset_add(&set, -1));
    KEEP(coro_cpuset_del(&set, 3));
    KEEP(coro_cpuset_has(&set, 3));
    KEEP(coro_cpuset_count(&set));
    KEEP(coro_cpuset_next(&set, 0));
    KEEP(coro_cpuset_parse(&set, "0-3,8"));
    KEEP(coro_cpuset_parse(&set, "3-1,x"));
    KEEP(coro_cpuset_format(&set, buf, sizeof buf));
    KEEP(coro_cpuset_format(&set, buf, 1));
    KEEP(coro_strerror(-EINVAL));
    KEEP(coro_strerror(-99999));
    KEEP(coro_err_name(-EISDIR));
    KEEP(coro_version());
    KEEP(coro_now());
}

/* ---- the sync objects from plain threads -------------------------------------------- */

Test(error_errno, sync_objects_from_plain_threads_keep_errno, .timeout = 30)
{
    coro_event_t ev;
    coro_waitgroup_t wg;
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t ch;
    void *buf[2], *item = NULL;

    KEEP(coro_event_init(&ev));
    KEEP(coro_event_wait_blocking(&ev, 1000000));          /* -ETIMEDOUT */
    KEEP(coro_event_wait_blocking(&ev, 0));
    KEEP(coro_event_wait_blocking(&ev, -5));
    KEEP(coro_event_set(&ev));
    KEEP(coro_event_is_set(&ev));
    KEEP(coro_event_wait_blocking(&ev, CORO_FOREVER));
    KEEP(coro_event_reset(&ev));
    KEEP(coro_event_destroy(&ev));
    KEEP(coro_event_set(NULL));

    KEEP(coro_waitgroup_init(&wg));
    KEEP(coro_waitgroup_add(&wg, 1));
    KEEP(coro_waitgroup_wait_blocking(&wg, 1000000));      /* -ETIMEDOUT */
    KEEP(coro_waitgroup_done(&wg));
    KEEP(coro_waitgroup_wait_blocking(&wg, CORO_FOREVER));
    KEEP(coro_waitgroup_done(&wg));                         /* below zero */
    KEEP(coro_waitgroup_destroy(&wg));

    KEEP(coro_mutex_init(&m));
    KEEP(coro_mutex_lock_blocking(&m, CORO_FOREVER));
    KEEP(coro_mutex_lock_blocking(&m, 1000000));            /* -EDEADLK */
    KEEP(coro_mutex_try_lock(&m));
    KEEP(coro_mutex_destroy(&m));                           /* -EBUSY */
    KEEP(coro_mutex_unlock(&m));
    KEEP(coro_mutex_unlock(&m));                      /* -EPERM */
    KEEP(coro_mutex_destroy(&m));

    KEEP(coro_sem_init(&sem, 0));
    KEEP(coro_sem_acquire_blocking(&sem, 1000000));         /* -ETIMEDOUT */
    KEEP(coro_sem_try_acquire(&sem));
    KEEP(coro_sem_release(&sem, 2));
    KEEP(coro_sem_acquire_blocking(&sem, CORO_FOREVER));
    KEEP(coro_sem_value(&sem));
    KEEP(coro_sem_destroy(&sem));

    KEEP(coro_chan_init(&ch, buf, 2));
    KEEP(coro_chan_recv_blocking(&ch, &item, 1000000));     /* -ETIMEDOUT */
    KEEP(coro_chan_try_recv(&ch, &item));
    KEEP(coro_chan_send_blocking(&ch, &ch, CORO_FOREVER));
    KEEP(coro_chan_try_send(&ch, &ch));
    KEEP(coro_chan_send_blocking(&ch, &ch, 1000000));       /* full: -ETIMEDOUT */
    KEEP(coro_chan_len(&ch));
    KEEP(coro_chan_cap(&ch));
    KEEP(coro_chan_recv_blocking(&ch, &item, CORO_FOREVER));
    KEEP(coro_chan_close(&ch));
    KEEP(coro_chan_send_blocking(&ch, &ch, CORO_FOREVER));  /* -EPIPE */
    KEEP(coro_chan_recv_blocking(&ch, &item, CORO_FOREVER));
    KEEP(coro_chan_recv_blocking(&ch, &item, CORO_FOREVER)); /* -EPIPE */
    KEEP(coro_chan_destroy(&ch));
    KEEP(coro_chan_init_alloc(&ch, 4, NULL));
    KEEP(coro_chan_destroy(&ch));

    coro_select_t *sel = malloc(sizeof *sel);
    coro_event_init(&ev);
    KEEP(coro_select_init(sel));
    KEEP(coro_select_event(sel, &ev));
    KEEP(coro_select_timer(sel, coro_now() + 1000000));
    KEEP(coro_select_set_timer(sel, 1, coro_now() + 1000000));
    KEEP(coro_select_set_timer(sel, 0, 5));                 /* not a timer */
    KEEP(coro_select_readable(sel, NULL, -1));
    KEEP(coro_select_blocking(sel, CORO_FOREVER));          /* the timer */
    KEEP(coro_select_blocking(sel, 0));
    KEEP(coro_select_result(sel, 1));
    KEEP(coro_select_result(sel, 40));
    KEEP(coro_select_init(sel));
    KEEP(coro_select_event(sel, &ev));
    KEEP(coro_select_blocking(sel, 1000000));               /* -ETIMEDOUT */
    coro_event_destroy(&ev);
    free(sel);

    coro_group_t g;
    coro_sched_t *s = mk(1);
    struct evjob j = { .ev = &ev };
    coro_spawn_opts_t o = { .group = &g };
    coro_event_init(&ev);
    KEEP(coro_group_init(&g));
    KEEP(coro_spawn(s, &j.co, ev_body, &o));
    KEEP(coro_group_wait_blocking(&g, 1000000));            /* -ETIMEDOUT */
    KEEP(coro_group_destroy(&g));                           /* -EBUSY */
    KEEP(coro_group_cancel(&g));
    KEEP(coro_group_wait_blocking(&g, CORO_FOREVER));
    KEEP(coro_group_destroy(&g));
    coro_sched_destroy(s);
    coro_event_destroy(&ev);
}

Test(error_errno, coro_close_keeps_errno, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    KEEP(coro_close(s, p[0]));
    KEEP(coro_close(NULL, p[1]));
    /* fixed on branch io27: coro_close of a closed fd left EBADF */
    KEEP(coro_close(s, p[0]));
    KEEP(coro_close(NULL, p[1]));
    KEEP(coro_close(s, -1));
    coro_sched_destroy(s);
}

/* ---- every kind of await --------------------------------------------------------------- */

/* the awaits after which errno was not SENT (the first 16) */
static int nbad, bad_line[16], bad_errno[16];

static void note(int line)
{
    int e = errno;
    if (e != SENT && nbad < 16) {
        bad_line[nbad] = line;
        bad_errno[nbad++] = e;
    }
}

/* errno = SENT, await, errno still SENT (the awaitable is built under it) */
#define AW(co, a)                    \
    do {                             \
        errno = SENT;                \
        CORO_AWAIT(co, a);           \
        note(__LINE__);              \
    } while (0)
/* the same for a plain call inside the job */
#define CALL(call)                   \
    do {                             \
        errno = SENT;                \
        (void)(call);                \
        note(__LINE__);              \
    } while (0)

static int child_body(coro_t *co)
{
    CORO_BEGIN(co);
    errno = SENT;
    CORO_YIELD(co);
    note(__LINE__);
    CORO_RETURN(co, 3);
    CORO_END(co);
}

/* a job past its .deadline: its wait ends -ETIMEDOUT */
struct dljob { coro_t co; coro_event_t *ev; };

static int deadline_body(coro_t *co)
{
    struct dljob *j = CORO_SELF(co, struct dljob);
    CORO_BEGIN(co);
    AW(co, coro_event_wait(j->ev, CORO_FOREVER));
    AW(co, coro_sleep(1000));
    CORO_END(co);
}

static intptr_t pool_fn(void *arg)
{
    (void)arg;
    errno = EIO;        /* the pool thread's own errno: not the job's */
    return 11;
}

struct awaits {
    coro_t co;
    struct dljob dl;
    coro_t child, other;
    struct evjob waiter;
    coro_event_t ev, ev2;
    coro_waitgroup_t wg;
    coro_mutex_t m;
    coro_sem_t sem;
    coro_chan_t ch;
    void *buf[2], *item;
    coro_select_t sel;
    coro_group_t g;
    int p[2], lsn, cli, acc, file;
    char b[64];
    struct sockaddr_un addr;
    pid_t pid;
    intptr_t r;
    int step;
};

static int awaits_body(coro_t *co)
{
    struct awaits *a = CORO_SELF(co, struct awaits);
    CORO_BEGIN(co);
    errno = SENT;
    CORO_YIELD(co);
    note(__LINE__);
    AW(co, coro_ready(5));
    AW(co, coro_call(&a->child, child_body));
    CALL(coro_spawn(coro_sched_current(), &a->other, empty_body, NULL));
    AW(co, coro_done(&a->other));
    AW(co, coro_done(&a->other));                                /* finished already */
    CALL(coro_spawn(coro_sched_current(), &a->waiter.co, ev_body, NULL));
    AW(co, coro_done_timeout(&a->waiter.co, &a->r, 1000000));    /* -ETIMEDOUT */
    AW(co, coro_reschedule(NULL, CORO_PRIO_HIGH));
    AW(co, coro_reschedule(NULL, 7));                            /* -EINVAL */
    AW(co, coro_sleep(1000000));
    AW(co, coro_sleep(0));
    AW(co, coro_sleep(-5));
    AW(co, coro_sleep_until(coro_now() + 1000000));
    AW(co, coro_sleep_until(1));

    /* event, waitgroup, mutex, semaphore, channel: timeouts, then success */
    AW(co, coro_event_wait(&a->ev, 1000000));
    CALL(coro_event_set(&a->ev));
    AW(co, coro_event_wait(&a->ev, CORO_FOREVER));
    AW(co, coro_done(&a->waiter.co));                            /* woken by the set */
    AW(co, coro_done_timeout(&a->waiter.co, &a->r, 1000000));    /* finished */
    a->dl.ev = &a->ev2;
    CALL(coro_spawn(coro_sched_current(), &a->dl.co, deadline_body,
                    &(coro_spawn_opts_t){ .deadline = coro_now() + 1000000 }));
    AW(co, coro_done(&a->dl.co));
    CALL(coro_waitgroup_add(&a->wg, 1));
    AW(co, coro_waitgroup_wait(&a->wg, 1000000));
    CALL(coro_waitgroup_done(&a->wg));
    AW(co, coro_waitgroup_wait(&a->wg, CORO_FOREVER));
    AW(co, coro_mutex_lock(&a->m, CORO_FOREVER));
    AW(co, coro_mutex_lock(&a->m, 1000000));                     /* -EDEADLK */
    CALL(coro_mutex_unlock(&a->m));
    AW(co, coro_sem_acquire(&a->sem, 1000000));
    CALL(coro_sem_release(&a->sem, 1));
    AW(co, coro_sem_acquire(&a->sem, CORO_FOREVER));
    AW(co, coro_chan_recv(&a->ch, &a->item, 1000000));
    AW(co, coro_chan_send(&a->ch, a, CORO_FOREVER));
    AW(co, coro_chan_send(&a->ch, a, CORO_FOREVER));
    AW(co, coro_chan_send(&a->ch, a, 1000000));                  /* full */
    AW(co, coro_chan_recv(&a->ch, &a->item, CORO_FOREVER));
    CALL(coro_chan_close(&a->ch));
    AW(co, coro_chan_send(&a->ch, a, CORO_FOREVER));             /* -EPIPE */
    AW(co, coro_chan_recv(&a->ch, &a->item, CORO_FOREVER));
    AW(co, coro_chan_recv(&a->ch, &a->item, CORO_FOREVER));      /* -EPIPE */

    /* select: timeout, a timer, an event */
    CALL(coro_select_init(&a->sel));
    CALL(coro_select_event(&a->sel, &a->ev2));
    errno = SENT;
    CORO_SELECT(co, &a->sel, 1000000);
    note(__LINE__);
    CALL(coro_select_timer(&a->sel, coro_now() + 1000000));
    errno = SENT;
    CORO_SELECT(co, &a->sel, CORO_FOREVER);
    note(__LINE__);
    CALL(coro_event_set(&a->ev2));
    errno = SENT;
    CORO_SELECT(co, &a->sel, CORO_FOREVER);
    note(__LINE__);

    /* a group: timeout, then its member ends */
    CALL(coro_event_reset(&a->ev));
    CALL(coro_spawn(coro_sched_current(), &a->waiter.co, ev_body,
                    &(coro_spawn_opts_t){ .group = &a->g }));
    AW(co, coro_group_wait(&a->g, 1000000));
    CALL(coro_event_set(&a->ev));
    AW(co, coro_group_wait(&a->g, CORO_FOREVER));

    /* the blocking pool */
    AW(co, coro_blocking(pool_fn, NULL));
    AW(co, coro_blocking(NULL, NULL));

    /* fds: a pipe, a regular file, a listening socket, a child */
    AW(co, coro_readable(a->p[0], 1000000));
    AW(co, coro_writable(a->p[1], CORO_FOREVER));
    AW(co, coro_write(a->p[1], "abc", 3, CORO_FOREVER));
    AW(co, coro_readable(a->p[0], CORO_FOREVER));
    AW(co, coro_read(a->p[0], a->b, 2, CORO_FOREVER));
    AW(co, coro_read(a->p[0], a->b, 0, CORO_FOREVER));
    AW(co, coro_read(a->p[0], a->b, 8, CORO_FOREVER));
    AW(co, coro_read(a->p[0], a->b, 8, 1000000));                /* -ETIMEDOUT */
    AW(co, coro_write_all(a->p[1], "defg", 4, CORO_FOREVER));
    AW(co, coro_read(-1, a->b, 8, CORO_FOREVER));                /* -EBADF */
    AW(co, coro_readable(-1, CORO_FOREVER));
    AW(co, coro_read(a->file, a->b, sizeof a->b, CORO_FOREVER)); /* the pool */
    AW(co, coro_writable(a->cli, 0));                            /* not connected */
    AW(co, coro_connect(a->cli, (struct sockaddr *)&a->addr, sizeof a->addr, CORO_FOREVER));
    AW(co, coro_accept(a->lsn, CORO_FOREVER));
    a->acc = (int)CORO_RESULT(co);
    AW(co, coro_write(a->cli, "x", 1, CORO_FOREVER));
    AW(co, coro_read(a->acc, a->b, 8, CORO_FOREVER));
    AW(co, coro_signal(SIGUSR2, 1000000));                       /* not blocked: -EINVAL */
    AW(co, coro_child(a->pid, CORO_FOREVER));
    CALL(coro_close(NULL, a->acc));

    /* cancelled: the pending await and the next one */
    CALL(coro_cancel(co));
    AW(co, coro_event_wait(&a->ev2, CORO_FOREVER));
    AW(co, coro_sleep(1000000));
    CORO_END(co);
}

/* fixed on branch io27: the I/O constructors that complete at once with an
 * error left the system call's errno (EAGAIN, ENOTSOCK, ESRCH) */
static int io27_body(coro_t *co)
{
    struct awaits *a = CORO_SELF(co, struct awaits);
    CORO_BEGIN(co);
    AW(co, coro_accept(a->lsn, 1000000));                        /* -ETIMEDOUT */
    AW(co, coro_accept(a->p[0], CORO_FOREVER));                  /* not a socket */
    AW(co, coro_child(a->pid, CORO_FOREVER));
    AW(co, coro_child(a->pid, CORO_FOREVER));                    /* reaped: -ESRCH */
    CORO_END(co);
}

static void run_awaits(int workers, coro_fn body)
{
    coro_sched_t *s = mk(workers);
    struct awaits *a = calloc(1, sizeof *a);
    char tmpl[] = "/tmp/corokit-errno-XXXXXX";

    signal(SIGPIPE, SIG_IGN);
    nbad = 0;
    a->waiter.ev = &a->ev;
    coro_event_init(&a->ev);
    coro_event_init(&a->ev2);
    coro_waitgroup_init(&a->wg);
    coro_mutex_init(&a->m);
    coro_sem_init(&a->sem, 0);
    coro_chan_init(&a->ch, a->buf, 2);
    coro_group_init(&a->g);
    cr_assert_eq(pipe2(a->p, O_NONBLOCK), 0);
    a->file = mkstemp(tmpl);
    cr_assert_geq(a->file, 0);
    cr_assert_eq(write(a->file, "hello", 5), 5);
    lseek(a->file, 0, SEEK_SET);
    unlink(tmpl);
    a->lsn = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    a->cli = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    a->addr.sun_family = AF_UNIX;
    snprintf(a->addr.sun_path, sizeof a->addr.sun_path, "/tmp/corokit-errno-%d-%d.sock",
             (int)getpid(), workers);
    unlink(a->addr.sun_path);
    cr_assert_eq(bind(a->lsn, (struct sockaddr *)&a->addr, sizeof a->addr), 0);
    cr_assert_eq(listen(a->lsn, 4), 0);
    a->pid = fork();
    if (a->pid == 0)
        _exit(3);

    cr_assert_eq(coro_spawn(s, &a->co, body, NULL), 0);
    join_r(&a->co);
    for (int i = 0; i < nbad; i++)
        cr_expect_fail("workers %d: after line %d errno was %d (%s)", workers, bad_line[i],
                       bad_errno[i], strerror(bad_errno[i]));
    cr_assert_eq(coro_sched_destroy(s), 0);
    close(a->p[0]);
    close(a->p[1]);
    close(a->file);
    close(a->lsn);
    close(a->cli);
    unlink(a->addr.sun_path);
    free(a);
}

Test(error_errno, every_await_keeps_errno_with_no_worker, .timeout = 60)
{
    run_awaits(0, awaits_body);
}

Test(error_errno, every_await_keeps_errno_with_one_worker, .timeout = 60)
{
    run_awaits(1, awaits_body);
}

/* fixed on branch io27 */
Test(error_errno, accept_and_child_awaits_that_fail_at_once_keep_errno, .timeout = 60)
{
    run_awaits(0, io27_body);
    run_awaits(1, io27_body);
}
