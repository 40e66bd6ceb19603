/* SPDX-License-Identifier: MIT */
/* arming a CLOCK_MONOTONIC timerfd at an absolute deadline. */
#include <sys/timerfd.h>

#include "base/base.h"

void coro__timerfd_arm(int tfd, int64_t d)
{
    struct itimerspec its = { { 0, 0 }, { 0, 0 } };

    if (CORO__UNLIKELY(coro__tls_vclock != NULL))
        return;
    if (d != INT64_MAX) {
        if (d <= 0)
            d = 1;      /* 0 would disarm */
        its.it_value.tv_sec = d / 1000000000;
        its.it_value.tv_nsec = d % 1000000000;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}
