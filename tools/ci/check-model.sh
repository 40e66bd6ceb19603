#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-model: verify the Promela models of tools/model/ with spin.
# Each model must verify with "errors: 0", as it is and in each of its
# other modes (the -DALSO_* names in its opening comment); each of its
# broken variants (the -DBROKEN_* names) must be rejected, to show the
# model can fail.  -DCOLLAPSE: search.pml's fence mode stores 46 million
# states (2.0 GB compressed so).  A model whose text holds the line
# "check-model: supertrace" has its default mode checked by bitstate
# hashing (-DBITSTATE, a 2^30-bit table, 128 MB): a partial search in
# about two minutes, where the exhaustive one (search.pml's membarrier
# mode: about 143 million states, 8.7 GB, 84 minutes of CPU) does not fit
# make test; MODEL_FULL=1 (make check-model-full) runs every mode
# exhaustively.  Work files go to BUILD/model.
# Usage: [MODEL_FULL=1] tools/ci/check-model.sh [BUILD]
set -eu
out=${1:-build}/model
mkdir -p "$out"
fail=0
verify() {    # model, variant ("" for the model itself): prints, returns errors
    m=$1; v=$2
    rm -f "$out"/pan* "$out"/*.trail
    cp "tools/model/$m.pml" "$out/"
    store="-DCOLLAPSE" run="" how=""
    if [ -z "$v" ] && [ -z "${MODEL_FULL:-}" ] &&
        grep -q 'check-model: supertrace' "tools/model/$m.pml"; then
        store="-DBITSTATE" run="-w30" how=" (supertrace: partial)"
    fi
    ( cd "$out" && spin $v -a "$m.pml" >/dev/null && cc -O2 -DSAFETY $store -w -o pan pan.c &&
      ./pan -m500000 $run >"$m$v.log" 2>&1 ) || true
    line=$(grep -E 'errors: [0-9]+' "$out/$m$v.log" | head -1)
    states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$out/$m$v.log" | head -1)
    errs=$(printf '%s\n' "$line" | sed -n 's/.*errors: \([0-9]*\).*/\1/p')
    printf '  %-10s %-18s %s, %s states%s\n' "$m" "${v:-(the protocol)}" "${line:-no verdict}" \
        "${states:-?}" "$how"
    [ -n "$errs" ] || return 255
    return "$errs"
}
for f in tools/model/*.pml; do
    m=$(basename "$f" .pml)
    if verify "$m" ""; then :; else
        echo "check-model: $m: spin found an error (see $out/$m.log)" >&2
        fail=1
    fi
    for v in $(grep -o -- '-DALSO_[A-Z][A-Z_]*' "$f" | sort -u); do
        if verify "$m" "$v"; then :; else
            echo "check-model: $m $v: spin found an error (see $out/$m$v.log)" >&2
            fail=1
        fi
    done
    for v in $(grep -o -- '-DBROKEN_[A-Z][A-Z_]*' "$f" | sort -u); do
        if verify "$m" "$v"; then
            echo "check-model: $m $v: NOT rejected - the model cannot fail there" >&2
            fail=1
        fi
    done
done
rm -f "$out"/pan* "$out"/*.trail
[ "$fail" -eq 0 ] && echo "check-model: every model verified, every broken variant rejected"
exit "$fail"
