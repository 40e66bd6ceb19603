/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Pool frames: coro_frame_alloc / coro_frame_free, the library's give-back,
 * and coro_join's ordering against on_exit, at 0, 1, 2 and 4 workers. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt/rt.h"   /* the state bits, to order a test without sleeping */

static const int counts[] = { 0, 1, 2, 4 };
#define NCOUNTS 4

/* ---- a counting (and optionally failing) config allocator ------------------ */
static long live_bytes, live_blocks;
static long fail_after = -1;    /* allocations left before failing; -1 = never */

static void *cnt_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (__atomic_load_n(&fail_after, __ATOMIC_RELAXED) == 0)
        return NULL;
    if (__atomic_load_n(&fail_after, __ATOMIC_RELAXED) > 0)
        __atomic_sub_fetch(&fail_after, 1, __ATOMIC_RELAXED);
    void *p = malloc(n);
    if (p) {
        __atomic_add_fetch(&live_bytes, (long)n, __ATOMIC_RELAXED);
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    }
    return p;
}

static void cnt_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    __atomic_sub_fetch(&live_bytes, (long)n, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}

static coro_alloc_t counting = { .alloc = cnt_malloc, .free = cnt_free };

static coro_sched_t *mk_counted(int workers)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    c.pin = false;
    live_bytes = live_blocks = 0;
    fail_after = -1;
    c.alloc = &counting;
    return mk_config(&c);
}

/* ---- jobs ------------------------------------------------------------------------ */
struct job {
    long pad;               /* the header need not come first */
    coro_t co;
    long id;
};

static long exits;

static void count_exit(coro_t *co)
{
    (void)co;
    __atomic_add_fetch(&exits, 1, __ATOMIC_RELAXED);
}
static const coro_spawn_opts_t counted = { .on_exit = count_exit };

static int ret_id(coro_t *co)
{
    struct job *j = CORO_SELF(co, struct job);
    CORO_BEGIN(co);
    CORO_RETURN(co, j->id);
    CORO_END(co);
}

/* spawn n pool frames from the calling plain thread; returns them */
static void spawn_pool(coro_sched_t *s, long n, void **out)
{
    for (long i = 0; i < n; i++) {
        struct job *j = coro_frame_alloc(s, sizeof *j);
        cr_assert_not_null(j);
        cr_assert_eq((uintptr_t)j % 64, 0, "64-byte aligned");
        cr_assert_eq(j->pad, 0, "zeroed");
        cr_assert_eq(j->id, 0, "zeroed");
        j->id = i;
        if (out)
            out[i] = j;
        cr_assert_eq(coro_spawn(s, &j->co, ret_id, &counted), 0);
    }
}

static void run_all(coro_sched_t *s, int workers)
{
    if (workers == 0)
        coro_sched_run(s);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

Test(frame, each_pool_frame_is_given_back_exactly_once_and_memory_returns_at_destroy,
     .timeout = 60)
{
    enum { N = 3000 };
    void **a = malloc(N * sizeof *a), **b = malloc(N * sizeof *b);
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        exits = 0;
        spawn_pool(s, N, a);
        run_all(s, counts[k]);
        cr_assert_eq(exits, N, "every on_exit ran");
        /* every frame is back: N new ones are all distinct (a block given
         * back twice would come out twice) and reuse the old ones */
        for (long i = 0; i < N; i++) {
            b[i] = coro_frame_alloc(s, sizeof(struct job));
            cr_assert_not_null(b[i]);
        }
        qsort(b, N, sizeof *b, cmp_ptr);
        for (long i = 1; i < N; i++)
            cr_assert_neq(b[i], b[i - 1], "workers %d: a frame handed out twice", counts[k]);
        for (long i = 0; i < N; i++)
            coro_frame_free(b[i]);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0, "workers %d: %ld blocks left", counts[k], live_blocks);
        cr_assert_eq(live_bytes, 0);
    }
    free(a);
    free(b);
}

/* ---- frames allocated in jobs, freed elsewhere --------------------------------------- */
struct maker {
    coro_t co;
    coro_sched_t *s;
    void **out;
    long n, i;
};

