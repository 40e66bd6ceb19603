/* SPDX-License-Identifier: MIT */
/* coro_select branches on a semaphore and on a read-write lock, and
 * coro_sched_dump naming who holds the mutex or lock a job waits for -
 * on 0 and 2 workers. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corokit.h>
#include "lockjob.h"

static const int nworkers[] = { 0, 2 };
#define NW 2

struct selj {
    coro_t co;
    coro_select_t sel;
    coro_sem_t *sem;
    coro_rwlock_t *rw;
    coro_event_t *ev;
    int write;
    intptr_t chosen, res;
};

/* one select: a lock (or a unit) against an event; lets go of what it took */
static int selj_body(coro_t *co)
{
    struct selj *f = CORO_SELF(co, struct selj);
    CORO_BEGIN(co);
    coro_select_init(&f->sel);
    if (f->sem)
        coro_select_acquire(&f->sel, f->sem);
    else if (f->write)
        coro_select_write_lock(&f->sel, f->rw);
    else
        coro_select_read_lock(&f->sel, f->rw);
    coro_select_event(&f->sel, f->ev);
    CORO_SELECT(co, &f->sel, CORO_FOREVER);
    f->chosen = CORO_RESULT(co);
    f->res = coro_select_result(&f->sel, 0);
    if (f->chosen == 0 && f->rw)
        CORO_RETURN(co, f->write ? coro_rwlock_write_unlock(f->rw) : coro_rwlock_read_unlock(f->rw));
    CORO_END(co);
}

Test(select_locks, a_semaphore_branch_takes_a_unit_only_when_chosen, .timeout = 30)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_sem_t sem;
        coro_event_t ev;
        struct selj a = { 0 }, b = { 0 };

        coro_sem_init(&sem, 0);
        coro_event_init(&ev);
        a.sem = b.sem = &sem;
        a.ev = b.ev = &ev;
        cr_assert_eq(coro_spawn(s, &a.co, selj_body, NULL), 0);
        settle(s);
        cr_assert(parked_on(&a.co, (char *)&a.sel + 1), "the select never waited");
        cr_assert_eq(coro_sem_release(&sem, 1), 1);
        cr_assert_eq(join_r(&a.co), 0);
        cr_assert_eq(a.chosen, 0);
        cr_assert_eq(coro_sem_value(&sem), 0, "the unit went to the branch");
        coro_event_set(&ev);
        cr_assert_eq(coro_spawn(s, &b.co, selj_body, NULL), 0);
        cr_assert_eq(join_r(&b.co), 0);
        cr_assert_eq(b.chosen, 1);
        cr_assert_eq(coro_sem_value(&sem), 0);
        cr_assert_eq(coro_sem_release(&sem, 1), 0);
        cr_assert_eq(coro_sem_value(&sem), 1, "an unchosen branch took nothing");
        cr_assert_eq(coro_sem_destroy(&sem), 0);
        fin(s);
    }
}

/* a write branch waits while a thread reads; its event wins; the unchosen
 * write branch, withdrawn, no longer holds back the reader behind it */
Test(select_locks, an_unchosen_write_branch_takes_nothing_and_lets_readers_in, .timeout = 30)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        coro_event_t ev;
        struct selj w = { .write = 1 };
        struct lk r = { .id = 2 };

        coro_rwlock_init(&rw);
        coro_event_init(&ev);
        w.rw = &rw;
        w.ev = &ev;
        cr_assert_eq(coro_rwlock_read_lock_blocking(&rw, CORO_FOREVER), 0);
        cr_assert_eq(coro_spawn(s, &w.co, selj_body, NULL), 0);
        settle(s);
        cr_assert(parked_on(&w.co, (char *)&w.sel + 1), "the select never waited");
        lk_spawn(s, &r, &rw, RD, NULL);
        lk_parked(s, &r);
        coro_event_set(&ev);
        cr_assert_eq(join_r(&w.co), 0);
        cr_assert_eq(w.chosen, 1);
        cr_assert_eq(lk_got(s, &r), 0, "the reader waited for a branch that was withdrawn");
        cr_assert_eq(join_r(&r.co), 0);
        cr_assert_eq(coro_rwlock_read_unlock(&rw), 0);
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
    }
}

