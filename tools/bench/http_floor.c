/* SPDX-License-Identifier: MIT */
/* http_floor - the floor for `make bench-http`: the least a server on
 * epoll can do per request, to tell what samples/httpd could reach
 * against nginx on this machine.  No library: N threads, each with its
 * own SO_REUSEPORT listening socket and its own epoll set (nginx's
 * layout), level-triggered, one recv and one send per request (the same
 * two system calls per request that httpd and nginx make, under strace),
 * the same "hello" response; no timeouts, no pipelining beyond what one
 * recv brings, no error handling beyond closing.
 *
 *   http_floor PORT [THREADS]   serve on 127.0.0.1:PORT until killed
 *
 * Not a server to use: a measuring stick (tools/bench/http.sh FLOOR=1). */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char RESPONSE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
#define RESP_LEN (sizeof RESPONSE - 1)

static int port;

static int listener(void)
{
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4096) < 0) {
        perror("http_floor: listen");
        exit(1);
    }
    return fd;
}

static void *serve(void *arg)
{
    (void)arg;
    int lfd = listener(), ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd }, evs[512];
    char buf[8192], out[32 * RESP_LEN];

    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(ep, evs, 512, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    int one = 1;
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event ce = { .events = EPOLLIN, .data.fd = c };
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0) {
                close(fd);      /* leaves the epoll set with its last reference */
                continue;
            }
            /* one answer per request end in what came (wrk sends whole
             * requests, one at a time per connection) */
            size_t k = 0;
            for (char *p = buf, *e = buf + r; k < 32 && (p = memmem(p, (size_t)(e - p), "\r\n\r\n", 4));
                 p += 4)
                memcpy(out + RESP_LEN * k++, RESPONSE, RESP_LEN);
            if (k && send(fd, out, RESP_LEN * k, MSG_NOSIGNAL) < 0)
                close(fd);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: http_floor PORT [THREADS]\n");
        return 2;
    }
    port = atoi(argv[1]);
    int n = argc > 2 ? atoi(argv[2]) : 2;
    pthread_t t;
    for (int i = 1; i < n; i++)
        pthread_create(&t, NULL, serve, NULL);
    serve(NULL);
    return 0;
}
