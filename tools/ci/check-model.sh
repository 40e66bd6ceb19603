#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-model: verify the Promela models of tools/model/ with spin.
# Each model must verify with "errors: 0", as it is and in each of its
# other modes (the -DALSO_* names in its opening comment); each of its
# broken variants (the -DBROKEN_* names) must be rejected, to show the
# model can fail.  -DCOLLAPSE: search.pml's fence mode stores 46 million
# states (2.0 GB compressed so); PLAIN_STORE below names the models
# searched without it.  A model whose text holds the line
# "check-model: supertrace" (search.pml, the largest: about 143 million
# states, 8.7 GB and 84 minutes of CPU exhaustively) is searched in every
# mode by bitstate hashing (-DBITSTATE) with a table of 2^MODEL_BITS bits:
# make test passes 24 (2 MB: about 6 million states a mode, 4 s of CPU
# each; 25 visits twice the states in twice the time),
# make check-full 30 (128 MB: nearly every state, minutes); MODEL_FULL=1
# (make check-model-full) searches every mode exhaustively.  A bitstate
# search never reports an error that is not there; it only leaves states
# unvisited (at every depth, not beyond one), and its broken variants are
# still searched fully here and rejected, so the bounded run keeps showing
# that the model can fail where the code would.
#
# The verifications are independent, each spin and pan on one CPU: they
# run MODEL_JOBS at a time (default 1; make passes its JOBS), each in its
# own folder BUILD/model/MODEL-VARIANT/, the searches first and the big
# models' first of all (the supertrace ones, then by the model's size),
# so that the longest search does not start last.  A broken variant's pan
# is compiled without optimisation: spin rejects it at its first error,
# within a second, where an optimised compile of pan.c costs several, and
# so is a small model's search (BIG_SEARCHES below); a big search's with
# -O1, whose compile takes half of -O2's and whose searches ran no slower
# (rwlock, park, look).  The report is printed in the
# models' order once all have ended.
#
# A model may name a larger instance on a line "check-model: large
# instance -DNAME=N" (rwlock.pml: each process takes the lock twice, not
# once; its comment argues why once proves the same): make check-full
# (MODEL_LARGE=1) and check-model-full search that one, in every mode.
# Usage: [MODEL_FULL=1] [MODEL_LARGE=1] [MODEL_BITS=N] [MODEL_JOBS=N] tools/ci/check-model.sh [BUILD]
#        tools/ci/check-model.sh --one BUILD MODEL VARIANT   (one verification)
#        tools/ci/check-model.sh --list      (the runs, MODELVARIANT, in start order)
#        tools/ci/check-model.sh --report BUILD   (the report of runs done by --one)
set -eu

# pan's hash table (-wN: 2^N slots, each a pointer, cleared at its start):
# a search keeps pan's own 2^24, which the largest exhaustive search (park,
# 15 million states) needs - a table four times smaller made it a third
# slower; a broken variant stops at its first error, within 2 million
# states, where 2^20 slots serve as well and clearing 2^24 would cost more
# than most of their searches
HASH_SEARCH=24
HASH_BROKEN=20
# the models whose searches store over a million states (seconds of CPU);
# the others' searches end within a second even unoptimised, so their pan
# compiles at -O0 with a 2^20 table, as a broken variant's does
BIG_SEARCHES=" park search look sharedq "
# the big searches that store their states uncompressed: without
# -DCOLLAPSE they take a fifth less CPU (park: 14.5 million states, 13 to
# 15 s instead of 16 to 23) and 1.2 GB instead of 0.8 (park's, the
# largest); search.pml keeps it, for its exhaustive search in make
# check-model-full (46 million states in the fence mode)
PLAIN_STORE=" park look sharedq "

# pan's memory (its hash table and state store: 1.1 GB for park) in
# transparent huge pages where the kernel offers them on request
# (glibc's malloc tunable, glibc 2.35 and later; ignored before): fewer
# page faults and TLB misses, park's search a quarter faster on the 2-vCPU
# machine (14-15 s against 18-22 s); the search itself is unchanged

# the compiler of an unoptimised pan (a broken variant's, a small
# search's): tcc, the Tiny C Compiler, where it is installed
# (tools/dev/deps.sh installs it), which compiles pan.c in a tenth of
# clang's time at -O0 (0.06 s against 0.75 s a compile here, some sixty
# compiles a make test) into code about as fast as an unoptimised
# compiler's: these searches end within a second whatever the code; every
# run of make test's list gave the same verdict, depth and state count
# compiled by tcc as by clang; else clang, whose front end takes a fifth
# less CPU than gcc's, else cc.  The big searches keep cc at -O1
QUICK_CC=${PAN_QUICK_CC:-$(for c in tcc clang; do
    command -v $c >/dev/null 2>&1 && { echo $c; exit; }; done; echo cc)}

