/* SPDX-License-Identifier: MIT */
/* coro_select: wait for the first of several operations: channel receive
 * and send, events, semaphores, rwlocks, a job's end (these wait in the
 * lot), fd readiness (in the fd's slot of the I/O layer:
 * lib/io/fd_select.c) and timers (no node on any list: the select's own
 * wait on K carries the earliest deadline).
 *
 * A job has one `next` link, so it cannot wait on several lists.  The
 * select struct holds one coro_t-sized stand-in per branch (flag
 * CORO__FL_PROXY; its awaitable holds the branch's arguments), and the
 * job (or a plain thread's stand-in) waits on the select's own key
 * K = sel + 1 (odd: a separate set of lot buckets).
 *
 * sel->state, under K's bucket lock:
 *   ARMING   idle, or stand-ins being put on their lists
 *   PARKED   the owner waits on K
 *   OVER     timed out or cancelled while arming: nobody may claim
 *   WON + i  branch i completed
 * Claiming (claim_hook, the branch record's fn, called by the lot for
 * whoever takes a stand-in off an object's list, under that object's
 * lock, then K's): ARMING -> WON+i (the arm
 * sees it when it comes to park); PARKED -> WON+i only if the owner is
 * still on K, which the claimer then unlinks and so owns its wake-up (the
 * timer and CORO_CANCEL unlink it from K too: exactly one of them wins).
 * The claimer completes the branch's operation for the stand-in (item
 * written, result stored) before it drops the object's lock.
 *
 * Finishing (coro_select_end, in the owner after it resumed, however it
 * was woken): unlink every stand-in still on a list, each under its
 * object's lock.  After that no claim can be running or start, and every
 * claimer's writes are visible (same locks), so state is final: WON + i
 * means branch i happened - even if the owner was woken by its timeout
 * meanwhile - and the others left no trace.
 *
 * Lock order: an object's bucket, then K's; never two Ks (a select that
 * completes its own branch claims itself first, then takes other waiters,
 * which may claim other selects one at a time).
 */
#include <string.h>

#include "sync/sync.h"

#define SEL_MAGIC 0x53454c54u   /* "SELT" */
#define ST_ARMING 0u
#define ST_PARKED 1u
#define ST_OVER 2u
#define ST_WON 16u

static inline const void *sel_key(const coro_select_t *sel)
{
    return (const char *)sel + 1;
}

static bool sel_ok(const coro_select_t *sel)
{
    return sel && sel->magic == SEL_MAGIC;
}

static int index_of(const coro_t *proxy)
{
    return (int)proxy->cls;     /* set by add() */
}

/* the branches that are not lot operations: their records' aw.ops */
static const struct coro_await_ops fd_ops[2] = { { "select_readable", NULL },
                                                 { "select_writable", NULL } };
static const struct coro_await_ops timer_ops = { "select_timer", NULL };

enum kind { B_PARKLOT, B_FD, B_TIMER };

static enum kind kind_of(const coro_t *nd)
{
    if (nd->aw.ops == &fd_ops[0] || nd->aw.ops == &fd_ops[1])
        return B_FD;
    return nd->aw.ops == &timer_ops ? B_TIMER : B_PARKLOT;
}

static int fd_dir(const coro_t *nd)
{
    return nd->aw.ops == &fd_ops[0] ? CORO__DIR_RD : CORO__DIR_WR;
}

/* parked: the owner may already wait on the select's own key (take it) */
static int sel_claim(coro_t *proxy, bool parked)
{
    coro_select_t *sel = proxy->aw.arg[2].p;
    int rc = -1;

    coro__parklot_bucket_t *b = coro__parklot_lock(sel_key(sel));
    if (sel->state == ST_ARMING) {
        sel->state = ST_WON + (uint32_t)index_of(proxy);
        proxy->parent = NULL;
        rc = 0;
    } else if (parked && sel->state == ST_PARKED) {
        coro_t *owner = coro__parklot_pop_raw(b, sel_key(sel));
        if (owner) {
            sel->state = ST_WON + (uint32_t)index_of(proxy);
            proxy->parent = owner;
            rc = 0;
        } else {
            sel->state = ST_OVER;   /* its timeout or a cancel got there first */
        }
    }
    coro__parklot_unlock(b);
    return rc;
}

