#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What tracing costs when on (issue 14: at most 15 % on the spawn shapes):
# runs corokit_bench with COROKIT_TRACE unset and set, alternating, N times
# per shape and worker count; each run's figure is the median of its REPS
# iterations; prints, per shape x workers, the median of the off runs, of
# the on runs, their ratio (on/off), and the median of the pairs' ratios.
#
#   tools/bench/trace_cost.sh [BIN]        (default: tools/bench/build/corokit_bench,
#                                           built from build/libcorokit.a if missing)
#   SHAPES="spawn_many_local spawn_many_remote ping_pong chained_spawn"
#   WORKERS="1 2"  N=11  REPS=20           (the defaults)
#   VERBOSE=1: every pair on stderr
#   BASE=OTHER_BIN: also run OTHER_BIN traced in each alternation (a tree
#   before a change), and print its on/off against BIN's off
#
# The machine is shared: quote the load (printed) beside the figures.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$ROOT/tools/bench/build/corokit_bench}
SHAPES=${SHAPES:-"spawn_many_local spawn_many_remote ping_pong chained_spawn"}
WORKERS=${WORKERS:-"1 2"}
N=${N:-11}
REPS=${REPS:-20}
TRACE_FILE=$(mktemp /tmp/trace_cost.XXXXXX.json)
trap 'rm -f "$TRACE_FILE"' EXIT

if [ ! -x "$BIN" ]; then
    mkdir -p "$(dirname "$BIN")"
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$ROOT/include" -I"$ROOT/tools/bench" \
        "$ROOT/tools/bench/corokit_bench.c" "$ROOT/build/libcorokit.a" -lck -lpthread -o "$BIN"
fi

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }


echo "# $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg) bin=$BIN N=$N REPS=$REPS"
printf '%-20s %2s %12s %12s %7s %7s' shape W off_ns on_ns on/off pairs
[ -z "${BASE:-}" ] || printf ' %12s %7s %7s' base_on_ns on/off pairs
echo
for shape in $SHAPES; do
    for w in $WORKERS; do
        offs=() ons=() ratios=() bons=() bratios=()
        for ((i = 0; i < N; i++)); do
            off=$(env -u COROKIT_TRACE "$BIN" "$shape" "$w" "$REPS" |
                  sed -n 's/.*ns=\([0-9]*\).*/\1/p' | median)
            on=$(COROKIT_TRACE=$TRACE_FILE "$BIN" "$shape" "$w" "$REPS" |
                 sed -n 's/.*ns=\([0-9]*\).*/\1/p' | median)
            offs+=("$off") ons+=("$on")
            ratios+=("$(awk -v a="$on" -v b="$off" 'BEGIN{printf "%.4f", a/b}')")
            if [ -n "${BASE:-}" ]; then
                bon=$(COROKIT_TRACE=$TRACE_FILE "$BASE" "$shape" "$w" "$REPS" |
                      sed -n 's/.*ns=\([0-9]*\).*/\1/p' | median)
                bons+=("$bon")
                bratios+=("$(awk -v a="$bon" -v b="$off" 'BEGIN{printf "%.4f", a/b}')")
            fi
            [ -z "${VERBOSE:-}" ] || echo "  $shape $w off=$off on=$on ${bon:+base_on=$bon}" >&2
        done
        moff=$(printf '%s\n' "${offs[@]}" | median)
        mon=$(printf '%s\n' "${ons[@]}" | median)
        mr=$(printf '%s\n' "${ratios[@]}" | median)
        printf '%-20s %2s %12.0f %12.0f %7.3f %7.3f' "$shape" "$w" "$moff" "$mon" \
            "$(awk -v a="$mon" -v b="$moff" 'BEGIN{print a/b}')" "$mr"
        if [ -n "${BASE:-}" ]; then
            mb=$(printf '%s\n' "${bons[@]}" | median)
            printf ' %12.0f %7.3f %7.3f' "$mb" "$(awk -v a="$mb" -v b="$moff" 'BEGIN{print a/b}')" \
                "$(printf '%s\n' "${bratios[@]}" | median)"
        fi
        echo
    done
done
