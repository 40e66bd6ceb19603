/* SPDX-License-Identifier: MIT */
/* Scenario: a wake racing coro_sched_destroy, every entry point that can
 * end the last job a destroy drains (tests/destroy_race.h): the waker -
 * a plain thread, a thread in coro_join, or another scheduler's worker -
 * leaves the scheduler before destroy frees it.  With 0 and 1 workers;
 * TSan (make check-tsan) reports a touch after the free as a race, ASan
 * as a use after free.  make stress repeats each path for minutes; a
 * kind's name after the mode (event_set, cancel, ...) runs that one only. */
#define _GNU_SOURCE     /* pipe2 (destroy_race.h) */
#include "../destroy_race.h"
#include "scenario.h"

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 20, 100, 3000);

    for (int k = 0; k < DR_NKINDS; k++) {
        if (argc > 2 && strcmp(argv[2], dr_names[k]) != 0)
            continue;
#ifdef __SANITIZE_THREAD__
        /* TSan takes the job's own read of the fd (its EAGAIN, before it
         * parks) and the thread's close for a race on the fd: nothing
         * orders them in this round (the close may come before the job
         * parks, which coro_close handles).  ASan runs this kind: the
         * Criterion test, and this scenario built with ASAN=1 */
        if (k == DR_CLOSE)
            continue;
#endif
        for (int workers = 0; workers <= 1; workers++)
            for (int i = 0; i < n; i++) {
                int rc = dr_round((enum dr_kind)k, workers);
                SCEN_CHECK(rc == 0, "%s, %d workers, round %d: %s", dr_names[k], workers, i,
                           coro_strerror(rc));
            }
    }
    printf("destroy_wake: %d kinds x 2 worker counts x %d rounds\n", DR_NKINDS, n);
    return 0;
}
