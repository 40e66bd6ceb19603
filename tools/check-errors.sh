#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/check-errors.sh - every -Exxx that lib/ returns has an entry in
# CORO_ERRNO_MAP (include/corokit/error.h), so coro_strerror and
# coro_err_name never answer "unknown" for a code of the library's own, nor
# for one its man pages list.
set -eu
missing=0
for e in $(grep -ohE -- '-E[A-Z0-9]+\b' lib/*/*.c lib/*/*.h include/corokit/*.h | sort -u | cut -c2-); do
    if ! grep -qE "X\($e," include/corokit/error.h; then
        echo "check-errors: lib/ returns -$e but CORO_ERRNO_MAP has no $e" >&2
        missing=1
    fi
done
# every code a man page lists under ERRORS ("* EINVAL: ...", "* EMFILE, ENFILE: ...")
for e in $(grep -ohE '^\* E[A-Z0-9, ]+:' man/src/*.ref | tr -d '*:' | tr ',' ' ' | tr ' ' '\n' | sort -u); do
    if ! grep -qE "X\($e," include/corokit/error.h; then
        echo "check-errors: man/src documents $e but CORO_ERRNO_MAP has no $e" >&2
        missing=1
    fi
done
[ $missing -eq 0 ] && echo "check-errors: CORO_ERRNO_MAP covers every code lib/ returns and the man pages list"
exit $missing
