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
So the table cannot go stale when a file is split, moved or removed.

It fails too when the opening comment of a lib/*/*.[ch] file (its first
comment, the essay that says what the file holds) names
  - a file that does not exist: a path of the tree (lib/io/epoll.c,
    tools/model/park.pml, docs/io.md), one under lib/ without the lib/
    (sched/run.c), or a bare name (run.c, frame.h), which must be some
    file's name in the tree; a path whose first folder is none of the
    tree's (kernel/sched/membarrier.c) is someone else's and passes;
  - a function or a name of the code that does not exist: a name followed
    by "()" (handle(), coro_spawn()), or a coro__ / CORO__ identifier
    (coro__io_arm, CORO__BUDGET; one ending in _ or * is a prefix, which
    some name must start with), looked up in the code of lib/ and
    include/ with the comments left out;
  - a paragraph that ends without a stop (. : ; ) and the like): a
    sentence cut off when a part of the essay moved to another file.
So an essay cannot keep naming a file or function after a split or a
rename."""
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


TOP = ("lib", "tests", "tools", "include", "samples", "man", "docs")
# a file name in prose: a word of the path characters that ends in one of
# the tree's extensions; not part of a longer word (a URL's host)
FILE = re.compile(r"(?<![\w.-])((?:[\w-]+/)*[\w-]+\.(?:c|h|pml|md|py|sh|supp|map|in))(?![\w-])")
FUNC = re.compile(r"\b([A-Za-z_]\w*)\(\)")
CORO = re.compile(r"\b((?:coro__|CORO__)\w*)(\*?)")


def opening_lines(src):
    """The lines of a file's first comment, without the leading ' * ' of
    each; [] when the file starts with code."""
    # the SPDX line, a comment of its own, is not the opening comment
    src = re.sub(r"\A\s*/\*\s*SPDX-License-Identifier:[^*]*\*/", "", src)
    m = re.match(r"\s*(?://[^\n]*\n\s*)*/\*(.*?)\*/", src, re.S)
    if not m:
        return []
    return [re.sub(r"^\s*\*?\s?", "", l).rstrip() for l in m.group(1).split("\n")]


def opening(src):
    """The text of a file's first comment, its lines joined."""
    # a path broken after its '/' at the end of a line joins the next line
    return re.sub(r"/ (?=\w)", "/", " ".join(opening_lines(src)))


def cut_off(lines):
    """The last line of each paragraph that ends without a stop."""
    out, para = [], []
    for l in lines + [""]:
        if l.strip():
            para.append(l)
            continue
        if para and not re.search(r"[.:;)!?\]`'\"]$", para[-1]):
            out.append(para[-1])
        para = []
    return out


def code_words(root):
    """Every identifier in the code of lib/ and include/ (comments and
    string literals left out)."""
    words = set()
    paths = glob.glob(os.path.join(root, "lib/**/*.[ch]"), recursive=True)
    paths += glob.glob(os.path.join(root, "include/**/*.h"), recursive=True)
    strip = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            words.update(re.findall(r"\b[A-Za-z_]\w*", strip.sub(" ", f.read())))
    return words


def tree_names(root):
    """The base names of every file in the tree (.git and build output left
    out)."""
    names = set()
    for d, dirs, fs in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x != "build"]
        names.update(fs)
    return names


def file_exists(root, here, p, names):
    first = p.split("/")[0]
    if "/" not in p:
        return p in names
    if first in TOP:
        return os.path.exists(os.path.join(root, p))
    subs = [d for d in os.listdir(os.path.join(root, "lib"))
            if os.path.isdir(os.path.join(root, "lib", d))] if os.path.isdir(os.path.join(root, "lib")) else []
    if first in subs:
        return os.path.exists(os.path.join(root, "lib", p))
    if os.path.exists(os.path.join(here, p)):
        return True
    return None  # another project's path (a kernel source file): not ours to check


