/* SPDX-License-Identifier: MIT */
/* samples/proxy, run as a program (`proxy PORT UPSTREAM 2`) in front of a
 * tiny backend of this test's own (plain threads, blocking sockets): it
 * forwards kept-alive and pipelined requests over pooled upstream
 * connections, answers 502 with the reason when the backend is down,
 * answers a client that half-closes after its request, and recovers when
 * the backend closes the connections it pooled. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

static const char ANSWER[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
static const char REQ[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/* ---- the backend ------------------------------------------------------------------ */
static int back_lfd = -1;
static int back_accepts;            /* connections it accepted */
static bool back_close_each;        /* close after each answer, without saying so */

static void *back_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    size_t have = 0;

    for (;;) {
        char *e;
        while (!(e = memmem(buf, have, "\r\n\r\n", 4))) {
            ssize_t n = have < sizeof buf ? read(fd, buf + have, sizeof buf - have) : 0;
            if (n <= 0)
                goto out;
            have += (size_t)n;
        }
        if (write(fd, ANSWER, sizeof ANSWER - 1) != (ssize_t)(sizeof ANSWER - 1) ||
            __atomic_load_n(&back_close_each, __ATOMIC_RELAXED))
            goto out;
        size_t used = (size_t)(e + 4 - buf);
        have -= used;
        memmove(buf, buf + used, have);
    }
out:
    close(fd);
    return NULL;
}

static void *back_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(back_lfd, NULL, NULL);
        if (fd < 0)
            return NULL;        /* shut down by back_stop */
        __atomic_add_fetch(&back_accepts, 1, __ATOMIC_RELAXED);
        pthread_t t;
        if (pthread_create(&t, NULL, back_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

static int listener(int *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, 128), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static pthread_t back_thread;

static int back_start(void)
{
    int port;
    back_lfd = listener(&port);
    cr_assert_eq(pthread_create(&back_thread, NULL, back_main, NULL), 0);
    return port;
}

/* a port nobody listens on (bound, then closed) */
static int dead_port(void)
{
    int port, fd = listener(&port);
    close(fd);
    return port;
}

/* ---- the proxy --------------------------------------------------------------------- */
static pid_t proxy_pid;

static void proxy_stop(void)
{
    if (proxy_pid > 0) {
        kill(proxy_pid, SIGKILL);
        waitpid(proxy_pid, NULL, 0);
        proxy_pid = 0;
    }
    if (back_lfd >= 0) {
        shutdown(back_lfd, SHUT_RDWR);      /* ends back_main's accept */
        pthread_join(back_thread, NULL);
        close(back_lfd);
        back_lfd = -1;
    }
}

static int dial(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { .tv_sec = 10 };   /* a proxy that stopped answering: fail, not hang */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    close(fd);
    return -1;
}

/* read exactly n bytes (or less at end of file / timeout) */
static size_t read_n(int fd, char *buf, size_t n)
{
    size_t got = 0;
    for (ssize_t r; got < n && (r = read(fd, buf + got, n - got)) > 0;)
        got += (size_t)r;
    return got;
}

/* start `proxy PORT 127.0.0.1:UP 2`; returns PORT once it accepts */
static int proxy_start(int up)
{
    char path[256], port_s[16], up_s[32];
    char *argv[] = { path, port_s, up_s, "2", NULL };
    extern char **environ;
    int port = dead_port(), status;

    snprintf(path, sizeof path, "%s/samples/proxy", CORO_BUILD_DIR);
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(up_s, sizeof up_s, "127.0.0.1:%d", up);
    cr_assert_eq(posix_spawn(&proxy_pid, path, NULL, NULL, argv, environ), 0, "cannot run %s",
                 path);
    /* bounded (20 s): until it listens */
    for (int i = 0;; i++) {
        int fd = dial(port);
        if (fd >= 0) {
            close(fd);
            return port;
        }
        cr_assert_lt(i, 2000, "the proxy never listened");
        cr_assert_eq(waitpid(proxy_pid, &status, WNOHANG), 0, "the proxy exited");
        usleep(10000);      /* a retry while it starts, not an ordering */
    }
}

/* SIGTERM: it must exit 0 */
static void proxy_term(void)
{
    int status = 0;
    kill(proxy_pid, SIGTERM);
    cr_assert_eq(waitpid(proxy_pid, &status, 0), proxy_pid);
    proxy_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "proxy status %#x", status);
}

Test(samples_proxy, forwards_kept_alive_and_pipelined_requests_over_pooled_connections, .timeout = 60,
     .fini = proxy_stop)
{
    int port = proxy_start(back_start());
    int fd = dial(port);
    char buf[1024];

    cr_assert_geq(fd, 0);
    int before = __atomic_load_n(&back_accepts, __ATOMIC_RELAXED);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(write(fd, REQ, sizeof REQ - 1), (ssize_t)(sizeof REQ - 1));
        cr_assert_eq(read_n(fd, buf, sizeof ANSWER - 1), sizeof ANSWER - 1, "answer %d", i);
        cr_assert_eq(memcmp(buf, ANSWER, sizeof ANSWER - 1), 0, "answer %d", i);
    }
    /* 4 requests in one write: 4 answers, in order */
    char four[4 * sizeof REQ];
    for (int i = 0; i < 4; i++)
        memcpy(four + i * (sizeof REQ - 1), REQ, sizeof REQ - 1);
    cr_assert_eq(write(fd, four, 4 * (sizeof REQ - 1)), (ssize_t)(4 * (sizeof REQ - 1)));
    cr_assert_eq(read_n(fd, buf, 4 * (sizeof ANSWER - 1)), 4 * (sizeof ANSWER - 1));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(memcmp(buf + i * (sizeof ANSWER - 1), ANSWER, sizeof ANSWER - 1), 0);
    /* nine requests one after another: one upstream connection at most
     * (the pool may hold one from the start-up dial, which sent nothing) */
    cr_assert_leq(__atomic_load_n(&back_accepts, __ATOMIC_RELAXED) - before, 1,
                  "the proxy opened %d upstream connections for 9 requests",
                  __atomic_load_n(&back_accepts, __ATOMIC_RELAXED) - before);
    close(fd);
    proxy_term();
}

