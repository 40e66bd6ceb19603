/* SPDX-License-Identifier: MIT */
/* corokit: synchronisation - event, wait group, mutex, semaphore, channel,
 * select.
 *
 * Every object works for coroutines and plain threads at once:
 *   - a coroutine awaits:  CORO_AWAIT(co, coro_chan_recv(ch, &f->item, timeout));
 *     the waiting job is suspended (its worker runs other jobs) and woken on
 *     a worker its affinity allows, at its priority;
 *   - a plain thread blocks: coro_chan_recv_blocking(ch, &item, timeout);
 *     calling a _blocking function from inside a job returns -EDEADLK;
 *   - coro_X_try_VERB functions (coro_mutex_try_lock, coro_sem_try_acquire,
 *     coro_chan_try_send) never block and may be called from anywhere.
 * TIMEOUTS (one rule for every call: coro.h, TIME): timeout_ns is relative
 * int64_t nanoseconds; CORO_FOREVER (-1) waits without limit, 0 tries once
 * (-ETIMEDOUT if not ready at once), > 0 waits at most that long; any other
 * negative value is refused with -EINVAL and nothing happens.  A waiting
 * job's timer lives in its wait: it is armed when the job parks, removed
 * when the wait ends any other way, and needs no memory of its own beyond
 * a per-scheduler table (256 timers preallocated, grown through the
 * config allocator): when that table cannot grow, the wait fails at once
 * with -ENOMEM (nothing taken, nothing linked).  A finite timeout needs
 * the I/O layer (-ENOSYS in a build without it).  Under
 * coro_sched_shutdown(CORO_CANCEL) a waiting job gets -ECANCELED; an
 * operation that already completed keeps its result.
 *
 * LIFETIMES.  An object may be destroyed (and its memory freed or reused)
 * once coro_X_destroy returned 0: that happens only when nothing waits on
 * it.  A woken waiter never touches the object again after its wait
 * returns, so the last waiter to return may destroy it.  A job's frame may
 * be reused or freed once its wait has returned: no timer of an ended
 * wait survives it.
 *
 * Objects are plain structs the caller owns (static, in a frame, malloc):
 * call coro_X_init first, coro_X_destroy last.  Their fields are private.
 * A destroyed or never-initialised object is refused with -EINVAL (checked
 * by a magic number: best effort, not a guarantee against garbage).
 * Build awaitables only inside CORO_AWAIT and await each exactly once: the
 * constructor already tries the operation, without waiting (an item that
 * is there is received - taken from the channel - a unit taken, an item
 * sent; coro_mutex_lock alone tries at the await), and a dropped awaitable
 * loses what it took.  Waiting starts only at CORO_AWAIT (coro.h,
 * coro_await_t).
 *
 * Waiting is FIFO for each object (mutex hand-off, semaphore units,
 * channel slots go to the oldest waiter).  See docs/sync.md.
 */
#ifndef COROKIT_SYNC_H
#define COROKIT_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "coro.h"
#include "error.h"