def check_openings(root):
    """What the opening comments of lib/*/*.[ch] name that does not exist."""
    bad = []
    words, names = code_words(root), tree_names(root)
    for path in sorted(glob.glob(os.path.join(root, "lib/*/*.[ch]"))):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            src = f.read()
        text = opening(src)
        for last in cut_off(opening_lines(src)):
            bad.append(f"{rel}: a paragraph of its opening comment ends without a stop "
                       f"(a sentence cut off?): ...{last[-50:]}")
        for p in sorted(set(FILE.findall(text))):
            if file_exists(root, os.path.dirname(path), p, names) is False:
                bad.append(f"{rel}: its opening comment names {p}, which does not exist")
        for fn in sorted(set(FUNC.findall(text))):
            if fn not in words:
                bad.append(f"{rel}: its opening comment names {fn}(), which is nowhere in lib/ or include/")
        for name, star in sorted(set(CORO.findall(text))):
            if star or name.endswith("_"):
                ok = any(w.startswith(name) for w in words)
            else:
                ok = name in words
            if not ok:
                bad.append(f"{rel}: its opening comment names {name}{star}, which is nowhere in lib/ or include/")
    return bad


def self_test_openings():
    """A good tree passes; each planted stale name is refused."""
    import tempfile
    good = ("/* SPDX-License-Identifier: MIT */\n/* The a: see lib/l/b.h, b.h, l/b.h, tools/m.pml and kernel/x/y.c;\n"
            " * a_fn() and coro__b_fn call CORO__B_MAX and CORO__B_*, in\n"
            " * lib/l/\n * b.h. */\nint a_fn(void) { return coro__b_fn(); }\n")
    header = "/* private: b. */\n#define CORO__B_MAX 1\n#define CORO__B_MIN 0\nint coro__b_fn(void);\n"
    worse = {
        "a path that is gone": good.replace("see lib/l/b.h", "see lib/l/gone.h"),
        "a path under lib/ without lib/ that is gone": good.replace("l/b.h", "l/gone.h"),
        "a bare file name that is gone": good.replace(" b.h, ", " gone.c, "),
        "a tool that is gone": good.replace("tools/m.pml", "tools/gone.pml"),
        "a function that is gone": good.replace("a_fn() and", "gone_fn() and"),
        "a coro__ name that is gone": good.replace("coro__b_fn call", "coro__gone call"),
        "a CORO__ name that is gone": good.replace("CORO__B_MAX", "CORO__GONE"),
        "a prefix nothing starts with": good.replace("CORO__B_*", "CORO__GONE_*"),
        "a path split across lines that is gone": good.replace(" * b.h. */", " * gone.h. */"),
        "a sentence cut off": good.replace(" * lib/l/\n", " * lib/l/\n *\n * and then\n *\n"),
    }

    def tree(d, text):
        for p, t in (("lib/l/a.c", text), ("lib/l/b.h", header), ("tools/m.pml", "")):
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            with open(os.path.join(d, p), "w") as f:
                f.write(t)

    with tempfile.TemporaryDirectory() as d:
        tree(d, good)
        if check_openings(d):
            print("check-arch-table: self-test: good opening comments were refused:",
                  check_openings(d), file=sys.stderr)
            return 1
    for why, text in worse.items():
        with tempfile.TemporaryDirectory() as d:
            tree(d, text)
            if not check_openings(d):
                print(f"check-arch-table: self-test: accepted an opening comment with {why}",
                      file=sys.stderr)
                return 1
    print(f"check-arch-table: self-test: good opening comments pass, {len(worse)} stale ones are refused")
    return 0


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
    return self_test_openings()


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
    stale = check_openings(root)
    for b in stale:
        print("check-arch-table: " + b, file=sys.stderr)
    if stale:
        print("check-arch-table: an opening comment names only files and functions that exist "
              "(say what the file holds now)", file=sys.stderr)
    if bad or stale:
        return 1
    n = len(glob.glob(os.path.join(root, "lib/*/*.[ch]")))
    print(f"check-arch-table: docs/architecture.md names each of lib/'s {n} files once, "
          "and every file it names exists; their opening comments name only files and "
          "functions that exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
