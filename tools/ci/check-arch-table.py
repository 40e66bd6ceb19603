#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/ci/check-arch-table.py [--self-test] - docs/architecture.md's
"which file to open for which idea" tables match the tree.

The tables are the `| idea | file |` tables that follow the line
"Which file to open for which idea" (lib/) and "And for the tests and the
tools" (tests/, tools/). It fails when
  - a lib/*/*.[ch] file is named in no row of the lib/ table;
  - a row of the lib/ table names no lib/ file, or more than one (one file
    per idea), or a file another row names too (one idea per file);
  - a path named in either table does not exist (a name with * must match
    at least one file; a name ending in / must be a folder).
So the table cannot go stale when a file is split, moved or removed."""
import glob
import os
import re
import sys

LIB_TITLE = "Which file to open for which idea"
MORE_TITLE = "And for the tests and the tools"
# a path: starts at one of the tree's top folders, then no blank, no `|`
PATH = re.compile(r"(?<![\w./-])((?:lib|tests|tools|include|samples|man|docs)/[\w./*+-]*)")


def tables(md):
    """{title: [(line number, file cell)]} for the two tables."""
    out, cur, seen_rows = {}, None, False
    for n, line in enumerate(md.split("\n"), 1):
        s = line.strip()
        if LIB_TITLE in s or MORE_TITLE in s:
            cur = LIB_TITLE if LIB_TITLE in s else MORE_TITLE
            out[cur], seen_rows = [], False
            continue
        if cur is None:
            continue
        if s.startswith("|"):
            seen_rows = True
            cells = [c.strip() for c in s.strip("|").split("|")]
            if len(cells) < 2 or set(cells[1]) <= set("-: ") or cells[1] == "file":
                continue
            out[cur].append((n, cells[1]))
        elif seen_rows:
            cur = None
    return out


def exists(root, p):
    p = p.rstrip(".,;:")
    if "*" in p:
        return bool(glob.glob(os.path.join(root, p)))
    if p.endswith("/"):
        return os.path.isdir(os.path.join(root, p))
    return os.path.exists(os.path.join(root, p))


def check(root, md_path):
    with open(md_path, encoding="utf-8") as f:
        t = tables(f.read())
    bad = []
    for title in (LIB_TITLE, MORE_TITLE):
        if not t.get(title):
            bad.append(f"no table after '{title}'")
    named = {}
    for n, cell in t.get(LIB_TITLE, []):
        libs = [p for p in PATH.findall(cell) if p.startswith("lib/")]
        if len(libs) != 1:
            bad.append(f"line {n}: a row names one lib/ file, this one {len(libs)}: {cell}")
        for p in libs:
            if p in named:
                bad.append(f"line {n}: {p} is named at line {named[p]} too (one idea per file)")
            named.setdefault(p, n)
    for title in (LIB_TITLE, MORE_TITLE):
        for n, cell in t.get(title, []):
            for p in PATH.findall(cell):
                if not exists(root, p):
                    bad.append(f"line {n}: {p} does not exist")
    files = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "lib/*/*.[ch]")))
    if not files:
        bad.append(f"no lib/*/*.[ch] under {root}")
    for p in files:
        if p not in named:
            bad.append(f"{p} is in no row of the table")
    return bad


def self_test():
    import tempfile
    good = ("# x\n\nWhich file to open for which idea:\n\n| idea | file |\n|---|---|\n"
            "| the a | lib/l/a.c |\n| the a's header | lib/l/a.h (its inlines) |\n\n"
            "And for the tests and the tools:\n\n| idea | file |\n|---|---|\n"
            "| tests | tests/t_*.c |\n| the tools | tools/ |\n\ntext\n")
    worse = {
        "a lib/ file in no row": lambda d, m: open(os.path.join(d, "lib/l/new.c"), "w").close() or m,
        "a named file gone": lambda d, m: os.remove(os.path.join(d, "lib/l/a.h")) or m,
        "two files in a row": lambda d, m: m.replace("| lib/l/a.h (its inlines) |",
                                                     "| lib/l/a.h, lib/l/a.c |"),
        "a row without a lib/ file": lambda d, m: m.replace("| the a | lib/l/a.c |",
                                                            "| the a | lib/l/a.c |\n| more | the a |"),
        "a glob that matches nothing": lambda d, m: m.replace("tests/t_*.c", "tests/u_*.c"),
        "a folder gone": lambda d, m: m.replace("tools/ |", "tools2/ |").replace("tools2/", "tests/x/"),
        "no second table": lambda d, m: m.replace("And for the tests and the tools", "And"),
    }

    def tree(d):
        for p in ("lib/l/a.c", "lib/l/a.h", "tests/t_1.c", "tools/x"):
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            open(os.path.join(d, p), "w").close()
        return os.path.join(d, "arch.md")

    with tempfile.TemporaryDirectory() as d:
        md = tree(d)
        with open(md, "w") as f:
            f.write(good)
        if check(d, md):
            print("check-arch-table: self-test: a good table was refused:", check(d, md), file=sys.stderr)
            return 1
    for why, spoil in worse.items():
        with tempfile.TemporaryDirectory() as d:
            md = tree(d)
            text = spoil(d, good)
            with open(md, "w") as f:
                f.write(text)
            if not check(d, md):
                print(f"check-arch-table: self-test: accepted {why}", file=sys.stderr)
                return 1
    print(f"check-arch-table: self-test: a good table passes, {len(worse)} stale ones are refused")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    root = os.path.normpath(root)
    bad = check(root, os.path.join(root, "docs", "architecture.md"))
    for b in bad:
        print("check-arch-table: docs/architecture.md: " + b, file=sys.stderr)
    if bad:
        print("check-arch-table: the which-file tables name every lib/ file once, one a row, "
              "and only files that exist", file=sys.stderr)
        return 1
    n = len(glob.glob(os.path.join(root, "lib/*/*.[ch]")))
    print(f"check-arch-table: docs/architecture.md names each of lib/'s {n} files once, "
          "and every file it names exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
