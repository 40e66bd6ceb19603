/* SPDX-License-Identifier: MIT */
/* chat - a chat room on a broadcast channel: every line a client sends
 * goes to every client; a client too slow to keep up is told how many
 * lines it missed ("! missed N").
 *
 *   chat PORT [WORKERS]  serve on 0.0.0.0:PORT until SIGINT/SIGTERM
 *   chat --self-test     listen on a loopback port, let 20 bots talk for 150
 *                        rounds and one bot that does not read fall behind;
 *                        check that no bot that kept up lost a line and that
 *                        the slow one was told what it missed; exit 0
 *
 * Each connection has two jobs: a reader that publishes each line it reads,
 * and a writer subscribed to the room's coro_bcast_t that writes every
 * line to its client.  The room keeps the text of the last lines in a log
 * under a pthread mutex held for one short copy (docs/guide.md, "Short
 * locks and CPU work in a job"); the channel carries each line's number.
 * tests/api/test_samples_chat.c includes this file with CHAT_NO_MAIN defined and
 * runs 500 bots. */
#define _GNU_SOURCE
#include <corokit.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHAT_RING 1024      /* lines the broadcast channel keeps for a slow writer */
#define CHAT_LINE 128       /* the longest line relayed (a longer one is cut) */
#define CHAT_LOG (2 * CHAT_RING)    /* texts kept: a line is read while it is in the ring */

/* [chat-room] the room: the channel, and the text of each recent line */
struct chat_line {
    uint64_t seq;
    size_t len;
    char text[CHAT_LINE];
};

struct chat_room {
    coro_bcast_t bc;
    void *ring[CHAT_RING];
    pthread_mutex_t lock;       /* seq and log: held for one copy of a line */
    uint64_t seq;
    struct chat_line log[CHAT_LOG];
};

static int chat_room_init(struct chat_room *room)
{
    pthread_mutex_init(&room->lock, NULL);
    room->seq = 0;
    return coro_bcast_init(&room->bc, room->ring, CHAT_RING);
}

/* publish a line: its number goes on the channel in the order of the log */
static void chat_publish(struct chat_room *room, const char *text, size_t len)
{
    if (len > CHAT_LINE)
        len = CHAT_LINE;
    pthread_mutex_lock(&room->lock);
    struct chat_line *l = &room->log[room->seq % CHAT_LOG];
    l->seq = room->seq;
    l->len = len;
    memcpy(l->text, text, len);
    coro_bcast_send(&room->bc, (void *)(uintptr_t)room->seq);
    room->seq++;
    pthread_mutex_unlock(&room->lock);
}

/* line seq's text into out (CHAT_LINE bytes): its length, or 0 when the
 * log has already reused its place (the reader then missed it) */
static size_t chat_fetch(struct chat_room *room, uint64_t seq, char *out)
{
    size_t n = 0;
    pthread_mutex_lock(&room->lock);
    const struct chat_line *l = &room->log[seq % CHAT_LOG];
    if (l->seq == seq) {
        n = l->len;
        memcpy(out, l->text, n);
    }
    pthread_mutex_unlock(&room->lock);
    return n;
}
/* [/chat-room] */

/* one connection: its two jobs share the fd; the last to end frees it */
struct chat_session;

struct chat_reader {
    coro_t co;
    struct chat_session *ss;
    ssize_t n;
    size_t have;
    char in[4 * CHAT_LINE];
};

struct chat_writer {
    coro_t co;
    struct chat_session *ss;
    coro_bcast_rx_t rx;
    void *item;
    intptr_t rc;
    size_t len;
    char out[8192];
};

struct chat_session {
    struct chat_room *room;
    int fd;
    int refs;
    struct chat_reader rd;
    struct chat_writer wr;
};

/* [chat-exit] on_exit with a context: the session, whichever job ends last */
static void chat_session_exit(coro_t *co, void *ctx)
{
    struct chat_session *ss = ctx;
    (void)co;
    /* acq_rel: the other job's last writes to the session before the free */
    if (__atomic_sub_fetch(&ss->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        close(ss->fd);
        free(ss);
    }
}
/* [/chat-exit] */

/* [chat-reader] read lines, publish each */
static int chat_reader_body(coro_t *co)
{
    struct chat_reader *r = CORO_SELF(co, struct chat_reader);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_read(r->ss->fd, r->in + r->have, sizeof r->in - r->have, CORO_FOREVER));
        r->n = CORO_RESULT(co);
        if (r->n <= 0)
            break;
        r->have += (size_t)r->n;
        char *start = r->in, *nl;
        while ((nl = memchr(start, '\n', (size_t)(r->in + r->have - start)))) {
            chat_publish(r->ss->room, start, (size_t)(nl + 1 - start));
            start = nl + 1;
        }
        r->have -= (size_t)(start - r->in);
        memmove(r->in, start, r->have);
        if (r->have == sizeof r->in)
            r->have = 0;                /* no newline in 512 bytes: dropped */
    }
    coro_cancel(&r->ss->wr.co);         /* the client is gone: its writer stops */
    CORO_END(co);
}
/* [/chat-reader] */

