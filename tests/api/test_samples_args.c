/* SPDX-License-Identifier: MIT */
/* The samples' command lines as the docs show them: a server started with
 * a port alone runs with the default workers (CORO_WORKERS_AUTO), says the
 * port it bound, answers on it and exits 0 on SIGTERM; a malformed number
 * (a port, a worker count, a count or a time) gets the usage and exit
 * status 2 instead of a run with a value nobody asked for. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

static pid_t child_pid;     /* killed by kill_child if a test fails while it runs */

static void kill_child(void)
{
    if (child_pid > 0) {
        kill(child_pid, SIGKILL);
        waitpid(child_pid, NULL, 0);
        child_pid = 0;
    }
}

/* build/samples/NAME with args (NULL-terminated); its stdout and stderr
 * come back through *out and *err (read ends) */
static pid_t start(const char *name, const char *const *args, int *out, int *err)
{
    char path[256];
    char *argv[16];
    int o[2], e[2], n = 0;
    pid_t pid;

    snprintf(path, sizeof path, "%s/samples/%s", CORO_BUILD_DIR, name);
    argv[n++] = path;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    cr_assert_eq(pipe2(o, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(e, O_CLOEXEC), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        execv(path, argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    *out = o[0];
    *err = e[0];
    return pid;
}

/* up to len - 1 bytes of fd until the first newline or its end, waiting at
 * most 30 s in all (a bound for a loaded machine, not an ordering) */
static void read_line(int fd, char *buf, size_t len)
{
    size_t got = 0;
    struct pollfd p = { .fd = fd, .events = POLLIN };

    while (got + 1 < len && poll(&p, 1, 30000) == 1) {
        ssize_t n = read(fd, buf + got, 1);
        if (n <= 0 || buf[got] == '\n')
            break;
        got += (size_t)n;
    }
    buf[got] = 0;
}

/* connect to 127.0.0.1:port, send req, and read until want bytes came */
static void ask(int port, const char *req, const char *expect, size_t want)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { .tv_sec = 30 };
    char buf[256] = "";
    size_t got = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "port %d: no listener", port);
    cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    while (got < want && got < sizeof buf - 1) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    cr_assert_geq(got, want, "port %d: %zu bytes of answer, %zu expected", port, got, want);
    cr_assert_eq(memcmp(buf, expect, strlen(expect)), 0, "port %d answered '%s'", port, buf);
}

/* NAME 0 (a port alone, as docs/recipes.md runs httpd): the default
 * workers start, the line names the port, it answers there, SIGTERM
 * ends it with status 0 */
static void port_alone(const char *name, const char *req, const char *expect, size_t want)
{
    const char *args[] = { "0", NULL };
    char line[256], prefix[64];
    int out, err, port = -1, workers = -1, status = 0;

    child_pid = start(name, args, &out, &err);
    read_line(out, line, sizeof line);
    snprintf(prefix, sizeof prefix, "%s: listening on port %%d, %%d worker(s)", name);
    if (sscanf(line, prefix, &port, &workers) != 2) {
        char e[512] = "";
        read_line(err, e, sizeof e);
        cr_assert_fail("%s 0: first line '%s', stderr '%s'", name, line, e);
    }
    cr_assert_gt(port, 0);
    cr_assert_gt(workers, 0, "%s 0: the default is a worker per CPU, not %d", name, workers);
    ask(port, req, expect, want);
    ask(port, req, expect, want);
    kill(child_pid, SIGTERM);
    cr_assert_eq(waitpid(child_pid, &status, 0), child_pid);
    child_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s 0: status %#x after SIGTERM",
              name, status);
    close(out);
    close(err);
}

Test(samples_args, httpd_and_echo_server_given_a_port_alone_start_answer_and_exit_0,
     .timeout = 120, .fini = kill_child)
{
    port_alone("httpd", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK\r\n", 69);
    port_alone("echo_server", "ping\n", "ping\n", 5);
}

struct refused {
    const char *name;
    const char *args[6];
};

Test(samples_args, a_malformed_number_on_a_samples_command_line_gets_its_usage_and_status_2,
     .timeout = 120, .fini = kill_child)
{
    static const struct refused cases[] = {
        { "httpd", { "abc" } },            { "httpd", { "80x" } },
        { "httpd", { "70000" } },          { "httpd", { "0", "-1" } },
        { "httpd", { "0", "2x" } },        { "httpd", { "0", "1025" } },
        { "httpd", { "" } },               { "echo_server", { "-5" } },
        { "echo_server", { "0", "-1" } },  { "echo_server", { "0", "x" } },
        { "forwarder", { "-w", "-1", "0", "127.0.0.1:1" } },
        { "forwarder", { "-i", "0", "0", "127.0.0.1:1" } },
        { "forwarder", { "-d", "5s", "0", "127.0.0.1:1" } },
        { "forwarder", { "x", "127.0.0.1:1" } },
        { "walker", { "-j", "0", "/" } },  { "walker", { "-w", "two", "/" } },
        { "latency", { "-n", "0" } },      { "latency", { "-H", "x" } },
        { "latency", { "-p", "1ms" } },    { "timers", { "0" } },
        { "timers", { "12x" } },           { "testing", { "--seed", "x" } },
        { "testing", { "--seed", "-1" } }, { "testing", { "--bogus" } },
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct refused *c = &cases[i];
        char e[512], args[128] = "";
        int out, err, status = 0;

        for (int k = 0; c->args[k]; k++)
            snprintf(args + strlen(args), sizeof args - strlen(args), " '%s'", c->args[k]);
        child_pid = start(c->name, c->args, &out, &err);
        read_line(err, e, sizeof e);
        cr_assert_eq(waitpid(child_pid, &status, 0), child_pid);
        child_pid = 0;
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s%s: status %#x, stderr '%s'",
                  c->name, args, status, e);
        cr_assert(strncmp(e, "usage: ", 7) == 0, "%s%s: stderr '%s'", c->name, args, e);
        close(out);
        close(err);
    }
}
