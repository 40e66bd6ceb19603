/* SPDX-License-Identifier: MIT */
/* Helpers for the concurrency scenarios: plain programs (no Criterion,
 * which aborts under ThreadSanitizer) run by tools/ci/run-scenarios.sh under
 * `make test` (quick), `make check-tsan` (full) and `make stress` (stress).
 * Each scenario's main calls scenario_mode(argc, argv) and SCEN_CHECK. */
#ifndef COROKIT_SCENARIO_H
#define COROKIT_SCENARIO_H

#include <corokit.h>
#include "../join_r.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum scen_mode { SCEN_QUICK, SCEN_FULL, SCEN_STRESS };

static inline enum scen_mode scenario_mode(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "stress") == 0)
        return SCEN_STRESS;
    if (argc > 1 && strcmp(argv[1], "full") == 0)
        return SCEN_FULL;
    return SCEN_QUICK;
}

/* pick a size by mode */
#define SCEN_N(mode, quick, full, stress) \
    ((mode) == SCEN_STRESS ? (stress) : (mode) == SCEN_FULL ? (full) : (quick))

#define SCEN_CHECK(cond, ...)                                                \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* the worker counts every scenario runs across (marl's fixture) */
static const int scen_workers[] = { 1, 2, 4, 8 };
#define SCEN_NWORKERS (int)(sizeof scen_workers / sizeof scen_workers[0])

static inline coro_sched_t *scen_sched(int workers)
{
    coro_sched_t *s;
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    c.workers = workers;
    int rc = coro_sched_create(&s, &c);
    SCEN_CHECK(rc == 0, "coro_sched_create(%d): %s", workers, coro_strerror(rc));
    return s;
}

#endif
