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
#   cancel    coro_cancel of one job waiting on an event, in a select or
#             on a group, after 0 .. 100,000 distinct objects were ever
#             waited on: ns.  Risk: a cancel that sweeps every structure
#             ever used.  Beside it, the floor of any wake of a parked
#             thread on this machine: a raw FUTEX_WAKE (futex_wake_ns) and
#             the system call alone (futex_nowaiter_ns).
#   poolcancel  coro_cancel of a call queued last for the blocking pool
#             behind 0 .. 100,000 others: ns.  Risk: a cancel that walks
#             the pool's queue.
#   burst     200 chained pool-frame jobs from a plain thread every 2 ms,
#             unpinned, at workers 1, 2, 4 .. 64: CPU ns per burst, and the
#             workers woken, parks, steals and context switches per burst.
#             Risk: searches that read every victim, many times per idle
#             phase; a notify that reads every idle word; more workers
#             woken per burst.
#   numa      4 roots per worker fill a 256 KiB buffer each and fan out 64
#             children that read it, one worker per CPU: ns per child,
#             with and without the node order (COROKIT_NUMA=0).  Risk:
#             thieves that take work from another node first.
#   park      a job from a plain thread meeting parked workers, at workers
#             1 .. 64: ns per round trip.  Risk: a park whose barrier
#             interrupts every CPU (membarrier(2)).
#   prio      10,000 HIGH jobs from a plain thread at workers 1 .. 64: ns
#             per job.  Risk: one word written by every HIGH/LOW submit.
#   burstcount  the burst's counts that noise does not move, per burst, at
#             2 and 64 workers alternately (perf stat, when it can read the
#             syscall tracepoints; skipped with a message otherwise): the
#             process's CPU (task-clock), context switches, futex and
#             sched_yield calls, membarrier calls and thread wake-ups, each
#             as the difference of a 40- and a 240-burst run over 200.
#             Risk: a count that grows with the workers on a burst's path.
#   burstinstr  instructions per burst at 2 and 64 workers, counted by
#             callgrind (valgrind), which runs one thread at a time: a count
#             no other load moves.  Risk: as burstcount.
#   memory    bytes held through the scheduler's allocator at workers 1 ..
#             64: after create, per affinity class interned, and in the
#             pools once 20,000 pool frames ran and the workers parked.
#             Risk: per-class queues and per-worker tables sized for the
#             most classes, pools that keep every slab they drew.
#   cpus      AUTO on a machine of 1,024 CPUs and the most workers
#             (tests/internal/test_scale.c through the test binary, when built).
#             Risk: bitmaps narrower than the workers.
#   frames    fire-and-forget jobs with frames of 128 B .. 69 KiB from
#             coro_frame_alloc and from calloc, 2 workers (frame_cost, when
#             this build has it; skipped with a message otherwise).
# Workers beyond the CPUs run unpinned (scale_cost unpins them).
#
# Every row ends in a verdict line ("verdict ROW PASS|FAIL ..."), judged
# against the targets written above the verdicts below.  On 2 CPUs the
# whole run takes about 1 minute (quick) and 2.
#
# The plan for a 16-core machine (one run, well under 10 minutes; on 2
# sockets the numa row is the one that can differ):
#   threads  workers 1, 2 and 16 (one per CPU), plain threads 0 / 100 / 1,000: the
#            chain's cost must stay within 1.5x of the 0-thread figure; with
#            16 workers most of them park, so the rings' map is read by
#            every worker's look and by every park.
#   cancel   history 0 / 1,000 / 10,000 / 100,000 on 1 worker: the cancel's
#            own cost (a busy worker: no wake) at most 2 us, and with a
#            parked worker no more than the event set that ends the same
#            wait (both pay the futex wake of that worker).
#   poolcancel  queued 0 / 1,000 / 10,000 / 100,000: flat.
#   burst    workers 2, 4, 8, 16 (pinned, one per core), 32 and 64
#            (unpinned, two and four per core): CPU per burst at 64 within
#            1.3x of 2, as the median of 5 alternating pairs, with the
#            wake-ups and context switches per burst beside it; at 16 and
#            beyond every burst meets parked workers, so the search's reads
#            of busy victims only, the bounded looks per idle phase and the
#            idle summary a notify reads are what it shows.
#   numa     on a machine of 2 or more nodes (lscpu: "NUMA node(s)"), 16
#            workers pinned, one per core: the fan-out with the node order
#            against COROKIT_NUMA=0, alternating, 3 pairs; the order should
#            not be slower, and faster where children are stolen across
#            nodes (the steals per round say how many moved).  On one node
#            both are the same code path.
#   park     workers 1 .. 64 with the membarrier bound below and above
#            (the scheduler keeps membarrier(2) up to 8 workers and 64
#            online CPUs: 8 and 16 straddle it); COROKIT_MEMBARRIER=0 runs
#            the fence mode at 8 and 16 for the same-run comparison.
#   prio     workers 2 .. 64: per-job cost flat with workers.
#   frames   128 B, 1 KiB, 4 KiB, 16 KiB, 64 KiB and 69 KiB: at 64 and 69
#            KiB the pool no worse than calloc.
#   threads, burst, burstcount, numa: their pairs alternate, so that a
#            noisy minute hits both sides.
#   burstcount, burstinstr  2 against 64 workers (and 16, one per core): every count
#            per burst flat; the CPU per burst of the same runs beside them.
#   memory   workers 1 .. 64: bytes per class and the pools' idle bytes
#            flat with the workers.
#   cpus     the test binary's scale suite (a fake 1,024-CPU machine).
#   Not here: 1,024 workers under ASan (tests/internal/test_scale.c, make
#   check-asan).
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
    pairs=3; queued="0 10000 100000"; crounds=7
