#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/ci/check-hooks.sh [BUILD_DIR] - the test hooks (lib/base/base.h,
# TEST HOOKS) are built into the test library alone.
#
# Fails when
#   - a header's hook part does more than declare (tools/dev/hook-files.sh
#     --check: the test library shares the objects the hooks do not change);
#   - a hook below is named in the symbol table of the shipped static or
#     shared library (nm, hidden and local symbols included);
#   - a hook below is not defined in the test library (the list is stale);
#   - the test library defines a symbol the shipped static library lacks
#     that is not in the list (a new hook: add it here).
# Needs `make lib` and the test library (the Makefile's check-hooks target
# builds both).
#
# tools/ci/check-hooks.sh --self-test: builds tiny libraries where a hook
# is shipped, and where the test library defines an unlisted symbol, and
# requires this script to refuse both (and to accept them without).
set -euo pipefail
cd "$(dirname "$0")/../.."
HOOKS=${CHECK_HOOKS_LIST:-"
coro__blocking_arm_starts
coro__blocking_spawn_hook
coro__busy_look_off
coro__frames_held
coro__idle_yields
coro__idle_yields_late
coro__io_close_hook
coro__io_read_calls
coro__io_sleep_cancel_looks
coro__io_thread_hold_ns
coro__io_thread_timers_off
coro__io_woken_by
coro__parklot_cancel_sweeps
coro__parklot_cancel_visits
coro__parklot_timers_count
coro__pins_held
coro__membarrier_fail
coro__sharedq_claimed
coro__sys_libc
coro__test_ncpus
coro__test_numa_nodes
coro__test_steal_order
"}

if [ "${1:-}" = "--self-test" ]; then
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
    CC=${CC:-cc}
    mk() {  # dir "code of the shipped library" "code of the test library"
        mkdir -p "$T/$1"
        printf '%s\n' "$2" >"$T/$1/s.c"
        printf '%s\n' "$3" >"$T/$1/t.c"
        $CC -fPIC -c -o "$T/$1/s.o" "$T/$1/s.c"
        $CC -fPIC -c -o "$T/$1/t.o" "$T/$1/t.c"
        ar rcs "$T/$1/libcorokit.a" "$T/$1/s.o"
        $CC -shared -o "$T/$1/libcorokit.so" "$T/$1/s.o"
        ar rcs "$T/$1/libcorokit_test.a" "$T/$1/t.o"
    }
    lib='int lib_fn(void) { return 1; }'
    mk good "$lib" "$lib int hook_knob; int hook_count(void) { return hook_knob; }"
    mk shipped "$lib __attribute__((visibility(\"hidden\"))) int hook_knob;" \
        "$lib int hook_knob; int hook_count(void) { return hook_knob; }"
    mk unlisted "$lib" "$lib int hook_knob; int hook_count(void) { return 0; } int new_knob;"
    export CHECK_HOOKS_LIST="hook_knob hook_count"
    "$0" "$T/good" >/dev/null || { echo "check-hooks: self-test: a good tree was refused" >&2; exit 1; }
    for bad in shipped:"hook_knob is in a shipped library" unlisted:"new_knob"; do
        out=$("$0" "$T/${bad%%:*}" 2>&1) && { echo "check-hooks: self-test: ${bad%%:*} was accepted" >&2; exit 1; }
        case $out in *"${bad#*:}"*) ;; *) echo "check-hooks: self-test: no \"${bad#*:}\" in: $out" >&2; exit 1 ;; esac
    done
    # tools/dev/hook-files.sh: which files of a tiny lib/ the hooks change,
    # and a header's hook part that holds more than declarations
    S=$T/src
    mkdir -p "$S/base" "$S/io"
    printf '%s\n' '#ifdef CORO_TEST_HOOKS' '#define CORO__HOOK(k, d) (k)' '#else' \
        '#define CORO__HOOK(k, d) (d)' '#endif' '#ifdef CORO_TEST_HOOKS' \
        'CORO__HIDDEN extern int knob;   /* a declaration */' 'extern int (*hookfn)(int,' \
        '                   int) CORO__HIDDEN;' '#endif' >"$S/base/base.h"
    printf '%s\n' '#include "base/base.h"' '#define VIA() CORO__HOOK(knob, 0)' >"$S/base/sys.h"
    printf '%s\n' '#include "base/sys.h"' >"$S/base/wrap.h"
    printf '%s\n' '#include "base/wrap.h"' 'int a(void) { return 1; }' >"$S/io/a.c"
    printf '%s\n' '#include "base/base.h"' 'int b(void) { return 2; }' >"$S/io/b.c"
    printf '%s\n' '#ifdef CORO_TEST_HOOKS' 'int c_count;' '#endif' >"$S/io/c.c"
    printf '%s\n' '/* not CORO__HOOK(x, 0) */' '#include "base/base.h"' >"$S/io/d.c"
    got=$(tools/dev/hook-files.sh "$S" | tr '\n' ' ')
    [ "$got" = "$S/io/a.c $S/io/c.c " ] ||
        { echo "check-hooks: self-test: hook-files.sh listed \"$got\", not io/a.c io/c.c" >&2; exit 1; }
    tools/dev/hook-files.sh --check "$S" >/dev/null ||
        { echo "check-hooks: self-test: hook-files.sh --check refused a good tree" >&2; exit 1; }
    for bad in 'struct s {:#ifdef CORO_TEST_HOOKS:int n;:#endif:};=not a declaration' \
        '#ifdef CORO_TEST_HOOKS:static inline int f(void) { return 1; }:#endif=code' \
        '#ifdef CORO_TEST_HOOKS:#define KNOB 1:#endif=a preprocessor line' \
        '#ifndef CORO_TEST_HOOKS:int g(void);:#endif=named other than'; do
        printf '%s\n' "${bad%%=*}" | tr ':' '\n' >"$S/io/bad.h"
        out=$(tools/dev/hook-files.sh --check "$S" 2>&1) &&
            { echo "check-hooks: self-test: hook-files.sh --check passed: ${bad%%=*}" >&2; exit 1; }
        case $out in *"${bad#*=}"*) ;; *) echo "check-hooks: self-test: no \"${bad#*=}\" in: $out" >&2; exit 1 ;; esac
    done
    echo "check-hooks: self-test: a shipped hook and an unlisted test-only symbol are refused;"
    echo "  hook-files.sh finds the files a hook changes, and refuses a hook part that does more than declare"
    exit 0
