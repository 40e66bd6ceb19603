#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/ci/check-comments.py [--self-test] - lib/'s comments carry the why,
never benchmark figures or change history (docs/conventions: figures go to
docs/benchmarks.md, history to git and the CHANGELOG).

Fails on a comment line of lib/*/*.[ch] that has
  - a percentage or a ratio ("8 %", "1.2x");
  - "faster" or "slower";
  - "was ... now" (history);
  - one figure turning into another ("785 -> 749"; a state "0 -> 1" passes);
  - a date (2026-11-27);
  - a time with a unit (ns, us, ms) beside a word of measurement
    (measured, here, against, took, median, p50/p99, callgrind, perf).
Sizes, protocol constants and a time that is a rule ("64 ns units",
"over 50 us") pass."""
import glob
import os
import re
import sys

PATTERNS = [
    (re.compile(r"\d\s*%|\d(\.\d+)?\s*x\b(?!\s*\d)", re.I), "a percentage or a ratio"),
    (re.compile(r"\b(faster|slower)\b", re.I), "faster/slower"),
    (re.compile(r"\bwas\b.*\bnow\b", re.I), "was ... now"),
    # two digits at least on each side: "0 -> 1" is a state change
    (re.compile(r"\d[\d.,]*\d\s*->\s*\d[\d.,]*\d"), "a number turned into another"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
]
TIMED = re.compile(r"\d\s*(ns|us|µs|ms)\b")
MEASURE = re.compile(r"\b(measured|here|against|took|median|p50|p99|callgrind|perf)\b", re.I)


def comment_lines(src):
    """(line number, text) of every line inside a comment of C source."""
    out, i, n, line = [], 0, len(src), 1
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j
            for k, text in enumerate(src[i + 2:j].split("\n")):
                out.append((line + k, text))
            line += src.count("\n", i, j)
            i = j + 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append((line, src[i + 2:j]))
            i = j
        elif src[i] in "\"'":
            q, i = src[i], i + 1
            while i < n and src[i] != q:
                if src[i] == "\\":
                    i += 1
                i += 1
            i += 1
        else:
            if src[i] == "\n":
                line += 1
            i += 1
    return out


def check(paths):
    bad = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            src = f.read()
        for ln, text in comment_lines(src):
            why = next((w for r, w in PATTERNS if r.search(text)), None)
            if not why and TIMED.search(text) and MEASURE.search(text):
                why = "a measured time"
            if why:
                bad.append(f"{p}:{ln}: {why}: {text.strip()}")
    return bad


def self_test():
    import tempfile
    good = ("/* the ready stamp (64 ns units); over 50 us; 0x9e3779b97f4a7c15; CAS 0 -> 1 */\n"
            "int a = 8 % 3; /* a size: 4 KiB */\n")
    worse = ["/* costs 17 ns against 9.5 ns here */", "/* 6 % of spawn */", "/* 1.2x */",
             "/* read slower */", "/* was a mutex, now a spinlock */", "/* 785 -> 749 */",
             "/* on 2026-11-27 */"]
    with tempfile.TemporaryDirectory() as d:
        g = os.path.join(d, "good.c")
        with open(g, "w") as f:
            f.write(good)
        if check([g]):
            print("check-comments: self-test: a good file was refused:", check([g]), file=sys.stderr)
            return 1
        for i, w in enumerate(worse):
            b = os.path.join(d, f"bad{i}.c")
            with open(b, "w") as f:
                f.write("int x;\n" + w + "\n")
            if not check([b]):
                print(f"check-comments: self-test: accepted {w}", file=sys.stderr)
                return 1
    print(f"check-comments: self-test: a good file passes, {len(worse)} figures are refused")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files = sorted(glob.glob("lib/*/*.[ch]"))
    if not files:
        print("check-comments: no lib/*/*.[ch] found from " + os.getcwd(), file=sys.stderr)
        return 1
    bad = check(files)
    for b in bad:
        print("check-comments: " + b, file=sys.stderr)
    if bad:
        print("check-comments: lib/ comments carry the why; figures go to docs/benchmarks.md, "
              "history to git and the CHANGELOG", file=sys.stderr)
        return 1
    print("check-comments: no benchmark figure or history in lib/'s comments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