/* the claim hook of a branch's record (its fn): called by the lot's
 * coro__parklot_take under the record's bucket lock */
static int claim_hook(coro_t *proxy)
{
    return sel_claim(proxy, true);
}

/* the owner, arming, tries a branch itself: claim for it (the owner is not
 * parked: it is the caller) */
static int claim_self(coro_t *proxy)
{
    return sel_claim(proxy, false);
}

/* ---- building ------------------------------------------------------------------- */

int coro_select_init(coro_select_t *sel)
{
    if (!sel)
        return -EINVAL;
    memset(sel, 0, sizeof *sel);
    sel->magic = SEL_MAGIC;
    return 0;
}

static int add(coro_select_t *sel, const struct coro_await_ops *ops, void *obj, void *arg)
{
    if (!sel_ok(sel))
        return -EINVAL;
    if (sel->n >= CORO_SELECT_MAX)
        return -ENOSPC;
    coro_t *nd = &sel->node[sel->n];
    memset(nd, 0, sizeof *nd);
    nd->flags = CORO__FL_PROXY;
    nd->fn = claim_hook;
    nd->cls = (uint16_t)sel->n;
    nd->aw.ops = ops;
    nd->aw.arg[0].p = obj;
    nd->aw.arg[1].p = arg;
    nd->aw.arg[2].p = sel;
    return (int)sel->n++;
}

int coro_select_recv(coro_select_t *sel, coro_chan_t *ch, void **out)
{
    if (!out || coro_chan_cap(ch) < 0)
        return -EINVAL;
    return add(sel, &coro__chan_recv_ops.base, ch, out);
}

int coro_select_send(coro_select_t *sel, coro_chan_t *ch, void *item)
{
    if (coro_chan_cap(ch) < 0)
        return -EINVAL;
    return add(sel, &coro__chan_send_ops.base, ch, item);
}

int coro_select_event(coro_select_t *sel, coro_event_t *ev)
{
    if (coro_event_is_set(ev) < 0)
        return -EINVAL;
    return add(sel, &coro__event_wait_ops.base, ev, NULL);
}

int coro_select_acquire(coro_select_t *sel, coro_sem_t *sem)
{
    if (coro_sem_value(sem) < 0)
        return -EINVAL;
    return add(sel, &coro__sem_acquire_ops.base, sem, NULL);
}

/* the rwlock branches: who holds a lock their branch takes is bound when
 * the select runs (bind_identity) */
int coro_select_read_lock(coro_select_t *sel, coro_rwlock_t *rw)
{
    if (!coro__rwlock_ok(rw))
        return -EINVAL;
    return add(sel, &coro__rwlock_read_ops.sync.base, rw, NULL);
}

int coro_select_write_lock(coro_select_t *sel, coro_rwlock_t *rw)
{
    if (!coro__rwlock_ok(rw))
        return -EINVAL;
    return add(sel, &coro__rwlock_write_ops.sync.base, rw, NULL);
}

static bool is_rwlock(const coro_t *nd)
{
    return nd->aw.ops == &coro__rwlock_read_ops.sync.base ||
           nd->aw.ops == &coro__rwlock_write_ops.sync.base;
}

/* who takes the lock of an rwlock branch: the selecting job (its root
 * frame) or the plain thread; written before any branch is tried */
static void bind_identity(coro_select_t *sel, uintptr_t who)
{
    for (uint32_t i = 0; i < sel->n; i++)
        if (is_rwlock(&sel->node[i]))
            sel->node[i].aw.arg[1].i = (intptr_t)who;
}

int coro_select_done(coro_select_t *sel, coro_t *job)
{
    if (!job)
        return -EINVAL;
    /* acquire: pairs with coro__finish's release */
    uint32_t st = __atomic_load_n(&job->state, __ATOMIC_ACQUIRE) & CORO__S_MASK;
    if (st == CORO__S_IDLE || st == CORO__S_CHILD)
        return -EINVAL;
    return add(sel, &coro__done_sel_ops.base, job, NULL);
}

