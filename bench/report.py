"""Markdown tables of benchmark results (one run, or several runs side by side).

    python bench/report.py bench/results/latest.json                      # one run
    python bench/report.py bench/results/latest.json bench/results/latest-1thread.json
    python bench/report.py --groups training,micro,system A.json B.json   # leave out the extra rows

The first run gives the full columns; each further run adds its ember, torch and ratio columns
(for instance the same suite with one thread per library).
"""
import json
import sys

_TIME_SCALE = ("us", "ms", "s")


def ratio_kind(res):
    if res["kind"] == "throughput":
        return "throughput, >1: ember faster"
    if res["unit"] in _TIME_SCALE:
        return "time, <1: ember faster"
    return "size, <1: ember smaller"


def unit_label(res):
    return f"{res['unit']}/step" if res["kind"] == "time" else res["unit"]


def fmt(v):
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3g}"


def _status(res):
    return {True: "ok", False: "**miss**", None: ""}[res.get("meets_target")]


def _cells(res):
    """ember, torch, ratio and status cells of one result (or placeholders)."""
    if res is None:
        return ["", "", "", ""]
    if "error" in res:
        return ["error", "", "", res["error"][:60].replace("|", "/")]
    v = res["value"]
    ratio = "-" if res["ratio"] is None else (f"{res['ratio']:.2f}" if res["ratio"] >= 0.1 else f"{res['ratio']:.2g}")
    return [fmt(v.get("ember")), fmt(v.get("torch")), ratio, _status(res)]


def line(res, *more):
    """One table row: the first result's full columns, then ember/torch/ratio/status of each further run."""
    target = f"{res['target'][0]} {res['target'][1]:g}" if res.get("target") else ""
    cells = [res["name"], unit_label(res), ratio_kind(res), target] + _cells(res)
    for other in more:
        cells += _cells(other)
    return "| " + " | ".join(cells) + " |"


def header(labels):
    cols = ["row", "unit", "ratio is ember/torch of", "target"]
    for label in labels:
        suffix = f" ({label})" if label else ""
        cols += [f"ember{suffix}", f"torch{suffix}", f"ember/torch{suffix}", ""]
    align = ["---", "---", "---", "---"] + ["---:", "---:", "---:", "---"] * len(labels)
    return "| " + " | ".join(cols) + " |\n|" + "|".join(align) + "|"


_PROCESSES = {"separate": "each in its own process", "one": "both in one process"}


def describe(machine):
    return (f"ember {machine.get('ember_commit')} vs torch {machine['torch']}, {machine['date']}; {machine['cpu']}, "
            f"{machine['cores']} cores, {machine['torch_threads']} thread(s) per library, "
            f"{_PROCESSES.get(machine.get('processes'), 'both in one process')}; NumPy's BLAS "
            f"{machine.get('blas', 'not recorded')}; compiled kernels {machine.get('jit', 'not recorded')}; load average "
            f"{machine['load_start']:.1f} at start, {machine['load_end']:.1f} at end"
            f"{' (--quick)' if machine.get('quick') else ''}")


def render(runs, labels=None, groups=None):
    """A markdown table of runs (each {"machine", "rows"}); rows follow the first run's order."""
    labels = labels or ([""] if len(runs) == 1 else [f"{r['machine']['torch_threads']} thr" for r in runs])
    others = [{res["name"]: res for res in r["rows"]} for r in runs[1:]]
    out = [header(labels)]
    group = None
    width = 4 + 4 * len(runs)
    for res in runs[0]["rows"]:
        if groups is not None and res["group"] not in groups:
            continue
        if res["group"] != group:
            group = res["group"]
            out.append(f"| *{group}* |" + " |" * (width - 1))
        out.append(line(res, *(o.get(res["name"]) for o in others)))
    return "\n".join(out)


def main(argv):
    groups = None
    if argv and argv[0] == "--groups":
        groups = argv[1].split(",")
        argv = argv[2:]
    paths = argv
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    for r in runs:
        print("- " + describe(r["machine"]))
    print()
    print(render(runs, groups=groups))


if __name__ == "__main__":
    main(sys.argv[1:])
