"""Side-by-side benchmarks: the same code on ember and on torch, in one run.

    python bench/run.py                     # every row (a few minutes)
    python bench/run.py --quick             # fewer, shorter samples
    python bench/run.py --only resnet       # rows whose name contains 'resnet' (any case)
    python bench/run.py --group training    # one group: training, micro, system, extra
    python bench/run.py --json out.json     # also save the results (samples, load, machine)

Rows live in bench/rows.py (the issue's table) and bench/rows_extra.py; models in bench/models.py
are written once against the library module. Each row is built once per library, warmed up, then
timed alternately (ember, torch, torch, ember, ...) and the medians are compared; --separate samples
each library in an interpreter of its own (bench/worker.py) instead of both in this one (Note
[Separate processes] in harness.py). Throughput rows report items/s and the ratio ember/torch of
throughput (>1 means ember is faster); time rows report time per step and the ratio ember/torch of
time (<1 means ember is faster); memory and size rows report MB and the ratio ember/torch (<1 means
ember is smaller). Both libraries get the same number of threads (torch.set_num_threads and NumPy's
BLAS pool, default 2). Timings depend on the load of the machine: it is printed with the results.

Note [BLAS kernel]: some machine images set OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) to guard old
OpenBLAS builds; that pins NumPy's OpenBLAS to an older kernel (Haswell/AVX2) where a user's NumPy
would pick the CPU's own (e.g. SkylakeX/AVX-512). The bench measures as a user's machine runs: it
restarts itself without the two variables (tests and CI keep them), unless --pinned-blas, and
records the kernel each run used (`blas` in the saved machine info, from threadpoolctl).
"""
import argparse
import json
import os
import sys
import time

_PIN_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _run_as_users_machine():
    """Re-exec without the OpenBLAS pins (Note [BLAS kernel]); before NumPy is imported."""
    if "--pinned-blas" in sys.argv or not any(v in os.environ for v in _PIN_VARS):
        return
    env = {k: v for k, v in os.environ.items() if k not in _PIN_VARS}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


if __name__ == "__main__":
    _run_as_users_machine()

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness, report  # noqa: E402
from bench import rows  # noqa: E402,F401  (registers the rows)
from bench import rows_extra  # noqa: E402,F401
from bench import rows_allocator  # noqa: E402,F401
from bench import rows_checkpoint  # noqa: E402,F401
from bench import rows_func  # noqa: E402,F401
from bench.harness import ROWS, row  # noqa: E402,F401  (row: for ad-hoc rows added to this file)

GROUPS = ("training", "micro", "system", "extra")


def set_threads(n, torch, ember):
    """Give both libraries n threads: torch's intra-op pool, ember's NumPy BLAS pool (harness.set_threads)."""
    harness.set_threads(n, torch, ember)


def select(only, group):
    names = []
    for g in GROUPS:
        if group is not None and g != group:
            continue
        for name, r in ROWS.items():
            if r.group == g and (only is None or any(o.lower() in name.lower() for o in only)):
                names.append(name)
    return names


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", help="run rows whose name contains this text (repeatable)")
    p.add_argument("--group", choices=GROUPS, help="run one group of rows")
    p.add_argument("--json", help="save results to this file")
    p.add_argument("--quick", action="store_true", help="fewer rounds, shorter samples")
    p.add_argument("--threads", type=int, default=2, help="threads for each library (default 2)")
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    p.add_argument("--separate", action="store_true",
                   help="sample each library in an interpreter of its own (Note [Separate processes] in "
                        "bench/harness.py)")
    p.add_argument("--pinned-blas", action="store_true",
                   help="keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as the environment sets them (Note [BLAS kernel])")
    args = p.parse_args(argv)
    names = select(args.only, args.group)
    if args.list:
        for n in names:
            print(f"{ROWS[n].group:9s} {n}")
        return
    import numpy
    import torch

    import ember
    set_threads(args.threads, torch, ember)
    info = harness.machine_info(torch, numpy)
    info["load_start"] = os.getloadavg()[0]
    info["quick"] = args.quick
    info["processes"] = "separate" if args.separate else "one"
    timed = [n for n in names if ROWS[n].kind != "measure"]
    workers = [harness.Worker("ember"), harness.Worker("torch")] if args.separate and timed else None
    print(f"# ember ({info['ember_commit']}) vs torch {info['torch']}; {info['cpu']}, {info['cores']} cores, "
          f"{args.threads} threads each; NumPy's BLAS {info['blas']}; {info['date']}; load {os.getloadavg()}",
          flush=True)
    results = []
    try:
        for name in names:
            r = ROWS[name]
            t0 = time.perf_counter()
            res = harness.run_row(r, (ember, torch), quick=args.quick, workers=workers)
            results.append(res)
            print(report.line(res) + f"  [{time.perf_counter() - t0:.0f}s, load {res['load'][1]:.1f}]", flush=True)
    finally:
        for w in workers or ():
            w.close()
    info["load_end"] = os.getloadavg()[0]
    print()
    print(report.describe(info))
    print()
    print(report.render([{"machine": info, "rows": results}]))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rows": results}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