static int add_fd(coro_select_t *sel, coro_sched_t *s, int fd, int dir)
{
    struct coro__io *io;

    if (!sel_ok(sel))
        return -EINVAL;
    if (fd < 0)
        return -EBADF;
    if (!s)
        s = coro_sched_current();   /* NULL outside a job: bound at the first select */
    io = s ? coro__sched_io(s) : NULL;
    if (s && !io)
        return -EINVAL;
    int i = add(sel, &fd_ops[dir], NULL, io);
    if (i >= 0)
        sel->node[i].aw.arg[0].i = fd;
    return i;
}

int coro_select_readable(coro_select_t *sel, coro_sched_t *s, int fd)
{
    return add_fd(sel, s, fd, CORO__DIR_RD);
}

int coro_select_writable(coro_select_t *sel, coro_sched_t *s, int fd)
{
    return add_fd(sel, s, fd, CORO__DIR_WR);
}

/* CORO_NO_DEADLINE is kept as INT64_MAX: a time now never reaches */
static int64_t timer_at(int64_t deadline_ns)
{
    return deadline_ns == CORO_NO_DEADLINE ? INT64_MAX : deadline_ns;
}

int coro_select_timer(coro_select_t *sel, int64_t deadline_ns)
{
    if (deadline_ns < 0)
        return -EINVAL;
    int i = add(sel, &timer_ops, NULL, NULL);
    if (i >= 0)
        sel->node[i].aw.arg[0].i = timer_at(deadline_ns);
    return i;
}

int coro_select_set_timer(coro_select_t *sel, int branch, int64_t deadline_ns)
{
    if (!sel_ok(sel) || branch < 0 || (uint32_t)branch >= sel->n || deadline_ns < 0 ||
        kind_of(&sel->node[branch]) != B_TIMER)
        return -EINVAL;
    sel->node[branch].aw.arg[0].i = timer_at(deadline_ns);
    return 0;
}

intptr_t coro_select_result(const coro_select_t *sel, int branch)
{
    if (!sel_ok(sel) || branch < 0 || (uint32_t)branch >= sel->n)
        return -EINVAL;
    return sel->node[branch].result;
}

/* ---- the two passes --------------------------------------------------------------- */

/* a branch that is not a lot operation completes by itself (fd ready or
 * in error, timer passed): claim the select for it.  -1: not ready;
 * 1: it won; 0: another branch had won. */
static int self_complete(coro_t *nd, int64_t now)
{
    intptr_t res;

    if (kind_of(nd) == B_TIMER) {
        if (now < nd->aw.arg[0].i)
            return -1;
        res = 0;
    } else {
        int r = coro__fd_ready((int)nd->aw.arg[0].i, fd_dir(nd) == CORO__DIR_RD);
        if (r == 0)
            return -1;
        res = r > 0 ? 0 : r;
    }
    if (claim_self(nd) < 0)
        return 0;
    nd->result = res;
    return 1;
}

/* a lot operation: try it under its bucket, linking the record when it
 * must wait (link).  1 done (ours or another branch won), 0 waits. */
static int parklot_try(coro_t *nd, bool link)
{
    const struct coro__sync_ops *op = coro__sync_ops_of(&nd->aw);
    const void *key = op->key(&nd->aw);
    coro__wakelist_t wakes;
    intptr_t res;

    coro__wakelist_init(&wakes);
    coro__parklot_bucket_t *b = coro__parklot_lock(key);
    int r = op->try(&nd->aw, &res, &wakes, nd);
    if (r == 1)
        nd->result = res;
    else if (r == 0 && link)
        coro__parklot_link(b, key, nd);
    coro__parklot_unlock(b);
    coro__wakelist_wake(&wakes);
    return r != 0;
}

/* pass 1: try each branch once, nothing linked (so nobody can claim) */
static int try_all(coro_select_t *sel)
{
    int64_t now = -1;

    for (uint32_t i = 0; i < sel->n; i++) {
        coro_t *nd = &sel->node[i];
        switch (kind_of(nd)) {
        case B_PARKLOT:
            if (parklot_try(nd, false))
                return (int)i;
            break;
        case B_TIMER:
            if (now < 0)
                now = coro__now();
            /* fall through */
        case B_FD:
            if (self_complete(nd, now) >= 0)
                return (int)i;
            break;
        }
    }
    return -1;
}

