"""hardtanh / relu6 against torch on each kernel path: the one-pass clip (float32, float64), the
maximum-then-minimum form (half, bfloat16, integers), in place with a graph (a copy of the input is
saved, as torch saves one) and in place without one (written straight into the input). Values,
gradients, second derivatives; special values (signed zeros, NaN, infinities, the bounds themselves).
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import _CLIP_DTYPES

_SPECIAL = [-0.0, 0.0, 6.0, -6.0, -1.0, 1.0, np.nan, np.inf, -np.inf, 7.0, 0.5, 5.999]
_BOUNDS = [(0.0, 6.0), (-1.0, 1.0), (-0.0, 0.0), (-2.5, 3.5), (1.0, 1.0)]


def _values(rng, n, dtype):
    v = np.concatenate([np.array(_SPECIAL), rng.standard_normal(n) * 4])
    return v.astype(dtype)


def _same(e, t, what, skip=None):
    """Equal values, and equal signs of zeros (-0.0 stays -0.0) unless skip is given: a gradient, compared
    where the input is not NaN (torch's vectorized loop gives NaN inputs a zero gradient, its scalar
    tail loop passes the gradient; ember does the latter everywhere) and without the sign of zeros."""
    e, t = e.detach().numpy(), t.detach().numpy()
    assert e.dtype == t.dtype and e.shape == t.shape, what
    if skip is not None:
        e, t = e[~skip], t[~skip]
    np.testing.assert_array_equal(e, t, err_msg=what)
    if skip is None:  # (a NaN's sign bit is not compared)
        assert np.array_equal(np.signbit(e) & ~np.isnan(e), np.signbit(t) & ~np.isnan(t)), what


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("inplace", [False, True])
def test_hardtanh_values_and_gradients(dtype, inplace):
    assert np.dtype(dtype) in _CLIP_DTYPES  # the one-pass path is the one under test
    rng = np.random.default_rng(3)
    for lo, hi in _BOUNDS:
        x = _values(rng, 5000, dtype).reshape(-1, 4)  # above the kernels' small-array cut
        g = rng.standard_normal(x.shape).astype(dtype)
        out = {}
        for lib in (torch, ember):
            xs = lib.from_numpy(x.copy()).requires_grad_()
            y = lib.nn.functional.hardtanh(xs * 1, lo, hi, inplace=inplace)
            y.backward(lib.from_numpy(g.copy()))
            out[lib] = (y, xs.grad)
        what = f"{dtype} ({lo}, {hi}) inplace={inplace}"
        _same(out[ember][0], out[torch][0], what)
        _same(out[ember][1], out[torch][1], what, skip=np.isnan(x))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "int64", "float32"])
def test_hardtanh_other_dtypes_and_no_grad_in_place(dtype):
    rng = np.random.default_rng(4)
    x = _values(rng, 5000, np.float32)
    x = np.nan_to_num(x) if dtype.startswith("int") else x
    # float16: the two-step form gives +0.0 where torch keeps -0.0 (as before the clip path existed):
    # values only there
    unsigned = np.zeros(x.shape, bool) if dtype == "float16" else None
    for lo, hi in _BOUNDS[:4]:
        te = torch.from_numpy(x.copy()).to(getattr(torch, dtype))
        ee = ember.from_numpy(x.copy()).to(getattr(ember, dtype))
        _same(ember.nn.functional.hardtanh(ee, lo, hi).float(), torch.nn.functional.hardtanh(te, lo, hi).float(), dtype,
              skip=unsigned)
        et, tt = ee.clone(), te.clone()
        r = ember.nn.functional.hardtanh(et, lo, hi, inplace=True)  # no graph: written straight into et
        torch.nn.functional.hardtanh(tt, lo, hi, inplace=True)
        assert r is et and et._version == tt._version
        _same(et.float(), tt.float(), f"{dtype} in place", skip=unsigned)


def test_relu6_module_in_place_keeps_the_input():
    """torch's in-place hardtanh saves a copy of its input: modifying the result afterwards is no error
    and the gradient still follows the input's old values."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 80)).astype(np.float32) * 4
    grads = []
    for lib in (torch, ember):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = lib.nn.ReLU6(inplace=True)(xs * 2)
        assert y.grad_fn.name() == "HardtanhBackward0"
        y.add_(-10)
        y.sum().backward()
        grads.append(xs.grad)
    _same(grads[1], grads[0], "in place, result modified")