#ifdef __cplusplus
extern "C" {
#endif

/* ---- event ------------------------------------------------------------------
 * A manual-reset event: once set, every waiter (and every later wait)
 * completes until it is reset. */
typedef struct coro_event {
    uint32_t magic;     /* private */
    uint32_t set;       /* private */
} coro_event_t;

/* coro_event_init - make ev a valid, unset event.  0 or -EINVAL (NULL).
 * Any thread; never blocks. */
CORO_EXTERN int coro_event_init(coro_event_t *ev);

/* coro_event_destroy - 0; -EBUSY while a job or thread waits on ev (ev
 * stays valid); -EINVAL (NULL or not initialised). */
CORO_EXTERN int coro_event_destroy(coro_event_t *ev);

/* coro_event_set - set ev and wake every waiter.  Returns the number of
 * waiters woken (>= 0), or -EINVAL.  Any thread or job; never blocks. */
CORO_EXTERN int coro_event_set(coro_event_t *ev);

/* coro_event_reset - clear ev.  0 or -EINVAL.  Any thread; never blocks. */
CORO_EXTERN int coro_event_reset(coro_event_t *ev);

/* coro_event_is_set - 1 when set, 0 when not, -EINVAL.  Never blocks. */
CORO_EXTERN int coro_event_is_set(coro_event_t *ev);

/* coro_event_wait - awaitable: until ev is set.  Result 0, -ETIMEDOUT,
 * -ECANCELED, -ENOMEM (no memory for its timer), -EINVAL (bad ev or
 * timeout).  Selectable. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_event_wait(coro_event_t *ev, int64_t timeout_ns);

/* coro_event_wait_blocking - the same for a plain thread: blocks.  0,
 * -ETIMEDOUT, -EINVAL, -EDEADLK (called from a job). */
CORO_EXTERN int coro_event_wait_blocking(coro_event_t *ev, int64_t timeout_ns);

/* ---- wait group ---------------------------------------------------------------
 * A counter; waiters complete when it is zero (Go's sync.WaitGroup). */
typedef struct coro_waitgroup {
    uint32_t magic;     /* private */
    uint32_t pad;       /* private */
    int64_t count;      /* private */
} coro_waitgroup_t;

/* coro_waitgroup_init - count 0.  0 or -EINVAL.  Never blocks. */
CORO_EXTERN int coro_waitgroup_init(coro_waitgroup_t *wg);

/* coro_waitgroup_destroy - 0; -EBUSY while waited on; -EINVAL. */
CORO_EXTERN int coro_waitgroup_destroy(coro_waitgroup_t *wg);

/* coro_waitgroup_add - add n (may be negative) to the count; at zero every
 * waiter is woken.  Returns the new count (>= 0), or -EINVAL (NULL, not
 * initialised, or the count would go below zero or above INT64_MAX - any
 * n, INT64_MIN included: then nothing changes).
 * Any thread or job; never blocks. */
CORO_EXTERN int64_t coro_waitgroup_add(coro_waitgroup_t *wg, int64_t n);

/* coro_waitgroup_done - coro_waitgroup_add(wg, -1). */
CORO_EXTERN int64_t coro_waitgroup_done(coro_waitgroup_t *wg);

/* coro_waitgroup_wait - awaitable: until the count is zero.  Result 0,
 * -ETIMEDOUT, -ECANCELED, -ENOMEM, -EINVAL (bad wg or timeout). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_waitgroup_wait(coro_waitgroup_t *wg, int64_t timeout_ns);

/* coro_waitgroup_wait_blocking - the same for a plain thread: blocks.  0,
 * -ETIMEDOUT, -EINVAL, -EDEADLK. */
CORO_EXTERN int coro_waitgroup_wait_blocking(coro_waitgroup_t *wg, int64_t timeout_ns);

/* ---- mutex ----------------------------------------------------------------------
 * Not recursive.  FIFO hand-off: unlock gives the mutex straight to the
 * oldest waiter, so no waiter starves and nobody can barge in.
 * OWNERSHIP: a job owns the mutex (the whole job, whatever frame of a
 * coro_call chain locked it), a plain thread owns it as that thread.  So a
 * job may lock on one worker and unlock after resuming on another.  Lock,
 * try_lock and unlock need the same thing: the mutex; each finds who calls
 * by itself (the running job, else the plain thread).  A mutex held by a
 * job that finishes stays locked. */
typedef struct coro_mutex {
    uint32_t magic;     /* private */
    uint32_t pad;       /* private */
    uintptr_t owner;    /* private: the owning job, or a thread token (odd), 0 free */
} coro_mutex_t;

/* coro_mutex_init - unlocked.  0 or -EINVAL. */
CORO_EXTERN int coro_mutex_init(coro_mutex_t *m);

/* coro_mutex_destroy - 0; -EBUSY when locked or waited on; -EINVAL. */
CORO_EXTERN int coro_mutex_destroy(coro_mutex_t *m);

/* coro_mutex_lock - awaitable: take m.  Result 0 (the job owns m),
 * -ETIMEDOUT, -ECANCELED, -ENOMEM (the job does not own it then), -EDEADLK
 * (the job already owns m), -EINVAL (bad m or timeout).  Always suspends briefly (the owner is only
 * known once the job is suspended) but continues at once when m is free. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_mutex_lock(coro_mutex_t *m, int64_t timeout_ns);

/* coro_mutex_lock_blocking - the same for a plain thread: blocks.  0,
 * -ETIMEDOUT, -EDEADLK (called from a job, or the thread owns m), -EINVAL. */
CORO_EXTERN int coro_mutex_lock_blocking(coro_mutex_t *m, int64_t timeout_ns);

/* coro_mutex_try_lock - take m if free, for the caller (the running job,
 * else the plain thread).  0, -EAGAIN (held), -EDEADLK (caller holds it),
 * -EINVAL.  Never blocks. */
CORO_EXTERN int coro_mutex_try_lock(coro_mutex_t *m);

/* coro_mutex_trylock - the deprecated old name of coro_mutex_try_lock, with
 * its old second argument: the frame of the job that takes m (any frame of
 * it), NULL for the calling plain thread.  Still declared and exported so
 * that programs written against it compile and link; a use warns (an error
 * under -Werror). */
CORO_DEPRECATED("use coro_mutex_try_lock")
CORO_EXTERN int coro_mutex_trylock(coro_mutex_t *m, coro_t *co);

/* coro_mutex_unlock - release m; the oldest waiter, if any, now owns it.
 * The caller is the running job (whatever frame of it calls), else the
 * plain thread.  0, -EPERM (the caller does not own m: nothing changes),
 * -EINVAL.  Any thread or job; never blocks. */
CORO_EXTERN int coro_mutex_unlock(coro_mutex_t *m);

/* ---- semaphore --------------------------------------------------------------------
 * A counting semaphore; released units go to the oldest waiter first. */
typedef struct coro_sem {
    uint32_t magic;     /* private */
    uint32_t pad;       /* private */
    int64_t count;      /* private */
} coro_sem_t;

/* coro_sem_init - count n >= 0.  0 or -EINVAL (NULL, n < 0). */
CORO_EXTERN int coro_sem_init(coro_sem_t *sem, int64_t n);

/* coro_sem_destroy - 0; -EBUSY while waited on; -EINVAL. */
CORO_EXTERN int coro_sem_destroy(coro_sem_t *sem);

/* coro_sem_acquire - awaitable: take one unit.  Result 0, -ETIMEDOUT,
 * -ECANCELED, -ENOMEM, -EINVAL (bad sem or timeout). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_sem_acquire(coro_sem_t *sem, int64_t timeout_ns);

/* coro_sem_acquire_blocking - the same for a plain thread: blocks.  0,
 * -ETIMEDOUT, -EINVAL, -EDEADLK. */
CORO_EXTERN int coro_sem_acquire_blocking(coro_sem_t *sem, int64_t timeout_ns);

/* coro_sem_try_acquire - take one unit if there is one: 0, -EAGAIN,
 * -EINVAL.  Never blocks. */
CORO_EXTERN int coro_sem_try_acquire(coro_sem_t *sem);

/* coro_sem_release - give back n >= 0 units (waiters first).  Returns how
 * many waiters were woken, or -EINVAL (NULL, n < 0, count overflow).  Any
 * thread or job; never blocks. */
CORO_EXTERN int coro_sem_release(coro_sem_t *sem, int64_t n);

/* coro_sem_value - the current count (>= 0), or -EINVAL. */
CORO_EXTERN int64_t coro_sem_value(coro_sem_t *sem);

/* ---- channel ---------------------------------------------------------------------
 * A bounded MPMC FIFO of pointers (NULL is a valid item), capacity >= 1.
 * Closing it fails further sends with -EPIPE; receivers get what is
 * buffered, then -EPIPE.  The buffer is the caller's (coro_chan_init) or
 * allocated once at init (coro_chan_init_alloc): nothing is allocated on
 * send or receive. */
typedef struct coro_chan {
    uint32_t magic;         /* private */
    uint32_t closed;        /* private */
    void **buf;             /* private */
    size_t cap;             /* private */
    size_t head;            /* private: oldest item */
    size_t count;           /* private */
    const coro_alloc_t *alloc;/* private: set when init_alloc made buf */
    int owned;              /* private */
} coro_chan_t;

/* coro_chan_init - a channel over the caller's storage buf[cap] (which
 * must outlive the channel).  0 or -EINVAL (NULL ch or buf, cap 0). */
CORO_EXTERN int coro_chan_init(coro_chan_t *ch, void **buf, size_t cap);

/* coro_chan_init_alloc - the same, with a buffer of cap slots from alloc
 * (NULL = malloc; see coro_alloc_t: it must outlive the channel), freed
 * by coro_chan_destroy.  0, -EINVAL, -ENOMEM (then
 * ch is not initialised). */
CORO_EXTERN int coro_chan_init_alloc(coro_chan_t *ch, size_t cap, const coro_alloc_t *alloc);

/* coro_chan_destroy - 0 (buffered items are dropped); -EBUSY while a job
 * or thread waits on ch (ch stays valid: close it first); -EINVAL. */
CORO_EXTERN int coro_chan_destroy(coro_chan_t *ch);

/* coro_chan_send - awaitable: put item, waiting for room.  Result 0,
 * -EPIPE (closed, before or while waiting: item not sent), -ETIMEDOUT,
 * -ECANCELED, -ENOMEM (item not sent), -EINVAL (bad ch or timeout).
 * Selectable. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_chan_send(coro_chan_t *ch, void *item, int64_t timeout_ns);

/* coro_chan_recv - awaitable: take the oldest item into *out.  Result 0,
 * -EPIPE (closed and empty), -ETIMEDOUT, -ECANCELED, -ENOMEM (nothing
 * taken), -EINVAL (NULL ch or out, bad timeout).  out must stay valid until the await completes.  Selectable. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_chan_recv(coro_chan_t *ch, void **out, int64_t timeout_ns);

/* coro_chan_send_blocking - coro_chan_send for a plain thread: blocks.
 * -EDEADLK from a job. */
CORO_EXTERN int coro_chan_send_blocking(coro_chan_t *ch, void *item, int64_t timeout_ns);

/* coro_chan_recv_blocking - coro_chan_recv for a plain thread: blocks.
 * -EDEADLK from a job. */
CORO_EXTERN int coro_chan_recv_blocking(coro_chan_t *ch, void **out, int64_t timeout_ns);

/* coro_chan_try_send - never blocks: 0, -EAGAIN (full), -EPIPE (closed),
 * -EINVAL.  Any thread or job. */
CORO_EXTERN int coro_chan_try_send(coro_chan_t *ch, void *item);

/* coro_chan_try_recv - never blocks: 0, -EAGAIN (empty), -EPIPE (closed
 * and empty), -EINVAL.  Any thread or job. */
CORO_EXTERN int coro_chan_try_recv(coro_chan_t *ch, void **out);

/* coro_chan_close - close ch and wake every waiter (their sends, and their
 * receives once ch is empty, fail with EPIPE).  0 (also when ch was
 * already closed: a second close does nothing, as a second coro_cancel),
 * -EINVAL.  Never blocks. */
CORO_EXTERN int coro_chan_close(coro_chan_t *ch);

/* coro_chan_len / coro_chan_cap - items buffered / capacity, or -EINVAL. */
CORO_EXTERN intptr_t coro_chan_len(coro_chan_t *ch);
CORO_EXTERN intptr_t coro_chan_cap(coro_chan_t *ch);

/* ---- typed channels ---------------------------------------------------------------
 * CORO_CHAN_TYPED(name, T), at file scope, declares name_t: a coro_chan_t
 * of T values (T no bigger than a pointer: an int, an fd, an enum, a
 * pointer to a struct), with static inline wrappers that the compiler
 * checks - sending a T into another channel type, or receiving into the
 * wrong slot, does not compile - over the void * API underneath.  A
 * value is boxed by its bytes, not cast to a pointer, so every value is
 * an item: an fd of 0 is not NULL and needs no offset.  Every wrapper
 * has the contract of the coro_chan_* call it wraps:
 *     name_init_alloc(c, cap, alloc), name_destroy(c), name_close(c)
 *     name_send(c, T v, timeout_ns)           awaitable
 *     name_recv(c, name_slot_t *slot, timeout_ns)  awaitable; then
 *     name_value(slot) is the T received (keep the slot in the frame)
 *     name_send_blocking(c, T v, timeout_ns), name_recv_blocking(c, T *out, timeout_ns)
 *     name_try_send(c, T v), name_try_recv(c, T *out)
 *     name_raw(c): the coro_chan_t underneath (coro_select_recv with
 *     (void **)&slot->raw, coro_chan_len ...)
 *
 *     CORO_CHAN_TYPED(fdchan, int);
 *     struct acceptor { coro_t co; fdchan_t *conns; fdchan_slot_t got; ... };
 *     CORO_AWAIT(co, fdchan_recv(a->conns, &a->got, CORO_FOREVER));
 *     if (CORO_RESULT(co) == 0) serve(fdchan_value(&a->got));
 */
/* clang warns of a static function unused in the file that defines it:
 * the macro defines them all, a program uses a few */
#if defined(__GNUC__) || defined(__clang__)
# define CORO__TYPED_FN_ __attribute__((unused))
#else
# define CORO__TYPED_FN_
#endif
#define CORO_CHAN_TYPED(name, T)                                                        \
    CORO_STATIC_ASSERT(sizeof(T) <= sizeof(void *),                                     \
                       "CORO_CHAN_TYPED: " #T " is bigger than a pointer: send a pointer to it"); \
    typedef struct name { coro_chan_t raw; } name##_t;                                  \
    typedef struct name##_slot { void *raw; } name##_slot_t;                            \
    CORO__TYPED_FN_ static inline void *name##_box_(T v)                                                \
    {                                                                                   \
        void *p = 0;                                                                    \
        memcpy(&p, &v, sizeof v);                                                       \
        return p;                                                                       \
    }                                                                                   \
    CORO__TYPED_FN_ static inline T name##_unbox_(void *p)                                              \
    {                                                                                   \
        T v;                                                                            \
        memcpy(&v, &p, sizeof v);                                                       \
        return v;                                                                       \
    }                                                                                   \
    CORO__TYPED_FN_ static inline T name##_value(const name##_slot_t *slot)                             \
    {                                                                                   \
        return name##_unbox_(slot->raw);                                                \
    }                                                                                   \
    CORO__TYPED_FN_ static inline coro_chan_t *name##_raw(name##_t *c) { return &c->raw; }              \
    CORO__TYPED_FN_ static inline int name##_init_alloc(name##_t *c, size_t cap, const coro_alloc_t *alloc) \
    {                                                                                   \
        return coro_chan_init_alloc(&c->raw, cap, alloc);                               \
    }                                                                                   \
    CORO__TYPED_FN_ static inline int name##_destroy(name##_t *c) { return coro_chan_destroy(&c->raw); } \
    CORO__TYPED_FN_ static inline int name##_close(name##_t *c) { return coro_chan_close(&c->raw); }    \
    CORO_NODISCARD CORO__TYPED_FN_ static inline coro_await_t name##_send(name##_t *c, T v, int64_t timeout_ns) \
    {                                                                                   \
        return coro_chan_send(&c->raw, name##_box_(v), timeout_ns);                     \
    }                                                                                   \
    CORO_NODISCARD CORO__TYPED_FN_ static inline coro_await_t name##_recv(name##_t *c, name##_slot_t *slot, \
                                                          int64_t timeout_ns)           \
    {                                                                                   \
        return coro_chan_recv(&c->raw, &slot->raw, timeout_ns);                         \
    }                                                                                   \
    CORO__TYPED_FN_ static inline int name##_send_blocking(name##_t *c, T v, int64_t timeout_ns)        \
    {                                                                                   \
        return coro_chan_send_blocking(&c->raw, name##_box_(v), timeout_ns);            \
    }                                                                                   \
    CORO__TYPED_FN_ static inline int name##_recv_blocking(name##_t *c, T *out, int64_t timeout_ns)     \
    {                                                                                   \
        void *p = 0;                                                                    \
        int rc = coro_chan_recv_blocking(&c->raw, &p, timeout_ns);                      \
        if (rc == 0)                                                                    \
            *out = name##_unbox_(p);                                                    \
        return rc;                                                                      \
    }                                                                                   \
    CORO__TYPED_FN_ static inline int name##_try_send(name##_t *c, T v)                                 \
    {                                                                                   \
        return coro_chan_try_send(&c->raw, name##_box_(v));                             \
    }                                                                                   \
    CORO__TYPED_FN_ static inline int name##_try_recv(name##_t *c, T *out)                              \
    {                                                                                   \
        void *p = 0;                                                                    \
        int rc = coro_chan_try_recv(&c->raw, &p);                                       \
        if (rc == 0)                                                                    \
            *out = name##_unbox_(p);                                                    \
        return rc;                                                                      \
    }                                                                                   \
    typedef int name##_declared_

/* ---- read-write lock --------------------------------------------------------------
 * Many readers or one writer.  Not recursive (a holder that asks again
 * may wait forever; a writer asking again gets -EDEADLK).
 * POLICY (Go's sync.RWMutex): writers are preferred - a reader that comes
 * while a writer holds the lock or waits for it waits too, so a stream of
 * readers cannot starve a writer - and readers are not starved either:
 * when a writer lets go, every reader waiting at that moment gets the lock
 * together before the next writer, and when the last reader lets go the
 * oldest waiting writer gets it.  So writers and batches of readers take
 * turns; writers among themselves are FIFO.  The lock is handed over: a
 * released lock goes straight to its next holders, nobody barges in.
 * A writer that stops waiting (timeout, cancel, an unchosen select branch)
 * lets in at once the readers that waited only because of it.
 * OWNERSHIP: a write lock is owned as a mutex is (coro_mutex_t: the whole
 * job, or the plain thread), so coro_sched_dump can name its holder and
 * write_unlock can refuse a non-owner; read holds are anonymous (a count).
 * A lock held by a job that finishes stays held. */
typedef struct coro_rwlock {
    uint32_t magic;     /* private */
    uint32_t readers;   /* private: read holds */
    uintptr_t writer;   /* private: the write holder (as coro_mutex_t.owner), 0 none */
} coro_rwlock_t;

/* coro_rwlock_init - unlocked.  0 or -EINVAL (NULL).  Never blocks. */
CORO_EXTERN int coro_rwlock_init(coro_rwlock_t *rw);

/* coro_rwlock_destroy - 0; -EBUSY while held or waited on (rw stays
 * valid); -EINVAL (NULL or not initialised).  Never blocks. */
CORO_EXTERN int coro_rwlock_destroy(coro_rwlock_t *rw);

/* coro_rwlock_read_lock - awaitable: take a read hold.  Tries at once (a
 * free lock, or one read-held with no writer waiting, is taken there).
 * Result 0 (the job holds a read hold), -ETIMEDOUT, -ECANCELED, -ENOMEM
 * (nothing held then), -EDEADLK (the job holds the write lock), -EAGAIN
 * (2^32 - 1 read holds already), -EINVAL (bad rw or timeout).  Selectable
 * (coro_select_read_lock). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_rwlock_read_lock(coro_rwlock_t *rw, int64_t timeout_ns);

/* coro_rwlock_write_lock - awaitable: take the write lock for the job.
 * Tries at once.  Result 0 (the job owns it), -ETIMEDOUT, -ECANCELED,
 * -ENOMEM (nothing held then), -EDEADLK (the job owns it already),
 * -EINVAL.  Selectable (coro_select_write_lock). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_rwlock_write_lock(coro_rwlock_t *rw, int64_t timeout_ns);

/* coro_rwlock_read_lock_blocking / coro_rwlock_write_lock_blocking - the
 * same for a plain thread: block.  0, -ETIMEDOUT, -EDEADLK (called from a
 * job, or the thread owns the write lock), -EAGAIN (read: too many
 * holds), -EINVAL. */
CORO_EXTERN int coro_rwlock_read_lock_blocking(coro_rwlock_t *rw, int64_t timeout_ns);
CORO_EXTERN int coro_rwlock_write_lock_blocking(coro_rwlock_t *rw, int64_t timeout_ns);

/* coro_rwlock_try_read_lock / coro_rwlock_try_write_lock - take it if that
 * needs no wait, for the caller (the running job, else the plain thread).
 * 0, -EAGAIN (not now: held, or - read - a writer waits; or too many read
 * holds), -EDEADLK (the caller owns the write lock), -EINVAL.  Never
 * block; any thread or job. */
CORO_EXTERN int coro_rwlock_try_read_lock(coro_rwlock_t *rw);
CORO_EXTERN int coro_rwlock_try_write_lock(coro_rwlock_t *rw);

/* coro_rwlock_read_unlock - give back one read hold (the next holders, if
 * it was the last, get the lock).  0, -EPERM (no read hold: nothing
 * changes), -EINVAL.  Any thread or job; never blocks.  Read holds are
 * not owned: the caller's own hold is the caller's business. */
CORO_EXTERN int coro_rwlock_read_unlock(coro_rwlock_t *rw);

/* coro_rwlock_write_unlock - give back the write lock (the next holders
 * get it).  The caller is the running job (whatever frame of it calls),
 * else the plain thread.  0, -EPERM (the caller does not own it: nothing
 * changes), -EINVAL.  Any thread or job; never blocks. */
CORO_EXTERN int coro_rwlock_write_unlock(coro_rwlock_t *rw);

/* ---- broadcast channel ------------------------------------------------------------
 * Every receiver gets every item (tokio's broadcast): a bounded ring of
 * the last cap items (pointers; NULL is a valid item).  A send never
 * waits: it overwrites the oldest item, so a receiver that falls more
 * than cap items behind loses the oldest ones and is TOLD: its next
 * receive gives -EOVERFLOW instead of an item, coro_bcast_missed(rx) says
 * how many it lost, and the receive after that gives the oldest item still
 * kept.  A receiver that keeps within cap items of the senders loses
 * nothing.  Receivers are caller-owned coro_bcast_rx_t structs: subscribe
 * one (it sees the items sent after that), receive with it from one job
 * or thread at a time, unsubscribe it.  Closing fails further sends with
 * -EPIPE; each receiver gets what it has not yet received, then -EPIPE.
 * The ring is the caller's (coro_bcast_init) or allocated once at init
 * (coro_bcast_init_alloc): nothing is allocated on send or receive. */
typedef struct coro_bcast {
    uint32_t magic;             /* private */
    uint32_t closed;            /* private */
    void **buf;                 /* private: buf[seq % cap] holds item seq */
    size_t cap;                 /* private */
    uint64_t tail;              /* private: the seq of the next item sent */
    uint64_t receivers;         /* private: subscribed */
    const coro_alloc_t *alloc;  /* private: set when init_alloc made buf */
    int owned;                  /* private */
} coro_bcast_t;

typedef struct coro_bcast_rx {
    uint32_t magic;             /* private */
    uint32_t pad;               /* private */
    coro_bcast_t *bc;           /* private */
    uint64_t next;              /* private: the seq it receives next */
    uint64_t missed;            /* private: what its last -EOVERFLOW lost */
} coro_bcast_rx_t;

/* coro_bcast_init - a broadcast channel over the caller's storage
 * buf[cap] (which must outlive it).  0 or -EINVAL (NULL bc or buf, cap 0).
 * coro_bcast_init_alloc - the same with cap slots from alloc (NULL =
 * malloc), freed by coro_bcast_destroy: 0, -EINVAL, -ENOMEM (then bc is
 * not initialised).  Never block. */
CORO_EXTERN int coro_bcast_init(coro_bcast_t *bc, void **buf, size_t cap);
CORO_EXTERN int coro_bcast_init_alloc(coro_bcast_t *bc, size_t cap, const coro_alloc_t *alloc);

/* coro_bcast_destroy - 0; -EBUSY while a receiver is subscribed (bc stays
 * valid: unsubscribe them first); -EINVAL. */
CORO_EXTERN int coro_bcast_destroy(coro_bcast_t *bc);

/* coro_bcast_subscribe - make rx a receiver of bc, starting with the next
 * item sent.  0, -EINVAL (NULL, bc not initialised, rx already
 * subscribed), -EPIPE (bc closed).  Any thread or job; never blocks. */
CORO_EXTERN int coro_bcast_subscribe(coro_bcast_t *bc, coro_bcast_rx_t *rx);

/* coro_bcast_unsubscribe - rx receives no more (what it did not receive
 * is dropped for it); rx may then be reused or freed.  0, -EBUSY (a job or
 * thread waits in a receive on rx: nothing changes), -EINVAL (not
 * subscribed).  Never blocks. */
CORO_EXTERN int coro_bcast_unsubscribe(coro_bcast_rx_t *rx);

/* coro_bcast_send - put item in the ring for every receiver, waking the
 * receivers that wait; never waits (a lagging receiver loses its oldest
 * item instead).  Returns the number of receivers subscribed (0: the item
 * is kept for nobody), -EPIPE (closed), -EINVAL.  Any thread or job. */
CORO_EXTERN int64_t coro_bcast_send(coro_bcast_t *bc, void *item);

/* coro_bcast_recv - awaitable: the next item for rx into *out.  Tries at
 * once.  Result 0 (*out set), -EOVERFLOW (rx fell more than cap items
 * behind: coro_bcast_missed tells how many it lost; the next receive gives
 * the oldest kept), -EPIPE (closed and rx has received everything),
 * -ETIMEDOUT, -ECANCELED, -ENOMEM (nothing received), -EINVAL (NULL or
 * unsubscribed rx, NULL out, bad timeout).  out must stay valid until the
 * await completes.  One receive at a time per rx. */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_bcast_recv(coro_bcast_rx_t *rx, void **out, int64_t timeout_ns);

/* coro_bcast_recv_blocking - the same for a plain thread: blocks.
 * -EDEADLK from a job.  coro_bcast_try_recv - never blocks: 0,
 * -EOVERFLOW, -EAGAIN (nothing new), -EPIPE, -EINVAL. */
CORO_EXTERN int coro_bcast_recv_blocking(coro_bcast_rx_t *rx, void **out, int64_t timeout_ns);
CORO_EXTERN int coro_bcast_try_recv(coro_bcast_rx_t *rx, void **out);

/* coro_bcast_missed - how many items rx lost at its last EOVERFLOW
 * (>= 1), 0 if it never lagged; -EINVAL.  coro_bcast_close - close bc
 * and wake every waiting receiver (their receives give EPIPE: they had
 * received everything); 0 (a second close does nothing), -EINVAL.  Never
 * block. */
CORO_EXTERN int64_t coro_bcast_missed(const coro_bcast_rx_t *rx);
CORO_EXTERN int coro_bcast_close(coro_bcast_t *bc);

/* ---- select ---------------------------------------------------------------------
 * Wait for the first of up to CORO_SELECT_MAX branches: channel receive,
 * channel send, event, a job's end, fd readable, fd writable, a timer,
 * semaphore acquire, read or write lock of a coro_rwlock_t.
 * Exactly one branch completes, the others are withdrawn untouched (an
 * unchosen receive takes no item, an unchosen send puts none, an unchosen
 * fd branch consumes no readiness: the next wait on that fd still sees
 * it).  A coroutine cannot sit on several wait lists with its one frame
 * header, so the select struct carries one stand-in node per branch:
 * keep it in the frame (or anywhere that outlives the wait).  It is big
 * (sizeof(coro_select_t): 16 nodes of 128 bytes + 16): a frame that holds
 * one is a heap or pool frame rather than a stack variable.
 *
 *     coro_select_init(&f->sel);
 *     coro_select_recv(&f->sel, &f->jobs, &f->item);      branch 0
 *     coro_select_event(&f->sel, &f->quit);               branch 1
 *     coro_select_readable(&f->sel, NULL, f->sock);       branch 2
 *     for (;;) {
 *         CORO_SELECT(co, &f->sel, CORO_FOREVER);
 *         if (CORO_RESULT(co) == 1) break;                quit was set
 *         if (coro_select_result(&f->sel, 0) < 0) break;  -EPIPE: closed
 *         ... use f->item, or read f->sock ...
 *     }
 *
 * Branches stay in place between selects: build them once, select in a
 * loop.  Ties (several ready at once) go to the lowest index.  The
 * select's overall timeout ends it with -ETIMEDOUT; a timer branch
 * (coro_select_timer) is chosen like any branch when its deadline comes. */
#define CORO_SELECT_MAX 16

typedef struct coro_select {
    coro_t node[CORO_SELECT_MAX];   /* private: per-branch stand-ins */
    uint32_t magic;                 /* private */
    uint32_t n;                     /* private: branches */
    uint32_t state;                 /* private: under the select's lot bucket */
    uint32_t pad;                   /* private */
} coro_select_t;

/* coro_select_init - no branches.  0 or -EINVAL.  Never blocks. */
CORO_EXTERN int coro_select_init(coro_select_t *sel);

/* coro_select_recv / coro_select_send / coro_select_event - add a branch;
 * returns its index (0, 1, ...), or -EINVAL (NULL or invalid object, NULL
 * out), -ENOSPC (CORO_SELECT_MAX branches already).  For a send, the item
 * is sent only if that branch is chosen.  Not while a select waits. */
CORO_EXTERN int coro_select_recv(coro_select_t *sel, coro_chan_t *ch, void **out);
CORO_EXTERN int coro_select_send(coro_select_t *sel, coro_chan_t *ch, void *item);
CORO_EXTERN int coro_select_event(coro_select_t *sel, coro_event_t *ev);

/* coro_select_acquire - add a branch that takes one unit of sem (taken
 * only if that branch is chosen).  coro_select_read_lock /
 * coro_select_write_lock - add a branch that takes a read hold / the
 * write lock of rw (the write lock owned by the job that selects, or the
 * plain thread of coro_select_blocking); taken only if chosen, and an
 * unchosen write branch that waited holds no reader back afterwards.
 * Their coro_select_result: 0, or EDEADLK / EAGAIN, negated, as the
 * awaitables.  Index, -EINVAL (NULL or invalid sel or object), -ENOSPC.
 * Not while a select waits. */
CORO_EXTERN int coro_select_acquire(coro_select_t *sel, coro_sem_t *sem);
CORO_EXTERN int coro_select_read_lock(coro_select_t *sel, coro_rwlock_t *rw);
CORO_EXTERN int coro_select_write_lock(coro_select_t *sel, coro_rwlock_t *rw);

/* coro_select_done - add a branch on job's end: chosen when job finishes
 * (at once if it has); coro_select_result gives the job's own result.
 * Index, -EINVAL (NULL sel or job, a frame never spawned or a coro_call
 * child), -ENOSPC.  A pool frame (coro_frame_alloc) may be given back when
 * it finishes: select on its end only while it cannot have finished
 * unseen, as for coro_done.  Not while a select waits. */
CORO_EXTERN int coro_select_done(coro_select_t *sel, coro_t *job);

/* coro_select_readable / coro_select_writable - add a branch chosen when
 * fd is readable (data, end of file, a pending connection, an error or
 * hang-up) / writable; like coro_readable, it never reads or writes.  s is
 * the scheduler whose I/O layer watches fd; NULL = the calling job's, or,
 * outside a job, the scheduler of the job that first selects on it (a
 * plain thread's coro_select_blocking has none: it gives EINVAL).  Index,
 * -EBADF (fd < 0), -EINVAL (bad sel), -ENOSPC.  When the select waits, an
 * fd that cannot be polled, is closed (coro_close) or already has a waiter
 * in that direction chooses the branch with coro_select_result EPERM,
 * EBADF or EBUSY (negated).  Not while a select waits.  A readable branch
 * is chosen only when poll(2) says so at that moment; the next coro_read
 * (timeout 0 included) or coro_accept then calls the kernel and, unless
 * another job read first, gets data, 0 or the error, never ETIMEDOUT
 * (docs/io.md, "When a system call is skipped"). */
CORO_EXTERN int coro_select_readable(coro_select_t *sel, coro_sched_t *s, int fd);
CORO_EXTERN int coro_select_writable(coro_select_t *sel, coro_sched_t *s, int fd);

/* coro_select_timer - add a branch chosen when coro_now() reaches
 * deadline_ns (absolute ns; a past one is chosen at once, unless an
 * earlier branch is ready; CORO_NO_DEADLINE: never, the branch is
 * disarmed).  coro_select_set_timer moves it (for a loop: the next tick)
 * or disarms it.  Index / 0, -EINVAL (bad sel, negative deadline, branch not a
 * timer), -ENOSPC.  Not while a select waits. */
CORO_EXTERN int coro_select_timer(coro_select_t *sel, int64_t deadline_ns);
CORO_EXTERN int coro_select_set_timer(coro_select_t *sel, int branch, int64_t deadline_ns);

/* CORO_SELECT(co, sel, timeout) - in a coroutine: wait until one branch
 * completes.  CORO_RESULT(co) is its index, or -ETIMEDOUT, -ECANCELED,
 * -ENOMEM (no memory for its timer: no branch happened), -EINVAL (no
 * branches, bad timeout).  A statement, like CORO_AWAIT. */
#define CORO_SELECT(co, sel, timeout)                                       \
    do {                                                                    \
        CORO_AWAIT(co, coro_select(sel, timeout));                          \
        (co)->result = coro_select_end(sel, (co)->result);                  \
    } while (0)

/* coro_select - the awaitable under CORO_SELECT; use the macro: the
 * withdrawal of the other branches (coro_select_end) must follow it.
 * Result: the chosen branch's index, or -ETIMEDOUT, -ECANCELED, -ENOMEM,
 * -EINVAL (as CORO_SELECT). */
CORO_NODISCARD CORO_EXTERN coro_await_t coro_select(coro_select_t *sel, int64_t timeout_ns);
CORO_EXTERN intptr_t coro_select_end(coro_select_t *sel, intptr_t rc);

/* coro_select_blocking - the same for a plain thread: blocks.  Returns the
 * branch index, or -ETIMEDOUT, -EINVAL (no branches, bad timeout, an fd
 * branch added with s NULL outside a job), -EDEADLK (from a job). */
CORO_EXTERN int coro_select_blocking(coro_select_t *sel, int64_t timeout_ns);

/* coro_select_result - the chosen branch's own result (0; EPIPE, negated,
 * for a closed channel; the job's result for coro_select_done; EBADF,
 * EBUSY, EPERM, negated, for an fd branch), valid after it was chosen;
 * -EINVAL for a bad index. */
CORO_EXTERN intptr_t coro_select_result(const coro_select_t *sel, int branch);

#ifdef __cplusplus
}
#endif
#endif