else
    rounds=7; bursts=300; counts="1 2 4 8 16 32 64"; hist="0 1000 10000 30000 60000 100000"
    pairs=5; queued="0 1000 10000 100000"; crounds=15
fi
last() { tail -n 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
row() { "$@" | last | tee -a "$out"; }

echo "# scale.sh: $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
"$tool" threads 1 0 1 >/dev/null     # warm-up: page faults, CPU clocks
# 1 and 2 workers, and one per CPU where there are more
tw="1 2"
[ "$(nproc)" -gt 2 ] && tw="$tw $(nproc)"
# 0 and 1,000 threads alternately (the verdict's medians), 100 once
for w in $tw; do
    row "$tool" threads "$w" 100 "$rounds"
    for i in $(seq "$pairs"); do
        for t in 0 1000; do
            row "$tool" threads "$w" "$t" "$rounds"
        done
    done
done
for h in $hist; do
    for k in event select group; do
        row "$tool" cancel "$h" "$crounds" "$k"
    done
done
for q in $queued; do
    row "$tool" poolcancel "$q" "$rounds"
done
for w in $counts; do
    row "$tool" burst "$w" "$bursts"
done
# the burst verdict's pairs: 2 and 64 workers alternately, same minutes
for i in $(seq "$pairs"); do
    "$tool" burst 2 "$bursts" | last | sed 's/^burst/burstpair/' | tee -a "$out"
    "$tool" burst 64 "$bursts" | last | sed 's/^burst/burstpair/' | tee -a "$out"
done
# the counts per burst: perf stat over a short and a long run, the
# difference over the bursts between them (what is not the burst cancels)
pev=task-clock,context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield
pev=$pev,syscalls:sys_enter_membarrier,sched:sched_wakeup
if perf stat -x, -e "$pev" true >/dev/null 2>&1; then
    counts_of() {
        perf stat -x, -e "$pev" "$tool" burst "$1" "$2" 2>&1 >/dev/null |
            awk -F, '$3 != "" { k = $3; sub(/^.*:(sys_enter_)?/, "", k); printf "%s %s\n", k, $1 }'
    }
    bc="2 64"
    [ "$(nproc)" -gt 2 ] && [ "$(nproc)" -lt 64 ] && bc="2 $(nproc) 64"
    for i in $(seq "$pairs"); do
        for w in $bc; do
            a=$(counts_of "$w" 40); b=$(counts_of "$w" 240)
            printf '%s\n--\n%s\n' "$a" "$b" | awk -v w="$w" '
                $1 == "--" { second = 1; next }
                { if (second) v[$1] = $2 - v[$1]; else { v[$1] = $2; order[++n] = $1 } }
                END { printf "burstcount workers=%d", w
                      for (i = 1; i <= n; i++) { k = order[i]; x = v[k] / 200
                          if (k == "task-clock") { k = "cpu_us"; x *= 1000 }
                          printf " %s=%.2f", k, x }
                      print "" }' | tee -a "$out"
        done
    done
else
    echo "burstcount skipped: perf stat cannot read the syscall tracepoints here"
fi
# instructions per burst (callgrind, which runs one thread at a time: the
# same count run to run, whatever else the machine does), the difference
# of a 10- and a 60-burst run over 50
if command -v valgrind >/dev/null 2>&1; then
    cg=$(mktemp)
    instr_of() {
        valgrind --tool=callgrind --callgrind-out-file="$cg" "$tool" burst "$1" "$2" \
            >/dev/null 2>&1 && sed -n 's/^totals: //p' "$cg"
    }
    for w in 2 64; do
        a=$(instr_of "$w" 10); b=$(instr_of "$w" 60)
        echo "burstinstr workers=$w instructions_per_burst=$(( (b - a) / 50 ))" | tee -a "$out"
    done
    rm -f "$cg"
else
    echo "burstinstr skipped: no valgrind"
fi
for w in $counts; do
    row "$tool" memory "$w"
done
# AUTO on 1,024 CPUs and the most workers: the test binary's scale suite
if [ -x "$build/tests/corokit_tests" ]; then
    "$build/tests/corokit_tests" --filter 'scale/*' 2>&1 | grep Synthesis |
        sed 's/^.*Tested: \([0-9]*\) | Passing: \([0-9]*\).*/cpus tested=\1 passing=\2/' | tee -a "$out"
else
    echo "cpus skipped: $build/tests/corokit_tests is not built"
fi
for w in $counts; do
    row "$tool" park "$w" "$rounds"
done
# the same without membarrier(2) (every spawn fences), for the comparison
# across the bound (8 workers, 64 online CPUs)
for w in 8 16; do
    COROKIT_MEMBARRIER=0 "$tool" park "$w" "$rounds" | last | sed 's/^park/park_fence/'
done
for w in $counts; do
    row "$tool" prio "$w" "$rounds"
done
# NUMA: one worker per CPU, the node order against none, alternating
for i in 1 2 3; do
    row "$tool" numa "$(nproc)" "$rounds"
    COROKIT_NUMA=0 "$tool" numa "$(nproc)" "$rounds" | last | sed 's/^numa/numa_off/' | tee -a "$out"
done
# frames: the frame tool, when this build has one
if [ -x "$build/tools/frame_cost" ]; then
    for size in 128 1024 4096 16384 65536 70656; do
        row "$build/tools/frame_cost" 2 "$size" "$rounds"
    done
else
    echo "frames skipped: $build/tools/frame_cost is not built (tools/bench/frame_cost.c)"
fi

# ---- verdicts: the issue's targets, one line per row -------------------------------
# threads  1,000 plain threads cost at most 1.5x none, per worker count
#          (medians of the alternating runs)
# cancel   coro_cancel's own cost at most 2 us: the median over every
#          history and wait (event, select, group) of the per-point medians,
#          from a plain thread with the worker busy (busy_worker) and from
#          a job (from_job): neither wakes anyone; the worst point printed
#          beside it.  Flat: at the most history at most 1.5x at none (the
#          median of the three waits; a sweep costs hundreds of us at
#          10,000).  And the cancel of an event wait with a parked worker at
#          most 1.5x the coro_event_set that ends the same wait (both pay
#          the futex wake: the floor printed below it), at every history
# burst    CPU per burst at 64 workers at most 1.3x that at 2 (medians of
#          the alternating pairs; the pairwise range and the wake-ups per
#          burst are printed beside it)
# burstcount  each count per burst at 64 workers at most 1.3x that at 2
#          (plus 1, for counts near zero), medians of the pairs; which are
#          flat is printed, and the CPU of the same runs beside them
# burstinstr  instructions per burst at 64 workers at most 1.3x at 2
# memory   an affinity class at most 4 KiB; the pools' idle bytes at most
#          16 slabs of 64 KiB per worker at every worker count: the 8 empty
#          ones a parked pool keeps (lib/sched/frame_sched.c IDLE), and as many
#          whose frames other workers gave back after it parked, which it
#          collects when it next runs.  In practice only the pools that drew
#          keep any, and the total moves with how the jobs spread; the
#          bytes each worker adds printed
# cpus     every test of the scale suite passes
# poolcancel  the cancel of a queued call behind 100,000 others at most
#          2x the one behind none (medians; both pay a wake): flat
# numa     the node order no slower than without (medians of 3 pairs,
#          flagged above 1.1x: on one node they are the same path)
# park, prio  no target in the issue: the figure at the most workers
#          against 2 workers, flagged above 2x
# frames   69 KiB pool frames no slower than calloc (the other sizes are
#          shown, not judged)
echo "# verdicts"
awk '
function num(k,   i, n, a) { n = split($0, a, " "); for (i = 1; i <= n; i++) if (index(a[i], k "=") == 1) return substr(a[i], length(k) + 2) + 0; return -1 }
function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function say(row, ok, what) { printf "verdict %-7s %s  %s\n", row, ok ? "PASS" : "FAIL", what }
$1 == "threads" { w = num("workers"); t = num("plain_threads"); if (t == 0 || t == 1000) { k = ++nth[w, t]; th[w, t, k] = num("median_ns_per_job") } tw[w] = 1 }
$1 == "cancel" { nc++; cb[nc] = num("busy_worker_median_ns"); cj[nc] = num("from_job_median_ns"); cp[nc] = num("median_ns"); ce[nc] = num("event_set_median_ns"); ch[nc] = num("history"); ck[nc] = ($2 == "kind=event"); fw[nc] = num("futex_wake_median_ns"); fn[nc] = num("futex_nowaiter_median_ns"); if (ch[nc] > chmax) chmax = ch[nc] }
$1 == "burstcount" { w = num("workers"); if (w != 2 && w != 64) next; nbc[w]++; for (i = 3; i <= NF; i++) { split($i, kv, "="); bcv[w, kv[1], nbc[w]] = kv[2]; if (!(kv[1] in bck)) { bck[kv[1]] = 1; bco[++nbk] = kv[1] } } }
$1 == "memory" { w = num("workers"); mb[w] = num("bytes"); mc = num("bytes_per_class"); if (num("classes") > 0 && mc > mcmax) mcmax = mc; mi[w] = num("idle_pool_bytes"); if (w > mwmax) mwmax = w }
$1 == "burstinstr" { bi[num("workers")] = num("instructions_per_burst") }
$1 == "cpus" { cpt = num("tested"); cpp = num("passing") }
$1 == "poolcancel" { q = num("queued"); pq[q] = num("median_ns"); if (q > qmaxq) qmaxq = q }
$1 == "numa" { nn++; na[nn] = num("median_ns_per_child") }
$1 == "numa_off" { no++; nb[no] = num("median_ns_per_child") }
$1 == "burst" { bw[num("workers")] = num("cpu_ns_per_burst") }
$1 == "burstpair" { w = num("workers"); if (w == 2) { p2[++n2] = num("cpu_ns_per_burst"); k2 += num("wakeups_per_burst"); x2 += num("csw_per_burst") } else { p64[++n64] = num("cpu_ns_per_burst"); k64 += num("wakeups_per_burst"); x64 += num("csw_per_burst") } }
$1 == "park" { pk[num("workers")] = num("median_ns_per_trip"); if (num("workers") > pmax) pmax = num("workers") }
$1 == "prio" { pr[num("workers")] = num("median_ns_per_job"); if (num("workers") > qmax) qmax = num("workers") }
$1 == "workers" && /pool\/calloc/ { nf++; fs[nf] = $4; fr[nf] = $NF + 0 }
END {
    for (w in tw) if (nth[w, 0] && nth[w, 1000]) {
        for (i = 1; i <= nth[w, 0]; i++) z0[i] = th[w, 0, i]
        for (i = 1; i <= nth[w, 1000]; i++) z1[i] = th[w, 1000, i]
        a = med(z0, nth[w, 0]); b = med(z1, nth[w, 1000])
        r = a > 0 ? b / a : 0
        say("threads", r <= 1.5, sprintf("workers=%d: 1,000 plain threads %.2fx none (%.0f / %.0f ns per job; target <= 1.5x; medians of %d alternating runs)", w, r, b, a, nth[w, 0]))
    }
    if (nc) {
        worst = 0; wj = 0; flat = 1; wr = 0; n0 = 0; nh = 0
        for (i = 1; i <= nc; i++) {
            ob[i] = cb[i]; oj[i] = cj[i]
            if (cb[i] > worst) worst = cb[i]
            if (cj[i] > wj) wj = cj[i]
            if (ch[i] == ch[1]) h0[++n0] = cb[i]
            if (ch[i] == chmax) hm[++nh] = cb[i]
            r = ck[i] && ce[i] > 0 ? cp[i] / ce[i] : 0
            if (r > 1.5) flat = 0
            if (r > wr) wr = r
        }
        mbw = med(ob, nc); mjw = med(oj, nc)
        say("cancel", mbw <= 2000, sprintf("its own cost from a plain thread, worker busy: median %.0f ns over history %d..%d, event, select and group waits (target <= 2,000 ns; worst point %.0f)", mbw, ch[1], chmax, worst))
        say("cancel", mjw <= 2000, sprintf("its own cost from a job: median %.0f ns (target <= 2,000 ns; worst point %.0f)", mjw, wj))
        r = med(h0, n0) > 0 ? med(hm, nh) / med(h0, n0) : 0
        say("cancel", r <= 1.5, sprintf("flat: at history %d %.2fx at %d (target <= 1.5x)", chmax, r, ch[1]))
        say("cancel", flat, sprintf("with a parked worker at most %.2fx the event set that ends the same wait (target <= 1.5x: flat)", wr))
        fmax = 0; fmin = 1e18; nmin = 1e18
        for (i = 1; i <= nc; i++) if (fw[i] > 0) { if (fw[i] < fmin) fmin = fw[i]; if (fw[i] > fmax) fmax = fw[i]; if (fn[i] < nmin) nmin = fn[i] }
        if (fmax > 0) printf "floor   a raw FUTEX_WAKE of a parked thread here: %.0f..%.0f ns (medians); the system call alone: from %.0f ns\n", fmin, fmax, nmin
    }
    if (qmaxq && pq[0] > 0) { r = pq[qmaxq] / pq[0]; say("poolcancel", r <= 2, sprintf("a queued call behind %d others %.2fx behind none (target <= 2x: flat)", qmaxq, r)) }
    if (n2 && n64) {
        lo = 1e18; hi = 0
        for (i = 1; i <= n2 && i <= n64; i++) { q = p2[i] > 0 ? p64[i] / p2[i] : 0; if (q < lo) lo = q; if (q > hi) hi = q }
        r = med(p64, n64) / med(p2, n2)
        say("burst", r <= 1.3, sprintf("CPU per burst at 64 workers %.2fx that at 2 (target <= 1.3x; medians of %d pairs, pairwise %.2f..%.2fx; woken per burst %.1f vs %.1f, context switches %.1f vs %.1f)", r, n2, lo, hi, k64 / n64, k2 / n2, x64 / n64, x2 / n2))
    }
    if (nbc[2] && nbc[64]) {
        flatk = ""; grew = ""
        for (i = 1; i <= nbk; i++) {
            k = bco[i]; n = 0; m = 0
            for (j = 1; j <= nbc[2]; j++) a2[++n] = bcv[2, k, j]
            for (j = 1; j <= nbc[64]; j++) a64[++m] = bcv[64, k, j]
            v2 = med(a2, n); v64 = med(a64, m)
            if (k == "cpu_us") { cpu2 = v2; cpu64 = v64; continue }
            if (v64 <= 1.3 * v2 + 1) flatk = flatk sprintf(" %s %.1f/%.1f", k, v64, v2)
            else grew = grew sprintf(" %s %.1f/%.1f", k, v64, v2)
        }
        say("burstcount", grew == "", sprintf("counts per burst, 64 / 2 workers (target <= 1.3x + 1): flat:%s%s%s; CPU %.0f / %.0f us", flatk, grew == "" ? "" : "; grew:", grew, cpu64, cpu2))
    }
    if (bi[2] > 0 && (64 in bi)) { r = bi[64] / bi[2]; say("burstinstr", r <= 1.3, sprintf("instructions per burst at 64 workers %.2fx at 2 (%d / %d; target <= 1.3x)", r, bi[64], bi[2])) }
    if (mwmax && (2 in mb)) {
        say("memory", mcmax <= 4096, sprintf("an affinity class %.0f bytes (target <= 4 KiB)", mcmax))
        ok = 1; worst = 0
        for (w in mi) { r = mi[w] / (w * 1048576); if (r > 1) ok = 0; if (r > worst) worst = r }
        say("memory", ok, sprintf("the pools idle at most %.2f of 16 slabs (1 MiB) per worker at every count (%.0f KiB at 2 workers, %.0f KiB at %d); each worker adds %.0f bytes", worst, mi[2] / 1024, mi[mwmax] / 1024, mwmax, mwmax > 2 ? (mb[mwmax] - mb[2]) / (mwmax - 2) : 0))
    }
    if (cpt) say("cpus", cpp == cpt, sprintf("AUTO on 1,024 CPUs and the most workers: %d of %d tests pass", cpp, cpt))
    if (pmax && pk[2] > 0) { r = pk[pmax] / pk[2]; say("park", r <= 2, sprintf("a trip at %d workers %.2fx at 2 (no target: flagged above 2x)", pmax, r)) }
    if (qmax && pr[2] > 0) { r = pr[qmax] / pr[2]; say("prio", r <= 2, sprintf("a HIGH job at %d workers %.2fx at 2 (no target: flagged above 2x)", qmax, r)) }
    if (nn && no) { r = med(na, nn) / med(nb, no); say("numa", r <= 1.1, sprintf("a child with the node order %.2fx without (flagged above 1.1x; %d pairs)", r, nn)) }
    for (i = 1; i <= nf; i++) if (fs[i] >= 65536) say("frames", fr[i] <= 1, sprintf("%s B: pool/calloc %.2f (target <= 1)", fs[i], fr[i]))
    print "verdict not here: 1,024 workers under ASan (tests/internal/test_scale.c, make check-asan)"
}' "$out"