# one verification in its own folder: writes its report line to
# BUILD/model/M-V/verdict ("ok" or "FAIL" first), returns 0
one() {
    out=$1/model; m=$2; v=$3
    d="$out/$m$v"
    rm -rf "$d"; mkdir -p "$d"
    cp "tools/model/$m.pml" "$d/"
    store="-DCOLLAPSE" run="-w$HASH_SEARCH" how="" opt="-O1" big=""
    case "$BIG_SEARCHES" in *" $m "*) ;; *) opt="-O0" run="-w$HASH_BROKEN" ;; esac
    case "$PLAIN_STORE" in *" $m "*) store="" ;; esac
    case "$v" in -DBROKEN_*) opt="-O0" run="-w$HASH_BROKEN" ;; *)
        if [ -z "${MODEL_FULL:-}" ] && grep -q 'check-model: supertrace' "tools/model/$m.pml"; then
            bits=${MODEL_BITS:-30}
            store="-DBITSTATE" run="-w$bits" how=" (supertrace 2^$bits bits: partial)"
        fi ;;
    esac
    if [ -n "${MODEL_LARGE:-}${MODEL_FULL:-}" ]; then
        big=$(sed -n 's/.*check-model: large instance \(-D[A-Za-z0-9_]*=[0-9]*\).*/\1/p' \
            "tools/model/$m.pml" | head -n 1)
        [ -z "$big" ] || how="$how (large instance $big)"
    fi
    log="$d/$m.log"
    pancc=cc
    [ "$opt" = -O0 ] && pancc=$QUICK_CC
    ( cd "$d" && spin $big $v -a "$m.pml" >/dev/null && $pancc $opt -DSAFETY $store -w -o pan pan.c &&
      GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1 \
      ./pan -m500000 $run >"$m.log" 2>&1 ) || true
    line=$(grep -E 'errors: [0-9]+' "$log" 2>/dev/null | head -1) || true
    states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$log" 2>/dev/null | head -1) || true
    secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' "$log" 2>/dev/null | head -1) || true
    errs=$(printf '%s\n' "$line" | sed -n 's/.*errors: \([0-9]*\).*/\1/p')
    text=$(printf '  %-10s %-18s %s, %s states, %s s%s' "$m" "${v:-(the protocol)}" \
        "${line:-no verdict}" "${states:-?}" "${secs:-?}" "$how")
    case "$v" in
        -DBROKEN_*)
            if [ -n "$errs" ] && [ "$errs" != 0 ]; then verdict=ok
            else verdict=FAIL; text="$text
check-model: $m $v: NOT rejected - the model cannot fail there"; fi ;;
        *)
            if [ "$errs" = 0 ]; then verdict=ok
            else verdict=FAIL; text="$text
check-model: $m${v:+ $v}: spin found an error (see $log)"; fi ;;
    esac
    # the search's own files are large (pan.c, the trail): the log stays
    rm -f "$d"/pan* "$d"/*.trail
    printf '%s\n%s\n' "$verdict" "$text" >"$d/verdict"
}

# the runs, "MODEL VARIANT" a line (VARIANT "-" for the model as it is), in
# the models' order (the report's)
runs() {
    # one awk over every model, then one sort (make reads the list at its
    # start, before any job runs: two processes, not a few a model):
    # "FILE# KIND MODEL VARIANT", KIND 0 the model as it is, 1 ALSO_, 2 BROKEN_
    awk 'FNR == 1 { f++; m = FILENAME; sub(/.*\//, "", m); sub(/\.pml$/, "", m); print f, 0, m, "-" }
         { s = $0
           while (match(s, /-D(ALSO|BROKEN)_[A-Z][A-Z_]*/)) {
               v = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
               print f, (v ~ /^-DALSO_/) ? 1 : 2, m, v
           } }' tools/model/*.pml | sort -u -k1,1n -k2,2n -k4,4 | cut -d' ' -f3-
}

# the order they start in, "MODEL [VARIANT]" a line: searches before
# broken variants; supertrace models, then the bigger model first
order() {
    # each model's "NAME SUPERTRACE SIZE" (bytes), from one awk
    info=$(LC_ALL=C awk 'FNR == 1 && NR > 1 { print m, st, sz }
        FNR == 1 { m = FILENAME; sub(/.*\//, "", m); sub(/\.pml$/, "", m); st = 1; sz = 0 }
        { sz += length($0) + 1 } /check-model: supertrace/ { st = 0 }
        END { print m, st, sz }' tools/model/*.pml)
    runs | awk -v info="$info" '
        BEGIN { n = split(info, l, "\n")
                for (i = 1; i <= n; i++) { split(l[i], f, " "); st[f[1]] = f[2]; sz[f[1]] = f[3] } }
        { print ($2 ~ /^-DBROKEN_/), st[$1], sz[$1], $1, $2 }' |
        sort -k1,1n -k2,2n -k3,3nr | cut -d' ' -f4- | sed 's/ -$//'
}

# the report, in the models' order, once every run has its verdict
report() {
    fail=0
    runs | while read -r m v; do
        [ "$v" = - ] && v=""
        d="$1/model/$m$v"
        if [ -f "$d/verdict" ]; then
            tail -n +2 "$d/verdict"
            [ "$(head -n 1 "$d/verdict")" = ok ] || echo FAIL >"$1/model/failed"
        else
            echo "check-model: $m ${v:-(the protocol)}: no verdict (see $d)" >&2
            echo FAIL >"$1/model/failed"
        fi
    done
    [ -f "$1/model/failed" ] && fail=1
    [ "$fail" -eq 0 ] && echo "check-model: every model verified, every broken variant rejected"
    return "$fail"
}

case "${1:-}" in
    --one) one "$2" "$3" "${4:-}"; exit 0 ;;
    # the runs as make targets (BUILD/model/NAME/verdict), in start order
    --list) order | tr -d ' '; exit 0 ;;
    --report) rm -f "$2/model/failed"; report "$2"; exit $? ;;
esac

B=${1:-build}
rm -rf "$B/model"
mkdir -p "$B/model"
order | sed "s|^|$B |" | xargs -P "${MODEL_JOBS:-1}" -L 1 "$0" --one
report "$B"
