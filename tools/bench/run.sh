#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench/run.sh - build corokit's benchmark programs and its peers' twins,
# run every shape of docs/benchmarks.md on every system several times with the
# systems alternating, and print one table.  `make bench` calls this.
#
# Environment (all optional):
#   QUICK=1        3 rounds, fewer iterations per run, memory with 200,000 jobs
#                  instead of 1,000,000 (under 3 minutes once built)
#   ROUNDS=N       runs of each (shape, system); default 5 (QUICK: 3)
#   WORKERS=N      worker threads for every system; default: the CPUs we may use
#   SYSTEMS="..."  subset of: corokit tokio go tbb openmp marl floor
#                  (floor: io_floor.c, the io_busy_H shapes' system calls alone,
#                  no runtime - the least any system could take here)
#   SHAPES="..."   subset of the shapes (default: all)
#   MARL_DIR=path  a marl source tree; marl is skipped when unset
#   NO_INSTALL=1   do not apt-get the peers' packages
#   UPDATE_DOCS=1  rewrite the marked table in docs/benchmarks.md (needs corokit)
#   CC=clang       compiler for the C programs (default gcc)
#   GEN=0          skip the generators against their C++20 twin (tools/bench/
#                  gen.sh, run after the table with the same ROUNDS and QUICK)
#
# Output: the table on stdout (also out/table.txt, out/table.md),
# tools/bench/out/results.csv (bench,system,workers,median_ns,p10_ns,p90_ns,runs),
# raw lines in out/raw/, machine facts in out/machine.txt, PNG plots in docs/bench/.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$HERE/build
OUT=$HERE/out
PLOTS=$ROOT/docs/bench
QUICK=${QUICK:-0}
[ "$QUICK" = 0 ] && QUICK=
if [ -n "$QUICK" ]; then ROUNDS=${ROUNDS:-3}; else ROUNDS=${ROUNDS:-5}; fi
WORKERS=${WORKERS:-$(nproc)}
SYSTEMS=${SYSTEMS:-"corokit tokio go tbb openmp marl floor"}
ALL_SHAPES="spawn_many_local spawn_many_remote spawn_many_remote_busy ping_pong yield_many chained_spawn fib fib_fork io_pingpong io_pingpong_64 io_under_load io_busy_50 io_busy_500 io_busy_2000 timers timed_waits memory blocking_roundtrip blocking_roundtrip_par udp_pingpong"
SHAPES=${SHAPES:-$ALL_SHAPES}
CC=${CC:-gcc}
CXX=${CXX:-g++}
# one run (a process) that takes longer is killed, and that system's later
# rounds of that shape are skipped
if [ -n "$QUICK" ]; then RUN_TIMEOUT=${RUN_TIMEOUT:-30}; else RUN_TIMEOUT=${RUN_TIMEOUT:-120}; fi

say() { printf '== %s\n' "$*" >&2; }
warn() { printf '!! %s\n' "$*" >&2; }

# iterations per run (after one untimed warm-up) and size override per shape
iters_for() {
    local n
    case $1 in
        spawn_many_local | spawn_many_remote | spawn_many_remote_busy) n=20 ;;
        ping_pong) n=30 ;;
        yield_many) n=10 ;;
        chained_spawn) n=50 ;;
        fib | fib_fork) n=3 ;;
        io_pingpong | io_pingpong_64 | udp_pingpong) n=8 ;;
        io_busy_50 | io_busy_500 | io_busy_2000) n=1 ;;
        timed_waits) n=3 ;;
        io_under_load) n=5 ;;
        timers) n=8 ;;
        memory) n=1 ;;
        blocking_roundtrip | blocking_roundtrip_par) n=10 ;;
        *) n=5 ;;
    esac
    if [ -n "$QUICK" ]; then
        case $1 in
            fib | fib_fork | memory) n=1 ;;
            *) n=$(((n + 3) / 4)) ;;
        esac
    fi
    echo "$n"
}
size_for() {
    if [ -n "$QUICK" ] && [ "$1" = memory ]; then echo 200000; else echo 0; fi
}

