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

static void *kill_later(void *arg)
{
    sleep_ms(30);
    kill(getpid(), (int)(intptr_t)arg);
    return NULL;
}

Test(io_signal, sigusr1_is_awaited, .timeout = 30)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);     /* before the scheduler's threads start */
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
