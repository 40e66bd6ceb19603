/* SPDX-License-Identifier: MIT */
/* The fixture of the tests of vectors, datagrams, buffered reads, files at
 * an offset and names (tests/api/test_io_vec.c, _dgram.c, _bufread.c,
 * _pfile.c, _net.c): one job that awaits one of those calls (struct xop),
 * run to its end, or spawned, left waiting and cancelled.  Include after
 * tests/fixture_io.h. */
#ifndef COROKIT_TESTS_FIXTURE_IOEXT_H
#define COROKIT_TESTS_FIXTURE_IOEXT_H

#include "fixture_io.h"
#include <pthread.h>
#include <sys/uio.h>

/* w takes 0 (the calling thread drives) and 2 workers */
#define FOR_W02(w) \
    for (int wi02__ = 0; wi02__ < 2 && ((w) = (const int[]){ 0, 2 }[wi02__], 1); wi02__++)

enum xkind { X_READV, X_WRITEV, X_WRITEV_ALL, X_SENDFILE, X_SPLICE, X_RECVFROM, X_SENDTO,
             X_RECVMSG, X_SENDMSG, X_READ_EXACT, X_LINE, X_UNTIL, X_EXACT, X_PREAD, X_PWRITE,
             X_DIAL, X_READ_ALL, X_PREAD_LOOP };

struct xop {
    coro_t co;
    enum xkind kind;
    int fd, fd2;
    void *buf;
    size_t len;
    struct iovec *iov;
    int cnt;
    off_t off;
    off_t *offp;
    coro_sockaddr_t *sa;
    struct msghdr *msg;
    coro_bufreader_t *r;
    const char *line;
    int delim;
    const char *addr;
    int64_t timeout;
    intptr_t res;
    size_t total;       /* X_READ_ALL: bytes read until the end */
    int started;
    bool self_cancel;   /* the job cancels itself before its await */
};

static inline int xop_body(coro_t *co)
{
    struct xop *x = CORO_SELF(co, struct xop);
    CORO_BEGIN(co);
    __atomic_store_n(&x->started, 1, __ATOMIC_SEQ_CST);
    if (x->self_cancel)
        cr_assert_eq(coro_cancel(co), 0);
    switch (x->kind) {
    case X_READV: CORO_AWAIT(co, coro_readv(x->fd, x->iov, x->cnt, x->timeout)); break;
    case X_WRITEV: CORO_AWAIT(co, coro_writev(x->fd, x->iov, x->cnt, x->timeout)); break;
    case X_WRITEV_ALL: CORO_AWAIT(co, coro_writev_all(x->fd, x->iov, x->cnt, x->timeout)); break;
    case X_SENDFILE:
        CORO_AWAIT(co, coro_sendfile(x->fd, x->fd2, x->offp, x->len, x->timeout));
        break;
    case X_SPLICE: CORO_AWAIT(co, coro_splice(x->fd, x->fd2, x->len, x->timeout)); break;
    case X_RECVFROM: CORO_AWAIT(co, coro_recvfrom(x->fd, x->buf, x->len, x->sa, x->timeout)); break;
    case X_SENDTO: CORO_AWAIT(co, coro_sendto(x->fd, x->buf, x->len, x->sa, x->timeout)); break;
    case X_RECVMSG: CORO_AWAIT(co, coro_recvmsg(x->fd, x->msg, 0, x->timeout)); break;
    case X_SENDMSG: CORO_AWAIT(co, coro_sendmsg(x->fd, x->msg, 0, x->timeout)); break;
    case X_READ_EXACT: CORO_AWAIT(co, coro_read_exact(x->fd, x->buf, x->len, x->timeout)); break;
    case X_LINE: CORO_AWAIT(co, coro_bufreader_line(x->r, &x->line, x->timeout)); break;
    case X_UNTIL: CORO_AWAIT(co, coro_bufreader_until(x->r, x->delim, &x->line, x->timeout)); break;
    case X_EXACT: CORO_AWAIT(co, coro_bufreader_exact(x->r, x->len, &x->line, x->timeout)); break;
    case X_PREAD: CORO_AWAIT(co, coro_pread(x->fd, x->buf, x->len, x->off)); break;
    case X_PWRITE: CORO_AWAIT(co, coro_pwrite(x->fd, x->buf, x->len, x->off)); break;
    case X_DIAL: CORO_AWAIT(co, coro_dial(x->addr, x->timeout)); break;
    case X_PREAD_LOOP:      /* until an error: total counts the calls that read */
        for (x->total = 0; x->total < 100000; x->total++) {
            CORO_AWAIT(co, coro_pread(x->fd, x->buf, x->len, x->off));
            if (CORO_RESULT(co) < 0)
                break;
        }
        break;
    case X_READ_ALL:
        for (;;) {
            CORO_AWAIT(co, coro_read(x->fd, (char *)x->buf + x->total, x->len - x->total,
                                     x->timeout));
            if (CORO_RESULT(co) <= 0)
                break;
            x->total += (size_t)CORO_RESULT(co);
        }
        break;
    }
    x->res = CORO_RESULT(co);
    CORO_RETURN(co, 0);
    CORO_END(co);
}

/* run x to its end; its result */
static inline intptr_t xrun(coro_sched_t *s, struct xop *x)
{
    x->started = 0;
    cr_assert_eq(block_on_r(s, &x->co, xop_body, NULL), 0);
    return x->res;
}

static inline void xspawn(coro_sched_t *s, struct xop *x)
{
    x->started = 0;
    cr_assert_eq(coro_spawn(s, &x->co, xop_body, NULL), 0);
}

static inline intptr_t xjoin(struct xop *x)
{
    cr_assert_eq(join_r(&x->co), 0);
    return x->res;
}

/* a plain thread that, once x has started, calls fn(arg): what the job
 * waits for comes from outside while the test's thread joins (with 0
 * workers the join drives the scheduler) */
struct xafter {
    pthread_t t;
    struct xop *x;
    void (*fn)(void *arg);
    void *arg;
};

static inline void *xafter_main(void *p)
{
    struct xafter *a = p;
    while (!__atomic_load_n(&a->x->started, __ATOMIC_SEQ_CST))
        sched_yield();
    sleep_ms(5);    /* not needed for the result: makes the park likely */
    a->fn(a->arg);
    return NULL;
}

static inline void xafter_start(struct xafter *a, struct xop *x, void (*fn)(void *), void *arg)
{
    *a = (struct xafter){ .x = x, .fn = fn, .arg = arg };
    cr_assert_eq(pthread_create(&a->t, NULL, xafter_main, a), 0);
}

static inline void xafter_end(struct xafter *a)
{
    pthread_join(a->t, NULL);
}

static inline void xcancel_fn(void *arg)
{
    cr_assert_eq(coro_cancel(arg), 0);
}

/* spawn x, cancel it from a plain thread once it began its await (a
 * cancel that comes before the park is seen by the arm: -ECANCELED either
 * way), join it; its result */
static inline intptr_t xcancel(coro_sched_t *s, int workers, struct xop *x)
{
    struct xafter a;
    (void)workers;
    xspawn(s, x);
    xafter_start(&a, x, xcancel_fn, &x->co);
    intptr_t r = xjoin(x);
    xafter_end(&a);
    return r;
}

#endif
