#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/dev/rename-tests.py - give every test one home: a Criterion suite's
name is its file's name (tests/api/test_sched_diag.c holds suite
sched_diag), and the files of tests/api/ are named for the public header
whose promises they check (a name prefix: coro_, cpuset, error, gen, io_,
sched_, sync_, trace_; samples_ for the programs of samples/ run from
outside).  tools/ci/test-index.py checks that it stays so.

What it does, in this order, and again without harm (it is idempotent, so
it can be re-run after merging branches that added tests or files):
  1. `git mv` each file of RENAMES below whose old name still exists;
  2. in every tests/{api,internal}/test_*.c, each Test(SUITE, NAME) (and
     ParameterizedTest, ParameterizedTestParameters) whose SUITE is not the
     file's name gets the file's name; where a file held several suites,
     the most common one's tests keep their names and the others' get
     their old suite as a prefix (Test(deadline, x) in test_cancel_job.c
     becomes Test(cancel_job, deadline_x)), so that no two names collide;
     a Test() whose suite is a parameter of the #define around it (the
     twice-built tests/api/test_coro.c) is left alone;
  3. rewrites the old paths (tests/api/test_x.c, and test_x.c alone where
     that name was unique) in every file git tracks, and the suite/test
     patterns of tests/slow.txt by the same map.
