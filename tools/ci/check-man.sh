#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/ci/check-man.sh LIBRARY.so - fail when a function the library exports
# (nm -D) has no man page in man/man3, or a page does not show the function
# in its SYNOPSIS.  To document a new function: add an "@ name" entry to the
# right man/src/*.ref file and run tools/dev/gen-man.sh (man/README.md).
# Pages for functions the library does not export yet are reported, not
# failed (they may document what another branch adds).  coro__* are the
# private helpers of inline functions (gen.h): exported, never documented.
set -eu
so=${1:-build/libcorokit.so.0}
[ -f "$so" ] || { echo "check-man: no $so (build it first)" >&2; exit 1; }
bad=0
exports=$(nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep -v '^coro__' | sort -u)
for f in $exports; do
    page=man/man3/$f.3
    if [ ! -f "$page" ]; then
        echo "check-man: $f is exported by $so but has no man page (man/src/*.ref)" >&2
        bad=1; continue
    fi
    target=$page
    if head -n 1 "$page" | grep -q '^\.so '; then
        target=man/$(sed -n '1s/^\.so man[0-9]*\///p' "$page" | sed 's/^/man3\//')
        [ -f "$target" ] || { echo "check-man: $page points to missing $target" >&2; bad=1; continue; }
    fi
    # the SYNOPSIS (between .SH SYNOPSIS and the next .SH) declares it
    if ! sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$target" | grep -q "[ *]$f("; then
        echo "check-man: $target does not declare $f in its SYNOPSIS" >&2
        bad=1
    fi
done
for p in man/man3/*.3; do
    n=$(basename "$p" .3)
    printf '%s\n' $exports | grep -qx "$n" || echo "check-man: note: $n has a page but $so does not export it (inline, a macro, or not merged yet)"
done
[ $bad -eq 0 ] && echo "check-man: all $(printf '%s\n' $exports | wc -l) exported functions have a man page"
exit $bad
