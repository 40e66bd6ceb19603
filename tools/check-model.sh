#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-model: verify the Promela models of tools/model/ with spin.
# Each model must verify with "errors: 0", as it is and in each of its
# other modes (the -DALSO_* names in its opening comment); each of its
# broken variants (the -DBROKEN_* names) must be rejected, to show the
# model can fail.  -DCOLLAPSE: search.pml's asymmetric mode stores 40
# million states (2.3 GB compressed so, 3.4 GB without).  Work files go to BUILD/model.
# Usage: tools/check-model.sh [BUILD]
set -eu
out=${1:-build}/model
mkdir -p "$out"
fail=0
verify() {    # model, variant ("" for the model itself): prints, returns errors
    m=$1; v=$2
    rm -f "$out"/pan* "$out"/*.trail
    cp "tools/model/$m.pml" "$out/"
    ( cd "$out" && spin $v -a "$m.pml" >/dev/null && cc -O2 -DSAFETY -DCOLLAPSE -w -o pan pan.c &&
      ./pan -m500000 >"$m$v.log" 2>&1 ) || true
    line=$(grep -E 'errors: [0-9]+' "$out/$m$v.log" | head -1)
    states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' "$out/$m$v.log" | head -1)
    errs=$(printf '%s\n' "$line" | sed -n 's/.*errors: \([0-9]*\).*/\1/p')
    printf '  %-10s %-18s %s, %s states\n' "$m" "${v:-(the protocol)}" "${line:-no verdict}" \
        "${states:-?}"
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
