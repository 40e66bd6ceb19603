#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/check-locals.sh - find C locals used across a suspension point.
# A body's C locals do not survive CORO_AWAIT or CORO_YIELD (the function
# returns); state that must survive lives in the frame.  Compiled with the
# switch back end, every resume point is a case label of one switch, so a
# local read after a suspension is a variable the compiler can see used
# uninitialized on the path that enters at that case.  gcc (-O2: its flow
# analysis needs the optimizer) reports it as -Wmaybe-uninitialized, clang
# as -Wsometimes-uninitialized or -Wuninitialized; clang also sees a loop
# counter declared in the `for` that gcc misses, so both run when present.
# Only uses count: a local set and consumed between two suspension points
# (a timeout computed for the await that follows) is right and passes,
# which is why -Wjump-misses-init (every initialized declaration a case
# label jumps over) is not used.  Only these warnings count: the file's
# other warnings are its own business.
#
# Usage: tools/check-locals.sh [-I DIR | -D NAME ...] FILE.c...
#        tools/check-locals.sh --self-test
# make install puts it in PREFIX/bin as corokit-check-locals, which then
# compiles against PREFIX/include, and its self-test's files in
# PREFIX/share/corokit/check_locals.
# A false report (a local that is really written again after every
# suspension before it is read) goes away by initializing the local where
# it is declared or, better, by moving it into the frame.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "$1" = --self-test ]; then
    # the bad file must be refused once per planted mistake, its twin pass
    # (tests/check_locals in the source tree, share/corokit/check_locals
    # where make install put them)
    t=$here/tests/check_locals
    [ -f "$t/bad.c" ] || t=$here/share/corokit/check_locals
    [ -f "$t/bad.c" ] || { echo "check-locals self-test: no bad.c in $here/tests/check_locals or $t"; exit 1; }
    out=$("$0" "$t/bad.c" 2>&1)
    want=$(grep -c 'planted: [a-z]' "$t/bad.c")
    got=0
    for var in $(sed -n 's/.*planted: [a-z0-9_]* (\([a-z0-9_]*\)).*/\1/p' "$t/bad.c"); do
        if printf '%s\n' "$out" | grep -q "warning: .*'$var[][0-9]*'"; then
            got=$((got + 1))
        else
            echo "check-locals self-test: the local '$var' was not reported"
        fi
    done
    if [ "$got" != "$want" ] || [ "$want" = 0 ]; then
        printf '%s\n' "$out" | grep -E 'In function|warning:' | sed 's/^/    /'
        echo "check-locals self-test: FAILED ($got of $want found)"
        exit 1
    fi
    if ! "$0" "$t/good.c"; then
        echo "check-locals self-test: FAILED (the correct twin was refused)"
        exit 1
    fi
    echo "check-locals self-test: $got of $want planted mistakes found, the twin passes"
    exit 0
fi
flags=
while [ $# -gt 0 ]; do
    case $1 in
    -I|-D) flags="$flags $1$2"; shift 2 ;;
    -I*|-D*) flags="$flags $1"; shift ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-I DIR | -D NAME ...] FILE.c..." >&2; exit 2; }
base="-std=gnu11 -O2 -pthread -DCORO_USE_SWITCH=1 -I$here/include $flags"
pat='\[-W(maybe-uninitialized|uninitialized|sometimes-uninitialized)\]'
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
bad=0
for f in "$@"; do
    for cc in gcc clang; do
        command -v $cc >/dev/null 2>&1 || continue
        # clang's warnings come from its front end, which -fsyntax-only
        # runs whole (a third of its time); gcc's from its optimizer
        if [ $cc = gcc ]; then
            w="-Wuninitialized -Wmaybe-uninitialized -c -o /dev/null"
        else
            w="-Wuninitialized -Wsometimes-uninitialized -fsyntax-only"
        fi
        # shellcheck disable=SC2086
        LC_ALL=C $cc $base $w "$f" >"$tmp" 2>&1
        if grep -Eq "$pat" "$tmp"; then
            echo "check-locals: $f ($cc): a local may be used across a suspension:"
            sed 's/^/    /' "$tmp"
            bad=1
        fi
    done
done
[ $bad = 0 ] && echo "check-locals: $# file(s), no local used across a suspension"
exit $bad
