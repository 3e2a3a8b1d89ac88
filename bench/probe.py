"""Measurements that need a fresh interpreter, one library per process (so the other is not loaded).

    python bench/probe.py import ember            # seconds for `import ember`
    python bench/probe.py memory torch resnet     # MB of peak RSS added by one training step

Each prints one number. The memory probe builds the model, its data and optimizer, reads the
resident size (the baseline: interpreter + library + model + batch), runs one training step and
prints the peak resident size during the step minus the baseline.

Note [peak RSS of a step]: ru_maxrss cannot be used as is. It is the high-water mark of the
whole process life, so the import's transient peak hides a smaller step; and Linux carries the
parent's high-water mark across fork+exec, so a probe started by a big parent reports the
parent's size. On Linux the probe instead resets the high-water mark (writing 5 to
/proc/self/clear_refs) after construction and reads VmHWM from /proc/self/status after the
step; elsewhere it falls back to ru_maxrss. Before the baseline each library runs one step of the same model
on a batch of 2: what a first step loads once for the process (torch's oneDNN primitives, ember[jit]'s
numba and compiled kernels, ~120 MB of numba/LLVM resident) is then library, not step, as torch's compiled
kernels are loaded by its import.
"""
import gc
import importlib
import os
import resource
import sys
import time


def import_seconds(name):
    t0 = time.perf_counter()
    importlib.import_module(name)
    return time.perf_counter() - t0


def _status_mb(field):
    """A field of /proc/self/status (VmRSS, VmHWM) in MB, or None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _reset_peak():
    """Reset the resident high-water mark to the current size (Linux >= 4.0); False if impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


def memory_mb(name, model):
    """Peak resident MB added by one training step of `model` (see Note [peak RSS of a step])."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lib = importlib.import_module(name)
    from bench import training
    warm, _ = training.BUILDERS[model](lib, batch=2)
    warm()  # see Note [peak RSS of a step]: what a first step loads once is loaded before the baseline
    del warm
    step, _ = training.BUILDERS[model](lib)
    gc.collect()
    if _reset_peak() and _status_mb("VmHWM") is not None:
        base = _status_mb("VmRSS")
        step()
        return _status_mb("VmHWM") - base
    base = _maxrss_mb()
    step()
    return _maxrss_mb() - base


def main(argv):
    what, name = argv[0], argv[1]
    if what == "import":
        print(f"{import_seconds(name):.6f}")
    elif what == "memory":
        importlib.import_module(name).set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
        print(f"{memory_mb(name, argv[2]):.3f}")
    else:
        raise SystemExit(f"unknown probe {what!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
