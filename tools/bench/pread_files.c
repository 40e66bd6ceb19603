/* SPDX-License-Identifier: MIT */
/* pread_files - read many small files: one plain pread(2) loop per file
 * on one thread, against corokit jobs that read each file with coro_pread
 * (the blocking pool) and with coro_read (which sends a regular file's
 * reads to the same pool).
 *
 *   pread_files DIR [MAXFILES [JOBS [WORKERS]]]
 *
 * Collects up to MAXFILES regular files under DIR (default /usr/share,
 * 20000 files, 64 jobs, 2 workers), reads each once untimed (so that every
 * later run reads the page cache), then times: plain (open, pread to the
 * end, close, one thread), coro_pread and coro_read (JOBS jobs sharing the
 * list, each file opened, read to the end, closed).  Prints ns per file
 * and the total bytes (the same for all three). */
#define _GNU_SOURCE
#include <corokit.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **files;
static size_t nfiles, maxfiles = 20000;

static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)f;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size <= (1 << 20)) {
        if (access(path, R_OK) != 0)
            return 0;
        files[nfiles++] = strdup(path);
    }
    return nfiles >= maxfiles;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long long plain(void)
{
    static char buf[1 << 16];
    long long total = 0;
    for (size_t i = 0; i < nfiles; i++) {
        int fd = open(files[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        for (off_t off = 0;;) {
            ssize_t n = pread(fd, buf, sizeof buf, off);
            if (n <= 0)
                break;
            off += n;
            total += n;
        }
        close(fd);
    }
    return total;
}

static atomic_size_t next;
static atomic_llong ctotal;
static int use_read;

struct reader {
    coro_t co;
    size_t i;
    int fd;
    off_t off;
    char buf[1 << 16];
};

static int reader_body(coro_t *co)
{
    struct reader *r = CORO_SELF(co, struct reader);
    CORO_BEGIN(co);
    while ((r->i = atomic_fetch_add(&next, 1)) < nfiles) {
        r->fd = open(files[r->i], O_RDONLY | O_CLOEXEC);
        if (r->fd < 0)
            continue;
        for (r->off = 0;;) {
            if (use_read)
                CORO_AWAIT(co, coro_read(r->fd, r->buf, sizeof r->buf, CORO_FOREVER));
            else
                CORO_AWAIT(co, coro_pread(r->fd, r->buf, sizeof r->buf, r->off));
            if (CORO_RESULT(co) <= 0)
                break;
            r->off += CORO_RESULT(co);
        }
        atomic_fetch_add(&ctotal, (long long)r->off);
        close(r->fd);
    }
    CORO_END(co);
}

static long long jobs_run(coro_sched_t *s, struct reader *rs, int jobs)
{
    atomic_store(&next, 0);
    atomic_store(&ctotal, 0);
    for (int j = 0; j < jobs; j++) {
        memset(&rs[j].co, 0, sizeof rs[j].co);
        if (coro_spawn(s, &rs[j].co, reader_body, NULL) < 0)
            exit(1);
    }
    for (int j = 0; j < jobs; j++) {
        intptr_t r;
        coro_join(&rs[j].co, &r);
    }
    return atomic_load(&ctotal);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share";
    if (argc > 2)
        maxfiles = strtoul(argv[2], NULL, 10);
    int jobs = argc > 3 ? atoi(argv[3]) : 64;
    coro_sched_config_t cfg = CORO_SCHED_CONFIG_DEFAULT;
    cfg.workers = argc > 4 ? atoi(argv[4]) : 2;
    files = calloc(maxfiles, sizeof *files);
    nftw(dir, collect, 64, FTW_PHYS);
    coro_sched_t *s;
    if (!nfiles || jobs < 1 || coro_sched_create(&s, &cfg) < 0)
        return 1;
    struct reader *rs = aligned_alloc(64, sizeof *rs * (size_t)jobs);
    plain();    /* warm the page cache */
    int64_t t0 = now_ns();
    long long b0 = plain();
    int64_t t1 = now_ns();
    use_read = 0;
    long long b1 = jobs_run(s, rs, jobs);
    int64_t t2 = now_ns();
    use_read = 1;
    long long b2 = jobs_run(s, rs, jobs);
    int64_t t3 = now_ns();
    printf("files=%zu jobs=%d workers=%d plain_ns_per_file=%lld coro_pread_ns_per_file=%lld "
           "coro_read_ns_per_file=%lld bytes=%lld/%lld/%lld\n", nfiles, jobs, cfg.workers,
           (long long)((t1 - t0) / (int64_t)nfiles), (long long)((t2 - t1) / (int64_t)nfiles),
           (long long)((t3 - t2) / (int64_t)nfiles), b0, b1, b2);
    coro_sched_shutdown(s, CORO_DRAIN);
    coro_sched_destroy(s);
    return b0 == b1 && b1 == b2 ? 0 : 1;
}
