"""The benchmark harness: the row registry, alternating timing, medians, ratios, the table.

A row is one of three kinds:

- "throughput": `build(lib) -> (step, items)`; reported as items/s for each library and the
  throughput ratio ember/torch (higher is better for ember; 1.0 is parity).
- "time": `build(lib) -> step`; reported as time per step and the time ratio ember/torch
  (lower is better for ember).
- "measure": `measure(name, smoke) -> value` takes the library's *name* and returns one sample
  (seconds of an import in a fresh interpreter, megabytes of memory or disk); reported as the
  ratio ember/torch (lower is better for ember).

Timed rows are built once per library, warmed up, then sampled alternately (ember, torch,
torch, ember, ...) so load changes on the machine hit both; each sample repeats the step until
`min_time` has passed. The reported figure is the median of the samples. With --separate, bench/run.py
samples each library in a process of its own (Note [Separate processes]).
"""
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field

ROWS = {}
THREADS = 2  # threads given to each library (run.py --threads); passed on to the probes


@dataclass
class Row:
    name: str
    group: str
    kind: str                        # "throughput" | "time" | "measure"
    fn: object                       # build(lib) or measure(name, smoke)
    unit: str                        # "images/s", "us", "ms", "s", "MB", ...
    target: tuple = None             # ("<=", 2.0) or (">=", 0.8) on the ember/torch ratio
    rounds: int = 5
    min_time: float = 0.25
    note: str = ""
    smoke: dict = field(default_factory=dict)  # build kwargs for the smoke test (smaller inputs)


def row(name, group, kind, unit, target=None, rounds=5, min_time=0.25, note="", smoke=None):
    """Register a row (decorator)."""
    def deco(fn):
        ROWS[name] = Row(name, group, kind, fn, unit, target, rounds, min_time, note, smoke or {})
        return fn
    return deco


_SCALE = {"us": 1e6, "ms": 1e3, "s": 1.0}


def higher_is_better(r):
    return r.kind == "throughput"


# ---- timing ------------------------------------------------------------------------------------

def time_step(step, min_time):
    """Seconds per call of `step`: repeat until at least `min_time` has passed."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
        n = max(n * 2, int(n * min_time * 1.2 / max(dt, 1e-9)))


def set_threads(n, *libs):
    """n threads for each library's intra-op work (torch's pool, ember's splits) and for NumPy's own OpenBLAS
    pool (threadpoolctl, when installed; not torch's libgomp); THREADS for the fresh-interpreter probes."""
    global THREADS
    for lib in libs:
        lib.set_num_threads(n)
    THREADS = n
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return
    for controller in ThreadpoolController().lib_controllers:
        if "numpy" in controller.filepath:
            controller.set_num_threads(n)


def timed_row(name):
    """The first registered timed row (not a "measure" row) whose name contains `name`, in any case; exits with a
    message when none does. The caller imports the rows modules it wants searched."""
    matches = [n for n in ROWS if name.lower() in n.lower() and ROWS[n].kind != "measure"]
    if not matches:
        raise SystemExit(f"no timed row matches {name!r}")
    return ROWS[matches[0]]


def _unpack(r, built):
    if r.kind == "throughput":
        return built
    return built, 1


def _order(libs, i):
    """Alternate who goes first each round (ABBA...), so a drift in load is shared."""
    return libs if i % 2 == 0 else libs[::-1]


def run_timed(r, libs, rounds, min_time):
    """Median seconds per step for each library (dict by name), and the raw samples."""
    steps = {}
    items = None
    for lib in libs:
        step, items = _unpack(r, r.fn(lib))
        steps[lib.__name__] = step
    names = list(steps)
    for name in names:  # warm-up: first-call costs, allocator, caches
        time_step(steps[name], min_time / 3)
    samples = {name: [] for name in names}
    for i in range(rounds):
        for name in _order(names, i):
            gc.collect()
            time.sleep(0.2)  # let the other library's spinning worker threads go idle: NumPy's OpenBLAS spins 2^28 TSC
            # ticks after a call (~0.11 s at 2.4 GHz, Note [Parked BLAS workers]), torch's OpenMP threads a few ms
            samples[name].append(time_step(steps[name], min_time))
    return {n: statistics.median(s) for n, s in samples.items()}, samples, items


# Note [Separate processes]: with both libraries in one process, each runs beside the other's state: the heap
# glibc's malloc has grown and tuned (ember's import sets its thresholds, Note [Freed memory] in
# ember/_backend/__init__.py), loaded libraries, idle threads. `--separate` runs each library in an interpreter of
# its own (bench/worker.py, started once per run), the parent alternating the samples between the two as
# run_timed does, so the load's drift still hits both. Measured 2026-11-29 (2 threads, bench rows, images/s of
# torch): AlexNet-style 488-511 in one process (5 runs; 515-565 in 2 runs with ember's malloc tuning off,
# EMBER_KEEP_FREED_MEMORY=0, so not that) against 397-423 in its own (4 runs); ResNet-8 538-562 against 517-586;
# GNMT 9,326-11,285 against 8,675-10,782 tokens/s. The AlexNet difference is page faults: torch's step alone took
# 3,507-4,181 minor faults and 71.9-76.9 ms (script, 2 runs); after ember had run its AlexNet steps in the same
# process 0-5 faults and 61.4-64.7 ms (12-18 faults, 58.9-64.0 ms with ember's malloc tuning off); alone with glibc's
# thresholds fixed by the environment, 0-12 faults and 61.7-69.0 ms. Likely glibc's dynamic mmap threshold, which a
# freed mapped block raises for the whole process: after ember's frees, torch's large tensors come from the heap
# instead of freshly mapped (and faulted) memory. A torch user's process does not get that from ember.
# torch alone in a script, with and without glibc's thresholds fixed as ember fixes them
# (MALLOC_MMAP_THRESHOLD_=32 MB, MALLOC_TRIM_THRESHOLD_=64 MB), order alternated, 4 process pairs, ms a step:
# ResNet-8 50.4-56.5 vs 63.0-77.6 (4 of 4), AlexNet 50.8-64.4 vs 62.1-82.1 (3 of 4), GNMT 34.9-54.1 vs 36.1-59.1
# (2 of 4). The method, both in one process, stays the default; the README gives both.
class Worker:
    """A library in its own interpreter (bench/worker.py), asked for builds and samples one at a time."""

    def __init__(self, name):
        self.__name__ = name  # read like a library module's name by _order's callers
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.worker", name], cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.__name__} worker exited (code {self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.__name__}: {reply['error']}")
        return reply

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.write('{"cmd": "exit"}\n')
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def run_timed_apart(workers, build, rounds, min_time):
    """run_timed with each library in its Worker: build (a dict: {"row": name} or {"model", "batch"}) in each,
    then the samples alternated as run_timed alternates them."""
    items = None
    for w in workers:
        items = w.ask(cmd="build", threads=THREADS, warm=min_time / 3, **build)["items"]
    samples = {w.__name__: [] for w in workers}
    for i in range(rounds):
        for w in _order(list(workers), i):
            time.sleep(0.2)  # the other process's spinning threads share these cores too
            samples[w.__name__].append(w.ask(cmd="sample", min_time=min_time)["seconds"])
    return {n: statistics.median(s) for n, s in samples.items()}, samples, items


