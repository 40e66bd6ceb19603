/* SPDX-License-Identifier: MIT */
/* tests/build/loader.c - loads a plug-in with dlopen(3) after start-up and
 * runs it (tools/ci/check-build.sh): tests/build/consumer.c built as a
 * shared object whose main is renamed plugin_main, linked against the
 * installed libcorokit.so (which dlopen then loads: its thread-locals use
 * the initial-exec model, so they must fit glibc's static TLS reserve)
 * or with libcorokit.a inside it (the static library's objects are
 * position-independent).  Exits 0 when the plug-in's own check passed. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: loader PLUGIN.so\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "loader: dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run)(void);
    *(void **)&run = dlsym(h, "plugin_main");
    if (!run) {
        fprintf(stderr, "loader: no plugin_main in %s\n", argv[1]);
        return 1;
    }
    int rc = run();
    dlclose(h);
    return rc;
}
