/* SPDX-License-Identifier: MIT */
/* samples/chat.c with 500 clients on loopback: every client that keeps up
 * gets every line exactly once, and a client that does not read is told
 * how many lines it missed, exactly (lines received + missed = lines sent). */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"

#define CHAT_NO_MAIN
#include "../../samples/chat.c"

static void run_chat(int workers, int bots, int rounds)
{
    static struct chat_room room;
    struct chat_listener l = { .room = &room };
    int port = 0;
    long missed = -1;

    cr_assert_eq(chat_room_init(&room), 0);
    l.s = mk(workers);
    l.lfd = chat_listen("127.0.0.1", 0, &port);
    cr_assert_geq(l.lfd, 0);
    cr_assert_eq(coro_spawn(l.s, &l.co, chat_listener_body, NULL), 0);
    /* bots on a scheduler of their own, so that the server's workers serve
     * only; single-threaded, on the server's (the joins run it) */
    coro_sched_t *cs = workers ? mk(workers) : l.s;
    int rc = chat_bots_run(cs, port, bots, rounds, &missed);
    cr_assert_eq(rc, 0, "%d workers: a bot lost or doubled a line (stderr says which)", workers);
    cr_assert_gt(missed, 0, "the slow bot was never told it missed lines");
    if (cs != l.s)
        fin(cs);
    coro_bcast_close(&room.bc);
    cr_assert_eq(coro_sched_shutdown(l.s, CORO_CANCEL), 0);
    cr_assert_eq(coro_sched_destroy(l.s), 0);
    close(l.lfd);
    /* every session ended: every receiver unsubscribed */
    cr_assert_eq(coro_bcast_destroy(&room.bc), 0);
}

Test(samples_chat, five_hundred_clients_lose_nothing_and_a_slow_one_is_told_what_it_missed,
     .timeout = 240)
{
    run_chat(2, 500, 12);
}

Test(samples_chat, the_sample_works_single_threaded_too, .timeout = 120)
{
    run_chat(0, 20, 150);
}
