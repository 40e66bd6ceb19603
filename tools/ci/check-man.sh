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
exports=$(nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep -v '^coro__' | sort -u)
# one awk run over every page (a process per function would cost seconds):
# each page's ".so" target, the functions its SYNOPSIS declares ("[ *]f("
# between .SH SYNOPSIS and .SH DESCRIPTION), then the verdicts
awk -v so="$so" -v exports="$(printf '%s ' $exports)" '
    BEGIN { n = split(exports, E, " "); for (i = 1; i <= n; i++) ex[E[i]] = 1 }
    FNR == 1 {
        page = FILENAME; have[page] = 1; syn = 0
        if ($1 == ".so") { t = $2; sub(/^man[0-9]*\//, "", t); target[page] = "man/man3/" t }
    }
    /^\.SH SYNOPSIS/ { syn = 1 }
    syn {
        line = $0
        while (match(line, /[ *][A-Za-z_0-9]+\(/)) {
            decl[page, substr(line, RSTART + 1, RLENGTH - 2)] = 1
            line = substr(line, RSTART + RLENGTH)
        }
    }
    /^\.SH DESCRIPTION/ { syn = 0 }
    END {
        bad = 0
        for (i = 1; i <= n; i++) {
            f = E[i]; page = "man/man3/" f ".3"
            if (!(page in have)) {
                printf "check-man: %s is exported by %s but has no man page (man/src/*.ref)\n", f, so > "/dev/stderr"
                bad = 1; continue
            }
            t = page
            if (page in target) {
                t = target[page]
                if (!(t in have)) {
                    printf "check-man: %s points to missing %s\n", page, t > "/dev/stderr"
                    bad = 1; continue
                }
            }
            if (!((t, f) in decl)) {
                printf "check-man: %s does not declare %s in its SYNOPSIS\n", t, f > "/dev/stderr"
                bad = 1
            }
        }
        for (p in have) {
            nm = p; sub(/^man\/man3\//, "", nm); sub(/\.3$/, "", nm)
            if (!(nm in ex)) notes[nm] = 1
        }
        m = 0
        for (nm in notes) L[++m] = nm
        for (i = 2; i <= m; i++) { v = L[i]; for (j = i - 1; j >= 1 && L[j] > v; j--) L[j + 1] = L[j]; L[j + 1] = v }
        for (i = 1; i <= m; i++)
            printf "check-man: note: %s has a page but %s does not export it (inline, a macro, or not merged yet)\n", L[i], so
        if (!bad) printf "check-man: all %d exported functions have a man page\n", n
        exit bad
    }' man/man3/*.3
