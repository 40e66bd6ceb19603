/* SPDX-License-Identifier: MIT */
/* coro_cpuset_t: parsing, formatting, bounds. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <limits.h>

Test(cpuset, parse_accepts_lists_and_ranges, .timeout = 10)
{
    coro_cpuset_t s;
    char buf[64];

    cr_assert_eq(coro_cpuset_parse(&s, "0-3,8, 10 - 11"), 0);
    cr_assert_eq(coro_cpuset_count(&s), 7);
    for (int c = 0; c < 4; c++)
        cr_assert(coro_cpuset_has(&s, c));
    cr_assert(coro_cpuset_has(&s, 8) && coro_cpuset_has(&s, 10) && coro_cpuset_has(&s, 11));
    cr_assert(!coro_cpuset_has(&s, 9) && !coro_cpuset_has(&s, 4));
    cr_assert_eq(coro_cpuset_format(&s, buf, sizeof buf), 11);
    cr_assert_str_eq(buf, "0-3,8,10-11");
    cr_assert_eq(coro_cpuset_next(&s, 4), 8);
    cr_assert_eq(coro_cpuset_next(&s, 12), -1);
    cr_assert_eq(coro_cpuset_parse(&s, "1023"), 0);
    cr_assert(coro_cpuset_has(&s, 1023));
    cr_assert_eq(coro_cpuset_next(&s, 0), 1023);
}

Test(cpuset, parse_rejects_bad_lists_with_einval_and_leaves_the_set_empty, .timeout = 10)
{
    static const char *bad[] = { "", " ", "a", "1-", "-1", "3-1", "1,,2", "1,", "1024",
                                 "0-1024", "99999999999999999999", "1 2", "1;2" };
    coro_cpuset_t s;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        coro_cpuset_add(&s, 5);
        cr_assert_eq(coro_cpuset_parse(&s, bad[i]), -EINVAL, "\"%s\" accepted", bad[i]);
        cr_assert_eq(coro_cpuset_count(&s), 0, "\"%s\" left CPUs in the set", bad[i]);
    }
    cr_assert_eq(coro_cpuset_parse(NULL, "1"), -EINVAL);
    cr_assert_eq(coro_cpuset_parse(&s, NULL), -EINVAL);
}

Test(cpuset, ids_outside_the_range_are_refused, .timeout = 10)
{
    coro_cpuset_t s;
    char small[4];

    coro_cpuset_zero(&s);
    cr_assert_eq(coro_cpuset_add(&s, CORO_MAX_CPUS), -EINVAL);
    cr_assert_eq(coro_cpuset_add(&s, -1), -EINVAL);
    cr_assert_eq(coro_cpuset_add(NULL, 0), -EINVAL);
    cr_assert_eq(coro_cpuset_del(&s, CORO_MAX_CPUS), -EINVAL);
    cr_assert(!coro_cpuset_has(&s, CORO_MAX_CPUS));
    cr_assert(!coro_cpuset_has(NULL, 0));
    cr_assert_eq(coro_cpuset_count(NULL), 0);
    cr_assert_eq(coro_cpuset_count(&s), 0);
    cr_assert_eq(coro_cpuset_add(&s, 100), 0);
    cr_assert_eq(coro_cpuset_add(&s, 200), 0);
    /* truncated output, full length returned as snprintf does */
    cr_assert_eq(coro_cpuset_format(&s, small, sizeof small), 7);
    cr_assert_str_eq(small, "100");
    cr_assert_eq(coro_cpuset_del(&s, 100), 0);
    cr_assert_eq(coro_cpuset_count(&s), 1);
    cr_assert_eq(coro_cpuset_format(NULL, small, 4), -EINVAL);
}

Test(cpuset, next_from_a_negative_id_finds_the_lowest_cpu, .timeout = 10)
{
    coro_cpuset_t s;

    coro_cpuset_zero(&s);
    coro_cpuset_add(&s, 3);
    cr_assert_eq(coro_cpuset_next(&s, -1), 3, "every id is >= -1: 3 is the lowest");
    cr_assert_eq(coro_cpuset_next(&s, INT_MIN), 3);
    cr_assert_eq(coro_cpuset_next(&s, 3), 3);
    cr_assert_eq(coro_cpuset_next(&s, 4), -1);
    cr_assert_eq(coro_cpuset_next(&s, CORO_MAX_CPUS), -1);
    cr_assert_eq(coro_cpuset_next(&s, INT_MAX), -1);
    cr_assert_eq(coro_cpuset_next(NULL, 0), -1);
    coro_cpuset_zero(&s);
    cr_assert_eq(coro_cpuset_next(&s, -1), -1);
}

/* one NULL rule (cpuset.h): readers see the empty set, writers refuse it,
 * coro_cpuset_zero ignores it */
Test(cpuset, a_null_set_reads_as_empty_and_is_refused_by_writers, .timeout = 10)
{
    char buf[16];
    coro_cpuset_zero(NULL);
    cr_assert_not(coro_cpuset_has(NULL, 0));
    cr_assert_eq(coro_cpuset_count(NULL), 0);
    cr_assert_eq(coro_cpuset_next(NULL, 0), -1);
    cr_assert_eq(coro_cpuset_add(NULL, 0), -EINVAL);
    cr_assert_eq(coro_cpuset_del(NULL, 0), -EINVAL);
    cr_assert_eq(coro_cpuset_parse(NULL, "0"), -EINVAL);
    cr_assert_eq(coro_cpuset_format(NULL, buf, sizeof buf), -EINVAL);
}
