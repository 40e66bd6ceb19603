#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/bench/scale.sh - the costs that must not grow with plain threads,
# history, workers, CPUs or frame size (docs/architecture.md, the rule at
# the top), each as a figure: one line per point, "row key=value ...".
#
# Usage: tools/bench/scale.sh [BUILD] [quick]
#   BUILD  the build directory holding tools/scale_cost (make tools);
#          default build.  quick: fewer rounds and points.
# Run it under the benchmark lock on a shared machine:
#   flock /tmp/corokit-bench.lock tools/bench/scale.sh build
#
# Rows (scale_cost's modes; frames by the frame tool when it is built):
#   threads   a chain of spawns on 1 worker (and 2) with 0 / 100 / 1,000
#             plain threads alive that once spawned: ns per job.  Risk: a
#             look that reads every thread's ring.
#   cancel    coro_cancel of one waiting job after 0 .. 100,000 distinct
#             objects were ever waited on: ns.  Risk: a cancel that sweeps
#             every structure ever used.
#   burst     200 chained pool-frame jobs from a plain thread every 2 ms,
#             unpinned, at workers 1, 2, 4 .. 64: CPU ns per burst.  Risk:
#             searches that read every victim, many times per idle phase.
#   park      a job from a plain thread meeting parked workers, at workers
#             1 .. 64: ns per round trip.  Risk: a park whose barrier
#             interrupts every CPU (membarrier(2)).
#   prio      10,000 HIGH jobs from a plain thread at workers 1 .. 64: ns
#             per job.  Risk: one word written by every HIGH/LOW submit.
#   frames    fire-and-forget jobs with frames of 128 B .. 69 KiB from
#             coro_frame_alloc and from calloc, 2 workers (frame_cost, when
#             this build has it; skipped with a message otherwise).
# Workers beyond the CPUs run unpinned (scale_cost unpins them).
#
# The plan for a 16-core machine (runs in about 5 minutes):
#   threads  workers 1 and 16 (pinned), plain threads 0 / 100 / 1,000: the
#            chain's cost must stay within 1.5x of the 0-thread figure; with
#            16 workers most of them park, so the rings' map is read by
#            every worker's look and by every park.
#   cancel   history 0 / 1,000 / 10,000 / 100,000 on 1 worker: flat within
#            noise, a few microseconds at most.
#   burst    workers 2, 4, 8, 16 (pinned, one per core), 32 and 64
#            (unpinned, two and four per core): CPU per burst at 64 within
#            1.3x of 2; at 16 and beyond every burst meets parked workers,
#            so the search's reads of busy victims only, and the bounded
#            looks per idle phase, are what it shows.
#   park     workers 1 .. 16 with the membarrier bound below and above
#            (the scheduler keeps membarrier(2) up to 8 workers and 64
#            online CPUs: 8 and 16 straddle it); COROKIT_MEMBARRIER=0 runs
#            the fence mode at every count for the same-run comparison.
#   prio     workers 2 .. 64: per-job cost flat with workers.
#   frames   128 B, 1 KiB, 4 KiB, 64 KiB (and 69 KiB): per-job cost no
#            worse than calloc's.
set -eu
build=${1:-build}
quick=${2:-}
tool="$build/tools/scale_cost"
if [ ! -x "$tool" ]; then
    echo "scale.sh: $tool is missing: make tools${build:+ B=$build}" >&2
    exit 1
fi
if [ -n "$quick" ]; then
    rounds=3; bursts=100; counts="1 2 4 8 16 32 64"; hist="0 1000 10000 100000"
else
    rounds=7; bursts=300; counts="1 2 4 8 16 32 64"; hist="0 1000 10000 30000 60000 100000"
fi
last() { tail -n 1; }

echo "# scale.sh: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
for w in 1 2; do
    for t in 0 100 1000; do
        "$tool" threads "$w" "$t" "$rounds" | last
    done
done
for h in $hist; do
    "$tool" cancel "$h" "$rounds" | last
done
for w in $counts; do
    "$tool" burst "$w" "$bursts" | last
done
for w in $counts; do
    "$tool" park "$w" "$rounds" | last
done
for w in $counts; do
    "$tool" prio "$w" "$rounds" | last
done
# frames: the frame tool, when this build has one
if [ -x "$build/tools/frame_cost" ]; then
    for size in 128 1024 4096 16384 65536 70656; do
        "$build/tools/frame_cost" 2 "$size" "$rounds" | last
    done
else
    echo "frames skipped: $build/tools/frame_cost is not built (tools/bench/frame_cost.c)"
fi
