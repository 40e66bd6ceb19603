# SPDX-License-Identifier: MIT
"""Draw a corokit Chrome trace as a picture (called by tools/timeline).

Lanes top to bottom: the workers (coro-w<cpu>, or coro-run for a
single-threaded scheduler), the I/O thread (coro-io), the plain threads.
Job steps are bars coloured by priority; a step of a job with an affinity
class (a narrower mask than "any CPU") is hatched, one hatch per class, and
the legend says which CPUs each class allows; long steps carry their body's
name.  Wakes are triangles on the lane of the thread that woke the job,
steals are marks on the thief's lane, parks thin grey bars, the I/O
thread's epoll_wait thin orange bars.  TIMELINE_MS=FROM:TO (milliseconds
from the trace's start) draws only that window.

--steps TRACE.json prints every job step as text instead (no matplotlib
needed): lane, start and length in microseconds, body, job; a step whose
times were shared with others of its run (the "run" arg of traces written
with runs on) says so, since its length is then the run's average.

Speed: a trace of a few MB holds tens of thousands of events; every mark
kind is gathered first and drawn with one call per lane and kind (one
matplotlib artist each, not one per event).
"""
import bisect
import glob
import json
import os
import re
import subprocess
import sys


PRIO_COLOR = {"HIGH": "#d62728", "NORMAL": "#1f77b4", "LOW": "#2ca02c"}
HATCHES = ["////", "\\\\\\\\", "xxxx", "....", "++++", "oo", "--", "||"]


def resolver(src):
    """names "module+0xOFF" (static bodies) by the module's symbol table:
    the module is looked for beside the trace and below it (nm, binutils)"""
    cache = {}

    def syms(mod):
        if mod in cache:
            return cache[mod]
        cache[mod] = None
        base = os.path.dirname(os.path.abspath(src))
        for pat in (mod, "*/" + mod, "*/*/" + mod, "../*/" + mod, "../*/*/" + mod):
            for path in glob.glob(os.path.join(base, pat)):
                try:
                    txt = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                                         text=True, check=True).stdout
                except (OSError, subprocess.CalledProcessError):
                    continue
                tab = []
                for line in txt.splitlines():
                    f = line.split()
                    if len(f) == 3 and f[1] in "tT":
                        tab.append((int(f[0], 16), f[2]))
                tab.sort()
                cache[mod] = tab
                return tab
        return None

    def name(n):
        m = re.fullmatch(r"(.+)\+0x([0-9a-f]+)", n)
        if not m:
            return n
        tab = syms(m.group(1))
        if not tab:
            return n
        off = int(m.group(2), 16)
        i = bisect.bisect_right(tab, (off, "\uffff")) - 1
        return tab[i][1] if i >= 0 and tab[i][0] == off else n

    return name


def load(src):
    with open(src) as f:
        return json.load(f)["traceEvents"]


def steps(src):
    """every job step, in time order per lane, as text"""
    events = load(src)
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    jobs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "job"]
    if not jobs:
        sys.exit("timeline: %s holds no job steps" % src)
    t0 = min(e["ts"] for e in events if e.get("ph") in ("X", "i"))
    symname = resolver(src)
    out = []
    for e in sorted(jobs, key=lambda e: (names.get(e["tid"], str(e["tid"])), e["ts"])):
        run = e["args"].get("run", 1)
        out.append("%-10s %12.3f %10.3f %s job=%s%s" % (
            names.get(e["tid"], e["tid"]), e["ts"] - t0, e["dur"], symname(e["name"]),
            e["args"].get("job", "?"),
            " shared=%d (length: the run's average)" % run if run > 1 else ""))
    sys.stdout.write("\n".join(out) + "\n")


