#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tools/ci/check-routes.py SRC ROUTES - the second half of check-layers.sh:
# calls through function pointers, and names defined in two layers.
#
# lib/'s layers (base < sched < wait < io < sync < rt) may not use a
# symbol of a higher layer (check-layers.sh checks that with nm).  A
# function pointer can still carry a call upward: a higher layer stores
# its function where a lower one calls through it - an UPWARD ROUTE.
# Each route that lib/ keeps is listed, with its reason, in ROUTES
# (tools/ci/upward-routes.txt, which docs/architecture.md quotes); this
# script fails on a route that is not there, and on a listed one that no
# longer exists (the list would lie).
#
# How a route is found, from the source text (comments and strings
# blanked, preprocessor lines dropped), with no compiler:
#   SLOTS   every function pointer lib/ and include/ declare - a member
#           `T (*m)(...)` of a struct (or one of a function-pointer
#           typedef, coro_fn), a parameter `g(..., T (*p)(...), ...)`, a
#           variable at file scope.  A member is named by the member name
#           alone (the call site does not say the struct's type), so two
#           structs' members of one name are one slot here.
#   STORES  a function defined in lib/ whose name stands where it is not
#           called: `.m = f`, `->m = f`, `v = f`, the k-th value of a
#           positional initializer of a struct this script has read (braces
#           nested into embedded structs and arrays of them), the k-th
#           argument of a call of g whose k-th parameter is a slot.  A
#           parameter p of g stored into a member inside g (`->m = p`, or
#           as a value of an initializer) passes what p holds on to m.
#   CALLS   `->m(`, `.m(` of a member slot, `p(` of a parameter slot inside
#           its function, `v(` or CORO__HOOK(v, ...)( of a variable slot.
# A route is a slot whose call site is in a lower layer than a function
# stored into it.  Its key in ROUTES: the slot's name - `member`,
# `function(parameter)` or `variable`.
#
# What it cannot see, so a route taken one of these ways passes unseen:
# a function's address carried through a cast to another type, a void *,
# a local variable or a second copy (`x->m = y->m`); a call through a
# local variable or a macro other than CORO__HOOK; a designator that is
# not the first thing of its value (`.a.b = f`); preprocessor branches (all
# are read as one text); a pointer set from above that is only compared,
# never called (an identity: JOINING INLINE once knew coro_done's ops so).
# It over-sees where two slots share a name: both are then one route.
# Test hooks set only by tests (CORO__HOOK knobs) store nothing in lib/.
#
# NAMES IN TWO LAYERS.  It also fails when a static function of one
# name is defined in two layers, or a private macro (CORO__*) is defined
# in two: one idea written twice, or two ideas a reader takes for one.
#
# --self-test lives in check-layers.sh (a planted tree).
import glob, os, re, sys
from collections import defaultdict

LAYERS = ["base", "sched", "wait", "io", "sync", "rt"]
rank = {l: i for i, l in enumerate(LAYERS)}
src, routes_file = sys.argv[1], sys.argv[2]
verbose = os.environ.get("ROUTES_VERBOSE") == "1"
bad = []

IDENT = r"[A-Za-z_]\w*"
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "do", "else", "case",
            "goto", "break", "continue", "default", "typeof", "__typeof__", "_Alignof",
            "__attribute__", "__builtin_expect", "defined", "offsetof", "_Static_assert",
            "NULL", "true", "false"}


