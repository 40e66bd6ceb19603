/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* samples/echo_server.c holds 10,000 concurrent connections, single-threaded,
 * on 1 worker and on 4. */
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

#define ECHO_NO_MAIN
#include "../../samples/echo_server.c"
#include "fixture_io.h"

/* ---- 10,000 concurrent connections through the echo server ---------------------------- */

#define NCONN 10000
static long conn_echoed;            /* clients past their first round trip */
static long conn_failed;            /* clients that gave up (they hold nobody) */
/* Clients in their first round trip (connect, write, read back) at once:
 * the 10,000 connections are held together, but opened at most
 * HANDSHAKES at a time.  All at once overflowed the listener's accept
 * queue (somaxconn, 4,096 here: about 300 listen overflows a run), and
 * beside other loopback load about 2 runs in 100 had one client whose
 * connect succeeded and whose first read got ECONNRESET, while the
 * server (instrumented) never saw that connection end early.  Probably
 * the kernel's: a request whose ACK met a full queue is kept and may age
 * out, and the client's next segment then meets the listener, which
 * resets it.  With at most 1,000 handshakes there is no overflow, and
 * 360 runs beside the same load had no reset. */
#define HANDSHAKES 1000
static coro_sem_t handshakes;

/* where a client failed, for the child's report */
enum { ST_SLOT = 1, ST_SOCKET, ST_CONNECT, ST_WRITE, ST_READ, ST_EOF, ST_DATA };
static const char *const stage_name[] = { "", "handshake slot", "socket", "connect",
                                          "write", "read", "eof", "data" };

struct eclient {
    coro_t co;
    int fd, port, id;
    int64_t nap;
    size_t len, got;
    int round, stage, handshaking;
    struct sockaddr_in sa;
    char out[256], in[256];
};

/* a client that gives up says so at once: the others hold their
 * connections until every client echoed or gave up, never longer */
static intptr_t eclient_fail(struct eclient *c, int stage, intptr_t err)
{
    c->stage = stage;
    if (c->handshaking)
        coro_sem_release(&handshakes, 1);
    __atomic_add_fetch(&conn_failed, 1, __ATOMIC_RELAXED);
    return err;
}

static int eclient_body(coro_t *co)
{
    struct eclient *c = CORO_SELF(co, struct eclient);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sem_acquire(&handshakes, 60000 * MS));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, eclient_fail(c, ST_SLOT, CORO_RESULT(co)));
    c->handshaking = 1;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        CORO_RETURN(co, eclient_fail(c, ST_SOCKET, -errno));
    c->sa.sin_family = AF_INET;
    c->sa.sin_port = htons((uint16_t)c->port);
    c->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, 60000 * MS));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, eclient_fail(c, ST_CONNECT, CORO_RESULT(co)));
    for (c->round = 0; c->round < 2; c->round++) {
        c->len = 1 + (size_t)(c->id + c->round * 101) % sizeof c->out;
        for (size_t i = 0; i < c->len; i++)
            c->out[i] = (char)(c->id * 7 + i + c->round);
        CORO_AWAIT(co, coro_write_all(c->fd, c->out, c->len, 60000 * MS));
        if (CORO_RESULT(co) < 0)
            CORO_RETURN(co, c->round ? CORO_RESULT(co) : eclient_fail(c, ST_WRITE, CORO_RESULT(co)));
        for (c->got = 0; c->got < c->len;) {
            CORO_AWAIT(co, coro_read(c->fd, c->in + c->got, c->len - c->got, 60000 * MS));
            if (CORO_RESULT(co) < 0)
                CORO_RETURN(co, c->round ? CORO_RESULT(co) : eclient_fail(c, ST_READ, CORO_RESULT(co)));
            if (CORO_RESULT(co) == 0)
                CORO_RETURN(co, c->round ? -EPIPE : eclient_fail(c, ST_EOF, -EPIPE));
            c->got += (size_t)CORO_RESULT(co);
        }
        if (memcmp(c->in, c->out, c->len) != 0)
            CORO_RETURN(co, c->round ? -EIO : eclient_fail(c, ST_DATA, -EIO));
        if (c->round == 0) {
            c->handshaking = 0;
            coro_sem_release(&handshakes, 1);
            /* hold the connection until all NCONN are open and echoing */
            __atomic_add_fetch(&conn_echoed, 1, __ATOMIC_RELAXED);
            for (c->nap = MS; __atomic_load_n(&conn_echoed, __ATOMIC_RELAXED) +
                                      __atomic_load_n(&conn_failed, __ATOMIC_RELAXED) <
                              NCONN;
                 c->nap = c->nap < 200 * MS ? c->nap * 2 : c->nap)
                CORO_AWAIT(co, coro_sleep(c->nap));
        }
    }
    close(c->fd);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

