"""The compiled 2-D depthwise kernels (ember/_backend/depthwise_jit.py, Note [JIT kernels]) against torch:
random sizes, kernels, strides (also larger than the kernel), dilations, padding (asymmetric through
padding='same'), channel multipliers, float32 and float64, values and every gradient; transposed
convolutions, second derivatives, inf/NaN operands, the batch split across threads; and the switch,
which gives the NumPy kernels (tests/test_depthwise_paths.py runs those with it off)."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from ember._ops import conv as C

from .test_depthwise_paths import _compare, _run, check_non_finite, check_second_derivatives, transposed_case

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    """The compiled kernels on, for planes of every width (conv._JIT_MIN_WIDTH lifted)."""
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(C, "_JIT_MIN_WIDTH", 0)
    assert jit.load("depthwise_jit") is not None


def _case(rng, dtype):
    c = int(rng.integers(1, 7))
    mult = int(rng.choice([1, 1, 2, 3]))
    size = [int(rng.integers(1, 24)) for _ in range(2)]
    k = [int(rng.integers(1, 6)) for _ in range(2)]
    s = [int(rng.integers(1, 5)) for _ in range(2)]
    d = [int(rng.integers(1, 3)) for _ in range(2)]
    p = [int(rng.integers(0, 4)) for _ in range(2)]
    same = rng.random() < 0.15 and s == [1, 1]
    if not same and any(n + 2 * pad < dil * (kk - 1) + 1 for n, pad, dil, kk in zip(size, p, d, k)):
        return None
    x = rng.standard_normal([int(rng.integers(1, 5)), c] + size).astype(dtype)
    w = rng.standard_normal([c * mult, 1] + k).astype(dtype)
    b = rng.standard_normal(c * mult).astype(dtype) if rng.random() < 0.6 else None
    grads = [(True, True), (True, False), (False, True)][int(rng.choice(3, p=[0.7, 0.15, 0.15]))]
    kw = dict(stride=s, padding="same" if same else p, dilation=d, groups=c)
    return "conv2d", x, w, b, kw, grads


def _check(case, rng, dtype):
    g = {}

    def g_of(shape):
        return g.setdefault(shape, rng.standard_normal(shape).astype(dtype)).copy()
    _compare(_run(ember, *case, g_of), _run(torch, *case, g_of), dtype,
             f"x{case[1].shape} w{case[2].shape} {case[4]} grads {case[5]}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_depthwise_convolutions_match_torch(dtype):
    rng = np.random.default_rng(31 if dtype == np.float32 else 32)
    checked = 0
    while checked < 60:
        case = _case(rng, dtype)
        if case is not None:
            _check(case, rng, dtype)
            checked += 1


@pytest.mark.parametrize("shape,stride", [((4, 16, 32, 32), 1), ((3, 24, 17, 17), 2), ((2, 8, 9, 40), 3)])
def test_network_sizes_and_the_batch_split_match_torch(shape, stride, monkeypatch):
    """MobileNet-like planes, on two intra-op threads from the smallest size (samples split for the forward
    and the input gradient, channels for the weight gradient)."""
    from ember._backend import parallel
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((shape[1], 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    _check(("conv2d", x, w, b, dict(stride=stride, padding=1, groups=shape[1]), (True, True)), rng, np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_transposed_convolutions_match_torch(dtype):
    rng = np.random.default_rng(41)
    checked = 0
    while checked < 20:
        case = transposed_case(rng, dtype, 2, size_max=12, kernel_max=5)
        if case is not None:
            _check(case, rng, dtype)
            checked += 1


def test_depthwise_second_derivatives_match_torch():
    check_second_derivatives(np.float64)


@pytest.mark.parametrize("where", ["x", "grad", "weight"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_operands_spread_as_in_torch(where, value):
    """Each output reads only its window: inf/NaN reach exactly the outputs and gradients torch gives them."""
    check_non_finite(where, value)


def test_the_switch_gives_the_numpy_kernels(monkeypatch):
    """Off, the NumPy kernels run (the forward keeps its phase rows again: a third saved tensor); on, the
    compiled ones (no phase rows); both agree."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    res = {}
    for on in (True, False):
        monkeypatch.setattr(jit, "ENABLED", on)
        xs = ember.from_numpy(x.copy()).requires_grad_()
        ws = ember.from_numpy(w.copy()).requires_grad_()
        y = ember.nn.functional.conv2d(xs, ws, padding=1, groups=4)
        assert len(y.grad_fn._saved) == (2 if on else 3)
        (y * y).sum().backward()
        res[on] = [y.detach().numpy(), xs.grad.numpy(), ws.grad.numpy()]
    for a, b in zip(res[True], res[False]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * float(np.abs(b).max()))