fi

B=${1:-build}
STATIC=$B/libcorokit.a
SHARED=$B/libcorokit.so
TESTLIB=$B/libcorokit_test.a
for f in "$STATIC" "$SHARED" "$TESTLIB"; do
    [ -e "$f" ] || { echo "check-hooks: $f is missing: run make lib $TESTLIB first" >&2; exit 2; }
done

bad=0
# the test library takes the shipped object of a file the hooks do not
# change (the Makefile, tools/dev/hook-files.sh): so a header's hook part
# may only declare
tools/dev/hook-files.sh --check >/dev/null || bad=1
shipped=$( { nm -A "$STATIC"; nm -A "$SHARED"; nm -D -A "$SHARED"; } 2>/dev/null)
for h in $HOOKS; do
    if hit=$(grep -E "[[:space:]]${h}(\.[a-z0-9.]+)?$" <<<"$shipped"); then
        echo "check-hooks: the test hook $h is in a shipped library:" >&2
        echo "$hit" | sed 's/^/    /' >&2
        bad=1
    fi
done
defined() { nm --defined-only "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBRV]$/ {print $3}' | sort -u; }
testdefs=$(defined "$TESTLIB")
for h in $HOOKS; do
    grep -qx "$h" <<<"$testdefs" || { echo "check-hooks: $h is not defined in $TESTLIB (stale list?)" >&2; bad=1; }
done
extra=$(comm -23 <(echo "$testdefs") <(defined "$STATIC") | grep -vxF -f <(tr -s ' \n' '\n' <<<"$HOOKS" | sed '/^$/d') || true)
if [ -n "$extra" ]; then
    echo "check-hooks: only the test library defines these, and they are not in the list:" >&2
    echo "$extra" | sed 's/^/    /' >&2
    bad=1
fi
[ "$bad" -eq 0 ] || exit 1
echo "check-hooks: $(wc -w <<<"$HOOKS") test hooks, in $TESTLIB alone"
