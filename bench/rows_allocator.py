"""Rows of the caching allocator (Note [Caching allocator] in ember/_backend/allocator.py): each
workload for ember with the pool on (its default threshold: 32 MiB where ember tunes glibc) and
off, in the same run, and each against torch; where the choice of threshold matters, also with
the pool taking every buffer from 256 KiB ("from 256K").

ember's step sets the pool's switch (and threshold) for its own duration and restores them;
torch's step is the same in every variant. Compare the variants' ember figures (or their ratios
to torch). The glibc tuning of Note [Freed memory] (ember/_backend/__init__.py) is active in all.
"""
import os
import subprocess
import sys

import numpy as np

from bench import harness, training
from bench.harness import row

HERE = os.path.dirname(os.path.abspath(__file__))


MODES = {"on": (True, None), "off": (False, None), "from 256K": (True, 256 << 10)}


def _switched(lib, mode, step):
    """step, run with ember's caching allocator on (default threshold), off, or on from 256 KiB."""
    if lib.__name__ != "ember":
        return step
    cpu = lib.cpu
    on, threshold = MODES[mode]

    def run():
        prev = cpu.is_allocator_enabled()
        prev_threshold = cpu.memory_stats()["threshold_bytes"]
        cpu.set_allocator_enabled(on)
        if threshold is not None:
            cpu.set_allocator_settings(threshold=threshold)
        try:
            return step()
        finally:
            cpu.set_allocator_enabled(prev)
            cpu.set_allocator_settings(threshold=prev_threshold)
    return run


def _variants(name, group, kind, unit, build, modes=("on", "off"), **kw):
    """Register `name [pool <mode>]` rows of one builder."""
    for mode in modes:
        def b(lib, _mode=mode, **args):
            built = build(lib, **args)
            if kind == "throughput":
                step, items = built
                return _switched(lib, _mode, step), items
            return _switched(lib, _mode, built)
        b.__name__ = build.__name__
        row(f"{name} [pool {mode}]", group, kind, unit, **kw)(b)


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


ALL = ("on", "off", "from 256K")
_variants("(x*y+z).relu(), 10M float32", "extra", "time", "ms", pointwise_10m, rounds=5, smoke={"n": 1000})
_variants("matmul loop 4x 1024x1024 float32", "extra", "throughput", "GFLOP/s", matmul_loop, ALL, rounds=5,
          smoke={"n": 16})
_variants("ResNet-8+BN train, 32x32, batch 32", "extra", "throughput", "images/s", training.resnet, ALL, rounds=5,
          min_time=1.0, smoke={"batch": 2})
_variants("ResNet-8+BN train, 32x32, batch 128", "extra", "throughput", "images/s", resnet_128, ALL, rounds=3,
          min_time=2.0, smoke={"batch": 2}, note="working set above glibc's 64 MB trim threshold")
_variants("MLP 784-512-512-10 SGD step, batch 128", "extra", "throughput", "samples/s", training.mlp, ALL, rounds=7,
          min_time=0.5, smoke={"batch": 8})


# ---- peak memory: a fresh process per sample, the pool switched by the environment ----------------

def _memory_probe(name, model, mode, smoke):
    if smoke:  # minimal mode: the probe's code in this process, on the small MLP
        from bench import probe
        return probe.memory_mb(name, "mlp")
    threads = str(harness.THREADS)
    on, threshold = MODES[mode]
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, BENCH_THREADS=threads,
               EMBER_CACHING_ALLOCATOR="1" if on else "0")
    env.pop("EMBER_ALLOCATOR_THRESHOLD", None)
    if threshold is not None:
        env["EMBER_ALLOCATOR_THRESHOLD"] = str(threshold)
    out = subprocess.run([sys.executable, os.path.join(HERE, "probe.py"), "memory", name, model], capture_output=True,
                         text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"probe memory {name} {model} failed: {out.stderr.strip()[-500:]}")
    return float(out.stdout.split()[-1])


for _mode in ALL:
    row(f"peak memory of one ResNet training step [pool {_mode}]", "extra", "measure", "MB",
        rounds=3, note="VmHWM during the step minus VmRSS before it, own process (see bench/probe.py)")(
        lambda name, smoke, _mode=_mode: _memory_probe(name, "resnet", _mode, smoke))