static int make_frames(coro_t *co)
{
    struct maker *m = CORO_SELF(co, struct maker);
    CORO_BEGIN(co);
    for (m->i = 0; m->i < m->n; m->i++) {
        m->out[m->i] = coro_frame_alloc(m->s, 200);
        if (!m->out[m->i])
            CORO_RETURN(co, -ENOMEM);
        if (m->i % 2) {     /* half of them spawned here, finished anywhere */
            struct job *j = m->out[m->i];
            if (coro_spawn(m->s, &j->co, ret_id, &counted) != 0)
                CORO_RETURN(co, -EINVAL);
            m->out[m->i] = NULL;
        }
        if (m->i % 64 == 0)
            CORO_YIELD(co);
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

struct freer_arg {
    void **v;
    long n;
};

static void *free_them(void *arg)
{
    struct freer_arg *f = arg;
    for (long i = 0; i < f->n; i++)
        coro_frame_free(f->v[i]);
    return NULL;
}

Test(frame, frames_from_workers_are_freed_by_other_workers_and_plain_threads, .timeout = 60)
{
    enum { N = 4000 };
    void **v = calloc(N, sizeof *v);
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        struct maker m = { .s = s, .out = v, .n = N };
        exits = 0;
        cr_assert_eq(block_on_r(s, &m.co, make_frames, NULL), 0);
        /* the never-spawned half, given back by another plain thread */
        pthread_t t;
        struct freer_arg fa = { v, N };
        pthread_create(&t, NULL, free_them, &fa);
        pthread_join(t, NULL);
        run_all(s, counts[k]);
        cr_assert_eq(exits, N / 2);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0, "workers %d: %ld blocks left", counts[k], live_blocks);
    }
    free(v);
}

/* a plain thread allocates and spawns, then exits; its cache is adopted */
struct spawner_arg {
    coro_sched_t *s;
    long n;
};

static void *spawn_and_exit(void *arg)
{
    struct spawner_arg *a = arg;
    for (long i = 0; i < a->n; i++) {
        struct job *j = coro_frame_alloc(a->s, sizeof *j);
        if (!j || coro_spawn(a->s, &j->co, ret_id, &counted) != 0)
            abort();
    }
    void *keep = coro_frame_alloc(a->s, 5000);   /* a big one, never spawned */
    coro_frame_free(keep);
    return NULL;
}

Test(frame, threads_that_exit_leave_nothing_behind, .timeout = 60)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        exits = 0;
        for (int r = 0; r < 4; r++) {
            struct spawner_arg a = { s, 1000 };
            pthread_t t;
            pthread_create(&t, NULL, spawn_and_exit, &a);
            pthread_join(t, NULL);
            if (counts[k] == 0)
                coro_sched_run(s);
        }
        run_all(s, counts[k]);
        cr_assert_eq(exits, 4000);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0, "workers %d: %ld blocks left", counts[k], live_blocks);
    }
}

/* ---- errors ------------------------------------------------------------------------------ */
Test(frame, out_of_memory_in_the_config_allocator_gives_null_and_leaks_nothing, .timeout = 30)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        long before = live_blocks;
        fail_after = 0;
        cr_assert_null(coro_frame_alloc(s, 128), "small");
        cr_assert_null(coro_frame_alloc(s, 100000), "big");
        cr_assert_eq(live_blocks, before);
        fail_after = -1;
        void *f = coro_frame_alloc(s, 128);
        cr_assert_not_null(f);
        coro_frame_free(f);
        cr_assert_null(coro_frame_alloc(NULL, 128));
        cr_assert_null(coro_frame_alloc(s, 0));
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0);
    }
}

Test(frame, a_pool_frame_spawned_on_another_scheduler_fails_with_einval, .timeout = 30)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *a = mk(counts[k]), *b = mk(counts[k]);
        struct job *j = coro_frame_alloc(a, sizeof *j);
        cr_assert_not_null(j);
        cr_assert_eq(coro_spawn(b, &j->co, ret_id, NULL), -EINVAL);
        j->id = 7;
        cr_assert_eq(block_on_r(a, &j->co, ret_id, NULL), 7, "still good on its own");
        cr_assert_eq(coro_sched_destroy(a), 0);
        cr_assert_eq(coro_sched_destroy(b), 0);
    }
}

