/* SPDX-License-Identifier: MIT */
/* walker - hash every file of a directory tree, many files at once but
 * never more than N: a parallel walker with bounded concurrency.
 * docs/recipes.md, "A parallel file walker", walks through it.
 *
 *   walker [-j N] [-w WORKERS] PATH...
 *       for each regular file under each PATH (a directory, walked
 *       without following symbolic links, or a file), print its 64-bit
 *       FNV-1a hash in hex, two spaces and its path, one line per file,
 *       sorted by path in byte order (as LC_ALL=C sort).  A file or
 *       directory that cannot be read gets a line "walker: PATH: reason"
 *       on stderr instead, and the exit status is 1.  Symbolic links,
 *       fifos, sockets and devices are skipped.  At most N (default 8)
 *       directories are listed and files open at once.
 *   walker --self-test
 *       a tree of known files in a temporary directory: each hash must be
 *       the known one, and a missing path must give an error line.
 *
 * The shape: a job per directory and a job per file, all of one group, in
 * pool frames (nobody joins them).  A semaphore of N units bounds the
 * work in flight: a directory job takes a unit to list its directory on
 * the blocking pool; for each file it takes a unit before spawning the
 * file's job, which gives it back when done - so at most N file jobs
 * exist at once, whatever the tree's size.  Files are read with
 * coro_read, which runs the read(2) of a regular file on the blocking
 * pool.  The first job waits for the group, then main sorts and prints. */
#define _GNU_SOURCE
#include <corokit.h>
#include "sample_args.h"
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* [fnv] 64-bit FNV-1a: h = (h ^ byte) * prime, from the offset basis */
#define FNV_BASIS UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}
/* [/fnv] */

/* one line of output: a file's hash, or what went wrong with a path */
struct entry {
    char *path;
    uint64_t hash;
    int err;                        /* 0, or -errno */
    struct entry *next;
};

struct walk {
    coro_sched_t *s;
    coro_sem_t slots;               /* directories listed + files open, at most N */
    coro_group_t jobs;              /* every directory and file job */
    _Atomic(struct entry *) head;   /* the results, pushed by any job */
};

static struct entry *entry_new(char *path, int err)
{
    struct entry *e = calloc(1, sizeof *e);
    if (e) {
        e->path = path;
        e->err = err;
    }
    return e;
}

/* a lock-free push: jobs on any worker add entries; main reads the list
 * once the group is done */
static void entry_push(struct walk *w, struct entry *e)
{
    e->next = atomic_load_explicit(&w->head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&w->head, &e->next, e, memory_order_release,
                                                  memory_order_relaxed))
        ;
}

