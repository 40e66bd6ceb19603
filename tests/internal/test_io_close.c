/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_close and a CORO_CANCEL shutdown resume each job waiting on an fd
 * once, with -EBADF or -ECANCELED.  White-box: the closer waits for the
 * job's state word (suspended) before it acts. */
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

#include "rt/rt.h"        /* white box: the job state word, the I/O context */
#include "fixture_io.h"

/* ---- close and cancel ----------------------------------------------------------------------- */

struct closer {
    coro_sched_t *s;
    int fd, rc, mode;
    coro_t *after;          /* close once this job waits (state polled, 10 s bound) */
    pthread_t t;
};

static void *closer_main(void *arg)
{
    struct closer *c = arg;
    if (!c->after)
        sleep_ms(50);       /* cancel: the assertions hold whether a job waits yet or not */
    for (int i = 0; c->after && i < 100000; i++) {
        if ((__atomic_load_n(&c->after->state, __ATOMIC_ACQUIRE) & CORO__S_MASK) ==
            CORO__S_SUSPENDED)
            break;
        usleep(100);
    }
    /* SUSPENDED comes before the job is in the fd's slot (its arm
     * follows): a close in between freed the number, the I/O context's
     * timerfd, made at that arm, took it, and the job waited on that for
     * its whole timeout (seen once in 300 runs).  Wait for the dump to
     * name the fd */
    char want[32];
    snprintf(want, sizeof want, "fd %d ", c->fd);
    for (int i = 0; c->after && c->fd >= 0 && i < 100000 && !dump_has(c->s, want); i++)
        usleep(100);
    c->rc = c->fd >= 0 ? coro_close(c->s, c->fd) : coro_sched_shutdown(c->s, c->mode);
    return NULL;
}

Test(io_close, coro_close_resumes_a_waiting_job_once_with_ebadf, .timeout = 30)
{
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int p[2];
        char buf[4];
        cr_assert_eq(pipe(p), 0);
        struct one o = { .op = OP_READ, .fd = p[0], .buf = buf, .len = 4, .timeout = 10000 * MS };
        cr_assert_eq(coro_spawn(s, &o.co, one_body, NULL), 0);
        struct closer cl = { .s = s, .fd = p[0], .after = &o.co };
        pthread_create(&cl.t, NULL, closer_main, &cl);     /* while we drive or wait */
        join_r(&o.co);
        pthread_join(cl.t, NULL);
        cr_assert_eq(cl.rc, 0);
        cr_assert_eq(o.res, -EBADF);
        cr_assert_eq(o.wakes, 1);
        cr_assert_lt(o.elapsed, 5000 * MS, "not by its timeout");
        /* the I/O context closed it: the number is free again */
        for (int i = 0; i < 1000 && fcntl(p[0], F_GETFD) >= 0; i++)
            sleep_ms(1);
        cr_assert_lt(fcntl(p[0], F_GETFD), 0);
        close(p[1]);
        coro_sched_destroy(s);
    }
}

struct canceller {
    coro_t co;
    enum op op;
    int fd, fd2;
    char buf[4];
    intptr_t first, second;
};

static int canceller_body(coro_t *co)
{
    struct canceller *c = CORO_SELF(co, struct canceller);
    CORO_BEGIN(co);
    switch (c->op) {
    case OP_READ: CORO_AWAIT(co, coro_read(c->fd, c->buf, 4, CORO_FOREVER)); break;
    case OP_SLEEP: CORO_AWAIT(co, coro_sleep(CORO_FOREVER)); break;
    case OP_WRITABLE: CORO_AWAIT(co, coro_sleep(60000 * MS)); break;
    case OP_SIGNAL: CORO_AWAIT(co, coro_signal(SIGUSR1, CORO_FOREVER)); break;
    case OP_CHILD: CORO_AWAIT(co, coro_child(c->fd, CORO_FOREVER)); break;
    default: break;
    }
    c->first = CORO_RESULT(co);
    /* an await after the cancel completes at once */
    CORO_AWAIT(co, coro_read(c->fd2, c->buf, 4, CORO_FOREVER));
    c->second = CORO_RESULT(co);
    CORO_END(co);
}

Test(io_close, shutdown_cancel_resumes_every_pending_wait_once_with_ecanceled, .timeout = 60)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int w;
    FOR_WORKERS(w) {
        coro_sched_t *s = mk(w);
        int p[2];
        cr_assert_eq(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pause();
            _exit(0);
        }
        enum op ops[] = { OP_READ, OP_SLEEP, OP_WRITABLE, OP_SIGNAL, OP_CHILD };
        static struct canceller c[5 * 20];
        memset(c, 0, sizeof c);
        int n = 0;
        for (int k = 0; k < 20; k++) {
            for (int i = 0; i < 5; i++, n++) {
                c[n].op = ops[i];
                c[n].fd = ops[i] == OP_CHILD ? pid : p[0];
                c[n].fd2 = p[0];
                if (ops[i] == OP_READ && k > 0)
                    c[n].op = OP_SLEEP;      /* one reader per fd */
                cr_assert_eq(coro_spawn(s, &c[n].co, canceller_body, NULL), 0);
            }
        }
        /* another thread cancels while this one drives (or waits) */
        struct closer cl = { .s = s, .fd = -1, .mode = CORO_CANCEL };
        pthread_create(&cl.t, NULL, closer_main, &cl);
        for (int i = 0; i < n; i++)
            join_r(&c[i].co);
        pthread_join(cl.t, NULL);
        cr_assert_eq(cl.rc, 0);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(c[i].first, -ECANCELED, "workers %d job %d op %d: %s", w, i, c[i].op,
                         coro_strerror((int)c[i].first));
            cr_assert_eq(c[i].second, -ECANCELED);
        }
        coro_sched_destroy(s);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        /* no fd leaked by the signal and child waits: the next fd is the lowest free */
        int probe = dup(0);
        cr_assert_leq(probe, p[1] + 1, "fds leaked: next fd %d", probe);
        close(probe);
        close(p[0]);
        close(p[1]);
    }
}
