/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* coro_pread and coro_pwrite: reads and writes at an offset on the
 * blocking pool, the file position untouched, the end of the file, a
 * pipe, bad input and a cancel before the call starts. */
#include <criterion/criterion.h>
#include <corokit.h>
#include "fixture.h"
#include <fcntl.h>
#include <string.h>
#include "fixture_ioext.h"

Test(io_pfile, pwrite_and_pread_work_at_their_offsets_and_leave_the_position, .timeout = 30)
{
    int w;
    FOR_W02(w) {
        coro_sched_t *s = mk(w);
        char path[] = "/tmp/corokit-pfile-XXXXXX";
        int fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        unlink(path);
        struct xop x = { .kind = X_PWRITE, .fd = fd, .buf = "world", .len = 5, .off = 6 };
        cr_assert_eq(xrun(s, &x), 5);
        x = (struct xop){ .kind = X_PWRITE, .fd = fd, .buf = "hello ", .len = 6, .off = 0 };
        cr_assert_eq(xrun(s, &x), 6);
        cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0);
        char buf[32] = { 0 };
        x = (struct xop){ .kind = X_PREAD, .fd = fd, .buf = buf, .len = sizeof buf, .off = 0 };
        cr_assert_eq(xrun(s, &x), 11);
        cr_assert_str_eq(buf, "hello world");
        x.off = 6;
        cr_assert_eq(xrun(s, &x), 5);
        x.off = 11;
        cr_assert_eq(xrun(s, &x), 0);       /* the end */
        cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0);
        /* a cancelled job: cached data may still come at once, as a ready
         * fd's does for coro_read, but within the worker's budget of
         * immediate completions every later call ends -ECANCELED */
        x = (struct xop){ .kind = X_PREAD_LOOP, .fd = fd, .buf = buf, .len = 1, .off = 0,
                          .self_cancel = true };
        cr_assert_eq(xrun(s, &x), -ECANCELED);
        cr_assert_lt(x.total, 1000u, "%zu reads after the cancel", x.total);
        close(fd);
        fin(s);
    }
}

Test(io_pfile, pread_and_pwrite_refuse_bad_input_and_fds_that_cannot_seek, .timeout = 30)
{
    coro_sched_t *s = mk(2);
    char buf[4];
    struct xop x = { .kind = X_PREAD, .fd = -1, .buf = buf, .len = 4 };
    cr_assert_eq(xrun(s, &x), -EBADF);
    x = (struct xop){ .kind = X_PREAD, .fd = 0, .buf = NULL, .len = 4 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    x = (struct xop){ .kind = X_PWRITE, .fd = 0, .buf = buf, .len = 4, .off = -1 };
    cr_assert_eq(xrun(s, &x), -EINVAL);
    int pp[2];
    cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
    x = (struct xop){ .kind = X_PREAD, .fd = pp[0], .buf = buf, .len = 4 };
    cr_assert_eq(xrun(s, &x), -ESPIPE);
    close(pp[0]);
    close(pp[1]);
    x = (struct xop){ .kind = X_PREAD, .fd = 999999, .buf = buf, .len = 4 };
    cr_assert_eq(xrun(s, &x), -EBADF);
    fin(s);
}
