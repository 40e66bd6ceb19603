#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench/gen.sh - corokit's generators against their C++20 twin
# (docs/benchmarks.md, "Generators").  Builds tools/bench/gen_bench.c (and
# gen_bench_sw.c) against build/libcorokit.a and tools/bench/gen_twin.cpp
# with g++ -std=c++20, runs every shape of both ROUNDS times, alternating,
# and prints the medians and the ratios the generators must show:
#   plain   corokit's values/s >= 1.0x the C++20 generator's (the pull as
#           the guide writes a hot generator: coro_gen_next_of naming a body
#           of the switch back end; plain_of: the same body with the labels
#           back end; plain_next: coro_gen_next - shown, each against its
#           own run of the twin's plain shape)
#   job     corokit's values/s in a job >= 0.5x the C++20 async generator's
#   from64  corokit's ns a value through 64 levels of CORO_YIELD_FROM
#           <= 2x its ns through 1 level
# A benchmark, not a test: the verdicts are printed, the exit status is 0
# unless a program failed.  On a shared machine run it under the lock:
#   flock /tmp/corokit-bench.lock tools/bench/gen.sh
#
# Environment: ROUNDS (default 5), N (values for the plain and from shapes,
# default 100000000), NJOB (values for the job shapes, default 50000000),
# QUICK=1 (3 rounds, a tenth of the values), CC (gcc), CXX (g++).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$HERE/build
CC=${CC:-gcc}
CXX=${CXX:-g++}
ROUNDS=${ROUNDS:-5}
N=${N:-100000000}
NJOB=${NJOB:-50000000}
if [ -n "${QUICK:-}" ] && [ "${QUICK:-}" != 0 ]; then
    ROUNDS=3
    N=$((N / 10))
    NJOB=$((NJOB / 10))
fi
ALL="plain plain_of plain_next job from1 from64 job64"
SHAPES=$ALL

mkdir -p "$BUILD"
if [ ! -f "$ROOT/build/libcorokit.a" ]; then
    echo "gen.sh: building corokit (make lib)" >&2
    make -C "$ROOT" -j2 lib >&2
fi
$CC -std=c11 -O2 -Wall -Wextra -Werror -I"$ROOT/include" "$HERE/gen_bench.c" "$HERE/gen_bench_sw.c" \
    "$ROOT/build/libcorokit.a" -lck -lpthread -ldl -o "$BUILD/gen_bench"
$CXX -std=c++20 -O2 -Wall -Wextra -Werror "$HERE/gen_twin.cpp" -o "$BUILD/gen_twin"

declare -A NS
for round in $(seq 1 "$ROUNDS"); do
    for sh in $SHAPES; do
        n=$N
        case $sh in job*) n=$NJOB ;; esac
        for sys in corokit cxx20; do
            bin=$BUILD/gen_bench
            arg=$sh
            if [ $sys = cxx20 ]; then
                bin=$BUILD/gen_twin
                case $sh in plain*) arg=plain ;; esac   # the twin has one plain pull
            fi
            # alternate which system goes first
            line=$("$bin" "$arg" "$n") || { echo "gen.sh: $sys $sh failed" >&2; exit 1; }
            NS[$sys.$sh]="${NS[$sys.$sh]:-} $(echo "$line" | awk '{ print $3 }')"
        done
    done
    SHAPES=$(echo "$SHAPES" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-10s %14s %14s %14s %14s\n' shape corokit_ns cxx20_ns corokit_Mv/s cxx20_Mv/s
declare -A MED
for sh in $ALL; do
    for sys in corokit cxx20; do MED[$sys.$sh]=$(echo "${NS[$sys.$sh]}" | median); done
    awk -v s="$sh" -v a="${MED[corokit.$sh]}" -v b="${MED[cxx20.$sh]}" \
        'BEGIN { printf "%-10s %14.2f %14.2f %14.1f %14.1f\n", s, a, b, 1e3 / a, 1e3 / b }'
done
echo "medians of $ROUNDS rounds; plain/from: $N values, job: $NJOB values; cxx20 from/job64: each level re-yields (no elements_of in g++ 12)"
awk -v a="${MED[corokit.plain]}" -v b="${MED[cxx20.plain]}" \
    'BEGIN { r = b / a; printf "plain pull:  corokit %.2fx the C++20 generator (want >= 1.0): %s\n", r, (r >= 1.0 ? "ok" : "MISSED") }'
for sh in plain_of plain_next; do
    awk -v s="$sh" -v a="${MED[corokit.$sh]}" -v b="${MED[cxx20.$sh]}" \
        'BEGIN { printf "  (%s: corokit %.2fx the C++20 generator, shown)\n", s, b / a }'
done
awk -v a="${MED[corokit.job]}" -v b="${MED[cxx20.job]}" \
    'BEGIN { r = b / a; printf "in a job:    corokit %.2fx the C++20 async generator (want >= 0.5): %s\n", r, (r >= 0.5 ? "ok" : "MISSED") }'
awk -v a="${MED[corokit.from64]}" -v b="${MED[corokit.from1]}" \
    'BEGIN { r = a / b; printf "yield-from:  64 levels cost %.2fx 1 level (want <= 2.0): %s\n", r, (r <= 2.0 ? "ok" : "MISSED") }'