Test(select_locks, read_and_write_branches_take_the_lock_when_chosen, .timeout = 30)
{
    for (int k = 0; k < NW; k++) {
        coro_sched_t *s = mk(nworkers[k]);
        coro_rwlock_t rw;
        coro_event_t ev;
        struct selj w = { .write = 1 }, r = { 0 };

        coro_rwlock_init(&rw);
        coro_event_init(&ev);
        w.rw = r.rw = &rw;
        w.ev = r.ev = &ev;
        cr_assert_eq(coro_rwlock_write_lock_blocking(&rw, CORO_FOREVER), 0);
        cr_assert_eq(coro_spawn(s, &w.co, selj_body, NULL), 0);
        settle(s);
        cr_assert(parked_on(&w.co, (char *)&w.sel + 1));
        cr_assert_eq(coro_spawn(s, &r.co, selj_body, NULL), 0);
        settle(s);
        cr_assert(parked_on(&r.co, (char *)&r.sel + 1));
        /* readers first after a write unlock, then the writer */
        cr_assert_eq(coro_rwlock_write_unlock(&rw), 0);
        cr_assert_eq(join_r(&r.co), 0, "the read branch's job unlocked");
        cr_assert_eq(join_r(&w.co), 0, "the write branch's job owned it");
        cr_assert_eq(r.chosen, 0);
        cr_assert_eq(w.chosen, 0);
        cr_assert_eq(coro_rwlock_destroy(&rw), 0);
        fin(s);
    }
}

Test(select_locks, bad_objects_give_einval, .timeout = 10)
{
    coro_select_t sel;
    coro_sem_t bad;
    coro_rwlock_t badrw;
    memset(&bad, 0, sizeof bad);
    memset(&badrw, 0, sizeof badrw);
    coro_select_init(&sel);
    cr_assert_eq(coro_select_acquire(&sel, NULL), -EINVAL);
    cr_assert_eq(coro_select_acquire(&sel, &bad), -EINVAL);
    cr_assert_eq(coro_select_read_lock(&sel, &badrw), -EINVAL);
    cr_assert_eq(coro_select_write_lock(&sel, NULL), -EINVAL);
    cr_assert_eq(coro_select_acquire(NULL, NULL), -EINVAL);
}

/* ---- the dump names the holder ------------------------------------------------------- */

struct holder {
    coro_t co;
    coro_mutex_t *m;
    coro_rwlock_t *rw;
    coro_event_t *ev;
};

static int holder_body(coro_t *co)
{
    struct holder *f = CORO_SELF(co, struct holder);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
    CORO_AWAIT(co, coro_rwlock_write_lock(f->rw, CORO_FOREVER));
    CORO_AWAIT(co, coro_event_wait(f->ev, CORO_FOREVER));
    coro_rwlock_write_unlock(f->rw);
    coro_mutex_unlock(f->m);
    CORO_END(co);
}

struct mwait {
    coro_t co;
    coro_mutex_t *m;
};

static int mwait_body(coro_t *co)
{
    struct mwait *f = CORO_SELF(co, struct mwait);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_mutex_lock(f->m, CORO_FOREVER));
    if (CORO_RESULT(co) == 0)
        coro_mutex_unlock(f->m);
    CORO_END(co);
}

static void dump_of(coro_sched_t *s, char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    cr_assert(f);
    cr_assert_geq(coro_sched_dump(s, f), 0);
    fclose(f);
}

Test(select_locks, the_dump_names_the_job_that_holds_a_mutex_or_write_lock, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    coro_mutex_t m, tm;
    coro_rwlock_t rw;
    coro_event_t ev;
    struct holder h = { .m = &m, .rw = &rw, .ev = &ev };
    struct mwait mw = { .m = &m }, tw = { .m = &tm };
    struct lk r = { .id = 3 };
    char want[64];

    coro_mutex_init(&m);
    coro_mutex_init(&tm);
    coro_rwlock_init(&rw);
    coro_event_init(&ev);
    cr_assert_eq(coro_spawn(s, &h.co, holder_body, NULL), 0);
    cr_assert(parked_on(&h.co, &ev));
    cr_assert_eq(coro_spawn(s, &mw.co, mwait_body, NULL), 0);
    cr_assert(parked_on(&mw.co, &m));
    lk_spawn(s, &r, &rw, RD, NULL);
    lk_parked(s, &r);
    cr_assert_eq(coro_mutex_lock_blocking(&tm, CORO_FOREVER), 0);
    cr_assert_eq(coro_spawn(s, &tw.co, mwait_body, NULL), 0);
    cr_assert(parked_on(&tw.co, &tm));

    char *d = NULL;
    size_t dlen = 0;
    dump_of(s, &d, &dlen);
    snprintf(want, sizeof want, "held by job %p", (void *)&h.co);
    int named = 0;
    for (size_t at = 0; strstr(d + at, want); named++)
        at = (size_t)(strstr(d + at, want) - d) + 1;
    cr_assert_eq(named, 2, "the mutex and the lock both name it:\n%s", d);
    cr_assert(strstr(d, "mutex_lock"), "%s", d);
    cr_assert(strstr(d, "rwlock_read"), "%s", d);
    cr_assert(strstr(d, "held by a plain thread"), "%s", d);
    free(d);

    coro_event_set(&ev);
    cr_assert_eq(join_r(&h.co), 0);
    cr_assert_eq(join_r(&mw.co), 0);
    cr_assert_eq(join_r(&r.co), 0);
    cr_assert_eq(coro_mutex_unlock(&tm), 0);
    cr_assert_eq(join_r(&tw.co), 0);
    fin(s);
}