Test(samples_proxy, answers_502_with_the_reason_and_keeps_the_client_when_the_backend_is_down,
     .timeout = 60, .fini = proxy_stop)
{
    int port = proxy_start(dead_port());
    int fd = dial(port);
    char buf[1024];
    static const char head[] = "HTTP/1.1 502 Bad Gateway\r\n";

    cr_assert_geq(fd, 0);
    for (int i = 0; i < 2; i++) {   /* the connection stays usable after a 502 */
        cr_assert_eq(write(fd, REQ, sizeof REQ - 1), (ssize_t)(sizeof REQ - 1));
        size_t n = 0;
        for (ssize_t r; !memmem(buf, n, "refused\n", 8) &&
                        (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0;)
            n += (size_t)r;
        buf[n] = 0;
        cr_assert_eq(strncmp(buf, head, sizeof head - 1), 0, "answer %d: %s", i, buf);
        cr_assert(strcasestr(buf, "connection refused"), "answer %d does not say why: %s", i, buf);
    }
    close(fd);
    proxy_term();
}

Test(samples_proxy, answers_a_client_that_half_closes_after_its_request, .timeout = 60,
     .fini = proxy_stop)
{
    int port = proxy_start(back_start());
    char buf[1024];

    for (int i = 0; i < 20; i++) {
        int fd = dial(port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, REQ, sizeof REQ - 1), (ssize_t)(sizeof REQ - 1));
        cr_assert_eq(shutdown(fd, SHUT_WR), 0);
        /* the answer, then the proxy's close (read_n stops at end of file) */
        size_t n = read_n(fd, buf, sizeof buf);
        cr_assert_eq(n, sizeof ANSWER - 1, "client %d: %zu bytes", i, n);
        cr_assert_eq(memcmp(buf, ANSWER, sizeof ANSWER - 1), 0);
        close(fd);
    }
    proxy_term();
}

Test(samples_proxy, sends_again_on_a_new_connection_when_the_backend_closed_a_pooled_one, .timeout = 60,
     .fini = proxy_stop)
{
    __atomic_store_n(&back_close_each, true, __ATOMIC_RELAXED);
    int port = proxy_start(back_start());
    int fd = dial(port);
    char buf[1024];

    cr_assert_geq(fd, 0);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(write(fd, REQ, sizeof REQ - 1), (ssize_t)(sizeof REQ - 1));
        cr_assert_eq(read_n(fd, buf, sizeof ANSWER - 1), sizeof ANSWER - 1, "answer %d", i);
        cr_assert_eq(memcmp(buf, ANSWER, sizeof ANSWER - 1), 0, "answer %d: %.40s", i, buf);
    }
    close(fd);
    proxy_term();
}
