#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/ci/check-lengths.sh [DIR] - files and functions of lib/ that fit a
# reader (conventions.md: files of one idea under ~800 lines, functions that
# fit a screen).  Run by `make check-layers`.  Fails when
#   - a .c file under DIR (default lib/) has more than 800 lines (wc -l);
#   - a function defined in a .c or .h file under DIR has more than 80 lines.
# The rule for a function's length: from the line its signature begins on
# (the first line of its return type, e.g. "static inline int", after the
# contract comment) to the line of its closing brace, both counted, with the
# comment and blank lines inside.  A function is a brace block at file level
# whose text before the "{" ends with ")"; struct, union and enum bodies and
# initializers are not functions.  There is no allowlist: a long function is
# split by step into helpers named for what each does (static inline, or
# always_inline on a hot path, where the split must cost nothing).
#
# tools/ci/check-lengths.sh --self-test: tests/build/lengths/ holds an 80-line
# function (fn_80_lines.c, must pass) and an 81-line one (fn_81_lines.c, must
# fail); an 801-line file is made here (must fail) beside an 800-line one.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v python3 >/dev/null || { echo "check-lengths: python3 is needed (tools/dev/deps.sh)" >&2; exit 2; }

if [ "${1:-}" = "--self-test" ]; then
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
    fx=tests/build/lengths
    mkdir -p "$T/good" "$T/bad81" "$T/file801"
    cp "$fx/fn_80_lines.c" "$T/good/"
    # an 800-line file of short functions passes; one more line fails
    { for i in $(seq 1 200); do printf 'int f%d(void);\nint f%d(void)\n{ return %d; }\n\n' "$i" "$i" "$i"; done; } >"$T/good/file_800_lines.c"
    [ "$(wc -l <"$T/good/file_800_lines.c")" -eq 800 ] || { echo "check-lengths: self-test: the 800-line file has $(wc -l <"$T/good/file_800_lines.c") lines" >&2; exit 1; }
    "$0" "$T/good" >/dev/null || { echo "check-lengths: self-test: an 80-line function or an 800-line file was refused" >&2; exit 1; }
    cp "$fx/fn_81_lines.c" "$T/bad81/"
    out=$("$0" "$T/bad81" 2>&1) && { echo "check-lengths: self-test: the 81-line function was accepted" >&2; exit 1; }
    case $out in *"fn_81_lines.c:"*"planted_81_lines has 81 lines"*) ;;
        *) echo "check-lengths: self-test: no \"planted_81_lines has 81 lines\" in: $out" >&2; exit 1 ;; esac
    { cat "$T/good/file_800_lines.c"; echo; } >"$T/file801/file_801_lines.c"
    out=$("$0" "$T/file801" 2>&1) && { echo "check-lengths: self-test: an 801-line file was accepted" >&2; exit 1; }
    case $out in *"file_801_lines.c has 801 lines"*) ;;
        *) echo "check-lengths: self-test: no \"file_801_lines.c has 801 lines\" in: $out" >&2; exit 1 ;; esac
    echo "check-lengths: self-test: an 81-line function and an 801-line file are refused, 80 and 800 pass"
    exit 0
fi

python3 - "${1:-lib}" <<'EOF'
import glob, os, re, sys

MAX_FILE, MAX_FN = 800, 80
root = sys.argv[1]
bad, nfn, nfile = [], 0, 0

def blank(text):
    """Comments, string and char literals and preprocessor lines blanked,
    newlines kept, so offsets still give line numbers; a literal becomes
    its quotes alone."""
    out, i, n = [], 0, len(text)
    bol = True                      # only blanks since the line began
    while i < n:
        c = text[i]
        if bol and c == "#":        # a directive, with its continuations
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "/" and text.startswith("/*", j):
                    k = text.find("*/", j + 2)
                    k = n if k < 0 else k + 2
                    out.append(re.sub(r"[^\n]", " ", text[j:k])); j = k; continue
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    out.append(" \n"); j += 2; continue
                out.append(" "); j += 1
            i = j
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k])); i = k; continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i)); i = k; continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else "")); i = j + 1
            bol = False
            continue
        out.append(c)
        if c == "\n":
            bol = True
        elif not c.isspace():
            bol = False
        i += 1
    return "".join(out)

def name_of(sig):
    """The identifier before the "(" that matches the signature's last ")"."""
    s = sig.rstrip()
    depth = 0
    for k in range(len(s) - 1, -1, -1):
        if s[k] == ")":
            depth += 1
        elif s[k] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"(\w+)\s*$", s[:k])
                return m.group(1) if m else "?"
    return "?"

def check(path):
    global nfn
    text = open(path, encoding="utf-8").read()
    b = blank(text)
    line = 1
    depth = 0
    sig_start = None                # offset of the first token of this item
    fn = None                       # (name, first line) of the open function
    extern_c = 0                    # extern "C" { ... } blocks: transparent
    for off, c in enumerate(b):
        if c == "\n":
            line += 1
            continue
        if depth == 0 and sig_start is None and not c.isspace() and c not in ";}":
            sig_start = off
        if c == "{":
            if depth == 0:
                sig = b[sig_start:off] if sig_start is not None else ""
                if re.search(r'\bextern\s*""\s*$', sig):
                    extern_c += 1
                    sig_start = None
                    continue
                if sig.rstrip().endswith(")"):
                    fn = (name_of(sig), b.count("\n", 0, sig_start) + 1)
            depth += 1
        elif c == "}":
            if depth == 0 and extern_c:
                extern_c -= 1
                continue
            depth -= 1
            if depth < 0:
                bad.append(f"{path}:{line}: a '}}' closes nothing (braces split by #if?): cannot measure")
                return
            if depth == 0:
                if fn:
                    nfn += 1
                    length = line - fn[1] + 1
                    if length > MAX_FN:
                        bad.append(f"{path}:{fn[1]}: {fn[0]} has {length} lines (at most {MAX_FN}: split it by step)")
                    fn = None
                    sig_start = None
        elif c == ";" and depth == 0:
            sig_start = None
    if depth != 0:
        bad.append(f"{path}: {depth} brace(s) left open at the end (braces split by #if?): cannot measure")

paths = sorted(glob.glob(os.path.join(root, "**", "*.[ch]"), recursive=True))
if not paths:
    print(f"check-lengths: no .c or .h file under {root}", file=sys.stderr)
    sys.exit(2)
for p in paths:
    if p.endswith(".c"):
        nfile += 1
        with open(p, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_FILE:
            bad.append(f"{p} has {lines} lines (at most {MAX_FILE}: split it by idea)")
    check(p)
for m in bad:
    print("check-lengths: " + m, file=sys.stderr)
if bad:
    sys.exit(1)
print(f"check-lengths: {nfile} .c files of at most {MAX_FILE} lines, {nfn} functions of at most {MAX_FN} lines under {root}")
EOF
