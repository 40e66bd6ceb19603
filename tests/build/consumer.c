/* SPDX-License-Identifier: MIT */
/* tests/build/consumer.c - a program built against the *installed* corokit
 * through pkg-config (tools/ci/check-build.sh), statically and dynamically, to
 * show that the headers, corokit.pc and the libraries fit together. */
#include <corokit.h>
#include <stdio.h>

struct sum {
    coro_t co;
    coro_chan_t *ch;
    void *item;
    intptr_t total;
};

static int summer(coro_t *co)
{
    struct sum *s = CORO_SELF(co, struct sum);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_chan_recv(s->ch, &s->item, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            break;                      /* -EPIPE: closed and empty */
        s->total += (intptr_t)s->item;
        CORO_AWAIT(co, coro_sleep(1000));
    }
    CORO_RETURN(co, s->total);
    CORO_END(co);
}

int main(void)
{
    coro_sched_t *s;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    cfg.workers = 2;
    int rc = coro_sched_create(&s, &cfg);
    if (rc < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    void *slots[4];
    coro_chan_t ch;
    coro_chan_init(&ch, slots, 4);
    struct sum job = { .ch = &ch };
    coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH };
    rc = coro_spawn(s, &job.co, summer, &o);
    for (intptr_t i = 1; rc == 0 && i <= 10; i++)
        rc = coro_chan_send_blocking(&ch, (void *)i, CORO_FOREVER);
    coro_chan_close(&ch);
    intptr_t total = -1;
    if (rc == 0)
        rc = coro_join(&job.co, &total);
    coro_chan_destroy(&ch);
    coro_sched_destroy(s);
    printf("corokit %u.%u.%u (C): sum 1..10 = %ld\n", coro_version() >> 16,
           (coro_version() >> 8) & 0xff, coro_version() & 0xff, (long)total);
    return rc == 0 && total == 55 && coro_version() == CORO_VERSION_HEX ? 0 : 1;
}
