#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/ci/check-doc-errors.py - a header comment and its man page agree on
the error codes.  For every function declared in include/corokit/*.h with a
comment right above it, the set of -Exxx codes that comment names must equal
the set of codes its man page (man/src/*.ref, the entry whose "@" line names
the function) lists under ERRORS.  A page that documents several functions
(one "@" line, several names) is compared with the union of their comments.
Functions whose comment names no code at all are skipped (a comment may say
"see coro_x" instead); a function with no page is tools/ci/check-man.sh's
business.  A comment writes the codes its function returns as -Exxx; a code
that is another call's or another await's result (what coro_cancel makes a
job's awaits give, a select branch's own result) is written without the
minus sign, so that it is not counted.

Accepted disagreements would be listed, one a line, in
tools/ci/doc-errors.known (empty: every header agrees with its page): the
check fails on any other (a new one) and on a listed one that no longer
holds (fixed: remove its line), so the list only shrinks.  Usage: tools/ci/check-doc-errors.py [--self-test] [ROOT]
(exit 1 on a new or stale disagreement); --write-known rewrites the list.
"""
import glob
import os
import re
import sys

root = "."
CODE = re.compile(r"-(E[A-Z0-9]+)\b")


def header_codes():
    """function name -> (codes its comment names, file)"""
    out = {}
    for h in sorted(glob.glob(os.path.join(root, "include/corokit/*.h"))):
        text = open(h).read()
        # a comment, then (blank-free) the declaration it documents
        for m in re.finditer(r"/\*((?:(?!\*/).)*)\*/\s*\n((?:[^;{}/]|/(?!\*))*?)\b(coro_[a-z0-9_]+)\s*\(",
                             text, re.S):
            comment, decl, name = m.group(1), m.group(2), m.group(3)
            if "#define" in decl or "typedef" in decl or "\n\n" in decl:
                continue
            codes = set(CODE.findall(comment))
            if codes:
                out.setdefault(name, (set(), os.path.relpath(h, root)))[0].update(codes)
    return out


def page_codes():
    """frozenset of names of an entry -> codes listed under ERRORS"""
    out = []
    for ref in sorted(glob.glob(os.path.join(root, "man/src/*.ref"))):
        names, section, codes = None, None, set()
        for line in open(ref):
            line = line.rstrip("\n")
            if line.startswith("@"):
                if names:
                    out.append((names, codes, ref))
                names = [n for n in line[1:].split() if n.startswith("coro_")]
                if line.startswith("@7"):
                    names = []
                section, codes = None, set()
            elif re.fullmatch(r"[A-Z][A-Z ]+", line):
                section = line
            elif section == "ERRORS":
                m = re.match(r"\* (E[A-Z0-9]+)\b", line)
                if m:
                    codes.add(m.group(1))
        if names:
            out.append((names, codes, ref))
    return out


def disagreements(r):
    global root
    root = r
    hdr = header_codes()
    lines, n = [], 0
    for names, codes, ref in page_codes():
        want = set()
        if not any(x in hdr for x in names):
            continue
        n += 1
        for x in names:
            if x in hdr:
                want |= hdr[x][0]
        if want != codes:
            lines.append("%s: only in the header: %s; only in the man page: %s" % (
                " ".join(names), " ".join(sorted(want - codes)) or "-",
                " ".join(sorted(codes - want)) or "-"))
    return lines, n


def self_test(r):
    """a deliberately broken copy (a code added to coro_spawn's comment, one
    dropped from coro_join's page) must fail; the tree as it is must pass"""
    import shutil
    import tempfile
    t = tempfile.mkdtemp(prefix="corokit-doc-errors.")
    try:
        shutil.copytree(os.path.join(r, "include"), os.path.join(t, "include"))
        shutil.copytree(os.path.join(r, "man/src"), os.path.join(t, "man/src"))
        h = os.path.join(t, "include/corokit/sched.h")
        s = open(h).read()
        i = s.index("CORO_EXTERN int coro_spawn(")
        j = s.rindex("*/", 0, i)
        open(h, "w").write(s[:j] + "-EXDEV (planted). " + s[j:])
        base = set(open(BASELINE).read().splitlines()) if os.path.exists(BASELINE) else set()
        got, _ = disagreements(t)
        new = [x for x in got if x not in base]
        if not any(x.startswith("coro_spawn") and "EXDEV" in x for x in new):
            print("check-doc-errors self-test: FAILED: a code planted in coro_spawn's comment "
                  "was not found")
            return 1
        print("check-doc-errors self-test: a code planted in a header comment is found")
        return 0
    finally:
        shutil.rmtree(t)


BASELINE = None


def main():
    global BASELINE
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    r = args[0] if args else "."
    BASELINE = os.path.join(r, "tools/ci/doc-errors.known")
    if "--self-test" in sys.argv:
        return self_test(r)
    got, n = disagreements(r)
    if "--write-known" in sys.argv:
        open(BASELINE, "w").write("".join(x + "\n" for x in got))
        print("check-doc-errors: %d known disagreements written to %s" % (len(got), BASELINE))
        return 0
    known = set(open(BASELINE).read().splitlines()) if os.path.exists(BASELINE) else set()
    new = [x for x in got if x not in known]
    stale = sorted(known - set(got))
    for x in new:
        print("check-doc-errors: header and man page disagree: " + x)
    for x in stale:
        print("check-doc-errors: fixed, remove it from tools/ci/doc-errors.known: " + x)
    if new or stale:
        return 1
    print("check-doc-errors: %d man pages checked against their header comments, %d known "
          "disagreements (tools/ci/doc-errors.known), no new one" % (n, len(known)))
    return 0


sys.exit(main())