/* a result with no job to carry it (a path that failed before its job) */
static void report(struct walk *w, char *path, int err)
{
    struct entry *e = entry_new(path, err);
    if (e)
        entry_push(w, e);
    else
        free(path);
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

/* [file-job] hash one file; its unit of `slots` was taken by the spawner */
struct file_job {
    coro_t co;
    struct walk *w;
    struct entry *e;
    int fd;
    uint64_t h;
    char buf[16384];
};

static intptr_t open_file(void *arg)            /* on a blocking-pool thread */
{
    /* O_NONBLOCK: a file replaced by a fifo since it was listed must not
     * block the pool thread (it does nothing to a regular file's reads) */
    int fd = open(((struct entry *)arg)->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

static int file_body(coro_t *co)
{
    struct file_job *f = CORO_SELF(co, struct file_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_blocking(open_file, f->e));
    f->fd = (int)CORO_RESULT(co);
    if (f->fd < 0) {
        f->e->err = f->fd;
    } else {
        for (f->h = FNV_BASIS;;) {
            /* a regular file: corokit does the read(2) on the blocking pool */
            CORO_AWAIT(co, coro_read(f->fd, f->buf, sizeof f->buf, CORO_FOREVER));
            if (CORO_RESULT(co) <= 0)
                break;
            f->h = fnv1a(f->h, (const unsigned char *)f->buf, (size_t)CORO_RESULT(co));
        }
        if (CORO_RESULT(co) < 0)
            f->e->err = (int)CORO_RESULT(co);
        f->e->hash = f->h;
        close(f->fd);
    }
    entry_push(f->w, f->e);
    coro_sem_release(&f->w->slots, 1);
    CORO_END(co);
}

/* take the unit first (the caller awaited coro_sem_acquire), then spawn */
static void spawn_file(struct walk *w, char *path)
{
    struct entry *e = entry_new(path, 0);
    struct file_job *f = e ? coro_frame_alloc(w->s, sizeof *f) : NULL;
    coro_spawn_opts_t o = { .group = &w->jobs };
    int rc = -ENOMEM;

    if (f) {
        f->w = w;
        f->e = e;
        if ((rc = coro_spawn(w->s, &f->co, file_body, &o)) == 0)
            return;
        coro_frame_free(f);
    }
    coro_sem_release(&w->slots, 1);
    if (e) {
        e->err = rc;
        entry_push(w, e);
    } else {
        free(path);
    }
}
/* [/file-job] */

/* [dir-job] list one directory, then start a job per entry */
struct name {
    char *name;
    unsigned char type;             /* DT_DIR, DT_REG, ... */
};

struct dir_job {
    coro_t co;
    struct walk *w;
    char *path;
    struct name *names;
    size_t n, i;
    char *child;
};

static void spawn_dir(struct walk *w, char *path);

static intptr_t list_dir(void *arg)             /* on a blocking-pool thread */
{
    struct dir_job *d = arg;
    size_t cap = 0;
    struct dirent *de;
    struct stat st;
    DIR *dir = opendir(d->path);

    if (!dir)
        return -errno;
    while ((de = readdir(dir))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        unsigned char type = de->d_type;
        if (type == DT_UNKNOWN)     /* some file systems do not say: ask */
            type = fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? DT_UNKNOWN
                   : S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        if (type != DT_DIR && type != DT_REG)
            continue;               /* links are not followed, specials not read */
        if (d->n == cap) {
            struct name *v = realloc(d->names, (cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!v)
                break;
            d->names = v;
        }
        if (!(d->names[d->n].name = strdup(de->d_name)))
            break;
        d->names[d->n++].type = type;
    }
    closedir(dir);
    return 0;
}

static int dir_body(coro_t *co)
{
    struct dir_job *d = CORO_SELF(co, struct dir_job);
    CORO_BEGIN(co);
    CORO_AWAIT(co, coro_sem_acquire(&d->w->slots, CORO_FOREVER));
    CORO_AWAIT(co, coro_blocking(list_dir, d));
    coro_sem_release(&d->w->slots, 1);
    if (CORO_RESULT(co) < 0) {
        report(d->w, d->path, (int)CORO_RESULT(co));
        d->path = NULL;
    }
    for (d->i = 0; d->i < d->n; d->i++) {
        d->child = path_join(d->path, d->names[d->i].name);
        free(d->names[d->i].name);
        if (!d->child)
            continue;
        if (d->names[d->i].type == DT_DIR) {
            spawn_dir(d->w, d->child);
            continue;
        }
        /* the bound: wait for a unit before the file's job exists */
        CORO_AWAIT(co, coro_sem_acquire(&d->w->slots, CORO_FOREVER));
        spawn_file(d->w, d->child);
    }
    free(d->names);
    free(d->path);
    CORO_END(co);
}

static void spawn_dir(struct walk *w, char *path)
{
    struct dir_job *d = coro_frame_alloc(w->s, sizeof *d);
    coro_spawn_opts_t o = { .group = &w->jobs };
    int rc = -ENOMEM;

    if (d) {
        d->w = w;
        d->path = path;
        if ((rc = coro_spawn(w->s, &d->co, dir_body, &o)) == 0)
            return;
        coro_frame_free(d);
    }
    report(w, path, rc);
}
/* [/dir-job] */

/* [root-job] start a job per path given, then wait for the whole group */
struct root {
    coro_t co;
    struct walk *w;
    char **paths;
    int n, i;
    char *path;
    struct stat st;
};

static int root_body(coro_t *co)
{
    struct root *r = CORO_SELF(co, struct root);
    CORO_BEGIN(co);
    for (r->i = 0; r->i < r->n; r->i++) {
        if (!(r->path = strdup(r->paths[r->i])))
            continue;
        if (lstat(r->path, &r->st) < 0) {
            report(r->w, r->path, -errno);
        } else if (S_ISDIR(r->st.st_mode)) {
            spawn_dir(r->w, r->path);
        } else if (S_ISREG(r->st.st_mode)) {
            CORO_AWAIT(co, coro_sem_acquire(&r->w->slots, CORO_FOREVER));
            spawn_file(r->w, r->path);
        } else {
            report(r->w, r->path, -EINVAL);     /* not a file or a directory */
        }
    }
    CORO_AWAIT(co, coro_group_wait(&r->w->jobs, CORO_FOREVER));
    CORO_RETURN(co, CORO_RESULT(co));
    CORO_END(co);
}
/* [/root-job] */

static int by_path(const void *a, const void *b)
{
    return strcmp((*(struct entry *const *)a)->path, (*(struct entry *const *)b)->path);
}

/* walk paths with at most jobs units in flight; the entries, sorted by
 * path, in *out (free each path, each entry and the array); their count,
 * or -errno */
static int walk(coro_sched_t *s, char **paths, int n, int jobs, struct entry ***out)
{
    struct walk w = { .s = s };
    struct root r = { .w = &w, .paths = paths, .n = n };
    int rc;

    coro_sem_init(&w.slots, jobs);
    coro_group_init(&w.jobs);
    intptr_t res = 0;
    rc = coro_block_on(s, &r.co, root_body, NULL, &res);
    if (rc == 0)
        rc = (int)res;
    coro_group_destroy(&w.jobs);
    coro_sem_destroy(&w.slots);
    size_t count = 0;
    /* the group's end orders every member's push before this read */
    struct entry *head = atomic_load_explicit(&w.head, memory_order_acquire);
    for (struct entry *e = head; e; e = e->next)
        count++;
    struct entry **v = malloc((count ? count : 1) * sizeof *v);
    count = 0;
    for (struct entry *e = head, *next; e; e = next) {
        next = e->next;
        if (v)
            v[count++] = e;
        else
            free(e->path), free(e);
    }
    if (!v)
        return -ENOMEM;
    qsort(v, count, sizeof *v, by_path);
    *out = v;
    return rc < 0 ? rc : (int)count;
}

static void free_entries(struct entry **v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i]->path);
        free(v[i]);
    }
    free(v);
}

/* ---- self-test ------------------------------------------------------------------ */

static int put(const char *dir, const char *name, const void *data, size_t len)
{
    char *p = path_join(dir, name);
    int fd = p ? open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    int ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;

    if (fd >= 0)
        close(fd);
    free(p);
    return ok ? 0 : -1;
}

static int self_test(void)
{
    char root[] = "/tmp/corokit-walker-XXXXXX", sub[64], deep[80];
    enum { BIG = 200000 };                  /* spans several reads */
    static unsigned char big[BIG];
    coro_sched_t *s;
    struct entry **v = NULL;
    int bad = 0;

    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 7 + i / 251);
    if (!mkdtemp(root))
        return 1;
    snprintf(sub, sizeof sub, "%s/sub", root);
    snprintf(deep, sizeof deep, "%s/sub/deeper", root);
    if (mkdir(sub, 0755) < 0 || mkdir(deep, 0755) < 0 || put(root, "empty", "", 0) ||
        put(root, "a", "a", 1) || put(sub, "foobar", "foobar", 6) || put(deep, "big", big, BIG))
        return 1;
    /* in byte order of their paths: the published FNV-1a 64 test vectors,
     * a path that is not there, and the big file hashed here in one go */
    struct { const char *rel; uint64_t hash; int err; } want[] = {
        { "/a", UINT64_C(0xaf63dc4c8601ec8c), 0 },
        { "/empty", UINT64_C(0xcbf29ce484222325), 0 },
        { "/missing", 0, -ENOENT },
        { "/sub/deeper/big", fnv1a(FNV_BASIS, big, BIG), 0 },
        { "/sub/foobar", UINT64_C(0x85944171f73967e8), 0 },
    };
    char missing[64];
    snprintf(missing, sizeof missing, "%s/missing", root);
    char *paths[] = { root, missing };

    if (coro_sched_create(&s, NULL) < 0)
        return 1;
    int n = walk(s, paths, 2, 2, &v);       /* 2 at once: the bound is reached */
    coro_sched_destroy(s);
    if (n != 5)
        bad = 1;
    for (int i = 0; i < 5 && !bad; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s%s", root, want[i].rel);
        bad |= strcmp(v[i]->path, p) != 0 || v[i]->err != want[i].err ||
               (!want[i].err && v[i]->hash != want[i].hash);
    }
    for (int i = 0; i < n; i++) {
        if (v[i]->err == 0)
            unlink(v[i]->path);
    }
    rmdir(deep);
    rmdir(sub);
    rmdir(root);
    if (n >= 0)
        free_entries(v, n);
    printf("walker self-test: %d entries, %s\n", n, bad ? "FAILED" : "every hash as expected");
    return bad;
}

