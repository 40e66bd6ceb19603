/* SPDX-License-Identifier: MIT */
/* What an awaitable's constructor does before CORO_AWAIT consumes it, as
 * coro.h (coro_await_t), sync.h and the guide say: the sync constructors
 * and coro_read try the operation at once (a dropped one has taken what it
 * took), coro_mutex_lock, coro_blocking and coro_call do nothing until the
 * await; and what a zero-length coro_read / coro_write gives, as
 * coro_read(3) and docs/io.md say. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

static int ran;

static intptr_t mark(void *arg)
{
    (void)arg;
    __atomic_store_n(&ran, 1, __ATOMIC_RELAXED);
    return 0;
}

static int child_body(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_store_n(&ran, 1, __ATOMIC_RELAXED);
    CORO_END(co);
}

struct drop {
    coro_t co, child;
    coro_chan_t ch;
    void *buf[4], *item;
    coro_sem_t sem;
    coro_mutex_t m;
    int p[2];
    char b[8];
    intptr_t len_after_recv, sem_after, mutex_free, read_r;
};

static int drop_body(coro_t *co)
{
    struct drop *d = CORO_SELF(co, struct drop);
    coro_await_t a;
    CORO_BEGIN(co);
    /* built and dropped: these complete in the constructor */
    a = coro_chan_recv(&d->ch, &d->item, CORO_FOREVER);
    (void)a;
    d->len_after_recv = coro_chan_len(&d->ch);
    a = coro_sem_acquire(&d->sem, CORO_FOREVER);
    (void)a;
    d->sem_after = coro_sem_value(&d->sem);
    a = coro_read(d->p[0], d->b, sizeof d->b, CORO_FOREVER);
    (void)a;
    /* these do nothing before the await */
    a = coro_mutex_lock(&d->m, CORO_FOREVER);
    (void)a;
    d->mutex_free = coro_mutex_try_lock(&d->m) == 0;
    if (d->mutex_free)
        coro_mutex_unlock(&d->m);
    a = coro_blocking(mark, NULL);
    (void)a;
    a = coro_call(&d->child, child_body);
    (void)a;
    /* the bytes the dropped read took are gone */
    CORO_AWAIT(co, coro_read(d->p[0], d->b, sizeof d->b, 0));
    d->read_r = CORO_RESULT(co);
    CORO_END(co);
}

Test(sync_await_ctor, sync_and_io_constructors_try_at_once_and_the_rest_wait_for_the_await,
     .timeout = 30)
{
    static const int workers[] = { 0, 1 };
    for (size_t wi = 0; wi < 2; wi++) {
        coro_sched_t *s = mk(workers[wi]);
        struct drop *d = calloc(1, sizeof *d);
        cr_assert_eq(coro_chan_init(&d->ch, d->buf, 4), 0);
        cr_assert_eq(coro_chan_try_send(&d->ch, d), 0);
        cr_assert_eq(coro_sem_init(&d->sem, 1), 0);
        cr_assert_eq(coro_mutex_init(&d->m), 0);
        cr_assert_eq(pipe2(d->p, O_NONBLOCK), 0);
        cr_assert_eq(write(d->p[1], "abc", 3), 3);
        ran = 0;
        cr_assert_eq(block_on_r(s, &d->co, drop_body, NULL), 0);
        cr_assert_eq(d->len_after_recv, 0, "the dropped receive took the item");
        cr_assert_eq(d->item, d);
        cr_assert_eq(d->sem_after, 0, "the dropped acquire took the unit");
        cr_assert(d->mutex_free, "a dropped coro_mutex_lock locks nothing");
        cr_assert_eq(ran, 0, "a dropped coro_blocking or coro_call runs nothing");
        cr_assert_eq(d->read_r, -ETIMEDOUT, "the dropped read consumed the bytes");
        cr_assert_eq(coro_sched_destroy(s), 0);
        close(d->p[0]);
        close(d->p[1]);
        free(d);
    }
}

/* ---- zero-length reads and writes ---------------------------------------------------- */

struct zjob { coro_t co; int fd, write, all; char b[4]; intptr_t r; };

static int zero_body(coro_t *co)
{
    struct zjob *j = CORO_SELF(co, struct zjob);
    CORO_BEGIN(co);
    if (j->all)
        CORO_AWAIT(co, coro_write_all(j->fd, "", 0, 50000000));
    else if (j->write)
        CORO_AWAIT(co, coro_write(j->fd, "", 0, 50000000));
    else
        CORO_AWAIT(co, coro_read(j->fd, j->b, 0, 50000000));
    j->r = CORO_RESULT(co);
    CORO_END(co);
}

static intptr_t zero(coro_sched_t *s, int fd, int write, int all)
{
    struct zjob j = { .fd = fd, .write = write, .all = all, .r = 99 };
    cr_assert_eq(block_on_r(s, &j.co, zero_body, NULL), 0);
    return j.r;
}

Test(sync_await_ctor, zero_length_reads_and_writes_give_what_the_system_call_gives, .timeout = 30)
{
    coro_sched_t *s = mk(1);
    int p[2], sp[2];
    char c;

    signal(SIGPIPE, SIG_IGN);
    cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
    cr_assert_eq(zero(s, p[0], 0, 0), 0, "a pipe: 0 at once, no data");
    cr_assert_eq(write(p[1], "x", 1), 1);
    cr_assert_eq(zero(s, p[0], 0, 0), 0, "a pipe: 0 at once, with data");
    cr_assert_eq(read(p[0], &c, 1), 1, "and the byte is still there");
    cr_assert_eq(zero(s, p[1], 1, 0), 0);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
    cr_assert_eq(zero(s, sp[0], 0, 0), -ETIMEDOUT, "a stream socket waits for data");
    cr_assert_eq(write(sp[1], "x", 1), 1);
    cr_assert_eq(zero(s, sp[0], 0, 0), 0);
    cr_assert_eq(read(sp[0], &c, 1), 1, "nothing consumed");
    close(sp[0]);
    cr_assert_eq(zero(s, sp[1], 1, 0), -EPIPE, "a socket whose peer is gone");
    cr_assert_eq(zero(s, sp[1], 1, 1), 0, "write_all of 0 bytes makes no call");
    cr_assert_eq(zero(s, 999, 0, 0), -EBADF);
    cr_assert_eq(zero(s, 999, 1, 0), -EBADF);
    coro_sched_destroy(s);
    close(p[0]);
    close(p[1]);
    close(sp[1]);
}