/* the client side, in a child process (its own fd table) */
static int echo_clients(int port)
{
    coro_sched_t *s;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    struct eclient *c = calloc(NCONN, sizeof *c);
    int bad = 0;

    cfg.workers = 2;
    if (!c || coro_sem_init(&handshakes, HANDSHAKES) != 0 || coro_sched_create(&s, &cfg) < 0)
        return 100;
    for (int i = 0; i < NCONN; i++) {
        c[i].port = port;
        c[i].id = i;
        if (coro_spawn(s, &c[i].co, eclient_body, NULL) < 0)
            bad++;
    }
    for (int i = 0; i < NCONN; i++) {
        intptr_t r = join_r(&c[i].co);
        if (r != 0 && bad++ < 10)
            fprintf(stderr, "echo client %d: %s (round %d, %zu of %zu bytes): %ld\n", i,
                    stage_name[c[i].stage], c[i].round, c[i].got, c[i].len, (long)r);
    }
    if (bad)
        fprintf(stderr, "echo clients: %d failed, %ld echoed\n", bad,
                __atomic_load_n(&conn_echoed, __ATOMIC_RELAXED));
    coro_sched_destroy(s);
    coro_sem_destroy(&handshakes);
    free(c);
    return bad > 99 ? 99 : bad;
}

struct reaper {
    coro_t co;
    pid_t pid;
    intptr_t status;
};

static int reaper_body(coro_t *co)
{
    struct reaper *r = CORO_SELF(co, struct reaper);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_child(r->pid, 240000 * MS));
    r->status = CORO_RESULT(co);
    CORO_END(co);
}

static void echo_10000(int workers)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < NCONN + 200) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < NCONN + 200)
        cr_skip_test("RLIMIT_NOFILE hard limit %lu < %d: cannot hold 10,000 connections",
                     (unsigned long)rl.rlim_max, NCONN + 200);
    int port = 0, lfd = echo_listen(htonl(INADDR_LOOPBACK), 0, &port);
    cr_assert_geq(lfd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(lfd);
        _exit(echo_clients(port));
    }
    coro_sched_t *s = mk(workers);
    static struct echo_server sv;
    static struct reaper r;
    memset(&sv, 0, sizeof sv);
    memset(&r, 0, sizeof r);
    sv.s = s;
    sv.lfd = lfd;
    r.pid = pid;
    cr_assert_eq(coro_spawn(s, &sv.co, echo_server_body, NULL), 0);
    cr_assert_eq(block_on_r(s, &r.co, reaper_body, NULL), 0);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "workers %d: client status %#lx (failed clients %d)", workers, (long)r.status,
              (int)WEXITSTATUS(r.status));
    cr_assert_eq(coro_sched_shutdown(s, CORO_CANCEL), 0);
    cr_assert_eq(join_r(&sv.co), NCONN, "accepted %ld", (long)sv.co.result);
    cr_assert_eq(sv.loopback, NCONN, "coro_accept_addr gave every client's address");
    coro_sched_destroy(s);
    close(lfd);
}

Test(io_echo, echo_server_holds_10000_concurrent_connections_single_threaded, .timeout = 240)
{
    echo_10000(0);
}

Test(io_echo, echo_server_holds_10000_concurrent_connections_on_1_worker, .timeout = 240)
{
    echo_10000(1);
}

Test(io_echo, echo_server_holds_10000_concurrent_connections_on_4_workers, .timeout = 240)
{
    echo_10000(4);
}
