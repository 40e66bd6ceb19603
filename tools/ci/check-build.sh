#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/ci/check-build.sh BUILD_DIR - what a packager and a user see:
#   1. every public header compiles alone as C11 and as C++17 with -Wall
#      -Wextra -Werror -pedantic, by CC and CXX and, when present, clang and
#      clang++;
#   2. `make install DESTDIR=scratch PREFIX=/opt/corokit` (its tools run where
#      installed: corokit-timeline, corokit-check-locals), then the C and C++
#      programs of tests/build/ are built against the installed tree through
#      pkg-config only - shared, and fully static (-static: --static must list
#      everything) - by each of those compilers, and run;
#   3. the README's example program compiles as shown and runs;
#   4. `make uninstall` leaves no file behind;
#   5. (2b) an install under a private PREFIX runs without LD_LIBRARY_PATH.
# Fast (a few seconds): one install, a dozen small compiles.
set -eu
B=${1:-build}
CC=${CC:-cc}
CXX=${CXX:-$(case "$CC" in *clang*) echo clang++ ;; *) echo g++ ;; esac)}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/corokit-build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "check-build: FAIL: $*" >&2; exit 1; }
say() { echo "check-build: $*"; }
STRICT="-Wall -Wextra -Werror -pedantic"

# the compilers: CC and CXX, and clang and clang++ when present (one install
# serves both, so CI checks the two compilers' side with one library)
CCS=$CC; CXXS=$CXX
command -v clang >/dev/null && [ "$CC" != clang ] && CCS="$CCS clang"
command -v clang++ >/dev/null && [ "$CXX" != clang++ ] && CXXS="$CXXS clang++"

