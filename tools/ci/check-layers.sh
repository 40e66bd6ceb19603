#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/ci/check-layers.sh [BUILD_DIR] - lib/ is built in layers (docs/architecture.md):
#
#     base < sched < wait < io < sync < rt
#
# Fails when
#   - a file of lib/ is not in one of those folders;
#   - a file of a layer includes a header of lib/ from a higher layer;
#   - an object file of a layer needs (nm: U) a symbol that an object of a
#     higher layer defines;
#   - more than 2 object files need each other's symbols in a circle (the
#     largest strongly connected component of the "needs a symbol of" graph);
#   - (tools/ci/check-routes.py, from the source) a lower layer calls a
#     function of a higher one through a function pointer - an upward
#     route - that tools/ci/upward-routes.txt does not list, or that list
#     names a route that is gone; a static function of one name, or a
#     private macro (CORO__*), is defined in two layers.  check-routes.py
#     says how it finds routes and which ones it cannot see.
# Within a layer files may use each other.  Needs the library's objects:
# `make lib` first (the Makefile's check-layers target does it).
#
# tools/ci/check-layers.sh --self-test: builds a tiny tree with one upward
# include, one upward symbol, a circle of 4 objects, an upward route that
# the list does not name, a listed route that does not exist, a static
# function and a CORO__ macro defined in two layers, and requires this
# script to refuse it (and to accept the same tree without them, its one
# route listed).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v python3 >/dev/null || { echo "check-layers: python3 is needed (tools/dev/deps.sh)" >&2; exit 2; }

if [ "${1:-}" = "--self-test" ]; then
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
    CC=${CC:-cc}
    mk() {  # layer name "code"
        mkdir -p "$T/src/$1" "$T/pic/$1"
        printf '%s\n' "$3" >"$T/src/$1/$2.c"
        $CC -I"$T/src" -fPIC -c -o "$T/pic/$1/$2.o" "$T/src/$1/$2.c"
    }
    # good: rt uses sched uses base; a circle of 2 inside sched; rt's
    # r_up reaches base's b_call through a table base defines (b_ops.up),
    # a listed route; a static name and a CORO__ macro in one layer each
    mkdir -p "$T/src/base"
    printf 'struct b_ops { int (*up)(void); };\n#define CORO__B_ONLY 1\n' >"$T/src/base/b.h"
    mk base b '#include "base/b.h"
int b_fn(void) { return 1; }
int b_call(const struct b_ops *o) { return o->up(); }
static int helper(void) { return CORO__B_ONLY; }
int b_g(void) { return helper(); }'
    mk sched s1 'int b_fn(void); int s2_fn(void); int s1_fn(void) { return b_fn() + s2_fn(); }'
    mk sched s2 'int s1_fn(void); int s2_fn(void) { return 2; } int s2_g(void) { return s1_fn(); }'
    mk rt r '#include "base/b.h"
int s1_fn(void); int r_fn(void) { return s1_fn(); }
static int r_up(void) { return 3; }
const struct b_ops r_ops = { r_up };'
    printf 'b_ops.up   # the planted route\n' >"$T/routes"
    LAYERS_SRC="$T/src" ROUTES="$T/routes" "$0" "$T" >/dev/null ||
        { echo "check-layers: self-test: a good tree was refused" >&2; exit 1; }
    # bad: base calls up into rt, and includes an rt header
    mk base b 'int r_fn(void); int b_fn(void) { return r_fn(); }'
    printf '#include "rt/r.h"\n' >>"$T/src/base/b.c"
    # a second route into rt, through a parameter (not listed); a route
    # listed that nothing takes; a static name and a macro in two layers
    mk sched s2 'int s1_fn(void); int s2_fn(void) { return 2; } int s2_g(void) { return s1_fn(); }
int s2_each(int (*visit)(int)) { return visit(1); }
static int helper(void) { return 5; }
int s2_h(void) { return helper(); }'
    mk rt r 'int s1_fn(void); int r_fn(void) { return s1_fn(); }
