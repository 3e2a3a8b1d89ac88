"""The benchmark rows of the "Performance" issue: training throughput, micro rows, system rows.

Every builder takes the library module and builds its inputs from NumPy with a fixed seed, so
ember and torch see the same numbers. Targets are on the ember/torch ratio (see harness.py).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from bench import probe, training
from bench import harness
from bench.harness import row

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- training throughput: the six workloads of the PyTorch paper's table 1 ---------------------

row("AlexNet-style train, 64x64, batch 32", "training", "throughput", "images/s", (">=", 0.5), min_time=1.0, smoke={"batch": 2},
    note="5 convs + 3 max-pools + 3 linear (dropout), SGD momentum")(training.alexnet)
row("VGG-style+BN train, 32x32, batch 32", "training", "throughput", "images/s", (">=", 0.5), min_time=1.0, smoke={"batch": 2},
    note="6 conv-BN-ReLU + 4 max-pools, SGD momentum")(training.vgg)
row("ResNet-8+BN train, 32x32, batch 32", "training", "throughput", "images/s", (">=", 0.5), min_time=1.0, smoke={"batch": 2},
    note="CIFAR ResNet, 3 BasicBlocks at 16/32/64 channels, SGD momentum")(training.resnet)
row("MobileNetV2-style train, 32x32, batch 32", "training", "throughput", "images/s", (">=", 1.0), min_time=1.0, smoke={"batch": 2},
    note="width 0.5, 8 inverted residual blocks (depthwise 3x3, ReLU6), SGD momentum")(training.mobilenet_v2)
row("GNMT-style LSTM+attention train, batch 32", "training", "throughput", "tokens/s", (">=", 0.8), min_time=1.0, smoke={"batch": 2},
    note="16 source + 16 target tokens, vocab 2000, hidden 128, Adam; target tokens counted")(training.gnmt)
row("NCF (NeuMF) train, batch 1024", "training", "throughput", "samples/s", (">=", 0.8), min_time=1.0, smoke={"batch": 16},
    note="MovieLens-1M sizes, GMF 32 + MLP 128-64-32, BCE-with-logits, Adam")(training.ncf)


# ---- micro rows --------------------------------------------------------------------------------

@row("tiny add (no grad)", "micro", "time", "us", ("<=", 2.0), rounds=7)
def tiny_add(lib):
    x = lib.ones(10)
    y = lib.ones(10)
    return lambda: x + y


@row("tiny add (requires_grad)", "micro", "time", "us", ("<=", 3.0), rounds=7)
def tiny_add_grad(lib):
    x = lib.ones(10, requires_grad=True)
    y = lib.ones(10)
    return lambda: x + y


@row("tiny forward+backward", "micro", "time", "us", ("<=", 3.0), rounds=7,
     note="((x * w).sum()).backward() on 10 elements")
def tiny_fwd_bwd(lib):
    x = lib.ones(10, requires_grad=True)
    w = lib.ones(10, requires_grad=True)

    def step():
        ((x * w).sum()).backward()
    return step


@row("matmul 1024x1024 float32", "micro", "throughput", "GFLOP/s", smoke={"n": 16})
def matmul(lib, n=1024):
    rng = np.random.default_rng(0)
    a = lib.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    b = lib.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    return (lambda: a @ b), 2 * n ** 3 / 1e9


def _layer_fwd_bwd(make_layer, shape, make_input=None):
    """Forward + backward of one layer on a random input that requires grad, random upstream grad."""
    def build(lib, shape=shape):
        from bench.models import share_weights
        rng = np.random.default_rng(0)
        layer = make_layer(lib)
        share_weights(lib, layer, build.__name__)
        x = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32)).requires_grad_(True)
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        g = lib.from_numpy(rng.standard_normal(tuple(out.shape), dtype=np.float32))

        def step():
            y = layer(x)
            y = y[0] if isinstance(y, tuple) else y
            y.backward(g)
            x.grad = None
            layer.zero_grad()
        return step
    return build


def _named(name, fn):
    fn.__name__ = name
    return fn


SMALL_IMAGES = {"shape": (2, 64, 8, 8)}
row("Conv2d(64,64,3,pad 1) fwd+bwd, 32x64x32x32", "micro", "time", "ms", rounds=5, min_time=0.5, smoke=SMALL_IMAGES)(
    _named("conv", _layer_fwd_bwd(lambda lib: lib.nn.Conv2d(64, 64, 3, padding=1), (32, 64, 32, 32))))
row("MaxPool2d(2) fwd+bwd, 32x64x32x32", "micro", "time", "ms", rounds=5, smoke=SMALL_IMAGES)(
    _named("maxpool", _layer_fwd_bwd(lambda lib: lib.nn.MaxPool2d(2), (32, 64, 32, 32))))
row("BatchNorm2d(64) train fwd+bwd, 32x64x32x32", "micro", "time", "ms", rounds=5, smoke=SMALL_IMAGES)(
    _named("batchnorm", _layer_fwd_bwd(lambda lib: lib.nn.BatchNorm2d(64), (32, 64, 32, 32))))
row("LSTM(256,256) fwd+bwd, seq 32, batch 32", "micro", "time", "ms", rounds=5, min_time=0.5,
    smoke={"shape": (3, 2, 256)})(
    _named("lstm", _layer_fwd_bwd(lambda lib: lib.nn.LSTM(256, 256), (32, 32, 256))))
row("GRU(256,256) fwd+bwd, seq 32, batch 32", "micro", "time", "ms", rounds=5, min_time=0.5,
    smoke={"shape": (3, 2, 256)})(
    _named("gru", _layer_fwd_bwd(lambda lib: lib.nn.GRU(256, 256), (32, 32, 256))))


row("LayerNorm(1024) fwd+bwd, 256x1024", "micro", "time", "ms", rounds=5, smoke={"shape": (4, 1024)})(
    _named("layernorm", _layer_fwd_bwd(lambda lib: lib.nn.LayerNorm(1024), (256, 1024))))
row("GELU fwd+bwd, 256x1024", "micro", "time", "ms", rounds=5, smoke={"shape": (4, 1024)})(
    _named("gelu", _layer_fwd_bwd(lambda lib: lib.nn.GELU(), (256, 1024))))
row("GELU(tanh) fwd+bwd, 256x1024", "micro", "time", "ms", rounds=5, smoke={"shape": (4, 1024)})(
    _named("gelu_tanh", _layer_fwd_bwd(lambda lib: lib.nn.GELU(approximate="tanh"), (256, 1024))))


@row("cross_entropy fwd+bwd, 1024x1000 logits", "micro", "time", "ms", rounds=5, smoke={"n": 8})
def cross_entropy(lib, n=1024):
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((n, 1000), dtype=np.float32)).requires_grad_(True)
    y = lib.from_numpy(rng.integers(0, 1000, n))
    F = lib.nn.functional

    def step():
        F.cross_entropy(x, y).backward()
        x.grad = None
    return step


@row("(x*y+z).relu(), 10M float32", "micro", "time", "ms", rounds=5, smoke={"n": 1000})
def pointwise_10m(lib, n=10_000_000):
    rng = np.random.default_rng(0)
    x, y, z = (lib.from_numpy(rng.standard_normal(n, dtype=np.float32)) for _ in range(3))
    return lambda: (x * y + z).relu()


row("MLP 784-512-512-10 SGD step, batch 128", "micro", "throughput", "samples/s", (">=", 0.8), rounds=7,
    min_time=0.5, smoke={"batch": 8})(training.mlp)


@row("Adam step, 1M-element parameter", "micro", "time", "ms", rounds=5, smoke={"n": 1000})
def adam_1m(lib, n=1 << 20):
    rng = np.random.default_rng(0)
    p = lib.nn.Parameter(lib.from_numpy(rng.standard_normal(n, dtype=np.float32)))
    p.grad = lib.from_numpy(rng.standard_normal(n, dtype=np.float32))
    return lib.optim.Adam([p], lr=1e-3).step


@row("DataLoader epoch, TensorDataset, batch 64, shuffle", "micro", "throughput", "batches/s", rounds=5,
     min_time=0.5, note="6400 samples of 3x32x32 float32 + int64 label, num_workers=0", smoke={"n": 128})
def dataloader(lib, n=6400):
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((n, 3, 32, 32), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, n))
    data = lib.utils.data
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=0)

    def epoch():
        for xb, yb in loader:
            pass
    return epoch, len(loader)


# ---- system rows: fresh interpreters, the disk --------------------------------------------------

def _probe(*args):
    threads = str(harness.THREADS)  # the same thread count as in this process, for both libraries
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, BENCH_THREADS=threads)
    # Note [bytecode cache]: an installed package imports from cached bytecode (pip writes torch's
    # .pyc files at install). With PYTHONDONTWRITEBYTECODE set (as in this project's shared
    # checkout) every import of ember would compile its ~180 modules from source, about 0.4 s that
    # an installed ember does not pay. The probes keep bytecode for both libraries in a private
    # cache tree (PYTHONPYCACHEPREFIX), filled by an untimed first import, and leave the checkout alone.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    out = subprocess.run([sys.executable, os.path.join(HERE, "probe.py"), *args], capture_output=True, text=True,
                         timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"probe {args} failed: {out.stderr.strip()[-500:]}")
    return float(out.stdout.split()[-1])


PYCACHE = os.path.join(tempfile.gettempdir(), f"ember-bench-pycache-{os.getuid() if hasattr(os, 'getuid') else 0}")
_WARM = set()


@row("import time (fresh interpreter)", "system", "measure", "s", ("<=", 0.2), rounds=7,
     note="`import X` timed inside a new python process, bytecode cached; target: >= 5x faster than torch")
def import_time(name, smoke):
    if smoke:  # minimal mode: the probe's code in this process (the module is already imported)
        return probe.import_seconds(name)
    if name not in _WARM:  # fill the bytecode cache (Note [bytecode cache]); not a sample
        _probe("import", name)
        _WARM.add(name)
    return _probe("import", name)


@row("peak memory of one ResNet training step", "system", "measure", "MB", ("<=", 1.5), rounds=3,
     note="ru_maxrss after the step minus after import + model/optimizer/batch construction, own process")
def peak_memory(name, smoke):
    if smoke:  # minimal mode: the probe's code in this process, on the small MLP
        return probe.memory_mb(name, "mlp")
    return _probe("memory", name, "resnet")


def _du_mb(path):
    """Disk usage of a directory tree, as `du -s` counts it (allocated blocks), in MB."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            total += st.st_blocks * 512
    return total / 2 ** 20


def _package_dir(name):
    import importlib.util
    spec = importlib.util.find_spec(name)
    return list(spec.submodule_search_locations)[0]


@row("installed size (package directory)", "system", "measure", "MB", ("<", 0.1), rounds=1,
     note="du of site-packages/torch vs the ember package directory (dependencies not counted)")
def installed_size(name, smoke):
    return _du_mb(_package_dir(name))
