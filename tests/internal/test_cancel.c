/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* CORO_CANCEL keeps completed work: an operation that completed keeps its
 * result, whatever point of a job's run the cancel lands on (issue 9,
 * item 4).  A job does N operations that complete at once (a full
 * channel, a pipe full of bytes, a backlog of connections); at operation r
 * it stops until the scheduler is cancelling, then goes on.  r walks over
 * two whole budgets (CORO__BUDGET = 128 ready awaits before a forced
 * yield, whose completed result the cancel used to replace), so the cancel
 * lands at every offset.  Whatever the job was told completed, plus what
 * is left, must be everything: nothing lost, nothing duplicated, no fd
 * leaked; coro_done of a finished job always returns its result.  Across 0 (a helper thread drives), 1, 2 and 4 workers.
 *
 * Also here: a second coro_child waiter of one pid gets -ESRCH. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"     /* s->cancelling: the job waits for the cancel */

enum op { OP_RECV, OP_SEND, OP_READ, OP_ACCEPT, OP_DONE };

#define NOPS 400            /* operations a job may do (> r + 2 budgets) */
#define RMAX 260            /* cancel points: 0 .. RMAX-1 (two budgets) */
#define CHUNK 64            /* bytes per read */

struct opjob {
    coro_t co;
    coro_sched_t *s;
    enum op op;
    int r;                  /* stop here until cancelling */
    int i;
    coro_chan_t *ch;
    int fd;
    char buf[CHUNK];
    void *item;
    long done;              /* operations the job was told completed */
    long units;             /* items / bytes they moved */
    coro_t *target;         /* OP_DONE: a finished job (result 42) */
    int reached;            /* atomic: the job is at r */
    int other;              /* the first result that was neither */
};

static int opjob_body(coro_t *co)
{
    struct opjob *j = CORO_SELF(co, struct opjob);
    CORO_BEGIN(co);
    for (j->i = 0; j->i < NOPS; j->i++) {
        if (j->i == j->r) {
            /* hold the worker until the cancel began (bounded: 20 s) */
            __atomic_store_n(&j->reached, 1, __ATOMIC_RELEASE);
            int64_t end = now_ns() + 20000000000LL;
            while (!__atomic_load_n(&j->s->cancelling, __ATOMIC_ACQUIRE) && now_ns() < end)
                sched_yield();
        }
        switch (j->op) {
        case OP_RECV: CORO_AWAIT(co, coro_chan_recv(j->ch, &j->item, 0)); break;
        case OP_SEND:
            CORO_AWAIT(co, coro_chan_send(j->ch, (void *)(intptr_t)(j->i + 1), 0));
            break;
        case OP_READ: CORO_AWAIT(co, coro_read(j->fd, j->buf, CHUNK, 0)); break;
        case OP_ACCEPT: CORO_AWAIT(co, coro_accept(j->fd, 0)); break;
        case OP_DONE: CORO_AWAIT(co, coro_done(j->target)); break;
        }
        intptr_t r = CORO_RESULT(co);
        if (r < 0 || (j->op == OP_READ && r == 0)) {
            if (r != -ETIMEDOUT && r != -ECANCELED && r != 0 && !j->other)
                j->other = (int)r;
            break;      /* empty / full / cancelled before completing */
        }
        j->done++;
        switch (j->op) {
        case OP_RECV: j->units += (intptr_t)j->item; break;
        case OP_SEND: j->units += j->i + 1; break;
        case OP_READ: j->units += r; break;
        case OP_ACCEPT: close((int)r); j->units++; break;
        case OP_DONE: j->units += r; break;
        }
    }
    CORO_END(co);
}

static int ret42_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_RETURN(co, 42);
    CORO_END(co);
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    cr_assert_not_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void *join_thread(void *arg)
{
    join_r(arg);
    return NULL;
}