Prints each rename.  Usage: tools/dev/rename-tests.py [--dry-run]
"""
import fnmatch
import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter

# old path -> new path (tests/api by public header)
RENAMES = [
    ("tests/api/test_api.c", "tests/api/test_sched_contract.c"),
    ("tests/api/test_await_ctor.c", "tests/api/test_sync_await_ctor.c"),
    ("tests/api/test_block_on.c", "tests/api/test_sched_block_on.c"),
    ("tests/api/test_block_on_seat.c", "tests/api/test_sched_block_on_seat.c"),
    ("tests/api/test_cancelled.c", "tests/api/test_sched_cancelled.c"),
    ("tests/api/test_chan_typed.c", "tests/api/test_sync_chan_typed.c"),
    ("tests/api/test_chat.c", "tests/api/test_samples_chat.c"),
    ("tests/api/test_destroy_race.c", "tests/api/test_sched_destroy_race.c"),
    ("tests/api/test_diag.c", "tests/api/test_sched_diag.c"),
    ("tests/api/test_enomem.c", "tests/api/test_sched_enomem.c"),
    ("tests/api/test_errno.c", "tests/api/test_error_errno.c"),
    ("tests/api/test_far_deadlines.c", "tests/api/test_sched_far_deadlines.c"),
    ("tests/api/test_fork_free.c", "tests/api/test_sched_fork_free.c"),
    ("tests/api/test_misuse.c", "tests/api/test_coro_misuse.c"),
    ("tests/api/test_proxy.c", "tests/api/test_samples_proxy.c"),
    ("tests/api/test_recipes.c", "tests/api/test_samples_recipes.c"),
    ("tests/api/test_sample_args.c", "tests/api/test_samples_args.c"),
    ("tests/api/test_select.c", "tests/api/test_sync_select.c"),
    ("tests/api/test_time_ends.c", "tests/api/test_io_time_ends.c"),
    ("tests/api/test_vtime.c", "tests/api/test_sched_vtime.c"),
    ("tests/api/test_vtime_deadlock_end.c", "tests/api/test_sched_vtime_deadlock_end.c"),
]

# the Test() parser is test-index's (tools/ci/test-index.py, literal_tests)
_spec = importlib.util.spec_from_file_location(
    "test_index", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci", "test-index.py"))
TEST_INDEX = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TEST_INDEX)


suite_of = TEST_INDEX.suite_of


def tests_in(text):
    """(start, end, suite, name) of each Test() whose suite is a literal
    name, start and end the offsets of its "suite, name" in text"""
    spans = list(_lines(text))
    return [(spans[i][0] + t.start(3), spans[i][0] + t.end(4), t.group(3), t.group(4))
            for i, t in TEST_INDEX.literal_tests([line for _, line in spans])]


def _lines(text):
    pos = 0
    for line in text.splitlines(keepends=True):
        yield pos, line
        pos += len(line)


def rewrite_suites(path, dry):
    """the file's Test()s under its own suite; returns {(old s, old n): (s, n)}"""
    text = open(path).read()
    found = tests_in(text)
    want = suite_of(path)
    if not found:
        return {}
    counts = Counter(s for _, _, s, _ in found)
    major = want if want in counts else counts.most_common(1)[0][0]
    moves = {}
    for start, end, s, n in reversed(found):
        if s == want:
            moves[(s, n)] = (s, n)
            continue
        new = n if s == major else f"{s}_{n}"
        moves[(s, n)] = (want, new)
        text = text[:start] + f"{want}, {new}" + text[end:]
    if any(k != v for k, v in moves.items()) and not dry:
        open(path, "w").write(text)
    return moves


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def main():
    dry = "--dry-run" in sys.argv
    os.chdir(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                            capture_output=True, text=True).stdout.strip())
    moved = []
    for old, new in RENAMES:
        if os.path.exists(old) and not os.path.exists(new):
            print(f"git mv {old} {new}")
            if not dry:
                git("mv", old, new)
            moved.append((old, new))
        elif os.path.exists(old):
            print(f"rename-tests: both {old} and {new} exist: merge them by hand", file=sys.stderr)
    files = sorted(f for d in ("tests/api", "tests/internal") if os.path.isdir(d)
                   for f in (os.path.join(d, x) for x in os.listdir(d))
                   if re.fullmatch(r"test_\w+\.c", os.path.basename(f)))
    if dry:    # the suites as they would be after the moves
        files = [dict(moved).get(f, f) for f in files]
    tmap = {}
    suite_files = {}
    for f in files:
        src = f
        if dry:
            src = {n: o for o, n in moved}.get(f, f)
        for (s, n), (ns, nn) in (rewrite_suites(src, True) if dry else rewrite_suites(f, False)).items():
            tmap[(s, n)] = (ns, nn)
            if (s, n) != (ns, nn):
                suite_files.setdefault(s, set()).add(ns)
                print(f"  {f}: {s}/{n} -> {ns}/{nn}")
    # suites renamed as a whole (every test of the old suite now in one new
    # suite, names kept): a pattern S/... maps without looking at names
    stay = {suite_of(f) for f in files}
    whole = {}
    for s, news in suite_files.items():
        if s not in stay and len(news) == 1 and all(nn == n for (os_, n), (_, nn) in tmap.items() if os_ == s):
            whole[s] = next(iter(news))

    def map_pattern(p):
        s, rest = p.split("/", 1)
        if s not in suite_files:
            return p
        if s in whole:
            return f"{whole[s]}/{rest}"
        how = {(ns, nn != n) for (os_, n), (ns, nn) in tmap.items()
               if os_ == s and fnmatch.fnmatchcase(n, rest)}
        if len(how) == 1:
            (ns, prefixed), = how
            return f"{ns}/{s + '_' if prefixed else ''}{rest}"
        print(f"rename-tests: pattern {p} spans {len(how)} new suites: rewrite it by hand",
              file=sys.stderr)
        return p

    # the suite/test patterns of tests/slow.txt (the one list of them)
    f = "tests/slow.txt"
    if os.path.exists(f):
        text = open(f).read()
        pat = r"(?<![\w/.-])([a-z][a-z0-9_]*/[A-Za-z0-9_*?]+)"
        new = re.sub(pat, lambda m: map_pattern(m.group(1)), text)
        if new != text:
            print(f"  patterns rewritten in {f}")
            if not dry:
                open(f, "w").write(new)
    # the old paths wherever they are named
    olds = [os.path.basename(o) for o, _ in RENAMES]
    internal = {x for x in os.listdir("tests/internal")} if os.path.isdir("tests/internal") else set()
    subs = []
    for old, new in RENAMES:
        subs.append((re.compile(r"\b" + re.escape(old) + r"\b"), new))
        b = os.path.basename(old)
        if olds.count(b) == 1 and b not in internal:
            subs.append((re.compile(r"(?<![/\w])" + re.escape(b) + r"\b"), os.path.basename(new)))
    for f in git("ls-files").split("\n"):
        if not f or not os.path.isfile(f) or f.startswith(("tools/dev/rename-tests.py", "CHANGELOG.md")):
            continue
        if not re.search(r"\.(c|h|md|py|sh|pml|txt|cc)$|^Makefile$", f):
            continue
        try:
            text = open(f).read()
        except UnicodeDecodeError:
            continue
        new = text
        for rx, rep in subs:
            new = rx.sub(rep, new)
        if new != text:
            print(f"  paths rewritten in {f}")
            if not dry:
                open(f, "w").write(new)


if __name__ == "__main__":
    main()
