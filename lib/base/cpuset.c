/* SPDX-License-Identifier: MIT */
/* coro_cpuset_t: sets of CPU ids. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

void coro_cpuset_zero(coro_cpuset_t *set)
{
    if (set)
        memset(set, 0, sizeof *set);
}

int coro_cpuset_add(coro_cpuset_t *set, int cpu)
{
    if (!set || cpu < 0 || cpu >= CORO_MAX_CPUS)
        return -EINVAL;
    coro__bit_set(set->bits, (size_t)cpu);
    return 0;
}

int coro_cpuset_del(coro_cpuset_t *set, int cpu)
{
    if (!set || cpu < 0 || cpu >= CORO_MAX_CPUS)
        return -EINVAL;
    coro__bit_clear(set->bits, (size_t)cpu);
    return 0;
}

bool coro_cpuset_has(const coro_cpuset_t *set, int cpu)
{
    if (!set || cpu < 0 || cpu >= CORO_MAX_CPUS)
        return false;
    return coro__bit_test(set->bits, (size_t)cpu);
}

int coro_cpuset_count(const coro_cpuset_t *set)
{
    int n = 0;

    if (!set)
        return 0;
    for (int i = 0; i < CORO_MAX_CPUS / 64; i++)
        n += __builtin_popcountll(set->bits[i]);
    return n;
}

int coro_cpuset_next(const coro_cpuset_t *set, int from)
{
    if (!set || from >= CORO_MAX_CPUS)
        return -1;
    if (from < 0)
        from = 0;       /* "the lowest cpu >= from": every id is >= a negative from */
    for (int cpu = from; cpu < CORO_MAX_CPUS; cpu++) {
        uint64_t word = set->bits[cpu / 64] >> (cpu % 64);
        if (word)
            return cpu + __builtin_ctzll(word);
        cpu |= 63;      /* rest of this word is empty */
    }
    return -1;
}

static int parse_id(const char **p)
{
    long v;
    char *end;

    while (isspace((unsigned char)**p))
        (*p)++;
    if (!isdigit((unsigned char)**p))
        return -EINVAL;
    v = strtol(*p, &end, 10);
    if (v < 0 || v >= CORO_MAX_CPUS)
        return -EINVAL;
    *p = end;
    while (isspace((unsigned char)**p))
        (*p)++;
    return (int)v;
}

int coro_cpuset_parse(coro_cpuset_t *set, const char *list)
{
    const char *p = list;

    if (!set || !list)
        return -EINVAL;
    coro_cpuset_zero(set);
    for (;;) {
        int lo = parse_id(&p), hi;
        if (lo < 0)
            goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if ((hi = parse_id(&p)) < 0 || hi < lo)
                goto bad;
        }
        for (int c = lo; c <= hi; c++)
            coro_cpuset_add(set, c);
        if (*p == '\0')
            return 0;
        if (*p != ',')
            goto bad;
        p++;
    }
bad:
    coro_cpuset_zero(set);
    return -EINVAL;
}

int coro_cpuset_format(const coro_cpuset_t *set, char *buf, size_t len)
{
    size_t n = 0;

    if (!set || (len > 0 && !buf))
        return -EINVAL;
    if (len > 0)
        buf[0] = '\0';
    for (int c = coro_cpuset_next(set, 0); c >= 0;) {
        int e = c;
        while (coro_cpuset_has(set, e + 1))
            e++;
        char item[32];
        size_t k = (size_t)(e > c ? snprintf(item, sizeof item, "%s%d-%d", n ? "," : "", c, e)
                                  : snprintf(item, sizeof item, "%s%d", n ? "," : "", c));
        if (n + k < len)
            memcpy(buf + n, item, k + 1);
        else if (len > 0 && n < len)
            buf[n] = '\0';
        n += k;
        c = coro_cpuset_next(set, e + 1);
    }
    return (int)n;      /* at most CORO_MAX_CPUS items of a few bytes */
}
