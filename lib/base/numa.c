/* SPDX-License-Identifier: MIT */
/* Layer 0 (base): the machine's NUMA nodes, as Linux lists them in
 * /sys/devices/system/node/node<N>/cpulist.  Read once per process (the
 * first scheduler create), kept for good: a CPU's node does not change
 * while it is online, and a CPU that comes online later than that read
 * counts as node 0, which costs only the order of a thief's victims
 * (sched/steal.c STEALING), never a job.  No hwloc: the library depends
 * on nothing that reads topology, and the kernel's list is all it needs.
 * A machine without the directory (a kernel without NUMA, a container
 * that hides /sys) is one node. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#ifdef CORO_TEST_HOOKS
int coro__test_numa_nodes;
#endif

static int16_t node_of[CORO_MAX_CPUS];      /* fixed after the once */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_nodes(void)
{
    DIR *d = opendir("/sys/devices/system/node");
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        char *end, path[300], list[4096];
        if (strncmp(e->d_name, "node", 4) != 0)
            continue;
        long n = strtol(e->d_name + 4, &end, 10);
        if (end == e->d_name + 4 || *end || n < 0 || n > INT16_MAX)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/node/%s/cpulist", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t len = fread(list, 1, sizeof list - 1, f);
        fclose(f);
        list[len] = 0;
        list[strcspn(list, "\n")] = 0;
        coro_cpuset_t set;
        if (coro_cpuset_parse(&set, list) < 0)
            continue;       /* an empty node (memory only) lists nothing */
        for (int c = 0; c < CORO_MAX_CPUS; c++)
            if (coro_cpuset_has(&set, c))
                node_of[c] = (int16_t)n;
    }
    closedir(d);
}

int coro__numa_node(int cpu)
{
    /* set by a test before the create that asks */
    int fake = CORO__HOOK(coro__test_numa_nodes, 0);
    if (cpu < 0 || cpu >= CORO_MAX_CPUS)
        return 0;
    if (fake > 0)
        return cpu % fake;
    pthread_once(&once, read_nodes);
    return node_of[cpu];
}
