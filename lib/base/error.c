/* SPDX-License-Identifier: MIT */
/* coro_strerror / coro_err_name from one table (CORO_ERRNO_MAP). */
#include <string.h>

#include "base/base.h"

/* |rc| without negating INT_MIN (undefined): as unsigned, INT_MIN gives
 * 2^31, which no errno matches */
static unsigned err_abs(int rc)
{
    return rc < 0 ? 0u - (unsigned)rc : (unsigned)rc;
}

const char *coro_strerror(int rc)
{
    unsigned e = err_abs(rc);

    if (e == 0)
        return "success";
    switch (e) {
#define CORO__MSG(name, msg) case name: return msg;
        CORO_ERRNO_MAP(CORO__MSG)
#undef CORO__MSG
    default:
        return "unknown error";
    }
}

const char *coro_err_name(int rc)
{
    unsigned e = err_abs(rc);

    if (e == 0)
        return "OK";
    switch (e) {
#define CORO__NAME(name, msg) case name: return #name;
        CORO_ERRNO_MAP(CORO__NAME)
#undef CORO__NAME
    default:
        return "UNKNOWN";
    }
}
