/* SPDX-License-Identifier: MIT */
/* The recipes of docs/recipes.md, run as a user runs them: the programs
 * samples/forwarder, samples/walker and samples/latency, from outside,
 * against a server, a file tree and CPU masks set up here. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- running a sample --------------------------------------------------------------- */

struct child {
    pid_t pid;
    int out, err;                   /* its stdout and stderr, read ends */
};

enum { AS_IS, AS_NOBODY, ON_ONE_CPU };

/* start build/samples/NAME with argv; how: AS_IS, AS_NOBODY (drop root,
 * so that a mode 000 file is unreadable), ON_ONE_CPU (as taskset -c) */
static struct child start(const char *name, char *const *args, int how)
{
    char path[256];
    char *argv[16];
    int o[2], e[2];
    struct child c;

    snprintf(path, sizeof path, "%s/samples/%s", CORO_BUILD_DIR, name);
    argv[0] = path;
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(e, O_CLOEXEC), 0);
    c.pid = fork();
    cr_assert_geq(c.pid, 0);
    if (c.pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        if (how == AS_NOBODY && geteuid() == 0 &&
            (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
            _exit(126);
        if (how == ON_ONE_CPU) {
            cpu_set_t all, one;
            sched_getaffinity(0, sizeof all, &all);
            CPU_ZERO(&one);
            for (int i = 0; i < CPU_SETSIZE; i++)
                if (CPU_ISSET(i, &all)) {
                    CPU_SET(i, &one);
                    break;
                }
            if (sched_setaffinity(0, sizeof one, &one) < 0)
                _exit(126);
        }
        execv(path, argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    c.out = o[0];
    c.err = e[0];
    return c;
}

/* read fd to its end (the child exited or closed it), at most len - 1 bytes */
static size_t slurp(int fd, char *buf, size_t len)
{
    size_t n = 0;
    for (ssize_t r; n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0;)
        n += (size_t)r;
    buf[n] = 0;
    return n;
}

/* wait up to secs for the child's exit; its exit status, or fail */
static int finish(struct child *c, double secs)
{
    int st = 0;
    double end = now_s() + secs;
    while (waitpid(c->pid, &st, WNOHANG) == 0) {
        if (now_s() > end) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            cr_assert_fail("pid %d did not exit within %.0f s", (int)c->pid, secs);
        }
        usleep(5000);       /* polls for the exit: a bound, not an ordering */
    }
    cr_assert(WIFEXITED(st), "died of signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* ---- the forwarder ------------------------------------------------------------------ */

/* A server behind the forwarder: "hi\n" on accept, then everything it
 * reads, sent back only once the client's end of stream arrives - a reply
 * that only comes through a forwarder that kept the other direction open
 * after a half-close. */
struct upstream {
    int lfd, stop[2];
    pthread_t thread;
};

static void *upstream_main(void *arg)
{
    struct upstream *u = arg;
    struct { int fd; size_t have; char buf[1024]; } c[16];
    int nc = 0;

    for (;;) {
        struct pollfd p[18];
        p[0] = (struct pollfd){ .fd = u->lfd, .events = POLLIN };
        p[1] = (struct pollfd){ .fd = u->stop[0], .events = POLLIN };
        for (int i = 0; i < nc; i++)
            p[2 + i] = (struct pollfd){ .fd = c[i].fd, .events = POLLIN };
        if (poll(p, (nfds_t)(2 + nc), -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if ((p[0].revents & POLLIN) && nc < 16) {
            int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0 && write(fd, "hi\n", 3) == 3)
                c[nc++] = (typeof(c[0])){ .fd = fd };
            else if (fd >= 0)
                close(fd);
        }
        for (int i = nc - 1; i >= 0; i--) {
            if (!p[2 + i].revents)
                continue;
            ssize_t r = read(c[i].fd, c[i].buf + c[i].have, sizeof c[i].buf - c[i].have);
            if (r > 0) {
                c[i].have += (size_t)r;
                if (c[i].have < sizeof c[i].buf)
                    continue;
            }
            if (r == 0 && write(c[i].fd, c[i].buf, c[i].have) != (ssize_t)c[i].have)
                r = -1;
            close(c[i].fd);
            c[i] = c[--nc];
        }
    }
    for (int i = 0; i < nc; i++)
        close(c[i].fd);
    return NULL;
}

static int upstream_start(struct upstream *u)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;

    u->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_eq(bind(u->lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(u->lfd, 64), 0);
    cr_assert_eq(getsockname(u->lfd, (struct sockaddr *)&a, &l), 0);
    cr_assert_eq(pipe2(u->stop, O_CLOEXEC), 0);
    cr_assert_eq(pthread_create(&u->thread, NULL, upstream_main, u), 0);
    return ntohs(a.sin_port);
}

static void upstream_stop(struct upstream *u)
{
    cr_assert_eq(write(u->stop[1], "x", 1), 1);
    pthread_join(u->thread, NULL);
    close(u->lfd);
    close(u->stop[0]);
    close(u->stop[1]);
}

static int dial(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { .tv_sec = 10 };   /* a forwarder that hangs: fail, not hang */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    return fd;
}

/* read n bytes exactly; false at an early end */
static bool read_n(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static bool at_eof(int fd)
{
    char c;
    return read(fd, &c, 1) == 0;
}

static pid_t fwd_pid;           /* killed by kill_fwd if a test fails before its end */

static void kill_fwd(void)
{
    if (fwd_pid > 0) {
        kill(fwd_pid, SIGKILL);
        waitpid(fwd_pid, NULL, 0);
    }
}

Test(samples_recipes, forwarder_passes_a_half_close_closes_an_idle_connection_and_drains_on_sigint,
     .timeout = 60, .fini = kill_fwd)
{
    struct upstream u;
    char up[32], line[256], buf[64];
    int port = 0;

    snprintf(up, sizeof up, "127.0.0.1:%d", upstream_start(&u));
    char *args[] = { "-i", "500", "-d", "200", "-w", "2", "0", up, NULL };
    struct child f = start("forwarder", args, AS_IS);
    fwd_pid = f.pid;
    /* its first line gives the port it listens on */
    size_t n = 0;
    while (n < sizeof line - 1 && read(f.out, line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = 0;
    cr_assert(sscanf(line, "forwarder: listening on 127.0.0.1:%d", &port) == 1, "%s", line);

    /* a client that sends and half-closes gets the reply that the server
     * sends only after that end */
    int a = dial(port);
    cr_assert_eq(write(a, "hello", 5), 5);
    cr_assert_eq(shutdown(a, SHUT_WR), 0);
    cr_assert(read_n(a, buf, 8));
    cr_assert_eq(memcmp(buf, "hi\nhello", 8), 0);
    cr_assert(at_eof(a), "no end of stream after the reply");
    close(a);

    /* an idle one is closed, and not before its idle time */
    double t0 = now_s();
    int b = dial(port);
    cr_assert(read_n(b, buf, 3));
    cr_assert(at_eof(b), "an idle connection was not closed");
    cr_assert_geq(now_s() - t0, 0.5, "closed after %.3f s, before the idle time", now_s() - t0);
    close(b);

    /* one that stays busy (a byte every 50 ms) is open at SIGINT: it is
     * cancelled after the 200 ms drain, and the forwarder exits 0 */
    int c = dial(port);
    cr_assert(read_n(c, buf, 3));
    cr_assert_eq(kill(f.pid, SIGINT), 0);
    bool closed = false;
    for (double end = now_s() + 10; !closed && now_s() < end;) {
        struct pollfd p = { .fd = c, .events = POLLIN };
        if (poll(&p, 1, 50) == 1)
            closed = at_eof(c);
        else if (send(c, "x", 1, MSG_NOSIGNAL) != 1)
            closed = true;              /* reset: closed too */
    }
    cr_assert(closed, "the open connection was not closed after SIGINT");
    close(c);
    cr_assert_eq(finish(&f, 20), 0);
    fwd_pid = 0;
    char out[1024];
    slurp(f.out, out, sizeof out);
    cr_assert(strstr(out, "draining for up to 200 ms"), "%s", out);
    cr_assert(strstr(out, "cancelled the connections still open after 200 ms"), "%s", out);
    close(f.out);
    close(f.err);
    upstream_stop(&u);
}

Test(samples_recipes, forwarder_with_a_bad_upstream_or_usage_exits_non_zero, .timeout = 30)
{
    char *bad_host[] = { "0", "no-colon-here", NULL };
    char *no_args[] = { NULL };
    char out[512];
    struct child f = start("forwarder", bad_host, AS_IS);
    cr_assert_eq(finish(&f, 10), 1);
    slurp(f.err, out, sizeof out);
    cr_assert(strstr(out, "cannot resolve"), "%s", out);
    close(f.out);
    close(f.err);
    f = start("forwarder", no_args, AS_IS);
    cr_assert_eq(finish(&f, 10), 2);
    close(f.out);
    close(f.err);
}

/* ---- the walker --------------------------------------------------------------------- */

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

static void put(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    cr_assert_eq(chmod(p, mode), 0);
}

static char tree[64];

static void remove_tree(void)
{
    if (tree[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
        (void)!system(cmd);
    }
}

Test(samples_recipes, walker_hashes_a_known_tree_and_reports_an_unreadable_file, .timeout = 60,
     .fini = remove_tree)
{
    enum { BIG = 300000 };
    static unsigned char big[BIG];
    char sub[96], deep[128], fifo[128], link[128], expect[1024], out[4096], err[1024];

    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 13 + i / 509);
    snprintf(tree, sizeof tree, "/tmp/corokit-recipes-%d-XXXXXX", (int)getpid());
    cr_assert(mkdtemp(tree));
    cr_assert_eq(chmod(tree, 0755), 0);
    snprintf(sub, sizeof sub, "%s/sub", tree);
    snprintf(deep, sizeof deep, "%s/sub/deeper", tree);
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_eq(mkdir(deep, 0755), 0);
    put(tree, "empty", "", 0, 0644);
    put(tree, "a", "a", 1, 0644);
    put(sub, "foobar", "foobar", 6, 0644);
    put(deep, "big", big, BIG, 0644);
    put(sub, "secret", "hidden", 6, 0);         /* unreadable (root is dropped to nobody) */
    snprintf(fifo, sizeof fifo, "%s/fifo", tree);
    cr_assert_eq(mkfifo(fifo, 0644), 0);        /* skipped: not a regular file */
    snprintf(link, sizeof link, "%s/link", tree);
    cr_assert_eq(symlink(sub, link), 0);        /* skipped: links are not followed */
    /* sorted by path, byte order; the published FNV-1a 64 test vectors */
    snprintf(expect, sizeof expect,
             "af63dc4c8601ec8c  %s/a\n"
             "cbf29ce484222325  %s/empty\n"
             "%016" PRIx64 "  %s/sub/deeper/big\n"
             "85944171f73967e8  %s/sub/foobar\n",
             tree, tree, fnv1a(big, BIG), tree, tree);
    for (int j = 1; j <= 3; j += 2) {           /* one at a time, and three */
        char jobs[16];     /* any int: -Wformat-truncation at -Og */
        snprintf(jobs, sizeof jobs, "%d", j);
        char *args[] = { "-j", jobs, tree, NULL };
        struct child w = start("walker", args, AS_NOBODY);
        slurp(w.out, out, sizeof out);
        slurp(w.err, err, sizeof err);
        int st = finish(&w, 30);
        close(w.out);
        close(w.err);
        cr_assert_neq(st, 126, "could not drop root to run as nobody");
        cr_assert_eq(st, 1, "-j %d: exit %d (1: a file could not be read)\n%s", j, st, err);
        cr_assert_str_eq(out, expect, "-j %d", j);
        char want_err[160];
        snprintf(want_err, sizeof want_err, "walker: %s/secret: ", sub);
        cr_assert(strstr(err, want_err) && strstr(err, "ermission denied"), "-j %d: %s", j, err);
    }
}

/* ---- the latency job beside CPU hogs ------------------------------------------------ */

/* the two lines of a run: each sane (a wake-up can only be late; the
 * figures in order; hogs that ran); no timing bound: the machine may be
 * loaded */
static void check_latency(int how)
{
    char *args[] = { "-n", "40", "-p", "1000", NULL };
    char out[1024], err[256];
    struct child l = start("latency", args, how);

    slurp(l.out, out, sizeof out);
    slurp(l.err, err, sizeof err);
    cr_assert_eq(finish(&l, 60), 0, "%s%s", out, err);
    close(l.out);
    close(l.err);
    const char *names[] = { "naive", "isolated" };
    for (int i = 0; i < 2; i++) {
        char key[32];
        long long count, period, p50, p99, max, chunks;
        snprintf(key, sizeof key, "%s ", names[i]);
        const char *at = strstr(out, key);
        cr_assert(at, "%s", out);
        cr_assert_eq(sscanf(at + strlen(key),
                            " %lld wake-ups every %lld us: late p50 %lld us, p99 %lld us, "
                            "max %lld us (hogs ran %lld chunks",
                            &count, &period, &p50, &p99, &max, &chunks),
                     6, "%s", out);
        cr_assert_eq(count, 40);
        cr_assert_eq(period, 1000);
        cr_assert(0 <= p50 && p50 <= p99 && p99 <= max && max < 60 * 1000 * 1000, "%s", at);
        cr_assert_gt(chunks, 0, "%s", at);
    }
}

Test(samples_recipes, latency_prints_sane_figures_on_every_cpu, .timeout = 60)
{
    check_latency(AS_IS);
}

Test(samples_recipes, latency_prints_sane_figures_on_one_cpu, .timeout = 60)
{
    check_latency(ON_ONE_CPU);
}
