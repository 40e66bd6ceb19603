/* SPDX-License-Identifier: MIT */
/* samples/sample_args.h - the numbers on the samples' command lines.
 *
 * atoi takes "80x" for 80 and "x" for 0 (a port of 0 is any free port), so
 * a mistyped argument would run the program with a value nobody asked for;
 * these take a whole decimal number within a range or say no, and the
 * sample prints its usage.  A worker count given on the command line is
 * 0 (every job on main's thread) up to CORO_MAX_WORKERS; one not given
 * stays CORO_SCHED_CONFIG_DEFAULT's CORO_WORKERS_AUTO (one per CPU).
 * Header-only: each sample is one file that make builds by itself. */
#ifndef SAMPLE_ARGS_H
#define SAMPLE_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <corokit.h>

/* s as a whole decimal number in [lo, hi] into *out; false (and *out
 * untouched) for an empty string, trailing text or a value out of range */
static inline bool sample_arg_num(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v;

    if (!s || !*s)
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* an int in [lo, hi] */
static inline bool sample_arg_int(const char *s, int lo, int hi, int *out)
{
    long long v;

    if (!sample_arg_num(s, lo, hi, &v))
        return false;
    *out = (int)v;
    return true;
}

/* a TCP port: 0 (any free one) to 65535 */
static inline bool sample_arg_port(const char *s, int *out)
{
    return sample_arg_int(s, 0, 65535, out);
}

/* a worker count given on the command line into cfg->workers */
static inline bool sample_arg_workers(const char *s, coro_sched_config_t *cfg)
{
    return sample_arg_int(s, 0, CORO_MAX_WORKERS, &cfg->workers);
}

#endif
