#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/dev/hook-files.sh [SRC] - the files of lib/ (SRC/*/*.c) whose code
# CORO_TEST_HOOKS changes, one a line: the Makefile builds these again for
# the test library and takes the shipped object of every other one.
#
# A file's code changes when, outside comments, it names CORO_TEST_HOOKS
# or uses CORO__HOOK (its definition in lib/base/base.h aside), or when it
# includes ("layer/name.h"), directly or through other headers of SRC, a
# header that uses CORO__HOOK (lib/base/sys.h: CORO__VIA_LIBC, which its
# inline wrappers call).  That holds while a header's hook part - from
# `#ifdef CORO_TEST_HOOKS` to its `#endif` - only declares: functions and
# variables (each declaration opening with CORO__HIDDEN or extern), and
# base.h's two definitions of CORO__HOOK.
#
# tools/dev/hook-files.sh --check [SRC]: fails, naming the line, when a
# header names CORO_TEST_HOOKS other than so, or its hook part holds
# anything else: code, a macro, a struct member, a nested #if (make
# check-hooks runs it; tools/ci/check-hooks.sh --self-test plants each).
check=
[ "${1:-}" = --check ] && { check=1; shift; }
SRC=${1:-lib}
prog='
function bad(why) { print "hook-files: " FILENAME ":" FNR ": " why > "/dev/stderr"; nbad++ }
FNR == 1 { f = FILENAME; incomment = 0; part = 0; stmt = 0; files[f] = 1 }
{
    line = $0
    # comments blanked (a block comment may span lines)
    out = ""
    while (line != "") {
        if (incomment) {
            i = index(line, "*/")
            if (!i) { line = ""; break }
            line = substr(line, i + 2); incomment = 0
        } else {
            i = index(line, "/*"); j = index(line, "//")
            if (j && (!i || j < i)) { out = out substr(line, 1, j - 1); line = ""; break }
            if (!i) { out = out line; line = ""; break }
            out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
        }
    }
    if (match(out, /^[ \t]*#[ \t]*include[ \t]*"[^"]+"/)) {
        s = substr(out, RSTART, RLENGTH); sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
        inc[f] = inc[f] " " src "/" s
    }
    isdef = out ~ /^[ \t]*#[ \t]*define[ \t]+CORO__HOOK[ \t]*\(/
    if (!isdef && (out ~ /CORO__HOOK/ || (f ~ /\.c$/ && out ~ /CORO_TEST_HOOKS/)))
        hooked[f] = 1
    if (f !~ /\.h$/)
        next
    # a header: its hook parts declare, and nothing else
    if (!part) {
        if (out ~ /^[ \t]*#[ \t]*ifdef[ \t]+CORO_TEST_HOOKS[ \t]*$/)
            part = 1
        else if (out ~ /CORO_TEST_HOOKS/)
            bad("CORO_TEST_HOOKS named other than as #ifdef CORO_TEST_HOOKS")
        next
    }
    if (out ~ /^[ \t]*#[ \t]*endif/) {
        if (stmt) bad("the hook part ends inside a declaration")
        part = 0; stmt = 0
    } else if (out ~ /^[ \t]*#[ \t]*else/)
        part = 2
    else if (isdef)
        ;
    else if (out ~ /^[ \t]*#/)
        bad("a preprocessor line other than CORO__HOOK'"'"'s definition in a hook part")
    else if (out ~ /^[ \t]*$/)
        ;
    else if (part == 2)
        bad("the #else of a hook part holds more than CORO__HOOK'"'"'s definition")
    else if (out ~ /[{}]/)
        bad("code or a struct in a hook part (it may only declare)")
    else {
        if (!stmt && out !~ /^[ \t]*(CORO__HIDDEN|extern)[ \t]/)
            bad("a hook part holds what is not a declaration opening with CORO__HIDDEN or extern")
        stmt = out !~ /;[ \t]*$/
    }
}
END {
    if (check) {
        if (nbad) exit 1
        print "hook-files: the hook parts of " src "/'"'"'s headers only declare"
        exit 0
    }
    # a file that includes a hooked header is hooked: to a fixed point
    do {
        changed = 0
        for (f in files) {
            if (f in hooked)
                continue
            n = split(inc[f], a, " ")
            for (k = 1; k <= n; k++)
                if (a[k] in hooked) { hooked[f] = 1; changed = 1; break }
        }
    } while (changed)
    for (f in hooked)
        if (f ~ /\.c$/)
            print f
}'
if [ -n "$check" ]; then
    awk -v src="$SRC" -v check=1 "$prog" "$SRC"/*/*.h "$SRC"/*/*.c
else
    awk -v src="$SRC" -v check= "$prog" "$SRC"/*/*.h "$SRC"/*/*.c | sort
fi