/* pass 2: try again and link each record; stops early when a branch
 * completed (ours or claimed by another thread).  true: one did.  An fd
 * branch is linked first and looked at after, so that readiness arriving
 * in between is seen by the poller (who takes the record) or by the look. */
static bool link_all(coro_select_t *sel, coro_sched_t *s)
{
    int64_t now = -1;

    for (uint32_t i = 0; i < sel->n; i++) {
        coro_t *nd = &sel->node[i];
        switch (kind_of(nd)) {
        case B_PARKLOT:
            if (parklot_try(nd, true))
                return true;
            break;
        case B_TIMER:
            if (now < 0)
                now = coro__now();
            if (self_complete(nd, now) >= 0)
                return true;
            break;
        case B_FD: {
            if (!nd->aw.arg[1].p)       /* added outside a job: the selecting job's */
                nd->aw.arg[1].p = s ? coro__sched_io(s) : NULL;
            int rc = nd->aw.arg[1].p ? coro__io_sel_link(nd->aw.arg[1].p, nd,
                                                         (int)nd->aw.arg[0].i, fd_dir(nd))
                                     : -EINVAL;
            if (rc < 0) {       /* -EBADF, -EBUSY, -EPERM...: the branch ends so */
                if (claim_self(nd) == 0)
                    nd->result = rc;
                return true;
            }
            if (self_complete(nd, now) >= 0)
                return true;
            break;
        }
        }
    }
    return false;
}

/* the earliest timer branch's deadline, or -1 */
static int64_t timers_deadline(const coro_select_t *sel)
{
    int64_t d = -1;

    for (uint32_t i = 0; i < sel->n; i++)
        if (kind_of(&sel->node[i]) == B_TIMER && (d < 0 || sel->node[i].aw.arg[0].i < d))
            d = sel->node[i].aw.arg[0].i;
    return d;
}