def test_hardtanh_in_place_with_crossed_bounds():
    """hardtanh_ (unlike F.hardtanh) takes min_val > max_val: every value becomes max_val, NaN stays."""
    x = _values(np.random.default_rng(6), 5000, np.float32)
    t = torch.from_numpy(x.copy()).requires_grad_()
    e = ember.from_numpy(x.copy()).requires_grad_()
    yt = torch.nn.functional.hardtanh_(t * 1, 2.0, -1.0)
    ye = ember.nn.functional.hardtanh_(e * 1, 2.0, -1.0)
    _same(ye, yt, "crossed")
    yt.sum().backward()
    ye.sum().backward()
    _same(e.grad, t.grad, "crossed grad", skip=np.isnan(x))


@pytest.mark.parametrize("inplace", [False, True])
def test_hardtanh_second_derivative(inplace):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(6000) * 4
    out = {}
    for lib in (torch, ember):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = lib.nn.functional.hardtanh(xs * 1, -1.5, 2.0, inplace=inplace)
        (g,) = lib.autograd.grad((y * y * xs).sum(), xs, create_graph=True)
        g.pow(2).sum().backward()
        out[lib] = (g, xs.grad)
    for e, t in zip(out[ember], out[torch]):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("inplace", [False, True])
def test_hardtanh_gradient_stays_on_the_input_history(inplace):
    """The backward's result requires grad through the (old) input, as torch's does through the clone it
    saves, even when the incoming gradient does not (Note [Hardtanh in place]): a second derivative
    through it exists (zero) and reaches the leaf through the op before the hardtanh."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((40, 30)) * 4
    out = {}
    for lib in (torch, ember):
        xs = lib.from_numpy(x.copy()).requires_grad_()
        y = lib.nn.functional.relu6(xs * 2, inplace=inplace)
        (g,) = lib.autograd.grad(y.sum(), xs, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), xs, allow_unused=True)
        out[lib] = (g.requires_grad, type(g.grad_fn).__name__, g.detach().numpy(), gg is None,
                    None if gg is None else gg.numpy())
    e, t = out[ember], out[torch]
    assert e[:2] == t[:2] and e[3] == t[3]
    np.testing.assert_array_equal(e[2], t[2])
    np.testing.assert_array_equal(e[4], t[4])


@pytest.mark.parametrize("op", ["relu", "relu_", "relu6", "relu6_", "hardtanh", "threshold"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_masked_gradients_drop_non_finite_incoming_gradients(op, dtype):
    """The masked backward multiplies the incoming gradient by the mask and redoes the product exactly when
    it holds a NaN (inf or NaN times a dropped entry's 0): torch gives those entries 0 and keeps the kept
    ones' NaN and inf."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(400).astype(dtype) * 5
    g = rng.standard_normal(400).astype(dtype)
    g[::7] = np.nan
    g[3::11] = np.inf
    g[5::13] = -np.inf
    fns = {"relu": lambda lib, t: lib.relu(t), "relu_": lambda lib, t: lib.relu_(t),
           "relu6": lambda lib, t: lib.nn.functional.relu6(t), "relu6_": lambda lib, t: lib.nn.functional.relu6(t, inplace=True),
           "hardtanh": lambda lib, t: lib.nn.functional.hardtanh(t, -2.0, 3.0),
           "threshold": lambda lib, t: lib.nn.functional.threshold(t, 0.5, -1.0)}
    grads = []
    for lib in (ember, torch):
        leaf = lib.from_numpy(x.copy()).requires_grad_()
        fns[op](lib, leaf * 1).backward(lib.from_numpy(g.copy()))
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1], err_msg=op)
    assert np.isnan(grads[1]).any() and (grads[1] == 0).any()  # both kinds of entry are there
