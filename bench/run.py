"""Side-by-side benchmarks: the same code on ember and on torch, in one run.

    python bench/run.py                 # every row
    python bench/run.py --only matmul   # rows whose name contains 'matmul'
    python bench/run.py --json out.json # also save the results

Each row is a function `row(lib) -> (step, per_step_items)` building its inputs with `lib`
(torch or ember) and returning a zero-argument callable. The runner alternates the two
libraries over several rounds after a warm-up, takes medians, and reports the ratio
ember/torch of time per step (lower is better for ember; 1.0 means parity).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

ROWS = {}


def row(name, unit="us/step", rounds=7, min_time=0.2):
    """Register a benchmark row; `unit` is how the per-step time is shown."""
    def deco(fn):
        ROWS[name] = (fn, unit, rounds, min_time)
        return fn
    return deco


# ---- micro rows ------------------------------------------------------------------------

@row("tiny add (no grad)")
def tiny_add(lib):
    x = lib.ones(10)
    y = lib.ones(10)
    return lambda: x + y


@row("tiny add (requires_grad)")
def tiny_add_grad(lib):
    x = lib.ones(10, requires_grad=True)
    y = lib.ones(10)
    return lambda: x + y


@row("tiny forward+backward")
def tiny_fwd_bwd(lib):
    x = lib.ones(10, requires_grad=True)
    w = lib.ones(10, requires_grad=True)

    def step():
        ((x * w).sum()).backward()
    return step


def _param_1m(lib):
    rng = np.random.default_rng(0)
    p = lib.nn.Parameter(lib.from_numpy(rng.standard_normal(1 << 20, dtype=np.float32)))
    p.grad = lib.from_numpy(rng.standard_normal(1 << 20, dtype=np.float32))
    return p


def _optim_row(make):
    def build(lib):
        p = _param_1m(lib)
        opt = make(lib, p)
        return opt.step
    return build


row("adam step 1M float32", unit="ms/step", rounds=5)(_optim_row(lambda lib, p: lib.optim.Adam([p], lr=1e-3)))
row("sgd momentum step 1M float32", unit="ms/step", rounds=5)(
    _optim_row(lambda lib, p: lib.optim.SGD([p], lr=1e-3, momentum=0.9)))
row("rmsprop step 1M float32", unit="ms/step", rounds=5)(
    _optim_row(lambda lib, p: lib.optim.RMSprop([p], lr=1e-3)))


@row("lerp_ 1M float32", unit="ms/step", rounds=5)
def lerp_1m(lib):
    rng = np.random.default_rng(0)
    a = lib.from_numpy(rng.standard_normal(1 << 20, dtype=np.float32))
    b = lib.from_numpy(rng.standard_normal(1 << 20, dtype=np.float32))
    return lambda: a.lerp_(b, 0.1)


def _activation_row(fn, shape, backward):
    def build(lib):
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32)).requires_grad_(backward)
        F = lib.nn.functional
        if not backward:
            return lambda: fn(F, x)
        g = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))

        def step():
            fn(F, x).backward(g)
            x.grad = None
        return step
    return build


for _name, _fn in (("gelu", lambda F, x: F.gelu(x)), ("gelu tanh", lambda F, x: F.gelu(x, approximate="tanh")),
                   ("sigmoid", lambda F, x: F.sigmoid(x)), ("silu", lambda F, x: F.silu(x)),
                   ("softplus", lambda F, x: F.softplus(x)), ("relu", lambda F, x: F.relu(x)),
                   ("softmax", lambda F, x: F.softmax(x, -1)), ("log_softmax", lambda F, x: F.log_softmax(x, -1))):
    row(f"{_name} 256x1024", unit="ms/step", rounds=5)(_activation_row(_fn, (256, 1024), False))
for _name, _fn in (("relu", lambda F, x: F.relu(x)), ("softmax", lambda F, x: F.softmax(x, -1)),
                   ("log_softmax", lambda F, x: F.log_softmax(x, -1))):
    row(f"{_name} fwd+bwd 256x1024", unit="ms/step", rounds=5)(_activation_row(_fn, (256, 1024), True))
    row(f"{_name} fwd+bwd 16", rounds=5)(_activation_row(_fn, (16,), True))


@row("matmul 1024x1024 (float32)", unit="ms/step", rounds=5)
def matmul(lib):
    rng = np.random.default_rng(0)
    a = lib.from_numpy(rng.standard_normal((1024, 1024), dtype=np.float32))
    b = lib.from_numpy(rng.standard_normal((1024, 1024), dtype=np.float32))
    return lambda: a @ b


def _time(step, min_time):
    """Seconds per call: repeat until at least min_time has passed."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
        n = max(n * 2, int(n * min_time / max(dt, 1e-9)))


def run(names, libs):
    results = []
    for name in names:
        fn, unit, rounds, min_time = ROWS[name]
        steps = {lib.__name__: fn(lib) for lib in libs}
        for step in steps.values():  # warm-up
            _time(step, min_time / 4)
        samples = {k: [] for k in steps}
        for _ in range(rounds):
            for k, step in steps.items():  # alternate implementations
                samples[k].append(_time(step, min_time))
        med = {k: statistics.median(v) for k, v in samples.items()}
        results.append({"name": name, "unit": unit, "seconds": med,
                        "ratio": med.get("ember", float("nan")) / med.get("torch", float("nan"))})
        _print_row(results[-1])
    return results


def _scale(unit):
    return {"us/step": 1e6, "ms/step": 1e3, "s/step": 1.0}[unit]


def _print_row(r):
    s = _scale(r["unit"])
    e = r["seconds"].get("ember")
    t = r["seconds"].get("torch")
    print(f"| {r['name']:<40} | {e * s:10.2f} | {t * s:10.2f} | {r['unit']:<8} | {r['ratio']:6.2f} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="run rows whose name contains this text")
    p.add_argument("--json", help="save results to this file")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    args = p.parse_args()
    import torch
    import ember
    torch.set_num_threads(args.threads)
    names = [n for n in ROWS if args.only is None or args.only in n]
    print(f"# ember vs torch {torch.__version__} on {platform.machine()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"| {'row':<40} | {'ember':>10} | {'torch':>10} | {'unit':<8} | {'e/t':>6} |")
    print(f"|{'-' * 42}|{'-' * 12}|{'-' * 12}|{'-' * 10}|{'-' * 8}|")
    results = run(names, (ember, torch))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
                       "cores": os.cpu_count(), "torch": torch.__version__, "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
