"""Extra micro rows used while tuning kernels (optimizer steps, in-place lerp, activations).

They are not part of the issue's table, run with the rest by default, and are shown in their
own group ("extra"); `python bench/run.py --group extra` runs only these.
"""
import numpy as np

from bench.harness import row


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


row("sgd momentum step 1M float32", "extra", "time", "ms")(
    _optim_row(lambda lib, p: lib.optim.SGD([p], lr=1e-3, momentum=0.9)))
row("rmsprop step 1M float32", "extra", "time", "ms")(
    _optim_row(lambda lib, p: lib.optim.RMSprop([p], lr=1e-3)))


@row("lerp_ 1M float32", "extra", "time", "ms")
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
    row(f"{_name} 256x1024", "extra", "time", "ms")(_activation_row(_fn, (256, 1024), False))
for _name, _fn in (("relu", lambda F, x: F.relu(x)), ("softmax", lambda F, x: F.softmax(x, -1)),
                   ("log_softmax", lambda F, x: F.log_softmax(x, -1))):
    row(f"{_name} fwd+bwd 256x1024", "extra", "time", "ms")(_activation_row(_fn, (256, 1024), True))
    row(f"{_name} fwd+bwd 16", "extra", "time", "us")(_activation_row(_fn, (16,), True))


# ---- random streams (issue 16): torch's mt19937 streams, bit for bit ---------------------------

@row("randn 1M float32", "extra", "time", "ms", ("<=", 2.0), note="AVX2 Box-Muller fill: compiled with ember[jit] (numba), else emulated in NumPy")
def randn_1m(lib):
    lib.manual_seed(0)
    return lambda: lib.randn(1_000_000)


@row("randn 8 float32", "extra", "time", "us", ("<=", 3.0), note="scalar Box-Muller path with the cached normal")
def randn_8(lib):
    lib.manual_seed(0)
    return lambda: lib.randn(8)


@row("rand 1M float32", "extra", "time", "ms")
def rand_1m(lib):
    lib.manual_seed(0)
    return lambda: lib.rand(1_000_000)


@row("randperm 60000", "extra", "time", "ms", note="Fisher-Yates, one 32-bit draw per swap")
def randperm_60k(lib):
    lib.manual_seed(0)
    return lambda: lib.randperm(60_000)


@row("rand 8 float32", "extra", "time", "us", note="a few 24-bit uniforms")
def rand_8(lib):
    lib.manual_seed(0)
    return lambda: lib.rand(8)


@row("randint 1M", "extra", "time", "ms", note="32-bit draws modulo the range")
def randint_1m(lib):
    lib.manual_seed(0)
    return lambda: lib.randint(0, 1000, (1_000_000,))


def _inplace_sampler_row(call):
    def build(lib):
        lib.manual_seed(0)
        x = lib.empty(1_000_000)
        return lambda: call(x)
    return build


for _name, _call in (("normal_", lambda x: x.normal_(0.5, 2.0)), ("uniform_(-1, 1)", lambda x: x.uniform_(-1, 1)),
                     ("bernoulli_(0.5)", lambda x: x.bernoulli_(0.5)), ("exponential_", lambda x: x.exponential_())):
    row(f"{_name} 1M float32", "extra", "time", "ms")(_inplace_sampler_row(_call))


@row("dropout 1M float32", "extra", "time", "ms", note="bernoulli_ mask (torch: MKL's stream on Intel CPUs)")
def dropout_1m(lib):
    lib.manual_seed(0)
    x = lib.ones(1000, 1000)
    return lambda: lib.nn.functional.dropout(x, 0.5)
