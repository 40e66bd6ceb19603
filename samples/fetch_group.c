/* SPDX-License-Identifier: MIT */
/* fetch_group - fetch from many servers at once, under one deadline, and
 * give up on the rest at the first failure.
 *
 * The program starts its own little server on 127.0.0.1 (no network): it
 * answers "GET <n>" with "item <n>" after 20 + 30 n ms, except that request
 * 5 gets its connection closed after 100 ms (a failed fetch) and request 6
 * never gets an answer (a server that hangs).  The client side is what the sample is
 * about:
 *   - the fetches are jobs of one coro_group_t, spawned with one .deadline
 *     (2 s from now): none of them can outlive it, whatever the server does;
 *   - each fetch waits in one select on its socket (readable) and on an
 *     event `give_up` - the case that used to need two jobs per connection;
 *   - the first fetch that fails sets give_up and calls coro_group_cancel:
 *     every other member's pending await ends with -ECANCELED at once;
 *   - the reporter job selects on the results channel and on the group's
 *     end (a job that waits with coro_group_wait), printing as results come.
 * Run it: it prints each outcome and exits 0. */
#include <arpa/inet.h>
#include <corokit.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS 1000000LL
#define NFETCH 8
#define FAIL_ID 5
#define HANG_ID 6

/* ---- the little server ------------------------------------------------------------ */

struct handler { coro_t co; int fd, n, len; char buf[64]; };   /* locals live in the frame */

static int handler_fn(coro_t *co)
{
    struct handler *h = CORO_SELF(co, struct handler);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_read(h->fd, h->buf, sizeof h->buf - 1, 5000 * MS));
    if (CORO_RESULT(co) > 0) {
        h->buf[CORO_RESULT(co)] = 0;
        if (sscanf(h->buf, "GET %d", &h->n) != 1)
            h->n = -1;
        if (h->n == HANG_ID) {
            CORO_AWAIT(co, coro_sleep(10000 * MS));     /* never answers in time */
        } else if (h->n == FAIL_ID) {
            CORO_AWAIT(co, coro_sleep(100 * MS));       /* then closes: a failure */
        } else {
            CORO_AWAIT(co, coro_sleep((20 + 30 * h->n) * MS));
            h->len = snprintf(h->buf, sizeof h->buf, "item %d", h->n);
            CORO_AWAIT(co, coro_write_all(h->fd, h->buf, (size_t)h->len, 1000 * MS));
        }
    }
    coro_close(NULL, h->fd);    /* FAIL_ID: closed without an answer */
    CORO_END(co);
}

struct server { coro_t co; int lfd; coro_group_t *handlers; };

static int server_fn(coro_t *co)
{
    struct server *sv = CORO_SELF(co, struct server);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(sv->lfd, CORO_FOREVER));
        if (CORO_RESULT(co) < 0)
            break;                                  /* cancelled at the end */
        struct handler *h = coro_frame_alloc(coro_sched_current(), sizeof *h);
        if (!h) {
            close((int)CORO_RESULT(co));
            continue;
        }
        h->fd = (int)CORO_RESULT(co);
        coro_spawn_opts_t o = { .group = sv->handlers };
        if (coro_spawn(coro_sched_current(), &h->co, handler_fn, &o) < 0) {
            close(h->fd);
            coro_frame_free(h);
        }
    }
    CORO_END(co);
}

/* ---- the client ------------------------------------------------------------------- */

/* [fetch-group] */
struct result { int id; intptr_t rc; char text[32]; };

struct fetch {
    coro_t co;
    int id, fd;
    struct sockaddr_in addr;
    coro_group_t *group;
    coro_event_t *give_up;
    coro_chan_t *results;
    coro_select_t sel;          /* readable(fd) | give_up */
    char req[32];
    int len;
    struct result res;
};

static int fetch_fn(coro_t *co)
{
    struct fetch *f = CORO_SELF(co, struct fetch);
    CORO_BEGIN(co);
    f->res.id = f->id;
    f->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CORO_AWAIT(co, coro_connect(f->fd, (struct sockaddr *)&f->addr, sizeof f->addr,
                                CORO_FOREVER));
    if (CORO_RESULT(co) < 0)
        goto out;
    f->len = snprintf(f->req, sizeof f->req, "GET %d", f->id);
    CORO_AWAIT(co, coro_write_all(f->fd, f->req, (size_t)f->len, CORO_FOREVER));
    if (CORO_RESULT(co) < 0)
        goto out;
    /* one select: the answer, or everybody gives up */
    coro_select_init(&f->sel);
    coro_select_readable(&f->sel, NULL, f->fd);     /* branch 0 */
    coro_select_event(&f->sel, f->give_up);         /* branch 1 */
    CORO_SELECT(co, &f->sel, CORO_FOREVER);         /* the job's .deadline bounds it */
    if (CORO_RESULT(co) != 0) {
        CORO_RESULT(co) = CORO_RESULT(co) == 1 ? -ECANCELED : CORO_RESULT(co);
        goto out;
    }
    CORO_AWAIT(co, coro_read(f->fd, f->res.text, sizeof f->res.text - 1, 0));
    if (CORO_RESULT(co) == 0)
        CORO_RESULT(co) = -ECONNRESET;              /* closed without an answer */
out:
    f->res.rc = CORO_RESULT(co) < 0 ? CORO_RESULT(co) : 0;
    if (f->res.rc < 0 && f->res.rc != -ECANCELED && f->res.rc != -ETIMEDOUT) {
        /* the first real failure: stop the others (coro_group_cancel is
         * idempotent, so a second failure changes nothing) */
        coro_event_set(f->give_up);
        coro_group_cancel(f->group);
    }
    coro_close(NULL, f->fd);
    /* the result goes out even when this job is cancelled: try_send never waits */
    coro_chan_try_send(f->results, &f->res);
    CORO_END(co);
}
/* [fetch-group] */

