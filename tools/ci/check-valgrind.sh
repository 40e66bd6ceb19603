#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/ci/check-valgrind.sh BUILD_DIR - after coro_sched_destroy nothing of
# corokit's is left: a few samples that between them use the frame pools,
# the blocking pool, the I/O thread, groups, timers and a trace run under
# memcheck with every leak kind an error, "still reachable" included.
# Short (about 15 s): CI runs it in make test.
B=${1:-build}
command -v valgrind >/dev/null || { echo "check-valgrind: valgrind is not installed" >&2; exit 1; }
log=$(mktemp) || exit 1
trace=$(mktemp) || exit 1
trap 'rm -f "$log" "$trace"' EXIT
fail=0
for prog in fire_and_forget blocking fetch_group timers nested "fanout trace"; do
    set -- $prog
    env=
    [ "${2:-}" = trace ] && env="COROKIT_TRACE=$trace"
    if ! env $env valgrind -q --leak-check=full --show-reachable=yes \
            --errors-for-leak-kinds=all --error-exitcode=99 \
            "$B/samples/$1" >/dev/null 2>"$log" </dev/null; then
        echo "check-valgrind: FAIL: $1${env:+ ($env)}:"
        sed 's/^/    /' "$log" | head -n 40
        fail=1
    else
        echo "check-valgrind: ok    $1${env:+ (with COROKIT_TRACE)}"
    fi
done
[ $fail = 0 ] && echo "check-valgrind: no error, nothing leaked or still reachable"
exit $fail