Test(frame, coro_frame_free_ignores_what_it_does_not_own, .timeout = 30)
{
    coro_sched_t *s = mk_counted(2);
    struct job onstack = { 0 };
    char *heap = malloc(256);
    coro_frame_free(NULL);
    coro_frame_free(&onstack);
    coro_frame_free(heap);
    free(heap);
    struct job *j = coro_frame_alloc(s, sizeof *j);
    coro_frame_free((char *)j + 64);        /* not a frame's start */
    coro_frame_free(j);
    coro_frame_free(j);                     /* twice: ignored */
    struct job *k1 = coro_frame_alloc(s, sizeof *j), *k2 = coro_frame_alloc(s, sizeof *j);
    cr_assert_neq(k1, k2, "the double free did not put it on the list twice");
    /* a spawned frame is the library's: freeing it does nothing */
    exits = 0;
    cr_assert_eq(coro_spawn(s, &k1->co, ret_id, &counted), 0);
    coro_frame_free(k1);
    coro_frame_free(k2);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    cr_assert_eq(exits, 1);
    /* spawning a frame already given back: -EINVAL */
    struct job *g = coro_frame_alloc(s, sizeof *g);
    coro_frame_free(g);
    cr_assert_eq(coro_spawn(s, &g->co, ret_id, NULL), -EINVAL);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(live_blocks, 0);
}

Test(frame, a_failed_spawn_leaves_the_frame_to_its_caller, .timeout = 30)
{
    coro_sched_t *s = mk_counted(1);
    cr_assert_eq(coro_sched_shutdown(s, CORO_DRAIN), 0);
    struct job *j = coro_frame_alloc(s, sizeof *j);
    cr_assert_eq(coro_spawn(s, &j->co, ret_id, NULL), -ESHUTDOWN);
    coro_frame_free(j);
    struct job *j2 = coro_frame_alloc(s, sizeof *j);
    cr_assert_eq(j2, j, "given back by coro_frame_free");
    coro_frame_free(j2);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(live_blocks, 0);
}

/* ---- joins -------------------------------------------------------------------------------- */
struct gated {
    coro_t co;
    coro_event_t *ev;
    long id;
};

static int wait_gate(coro_t *co)
{
    struct gated *g = CORO_SELF(co, struct gated);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_event_wait(g->ev, CORO_FOREVER));
    CORO_RETURN(co, g->id);
    CORO_END(co);
}

struct opener {
    coro_t *co;
    coro_event_t *ev;
};

/* set the gate once a thread is blocked in coro_join on co (state bit) */
static void *open_when_joined(void *arg)
{
    struct opener *o = arg;
    while (!(__atomic_load_n(&o->co->state, __ATOMIC_ACQUIRE) & CORO__F_THREAD_JOIN))
        sched_yield();
    coro_event_set(o->ev);
    return NULL;
}

Test(frame, a_joined_pool_frame_is_given_back_after_coro_join_and_reused, .timeout = 30)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        coro_event_t ev;
        coro_event_init(&ev);
        for (int r = 0; r < 20; r++) {
            struct gated *g = coro_frame_alloc(s, sizeof *g);
            cr_assert_not_null(g);
            g->ev = &ev;
            g->id = 40 + r;
            exits = 0;
            cr_assert_eq(coro_spawn(s, &g->co, wait_gate, &counted), 0);
            struct opener o = { &g->co, &ev };
            pthread_t t;
            pthread_create(&t, NULL, open_when_joined, &o);
            cr_assert_eq(join_r(&g->co), 40 + r);
            cr_assert_eq(exits, 1, "on_exit ran before coro_join returned");
            pthread_join(t, NULL);
            coro_event_reset(&ev);
            struct gated *g2 = coro_frame_alloc(s, sizeof *g2);
            cr_assert_eq(g2, g, "workers %d: the joined frame is reused", counts[k]);
            coro_frame_free(g2);
        }
        coro_event_destroy(&ev);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0);
    }
}

/* the coro__finish/coro_join ordering: a thread blocked in coro_join returns
 * only after on_exit returned, so it may respawn the frame at once */