static int64_t earliest(int64_t a, int64_t b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static uint32_t read_state(coro_select_t *sel)
{
    coro__parklot_bucket_t *b = coro__parklot_lock(sel_key(sel));
    uint32_t st = sel->state;
    coro__parklot_unlock(b);
    return st;
}

intptr_t coro_select_end(coro_select_t *sel, intptr_t rc)
{
    if (!sel_ok(sel))
        return rc;
    for (uint32_t i = 0; i < sel->n; i++) {
        coro_t *nd = &sel->node[i];
        switch (kind_of(nd)) {
        case B_PARKLOT: {
            const void *key = coro__sync_ops_of(&nd->aw)->key(&nd->aw);
            coro__wakelist_t wakes;
            coro__wakelist_init(&wakes);
            coro__parklot_bucket_t *b = coro__parklot_lock(key);
            if (coro__parklot_unlink(b, key, nd))
                coro__sync_left(b, nd, &wakes);     /* a writer branch let readers by */
            coro__parklot_unlock(b);
            coro__wakelist_wake(&wakes);
            break;
        }
        case B_FD:
            if (nd->aw.arg[1].p)
                coro__io_sel_unlink(nd->aw.arg[1].p, nd, (int)nd->aw.arg[0].i, fd_dir(nd));
            break;
        case B_TIMER:
            break;
        }
    }
    coro__parklot_bucket_t *b = coro__parklot_lock(sel_key(sel));
    uint32_t st = sel->state;
    sel->state = ST_ARMING;
    coro__parklot_unlock(b);
    if (st >= ST_WON)
        return (intptr_t)(st - ST_WON);
    if (rc == -ETIMEDOUT) {
        /* the wait's timer carried the earliest timer branch: a branch
         * whose time has come is the result (lowest index first); a
         * timeout before any (the select's own, the job's deadline) stays */
        int64_t now = coro__now();
        for (uint32_t i = 0; i < sel->n; i++) {
            coro_t *nd = &sel->node[i];
            if (kind_of(nd) == B_TIMER && now >= nd->aw.arg[0].i) {
                nd->result = 0;
                return (intptr_t)i;
            }
        }
    }
    return rc;
}

/* ---- the coroutine side ---------------------------------------------------------- */

static int sel_arm(coro_sched_t *s, coro_t *job, coro_await_t *aw, intptr_t *res)
{
    coro_select_t *sel = aw->arg[0].p;
    const void *key = sel_key(sel);
    int64_t deadline = earliest(aw->timeout > 0 ? coro__deadline(aw->timeout) : -1,
                                timers_deadline(sel));
    int r = CORO__ARM_READY, rc;

    bind_identity(sel, (uintptr_t)job);
    if (link_all(sel, s)) {
        uint32_t st = read_state(sel);
        *res = st >= ST_WON ? (intptr_t)(st - ST_WON) : -EINVAL;
    } else {
        coro__parklot_bucket_t *b = coro__parklot_lock(key);
        if (sel->state >= ST_WON) {
            *res = (intptr_t)(sel->state - ST_WON);
        } else if ((rc = coro__parklot_park(b, key, job, deadline)) < 0) {
            sel->state = ST_OVER;   /* -ECANCELED, -ENOMEM: nobody may claim */
            *res = rc;
        } else {
            sel->state = ST_PARKED;     /* parked with its timer under b */
            r = CORO__ARM_PENDING;
        }
        coro__parklot_unlock(b);
    }
    return r;
}

/* coro_cancel of one selecting job (lib/wait/parklot.c CANCEL ONE) unlinks
 * the owner from the select's own key; it then ends as by its timer: a
 * claimer finds no owner and makes the select OVER (claim), and
 * coro_select_end takes the branches' records off their lists */
static const void *sel_owner_key(const coro_await_t *aw)
{
    return sel_key(aw->arg[0].p);
}

static const struct coro__parklot_ops sel_ops = { { "select", coro__parklot_ops_arm }, sel_arm,
                                              sel_owner_key };

coro_await_t coro_select(coro_select_t *sel, int64_t timeout)
{
    coro_await_t a = { .ops = &sel_ops.base, .timeout = timeout };

    if (!sel_ok(sel) || sel->n == 0 || !coro__timeout_ok(timeout))
        return coro_ready(-EINVAL);
    coro_t *job = coro__current_job();
    bind_identity(sel, job ? (uintptr_t)job : coro__thread_token());
    int i = try_all(sel);
    if (i >= 0)
        return coro__complete(i);
    if (timeout == 0)
        return coro__complete(-ETIMEDOUT);
    a.arg[0].p = sel;
    return a;
}

/* ---- the plain-thread side ------------------------------------------------------- */

int coro_select_blocking(coro_select_t *sel, int64_t timeout)
{
    intptr_t rc;

    if (!sel_ok(sel) || sel->n == 0 || !coro__timeout_ok(timeout))
        return -EINVAL;
    for (uint32_t i = 0; i < sel->n; i++)
        if (kind_of(&sel->node[i]) == B_FD && !sel->node[i].aw.arg[1].p)
            return -EINVAL;     /* an fd branch without a scheduler to watch it */
    int64_t deadline = earliest(coro__deadline(timeout), timers_deadline(sel));
    if (coro__in_job())
        return -EDEADLK;
    bind_identity(sel, coro__thread_token());
    int i = try_all(sel);
    if (i >= 0)
        return (int)coro_select_end(sel, i);
    if (timeout == 0)
        return -ETIMEDOUT;
    if (link_all(sel, NULL)) {
        rc = -EINVAL;   /* replaced by the winner below */
    } else {
        coro__parklot_bucket_t *b = coro__parklot_lock(sel_key(sel));
        if (sel->state >= ST_WON) {
            coro__parklot_unlock(b);
            rc = -EINVAL;
        } else {
            coro_t me;
            memset(&me, 0, sizeof me);
            sel->state = ST_PARKED;
            rc = coro__parklot_wait_thread(b, sel_key(sel), &me, deadline);
        }
    }
    return (int)coro_select_end(sel, rc);
}
