#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/ci/check-doc-commands.py - run every shell command that README.md
and docs/*.md show, as a reader would, and fail on an exit status or a
missing answer (`make check-doc-commands`, in `make test`).

What runs.  Every fenced block tagged sh, bash, shell or console.  An sh
block runs as one bash script, a command at a time: each command (a line,
or the lines bash needs to complete it: a loop, a backslash) must end with
status 0 (`cmd; echo $?` shows a nonzero one and ends with echo's 0).  In
a console block only the `$ ` lines are commands (`> ` continues one);
the other lines are what they print.  An untagged block whose first line
looks like a command (`$ `, make, build/, tools/, cc ...) fails the check:
tag it (text, if it is not to be run).  Indented code blocks are never run.

What a block must print.  An sh comment line of the form `#   TEXT` (three
spaces after the hash) shows output: some line the block prints (stdout or
stderr, servers included) must read TEXT, with `...` standing for any text
and a last remark after two spaces in parentheses, `  (on stderr)`, left
out.  A console block's output lines are matched the same way, with every
number free (a transcript of one run: figures vary).  wrk must report no
connect error and no non-2xx answer; curl runs with --fail (~/.curlrc).

Servers.  A command that ends with `&` starts a server: the check waits
(20 s at most) until that process, or one it started, listens on a TCP
port or has a UDP socket bound to one, and fails if it exits first.  The
client commands the block shows then probe it.  Whatever a block started
is killed when the block ends.

The sandbox.  The blocks run in a scratch copy of the tree (the files git
tracks or would track, and BUILD without its tests, scenarios, spin
searches and fuzzing, so `make` finds it up to date), one after another in
document order, each from the copy's top.
HOME, TMPDIR and PREFIX point into the scratch directory: `make install
PREFIX=$HOME/...` and even a bare `make install` install there, never
into the system.  Paths under /tmp/ are moved into it too (except the
benchmarks' shared lock, /tmp/corokit-bench.lock, unless BENCH_LOCK_HELD=1
says that the caller holds it: a make test timed under that lock, whose
blocks would otherwise wait for it until they time out), and each TCP port of a
loopback address the block names (127.0.0.1:8080, localhost 8080) is
replaced everywhere in the block by a free one, so that runs side by side
and other programs on the machine do not collide.  sudo is refused.

Meta and slow commands (the table MAKE_TARGETS below): `make test` runs
this check, so it and the other long make targets (quick, check-asan,
check-tsan, stress, fuzz, check-model, bench-http, ...) run as `make -n
MAKE=:` (its recursive makes made no-ops), which checks that the target
exists; `make bench` runs one round of one shape on corokit alone through
run.sh's own variables (QUICK, ROUNDS, SHAPES, SYSTEMS, NO_INSTALL).
Shorter (the table SHORTER): wrk runs for 1 s whatever its -d says, and
tools/bench/gen.sh pulls a million values a shape (N, NJOB): the command
runs as shown, for less time.
The commands shown need curl and wrk besides the build's tools: make
check-doc-commands installs them when missing (tools/dev/deps.sh).
Each rewrite is printed with its reason.  Slow blocks: `make demo`, the
benchmark blocks and the latency runs (a few seconds each; a command
under the benchmarks' lock waits while another benchmark holds it); the
slowest five commands are printed at the end.

Markers: an HTML comment on the line before a fence (blank lines between
allowed).  Keep the skips few: each needs its reason.
  <!-- doc-commands: skip REASON -->  the block is not run (a template
                                       whose placeholders are the reader's)
  <!-- doc-commands: file NAME -->     the block (any language) is written
                                       to NAME in the copy before anything
                                       runs: the program a command builds

Usage: check-doc-commands.py [--build B] [--root DIR] [--only FILE[:LINE]]...
                             [--keep] [--list] [FILE.md...]
       check-doc-commands.py --self-test
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RUN_LANGS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*doc-commands:\s*(\S+)\s*(.*?)\s*-->\s*$")
COMMANDISH = re.compile(
    r"^(\$ |make\b|sudo\b|cc\b|gcc\b|clang\b|build/|tools/|\./|cd\b|mkdir\b|export\b|"
    r"taskset\b|valgrind\b|flock\b|curl\b|wrk\b|nc\b|git\b|python3\b)")
BLOCK_TIMEOUT = int(os.environ.get("DOC_COMMANDS_TIMEOUT", "300"))
LISTEN_TIMEOUT = float(os.environ.get("DOC_COMMANDS_LISTEN_TIMEOUT", "20"))
ECHO = "doc-commands+ "     # the commands as they run, in the log (never an answer)

# make targets that a documented command may name but that this check must
# not run in full, each with why: they run as `make -n TARGET` (the target
# exists and its recipe expands), or with the variables given
MAKE_TARGETS = {
    "test": ("dry", "meta: make test runs this check"),
    "quick": ("dry", "the unit tests, which make test runs whole"),
    "check": ("dry", "the unit tests and static checks, which make test runs whole"),
    "check-full": ("dry", "the long runs: an hour and more"),
    "test-index": ("dry", "in make test already (check-docs)"),
    "check-asan": ("dry", "the suite under ASan: its own CI step"),
    "check-asan-full": ("dry", "the suite under ASan: its own CI step"),
    "check-tsan": ("dry", "the scenarios under TSan: its own CI step"),
    "stress": ("dry", "the long opt-in runs"),
    "check-model": ("dry", "in make test already"),
    "check-model-full": ("dry", "hours of spin"),
    "fuzz": ("dry", "libFuzzer under ASan: check-full runs it for 10 minutes (make test: fuzz-smoke)"),
    "fuzz-smoke": ("dry", "in make test already"),
    "check-valgrind": ("dry", "in make test already"),
    "check-clang": ("dry", "its own CI step"),
    "bench-http": ("dry", "a benchmark against nginx: minutes, and it installs packages"),
    "bench": ("env", "a benchmark: one round of one short shape on corokit, "
              "through run.sh's own variables; GEN=0: the generator table has "
              "its own block (tools/bench/gen.sh)"),
}
BENCH_ENV = "GEN=0 QUICK=1 ROUNDS=1 SHAPES=chained_spawn SYSTEMS=corokit NO_INSTALL=1 RUN_TIMEOUT=60"

# commands that run as shown, only shorter: (pattern, replacement, why);
# each rewrite is printed with its reason
SHORTER = [
    (re.compile(r"(\bwrk\b[^|;&\n]*?\s)-d\s*\d+(?:\.\d+)?[smh]?(?=\s|$)"), r"\g<1>-d1s",
     "wrk runs for 1 s: a probe of the server, not a benchmark"),
    (re.compile(r"(?<![\w/.$-])((?:\./)?tools/bench/gen\.sh)(?![\w.])"), r"env N=1000000 NJOB=1000000 \g<1>",
     "gen.sh pulls a million values a shape (a hundredth; QUICK=1 a tenth of that): "
     "its builds, shapes and verdicts, not its figures"),
]


class Block:
    def __init__(self, path, line, lang, text, marker):
        self.path, self.line, self.lang, self.text, self.marker = path, line, lang, text, marker

    def where(self):
        return "%s:%d" % (self.path, self.line)


def parse(path, text):
    """the fenced blocks of one markdown file, and the errors of its markers"""
    blocks, errors = [], []
    lines = text.split("\n")
    pending = None      # (kind, arg, line) of a marker waiting for its fence
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            if pending:
                errors.append("%s:%d: a doc-commands marker with no block after it" % (path, pending[2]))
            pending = (m.group(1), m.group(2), i + 1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            if lines[i].strip() and pending:
                errors.append("%s:%d: a doc-commands marker with no block after it" % (path, pending[2]))
                pending = None
            i += 1
            continue
        indent, fence, lang = len(f.group(1)), f.group(2), f.group(3).lower()
        j = i + 1
        body = []
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        marker = None
        if pending:
            kind, arg, mline = pending
            if kind not in ("skip", "file"):
                errors.append("%s:%d: unknown doc-commands marker '%s' (skip or file)" % (path, mline, kind))
            elif not arg:
                errors.append("%s:%d: doc-commands %s needs %s" %
                              (path, mline, kind, "a reason" if kind == "skip" else "a file name"))
            elif kind == "skip" and lang not in RUN_LANGS:
                errors.append("%s:%d: doc-commands skip before a block that would not run anyway" %
                              (path, mline))
            else:
                marker = (kind, arg)
            pending = None
        b = Block(path, i + 1, lang, "\n".join(body), marker)
        first = next((l.strip() for l in body if l.strip()), "")
        if not lang and COMMANDISH.match(first):
            errors.append("%s:%d: a command in an untagged block ('%s'): tag it sh or console "
                          "(text if it is not to be run)" % (path, i + 1, first[:60]))
        blocks.append(b)
        i = j + 1
    if pending:
        errors.append("%s:%d: a doc-commands marker with no block after it" % (path, pending[2]))
    return blocks, errors


# ---- from a block to a script ------------------------------------------------------------

def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("0.0.0.0", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def localize(text, scratch):
    """the block's loopback ports made free ones, its /tmp/ paths scratch's"""
    ports = set()
    for m in re.finditer(r"(?:127\.0\.0\.1|localhost|0\.0\.0\.0)(?::|\s+)(\d{4,5})\b", text):
        if 1024 <= int(m.group(1)) <= 65535:
            ports.add(m.group(1))
    for p in sorted(ports):
        text = re.sub(r"(?<![\w.])%s(?!\d)" % p, str(free_port()), text)
    keep = "" if os.environ.get("BENCH_LOCK_HELD") == "1" else r"(?!corokit-bench\.lock)"
    return re.sub(r"(?<![\w./-])/tmp/" + keep, scratch + "/tmp/", text)


def complete(cmd):
    """bash can run cmd as it stands (no open loop, quote or backslash)"""
    r = subprocess.run(["bash", "-n", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0 and not cmd.rstrip().endswith("\\")


def commands(block):
    """(line, command) of the block in order, and its expected lines (pattern, console)"""
    cmds, expect, acc, start = [], [], [], None
    console = block.lang == "console"
    for n, line in enumerate(block.text.split("\n"), block.line + 1):
        if console:
            if line.startswith("$ "):
                line = line[2:]
            elif line.startswith("> ") and acc:
                line = line[2:]
            else:
                if line.strip():
                    expect.append((line, True))
                continue
        else:
            m = re.match(r"^#   (\S.*)$", line)
            if m and not acc:
                expect.append((m.group(1), False))
                continue
            if not acc and (not line.strip() or line.lstrip().startswith("#")):
                continue
        if not acc:
            start = n
        acc.append(line)
        if complete("\n".join(acc)):
            cmds.append((start, "\n".join(acc)))
            acc = []
    if acc:
        cmds.append((start, "\n".join(acc)))
    return cmds, expect


KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "!", "time", "{", "exec", "nohup", "env"}


def make_targets(cmd):
    """the targets of every make the command runs (None: bash syntax shlex cannot read)"""
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
    except ValueError:
        return None
    targets, at_start, in_make = [], True, False
    for w in words:
        if w and set(w) <= set("&|;()<>"):
            at_start, in_make = True, False
            continue
        if at_start and (re.match(r"^\w+=", w) or w in KEYWORDS):
            continue
        if at_start:
            in_make = w in ("make", "gmake") or w.endswith("/make")
            at_start = False
            continue
        if in_make and not w.startswith("-") and "=" not in w:
            targets.append(w)
    return targets


def rewrite(cmd):
    """(command to run, note) - the make targets of MAKE_TARGETS made cheap;
    (None, why) for a command that must not run"""
    if re.search(r"(^|[;&|(]\s*)sudo\b", cmd):
        return None, "sudo is never run (it would change the real system)"
    targets = make_targets(cmd)
    hits = [t for t in targets or [] if t in MAKE_TARGETS]
    if not hits:
        notes = []
        for pat, repl, why in SHORTER:
            cmd, n = pat.subn(repl, cmd, count=1)
            if n:
                notes.append(why)
        return cmd, "; ".join(notes) or None
    m = re.match(r"^(\s*(?:\w+=\S*\s+)*)make((?:\s+[-\w.=:/~'$]+)*)\s*(#.*)?$", cmd)
    if not m:
        return None, ("make %s in a compound command: write it on a line of its own, "
                      "so that the check runs it cheaply" % hits[0])
    env, args, t = m.group(1), m.group(2).strip(), hits[0]
    how = MAKE_TARGETS[t]
    if how[0] == "dry":
        # -n still runs a recipe line that names $(MAKE) (or starts with
        # +): MAKE=: makes those recursions no-ops
        return "%smake -n MAKE=: %s >/dev/null" % (env, args), "make -n %s: %s" % (t, how[1])
    return "%s%s make %s" % (env, BENCH_ENV, args), how[1]


PRELUDE = r'''
set -m                      # servers get process groups of their own (and keep SIGINT)
__dc_pids=
__dc_fail() { echo "doc-commands: FAILED at $2 (exit status $1)" >&2; exit 1; }
__dc_listen() {
    __dc_pids="$__dc_pids $1"
    "$__dc_py" "$__dc_self" --wait-listen "$1" || { echo "doc-commands: FAILED at $2: the \
background command never listened on a TCP or UDP port (or exited)" >&2; exit 1; }
}
__dc_end() {
    for p in $__dc_pids; do kill -TERM -- "-$p" 2>/dev/null; done
    for p in $__dc_pids; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.2; done
        kill -KILL -- "-$p" 2>/dev/null
    done
}
trap __dc_end EXIT
'''


def script_for(block, scratch):
    text = localize(block.text, scratch)
    b = Block(block.path, block.line, block.lang, text, block.marker)
    cmds, expect = commands(b)
    out, notes = [PRELUDE], []
    for line, cmd in cmds:
        where = "%s:%d" % (block.path, line)
        run, note = rewrite(cmd)
        if run is None:
            return None, None, ["%s: %s" % (where, note)], True
        if note:
            notes.append("%s: %s -> %s (%s)" % (where, cmd.strip(), run.strip(), note))
        # on a line of its own: the output before it may not end in a newline
        out.append("printf '\\n%%s\\n' %s >&2" % shlex.quote(ECHO + run.replace("\n", "\n" + ECHO)))
        out.append("__dc_t0=$(date +%s%N)")
        out.append(run)
        out.append("__dc_rc=$?; printf '\\n%%stime %%s %%s\\n' %s %s $(( ($(date +%%s%%N) - __dc_t0) / 1000000 )) >&2"
                   % (shlex.quote(ECHO), shlex.quote(where)))
        stripped = re.sub(r"\s+#[^'\"]*$", "", run.rstrip())
        if stripped.endswith("&") and not stripped.endswith("&&"):
            out.append("__dc_listen $! %s" % shlex.quote(where))
        else:
            out.append("[ $__dc_rc = 0 ] || __dc_fail $__dc_rc %s" % shlex.quote(where))
    return "\n".join(out) + "\n", expect, notes, False


# ---- checking what a block printed -------------------------------------------------------

def pattern(text, console):
    text = " ".join(text.split())
    parts = []
    for piece in re.split(r"(\.\.\.)", text):
        if piece == "...":
            parts.append(".*")
        elif console:
            parts.append("".join(r"\d+(?:\.\d+)?" if re.fullmatch(r"\d+(?:\.\d+)?", t) else re.escape(t)
                                 for t in re.split(r"(\d+(?:\.\d+)?)", piece)))
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts))


def strip_note(text):
    """a last remark after two or more spaces, in parentheses, is a note"""
    return re.sub(r"\s{2,}\([^()]*\)\s*$", "", text)


def answers(output, expect):
    lines = [" ".join(l.split()) for l in output.split("\n") if not l.startswith(ECHO)]
    missing = []
    for text, console in expect:
        shown = text if console else strip_note(text)
        p = pattern(shown, console)
        if not any(p.fullmatch(l) for l in lines):
            missing.append(shown)
    if re.search(r"Non-2xx or 3xx responses", output):
        missing.append("(wrk: every answer 2xx; it reported non-2xx ones)")
    m = re.search(r"Socket errors: connect (\d+)", output)
    if m and int(m.group(1)) > 0:
        missing.append("(wrk: no connect error; it reported %s)" % m.group(1))
    return missing


# ---- the sandbox ----------------------------------------------------------------------------

def make_sandbox(root, build, scratch):
    src = os.path.join(scratch, "src")
    try:
        files = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
                               ).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        # not a git tree (an unpacked tarball): every file but the build trees
        files = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel == ".":
                dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    for f in files:
        if not f or not os.path.lexists(os.path.join(root, f)):
            continue
        d = os.path.join(src, os.path.dirname(f))
        os.makedirs(d, exist_ok=True)
        s = os.path.join(root, f)
        if os.path.islink(s):
            os.symlink(os.readlink(s), os.path.join(src, f))
        elif os.path.isfile(s):
            shutil.copy2(s, os.path.join(src, f))
    b = os.path.join(root, build)
    if os.path.isdir(b):
        # what no document uses, and what make test's other parts write
        # meanwhile (the spin searches, the fuzzers' corpora)
        skip = {"tests", "tobj", "stress", "clang-syntax", "doc-commands", "model", "fuzz"}
        shutil.copytree(b, os.path.join(src, build), symlinks=True,
                        ignore=lambda d, names: [n for n in names if d == b and n in skip])
    for d in ("home", "tmp", "prefix"):
        os.makedirs(os.path.join(scratch, d), exist_ok=True)
    with open(os.path.join(scratch, "home", ".curlrc"), "w") as f:
        f.write("--fail\n--silent\n--show-error\n--max-time 30\n")
    return src


def session_pids(sid):
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                if int(st[3]) == sid and int(p) != sid:
                    pids.append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def run_block(block, script, src, scratch, env):
    log = os.path.join(scratch, "block.log")
    with open(log, "w") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(["bash", "-c", script], cwd=src, env=env, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            rc = None
        # whatever the block left behind in its session (its EXIT trap
        # ended its servers; this catches the rest, a timeout's too)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in session_pids(p.pid) + ([p.pid] if p.poll() is None else []):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if sig == signal.SIGTERM:
                time.sleep(0.2)
        p.wait()
        dt = time.monotonic() - t0
    with open(log, errors="replace") as f:
        return rc, f.read(), dt


# ---- waiting for a server -----------------------------------------------------------------

def listening_inodes():
    """the sockets that serve: TCP ones listening, UDP ones bound to a port"""
    inodes = set()
    for name, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            with open("/proc/net/" + name) as f:
                next(f)
                for line in f:
                    w = line.split()
                    if len(w) > 9 and w[3] == state and not w[1].endswith(":0000"):
                        inodes.add(w[9])
        except OSError:
            pass
    return inodes


def tree(pid):
    """pid and every process under it"""
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        todo.extend(kids.get(q, []))
    return out


def wait_listen(pid):
    end = time.monotonic() + LISTEN_TIMEOUT
    while time.monotonic() < end:
        if not os.path.exists("/proc/%d" % pid):
            return 1
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return 1
        except OSError:
            return 1
        want = listening_inodes()
        for q in tree(pid):
            try:
                for fd in os.listdir("/proc/%d/fd" % q):
                    link = os.readlink("/proc/%d/fd/%s" % (q, fd))
                    if link.startswith("socket:[") and link[8:-1] in want:
                        return 0
            except OSError:
                pass
        time.sleep(0.05)
    return 1


# ---- main -----------------------------------------------------------------------------------

def doc_files(root, given):
    if given:
        return given
    docs = sorted(f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]


def check(root, build, files, only, keep, listing):
    all_blocks, errors = [], []
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            blocks, errs = parse(f, fh.read())
        all_blocks += blocks
        errors += errs
    for e in errors:
        print("FAIL " + e)

    def chosen(b):
        return not only or any(o == b.path or o == b.where() for o in only)

    runs = [b for b in all_blocks if b.lang in RUN_LANGS and chosen(b)]
    if listing:
        if errors:
            return 1
        for b in runs:
            print("%s [%s]%s" % (b.where(), b.lang, " skip: " + b.marker[1] if b.marker else ""))
            for line, cmd in commands(b)[0]:
                print("    %d: %s" % (line, cmd.replace("\n", "\n       ")))
        return 0
    scratch = tempfile.mkdtemp(prefix="corokit-doc-commands.")
    try:
        src = make_sandbox(root, build, scratch)
        for b in all_blocks:
            if b.marker and b.marker[0] == "file":
                os.makedirs(os.path.dirname(os.path.join(src, b.marker[1])), exist_ok=True)
                with open(os.path.join(src, b.marker[1]), "w") as fh:
                    fh.write(b.text + "\n")
        env = dict(os.environ, HOME=os.path.join(scratch, "home"), TMPDIR=os.path.join(scratch, "tmp"),
                   PREFIX=os.path.join(scratch, "prefix"), __dc_py=sys.executable,
                   __dc_self=os.path.abspath(__file__))
        for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "DESTDIR", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH"):
            env.pop(k, None)
        failed, times, ran = [], [], []
        for b in runs:
            if b.marker and b.marker[0] == "skip":
                print("skip %s: %s" % (b.where(), b.marker[1]))
                continue
            script, expect, notes, refused = script_for(b, scratch)
            if refused:
                failed.append(b.where())
                print("FAIL %s: %s" % (b.where(), notes[0]))
                continue
            rc, output, dt = run_block(b, script, src, scratch, env)
            ran.append(b.where())
            missing = answers(output, expect) if rc == 0 else []
            for m in re.finditer(r"^%stime (\S+) (\d+)$" % re.escape(ECHO), output, re.M):
                times.append((int(m.group(2)) / 1000, m.group(1)))
            for n in notes:
                print("     " + n)
            if rc == 0 and not missing:
                print("ok   %s [%s] %.1f s" % (b.where(), b.lang, dt))
                continue
            failed.append(b.where())
            why = ("timed out after %d s" % BLOCK_TIMEOUT if rc is None else
                   "exit status %d" % rc if rc else "missing output:\n        " + "\n        ".join(missing))
            print("FAIL %s [%s]: %s\n    its output (last 40 lines):" % (b.where(), b.lang, why))
            for l in output.rstrip().split("\n")[-40:]:
                print("    | " + l)
        slow = ", ".join("%s %.1f s" % (w, t) for t, w in sorted(times, reverse=True)[:5])
        print("check-doc-commands: %d block(s) run, %d failed, %d marker or tag error(s); "
              "the slowest commands: %s" % (len(ran), len(failed), len(errors), slow or "none"))
        return 1 if failed or errors else 0
    finally:
        if keep:
            print("check-doc-commands: the scratch copy is kept in " + scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


SELF_TEST_DOC = r'''
<!-- doc-commands: file greet.sh -->

```
echo "hello from $1"
```

```sh
mkdir -p /tmp/x && printf 'a\nb\n' > /tmp/x/f
sh greet.sh you; echo $?
#   hello from you      (a note)
#   0
wc -l < /tmp/x/f
#   2
for i in 1 2; do
    echo "line $i"
done
#   line ...
```

```console
$ echo "took 12.5 ms for 3 items"
took 7 ms for 40 items
```

```sh
python3 -m http.server --bind 127.0.0.1 18097 >/dev/null 2>&1 &
curl -o /dev/null http://127.0.0.1:18097/
python3 -c 'import socket, time; u = socket.socket(2, 2); u.bind(("127.0.0.1", 0)); time.sleep(60)' &
```

<!-- doc-commands: skip a template: CMD is the reader's -->

```sh
CMD --with-args
```
'''

SELF_TEST_BAD = [
    ("a failing command", "```sh\ntrue\nfalse\necho never\n```\n", "exit status"),
    ("a missing answer", "```sh\necho hello\n#   goodbye\n```\n", "missing output"),
    ("a wrong transcript", "```console\n$ echo 1 apple\n1 pear\n```\n", "missing output"),
    ("a server that never listens", "```sh\nsleep 30 &\necho after\n```\n", "exit status"),
    ("a server that is not there", "```sh\ncurl http://127.0.0.1:18099/\n```\n", "exit status"),
    ("sudo", "```sh\nsudo true\n```\n", "sudo is never run"),
]
SELF_TEST_LINT = [
    ("an untagged command", "```\n$ make\n```\n", "untagged"),
    ("a skip without a reason", "<!-- doc-commands: skip -->\n```sh\ntrue\n```\n", "needs a reason"),
    ("a marker with no block", "<!-- doc-commands: skip why -->\ntext\n", "no block after it"),
]


def self_test():
    ok = True
    d = tempfile.mkdtemp(prefix="corokit-doc-commands-self.")
    try:
        subprocess.run(["git", "init", "-q", d], check=True)
        os.makedirs(os.path.join(d, "docs"))

        def run(doc, flags=()):
            with open(os.path.join(d, "docs", "t.md"), "w") as f:
                f.write(doc)
            with open(os.path.join(d, "README.md"), "w") as f:
                f.write("# t\n")
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", d] + list(flags),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=dict(os.environ, DOC_COMMANDS_LISTEN_TIMEOUT="3"))
            return r.returncode, r.stdout.decode(errors="replace")

        rc, out = run(SELF_TEST_DOC)
        if rc != 0 or "skip docs/t.md" not in out or out.count("ok   docs/t.md") != 3:
            print("self-test: the good document did not pass:\n" + out)
            ok = False
        for what, doc, want in SELF_TEST_BAD + SELF_TEST_LINT:
            rc, out = run(doc)
            if rc == 0 or want not in out:
                print("self-test: %s was not refused (exit %d, wanted '%s'):\n%s" % (what, rc, want, out))
                ok = False
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("check-doc-commands self-test: %s" % ("a good document passes, %d bad ones fail" %
                                                 (len(SELF_TEST_BAD) + len(SELF_TEST_LINT)) if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--wait-listen", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")))
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", action="append", default=[], help="FILE or FILE:LINE (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copy")
    ap.add_argument("--list", action="store_true", help="print the blocks and commands; run nothing")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.wait_listen:
        return wait_listen(a.wait_listen)
    if a.self_test:
        return self_test()
    root = os.path.abspath(a.root)
    return check(root, a.build, doc_files(root, a.files), a.only, a.keep, a.list)


if __name__ == "__main__":
    sys.exit(main())
