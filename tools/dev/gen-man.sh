#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/dev/gen-man.sh [--check] - the reference from its one source:
# man/src/*.ref -> man/man3/*.3 (a page per entry, a .so link per extra
# name), man/man7/*.7 and docs/api.md.  --check regenerates into a scratch
# directory and fails when the committed files differ (run by make
# check-docs).  Needs only sh and awk.
set -eu
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^#define CORO_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/corokit/version.h | paste -sd.)
gen() {
    mkdir -p "$1/man/man3" "$1/man/man7" "$1/docs"
    rm -f "$1"/man/man3/*.3 "$1"/man/man7/*.7
    awk -v out="$1" -v version="$version" -f tools/dev/gen-man.awk man/src/*.ref
}
if [ "${1:-}" = --check ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/corokit-man.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    gen "$tmp"
    if ! diff -r "$tmp/man/man3" man/man3 >/dev/null || ! diff -r "$tmp/man/man7" man/man7 >/dev/null ||
       ! diff "$tmp/docs/api.md" docs/api.md >/dev/null; then
        echo "gen-man: man/ or docs/api.md is not what man/src/*.ref gives: run tools/dev/gen-man.sh" >&2
        diff -ru "$tmp/docs/api.md" docs/api.md | head -20 >&2 || true
        exit 1
    fi
    echo "gen-man: man pages and docs/api.md match man/src/*.ref"
else
    gen .
fi