/* one round: a fresh scheduler, one job, the cancel at operation r */
static void cancel_round(int workers, enum op op, int r, const char *name)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s = NULL;
    struct opjob *j = calloc(1, sizeof *j);
    coro_chan_t ch;
    void *slots[NOPS];
    int pfd[2] = { -1, -1 }, lfd = -1, clients[NOPS];
    long total_units = 0, total_ops = NOPS;
    char path[108];
    coro_t target = { 0 };

    cr_assert_not_null(j);
    int fds_before = open_fds();        /* the scheduler's own are gone again at the end */
    c.workers = workers;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    j->s = s;
    j->op = op;
    j->r = r;
    j->ch = &ch;
    switch (op) {
    case OP_RECV:
        cr_assert_eq(coro_chan_init(&ch, slots, NOPS), 0);
        for (long i = 1; i <= NOPS; i++) {
            cr_assert_eq(coro_chan_try_send(&ch, (void *)i), 0);
            total_units += i;
        }
        break;
    case OP_SEND:
        cr_assert_eq(coro_chan_init(&ch, slots, NOPS), 0);
        break;
    case OP_READ: {
        char big[NOPS * CHUNK];
        memset(big, 'x', sizeof big);
        cr_assert_eq(pipe(pfd), 0);
        cr_assert_eq(write(pfd[1], big, sizeof big), (ssize_t)sizeof big);
        total_units = sizeof big;
        j->fd = pfd[0];
        break;
    }
    case OP_ACCEPT: {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(path, sizeof path, "/tmp/corokit-cancel-%d-%d-%d", getpid(), workers, r);
        unlink(path);
        strcpy(a.sun_path, path);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(lfd, 0);
        cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
        cr_assert_eq(listen(lfd, NOPS + 16), 0);
        for (int i = 0; i < NOPS; i++) {
            clients[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            cr_assert_geq(clients[i], 0);
            cr_assert_eq(connect(clients[i], (struct sockaddr *)&a, sizeof a), 0,
                         "connect %d: %s", i, strerror(errno));
        }
        total_units = NOPS;
        j->fd = lfd;
        break;
    }
    case OP_DONE:
        cr_assert_eq(block_on_r(s, &target, ret42_body, NULL), 42);
        j->target = &target;
        total_units = 42L * NOPS;
        break;
    }
    cr_assert_eq(coro_spawn(s, &j->co, opjob_body, NULL), 0);
    pthread_t th;
    if (workers == 0)   /* someone must drive until the cancel begins */
        cr_assert_eq(pthread_create(&th, NULL, join_thread, &j->co), 0);
    int64_t end = now_ns() + 20000000000LL;
    while (!__atomic_load_n(&j->reached, __ATOMIC_ACQUIRE) && now_ns() < end)
        sched_yield();
    cr_assert(__atomic_load_n(&j->reached, __ATOMIC_ACQUIRE), "%s r=%d: never reached", name, r);
    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    if (workers == 0)
        pthread_join(th, NULL);
    cr_assert_eq(join_r(&j->co), 0);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(j->other, 0, "%s r=%d: unexpected result %s", name, r, coro_err_name(j->other));

    /* what is left where the job took from or put into */
    long left_units = 0, left_ops = 0;
    void *it;
    switch (op) {
    case OP_RECV:
        while (coro_chan_try_recv(&ch, &it) == 0) {
            left_units += (intptr_t)it;
            left_ops++;
        }
        cr_assert_eq(j->done + left_ops, total_ops, "%s %d workers, cancel at %d: %ld received + %ld left != %ld",
                     name, workers, r, j->done, left_ops, total_ops);
        cr_assert_eq(j->units + left_units, total_units);
        coro_chan_destroy(&ch);
        break;
    case OP_SEND:
        while (coro_chan_try_recv(&ch, &it) == 0) {
            left_units += (intptr_t)it;
            left_ops++;
        }
        cr_assert_eq(left_ops, j->done, "%s %d workers, cancel at %d: %ld sent, %ld in the channel",
                     name, workers, r, j->done, left_ops);
        cr_assert_eq(left_units, j->units);
        coro_chan_destroy(&ch);
        break;
    case OP_READ: {
        char tmp[4096];
        ssize_t n;
        while ((n = read(pfd[0], tmp, sizeof tmp)) > 0)
            left_units += n;
        cr_assert_eq(j->units + left_units, total_units,
                     "%s %d workers, cancel at %d: %ld bytes read + %ld left != %ld", name, workers,
                     r, j->units, left_units, total_units);
        close(pfd[0]);
        close(pfd[1]);
        break;
    }
    case OP_ACCEPT: {
        /* every connection the job was not told of must still be in the
         * backlog, and no accepted fd may stay open */
        int fds_after = open_fds() - NOPS - 1;     /* the clients and the listener */
        cr_assert_eq(fds_after, fds_before, "%s %d workers, cancel at %d: %d fds leaked", name,
                     workers, r, fds_after - fds_before);
        int a;
        while ((a = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
            close(a);
            left_units++;
        }
        cr_assert_eq(j->units + left_units, total_units,
                     "%s %d workers, cancel at %d: %ld accepted + %ld left != %ld", name, workers,
                     r, j->units, left_units, total_units);
        for (int i = 0; i < NOPS; i++)
            close(clients[i]);
        close(lfd);
        unlink(path);
        break;
    }
    case OP_DONE:
        cr_assert_eq(j->done, total_ops, "%s %d workers, cancel at %d: %ld of %ld awaits of a "
                     "finished job returned its result", name, workers, r, j->done, total_ops);
        cr_assert_eq(j->units, total_units);
        break;
    }
    free(j);
}

static void cancel_every_point(enum op op, const char *name)
{
    static const int wk[] = { 0, 1, 2, 4 };
    for (unsigned k = 0; k < sizeof wk / sizeof wk[0]; k++)
        for (int r = 0; r < RMAX; r += (r >= 120 && r < 136) || r >= 250 ? 1 : 7)
            cancel_round(wk[k], op, r, name);
}

Test(cancel, a_received_item_is_never_lost_wherever_the_cancel_lands, .timeout = 120)
{
    cancel_every_point(OP_RECV, "recv");
}

Test(cancel, a_sent_item_is_never_reported_ecanceled_wherever_the_cancel_lands, .timeout = 120)
{
    cancel_every_point(OP_SEND, "send");
}

Test(cancel, bytes_read_are_never_lost_wherever_the_cancel_lands, .timeout = 120)
{
    cancel_every_point(OP_READ, "read");
}

Test(cancel, an_accepted_fd_is_never_leaked_wherever_the_cancel_lands, .timeout = 120)
{
    cancel_every_point(OP_ACCEPT, "accept");
}

Test(cancel, awaiting_a_finished_job_returns_its_result_wherever_the_cancel_lands, .timeout = 120)
{
    cancel_every_point(OP_DONE, "done");
}

/* ---- coro_child: a second waiter ---------------------------------------------------- */

struct childw {
    coro_t co;
    pid_t pid;
    intptr_t res;
};

static int childw_body(coro_t *co)
{
    struct childw *c = CORO_SELF(co, struct childw);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_child(c->pid, 30000000000LL));
    c->res = CORO_RESULT(co);
    CORO_END(co);
}

