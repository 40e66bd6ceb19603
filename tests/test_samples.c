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
