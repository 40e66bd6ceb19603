/* SPDX-License-Identifier: MIT */
/* Misuse the compiler cannot refuse: a plain `return` in a body.  The
 * body's int return type is public (coro_fn), so `return 7;` compiles; the
 * worker refuses a status word no macro produces and aborts with a message
 * naming the body (tests/compile_fail/ holds what the compiler refuses).
 * Before: `return 7;` dereferenced a NULL awaitable in lib/sched/worker.c
 * (SIGSEGV); `return 1;` silently yielded, `return 0;` finished. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct bad { coro_t co; int ret; int awaited; };

/* exported, so that dladdr can name it in the message */
int misuse_stray_return_body(coro_t *co);
int misuse_stray_return_body(coro_t *co)
{
    struct bad *b = CORO_SELF(co, struct bad);
    CORO_BEGIN(co);
    if (b->awaited) {
        CORO_AWAIT(co, coro_ready(1));
        CORO_YIELD(co);
    }
    return b->ret;          /* the misuse */
    CORO_END(co);
}

/* the child's run: the body on `workers` workers */
struct misuse_run {
    int workers, ret, awaited;
};

static void misuse_child(void *arg)
{
    struct misuse_run *m = arg;
    coro_sched_t *s = NULL;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = m->workers;
    if (coro_sched_create(&s, &c) != 0)
        _exit(3);
    static struct bad b;
    b.ret = m->ret;
    b.awaited = m->awaited;
    if (coro_spawn(s, &b.co, misuse_stray_return_body, NULL) != 0)
        _exit(4);
    join_r(&b.co);
    _exit(0);           /* not reached: the worker aborts */
}

/* Run the body in a child process on `workers` workers; return its wait
 * status, with its stderr in msg. */
static int run_child(int workers, int ret, int awaited, char *msg, size_t cap)
{
    struct misuse_run m = { workers, ret, awaited };
    return in_child(misuse_child, &m, 2, msg, cap);
}

static void expect_abort(int workers, int ret, int awaited)
{
    char msg[1024], want[64];
    int st = run_child(workers, ret, awaited, msg, sizeof msg);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
              "workers %d, return %d (awaited %d): status %#x, stderr: %s", workers, ret,
              awaited, st, msg);
    snprintf(want, sizeof want, "returned %d", ret);
    cr_assert(strstr(msg, want), "message lacks '%s': %s", want, msg);
    cr_assert(strstr(msg, "never a plain return"), "%s", msg);
    cr_assert(strstr(msg, "addr2line"), "%s", msg);
}

Test(coro_misuse, stray_return_of_7_aborts_naming_the_body, .timeout = 30)
{
    for (int w = 0; w <= 1; w++) {
        expect_abort(w, 7, 0);
        expect_abort(w, 7, 1);
    }
}

Test(coro_misuse, stray_return_of_small_status_values_aborts, .timeout = 30)
{
    for (int ret = -1; ret <= 2; ret++)
        expect_abort(0, ret, ret & 1);
}

Test(coro_misuse, the_message_names_the_body_or_its_offset, .timeout = 30)
{
    char msg[1024];
    run_child(0, 7, 0, msg, sizeof msg);
    /* dladdr sees the test binary's symbols only when they are exported
     * (-rdynamic); otherwise the message gives the object and offset */
    cr_assert(strstr(msg, "misuse_stray_return_body") || strstr(msg, "+0x"),
              "%s", msg);
}

Test(coro_misuse, the_message_names_a_static_body_of_an_unstripped_program, .timeout = 30)
{
    char msg[1024];
    run_child(0, 7, 0, msg, sizeof msg);
    /* the test binary keeps its .symtab: the same lookup as
     * coro_sched_dump's names the static body, not "?" */
    cr_assert(strstr(msg, "coroutine body misuse_stray_return_body "), "%s", msg);
}