struct closer {
    coro_t co;
    int fd;
};

static int closer_body(coro_t *co)
{
    struct closer *c = CORO_SELF(co, struct closer);
    CORO_BEGIN(co);
    close(c->fd);
    CORO_END(co);
}

Test(cancel, io_a_second_coro_child_waiter_of_one_pid_gets_esrch, .timeout = 60)
{
    static const int wk[] = { 0, 1, 2, 4 };
    for (unsigned k = 0; k < sizeof wk / sizeof wk[0]; k++) {
        coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
        coro_sched_t *s;
        int go[2];
        struct childw a = { 0 }, b = { 0 };

        c.workers = wk[k];
        cr_assert_eq(coro_sched_create(&s, &c), 0);
        cr_assert_eq(pipe(go), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            char x;
            close(go[1]);
            while (read(go[0], &x, 1) < 0)
                ;
            _exit(7);
        }
        close(go[0]);
        a.pid = b.pid = pid;
        cr_assert_eq(coro_spawn(s, &a.co, childw_body, NULL), 0);
        cr_assert_eq(coro_spawn(s, &b.co, childw_body, NULL), 0);
        if (wk[k] == 0) {
            /* single-threaded, jobs run in spawn order: both waiters are
             * suspended in coro_child before the closer lets the child exit */
            struct closer cl = { .fd = go[1] };
            cr_assert_eq(coro_spawn(s, &cl.co, closer_body, NULL), 0);
            join_r(&cl.co);
        } else {
            /* the second waiter's pidfd is armed once the I/O thread has
             * both registrations: wait until both jobs wait (stats) */
            coro_sched_stats_t *st = malloc(sizeof *st);
            for (int i = 0; i < 20000; i++) {
                coro_sched_stats(s, st);
                long q = (long)st->queue_depth;
                if (q == 0 && st->global_depth == 0)
                    break;
                usleep(100);
            }
            free(st);
            /* a waiter that came after the exit gets -ESRCH from its
             * constructor: the assertion holds either way */
            close(go[1]);   /* the child exits */
        }
        join_r(&a.co);
        join_r(&b.co);
        intptr_t ok = a.res >= 0 ? a.res : b.res, other = a.res >= 0 ? b.res : a.res;
        cr_assert(WIFEXITED((int)ok) && WEXITSTATUS((int)ok) == 7, "%d workers: %s / %s",
                  wk[k], coro_err_name((int)a.res), coro_err_name((int)b.res));
        cr_assert_eq(other, -ESRCH, "%d workers: the second waiter got %s", wk[k],
                     coro_err_name((int)other));
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}