static long slow_exits;

static void slow_exit(coro_t *co)
{
    (void)co;
    /* widens the window in which the old code let coro_join return first;
     * the order itself never depends on it */
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    __atomic_add_fetch(&slow_exits, 1, __ATOMIC_RELEASE);
}

Test(frame, coro_join_returns_only_after_on_exit_so_the_frame_can_be_respawned, .timeout = 60)
{
    static const coro_spawn_opts_t o = { .on_exit = slow_exit };
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        coro_event_t ev;
        coro_event_init(&ev);
        struct gated g = { .ev = &ev, .id = 3 };
        slow_exits = 0;
        for (int r = 0; r < 3; r++) {
            cr_assert_eq(coro_spawn(s, &g.co, wait_gate, &o), 0);
            struct opener op = { &g.co, &ev };
            pthread_t t;
            pthread_create(&t, NULL, open_when_joined, &op);
            cr_assert_eq(join_r(&g.co), 3);
            cr_assert_eq(__atomic_load_n(&slow_exits, __ATOMIC_ACQUIRE), r + 1,
                         "workers %d: coro_join returned before on_exit", counts[k]);
            pthread_join(t, NULL);
            coro_event_reset(&ev);
        }
        coro_event_destroy(&ev);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

/* ---- memory stays flat ---------------------------------------------------------------------- */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

struct burst {
    coro_t co;
    coro_sched_t *s;
    long n, i;
};

static int burst_fn(coro_t *co)
{
    struct burst *b = CORO_SELF(co, struct burst);
    CORO_BEGIN(co);
    for (b->i = 0; b->i < b->n; b->i++) {
        struct job *j = coro_frame_alloc(b->s, sizeof *j);
        if (!j || coro_spawn(b->s, &j->co, ret_id, NULL) != 0)
            CORO_RETURN(co, -ENOMEM);
        if (b->i % 256 == 255)
            CORO_YIELD(co);     /* let them run: a few hundred alive at most */
    }
    CORO_RETURN(co, 0);
    CORO_END(co);
}

Test(frame, rss_stays_flat_over_many_fire_and_forget_spawns, .timeout = 120)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        struct burst b = { .s = s, .n = 100000 };
        cr_assert_eq(block_on_r(s, &b.co, burst_fn, NULL), 0);
        if (counts[k] == 0)
            coro_sched_run(s);
        long r0 = rss_kib();
        for (int r = 0; r < 5; r++) {
            cr_assert_eq(block_on_r(s, &b.co, burst_fn, NULL), 0);
            if (counts[k] == 0)
                coro_sched_run(s);
        }
        long r1 = rss_kib();
        cr_assert_lt(r1 - r0, 16 * 1024, "workers %d: RSS grew %ld KiB over 500,000 spawns",
                     counts[k], r1 - r0);
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
}

Test(frame, a_live_pool_frame_spawned_again_fails_with_ebusy, .timeout = 30)
{
    for (int k = 0; k < NCOUNTS; k++) {
        coro_sched_t *s = mk_counted(counts[k]);
        coro_event_t ev;
        coro_event_init(&ev);
        struct gated *g = coro_frame_alloc(s, sizeof *g);
        g->ev = &ev;
        exits = 0;
        cr_assert_eq(coro_spawn(s, &g->co, wait_gate, &counted), 0);
        cr_assert_eq(coro_spawn(s, &g->co, wait_gate, &counted), -EBUSY);
        coro_event_set(&ev);
        run_all(s, counts[k]);
        cr_assert_eq(exits, 1, "ran once");
        coro_event_destroy(&ev);
        cr_assert_eq(coro_sched_destroy(s), 0);
        cr_assert_eq(live_blocks, 0);
    }
}

