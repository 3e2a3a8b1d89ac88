"""Row kernels split across the intra-op threads (Note [Row pieces], ember/_backend/parallel.py) against torch
and against their own unsplit results.

The split threshold is forced to zero so that small arrays split too: layer_norm (row blocks, the weight and
bias gradients' partial sums), cross_entropy (class indices: weight, ignore_index, label smoothing, N-d),
softmax / log_softmax (along the last and a middle dim; their backward kernels) and gelu (both forms, the
float32 tables and float64). Each case runs on 1 thread and on 2 (a spy checks the work really split) on row
counts that do not divide evenly: values and gradients must be bit-identical between the two and match torch.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import parallel

from ._threads import spy_splits

TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=1e-5)}


@pytest.fixture
def split(monkeypatch):
    """Every row kernel worth a split; yields the piece counts of the splits that ran."""
    before = ember.get_num_threads()
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    yield spy_splits(monkeypatch)
    ember.set_num_threads(before)


def _results(lib, fn, arrays, grad_seed):
    """fn's output and the gradients of its inputs (a random upstream gradient), as NumPy arrays."""
    xs = [lib.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f") for a in arrays]
    y = fn(lib, *xs)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(y.shape)).astype(arrays[0].dtype)
    y.backward(lib.from_numpy(g))
    return [y.detach().numpy()] + [x.grad.numpy() for x in xs if x.requires_grad]


def _check(split, fn, *arrays, pieces=2):
    """fn on 1 thread and on 2 (split, bit-identical) and on torch (within tolerance)."""
    ember.set_num_threads(1)
    one = _results(ember, fn, arrays, 1)
    assert not split, "one thread must not split"
    ember.set_num_threads(2)
    two = _results(ember, fn, arrays, 1)
    assert split and min(split) == pieces, f"the kernels did not split: {split}"
    split.clear()
    ref = _results(torch, fn, arrays, 1)
    tol = TOL[arrays[0].dtype.type]
    for a, b, t in zip(one, two, ref):
        assert a.dtype == t.dtype and a.shape == t.shape
        np.testing.assert_array_equal(a, b)  # the thread count does not change a bit
        np.testing.assert_allclose(a, t, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k", [((301, 64), 1), ((3, 7, 5, 200), 2), ((5, 100_000), 1)])
def test_layer_norm_rows(split, dtype, shape, k):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-k:]).astype(dtype)
    b = rng.standard_normal(shape[-k:]).astype(dtype)
    _check(split, lambda lib, x, w, b: lib.nn.functional.layer_norm(x, shape[-k:], w, b), x, w, b)


def test_layer_norm_rows_without_affine(split):
    x = np.random.default_rng(1).standard_normal((203, 96)).astype(np.float32)
    _check(split, lambda lib, x: lib.nn.functional.layer_norm(x, (96,)), x)


@pytest.mark.parametrize("shape,smoothing,weighted,reduction", [
    ((301, 37), 0.0, False, "mean"), ((301, 37), 0.1, True, "none"), ((257, 11), 0.2, False, "sum"),
    ((9, 5, 13), 0.0, True, "mean"), ((9, 5, 13), 0.3, False, "none")])
def test_cross_entropy_rows(split, shape, smoothing, weighted, reduction):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    c = shape[1]
    t = rng.integers(0, c, (shape[0],) + shape[2:])
    t.flat[::7] = -100  # ignored targets
    w = rng.random(c).astype(np.float32) + 0.5 if weighted else None

    def fn(lib, x):
        return lib.nn.functional.cross_entropy(x, lib.from_numpy(t), None if w is None else lib.from_numpy(w),
                                               label_smoothing=smoothing, reduction=reduction)
    _check(split, fn, x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((301, 65), -1), ((7, 33, 5), 1)])
def test_softmax_rows(split, name, dtype, shape, dim):
    x = (np.random.default_rng(3).standard_normal(shape) * 5).astype(dtype)
    _check(split, lambda lib, x: getattr(lib.nn.functional, name)(x, dim), x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_rows_double_backward(split, name):
    """create_graph: the backward kernels run split forward, their own backward in ember ops."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((131, 17))
    v = rng.standard_normal((131, 17))

    def fn(lib, x):
        y = getattr(lib.nn.functional, name)(x, -1)
        (gx,) = lib.autograd.grad(y, x, lib.from_numpy(v), create_graph=True)
        return gx * gx
    _check(split, fn, x)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the pieces run under the caller's np.errstate
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_elements(split, approximate, dtype):
    x = (np.random.default_rng(5).standard_normal((301, 47)) * 4).astype(dtype)
    _check(split, lambda lib, x: lib.nn.functional.gelu(x, approximate=approximate), x)


@pytest.mark.parametrize("compiled", [True, False])
def test_layer_norm_split_threshold(monkeypatch, compiled):
    """At the default threshold a float32 layer norm of 1 MB runs whole when compiled (2-3 passes a row) and
    splits on the NumPy blocks (6-11 passes); 2 MB splits either way."""
    from ember._backend import jit
    if compiled and jit.load("layernorm_jit") is None:
        pytest.skip("needs ember[jit]")
    if not compiled:
        monkeypatch.setattr(jit, "ENABLED", False)
    seen = spy_splits(monkeypatch)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        ln = ember.nn.LayerNorm(1024)
        for rows, splits in ((256, not compiled), (512, True)):
            x = ember.from_numpy(np.ones((rows, 1024), np.float32)).requires_grad_()
            ln(x).sum().backward()
            assert bool(seen) == splits, (rows, seen)
            seen.clear()
    finally:
        ember.set_num_threads(before)
