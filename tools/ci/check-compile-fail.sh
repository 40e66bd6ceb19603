#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/ci/check-compile-fail.sh - each tests/compile_fail/*.c holds one misuse
# of the API behind #ifdef CORO_CF_MISUSE and its correct twin otherwise.
# The misuse must be refused by the compiler with a message matching the
# file's "expect:" line (an extended regex); the twin must compile, on both
# back ends and under -Wpedantic, so that the check itself can fail.
# Usage: tools/ci/check-compile-fail.sh [CC]   (default: $CC, then cc)
cc=${1:-${CC:-cc}}
flags="-std=gnu11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Iinclude -c -o /dev/null"
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
pass=0
fail=0
for f in tests/compile_fail/*.c; do
    name=$(basename "$f" .c)
    expect=$(sed -n 's/^.*expect: \(.*[^ */]\)[ */]*$/\1/p' "$f" | head -n 1)
    ok=1
    if [ -z "$expect" ]; then
        echo "  FAIL  $name: no 'expect:' line"
        ok=0
    elif $cc $flags -DCORO_CF_MISUSE "$f" >"$out" 2>&1; then
        echo "  FAIL  $name: the misuse compiled"
        ok=0
    elif ! grep -Eq "$expect" "$out"; then
        echo "  FAIL  $name: refused, but not with /$expect/:"
        sed 's/^/        /' "$out" | head -n 20
        ok=0
    fi
    for be in "" "-DCORO_USE_SWITCH=1"; do
        if ! $cc $flags -Wpedantic $be "$f" >"$out" 2>&1; then
            echo "  FAIL  $name: the correct twin does not compile ($be):"
            sed 's/^/        /' "$out" | head -n 20
            ok=0
        fi
    done
    if [ $ok = 1 ]; then
        echo "  ok    $name (refused)"
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
    fi
done
echo "compile-fail: $pass refused as expected, $fail failed ($cc)"
[ $fail = 0 ]
