/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Linked into the Criterion suite (build/tests/corokit_tests), not a test.
 * Criterion initializes libgit2 in every process it starts - the runner
 * and the worker each test runs in - for the diffs its failure messages
 * may show (git_diff_buffers); libgit2's initialization reads the
 * system's CA certificates for its TLS transport, which the suite never
 * uses: about 10 ms of CPU in each of the suite's 640 processes.  The
 * test binary defines libgit2's init and shutdown itself (the dynamic
 * linker binds libcriterion's calls to the executable's definitions),
 * and makes the real initialization the first time a diff is asked for,
 * so a failing test shows the same diff as before. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* libgit2's declarations (git2/global.h, git2/diff.h), the callbacks as
 * pointers: only passed through */
int git_libgit2_init(void);
int git_libgit2_shutdown(void);
int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path,
                     const void *new_buffer, size_t new_len, const char *new_as_path,
                     const void *options, void *file_cb, void *binary_cb, void *hunk_cb,
                     void *line_cb, void *payload);

typedef int (*git_fn)(void);
typedef int (*git_diff_fn)(const void *, size_t, const char *, const void *, size_t,
                           const char *, const void *, void *, void *, void *, void *, void *);

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static int real_inited;     /* written once under real_once, read after it */

/* libgit2's own function of that name (the next definition after ours) */
static void *real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void real_init(void)
{
    git_fn init = (git_fn)real("git_libgit2_init");
    real_inited = init && init() > 0;
}

/* what Criterion calls at its start: nothing yet (1: libgit2's count of
 * initializations, as its first init returns) */
int git_libgit2_init(void)
{
    return 1;
}

int git_libgit2_shutdown(void)
{
    /* at the process's end, on the thread that made its diffs, if any */
    git_fn fini = real_inited ? (git_fn)real("git_libgit2_shutdown") : NULL;
    return fini ? fini() : 0;
}

int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path,
                     const void *new_buffer, size_t new_len, const char *new_as_path,
                     const void *options, void *file_cb, void *binary_cb, void *hunk_cb,
                     void *line_cb, void *payload)
{
    pthread_once(&real_once, real_init);
    git_diff_fn diff = (git_diff_fn)real("git_diff_buffers");
    if (!real_inited || !diff)
        return -1;
    return diff(old_buffer, old_len, old_as_path, new_buffer, new_len, new_as_path, options,
                file_cb, binary_cb, hunk_cb, line_cb, payload);
}
