#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what corokit needs to build and test, when it is missing.
# Usage: tools/dev/deps.sh [extra Debian packages...]
#
# Each need is probed the way the build uses it (a command on PATH, a header
# and library the compiler finds), not through the package manager, so this
# does nothing - and needs neither dpkg nor apt - when everything is there,
# whatever installed it (a distribution, /usr/local, CPATH/LIBRARY_PATH).
# Only what is missing is installed, with apt-get (sudo when not root).
set -eu
CC=${CC:-cc}
missing=""
need() { missing="$missing $1"; }

# compiles and links a one-line program with header $1 and library flags $2
probe() {
    printf '#include <%s>\nint main(void) { return 0; }\n' "$1" |
        "$CC" -x c - -o /dev/null $2 >/dev/null 2>&1
}

command -v make >/dev/null 2>&1 || need make
if command -v "$CC" >/dev/null 2>&1; then
    probe ck_ring.h -lck || need libck-dev
    probe criterion/criterion.h -lcriterion || need libcriterion-dev
else
    need gcc
    need libck-dev
    need libcriterion-dev
fi
command -v pkg-config >/dev/null 2>&1 || need pkgconf      # tools/ci/check-build.sh
command -v spin >/dev/null 2>&1 || need spin                # tools/ci/check-model.sh
command -v tcc >/dev/null 2>&1 || need tcc                  # tools/ci/check-model.sh: the short searches' pan
command -v python3 >/dev/null 2>&1 || need python3          # tests/internal/test_trace.c reads the JSON
command -v clang >/dev/null 2>&1 || need clang              # make fuzz (libFuzzer)
command -v valgrind >/dev/null 2>&1 || need valgrind        # tools/ci/check-valgrind.sh
command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1 || need g++

# extra packages named by the caller (e.g. make bench): by name, so dpkg
for p in "$@"; do
    if command -v dpkg-query >/dev/null 2>&1; then
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need "$p"
    else
        need "$p"
    fi
done

[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps.sh: missing:$missing - install them (no apt-get here)" >&2
    exit 1
fi
echo "deps.sh: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