# ---- 1. packages -----------------------------------------------------------
install_peers() {
    [ -n "${NO_INSTALL:-}" ] && return 0
    local need=()
    command -v go >/dev/null || need+=(golang-go)
    ls -d /usr/share/cargo/registry/tokio-1.* >/dev/null 2>&1 || need+=(librust-tokio-dev)
    command -v cargo >/dev/null || need+=(cargo)
    pkg-config --exists tbb 2>/dev/null || need+=(libtbb-dev pkg-config)
    command -v gnuplot >/dev/null || need+=(gnuplot-nox)
    command -v "$CXX" >/dev/null || need+=(g++)
    pkg-config --exists ck 2>/dev/null || need+=(libck-dev)
    [ -n "${MARL_DIR:-}" ] && ! command -v cmake >/dev/null && need+=(cmake)
    [ ${#need[@]} -eq 0 ] && return 0
    local sudo=
    [ "$(id -u)" != 0 ] && sudo=sudo
    say "installing ${need[*]}"
    $sudo apt-get update -qq >&2 || warn "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2 ||
        warn "apt-get install failed: the systems that need it will be skipped"
}

# ---- 2. builds ---------------------------------------------------------------
declare -A BIN
CFLAGS_BENCH="-std=c11 -O2 -Wall -Wextra -Werror"
CXXFLAGS_BENCH="-std=c++17 -O2 -Wall -Wextra -Werror"

build_corokit() {
    local lib=$ROOT/build/libcorokit.a
    if [ ! -f "$lib" ] && [ -f "$ROOT/Makefile" ]; then
        say "corokit: $lib missing, running make"
        make -C "$ROOT" -j"$(nproc)" >&2 || true
    fi
    if [ ! -f "$lib" ] || [ ! -f "$ROOT/include/corokit.h" ]; then
        warn "corokit: no $lib or include/corokit.h (run make at the top first): skipped"
        return 1
    fi
    # shellcheck disable=SC2086
    $CC $CFLAGS_BENCH -I"$ROOT/include" -I"$HERE" "$HERE/corokit_bench.c" \
        "$lib" -lck -lpthread -o "$BUILD/corokit_bench" >&2 || return 1
    BIN[corokit]=$BUILD/corokit_bench
}

build_tokio() {
    command -v cargo >/dev/null || { warn "tokio: no cargo: skipped"; return 1; }
    # build a copy under build/, so that Cargo.lock (whose format follows the
    # cargo that wrote it) never lands in the source tree
    local src=$BUILD/tokio-src
    mkdir -p "$src"
    cp -r "$HERE/tokio/Cargo.toml" "$HERE/tokio/src" "$HERE/tokio/.cargo" "$src/"
    (cd "$src" && CARGO_TARGET_DIR=$BUILD/cargo cargo build --release --offline -q) >&2 || {
        rm -f "$src/Cargo.lock" # written by another cargo? try once afresh
        (cd "$src" && CARGO_TARGET_DIR=$BUILD/cargo cargo build --release --offline -q) >&2
    } || return 1
    BIN[tokio]=$BUILD/cargo/release/tokio_bench
}

build_go() {
    command -v go >/dev/null || { warn "go: not installed: skipped"; return 1; }
    (cd "$HERE/go" && GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOCACHE=$BUILD/gocache \
        go build -o "$BUILD/go_bench" .) >&2 || return 1
    BIN[go]=$BUILD/go_bench
}

build_tbb() {
    pkg-config --exists tbb 2>/dev/null || { warn "tbb: libtbb-dev missing: skipped"; return 1; }
    # shellcheck disable=SC2046,SC2086
    $CXX $CXXFLAGS_BENCH -I"$HERE" "$HERE/tbb_bench.cpp" $(pkg-config --cflags --libs tbb) \
        -lpthread -o "$BUILD/tbb_bench" >&2 || return 1
    BIN[tbb]=$BUILD/tbb_bench
}

build_openmp() {
    # shellcheck disable=SC2086
    gcc $CFLAGS_BENCH -fopenmp -I"$HERE" "$HERE/omp_bench.c" -o "$BUILD/omp_bench" >&2 || return 1
    BIN[openmp]=$BUILD/omp_bench
}

build_floor() {
    # shellcheck disable=SC2086
    $CC $CFLAGS_BENCH -I"$HERE" "$HERE/io_floor.c" -lpthread -o "$BUILD/io_floor" >&2 || return 1
    BIN[floor]=$BUILD/io_floor
}

build_marl() {
    if [ -z "${MARL_DIR:-}" ]; then
        warn "marl: MARL_DIR is not set (point it at a marl source tree to include marl): skipped"
        return 1
    fi
    [ -f "$MARL_DIR/CMakeLists.txt" ] || { warn "marl: $MARL_DIR is not a marl tree: skipped"; return 1; }
    cmake -S "$MARL_DIR" -B "$BUILD/marl" -DCMAKE_BUILD_TYPE=Release \
        -DMARL_BUILD_TESTS=OFF -DMARL_BUILD_BENCHMARKS=OFF -DMARL_BUILD_EXAMPLES=OFF >/dev/null &&
        cmake --build "$BUILD/marl" -j"$(nproc)" >/dev/null || return 1
    # shellcheck disable=SC2086
    $CXX $CXXFLAGS_BENCH -I"$HERE" -I"$MARL_DIR/include" "$HERE/marl_bench.cpp" \
        "$BUILD/marl/libmarl.a" -pthread -Wl,-z,noexecstack -o "$BUILD/marl_bench" >&2 || return 1
    BIN[marl]=$BUILD/marl_bench
}

# ---- 3. runs -------------------------------------------------------------------
run_all() {
    local systems=() s
    for s in $SYSTEMS; do [ -n "${BIN[$s]:-}" ] && systems+=("$s"); done
    local nsys=${#systems[@]}
    declare -A SUPPORTS GAVE_UP
    : >"$OUT/failures.txt"
    for s in "${systems[@]}"; do
        for sh in $("${BIN[$s]}" list); do SUPPORTS[$s.$sh]=1; done
    done
    local round sh i k sys it sz f rc
    for round in $(seq 1 "$ROUNDS"); do
        say "round $round of $ROUNDS"
        for sh in $SHAPES; do
            it=$(iters_for "$sh")
            sz=$(size_for "$sh")
            # rotate the order every round: no system always goes first
            for ((i = 0; i < nsys; i++)); do
                k=$(((i + round - 1) % nsys))
                sys=${systems[$k]}
                [ -n "${SUPPORTS[$sys.$sh]:-}" ] || continue
                [ -n "${GAVE_UP[$sys.$sh]:-}" ] && continue
                f=$OUT/raw/$sys.$sh.$round.txt
                timeout "$RUN_TIMEOUT" "${BIN[$sys]}" "$sh" "$WORKERS" "$it" "$sz" >"$f" 2>"$f.err"
                rc=$?
                # a run that died keeps the iterations it printed; say so
                if [ $rc -eq 124 ]; then
                    GAVE_UP[$sys.$sh]=1
                    echo "$sys $sh: round $round timed out after ${RUN_TIMEOUT} s; later rounds skipped" >>"$OUT/failures.txt"
                    warn "$sys $sh round $round timed out after ${RUN_TIMEOUT} s: later rounds skipped"
                elif [ $rc -ne 0 ]; then
                    echo "$sys $sh: round $round failed with status $rc ($(tail -1 "$f.err" 2>/dev/null))" >>"$OUT/failures.txt"
                    warn "$sys $sh round $round failed (rc $rc): see $f.err"
                fi
            done
        done
    done
}

# ---- 4. statistics, table, CSV -------------------------------------------------
# samples.txt: bench system workers value run-id (one per iteration, runs pooled)
collect() {
    local f run
    : >"$OUT/samples.txt"
    for f in "$OUT"/raw/*.txt; do
        [ -e "$f" ] || continue
        run=$(basename "$f" .txt)
        awk -v run="$run" '
            /^bench=/ {
                delete kv
                for (i = 1; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
                b = kv["bench"]; s = kv["system"]; w = kv["workers"]
                if (b == "memory") {
                    print "memory", s, w, kv["bytes_per_job"], run
                    print "memory_spawn", s, w, kv["ns"], run
                } else {
                    print b, s, w, kv["ns"], run
                    if ("p99_late_ns" in kv) print b "_p99_late", s, w, kv["p99_late_ns"], run
                }
            }' "$f" >>"$OUT/samples.txt"
    done
}

# results.csv from samples.txt: median, p10, p90 by linear interpolation
stats() {
    echo "bench,system,workers,median_ns,p10_ns,p90_ns,runs" >"$OUT/results.csv"
    sort -k1,1 -k2,2 -k4,4n "$OUT/samples.txt" | awk '
        function q(p,   h, lo) {
            h = (n - 1) * p; lo = int(h)
            return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo]
        }
        function flush() {
            if (n) printf "%s,%s,%s,%.0f,%.0f,%.0f,%d\n", cb, cs, cw, q(0.5), q(0.1), q(0.9), nrun
        }
        {
            if ($1 != cb || $2 != cs) { flush(); cb = $1; cs = $2; cw = $3; n = 0; nrun = 0 }
            v[n++] = $4
            if (!(($1, $2, $5) in seen)) { seen[$1, $2, $5] = 1; nrun++ }
        }
        END { flush() }' >>"$OUT/results.csv"
}

ORDER="spawn_many_local spawn_many_remote spawn_many_remote_busy ping_pong yield_many chained_spawn fib fib_fork io_pingpong io_pingpong_64 io_under_load io_under_load_p99_late io_busy_50 io_busy_50_p99_late io_busy_500 io_busy_500_p99_late io_busy_2000 io_busy_2000_p99_late timers timers_p99_late timed_waits memory memory_spawn blocking_roundtrip blocking_roundtrip_par udp_pingpong"

# the table: per shape and system, median and p10-p90, and peer/corokit
table() {
    awk -F, -v order="$ORDER" -v systems="$SYSTEMS" -v md="$1" '
        NR > 1 { key = $1 SUBSEP $2; med[key] = $4; p10[key] = $5; p90[key] = $6; runs[key] = $7; have[$1] = 1 }
        function fmt(x, b) {
            if (b == "memory") return sprintf("%.0f B", x)
            if (x >= 1e7) return sprintf("%.1f ms", x / 1e6)
            if (x >= 1e4) return sprintf("%.0f us", x / 1e3)
            return sprintf("%.2f us", x / 1e3)
        }
        END {
            nb = split(order, bs, " "); ns = split(systems, ss, " ")
            if (md) {
                printf "| shape |"; for (j = 1; j <= ns; j++) printf " %s |", ss[j]; printf "\n|---|"
                for (j = 1; j <= ns; j++) printf "---:|"; printf "\n"
            } else
                printf "%-24s %-8s %12s %12s %12s %5s %13s\n", "shape", "system", "median", "p10", "p90", "runs", "peer/corokit"
            for (i = 1; i <= nb; i++) {
                b = bs[i]; if (!(b in have)) continue
                c = b SUBSEP "corokit"
                if (md) printf "| %s |", b
                for (j = 1; j <= ns; j++) {
                    k = b SUBSEP ss[j]
                    if (!(k in med)) { if (md) printf " - |"; continue }
                    r = ""
                    if (ss[j] != "corokit" && (c in med) && med[c] > 0) {
                        r = sprintf("%.2f", med[k] / med[c])
                        # "~": the two p10-p90 ranges overlap, so neither
                        # system wins this row beyond the noise
                        if (p10[k] <= p90[c] && p10[c] <= p90[k]) r = "~" r
                    }
                    if (md)
                        printf " %s%s |", fmt(med[k], b), r != "" ? " (" r "x)" : ""
                    else
                        printf "%-24s %-8s %12s %12s %12s %5d %13s\n", (j == 1 || !shown[b]) ? b : "", ss[j], fmt(med[k], b), fmt(p10[k], b), fmt(p90[k], b), runs[k], r == "" ? "-" : r
                    shown[b] = 1
                }
                if (md) printf "\n"
            }
        }' "$OUT/results.csv"
}

machine() {
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
        echo "cpu: $(nproc) CPUs usable, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
        echo "kernel: $(uname -sr)"
        echo "workers: $WORKERS; rounds: $ROUNDS; quick: ${QUICK:-no}"
        echo "gcc: $(gcc -dumpfullversion 2>/dev/null)"
        command -v go >/dev/null && echo "go: $(go version | awk '{print $3}')"
        command -v rustc >/dev/null && echo "rustc: $(rustc --version | awk '{print $2}')"
        for d in /usr/share/cargo/registry/tokio-1.*; do [ -d "$d" ] && echo "tokio: ${d##*/tokio-}"; done
        dpkg-query -W -f='oneTBB: ${Version}\n' libtbb-dev 2>/dev/null
        [ -n "${MARL_DIR:-}" ] && echo "marl: $(git -C "$MARL_DIR" rev-parse --short HEAD 2>/dev/null || echo "$MARL_DIR")"
    } >"$OUT/machine.txt"
}

# ---- 5. plots --------------------------------------------------------------------
plots() {
    command -v gnuplot >/dev/null || { warn "no gnuplot: no plots"; return 0; }
    mkdir -p "$PLOTS" "$OUT/plot"
    # a full run replaces every plot; a partial one only its own
    [ "$SHAPES" = "$ALL_SHAPES" ] && rm -f "$PLOTS"/*.png
    local b unit div u title
    for b in $ORDER; do
        grep -q "^$b," "$OUT/results.csv" || continue
        # scale: bytes for memory, else ns, us or ms, whichever reads best
        div=$(awk -F, -v b="$b" 'NR > 1 && $1 == b && $6 > m { m = $6 }
            END { print (b == "memory" || m < 1e4) ? 1 : (m < 1e7 ? 1000 : 1000000) }' "$OUT/results.csv")
        case $div in 1) u=ns ;; 1000) u=us ;; *) u=ms ;; esac
        case $b in
            memory) unit="bytes of RSS per suspended job" ;;
            timers_p99_late) unit="p99 lateness ($u; median, p10-p90)" ;;
            io_under_load) unit="p50 write -> job runs ($u; median, p10-p90)" ;;
            io_under_load_p99_late) unit="p99 write -> job runs ($u; median, p10-p90)" ;;
            io_busy_*_p99_late) unit="p99 write -> reader runs ($u; median, p10-p90)" ;;
            memory_spawn) unit="$u per job spawned and suspended" ;;
            *) unit="$u per iteration (median, p10-p90)" ;;
        esac
        awk -F, -v b="$b" -v d="$div" -v systems="$SYSTEMS" '
            NR > 1 && $1 == b { m[$2] = $4 / d; lo[$2] = $5 / d; hi[$2] = $6 / d }
            END { n = split(systems, s, " "); for (i = 1; i <= n; i++) if (s[i] in m) print s[i], m[s[i]], lo[s[i]], hi[s[i]] }' \
            "$OUT/results.csv" >"$OUT/plot/$b.dat"
        title="$b ($WORKERS workers; lower is better)"
        # a log axis when the values span more than a decade, so that the
        # small bars stay readable; else a linear one from 0
        local yscale
        yscale=$(awk '{ if (lo == "" || $3 < lo) lo = $3; if ($4 > hi) hi = $4 }
            END { print (lo > 0 && hi / lo > 10) ? "log" : "lin" }' "$OUT/plot/$b.dat")
        if [ "$yscale" = log ]; then
            yscale='set logscale y; set yrange [*:*]'
            unit="$unit, log scale"
        else
            yscale='set yrange [0:*]'
        fi
        gnuplot <<EOF 2>"$OUT/plot/$b.err" || warn "gnuplot failed for $b"
set terminal pngcairo size 640,400 noenhanced font "sans,10"
set output "$PLOTS/$b.png"
set title "$title"
set ylabel "$unit"
$yscale
set format y "%g"
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set xrange [-0.6:*]
unset key
# corokit in orange, every peer in blue
plot "$OUT/plot/$b.dat" using 0:2:(strcol(1) eq "corokit" ? 0xee7733 : 0x4477aa):xtic(1) \
         with boxes lc rgb variable, \
     "" using 0:2:3:4 with yerrorbars lc rgb "black" pt 0
EOF
    done
    # overview: every peer's median over corokit's, per shape (log scale; > 1 = corokit faster);
    # the floor is no peer: it shows only in the table and its shape's plot
    if grep -q ",corokit," "$OUT/results.csv"; then
        awk -F, -v order="$ORDER" -v systems="$SYSTEMS" '
            NR > 1 { m[$1 SUBSEP $2] = $4 }
            END {
                nb = split(order, bs, " "); ns = split(systems, ss, " ")
                printf "shape"; for (j = 1; j <= ns; j++) if (ss[j] != "corokit" && ss[j] != "floor") printf " %s", ss[j]; printf "\n"
                for (i = 1; i <= nb; i++) {
                    c = bs[i] SUBSEP "corokit"; if (!(c in m) || m[c] <= 0 || bs[i] == "memory_spawn") continue
                    printf "%s", bs[i]
                    for (j = 1; j <= ns; j++) if (ss[j] != "corokit" && ss[j] != "floor") { k = bs[i] SUBSEP ss[j]; printf " %s", (k in m) ? m[k] / m[c] : "-" }
                    printf "\n"
                }
            }' "$OUT/results.csv" >"$OUT/plot/overview.dat"
        local ncol yr
        ncol=$(head -1 "$OUT/plot/overview.dat" | wc -w)
        # y range: whole powers of two around every ratio, and 1 always
        yr=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "-" && $i > 0) { l = log($i) / log(2); if (l < lo) lo = l; if (l > hi) hi = l } }
            END { printf "%d:%d", (lo < 0 ? int(lo) - 1 : -1), (hi > 0 ? int(hi) + 1 : 1) }' "$OUT/plot/overview.dat")
        gnuplot <<EOF 2>"$OUT/plot/overview.err" || warn "gnuplot failed for the overview"
set terminal pngcairo size 900,450 noenhanced font "sans,10"
set output "$PLOTS/overview.png"
set title "peer median / corokit median per shape ($WORKERS workers; above 1 = corokit is faster)"
set datafile missing "-"
# log2 of the ratio on a linear axis, so bars grow up from 1 (corokit wins)
# and down from 1 (corokit loses)
set ytics ("1/64" -6, "1/32" -5, "1/16" -4, "1/8" -3, "1/4" -2, "1/2" -1, "1" 0, "2" 1, "4" 2, "8" 3, "16" 4, "32" 5, "64" 6)
set ylabel "peer / corokit (log scale)"
set yrange [$yr]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics
set xtics rotate by -30
set key top left
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb "red" lw 2
plot for [c=2:$ncol] "$OUT/plot/overview.dat" using (log(column(c)) / log(2)):xtic(1) title columnheader(c)
EOF
    fi
}

update_docs() {
    local doc=$ROOT/docs/benchmarks.md
    grep -q ",corokit," "$OUT/results.csv" || { warn "UPDATE_DOCS: corokit has no results: docs left alone"; return 0; }
    grep -q '<!-- BENCH-TABLE:BEGIN -->' "$doc" || { warn "no table markers in $doc"; return 0; }
    {
        echo '<!-- BENCH-TABLE:BEGIN -->'
        echo
        sed 's/^/    /' "$OUT/machine.txt"
        echo
        cat "$OUT/table.md"
        if [ -s "$OUT/failures.txt" ]; then
            echo
            echo "Failed runs:"
            echo
            sed 's/^/- /' "$OUT/failures.txt"
        fi
        echo
        echo '<!-- BENCH-TABLE:END -->'
    } >"$OUT/table.block"
    awk -v blk="$OUT/table.block" '
        /<!-- BENCH-TABLE:BEGIN -->/ { while ((getline l < blk) > 0) print l; skip = 1; next }
        /<!-- BENCH-TABLE:END -->/ { skip = 0; next }
        !skip' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
    say "updated $doc"
}

main() {
    local t0=$SECONDS s
    mkdir -p "$BUILD" "$OUT"
    rm -rf "$OUT/raw" && mkdir -p "$OUT/raw"
    install_peers
    for s in $SYSTEMS; do
        case $s in corokit | tokio | go | tbb | openmp | marl | floor) ;; *) warn "unknown system $s"; continue ;; esac
        say "building $s"
        "build_$s" || warn "$s: not built: skipped"
    done
    local built=0
    for s in $SYSTEMS; do [ -n "${BIN[$s]:-}" ] && built=$((built + 1)); done
    [ "$built" -gt 0 ] || { warn "nothing was built"; exit 1; }
    say "built in $((SECONDS - t0)) s; running $ROUNDS rounds with $WORKERS workers${QUICK:+ (QUICK)}"
    run_all
    collect
    stats
    # the table and plots show only the systems that produced results
    local present=
    for s in $SYSTEMS; do grep -q "^[^,]*,$s," "$OUT/results.csv" && present="$present $s"; done
    SYSTEMS=${present# }
    machine
    table "" >"$OUT/table.txt"
    table md >"$OUT/table.md"
    plots
    [ -n "${UPDATE_DOCS:-}" ] && update_docs
    echo
    cat "$OUT/machine.txt"
    echo
    cat "$OUT/table.txt"
    if [ -s "$OUT/failures.txt" ]; then
        echo
        echo "failed runs (their shapes show only the rounds that finished, or nothing):"
        sed 's/^/  /' "$OUT/failures.txt"
    fi
    echo
    echo "ns columns: ns per iteration (memory: bytes per suspended job; memory_spawn: ns per job; io_under_load: p50, io_under_load_p99_late: p99 of write -> job runs)."
    echo "CSV: $OUT/results.csv   plots: $PLOTS/   total time: $((SECONDS - t0)) s"
    if [ "${GEN:-1}" != 0 ]; then
        echo
        echo "generators against their C++20 twin (tools/bench/gen.sh):"
        ROUNDS=$ROUNDS QUICK=${QUICK:-} CC=$CC CXX=$CXX "$HERE/gen.sh" || warn "gen.sh failed"
    fi
}

main "$@"
