/* SPDX-License-Identifier: MIT */
/* corokit: sets of CPUs, for job affinity and worker placement. */
#ifndef COROKIT_CPUSET_H
#define COROKIT_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Highest OS CPU id + 1 that a set can hold. */
#define CORO_MAX_CPUS 1024

/* A set of OS CPU ids (as sched_getcpu() reports them).  Plain data: copy
 * it, compare it with memcmp, keep it anywhere.  Zero-initialised = empty. */
typedef struct coro_cpuset {
    uint64_t bits[CORO_MAX_CPUS / 64];
} coro_cpuset_t;

/* One rule for a NULL set: the functions that read a set read NULL as the
 * empty set (has: false, count: 0, next: -1); those that write into it
 * refuse NULL (add, del, parse, format: -EINVAL), and coro_cpuset_zero,
 * which returns nothing, does nothing. */

/* coro_cpuset_zero - empty the set; nothing for NULL. */
CORO_EXTERN void coro_cpuset_zero(coro_cpuset_t *set);

/* coro_cpuset_add - add cpu.  Returns 0, or -EINVAL when set is NULL or cpu
 * is outside [0, CORO_MAX_CPUS). */
CORO_EXTERN int coro_cpuset_add(coro_cpuset_t *set, int cpu);

/* coro_cpuset_del - remove cpu.  Returns 0 or -EINVAL as coro_cpuset_add. */
CORO_EXTERN int coro_cpuset_del(coro_cpuset_t *set, int cpu);

/* coro_cpuset_has - whether cpu is in the set; false for a NULL set or a cpu
 * out of range. */
CORO_EXTERN bool coro_cpuset_has(const coro_cpuset_t *set, int cpu);

/* coro_cpuset_count - how many CPUs the set holds (0 for NULL). */
CORO_EXTERN int coro_cpuset_count(const coro_cpuset_t *set);

/* coro_cpuset_next - the lowest cpu in the set that is >= from (any int:
 * a negative from finds the lowest member), or -1 (none, or NULL set). */
CORO_EXTERN int coro_cpuset_next(const coro_cpuset_t *set, int from);

/* coro_cpuset_parse - fill set from a list such as "0-3,8,10-11" (the
 * syntax of taskset -c and /sys/devices/system/cpu/online).  White space
 * around items is allowed.  Returns 0, or -EINVAL for NULL arguments, an
 * empty or malformed list, a reversed range or an id >= CORO_MAX_CPUS;
 * on error the set is left empty. */
CORO_EXTERN int coro_cpuset_parse(coro_cpuset_t *set, const char *list);

/* coro_cpuset_format - write set as a list ("0-3,8") into buf of size len
 * (a size: size_t, as every size the API takes; 0 writes nothing and buf
 * may then be NULL).  Returns the length the full text needs (as
 * snprintf), or -EINVAL. */
CORO_EXTERN int coro_cpuset_format(const coro_cpuset_t *set, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