def run_measure(r, names, rounds, smoke=False):
    samples = {name: [] for name in names}
    for i in range(rounds):
        for name in _order(names, i):
            samples[name].append(r.fn(name, smoke))
    return {n: statistics.median(s) for n, s in samples.items()}, samples


def evaluate(r, med, items):
    """The displayed figures and the ember/torch ratio for a row."""
    e, t = med.get("ember"), med.get("torch")
    if r.kind == "throughput":
        shown = {k: items / v for k, v in med.items()}
        ratio = t / e if e and t else None            # = ember items/s over torch items/s
    elif r.kind == "time":
        shown = {k: v * _SCALE[r.unit] for k, v in med.items()}
        ratio = e / t if e and t else None
    else:
        shown = dict(med)
        ratio = e / t if e and t else None
    return shown, ratio


def meets(target, ratio):
    if target is None or ratio is None:
        return None
    op, value = target
    return {"<=": ratio <= value, "<": ratio < value, ">=": ratio >= value, ">": ratio > value}[op]


def run_row(r, libs, quick=False, workers=None):
    """Run one row on the given library modules, its timed samples in `workers` when given (Note [Separate
    processes]); never raises (errors are recorded)."""
    rounds = max(3, r.rounds // 2) if quick else r.rounds
    min_time = r.min_time * (0.4 if quick else 1.0)
    load_before = os.getloadavg()[0]
    result = {"name": r.name, "group": r.group, "kind": r.kind, "unit": r.unit,
              "better": "higher" if higher_is_better(r) else "lower",
              "target": list(r.target) if r.target else None, "note": r.note}
    try:
        if r.kind == "measure":
            med, samples = run_measure(r, [lib.__name__ for lib in libs], rounds)
            items = None
        elif workers:
            med, samples, items = run_timed_apart(workers, {"row": r.name}, rounds, min_time)
        else:
            med, samples, items = run_timed(r, libs, rounds, min_time)
        shown, ratio = evaluate(r, med, items)
        result.update(seconds=med if r.kind != "measure" else None, items_per_step=items, value=shown,
                      ratio=ratio, meets_target=meets(r.target, ratio), samples=samples)
    except Exception as exc:  # a row whose layer has not landed yet must not stop the suite
        result.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=4))
    result["load"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return result


def smoke_row(r, libs):
    """Build the row (with its smaller smoke inputs) and run one step on each library, for tests;
    measure rows run in their minimal mode. Returns nothing, raises on error."""
    if r.kind == "measure":
        for lib in libs:
            value = r.fn(lib.__name__, True)
            assert value >= 0, (r.name, lib.__name__, value)
        return
    for lib in libs:
        step, items = _unpack(r, r.fn(lib, **r.smoke))
        step()
        assert items > 0


# ---- machine ----------------------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)), timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info(torch, numpy):
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cpu": cpu_model(), "cores": os.cpu_count(),
            "machine": platform.machine(), "python": platform.python_version(), "numpy": numpy.__version__,
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "ember_commit": git_commit(),
            "blas": numpy_blas(), "blas_pins": {v: os.environ[v] for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                                                if v in os.environ}, "jit": jit_kernels()}


def jit_kernels():
    """Whether ember's compiled kernels run (Note [JIT kernels]): numba's version, or why not."""
    from ember._backend import jit
    if not jit.ENABLED:
        return "off (EMBER_JIT=0)"
    try:
        import numba
    except ImportError:
        return "off (numba not installed)"
    return f"numba {numba.__version__}"


def numpy_blas():
    """NumPy's BLAS library and the kernel it runs (OpenBLAS's 'architecture'), via threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl missing)"
    for lib in threadpool_info():
        if lib.get("user_api") == "blas" and "numpy" in lib.get("filepath", ""):
            return f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture')}"
    return "unknown"