Test(frame, pointers_into_a_slab_header_are_neither_spawned_nor_freed, .timeout = 30)
{
    coro_sched_t *s = mk_counted(0);
    char *f = coro_frame_alloc(s, 128);     /* a fresh scheduler: a slab's first block */
    cr_assert_not_null(f);
    coro_t *hdr = (coro_t *)(void *)(f - 128);
    cr_assert_eq(coro_spawn(s, hdr, ret_id, NULL), -EINVAL);
    coro_frame_free(f - 128);
    coro_frame_free(f - 64);
    cr_assert_null(coro_frame_alloc(s, (size_t)1 << 41), "absurd size");
    char *g = coro_frame_alloc(s, 128);
    cr_assert_neq(g, f, "f is still out");
    coro_frame_free(f);
    coro_frame_free(g);
    cr_assert_eq(coro_sched_destroy(s), 0);
    cr_assert_eq(live_blocks, 0);
}

/* a plain thread keeps caches for 8 live schedulers; a 9th gets NULL, and
 * a slot comes back once one of them is destroyed */
Test(frame, a_thread_caches_frames_of_eight_schedulers_at_most, .timeout = 30)
{
    coro_sched_t *s[9];
    void *f[9];
    for (int i = 0; i < 9; i++)
        s[i] = mk(0);
    for (int i = 0; i < 8; i++) {
        f[i] = coro_frame_alloc(s[i], 64);
        cr_assert_not_null(f[i], "scheduler %d", i);
    }
    cr_assert_null(coro_frame_alloc(s[8], 64), "a ninth cache");
    coro_frame_free(f[0]);
    cr_assert_eq(coro_sched_destroy(s[0]), 0);
    f[8] = coro_frame_alloc(s[8], 64);
    cr_assert_not_null(f[8], "the destroyed scheduler's slot is reused");
    for (int i = 1; i < 9; i++) {
        coro_frame_free(f[i]);
        cr_assert_eq(coro_sched_destroy(s[i]), 0);
    }
}

/* Workers give a plain thread's frames back in lists (the outbox, then
 * the slab's remote list) that the plain thread's next allocations walk.
 * Frames handed out again are zeroed in every byte, at every size class
 * around one line, and the same block comes back many times over: a link
 * mis-read, or a block taken twice, shows here as a non-zero byte or a
 * duplicate address (a look-ahead experiment's mutant that handed a block
 * out twice failed here) */
struct scribble {
    coro_t co;
    unsigned char bytes[];
};

static long scribbles_left;

static int scribble_body(coro_t *co)
{
    CORO_BEGIN(co);
    __atomic_sub_fetch(&scribbles_left, 1, __ATOMIC_RELEASE);
    CORO_END(co);
}

Test(frame, frames_given_back_by_workers_come_back_zeroed_and_distinct, .timeout = 120)
{
    enum { N = 3000, ROUNDS = 6 };
    static const size_t sizes[] = { sizeof(coro_t), sizeof(coro_t) + 1, sizeof(coro_t) + 64, 500 };
    void **v = calloc(N, sizeof *v);
    for (int k = 1; k < NCOUNTS; k++) {
        coro_sched_t *s = mk(counts[k]);
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            for (int r = 0; r < ROUNDS; r++) {
                __atomic_store_n(&scribbles_left, N, __ATOMIC_RELAXED);
                for (long i = 0; i < N; i++) {
                    unsigned char *f = coro_frame_alloc(s, sizes[z]);
                    cr_assert_not_null(f);
                    for (size_t b = 0; b < sizes[z]; b++)
                        cr_assert_eq(f[b], 0, "workers %d, size %zu, round %d: byte %zu is %d",
                                     counts[k], sizes[z], r, b, f[b]);
                    v[i] = f;
                }
                qsort(v, N, sizeof *v, cmp_ptr);
                for (long i = 1; i < N; i++)
                    cr_assert_neq(v[i], v[i - 1], "a block handed out twice");
                for (long i = 0; i < N; i++) {
                    struct scribble *sc = v[i];
                    /* the bytes after coro_t: dirty them, so that only the
                     * allocator's zeroing can clean them */
                    if (sizes[z] > sizeof(coro_t))
                        memset(sc->bytes, 0xab, sizes[z] - sizeof(coro_t));
                    cr_assert_eq(coro_spawn(s, &sc->co, scribble_body, NULL), 0);
                }
                while (__atomic_load_n(&scribbles_left, __ATOMIC_ACQUIRE) != 0)
                    sched_yield();
            }
        }
        cr_assert_eq(coro_sched_destroy(s), 0);
    }
    free(v);
}
