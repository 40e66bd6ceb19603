#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/ci/check-errors.sh - CORO_ERRNO_MAP (include/corokit/error.h) is
# complete, so coro_strerror and coro_err_name never answer "unknown" for a
# code the library can return:
#  1. every errno code the system's <errno.h> defines has an entry (by its
#     name, or by the name an alias shares its value with): whatever a
#     system call gives, and the library passes through as -errno, is in;
#  2. every -Exxx that lib/ or include/corokit/ names has an entry;
#  3. every code a man page lists under ERRORS has an entry;
#  4. no value has two entries (the switch in lib/base/error.c).
# CC picks the preprocessor (cc by default).  Run from the top directory.
set -eu
CC=${CC:-cc}
map=include/corokit/error.h
missing=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

in_map() {
    grep -qE "X\($1," "$map"
}

# 1. the system's errno codes: "NAME VALUE" for the numeric ones; an alias
# (EWOULDBLOCK EAGAIN) counts when the name it stands for is in
printf '#include <errno.h>\n' | $CC -dM -E - |
    awk '$1 == "#define" && $2 ~ /^E[A-Z0-9]+$/ { print $2, $3 }' >"$tmp"
nsys=0
while read -r name value; do
    case $value in
    *[!0-9]*) continue ;;       # an alias: its target is checked
    esac
    nsys=$((nsys + 1))
    if ! in_map "$name"; then
        # the map may hold another name of the same value
        alias=$(awk -v v="$value" -v n="$name" '$2 == v && $1 != n { print $1 }' "$tmp")
        found=0
        for a in $alias; do
            in_map "$a" && found=1
        done
        if [ $found -eq 0 ]; then
            echo "check-errors: <errno.h> defines $name ($value) but CORO_ERRNO_MAP has no entry for it" >&2
            missing=1
        fi
    fi
done <"$tmp"
if [ "$nsys" -lt 100 ]; then
    echo "check-errors: only $nsys errno codes found in <errno.h> via $CC -dM -E: not Linux?" >&2
    missing=1
fi

# 2. what lib/ and the public headers name
for e in $(grep -ohE -- '-E[A-Z0-9]+\b' lib/*/*.c lib/*/*.h include/corokit/*.h | sort -u | cut -c2-); do
    if ! in_map "$e" && ! grep -qE "^$e [A-Z]" "$tmp"; then
        echo "check-errors: lib/ returns -$e but CORO_ERRNO_MAP has no $e" >&2
        missing=1
    fi
done

# 3. every code a man page lists under ERRORS ("* EINVAL: ...", "* EMFILE, ENFILE: ...")
for e in $(grep -ohE '^\* E[A-Z0-9, ]+:' man/src/*.ref | tr -d '*:' | tr ',' ' ' | tr ' ' '\n' | sort -u); do
    if ! in_map "$e" && ! grep -qE "^$e [A-Z]" "$tmp"; then
        echo "check-errors: man/src documents $e but CORO_ERRNO_MAP has no $e" >&2
        missing=1
    fi
done

# 4. one entry per value
dups=$(grep -oE 'X\(E[A-Z0-9]+,' "$map" | cut -c3- | tr -d , | while read -r n; do
    awk -v n="$n" '$1 == n { print $2 }' "$tmp"
done | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "check-errors: CORO_ERRNO_MAP holds these values twice: $dups" >&2
    missing=1
fi

[ $missing -eq 0 ] && echo "check-errors: CORO_ERRNO_MAP covers all $nsys codes of <errno.h>, every code lib/ returns and the man pages list"
exit $missing
