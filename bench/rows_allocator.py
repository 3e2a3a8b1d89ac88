"""Rows of the caching allocator (Note [Caching allocator] in ember/_backend/allocator.py): each
workload twice for ember, with the pool on and off, in the same run, and each against torch.

ember's step sets the pool's switch for its own duration (off also means no cached blocks are
used) and restores it; torch's step is the same in both rows. Compare the "pool on" and "pool off"
rows' ember figures (or their ratios to torch, which share the torch denominator's noise).
The glibc tuning of Note [Freed memory] (ember/_backend/__init__.py) is active in both.
"""
import os
import subprocess
import sys

import numpy as np

from bench import harness, training
from bench.harness import row

HERE = os.path.dirname(os.path.abspath(__file__))


def _switched(lib, on, step):
    """step, run with ember's caching allocator on or off (torch: step itself)."""
    if lib.__name__ != "ember":
        return step
    cpu = lib.cpu

    def run():
        prev = cpu.is_allocator_enabled()
        cpu.set_allocator_enabled(on)
        try:
            return step()
        finally:
            cpu.set_allocator_enabled(prev)
    return run


def _both(name, group, kind, unit, build, **kw):
    """Register `name [pool on]` and `name [pool off]` rows of one builder."""
    for on in (True, False):
        def b(lib, _on=on, **args):
            built = build(lib, **args)
            if kind == "throughput":
                step, items = built
                return _switched(lib, _on, step), items
            return _switched(lib, _on, built)
        b.__name__ = build.__name__
        row(f"{name} [pool {'on' if on else 'off'}]", group, kind, unit, **kw)(b)


def pointwise_10m(lib, n=10_000_000):
    """Three 40 MB results per step: above glibc's mmap threshold (32 MB), fresh pages every call."""
    rng = np.random.default_rng(0)
    x, y, z = (lib.from_numpy(rng.standard_normal(n, dtype=np.float32)) for _ in range(3))
    return lambda: (x * y + z).relu()


def matmul_loop(lib, n=1024, k=4):
    """k products of 1024x1024 float32 per step, each result dropped before the next (4 MB each)."""
    rng = np.random.default_rng(0)
    a = lib.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    b = lib.from_numpy(rng.standard_normal((n, n), dtype=np.float32))

    def step():
        for _ in range(k):
            c = a @ b
        return c
    return step, k * 2 * n ** 3 / 1e9


def resnet_128(lib, batch=128):
    return training.resnet(lib, batch=batch)


_both("(x*y+z).relu(), 10M float32", "extra", "time", "ms", pointwise_10m, rounds=5, smoke={"n": 1000})
_both("matmul loop 4x 1024x1024 float32", "extra", "throughput", "GFLOP/s", matmul_loop, rounds=5, smoke={"n": 16})
_both("ResNet-8+BN train, 32x32, batch 32", "extra", "throughput", "images/s", training.resnet, rounds=5, min_time=1.0,
      smoke={"batch": 2})
_both("ResNet-8+BN train, 32x32, batch 128", "extra", "throughput", "images/s", resnet_128, rounds=3, min_time=2.0,
      smoke={"batch": 2}, note="working set above glibc's 64 MB trim threshold")
_both("MLP 784-512-512-10 SGD step, batch 128", "extra", "throughput", "samples/s", training.mlp, rounds=7,
      min_time=0.5, smoke={"batch": 8})


# ---- peak memory: a fresh process per sample, the pool switched by the environment ----------------

def _memory_probe(name, model, on, smoke):
    if smoke:  # minimal mode: the probe's code in this process, on the small MLP
        from bench import probe
        return probe.memory_mb(name, "mlp")
    threads = str(harness.THREADS)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, BENCH_THREADS=threads,
               EMBER_CACHING_ALLOCATOR="1" if on else "0")
    out = subprocess.run([sys.executable, os.path.join(HERE, "probe.py"), "memory", name, model], capture_output=True,
                         text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"probe memory {name} {model} failed: {out.stderr.strip()[-500:]}")
    return float(out.stdout.split()[-1])


for _on in (True, False):
    row(f"peak memory of one ResNet training step [pool {'on' if _on else 'off'}]", "extra", "measure", "MB",
        rounds=3, note="VmHWM during the step minus VmRSS before it, own process (see bench/probe.py)")(
        lambda name, smoke, _on=_on: _memory_probe(name, "resnet", _on, smoke))