/* add one received item (or lag report) to the writer's buffer */
static void chat_take(struct chat_writer *w)
{
    if (w->rc == -EOVERFLOW) {
        w->len += (size_t)snprintf(w->out + w->len, sizeof w->out - w->len, "! missed %lld\n",
                                   (long long)coro_bcast_missed(&w->rx));
    } else {
        size_t n = chat_fetch(w->ss->room, (uint64_t)(uintptr_t)w->item, w->out + w->len);
        if (n == 0)
            n = (size_t)snprintf(w->out + w->len, sizeof w->out - w->len, "! missed 1\n");
        w->len += n;
    }
}

/* [chat-writer] every line of the room to the client, several per write */
static int chat_writer_body(coro_t *co)
{
    struct chat_writer *w = CORO_SELF(co, struct chat_writer);
    CORO_BEGIN(co);
    w->len = (size_t)snprintf(w->out, sizeof w->out, "* welcome\n");
    CORO_AWAIT(co, coro_write_all(w->ss->fd, w->out, w->len, CORO_FOREVER));
    while (CORO_RESULT(co) >= 0) {
        CORO_AWAIT(co, coro_bcast_recv(&w->rx, &w->item, CORO_FOREVER));
        w->rc = CORO_RESULT(co);
        w->len = 0;
        /* a line or a lag report; and what else is there already, in the
         * same write, while it fits */
        while (w->rc == 0 || w->rc == -EOVERFLOW) {
            chat_take(w);
            if (sizeof w->out - w->len < CHAT_LINE + 32)
                break;
            w->rc = coro_bcast_try_recv(&w->rx, &w->item);
        }
        if (w->rc != 0 && w->rc != -EOVERFLOW && w->rc != -EAGAIN)
            break;                      /* -EPIPE (closed), -ECANCELED: stop */
        CORO_AWAIT(co, coro_write_all(w->ss->fd, w->out, w->len, CORO_FOREVER));
    }
    coro_bcast_unsubscribe(&w->rx);
    shutdown(w->ss->fd, SHUT_RDWR);     /* its reader ends too */
    CORO_END(co);
}
/* [/chat-writer] */

/* start one connection's jobs; 0 or -errno (then fd is closed) */
static int chat_session_start(coro_sched_t *s, struct chat_room *room, int fd)
{
    struct chat_session *ss = calloc(1, sizeof *ss);
    coro_spawn_opts_t o = { .on_exit_ctx = ss, .on_exit_with = chat_session_exit };
    int rc;

    if (!ss) {
        close(fd);
        return -ENOMEM;
    }
    /* a small kernel buffer per client: a slow client's backlog is in the
     * ring, where it is reported, not hidden in megabytes of socket buffer */
    int sndbuf = 16384, one = 1;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    /* lines are small and each write is complete: no Nagle delay */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ss->room = room;
    ss->fd = fd;
    ss->refs = 2;
    ss->rd.ss = ss->wr.ss = ss;
    if ((rc = coro_bcast_subscribe(&room->bc, &ss->wr.rx)) < 0 ||
        (rc = coro_spawn(s, &ss->wr.co, chat_writer_body, &o)) < 0) {
        coro_bcast_unsubscribe(&ss->wr.rx);
        close(fd);
        free(ss);
        return rc;
    }
    if ((rc = coro_spawn(s, &ss->rd.co, chat_reader_body, &o)) < 0) {
        coro_cancel(&ss->wr.co);
        chat_session_exit(&ss->rd.co, ss);     /* the reader's share */
    }
    return rc;
}

/* [chat-listener] accept, start a session for each connection */
struct chat_listener {
    coro_t co;
    coro_sched_t *s;
    struct chat_room *room;
    int lfd, fd;
};

static int chat_listener_body(coro_t *co)
{
    struct chat_listener *l = CORO_SELF(co, struct chat_listener);
    CORO_BEGIN(co);
    for (;;) {
        CORO_AWAIT(co, coro_accept(l->lfd, CORO_FOREVER));
        l->fd = (int)CORO_RESULT(co);
        if (l->fd == -ECANCELED || l->fd == -EBADF || l->fd == -EINVAL)
            break;
        if (l->fd >= 0)
            chat_session_start(l->s, l->room, l->fd);
    }
    CORO_END(co);
}
/* [/chat-listener] */

