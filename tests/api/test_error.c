/* SPDX-License-Identifier: MIT */
/* Error codes, C++-free ABI facts and the default configuration: what an
 * integrator relies on without reading lib/. */
#include <criterion/criterion.h>
#include <corokit.h>
#include <stdio.h>
#include <string.h>

Test(error, codes_the_library_returns_have_a_name_and_a_text, .timeout = 10)
{
    /* each of these is returned by lib/ (grep -E '\-E[A-Z]+' lib/) or by the
     * system calls behind the I/O awaitables */
    static const struct { int e; const char *name; } codes[] = {
        { ENOSPC, "ENOSPC" }, { EIO, "EIO" }, { ECONNRESET, "ECONNRESET" },
        { ECONNREFUSED, "ECONNREFUSED" }, { EMFILE, "EMFILE" },
        { EADDRINUSE, "EADDRINUSE" }, { ENOTCONN, "ENOTCONN" },
        { EINVAL, "EINVAL" }, { ESHUTDOWN, "ESHUTDOWN" },
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        cr_assert_str_eq(coro_err_name(-codes[i].e), codes[i].name);
        cr_assert_str_neq(coro_strerror(-codes[i].e), "unknown error", "%s", codes[i].name);
    }
    cr_assert_str_eq(coro_strerror(-ECONNRESET), "connection reset by peer");
    cr_assert_str_eq(coro_strerror(-ENOSPC), coro_strerror(ENOSPC));
}

Test(error, codes_passed_through_from_file_system_calls_have_a_name_and_a_text, .timeout = 10)
{
    /* what an open or a read may give: coro_sched_trace_write, coro_read
     * of a regular file or a directory */
    static const struct { int e; const char *name; } codes[] = {
        { EISDIR, "EISDIR" }, { ENAMETOOLONG, "ENAMETOOLONG" }, { ENOTDIR, "ENOTDIR" },
        { EROFS, "EROFS" }, { EEXIST, "EEXIST" }, { ELOOP, "ELOOP" }, { EDQUOT, "EDQUOT" },
        { EFBIG, "EFBIG" }, { ETXTBSY, "ETXTBSY" }, { ENXIO, "ENXIO" }, { EOVERFLOW, "EOVERFLOW" },
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        cr_assert_str_eq(coro_err_name(-codes[i].e), codes[i].name);
        cr_assert_str_neq(coro_strerror(-codes[i].e), "unknown error", "%s", codes[i].name);
    }
    cr_assert_str_eq(coro_strerror(-EISDIR), "is a directory");
}

Test(error, every_errno_the_system_knows_has_a_name_in_the_map, .timeout = 10)
{
    /* strerror names each errno value the C library knows; none of them
     * may be UNKNOWN to corokit */
    int known = 0;
    for (int e = 1; e < 4096; e++) {
        char unknown[64];
        snprintf(unknown, sizeof unknown, "Unknown error %d", e);
        if (strcmp(strerror(e), unknown) == 0)
            continue;
        known++;
        cr_assert_str_neq(coro_err_name(-e), "UNKNOWN", "errno %d (%s)", e, strerror(e));
        cr_assert_str_neq(coro_strerror(e), "unknown error", "errno %d", e);
    }
    cr_assert_geq(known, 100, "strerror knew only %d codes", known);
}

Test(error, a_trace_written_to_a_directory_fails_with_a_named_eisdir, .timeout = 30)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_t *s;
    c.workers = 1;
    c.trace_events = 64;
    cr_assert_eq(coro_sched_create(&s, &c), 0);
    int rc = coro_sched_trace_write(s, "/tmp");
    cr_assert_eq(rc, -EISDIR);
    cr_assert_str_eq(coro_err_name(rc), "EISDIR");
    char longname[8192];
    memset(longname, 'a', sizeof longname - 1);
    longname[0] = '/';
    longname[sizeof longname - 1] = 0;
    rc = coro_sched_trace_write(s, longname);
    cr_assert_eq(rc, -ENAMETOOLONG);
    cr_assert_str_eq(coro_err_name(rc), "ENAMETOOLONG");
    rc = coro_sched_trace_write(s, "/dev/null/x.json");
    cr_assert_eq(rc, -ENOTDIR);
    cr_assert_str_eq(coro_strerror(rc), "not a directory");
    coro_sched_destroy(s);
}

Test(error, a_code_outside_the_map_is_unknown_not_a_crash, .timeout = 10)
{
    cr_assert_str_eq(coro_err_name(-4095), "UNKNOWN");
    cr_assert_str_eq(coro_strerror(-4095), "unknown error");
}

Test(error, every_map_entry_has_a_distinct_value_and_text, .timeout = 10)
{
    static const struct { int e; const char *name, *msg; } map[] = {
#define X(name, msg) { name, #name, msg },
        CORO_ERRNO_MAP(X)
#undef X
    };
    size_t n = sizeof map / sizeof map[0];
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(coro_err_name(-map[i].e), map[i].name);
        cr_assert_str_eq(coro_strerror(-map[i].e), map[i].msg);
        for (size_t j = i + 1; j < n; j++)
            cr_assert_neq(map[i].e, map[j].e, "%s and %s", map[i].name, map[j].name);
    }
}

Test(error, abi_option_structs_start_zeroed_with_room_to_grow, .timeout = 10)
{
    coro_sched_config_t c = CORO_SCHED_CONFIG_DEFAULT;
    coro_sched_config_t f = coro_sched_config_default();
    cr_assert_eq(c.workers, CORO_WORKERS_AUTO);
    cr_assert(c.pin);
    /* the macro and the function agree, field by field (not memcmp: the
     * padding of a compound literal is unspecified) */
    cr_assert_eq(f.workers, c.workers);
    cr_assert_eq(f.pin, c.pin);
    cr_assert_eq(f.cpus, NULL);
    cr_assert_eq(f.alloc, NULL);
    cr_assert_eq(c.reserved_u | f.reserved_u, 0);
    cr_assert_eq(c.blocking_keepalive_ns | f.blocking_keepalive_ns, 0);
    for (size_t i = 0; i < sizeof c.reserved_b / sizeof c.reserved_b[0]; i++)
        cr_assert_eq(c.reserved_b[i] | f.reserved_b[i], 0);
    coro_spawn_opts_t o = { .priority = CORO_PRIO_HIGH };
    for (size_t i = 0; i < sizeof o.reserved / sizeof o.reserved[0]; i++)
        cr_assert_eq(o.reserved[i], 0);
    cr_assert_geq(sizeof o.reserved, sizeof(uint64_t), "a reserved word left to grow into");
}
