#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/ci/test-index.py - which tests call each public function
(`make test-index`, run by make check-docs): writes docs/tests.md and
fails when a public function has no test, or a test lives away from its
home.

The public functions are the CORO_EXTERN declarations of
include/corokit/*.h (coro__* helpers of inline code left out), grouped by
header; every function the shared library exports (lib/corokit.map) must
be one of them.  A test calls a function when the function is reached
from the test's body in the compiled test object (objdump -dr of
BUILD/tests/{api,internal}/test_*.o): a direct call, or through the
file's static helpers, coroutine bodies and tables of them, followed to
any depth - what the preprocessor and the inliner made of the test, so
macros (CORO_AWAIT, typed channels, tests built by a macro) count as
what they expand to.

Homes (each a failure):
  - a suite's name is its file's name: tests/api/test_sched_diag.c holds
    suite sched_diag and nothing else (the object test_coro_switch.o,
    tests/api/test_coro.c built again on the switch back end, holds
    coro_switch), so no two files share a suite;
  - every pattern of tests/slow.txt names at least one test (a rename
    would otherwise put a slow test back in make check unseen).
tools/dev/rename-tests.py moves tests to their homes.

Usage: test-index.py [--check] [BUILD]   (--check: write nothing, fail
       when docs/tests.md is not what it would write)
       test-index.py --self-test
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

OUT = "docs/tests.md"
EXTERN = re.compile(r"CORO_EXTERN\b[^;{}]*?\b(coro_[a-z0-9_]+)\s*\(", re.S)
TEST_RE = re.compile(r"\b(Test|ParameterizedTest|ParameterizedTestParameters)\(\s*"
                     r"((?:[^,()]|\([^()]*\))+,\s*)?(\w+)\s*,\s*(\w+)")
DEFINE_RE = re.compile(r"^\s*#\s*define\s+\w+\(([^)]*)\)")
FUNC_HDR = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
INSN = re.compile(r"^\s+([0-9a-f]+):\t")
SHOWN = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>")
RELOC = re.compile(r"^\s+[0-9a-f]+: (R_X86_64_\w+)\t(\S+?)(?:([+-])0x([0-9a-f]+))?$")
FILE_HDR = re.compile(r"^(.+):\s+file format \S+$")
SYMTAB = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\t([0-9a-f]+) (?:\S+ )?(\S+)$")


def public_functions(root="."):
    """{function: header}"""
    out = {}
    for h in sorted(glob.glob(os.path.join(root, "include/corokit/*.h"))):
        text = re.sub(r"/\*.*?\*/", " ", open(h).read(), flags=re.S)
        for m in EXTERN.finditer(text):
            name = m.group(1)
            if not name.startswith("coro__"):
                out.setdefault(name, os.path.basename(h))
    return out


INLINE_DEF = re.compile(r"extern __inline\b[^;{]*?\b(coro_[a-z0-9_]+)\s*\([^)]*\)\s*\{", re.S)


