/* SPDX-License-Identifier: MIT */
/* Names: coro_listen and coro_dial over "host:port" and "unix:/path".
 *
 * coro_listen is a plain call (a server's start-up): it resolves on the
 * calling thread.  coro_dial is an awaitable on the blocking pool
 * (lib/io/blocking.c): getaddrinfo(3) blocks for as long as the resolver
 * takes (a DNS server's timeout), and no worker may stall on it - tokio's
 * lookup_host and Go's resolver do the same, on a thread of their own.
 * The pool thread then tries each address with a non-blocking connect and
 * waits with poll(2) in slices of DIAL_SLICE_MS, looking between slices
 * at the job's cancel flag, the scheduler's cancelling flag and the
 * deadline: a cancelled dial closes its socket and ends with -ECANCELED
 * within a slice, and getaddrinfo, which cannot be interrupted, finishes
 * on its thread and its list is freed there.  The connected fd is a new
 * number for the scheduler (coro__io_forget, any thread), as accept's.
 *
 * Awaitable layout (dial): arg[0] the address string, arg[1] the job,
 * arg[2] the scheduler, timeout: the absolute deadline (-1 = none).  The
 * pool's own cancel (before the call starts) applies as to every pool
 * call: then nothing was resolved or opened.
 */
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "io/io.h"

#define DIAL_SLICE_MS 20

/* getaddrinfo's EAI_* as -errno (the mapping io.h documents) */
static int eai_errno(int e)
{
    switch (e) {
    case EAI_NONAME:
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
        return -ENXIO;
    case EAI_AGAIN:
        return -EAGAIN;
    case EAI_FAMILY:
        return -EAFNOSUPPORT;
    case EAI_SERVICE:
    case EAI_SOCKTYPE:
    case EAI_BADFLAGS:
        return -EINVAL;
    case EAI_MEMORY:
        return -ENOMEM;
    case EAI_SYSTEM:
        return errno ? -errno : -EIO;
    default:
        return -EIO;
    }
}

/* a parsed address: unix (path, with its length) or host and port */
struct where {
    bool unix_;
    socklen_t ulen;
    struct sockaddr_un un;
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    bool any;       /* "", "*": every local address (listen) */
};

static int parse(const char *addr, struct where *w)
{
    memset(w, 0, sizeof *w);
    if (!addr)
        return -EINVAL;
    if (strncmp(addr, "unix:", 5) == 0) {
        const char *path = addr + 5;
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof w->un.sun_path)
            return -EINVAL;
        w->unix_ = true;
        w->un.sun_family = AF_UNIX;
        memcpy(w->un.sun_path, path, n);
        if (path[0] == '@')
            w->un.sun_path[0] = '\0';   /* abstract: no trailing NUL counted */
        w->ulen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] != '@'));
        return 0;
    }
    const char *colon, *h = addr, *he;
    if (addr[0] == '[') {
        he = strchr(addr, ']');
        if (!he || he[1] != ':')
            return -EINVAL;
        h = addr + 1;
        colon = he + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return -EINVAL;
        he = colon;
    }
    size_t hl = (size_t)(he - h), pl = strlen(colon + 1);
    if (hl >= sizeof w->host || pl == 0 || pl >= sizeof w->port)
        return -EINVAL;
    memcpy(w->host, h, hl);
    memcpy(w->port, colon + 1, pl);
    w->any = hl == 0 || strcmp(w->host, "*") == 0;
    return 0;
}

static int resolve_addr(const struct where *w, int family, bool passive, struct addrinfo **out)
{
    struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM,
                              .ai_flags = passive ? AI_PASSIVE : 0 };
    errno = 0;
    int e = getaddrinfo(w->any ? NULL : w->host, w->port, &hints, out);
    return e == 0 ? 0 : eai_errno(e);
}

/* ---- listen ---------------------------------------------------------------------- */

