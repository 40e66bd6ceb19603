/* SPDX-License-Identifier: MIT */
/* Every program in samples/ is built by make and run here: it must exit 0.
 * Programs that serve or wait (echo_server, httpd ...) take --self-test. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CORO_BUILD_DIR
# define CORO_BUILD_DIR "build"
#endif

struct sample {
    char name[64];
};

ParameterizedTestParameters(samples, every_sample_runs_and_exits_0)
{
    static struct sample none[1];
    struct sample *list = cr_malloc(64 * sizeof *list);
    size_t n = 0;
    DIR *d = opendir(CORO_BUILD_DIR "/samples");

    if (!d || !list)
        return cr_make_param_array(struct sample, none, 0);
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || strchr(e->d_name, '.') || len >= sizeof list->name)
            continue;       /* skip .d files */
        memcpy(list[n++].name, e->d_name, len + 1);
    }
    closedir(d);
    return cr_make_param_array(struct sample, list, n);
}

ParameterizedTest(struct sample *p, samples, every_sample_runs_and_exits_0, .timeout = 120)
{
    char path[256];
    char *argv[] = { path, "--self-test", NULL };
    extern char **environ;
    pid_t pid;
    int status = 0;

    posix_spawn_file_actions_t fa;

    snprintf(path, sizeof path, "%s/samples/%s", CORO_BUILD_DIR, p->name);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);  /* its output */
    cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0, "cannot run %s", path);
    posix_spawn_file_actions_destroy(&fa);
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
        if (waited > 100 * 100) {           /* 100 s */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("%s did not finish in 100 s", p->name);
        }
        usleep(10000);
    }
    cr_assert(WIFEXITED(status), "%s died of signal %d", p->name, WTERMSIG(status));
    cr_assert_eq(WEXITSTATUS(status), 0, "%s exited %d", p->name, WEXITSTATUS(status));
}

/* samples/testing: ten virtual minutes (a rate limiter, retries with
 * backoff, a timeout race, seed sweeps) in well under a second of real
 * time, and a seed it reports as failing fails again when replayed */
static int run_testing(char *const argv[], char *out, size_t len)
{
    int fds[2];
    pid_t pid;
    int status = 0;
    extern char **environ;
    posix_spawn_file_actions_t fa;

    cr_assert_eq(pipe(fds), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0, "cannot run %s",
                 argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    size_t n = 0;
    for (ssize_t r; n < len - 1 && (r = read(fds[0], out + n, len - 1 - n)) > 0;)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "testing died of signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

Test(samples, testing_runs_ten_virtual_minutes_in_milliseconds_and_replays_its_seed,
     .timeout = 60)
{
    char path[256], out[4096], seed[32];
    struct timespec a, b;
    snprintf(path, sizeof path, "%s/samples/testing", CORO_BUILD_DIR);
    char *argv[] = { path, "--self-test", NULL };

    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(run_testing(argv, out, sizeof out), 0, "%s", out);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double real = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    cr_assert(strstr(out, "6019 requests in 10 virtual minutes"), "%s", out);
    /* generous: a few hundred ms here, alone; a loaded machine or a
     * sanitizer build takes longer, but never the ten minutes */
    cr_assert_lt(real, 30.0, "ten virtual minutes took %.1f s", real);
    const char *p = strstr(out, "replay: testing --seed ");
    cr_assert(p, "%s", out);
    snprintf(seed, sizeof seed, "%llu", strtoull(p + strlen("replay: testing --seed "), NULL, 10));
    char *replay[] = { path, "--seed", seed, NULL };
    for (int i = 0; i < 3; i++)
        cr_assert_eq(run_testing(replay, out, sizeof out), 1, "seed %s: %s", seed, out);
}
