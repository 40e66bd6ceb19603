/* SPDX-License-Identifier: MIT */
/* Scenario: coro_close from a plain thread racing a read between its
 * first EAGAIN and its wait (tests/close_arm.h): every read ends with
 * -EBADF, none waits forever.  With 1 and 2 workers; make stress runs
 * many more rounds. */
#define _GNU_SOURCE     /* pipe2 (close_arm.h) */
#include "../close_arm.h"
#include "scenario.h"

int main(int argc, char **argv)
{
    enum scen_mode mode = scenario_mode(argc, argv);
    int n = SCEN_N(mode, 2000, 5000, 100000);

#ifdef __SANITIZE_THREAD__
    /* TSan takes the job's first read of the fd (its EAGAIN) and this
     * thread's close for a race on the fd: that race is the point here,
     * and coro_close handles it (as destroy_wake's close kind).  ASan runs
     * the rounds (this scenario built with ASAN=1), and
     * tests/internal/test_io_close_arm.c orders the bad case */
    (void)mode;
    puts("io_close_arm: not under TSan (the read/close race on the fd is the test)");
    return 0;
#endif

    for (int workers = 1; workers <= 2; workers++) {
        int bad = -1;
        intptr_t got = 0;
        int rc = ca_rounds(workers, n, &bad, &got);
        SCEN_CHECK(rc == 0, "%d workers, round %d: %s (the read got %s)", workers, bad,
                   rc == -ETIMEDOUT ? "the read was never woken" : coro_strerror(rc),
                   coro_strerror((int)got));
    }
    printf("io_close_arm: 2 worker counts x %d rounds\n", n);
    return 0;
}