# 1. each header alone, C and C++
for h in include/corokit.h include/corokit/*.h; do
    inc=${h#include/}
    printf '#include <%s>\nint main(void) { return 0; }\n' "$inc" > "$TMP/h.c"
    for cc in $CCS; do
        $cc -std=c11 -D_DEFAULT_SOURCE $STRICT -DCORO_USE_SWITCH -Iinclude -c "$TMP/h.c" -o "$TMP/h.o" ||
            fail "$inc does not compile alone as C11 with $cc"
    done
    cp "$TMP/h.c" "$TMP/h.cc"
    for cxx in $CXXS; do
        $cxx -std=c++17 $STRICT -Iinclude -c "$TMP/h.cc" -o "$TMP/h.o" ||
            fail "$inc does not compile alone as C++17 with $cxx"
    done
done
say "headers compile alone as C11 ($CCS) and C++17 ($CXXS) (-pedantic -Werror)"

# 2. install, then build against the installed tree through pkg-config only
D="$TMP/dest"
P=/opt/corokit
make --no-print-directory -s install B="$B" DESTDIR="$D" PREFIX="$P" CC="$CC" >/dev/null
PC="$D$P/lib/pkgconfig/corokit.pc"
[ -f "$PC" ] || fail "no corokit.pc installed"
grep -qx "prefix=$P" "$PC" || fail "corokit.pc: prefix is not $P"
grep -qx 'libdir=${prefix}/lib' "$PC" || fail 'corokit.pc: libdir is not ${prefix}/lib'
grep -qx 'includedir=${prefix}/include' "$PC" || fail 'corokit.pc: includedir is not ${prefix}/include'
for l in libcorokit.so libcorokit.so.0; do
    [ -L "$D$P/lib/$l" ] || fail "$l is not a link"
done
real=$(readlink -f "$D$P/lib/libcorokit.so")
case "$real" in *libcorokit.so.*.*.*) ;; *) fail "libcorokit.so does not lead to .so.MAJOR.MINOR.PATCH" ;; esac
objdump -p "$real" | grep -q 'SONAME *libcorokit\.so\.[0-9]*$' || fail "no soname libcorokit.so.MAJOR"
[ -f "$D$P/share/man/man3/coro_spawn.3" ] || fail "man pages not installed"
[ -f "$D$P/share/man/man7/corokit.7" ] || fail "corokit(7) not installed"
TL="$D$P/bin/corokit-timeline"
[ -x "$TL" ] || fail "corokit-timeline not installed"
"$TL" --help | grep -q 'usage: corokit-timeline' || fail "corokit-timeline --help does not print its usage"
# the installed tool finds its timeline.py in PREFIX/share/corokit
if command -v python3 >/dev/null; then
    "$TL" --steps tests/timeline/known.json | cmp -s - tests/timeline/known.steps ||
        fail "corokit-timeline --steps differs from tests/timeline/known.steps"
fi
# the locals checker compiles against the installed headers, and its
# self-test finds its files in PREFIX/share/corokit
CL="$D$P/bin/corokit-check-locals"
[ -x "$CL" ] || fail "corokit-check-locals not installed"
"$CL" --self-test >/dev/null || fail "corokit-check-locals --self-test fails where installed"
! "$CL" "$D$P/share/corokit/check_locals/bad.c" >/dev/null 2>&1 ||
    fail "the installed corokit-check-locals passes bad.c"

pc() { PKG_CONFIG_PATH="$D$P/lib/pkgconfig" pkg-config --define-variable=prefix="$D$P" "$@" corokit; }
libs_static=$(pc --static --libs)
dups=$(printf '%s\n' $libs_static | sort | uniq -d)
[ -z "$dups" ] || fail "pkg-config --static --libs repeats: $dups"
CFL=$(pc --cflags)

run() { # name, binary, [expect static]
    LD_LIBRARY_PATH="$D$P/lib" "$2" || fail "$1 failed (exit $?)"
}
for cc in $CCS; do
    $cc -std=c11 $STRICT -DCORO_USE_SWITCH $CFL tests/build/consumer.c -o "$TMP/c-shared" $(pc --libs)
    LD_LIBRARY_PATH="$D$P/lib" ldd "$TMP/c-shared" | grep -q "$D$P/lib/libcorokit.so.0" ||
        fail "the shared C program ($cc) does not load the installed libcorokit.so.0"
    run "C, shared, $cc" "$TMP/c-shared"
    $cc -std=gnu11 -Wall -Wextra -Werror -static $CFL tests/build/consumer.c -o "$TMP/c-static" $libs_static
    run "C, static, $cc" "$TMP/c-static"
done
for cxx in $CXXS; do
    $cxx -std=c++17 $STRICT $CFL tests/build/consumer.cc -o "$TMP/cxx-shared" $(pc --libs)
    run "C++17, shared, $cxx" "$TMP/cxx-shared"
    $cxx -std=gnu++17 -Wall -Wextra -Werror -static $CFL tests/build/consumer.cc -o "$TMP/cxx-static" $libs_static
    run "gnu++17, static, $cxx" "$TMP/cxx-static"
done
say "C ($CCS) and C++ ($CXXS) programs built through pkg-config (shared and static) run"

# 2a. a plug-in loaded with dlopen after start-up: the C program as a
# shared object, linked against the shared library (which dlopen loads,
# with its initial-exec thread-locals) and with the static one inside it
# (position-independent objects), each run by tests/build/loader.c
$CC -std=gnu11 -Wall -Wextra -Werror tests/build/loader.c -o "$TMP/loader" -ldl
$CC -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -Dmain=plugin_main $CFL \
    tests/build/consumer.c -o "$TMP/plugin-shared.so" $(pc --libs)
LD_LIBRARY_PATH="$D$P/lib" "$TMP/loader" "$TMP/plugin-shared.so" >/dev/null ||
    fail "a plug-in linked against libcorokit.so fails when dlopen'd"
$CC -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -Dmain=plugin_main $CFL \
    tests/build/consumer.c -o "$TMP/plugin-static.so" "$D$P/lib/libcorokit.a" -lck -pthread ||
    fail "libcorokit.a does not link into a shared object"
"$TMP/loader" "$TMP/plugin-static.so" >/dev/null ||
    fail "a plug-in with libcorokit.a inside fails when dlopen'd"
say "a plug-in loads with dlopen, linked against either library"

# 2b. a user's install under a private PREFIX (no DESTDIR), as the README
# shows: a program built through pkg-config runs with no LD_LIBRARY_PATH
# (corokit.pc's rpath)
H="$TMP/home-opt"
make --no-print-directory -s install B="$B" PREFIX="$H" CC="$CC" >/dev/null
$CC -std=c11 $STRICT -DCORO_USE_SWITCH \
    $(PKG_CONFIG_PATH="$H/lib/pkgconfig" pkg-config --cflags corokit) \
    tests/build/consumer.c -o "$TMP/c-prefix" \
    $(PKG_CONFIG_PATH="$H/lib/pkgconfig" pkg-config --libs corokit)
env -u LD_LIBRARY_PATH "$TMP/c-prefix" ||
    fail "a program built through pkg-config against PREFIX=$H does not run without LD_LIBRARY_PATH"
make --no-print-directory -s uninstall B="$B" PREFIX="$H" >/dev/null
say "a program built against a private PREFIX runs without LD_LIBRARY_PATH"

# 3. the README's example: the first ```c block, as shown
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' README.md > "$TMP/readme.c"
[ -s "$TMP/readme.c" ] || fail "no \`\`\`c block in README.md"
$CC -std=gnu11 -Wall -Wextra -Werror $CFL "$TMP/readme.c" -o "$TMP/readme" $(pc --libs) ||
    fail "the README example does not compile as shown"
run "README example" "$TMP/readme" >/dev/null
say "the README example compiles as shown and runs"

# 4. uninstall removes everything
make --no-print-directory -s uninstall B="$B" DESTDIR="$D" PREFIX="$P" >/dev/null
left=$(find "$D" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
say "make uninstall removes every installed file"