int s2_each(int (*visit)(int));
static int r_visit(int x) { return x; }
static int helper(void) { return 4; }
#define CORO__B_ONLY 2
int r_g(void) { return s2_each(r_visit) + helper() + CORO__B_ONLY; }'
    printf 'b_ops.up   # listed, gone\n' >"$T/routes"
    out=$(LAYERS_SRC="$T/src" ROUTES="$T/routes" "$0" "$T" 2>&1) &&
        { echo "check-layers: self-test: an upward call was accepted" >&2; exit 1; }
    for want in "uses r_fn of rt/r.o" "includes rt/r.h from the higher layer rt" \
        "a circle of 4 object files" "calls through s2_each(visit), which holds r_visit (rt)" \
        "b_ops.up is listed but no upward call goes through it" \
        "static function helper is defined in 2 layers" "macro CORO__B_ONLY is defined in 2 layers"; do
        case $out in *"$want"*) ;; *) echo "check-layers: self-test: no \"$want\" in: $out" >&2; exit 1 ;; esac
    done
    echo "check-layers: self-test: an upward include, an upward symbol, a circle of 4, an unlisted"
    echo "  upward route, a listed route that is gone, a static name and a CORO__ macro in two layers are refused"
    exit 0
fi

B=${1:-build}
[ -d "$B/pic" ] || { echo "check-layers: $B/pic is missing: run make lib first" >&2; exit 2; }

rc=0
LAYERS_SRC=${LAYERS_SRC:-lib} python3 - "$B/pic" <<'EOF' || rc=1
import glob, os, re, subprocess, sys
from collections import defaultdict

LAYERS = ["base", "sched", "wait", "io", "sync", "rt"]
rank = {l: i for i, l in enumerate(LAYERS)}
objdir = sys.argv[1]
src = os.environ.get("LAYERS_SRC", "lib")
bad = []

# 1. every source and header of lib/ sits in a layer folder
for p in sorted(glob.glob(src + "/*.[ch]") + glob.glob(src + "/*/*.[ch]")):
    parts = os.path.relpath(p, src).split("/")
    if len(parts) != 2 or parts[0] not in rank:
        bad.append(f"{p}: not in a layer folder ({', '.join(LAYERS)})")

# 2. includes go downward (or sideways within the layer)
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
for p in sorted(glob.glob(src + "/*/*.[ch]")):
    me = os.path.relpath(p, src).split("/")[0]
    if me not in rank:
        continue
    for n, line in enumerate(open(p, encoding="utf-8"), 1):
        m = inc.match(line)
        if not m:
            continue
        target = m.group(1).split("/")[0]
        if target in rank and rank[target] > rank[me]:
            bad.append(f"{p}:{n}: includes {m.group(1)} from the higher layer {target}")

# 3. symbols: who defines what, who needs what
defs, needs, layer_of = {}, {}, {}
objs = sorted(glob.glob(os.path.join(objdir, "*", "*.o")))
if not objs:
    print(f"check-layers: no objects under {objdir}", file=sys.stderr)
    sys.exit(2)
# one nm for every object (-A: each line opens with its file and a colon):
# nm's start-up, paid once, costs more than reading one object
out = subprocess.run(["nm", "-A", *objs], capture_output=True, text=True, check=True).stdout
lines = defaultdict(list)
for l in out.splitlines():
    o, _, rest = l.partition(":")
    lines[o].append(rest)
for o in objs:
    name = os.path.relpath(o, objdir)[:-2]          # e.g. sched/worker
    layer_of[name] = name.split("/")[0]
    d, u = set(), set()
    for l in lines[o]:
        f = l.split()
        if len(f) == 3 and f[1] in "TDBRCVW":
            d.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            u.add(f[1])
    defs[name], needs[name] = d, u
owner = {s: n for n, d in defs.items() for s in d}
graph = defaultdict(set)
for n, u in needs.items():
    for s in sorted(u):
        o = owner.get(s)
        if not o or o == n:
            continue
        graph[n].add(o)
        if rank.get(layer_of[o], -1) > rank.get(layer_of[n], -1):
            bad.append(f"{n}.o (layer {layer_of[n]}) uses {s} of {o}.o (layer {layer_of[o]})")

# 4. the largest circle (Tarjan's strongly connected components)
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        comps.append(sorted(c))
for v in defs:
    if v not in index:
        visit(v)
circles = sorted((c for c in comps if len(c) > 1), key=len, reverse=True)
largest = len(circles[0]) if circles else 1
if largest > 2:
    bad.append(f"a circle of {largest} object files: {' '.join(circles[0])} (at most 2)")

for b in bad:
    print("check-layers: " + b, file=sys.stderr)
if bad:
    sys.exit(1)
print(f"check-layers: {len(objs)} objects in {len(LAYERS)} layers, no upward use; "
      f"largest circle {largest} files" + (f" ({', '.join(' '.join(c) for c in circles)})" if circles else ""))
EOF

# upward routes through function pointers, names defined in two layers
python3 tools/ci/check-routes.py "${LAYERS_SRC:-lib}" "${ROUTES:-tools/ci/upward-routes.txt}" || rc=1
exit $rc