static int chat_listen(const char *ip, int port, int *bound)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    socklen_t len = sizeof sa;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    inet_pton(AF_INET, ip, &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

/* ---- bots: clients that talk in rounds (the self-test, tests/api/test_samples_chat.c) ---------- */

/* A bot sends one line per round and reads until it has every bot's line
 * of that round before it sends the next: so no bot is ever more than two
 * rounds of lines (2 * bots) behind the room's newest, and with at most
 * CHAT_RING / 2 bots none of them can lose a line.  The slow bot reads
 * nothing until the talkers are done (its kernel buffer is small), then
 * everything: it must be told what it missed, exactly. */
struct chat_bots {
    int port, nbots, rounds;
    coro_waitgroup_t ready;     /* every bot is in the room */
    coro_waitgroup_t talked;    /* every talker has every line */
    unsigned char *seen;        /* [bot][round][sender]: lines per talker */
};

struct chat_bot {
    coro_t co;
    struct chat_bots *b;
    int id, fd, round, slow, welcomed;
    long lines, missed, dups, reports;
    size_t have;
    ssize_t n;
    struct sockaddr_in sa;
    char out[64];
    char in[16384];
};

static unsigned char *chat_bot_seen(struct chat_bot *c, int round, int from)
{
    return &c->b->seen[((size_t)c->id * (size_t)c->b->rounds + (size_t)round) * (size_t)c->b->nbots +
                       (size_t)from];
}

/* one line the bot read */
static void chat_bot_line(struct chat_bot *c, const char *line)
{
    int from, round;
    long n;

    if (strncmp(line, "* welcome", 9) == 0) {
        c->welcomed = 1;
    } else if (sscanf(line, "! missed %ld", &n) == 1) {
        c->missed += n;
        c->reports++;
    } else if (sscanf(line, "m %d %d", &from, &round) == 2 && from >= 0 && from < c->b->nbots &&
               round >= 0 && round < c->b->rounds) {
        unsigned char *s = chat_bot_seen(c, round, from);
        if (*s)
            c->dups++;
        *s = 1;
        c->lines++;
    }
}

static void chat_bot_lines(struct chat_bot *c)
{
    char *start = c->in, *nl;
    while ((nl = memchr(start, '\n', (size_t)(c->in + c->have - start)))) {
        *nl = '\0';
        chat_bot_line(c, start);
        start = nl + 1;
    }
    c->have -= (size_t)(start - c->in);
    memmove(c->in, start, c->have);
}

/* lines of round r already seen (they may come before the bot gets there) */
static long chat_bot_count(struct chat_bot *c, int r)
{
    long n = 0;
    for (int i = 0; i < c->b->nbots; i++)
        n += *chat_bot_seen(c, r, i);
    return n;
}

/* how much the slow bot must account for: every talker's every line */
static long chat_bot_total(const struct chat_bot *c)
{
    return (long)c->b->nbots * c->b->rounds;
}

#define CHAT_BOT_READ(co, c)                                                            \
    do {                                                                                \
        CORO_AWAIT(co, coro_read((c)->fd, (c)->in + (c)->have, sizeof (c)->in - (c)->have, \
                                 CORO_FOREVER));                                        \
        if (((c)->n = CORO_RESULT(co)) <= 0)                                            \
            CORO_RETURN(co, (c)->n == 0 ? -EPIPE : (c)->n);                             \
        (c)->have += (size_t)(c)->n;                                                    \
        chat_bot_lines(c);                                                              \
    } while (0)

static int chat_bot_body(coro_t *co)
{
    struct chat_bot *c = CORO_SELF(co, struct chat_bot);
    CORO_BEGIN(co);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        CORO_RETURN(co, -1);
    {
        int one = 1, rcvbuf = 4096;     /* a small buffer: the slow bot falls behind soon */
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c->slow)
            setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    c->sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)c->b->port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CORO_AWAIT(co, coro_connect(c->fd, (struct sockaddr *)&c->sa, sizeof c->sa, CORO_FOREVER));
    if (CORO_RESULT(co) < 0)
        CORO_RETURN(co, CORO_RESULT(co));
    while (!c->welcomed)
        CHAT_BOT_READ(co, c);           /* subscribed: it sees every line from now */
    coro_waitgroup_done(&c->b->ready);
    CORO_AWAIT(co, coro_waitgroup_wait(&c->b->ready, CORO_FOREVER));
    if (c->slow) {
        CORO_AWAIT(co, coro_waitgroup_wait(&c->b->talked, CORO_FOREVER));
        while (c->lines + c->missed < chat_bot_total(c))
            CHAT_BOT_READ(co, c);
    } else {
        for (c->round = 0; c->round < c->b->rounds; c->round++) {
            /* padded: the slow bot's buffers fill within a few rounds */
            int len = snprintf(c->out, sizeof c->out, "m %d %d %-40s\n", c->id, c->round, "hello");
            CORO_AWAIT(co, coro_write_all(c->fd, c->out, (size_t)len, CORO_FOREVER));
            if (CORO_RESULT(co) < 0)
                CORO_RETURN(co, CORO_RESULT(co));
            while (chat_bot_count(c, c->round) < c->b->nbots)
                CHAT_BOT_READ(co, c);
        }
        coro_waitgroup_done(&c->b->talked);
    }
    close(c->fd);
    CORO_END(co);
}