static int listen_on(const struct sockaddr *sa, socklen_t len, int backlog)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd < 0)
        return -errno;
    if ((sa->sa_family != AF_UNIX && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) ||
        bind(fd, sa, len) < 0 || listen(fd, backlog) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int coro_listen(int family, const char *addr, int backlog)
{
    CORO__IO_KEEP_ERRNO();
    struct where w;
    struct addrinfo *list;
    int rc = parse(addr, &w);

    if (rc < 0 || backlog < 0)
        return rc < 0 ? rc : -EINVAL;
    if (w.unix_) {
        if (family != AF_UNIX && family != AF_UNSPEC)
            return -EAFNOSUPPORT;
        return listen_on((struct sockaddr *)&w.un, w.ulen, backlog);
    }
    if (family != AF_INET && family != AF_INET6 && family != AF_UNSPEC)
        return -EAFNOSUPPORT;
    if ((rc = resolve_addr(&w, family, true, &list)) < 0)
        return rc;
    rc = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = list; ai; ai = ai->ai_next)
        if ((rc = listen_on(ai->ai_addr, ai->ai_addrlen, backlog)) >= 0)
            break;
    freeaddrinfo(list);
    return rc;
}

/* ---- dial ------------------------------------------------------------------------ */

/* the dial must end now: -ECANCELED, -ETIMEDOUT, or 0 */
static int dial_stop(coro_await_t *aw)
{
    coro_t *job = aw->arg[1].p;

    if (coro__job_cancelled(job) || coro__cancelling(aw->arg[2].p))
        return -ECANCELED;
    if (aw->timeout >= 0 && coro__now() >= aw->timeout)
        return -ETIMEDOUT;
    return 0;
}

/* one address: the connected fd, or -errno */
static int dial_one(coro_await_t *aw, const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = 0;

    if (fd < 0)
        return -errno;
    if (connect(fd, sa, len) < 0 && errno != EINPROGRESS && errno != EINTR)
        rc = errno == EAGAIN ? -EAGAIN : -errno;
    while (rc == 0) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int err = 0;
        socklen_t l = sizeof err;

        if ((rc = dial_stop(aw)) < 0)
            break;
        int n = poll(&p, 1, DIAL_SLICE_MS);
        if (n < 0 && errno != EINTR)
            rc = -errno;
        if (n <= 0)
            continue;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
            err = errno;
        if (err == 0)
            return fd;
        if (err != EINPROGRESS && err != EALREADY)
            rc = -err;
    }
    close(fd);
    return rc;
}

static intptr_t dial_run(coro_await_t *aw)
{
    struct where w;
    struct addrinfo *list = NULL;
    int rc = parse(aw->arg[0].cp, &w);

    if (rc == 0 && w.unix_)
        rc = dial_one(aw, (struct sockaddr *)&w.un, w.ulen);
    else if (rc == 0 && (rc = resolve_addr(&w, AF_UNSPEC, false, &list)) == 0) {
        rc = -ENXIO;
        for (struct addrinfo *ai = list; ai; ai = ai->ai_next) {
            int r = dial_stop(aw);
            if (r < 0) {
                rc = r;
                break;
            }
            if ((rc = dial_one(aw, ai->ai_addr, ai->ai_addrlen)) >= 0 || rc == -ECANCELED ||
                rc == -ETIMEDOUT)
                break;
        }
        freeaddrinfo(list);
    }
    if (rc >= 0)
        coro__io_forget(coro__sched_io(aw->arg[2].p), rc);     /* a new number */
    return rc;
}

static const struct coro__pool_ops dial_ops = { { "dial", coro__blocking_arm }, dial_run };

coro_await_t coro_dial(const char *addr, int64_t timeout)
{
    CORO__IO_KEEP_ERRNO();
    coro_t *job = coro__current_job();
    coro_sched_t *s = coro_sched_current();
    struct where w;

    if (!addr || !coro__timeout_ok(timeout) || parse(addr, &w) < 0)
        return coro__complete(-EINVAL);
    if (!job || !s)
        return coro__complete(-EPERM);  /* not inside a job: no pool to run on */
    coro_await_t a = { .ops = &dial_ops.base };
    a.arg[0].cp = addr;
    a.arg[1].p = job;
    a.arg[2].p = s;
    a.timeout = timeout == 0 ? coro__now() : coro__deadline(timeout);
    return a;
}