def inline_helpers(root="."):
    """{coro__helper: public function}: a public function that a header
    defines for inlining (gnu_inline) leaves in the object only the calls
    of its out-of-line helpers, so reaching one counts as calling it"""
    out = {}
    for h in sorted(glob.glob(os.path.join(root, "include/corokit/*.h"))):
        text = open(h).read()
        for m in INLINE_DEF.finditer(text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            for c in re.findall(r"\b(coro__[a-z0-9_]+)\s*\(", text[m.end():i]):
                out[c] = m.group(1)
    return out


def suite_of(path):
    base = os.path.basename(path)
    return base[len("test_"):base.rindex(".")]


def literal_tests(lines):
    """(i, match) of each Test() in lines whose suite is a literal name, i
    its line's index (a suite that is a parameter of the #define around it
    is left to the object check); tools/dev/rename-tests.py uses it too"""
    params, cont = set(), False
    for i, line in enumerate(lines):
        m = DEFINE_RE.match(line)
        if m:
            params = {p.strip() for p in m.group(1).split(",")}
        elif not cont:
            params = set()
        cont = line.rstrip().endswith("\\")
        for t in TEST_RE.finditer(line):
            kind, ptype, suite, _ = t.groups()
            if kind == "ParameterizedTest" and not ptype:
                continue
            if suite not in params:
                yield i, t


def source_suites(path):
    """(line number, suite, name) of a file's Test()s with a literal suite"""
    with open(path) as f:
        lines = f.readlines()
    return [(i + 1, t.group(3), t.group(4)) for i, t in literal_tests(lines)]


class Obj:
    """one test object: its functions and data, and what each refers to"""

    def __init__(self, path):
        self.path = path
        self.syms = defaultdict(list)      # section -> [(start, end, name)]
        self.undef = set()
        self.edges = defaultdict(set)      # name -> names it refers to
        self.glob = set()
        self._symtab()
        self._code()
        self._data()

    # objdump's output per object, for the objects Obj.preload named: one
    # objdump for all of them a mode, as its start-up costs more than an
    # object's reading
    batch = {}

    @classmethod
    def preload(cls, paths):
        for args in (("-t",), ("-dr", "--no-show-raw-insn"), ("-r",)):
            out = subprocess.run(["objdump", *args, *paths], check=True,
                                 capture_output=True, text=True).stdout
            texts, cur = defaultdict(list), None
            for line in out.splitlines():
                head = FILE_HDR.match(line)
                if head and head.group(1) in paths:
                    cur = head.group(1)
                elif cur:
                    texts[cur].append(line)
            for p in paths:
                cls.batch[(args, p)] = "\n".join(texts[p])

    def _run(self, *args):
        if (args, self.path) in self.batch:
            return self.batch[(args, self.path)]
        return subprocess.run(["objdump", *args, self.path], check=True,
                              capture_output=True, text=True).stdout

    def _symtab(self):
        for line in self._run("-t").splitlines():
            m = SYMTAB.match(line)
            if not m:
                continue
            addr, flags, sec, size, name = m.groups()
            if sec == "*UND*":
                self.undef.add(name)
            elif flags[6] in "FO" and sec not in ("*ABS*",):
                a = int(addr, 16)
                self.syms[sec].append((a, a + max(int(size, 16), 1), name))
                if flags[0] == "g":
                    self.glob.add(name)

    def at(self, sec, off):
        for a, e, n in self.syms.get(sec, ()):
            if a <= off < e:
                return n
        return None

    def _target(self, rtype, sym, sign, add):
        if sym in self.undef or sym not in self.syms and not sym.startswith("."):
            return sym
        if sym.startswith("."):
            off = int(add or "0", 16) * (-1 if sign == "-" else 1)
            if rtype in ("R_X86_64_PC32", "R_X86_64_PLT32", "R_X86_64_GOTPCRELX",
                         "R_X86_64_REX_GOTPCRELX"):
                off += 4
            return self.at(sym, off)
        return sym

    def _code(self):
        cur = None
        last_shown = None
        for line in self._run("-dr", "--no-show-raw-insn").splitlines():
            m = FUNC_HDR.match(line)
            if m:
                self._commit(cur, last_shown)
                cur, last_shown = m.group(2), None
                continue
            if cur is None:
                continue
            r = RELOC.match(line)
            if r:
                last_shown = None        # the relocation names the real target
                t = self._target(*r.groups())
                if t and t != cur:
                    self.edges[cur].add(t)
                continue
            if INSN.match(line):
                self._commit(cur, last_shown)
                s = SHOWN.search(line.split("\t", 2)[-1]) if "<" in line else None
                last_shown = s.group(1) if s else None
        self._commit(cur, last_shown)

    def _commit(self, cur, shown):
        if cur and shown and shown != cur:
            self.edges[cur].add(shown)

    def _data(self):
        sec = None
        for line in self._run("-r").splitlines():
            m = re.match(r"^RELOCATION RECORDS FOR \[(.+)\]:", line)
            if m:
                sec = m.group(1)
                continue
            if not sec or sec.startswith((".text", ".rela", ".debug", ".eh_frame", "cr_")):
                continue
            m = re.match(r"^([0-9a-f]+) (R_X86_64_\w+)\s+(\S+?)(?:([+-])0x([0-9a-f]+))?$", line)
            if not m:
                continue
            owner = self.at(sec, int(m.group(1), 16))
            t = self._target(*m.groups()[1:])
            if owner and t:
                self.edges[owner].add(t)

    def reach(self, root, public):
        seen, todo, hit = {root}, [root], set()
        while todo:
            n = todo.pop()
            for t in self.edges.get(n, ()):
                if t in public:
                    hit.add(t)
                elif t not in seen and t not in self.undef and not t.endswith("_impl"):
                    seen.add(t)
                    todo.append(t)
        return hit


def test_objects(build):
    objs = []
    for d in ("api", "internal", ""):    # a tests/test_*.c not yet filed
        objs += sorted(glob.glob(os.path.join(build, "tests", d, "test_*.o")))
    return objs


def source_of(obj):
    d = os.path.basename(os.path.dirname(obj))
    d = "" if d == "tests" else d
    src = os.path.join("tests", d, os.path.basename(obj)[:-2] + ".c")
    if not os.path.exists(src) and obj.endswith("test_coro_switch.o"):
        src = os.path.join("tests", d, "test_coro.c")
    return src


def check_homes(srcs, errors):
    owner = {}
    for src in srcs:
        want = suite_of(src)
        if want in owner:
            errors.append(f"{src}: suite {want} is also {owner[want]}'s: rename one file")
        owner[want] = src
        for no, suite, name in source_suites(src):
            if suite != want:
                errors.append(f"{src}:{no}: Test({suite}, {name}): the suite must be {want}, "
                              f"the file's name (tools/dev/rename-tests.py)")


def check_slow(build, errors):
    binary = os.path.join(build, "tests", "corokit_tests")
    if not os.path.exists("tests/slow.txt") or not os.path.exists(binary):
        return
    out = subprocess.run([binary, "--list"], capture_output=True, text=True).stdout
    names, suite = [], None
    for line in out.splitlines():
        m = re.match(r"^(\w+): \d+ tests?$", line)
        if m:
            suite = m.group(1)
            continue
        m = re.match(r"^[├└]── (\w+)", line)
        if m and suite:
            names.append(f"{suite}/{m.group(1)}")
    for no, line in enumerate(open("tests/slow.txt"), 1):
        f = line.split("#", 1)[0].split()
        if len(f) < 2:
            continue
        if not any(fnmatch.fnmatchcase(n, f[1]) for n in names):
            errors.append(f"tests/slow.txt:{no}: {f[1]} names no test of {binary}")


def render(public, calls, ntests):
    by_header = defaultdict(list)
    for f, h in public.items():
        by_header[h].append(f)
    lines = [
        "<!-- Generated by tools/ci/test-index.py (make test-index, run by make check-docs):",
        "     do not edit. -->",
        "# The tests of each public function",
        "",
        f"Each public function of `include/corokit/*.h` and the tests that call it",
        f"({ntests} tests in all), whether in the test's body or through the file's",
        "helpers and coroutine bodies (the compiled test objects say which). A",
        "test is `suite/name`; its suite is its file's name, so `sched_diag/...`",
        "lives in `tests/api/test_sched_diag.c` (or `tests/internal/`). Run the",
        "tests of one function with the binary's filter, for instance",
        "`build/tests/corokit_tests --filter 'sched_contract/*'`. A function",
        "called by more than eight tests lists the suites that call it, with",
        "how many tests each.",
        "",
    ]
    for h in sorted(by_header):
        lines += [f"## {h}", "", "| function | tests |", "| --- | --- |"]
        for f in sorted(by_header[h]):
            ts = sorted(calls.get(f, ()))
            if len(ts) <= 8:
                cell = ", ".join(f"`{t}`" for t in ts) or "**none**"
            else:
                per = defaultdict(int)
                for t in ts:
                    per[t.split("/", 1)[0]] += 1
                cell = f"{len(ts)} tests: " + ", ".join(
                    f"`{s}` ({n})" for s, n in sorted(per.items(), key=lambda x: (-x[1], x[0])))
            lines.append(f"| `{f}` | {cell} |")
        lines.append("")
    return "\n".join(lines)


def index(build, check):
    errors = []
    public = public_functions()
    so = os.path.join(build, "libcorokit.so")
    if os.path.exists(so):
        out = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] == "T":
                name = p[2].split("@")[0]
                if not name.startswith("coro__") and name not in public:
                    errors.append(f"{so} exports {name}, which no include/corokit/*.h "
                                  f"declares CORO_EXTERN")
    objs = [o for o in test_objects(build) if os.path.exists(source_of(o))]
    helpers = inline_helpers()
    targets = set(public) | set(helpers)
    if not objs:
        sys.exit(f"test-index: no test objects in {build}/tests (build them first)")
    srcs = sorted(glob.glob("tests/api/test_*.c") + glob.glob("tests/internal/test_*.c") +
                  glob.glob("tests/test_*.c"))
    check_homes(srcs, errors)
    check_slow(build, errors)
    calls = defaultdict(set)
    ntests = 0
    Obj.preload(objs)
    for o in objs:
        ob = Obj(o)
        suite = suite_of(o)
        src = source_of(o)
        for sec in ob.syms.values():
            for _, _, n in sec:
                if not (n.endswith("_impl") and n in ob.glob):
                    continue
                if not n.startswith(suite + "_"):
                    errors.append(f"{src}: the test {n[:-5]} is not in suite {suite}, "
                                  f"the file's name")
                    continue
                t = f"{suite}/{n[len(suite) + 1:-5]}"
                ntests += 1
                for f in ob.reach(n, targets):
                    calls[helpers.get(f, f)].add(t)
    text = render(public, calls, ntests) + "\n"
    none = sorted(f for f in public if not calls.get(f))
    for f in none:
        errors.append(f"{f} ({public[f]}) has no test that calls it")
    old = open(OUT).read() if os.path.exists(OUT) else ""
    if check:
        if old != text:
            errors.append(f"{OUT} is not current: run make test-index")
    elif old != text:
        open(OUT, "w").write(text)
        print(f"test-index: wrote {OUT}")
    for e in errors:
        print(f"test-index: {e}", file=sys.stderr)
    if not errors:
        print(f"test-index: {len(public)} public functions, each called by a test "
              f"({ntests} tests); every suite is its file's name")
    return 1 if errors else 0