int main(int argc, char **argv)
{
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    struct entry **v;
    int opt, jobs = 8, n, status = 0;

    if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    while ((opt = getopt(argc, argv, "j:w:")) != -1) {
        switch (opt) {
        case 'j':
            if (!sample_arg_int(optarg, 1, INT_MAX, &jobs))
                goto usage;
            break;
        case 'w':
            if (!sample_arg_workers(optarg, &cfg))
                goto usage;
            break;
        default: goto usage;
        }
    }
    if (optind == argc || jobs < 1) {
usage:
        fprintf(stderr, "usage: %s [-j N] [-w WORKERS] PATH...\n       %s --self-test\n",
                argv[0], argv[0]);
        return 2;
    }
    if ((n = coro_sched_create(&s, &cfg)) < 0) {
        fprintf(stderr, "walker: coro_sched_create: %s\n", coro_strerror(n));
        return 2;
    }
    n = walk(s, argv + optind, argc - optind, jobs, &v);
    coro_sched_destroy(s);
    if (n < 0) {
        fprintf(stderr, "walker: %s\n", coro_strerror(n));
        return 2;
    }
    for (int i = 0; i < n; i++) {
        if (v[i]->err) {
            fflush(stdout);
            fprintf(stderr, "walker: %s: %s\n", v[i]->path, coro_strerror(v[i]->err));
            status = 1;
        } else {
            printf("%016" PRIx64 "  %s\n", v[i]->hash, v[i]->path);
        }
    }
    free_entries(v, n);
    return status;
}