/* run nbots talkers and one slow bot against a chat server on port; 0 when
 * every talker got every line exactly once and the slow bot accounted for
 * every line (received or reported missed) with at least one report */
static int chat_bots_run(coro_sched_t *s, int port, int nbots, int rounds, long *slow_missed)
{
    struct chat_bots b = { .port = port, .nbots = nbots, .rounds = rounds };
    struct chat_bot *c = calloc((size_t)nbots + 1, sizeof *c);
    int bad = 0;

    b.seen = calloc((size_t)(nbots + 1) * (size_t)rounds * (size_t)nbots, 1);
    if (!c || !b.seen)
        return -ENOMEM;
    coro_waitgroup_init(&b.ready);
    coro_waitgroup_init(&b.talked);
    coro_waitgroup_add(&b.ready, nbots + 1);
    coro_waitgroup_add(&b.talked, nbots);
    for (int i = 0; i <= nbots; i++) {
        c[i].b = &b;
        c[i].id = i;
        c[i].slow = i == nbots;
        if (coro_spawn(s, &c[i].co, chat_bot_body, NULL) < 0)
            return -EAGAIN;
    }
    for (int i = 0; i <= nbots; i++) {
        intptr_t r = -1;
        coro_join_timeout(&c[i].co, &r, CORO_FOREVER);
        if (r != 0 || c[i].dups ||
            (!c[i].slow && (c[i].lines != (long)nbots * rounds || c[i].missed))) {
            fprintf(stderr, "chat: bot %d: result %ld, %ld lines, %ld missed, %ld twice\n", i,
                    (long)r, c[i].lines, c[i].missed, c[i].dups);
            bad++;
        }
    }
    struct chat_bot *slow = &c[nbots];
    *slow_missed = slow->missed;
    if (slow->lines + slow->missed != chat_bot_total(slow) || slow->reports == 0) {
        fprintf(stderr, "chat: the slow bot: %ld lines + %ld missed (%ld reports) of %ld\n",
                slow->lines, slow->missed, slow->reports, chat_bot_total(slow));
        bad++;
    }
    free(b.seen);
    free(c);
    return bad ? -EPROTO : 0;
}

#ifndef CHAT_NO_MAIN
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    static struct chat_room room;
    struct chat_listener l = { .room = &room };
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    bool self_test = argc > 1 && strcmp(argv[1], "--self-test") == 0;
    int port = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: chat PORT [WORKERS] | chat --self-test\n");
        return 2;
    }
    cfg.workers = self_test ? 2 : argc > 2 ? atoi(argv[2]) : CORO_WORKERS_AUTO;
    if (chat_room_init(&room) < 0 || coro_sched_create(&l.s, &cfg) < 0)
        return 1;
    l.lfd = chat_listen(self_test ? "127.0.0.1" : "0.0.0.0", self_test ? 0 : atoi(argv[1]), &port);
    if (l.lfd < 0 || coro_spawn(l.s, &l.co, chat_listener_body, NULL) < 0)
        return 1;
    int rc = 0;
    if (self_test) {
        long missed = 0;
        rc = chat_bots_run(l.s, port, 20, 150, &missed);
        printf("chat: 20 talkers x 150 rounds: %s; the slow bot was told it missed %ld\n",
               rc == 0 ? "no line lost" : "FAILED", missed);
    } else {
        printf("chat: serving on port %d\n", port);
        fflush(stdout);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        while (!stop)
            pause();
    }
    coro_bcast_close(&room.bc);
    coro_sched_shutdown(l.s, CORO_CANCEL);
    coro_sched_destroy(l.s);
    close(l.lfd);
    return rc == 0 ? 0 : 1;
}
#endif