struct reporter {
    coro_t co;
    coro_chan_t *results;
    coro_group_t *group;
    coro_select_t sel;          /* a result | the group's end */
    void *item;
    int seen, ok;
};

static int reporter_fn(coro_t *co)
{
    struct reporter *r = CORO_SELF(co, struct reporter);
    CORO_BEGIN(co);
    coro_select_init(&r->sel);
    coro_select_recv(&r->sel, r->results, &r->item);    /* branch 0 */
    while (r->seen < NFETCH) {
        CORO_SELECT(co, &r->sel, 5000 * MS);
        if (CORO_RESULT(co) != 0)
            break;
        struct result *x = r->item;
        r->seen++;
        char want[32];
        snprintf(want, sizeof want, "item %d", x->id);
        if (x->rc == 0 && strcmp(x->text, want) != 0)
            x->rc = -EPROTO;                        /* not the answer asked for */
        if (x->rc == 0) {
            r->ok++;
            printf("fetch %d: \"%s\"\n", x->id, x->text);
        } else {
            printf("fetch %d: %s\n", x->id, coro_strerror((int)x->rc));
        }
    }
    /* every member has reported; now the group itself */
    CORO_AWAIT(co, coro_group_wait(r->group, 5000 * MS));
    CORO_RETURN(co, CORO_RESULT(co) == 0 ? r->ok : CORO_RESULT(co));
    CORO_END(co);
}

int main(void)
{
    coro_sched_t *s;
    coro_group_t fetches, handlers;
    coro_event_t give_up;
    coro_chan_t results;
    void *slots[NFETCH];
    static struct fetch f[NFETCH];
    struct server sv = { 0 };
    struct reporter rep = { 0 };
    struct sockaddr_in addr = { .sin_family = AF_INET };
    socklen_t alen = sizeof addr;

    int rc = coro_sched_create(&s, NULL);
    if (rc < 0) {
        fprintf(stderr, "coro_sched_create: %s\n", coro_strerror(rc));
        return 1;
    }
    coro_group_init(&fetches);
    coro_group_init(&handlers);
    coro_event_init(&give_up);
    coro_chan_init(&results, slots, NFETCH);

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sv.lfd < 0 || bind(sv.lfd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(sv.lfd, 64) < 0 || getsockname(sv.lfd, (struct sockaddr *)&addr, &alen) < 0) {
        perror("server socket");
        return 1;
    }
    sv.handlers = &handlers;
    coro_spawn(s, &sv.co, server_fn, NULL);

    int64_t deadline = coro_now() + 2000 * MS;     /* one deadline for every fetch */
    coro_spawn_opts_t o = { .group = &fetches, .deadline = deadline };
    for (int i = 0; i < NFETCH; i++) {
        f[i] = (struct fetch){ .id = i, .fd = -1, .addr = addr, .group = &fetches,
                               .give_up = &give_up, .results = &results };
        if ((rc = coro_spawn(s, &f[i].co, fetch_fn, &o)) < 0) {
            fprintf(stderr, "spawn: %s\n", coro_strerror(rc));
            return 1;
        }
    }
    rep.results = &results;
    rep.group = &fetches;
    coro_spawn(s, &rep.co, reporter_fn, NULL);

    intptr_t ok = 0;
    coro_join(&rep.co, &ok);
    int64_t took = coro_now() - (deadline - 2000 * MS);
    printf("%ld of %d fetched; the rest given up after the first failure; %lld ms\n",
           (long)ok, NFETCH, (long long)(took / MS));

    /* the server: stop accepting, end the handlers still sleeping */
    coro_cancel(&sv.co);
    intptr_t r;
    coro_join(&sv.co, &r);
    coro_group_cancel(&handlers);
    coro_group_wait_blocking(&handlers, CORO_FOREVER);
    coro_close(s, sv.lfd);
    coro_sched_destroy(s);
    coro_group_destroy(&fetches);
    coro_group_destroy(&handlers);
    coro_chan_destroy(&results);
    coro_event_destroy(&give_up);
    /* the failure stopped the hanging fetch long before the 2 s deadline */
    return ok >= 1 && ok < NFETCH && took < 2000 * MS ? 0 : 1;
}