def self_test():
    """a planted test away from its home, and a function no test calls, fail"""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "tests/api"))
        p = os.path.join(d, "tests/api/test_sched_x.c")
        with open(p, "w") as f:
            f.write("#define T_(s, n) Test(s, n)\n"
                    "Test(sched_x, fine) {}\nTest(sched, elsewhere, .timeout = 1) {}\n"
                    "ParameterizedTest(struct p *q, other, n) {}\n")
        errs = []
        check_homes([p], errs)
        assert len(errs) == 2 and "Test(sched, elsewhere)" in errs[0] and "other" in errs[1], errs
        inc = os.path.join(d, "include/corokit")
        os.makedirs(inc)
        with open(os.path.join(inc, "a.h"), "w") as f:
            f.write("/* CORO_EXTERN int coro_commented(void); */\n"
                    "CORO_EXTERN int coro_a(int x);\nCORO_NODISCARD CORO_EXTERN coro_await_t\n"
                    "    coro_b(void);\nCORO_EXTERN int coro__private(void);\n")
        pub = public_functions(d)
        assert pub == {"coro_a": "a.h", "coro_b": "a.h"}, pub
        # an object whose test reaches coro_a through a static helper
        c = os.path.join(d, "t.c")
        with open(c, "w") as f:
            f.write("int coro_a(int); int coro_b(void);\n"
                    "static int (*const tab[])(int) = { coro_a };\n"
                    "__attribute__((noinline)) static int helper(int x) { return tab[x & 0](x); }\n"
                    "void s_t_impl(void); void s_t_impl(void) { helper(3); }\n")
        o = os.path.join(d, "t.o")
        subprocess.run(["cc", "-O2", "-c", c, "-o", o], check=True)
        got = Obj(o).reach("s_t_impl", pub)
        assert got == {"coro_a"}, got
        with open(os.path.join(inc, "b.h"), "w") as f:
            f.write("extern __inline __attribute__((gnu_inline)) int\ncoro_c(int x)\n"
                    "{\n    if (x) { return 1; }\n    return coro__c_slow(x);\n}\n")
        assert inline_helpers(d) == {"coro__c_slow": "coro_c"}, inline_helpers(d)
    print("test-index: self-test passed (a misplaced suite and an unreached function are seen)")
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    os.chdir(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                            text=True).stdout.strip() or ".")
    return index(args[0] if args else "build", check)


if __name__ == "__main__":
    sys.exit(main())
