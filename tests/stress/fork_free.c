/* SPDX-License-Identifier: MIT */
/* Scenario: a parent whose fork-join children live in its own frame is
 * freed right after a plain thread's coro_join on it returned; the
 * children's finishers (other workers, another scheduler's) must not
 * touch the children's frames after they woke the parent
 * (tests/fork_free.h).  TSan (make check-tsan) reports a late touch as a
 * race with the free, ASan as a use after free. */
#include "../fork_free.h"
#include "scenario.h"

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 200, 1000, 50000);
    coro_sched_t *s = scen_sched(2), *b = scen_sched(1);

    for (int v = 0; v < 4; v++) {
        coro_sched_t *kids_on = v < 2 ? s : b;
        for (int i = 0; i < n; i++) {
            intptr_t r = ff_round(s, kids_on, v % 2 == 0);
            SCEN_CHECK(r == FF_KIDS, "variant %d, round %d: %ld", v, i, (long)r);
        }
    }
    SCEN_CHECK(coro_sched_destroy(b) == 0, "destroy");
    SCEN_CHECK(coro_sched_destroy(s) == 0, "destroy");
    printf("fork_free: 4 variants x %d rounds\n", n);
    return 0;
}