def main(src, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D

    events = load(src)
    names, order = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[e["tid"]] = e["args"]["sort_index"]
    timed = [e for e in events if e.get("ph") in ("X", "i")]
    if not timed:
        sys.exit("timeline: %s holds no events" % src)
    t0 = min(e["ts"] for e in timed)
    lo, hi = None, None
    win = os.environ.get("TIMELINE_MS")
    if win:
        a, b = win.split(":")
        lo, hi = float(a), float(b)

    def ms(ts):
        return (ts - t0) / 1000.0

    def visible(e):
        if lo is None:
            return True
        start = ms(e["ts"])
        end = start + e.get("dur", 0) / 1000.0
        return end >= lo and start <= hi

    tids = sorted(names, key=lambda t: order.get(t, t))
    # draw only lanes that have something, but always the workers and coro-io
    busy = {e["tid"] for e in timed}
    tids = [t for t in tids if t in busy or names[t].startswith("coro-")]
    ypos = {t: len(tids) - 1 - i for i, t in enumerate(tids)}

    fig_h = 1.2 + 0.55 * len(tids)
    fig, ax = plt.subplots(figsize=(14, fig_h))
    classes = {}
    span = max(ms(e["ts"]) + e.get("dur", 0) / 1000.0 for e in timed)
    if lo is not None:
        span = hi - lo
    bars = {}      # (tid, prio, class) -> [(x, w)]
    thin = {}      # (y, colour) -> [(x, w)]: parks, epoll_wait
    marks = {}     # (marker, colour, size) -> ([x], [y]): wakes, steals
    labels = []
    symname = resolver(src)
    for e in timed:
        if e["tid"] not in ypos or not visible(e):
            continue
        y = ypos[e["tid"]]
        if e["ph"] == "X" and e.get("cat") == "job":
            a = e["args"]
            x, w = ms(e["ts"]), e["dur"] / 1000.0
            cls = a.get("class", 0)
            if cls:
                classes.setdefault(cls, a.get("cpus", "?"))
            bars.setdefault((e["tid"], a["prio"], cls), []).append((x, w))
            if w > span * 0.04:
                labels.append((x + w / 2, y, symname(e["name"])))
        elif e["ph"] == "X" and e["name"] == "parked":
            thin.setdefault((y, "#cccccc"), []).append((ms(e["ts"]), e["dur"] / 1000.0))
        elif e["ph"] == "X" and e["name"] == "epoll_wait":
            thin.setdefault((y, "#ffbb78"), []).append((ms(e["ts"]), e["dur"] / 1000.0))
        elif e["ph"] == "i" and e["name"] == "wake":
            m = marks.setdefault(("v", PRIO_COLOR.get(e["args"].get("prio"), "k"), 4), ([], []))
            m[0].append(ms(e["ts"]))
            m[1].append(y + 0.42)
        elif e["ph"] == "i" and e["name"] == "steal":
            m = marks.setdefault(("^", "k", 5), ([], []))
            m[0].append(ms(e["ts"]))
            m[1].append(y - 0.42)
    for (y, colour), xs in thin.items():
        ax.broken_barh(xs, (y - 0.08, 0.16), facecolors=colour, linewidth=0)
    for (marker, colour, size), (xs, ys) in marks.items():
        ax.plot(xs, ys, marker=marker, markersize=size, linestyle="none", color=colour,
                alpha=0.7 if marker == "v" else 1.0)
    cls_hatch = {c: HATCHES[i % len(HATCHES)] for i, c in enumerate(sorted(classes))}
    for (tid, prio, cls), xs in bars.items():
        # a hatched bar (a class) gets dark edges: the hatch takes the edge colour
        ax.broken_barh(xs, (ypos[tid] - 0.3, 0.6), facecolors=PRIO_COLOR.get(prio, "k"),
                       edgecolors="#222222" if cls else PRIO_COLOR.get(prio, "k"),
                       linewidth=0.3, hatch=cls_hatch.get(cls) if cls else None)
    for x, y, name in labels:
        ax.text(x, y, name, ha="center", va="center", fontsize=7, color="white", clip_on=True)
    ax.set_yticks([ypos[t] for t in tids])
    ax.set_yticklabels([names[t] for t in tids])
    ax.set_ylim(-0.7, len(tids) - 0.3)
    if lo is not None:
        ax.set_xlim(lo, hi)
    ax.set_xlabel("ms since the first event")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(facecolor=c, label="%s priority step" % p) for p, c in PRIO_COLOR.items()]
    for c in sorted(classes):
        handles.append(Patch(facecolor="white", edgecolor="k", hatch=cls_hatch[c],
                             label="class %d: CPUs %s" % (c, classes[c])))
    handles += [
        Line2D([], [], marker="v", linestyle="none", color="k", label="wake (on the waker's lane)"),
        Line2D([], [], marker="^", linestyle="none", color="k", label="steal"),
        Patch(facecolor="#cccccc", label="parked"),
        Patch(facecolor="#ffbb78", label="epoll_wait"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    nsteps = sum(len(v) for v in bars.values())
    ax.set_title("%s: %d job steps over %.1f ms" % (os.path.basename(src), nsteps, span),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--steps":
        steps(sys.argv[2])
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2])
    else:
        sys.exit("usage: timeline TRACE.json OUT.png | timeline --steps TRACE.json (tools/timeline --help)")
