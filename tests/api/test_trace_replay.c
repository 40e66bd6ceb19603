/* SPDX-License-Identifier: MIT */
/* A seeded run's trace is the same file every run (docs/testing.md): two
 * runs of one seed of samples/testing, each a fresh process with its own
 * address layout (no setarch -R), write the same COROKIT_TRACE files byte
 * for byte; its jobs are named by number, not by address, and
 * tools/timeline still reads it. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <corokit.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

static char dir[64];

static void cleanup(void)
{
    char cmd[128];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            cr_log_warn("could not remove %s", dir);
    }
}

/* samples/testing --seed 2 with COROKIT_TRACE=<dir>/<tag>.json */
static void run_seed(const char *tag)
{
    char path[256], env[256];
    extern char **environ;
    pid_t pid;
    int status, n = 0;

    snprintf(path, sizeof path, "%s/samples/testing", CORO_BUILD_DIR);
    snprintf(env, sizeof env, "COROKIT_TRACE=%s/%s.json", dir, tag);
    for (char **e = environ; *e; e++)
        n++;
    char **envp = calloc((size_t)n + 2, sizeof *envp);
    cr_assert_not_null(envp);
    int k = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "COROKIT_TRACE=", 14) != 0)
            envp[k++] = *e;
    envp[k++] = env;
    char *argv[] = { path, "--seed", "2", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, argv, envp), 0, "cannot run %s", path);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    /* exit 1: the seed loses an update, which is what it shows */
    cr_assert(WIFEXITED(status), "testing died of signal %d", WTERMSIG(status));
}

static char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "no trace %s", p);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_gt(n, 0, "%s is empty", p);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

Test(trace_replay, two_runs_of_one_seed_write_the_same_trace_byte_for_byte, .timeout = 120,
     .fini = cleanup)
{
    char a[128], b[128], cmd[300];
    size_t na, nb;

    snprintf(dir, sizeof dir, "/tmp/corokit-replay-%d", (int)getpid());
    cr_assert_eq(mkdir(dir, 0700), 0);
    run_seed("a");
    run_seed("b");
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.json", dir);
    char *ta = slurp(a, &na), *tb = slurp(b, &nb);
    cr_assert(strstr(ta, "\"cat\":\"job\""), "no steps traced");
    cr_assert(strstr(ta, "\"job\":\"#1\""), "jobs are not named by number");
    cr_assert_null(strstr(ta, "\"job\":\"0x"), "a job named by its address");
    cr_assert(na == nb && memcmp(ta, tb, na) == 0, "the two traces differ (%zu and %zu bytes)",
              na, nb);
    free(ta);
    free(tb);
    /* tools/timeline reads it */
    snprintf(cmd, sizeof cmd, "python3 tools/timeline.py --steps %s > %s/steps.txt", a, dir);
    cr_assert_eq(system(cmd), 0, "tools/timeline --steps failed on the trace");
}
