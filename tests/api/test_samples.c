/* SPDX-License-Identifier: MIT */
/* Every program in samples/ is built by make and run here: it must exit 0.
 * Programs that serve or wait (echo_server, httpd ...) take --self-test. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

struct sample {
    char name[64];
};

ParameterizedTestParameters(samples, every_sample_runs_and_exits_0)
{
    static struct sample none[1];
    struct sample *list = cr_malloc(64 * sizeof *list);
    size_t n = 0;
    DIR *d = opendir(CORO_BUILD_DIR "/samples");

    if (!d || !list)
        return cr_make_param_array(struct sample, none, 0);
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || strchr(e->d_name, '.') || len >= sizeof list->name)
            continue;       /* skip .d files */
        memcpy(list[n++].name, e->d_name, len + 1);
    }
    closedir(d);
    return cr_make_param_array(struct sample, list, n);
}

ParameterizedTest(struct sample *p, samples, every_sample_runs_and_exits_0, .timeout = 120)
{
    char path[256];
    char *argv[] = { path, "--self-test", NULL };
    extern char **environ;
    pid_t pid;
    int status = 0;

    posix_spawn_file_actions_t fa;

    snprintf(path, sizeof path, "%s/samples/%s", CORO_BUILD_DIR, p->name);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);  /* its output */
    cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0, "cannot run %s", path);
    posix_spawn_file_actions_destroy(&fa);
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
        if (waited > 100 * 100) {           /* 100 s */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("%s did not finish in 100 s", p->name);
        }
        usleep(10000);
    }
    cr_assert(WIFEXITED(status), "%s died of signal %d", p->name, WTERMSIG(status));
    cr_assert_eq(WEXITSTATUS(status), 0, "%s exited %d", p->name, WEXITSTATUS(status));
}

/* ---- servers against hostile clients -------------------------------------------------------
 * samples/httpd and samples/echo_server, run as `NAME PORT WORKERS` with 0
 * and 2 workers, get 1,000 clients that each connect, send half a request,
 * and, once all have, send the rest and at once close (every other one) or
 * shutdown(SHUT_WR), keeping its socket until the end: the request and the
 * FIN come together to a server that waits for them, the case where a
 * server that trusts an earlier readiness loses the end of the stream.
 * Every connection must be closed by the server within 20 s (none left
 * in CLOSE-WAIT on its port, /proc/net/tcp; no socket of the server open
 * but its listener), and the server must still answer a well-behaved client
 * afterwards and exit 0 on SIGTERM. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static int free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int dial(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { .tv_sec = 5 };    /* a server that stopped accepting: fail, not hang */

    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* connections on local port `port` in CLOSE-WAIT (state 08) */
static int close_waits(int port)
{
    static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
    char line[512];
    int n = 0;

    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            char local[128];
            unsigned st;
            if (sscanf(line, " %*d: %127s %*s %x", local, &st) != 2)
                continue;
            char *colon = strrchr(local, ':');
            if (colon && (int)strtol(colon + 1, NULL, 16) == port && st == 0x08)
                n++;
        }
        fclose(f);
    }
    return n;
}

/* pid's open sockets */
static int open_sockets(pid_t pid)
{
    char path[64], link[64 + sizeof ((struct dirent *)0)->d_name], target[64];
    int n = 0;

    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t r = readlink(link, target, sizeof target - 1);
        n += r > 7 && memcmp(target, "socket:", 7) == 0;
    }
    closedir(d);
    return n;
}

/* what pid's fds are, for a failure's message */
static void list_fds(pid_t pid, char *out, size_t len)
{
    char path[64], link[64 + sizeof ((struct dirent *)0)->d_name], target[128];
    size_t at = 0;

    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    out[0] = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s:%s ", e->d_name, target);
        if (at >= len)
            break;
    }
    if (d)
        closedir(d);
}

/* send req, read until the answer has `want` bytes; true if it starts with expect */
static bool ask(int port, const char *req, const char *expect, size_t want)
{
    char buf[256];
    size_t got = 0;
    int fd = dial(port);
    struct timeval tv = { .tv_sec = 5 };

    if (fd < 0)
        return false;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(fd);
        return false;
    }
    while (got < want && got < sizeof buf) {
        ssize_t n = read(fd, buf + got, sizeof buf - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got >= want && memcmp(buf, expect, strlen(expect)) == 0;
}

static pid_t server_pid;    /* killed by stop_server if a test fails before it stops it */

static void stop_server(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
    }
}

