/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_signal and coro_child: a signal and a child's exit status awaited. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fixture_io.h"

/* ---- signals and children ----------------------------------------------------------------- */

/* block signo in this thread, before the scheduler's threads start (they
 * inherit the mask): coro_signal takes only a blocked signal */
static void block_signal(int signo)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    cr_assert_eq(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
}

static void *kill_later(void *arg)
{
    sleep_ms(30);
    kill(getpid(), (int)(intptr_t)arg);
    return NULL;
}

Test(io_signal, sigusr1_is_awaited, .timeout = 30)
{
    block_signal(SIGUSR1);
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        pthread_t t;
        pthread_create(&t, NULL, kill_later, (void *)(intptr_t)SIGUSR1);
        struct one o = { .op = OP_SIGNAL, .fd = SIGUSR1, .timeout = 5000 * MS };
        cr_assert_eq(run_one(s, &o), SIGUSR1, "workers %d: %s", w, coro_strerror((int)o.res));
        pthread_join(t, NULL);
        o = (struct one){ .op = OP_SIGNAL, .fd = SIGUSR1, .timeout = 10 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        /* already pending: completes at once */
        kill(getpid(), SIGUSR1);
        o = (struct one){ .op = OP_SIGNAL, .fd = SIGUSR1, .timeout = 0 };
        cr_assert_eq(run_one(s, &o), SIGUSR1);
        coro_sched_destroy(s);
    }
}

Test(io_signal, a_childs_exit_status_is_awaited, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            sleep_ms(30);
            _exit(7);
        }
        struct one o = { .op = OP_CHILD, .fd = pid, .timeout = 10000 * MS };
        intptr_t st = run_one(s, &o);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#lx", (long)st);
        o = (struct one){ .op = OP_CHILD, .fd = pid, .timeout = 0 };
        cr_assert_eq(run_one(s, &o), -ESRCH, "already reaped: gone");
        pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pause();
            _exit(0);
        }
        o = (struct one){ .op = OP_CHILD, .fd = pid, .timeout = 20 * MS };
        cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
        kill(pid, SIGKILL);
        o = (struct one){ .op = OP_CHILD, .fd = pid, .timeout = 10000 * MS };
        st = run_one(s, &o);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#lx", (long)st);
        coro_sched_destroy(s);
    }
}

/* ---- an awaitable's own fd on a number that close(2) freed ---------------------------------- */

/* the number a read wait registered in the epoll set, then closed with
 * close(2) (epoll drops the file; corokit's entry for the number does
 * not know): the fd that coro_signal or coro_child makes next takes it */
static int registered_then_closed(coro_sched_t *s)
{
    int p[2];
    cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    struct one o = { .op = OP_READ, .fd = p[0], .buf = (char[1]){ 0 }, .len = 1, .timeout = 10 * MS };
    cr_assert_eq(run_one(s, &o), -ETIMEDOUT);
    close(p[1]);
    close(p[0]);
    return p[0];
}

struct reuse_probe {
    coro_sched_t *s;
    int fd;             /* the freed number */
    int signo;          /* 0: a child's exit (pid) */
    pid_t pid;
    bool reused;        /* the wait's own fd took the number */
};

/* until the scheduler's dump shows a job waiting on the freed number (10
 * s bound; dump_has takes no fd, so the number stays free for the wait),
 * then the event */
static void *reuse_later(void *arg)
{
    struct reuse_probe *r = arg;
    char want[32];
    snprintf(want, sizeof want, "fd %d ", r->fd);
    for (int i = 0; i < 10000 && !(r->reused = dump_has(r->s, want)); i++)
        usleep(1000);
    if (r->signo)
        kill(getpid(), r->signo);
    else
        kill(r->pid, SIGKILL);
    return NULL;
}

/* samples/echo_server hung at its SIGTERM: a client's fd, closed with
 * close(2), had freed the number that its SIGTERM job's signalfd took,
 * and the wait was never registered */
Test(io_signal, a_signal_or_child_awaited_on_a_number_freed_by_close_2_still_arrives, .timeout = 60)
{
    block_signal(SIGUSR2);
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        struct reuse_probe r = { .s = s, .fd = registered_then_closed(s), .signo = SIGUSR2 };
        pthread_t t;
        pthread_create(&t, NULL, reuse_later, &r);
        struct one o = { .op = OP_SIGNAL, .fd = SIGUSR2, .timeout = 5000 * MS };
        intptr_t got = run_one(s, &o);
        pthread_join(t, NULL);
        cr_assert(r.reused, "workers %d: no wait on fd %d (the signalfd took another number)", w, r.fd);
        cr_assert_eq(got, SIGUSR2, "workers %d: %s", w, coro_strerror((int)got));

        r = (struct reuse_probe){ .s = s, .fd = registered_then_closed(s) };
        r.pid = fork();
        if (r.pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pause();
            _exit(0);
        }
        pthread_create(&t, NULL, reuse_later, &r);
        o = (struct one){ .op = OP_CHILD, .fd = r.pid, .timeout = 5000 * MS };
        got = run_one(s, &o);
        pthread_join(t, NULL);
        cr_assert(r.reused, "workers %d: no wait on fd %d (the pidfd took another number)", w, r.fd);
        cr_assert(got >= 0 && WIFSIGNALED(got) && WTERMSIG(got) == SIGKILL, "workers %d: %s (%#lx)",
                  w, got < 0 ? coro_strerror((int)got) : "status", (long)got);
        coro_sched_destroy(s);
    }
}
