#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every concurrency scenario of BUILD/stress in MODE (quick|full|stress).
# Used by make test (quick), make check-tsan (full, TSan build) and make stress.
set -u
dir=${1:-build}/stress
mode=${2:-quick}
[ -d "$dir" ] || { echo "0 passed, 0 failed"; exit 0; }
pass=0; fail=0
for t in "$dir"/*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if "$t" "$mode" >"$dir/$name.log" 2>&1; then
        pass=$((pass + 1))
        echo "  ok    $name ($mode)"
    else
        fail=$((fail + 1))
        echo "  FAIL  $name ($mode): see $dir/$name.log"
        tail -n 30 "$dir/$name.log"
    fi
done
echo "scenarios: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