static void hostile(const char *name, int workers, const char *req, const char *expect,
                    size_t want)
{
    char path[256], port_s[16], workers_s[16];
    char *argv[] = { path, port_s, workers_s, NULL };
    extern char **environ;
    posix_spawn_file_actions_t fa;
    int port = free_port(), status = 0;
    pid_t pid;

    snprintf(path, sizeof path, "%s/samples/%s", CORO_BUILD_DIR, name);
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(workers_s, sizeof workers_s, "%d", workers);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0, "cannot run %s", path);
    posix_spawn_file_actions_destroy(&fa);
    server_pid = pid;
    /* bounded (20 s): until it listens and answers */
    for (int64_t i = 0; !ask(port, req, expect, want); i++) {
        cr_assert_lt(i, 2000, "%s %d: never answered", name, workers);
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "%s %d exited", name, workers);
        usleep(10000);      /* a bound on a retry while it starts, not an ordering */
    }
    /* every client first sends part of its request, so that the server
     * reads it and waits for the rest (its fd registered, its word "not
     * ready"); then each sends the rest and its end back to back */
    int *cl = malloc(1000 * sizeof *cl);
    size_t part = strlen(req) / 2;
    for (int i = 0; i < 1000; i++) {
        cr_assert_geq(cl[i] = dial(port), 0, "%s %d: client %d could not connect", name, workers,
                      i);
        cr_assert_eq(write(cl[i], req, part), (ssize_t)part);
    }
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(write(cl[i], req + part, strlen(req) - part), (ssize_t)(strlen(req) - part));
        if (i % 2) {
            close(cl[i]);
            cl[i] = -1;
        } else {
            shutdown(cl[i], SHUT_WR);
        }
        /* not an ordering: a pause lets the server block in epoll_wait
         * again, so that it takes the rest and the FIN in one event (the
         * case that was lost), rather than the rest alone while busy */
        usleep(100);
    }
    int left = 0, socks = 0;
    for (int i = 0; i < 2000; i++) {
        left = close_waits(port);
        socks = open_sockets(pid);
        if (left == 0 && socks == 1)    /* the listener */
            break;
        usleep(10000);      /* polls two counts: 20 s bound */
    }
    cr_assert_eq(left, 0, "%s %d workers: %d connections left in CLOSE-WAIT after 20 s", name,
                 workers, left);
    char fdlist[2048];
    list_fds(pid, fdlist, sizeof fdlist);
    cr_assert_eq(socks, 1, "%s %d workers: %d sockets open besides the listener: %s", name,
                 workers, socks - 1, fdlist);
    cr_assert(ask(port, req, expect, want), "%s %d workers: no answer after the clients", name,
              workers);
    for (int i = 0; i < 1000; i++)
        if (cl[i] >= 0)
            close(cl[i]);
    free(cl);
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    server_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s %d workers: status %#x", name,
              workers, status);
}

static const char HTTP_REQ[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
static const char HTTP_ANSWER[] = "HTTP/1.1 200 OK\r\n";

Test(samples, httpd_closes_every_connection_of_clients_that_send_and_close_at_once,
     .timeout = 120, .fini = stop_server)
{
    hostile("httpd", 0, HTTP_REQ, HTTP_ANSWER, 69);
    hostile("httpd", 2, HTTP_REQ, HTTP_ANSWER, 69);
}

Test(samples, echo_server_closes_every_connection_of_clients_that_send_and_close_at_once,
     .timeout = 120, .fini = stop_server)
{
    hostile("echo_server", 0, "ping\n", "ping\n", 5);
    hostile("echo_server", 2, "ping\n", "ping\n", 5);
}

/* samples/testing: ten virtual minutes (a rate limiter, retries with
 * backoff, a timeout race, seed sweeps) in well under a second of real
 * time, and a seed it reports as failing fails again when replayed */
static int run_testing(char *const argv[], char *out, size_t len)
{
    int fds[2];
    pid_t pid;
    int status = 0;
    extern char **environ;
    posix_spawn_file_actions_t fa;

    cr_assert_eq(pipe(fds), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0, "cannot run %s",
                 argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    size_t n = 0;
    for (ssize_t r; n < len - 1 && (r = read(fds[0], out + n, len - 1 - n)) > 0;)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "testing died of signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

Test(samples, testing_runs_ten_virtual_minutes_in_milliseconds_and_replays_its_seed,
     .timeout = 60)
{
    char path[256], out[4096], seed[32];
    struct timespec a, b;
    snprintf(path, sizeof path, "%s/samples/testing", CORO_BUILD_DIR);
    char *argv[] = { path, "--self-test", NULL };

    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(run_testing(argv, out, sizeof out), 0, "%s", out);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double real = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    cr_assert(strstr(out, "6019 requests in 10 virtual minutes"), "%s", out);
    /* generous: a few hundred ms here, alone; a loaded machine or a
     * sanitizer build takes longer, but never the ten minutes */
    cr_assert_lt(real, 30.0, "ten virtual minutes took %.1f s", real);
    const char *p = strstr(out, "replay: testing --seed ");
    cr_assert(p, "%s", out);
    snprintf(seed, sizeof seed, "%llu", strtoull(p + strlen("replay: testing --seed "), NULL, 10));
    char *replay[] = { path, "--seed", seed, NULL };
    for (int i = 0; i < 3; i++)
        cr_assert_eq(run_testing(replay, out, sizeof out), 1, "seed %s: %s", seed, out);
}