def strip(s):
    """comments and string/char literals blanked, lines kept"""
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", s[i:j]))
            i = j
        elif s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and s[j] != c and s[j] != "\n":
                j += 2 if s[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def no_cpp(t):
    """preprocessor lines (with their continuations) blanked"""
    lines, out, cont = t.split("\n"), [], False
    for l in lines:
        if cont or re.match(r"\s*#", l):
            cont = l.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(l)
    return "\n".join(out)


def match_close(t, i, o="(", c=")"):
    """index after the bracket that closes the one at t[i]"""
    d = 0
    for k in range(i, len(t)):
        if t[k] == o:
            d += 1
        elif t[k] == c:
            d -= 1
            if d == 0:
                return k + 1
    return len(t)


def split_top(t, sep=","):
    """t split at sep outside brackets"""
    parts, d, cur = [], 0, []
    for ch in t:
        if ch in "([{":
            d += 1
        elif ch in ")]}":
            d -= 1
        if ch == sep and d == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def layer_of(p):
    rel = os.path.relpath(p, src).split("/")
    return rel[0] if rel[0] in rank else None


files = {}          # path -> stripped text
for p in sorted(glob.glob(src + "/*/*.[ch]")):
    if layer_of(p):
        files[p] = no_cpp(strip(open(p, encoding="utf-8").read()))
raw = {p: strip(open(p, encoding="utf-8").read()) for p in files}   # with #define lines
pub = {}
for p in sorted(glob.glob(os.path.join(src, "..", "include", "**", "*.h"), recursive=True)):
    pub[p] = no_cpp(strip(open(p, encoding="utf-8").read()))

# ---- functions defined in lib/: name -> layers; and their bodies -------------------
defs = defaultdict(set)         # function name -> {layer}
static_defs = defaultdict(set)  # static function name -> {(layer, file)}
bodies = []                     # (file, name, params text, body start, body end)
sig = re.compile(r"(" + IDENT + r")\s*\(")
for p, t in files.items():
    depth, i, n = 0, 0, len(t)
    stmt_start = 0
    while i < n:
        ch = t[i]
        if ch == "{":
            if depth == 0:
                head = t[stmt_start:i]
                # a function definition: NAME(params) [attributes] {
                h2 = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", head)
                m = None
                for m0 in sig.finditer(h2):
                    if m0.group(1) not in KEYWORDS and "=" not in h2[:m0.start()]:
                        m = m0
                        break
                if m and re.match(r"\s*$", h2[match_close(h2, m.end() - 1):]) \
                        and not re.search(r"\b(struct|union|enum)\s+" + IDENT + r"\s*$", h2) \
                        and "(*" not in h2[m.start() - 2:m.start()]:
                    name = m.group(1)
                    end = match_close(t, i, "{", "}")
                    params = h2[m.end():match_close(h2, m.end() - 1) - 1]
                    defs[name].add(layer_of(p))
                    if re.search(r"\bstatic\b", h2[:m.start()]):
                        static_defs[name].add((layer_of(p), p))
                    bodies.append((p, name, params, i, end))
                    i, stmt_start = end, end
                    continue
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                stmt_start = i + 1
        elif ch == ";" and depth == 0:
            stmt_start = i + 1
        i += 1


def enclosing(p, pos):
    for (f, name, params, b, e) in bodies:
        if f == p and b <= pos < e:
            return name, params
    return None, None


# ---- slots ---------------------------------------------------------------------------
fnptr_types = set()
for t in list(files.values()) + list(pub.values()):
    for m in re.finditer(r"typedef[^;{}]*\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", t):
        fnptr_types.add(m.group(1))
member_slots = set()
var_slots = set()
param_slots = {}      # function -> {index: param name} (fn-pointer params)
structs = {}          # tag -> [(member name, kind, type tag, is array)]
typedefs = {}         # typedef name -> struct tag


def parse_members(body):
    out = []
    for decl in split_top(body, ";"):
        d = decl.strip()
        if not d:
            continue
        d = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", d)
        m = re.match(r"(?:const\s+)?(struct|union)\s*(" + IDENT + r")?\s*\{", d)
        if m:
            inner = d[m.end() - 1:]
            close = match_close(inner, 0, "{", "}")
            rest = inner[close:].strip()
            sub_members = parse_members(inner[1:close - 1])
            if m.group(2):
                structs[m.group(2)] = sub_members
            if rest:    # a named member of a struct defined in place
                out.append((re.match(IDENT, rest.lstrip("*")).group(0) if re.match(IDENT, rest.lstrip("*")) else "?",
                            "struct", m.group(2), "[" in rest))
            elif sub_members:   # anonymous: its first member takes a positional value
                out.append((sub_members[0][0], sub_members[0][1], sub_members[0][2], False))
            continue
        fm = re.search(r"\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", d)
        if fm:
            out.append((fm.group(1), "fn", None, False))
            member_slots.add(fm.group(1))
            continue
        for k, piece in enumerate(split_top(d, ",")):
            piece = piece.strip()
            nm = re.search(r"(" + IDENT + r")\s*(\[[^\]]*\]\s*)*(:\s*\w+\s*)?$", piece)
            if not nm:
                continue
            name = nm.group(1)
            st = re.match(r"(?:const\s+)?struct\s+(" + IDENT + r")\s+(?!\*)", d)
            ty = re.match(r"(?:const\s+)?(" + IDENT + r")\s", d)
            if ty and ty.group(1) in fnptr_types and "*" not in piece:
                out.append((name, "fn", None, False))
                member_slots.add(name)
            elif st and "*" not in piece:
                out.append((name, "struct", st.group(1), nm.group(2) is not None))
            elif ty and ty.group(1) in typedefs and "*" not in piece:
                out.append((name, "struct", typedefs[ty.group(1)], nm.group(2) is not None))
            else:
                out.append((name, "other", None, nm.group(2) is not None))
    return out


for t in list(pub.values()) + list(files.values()):
    for m in re.finditer(r"typedef\s+(?:const\s+)?(?:struct|union)\s+(" + IDENT + r")\s*(\{)?", t):
        if m.group(2):
            close = match_close(t, m.end() - 1, "{", "}")
            nm = re.match(r"\s*(" + IDENT + r")", t[close:])
        else:
            nm = re.match(r"\s*(" + IDENT + r")\s*;", t[m.end():])
        if nm:
            typedefs[nm.group(1)] = m.group(1)
for t in list(pub.values()) + list(files.values()):
    for m in re.finditer(r"\b(?:struct|union)\s+(" + IDENT + r")\s*\{", t):
        close = match_close(t, m.end() - 1, "{", "}")
        structs[m.group(1)] = parse_members(t[m.end():close - 1])
    # fn-pointer parameters of functions declared or defined
    for m in re.finditer(r"(" + IDENT + r")\s*\(", t):
        if m.group(1) in KEYWORDS:
            continue
        close = match_close(t, m.end() - 1)
        params = t[m.end():close - 1]
        if "(*" not in params.replace(" ", "") and not any(ft in params for ft in fnptr_types):
            continue
        if not re.match(r"\s*(;|\{|__attribute__|CORO__)", t[close:]):
            continue
        for k, prm in enumerate(split_top(params)):
            fm = re.search(r"\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", prm)
            tm = re.match(r"\s*(?:const\s+)?(" + IDENT + r")\s+(" + IDENT + r")\s*$", prm)
            if fm:
                param_slots.setdefault(m.group(1), {})[k] = fm.group(1)
            elif tm and tm.group(1) in fnptr_types:
                param_slots.setdefault(m.group(1), {})[k] = tm.group(2)
for p, t in files.items():
    depth, start = 0, 0
    for m in re.finditer(r"[{};]|\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", t):
        g = m.group(0)
        if g == "{":
            depth += 1
        elif g == "}":
            depth -= 1
            start = m.end()
        elif g == ";":
            if depth == 0:
                start = m.end()
        elif depth == 0:
            before = t[start:m.start()]
            # a variable at file scope, not a parameter nor a typedef
            if before.count("(") == before.count(")") and not re.search(r"\btypedef\b", before):
                var_slots.add(m.group(1))

# ---- stores: (slot, function, file) ---------------------------------------------------
stores = defaultdict(set)       # slot -> {(function, layer of the storing file, file:line)}
flows = defaultdict(set)        # param slot "g(p)" -> {member slot}


def lineno(p, pos):
    return files[p].count("\n", 0, pos) + 1


def value_of(p, pos, v, slot):
    """a positional or designated value v (text) at pos goes into slot"""
    v = v.strip()
    m = re.fullmatch(r"&?\s*(?:\(\s*[\w\s*]+\)\s*)?(" + IDENT + r")", v)
    if not m:
        return
    name = m.group(1)
    if name in defs:
        stores[slot].add((name, layer_of(p), f"{p}:{lineno(p, pos)}"))
        return
    fn, params = enclosing(p, pos)
    if fn and fn in param_slots and name in param_slots[fn].values():
        flows[f"{fn}({name})"].add(slot)


def init_list(p, pos, tag, text, is_array=False):
    """a brace initializer text (without the outer braces) of struct tag"""
    if is_array:
        for el in split_top(text):
            el = el.strip()
            if el.startswith("{"):
                init_list(p, pos, tag, el[1:match_close(el, 0, "{", "}") - 1])
        return
    members = structs.get(tag)
    if members is None:
        return
    k = 0
    for el in split_top(text):
        e = el.strip()
        if not e:
            continue
        dm = re.match(r"\.(" + IDENT + r")\s*(\[[^\]]*\])?\s*=\s*", e)
        if dm:
            names = [mm[0] for mm in members]
            if dm.group(1) in names:
                k = names.index(dm.group(1))
            e = e[dm.end():].strip()
        if k >= len(members):
            break
        name, kind, sub, arr = members[k]
        if e.startswith("{") and kind == "struct":
            init_list(p, pos, sub, e[1:match_close(e, 0, "{", "}") - 1], arr)
        elif kind == "fn":
            value_of(p, pos, e, name)
        k += 1


for p, t in files.items():
    # designated and assigned members: .m = f, ->m = f
    for m in re.finditer(r"(?:\.|->)\s*(" + IDENT + r")\s*=(?!=)\s*([^,;}]*)", t):
        if m.group(1) in member_slots:
            value_of(p, m.start(), m.group(2), m.group(1))
    # variables: v = f
    for m in re.finditer(r"(?<![\w.>])(" + IDENT + r")\s*=(?!=)\s*([^,;}]*)", t):
        if m.group(1) in var_slots:
            value_of(p, m.start(), m.group(2), m.group(1))
    # positional initializers: struct T x = {...}, T x[] = {...}, (struct T){...}
    for m in re.finditer(r"(?:\b(?:struct|union)\s+(" + IDENT + r")|\b(" + IDENT + r"))"
                         r"\s+\**\s*" + IDENT + r"\s*(\[[^\]]*\])?\s*=\s*\{"
                         r"|\(\s*(?:const\s+)?(?:struct|union)\s+(" + IDENT + r")\s*\)\s*\{", t):
        tag = m.group(1) or typedefs.get(m.group(2) or "", None) or m.group(4)
        if not tag:
            continue
        b = m.end() - 1
        init_list(p, m.start(), tag, t[b + 1:match_close(t, b, "{", "}") - 1], bool(m.group(3)))
    # arguments: g(..., f, ...) where g's k-th parameter is a function pointer
    for g, ps in param_slots.items():
        for m in re.finditer(r"(?<![\w.>])" + re.escape(g) + r"\s*\(", t):
            fn, _ = enclosing(p, m.start())
            close = match_close(t, m.end() - 1)
            if re.match(r"\s*\{", t[close:]):
                continue        # its definition
            args = split_top(t[m.end():close - 1])
            for k, name in ps.items():
                if k < len(args):
                    value_of(p, m.start(), args[k], f"{g}({name})")

# what a parameter held, stored on into members
for ps, ms in flows.items():
    for ms1 in ms:
        stores[ms1] |= stores.get(ps, set())

# ---- calls: slot -> {(layer, file:line)} ---------------------------------------------
calls = defaultdict(set)
for p, t in files.items():
    for m in re.finditer(r"(?:\.|->)\s*(" + IDENT + r")\s*\(", t):
        if m.group(1) in member_slots:
            calls[m.group(1)].add((layer_of(p), f"{p}:{lineno(p, m.start())}"))
    for m in re.finditer(r"(?<![\w.>])(" + IDENT + r")\s*\(|CORO__HOOK\s*\(\s*(" + IDENT + r")", t):
        v = m.group(1) or m.group(2)
        if v in var_slots:
            calls[v].add((layer_of(p), f"{p}:{lineno(p, m.start())}"))
for (p, g, params, b, e) in bodies:
    for k, name in param_slots.get(g, {}).items():
        for m in re.finditer(r"(?<![\w.>])" + re.escape(name) + r"\s*\(", files[p][b:e]):
            calls[f"{g}({name})"].add((layer_of(p), f"{p}:{lineno(p, b + m.start())}"))

# ---- routes ------------------------------------------------------------------------
found = {}      # slot -> (caller layer, callee layer, callee, call site)
for slot, st in stores.items():
    for (fn, _, where) in st:
        for fl in defs[fn]:
            for (cl, site) in calls.get(slot, ()):
                if rank[cl] < rank[fl]:
                    prev = found.get(slot)
                    if not prev or rank[fl] - rank[cl] > rank[prev[1]] - rank[prev[0]]:
                        found[slot] = (cl, fl, fn, site)

# ROUTES: one key a line, `# ...` its reason.  A member slot's key is
# `struct.member` (the struct must have it; the match is by the member's
# name), or `struct.*`: every function-pointer member of that struct, a
# callback table the lower layer defines (coro_await_ops, the driver).
listed = {}     # slot -> the line that lists it
groups = {}     # key -> (line, {slots})
for n, line in enumerate(open(routes_file, encoding="utf-8"), 1):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    key = line.split()[0]
    m = re.fullmatch(r"(" + IDENT + r")\.(\*|" + IDENT + r")", key)
    if m:
        fns = [mm[0] for mm in structs.get(m.group(1), []) if mm[1] == "fn"]
        if m.group(2) != "*" and m.group(2) not in fns:
            bad.append(f"{routes_file}:{n}: {key}: struct {m.group(1)} has no such "
                       f"function-pointer member")
            continue
        slots = set(fns) if m.group(2) == "*" else {m.group(2)}
    else:
        slots = {key}
    groups[key] = (n, slots)
    for sl in slots:
        listed[sl] = n
for slot in sorted(found):
    cl, fl, fn, site = found[slot]
    if slot not in listed:
        bad.append(f"an upward route not in {routes_file}: {site} ({cl}) calls through "
                   f"{slot}, which holds {fn} ({fl})")
    elif verbose:
        print(f"check-layers: route {slot}: {site} ({cl}) -> {fn} ({fl})")
for key, (n, slots) in sorted(groups.items()):
    if not slots & set(found):
        bad.append(f"{routes_file}:{n}: {key} is listed but no upward call goes through it")

# ---- names defined in two layers ------------------------------------------------------
for name, where in sorted(static_defs.items()):
    layers = sorted({l for l, _ in where}, key=rank.get)
    if len(layers) > 1:
        bad.append(f"static function {name} is defined in {len(layers)} layers: "
                   + ", ".join(sorted(f for _, f in where)))
macros = defaultdict(set)
for p, t in raw.items():
    for m in re.finditer(r"^\s*#\s*define\s+(CORO__\w+)", t, re.M):
        macros[m.group(1)].add((layer_of(p), p))
for name, where in sorted(macros.items()):
    layers = {l for l, _ in where}
    if len(layers) > 1:
        bad.append(f"macro {name} is defined in {len(layers)} layers: "
                   + ", ".join(sorted(f for _, f in where)))

for b in bad:
    print("check-layers: " + b, file=sys.stderr)
if bad:
    sys.exit(1)
print(f"check-layers: {len(found)} upward routes through function pointers, each listed in "
      f"{routes_file}; no static function or CORO__ macro defined in two layers")
