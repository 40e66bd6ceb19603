#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/dev/add-spdx.sh [--check] - put "SPDX-License-Identifier: MIT" near the
# top of every source, header, script and build file git tracks (line 1, or
# line 2 after a #! line), in the file's comment syntax.  --check only lists
# the files that lack it and fails if there are any (run by make check-docs).
set -eu
check=0; [ "${1:-}" = --check ] && check=1
bad=0
if git rev-parse --git-dir >/dev/null 2>&1; then
    list() { git ls-files; }
else                                    # a release tarball: every file
    list() { find . -type f ! -path './build*' ! -path './.git/*' | sed 's|^\./||'; }
fi
files=
for f in $(list | grep -E '\.(c|h|cc|cpp|rs|go|sh|py|map|in|supp|toml|mod)$|(^|/)Makefile$|^\.ci/run$|^tools/[a-z-]+$'); do
    [ -f "$f" ] && files="$files $f"
done
# the files without the line in their first 3, in one awk run (a process
# per file would cost seconds); an empty file has none
lacking=$(awk 'FNR == 1 { if (NR > 1 && !ok) print prev; ok = 0; prev = FILENAME }
    FNR <= 3 && /SPDX-License-Identifier:/ { ok = 1; nextfile }
    FNR > 3 { nextfile }
    END { if (NR > 0 && !ok) print prev }' $files)
for f in $files; do
    [ -s "$f" ] || lacking="$lacking $f"
done
for f in $lacking; do
    if [ $check -eq 1 ]; then
        echo "no SPDX-License-Identifier line in $f (tools/dev/add-spdx.sh adds it)" >&2
        bad=1; continue
    fi
    case "$f" in
        *.c|*.h|*.map) line='/* SPDX-License-Identifier: MIT */' ;;
        *.cc|*.cpp|*.rs|*.go) line='// SPDX-License-Identifier: MIT' ;;
        *.mod) line='// SPDX-License-Identifier: MIT' ;;
        *) line='# SPDX-License-Identifier: MIT' ;;
    esac
    if head -n 1 "$f" | grep -q '^#!'; then
        sed -i "1a $line" "$f"
    else
        sed -i "1i $line" "$f"
    fi
    echo "added: $f"
done
exit $bad
