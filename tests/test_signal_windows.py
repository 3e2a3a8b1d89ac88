"""Window functions against torch: torch.signal.windows.* and the top-level torch.*_window factories,
over lengths 0, 1, 2 and odd/even, sym/periodic, dtypes, their parameters, requires_grad (leaf or
graph, gradients of the signal windows under a random upstream gradient) and torch's errors."""
import numpy as np
import pytest
import torch

import ember

LENGTHS = (0, 1, 2, 5, 8)
SIGNAL = {
    "bartlett": {}, "blackman": {}, "cosine": {}, "hamming": {}, "hann": {}, "nuttall": {},
    "exponential": {"tau": 0.7}, "exponential-default": {}, "exponential-center": {"center": 1.5, "sym": False},
    "gaussian": {"std": 1.3}, "gaussian-default": {}, "kaiser": {"beta": 5.0}, "kaiser-default": {},
    "general_cosine": {"a": [0.46, 0.23, 0.31]}, "general_hamming": {"alpha": 0.6}, "general_hamming-default": {},
}
TOP = {"hann_window": (), "hamming_window": (), "hamming_window-alpha": (0.3,), "hamming_window-alpha-beta": (0.3, 0.2),
       "blackman_window": (), "bartlett_window": (), "kaiser_window": (), "kaiser_window-beta": (3.0,)}


def _same(t, e, atol):
    assert str(e.dtype) == str(t.dtype) and tuple(e.shape) == tuple(t.shape)
    assert e.requires_grad == t.requires_grad and e.is_leaf == t.is_leaf
    np.testing.assert_allclose(e.detach().float().numpy(), t.detach().float().numpy(), atol=atol, rtol=0)


@pytest.mark.parametrize("key", sorted(SIGNAL))
@pytest.mark.parametrize("sym", [True, False])
def test_signal_window(key, sym):
    name = key.split("-")[0]
    kw = dict(SIGNAL[key])
    if "sym" in kw and not sym:
        return  # the keyed case already pins sym
    kw.setdefault("sym", sym)
    for M in LENGTHS:
        for dt in ("float32", "float64"):
            t = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dt), **kw)
            e = getattr(ember.signal.windows, name)(M, dtype=getattr(ember, dt), **kw)
            _same(t, e, 1e-6 if dt == "float32" else 1e-12)


@pytest.mark.parametrize("key", sorted(SIGNAL))
def test_signal_window_grad(key):
    """requires_grad=True: torch's windows are graphs from their linspace (and coefficients)."""
    name = key.split("-")[0]
    kw = SIGNAL[key]
    for M in (1, 6):
        t = getattr(torch.signal.windows, name)(M, dtype=torch.float64, requires_grad=True, **kw)
        e = getattr(ember.signal.windows, name)(M, dtype=ember.float64, requires_grad=True, **kw)
        _same(t, e, 1e-12)
        if t.grad_fn is None:
            continue
        g = np.random.default_rng(M).standard_normal(M)
        t_leaves = _leaves(t.grad_fn)
        e_leaves = _leaves(e.grad_fn)
        assert len(t_leaves) == len(e_leaves)
        tg = torch.autograd.grad(t, t_leaves, torch.from_numpy(g))
        eg = ember.autograd.grad(e, e_leaves, ember.from_numpy(g))
        for a, b in zip(tg, eg):
            np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-10)


def _leaves(fn):
    """The leaf tensors of a graph, in a fixed order (by shape, then first value)."""
    seen, stack, out = set(), [fn], []
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        if hasattr(f, "variable"):
            out.append(f.variable)
        stack.extend(n for n, _ in f.next_functions)
    return sorted(out, key=lambda v: (tuple(v.shape), float(v.detach().reshape(-1)[0])))


@pytest.mark.parametrize("key", sorted(TOP))
def test_top_level_window(key):
    name = key.split("-")[0]
    extra = TOP[key]
    for M in LENGTHS:
        for periodic in (True, False):
            for dt in (None, "float32", "float64", "float16", "bfloat16"):
                kw_t = {} if dt is None else {"dtype": getattr(torch, dt)}
                kw_e = {} if dt is None else {"dtype": getattr(ember, dt)}
                t = getattr(torch, name)(M, periodic, *extra, **kw_t)
                e = getattr(ember, name)(M, periodic, *extra, **kw_e)
                atol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}.get(dt, 2e-6)
                _same(t, e, atol)
    t = getattr(torch, name)(5, requires_grad=True)
    e = getattr(ember, name)(5, requires_grad=True)
    _same(t, e, 2e-6)


ERRORS = {
    "signal-negative": lambda lib: lib.signal.windows.hann(-1),
    "signal-dtype": lambda lib: lib.signal.windows.cosine(4, dtype=lib.float16),
    "signal-int-dtype": lambda lib: lib.signal.windows.bartlett(4, dtype=lib.int64),
    "signal-layout": lambda lib: lib.signal.windows.gaussian(4, layout=lib.sparse_coo),
    "signal-tau": lambda lib: lib.signal.windows.exponential(4, tau=0),
    "signal-center-sym": lambda lib: lib.signal.windows.exponential(4, center=1.0),
    "signal-std": lambda lib: lib.signal.windows.gaussian(4, std=-1.0),
    "signal-beta": lambda lib: lib.signal.windows.kaiser(4, beta=-1.0),
    "signal-coefficients": lambda lib: lib.signal.windows.general_cosine(4, a=3),
    "signal-no-coefficients": lambda lib: lib.signal.windows.general_cosine(4, a=[]),
    "signal-float-length": lambda lib: lib.signal.windows.hann(4.0),
    "top-negative": lambda lib: lib.hann_window(-1),
    "top-int-dtype": lambda lib: lib.hamming_window(4, dtype=lib.int64),
    "top-complex-dtype": lambda lib: lib.blackman_window(4, dtype=lib.complex64),
    "top-float-length": lambda lib: lib.bartlett_window(4.0),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error(name):
    with pytest.raises(Exception) as te:
        ERRORS[name](torch)
    with pytest.raises(type(te.value)) as ee:
        ERRORS[name](ember)
    if type(te.value) in (ValueError, RuntimeError):
        assert str(ee.value).split(",")[0] == str(te.value).split(",")[0]


def test_namespace():
    assert sorted(ember.signal.windows.__all__) == sorted(torch.signal.windows.__all__)
