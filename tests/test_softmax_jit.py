"""The compiled softmax row pass (ember/_backend/softmax_jit.py, Note [JIT kernels]) against the NumPy rows it
replaces, to rounding (its exp is ~2 ulp, as NumPy's), over normal rows, wide ranges, long rows, +-inf and NaN, and
short rows that take their maxima in the kernel; softmax's backward rows against NumPy's;
softmax, log_softmax and cross_entropy with the kernel on against torch in float32 (values and gradients,
class weights, ignore_index, label smoothing, reductions); and the paths it does not take (float64, a dim that
is not the last, the switch off)."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import jit
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says (tests that want them off say so)."""
    monkeypatch.setattr(jit, "ENABLED", True)


def _numpy_rows(x):
    m = np.maximum.reduce(x, axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - m)
    return m, e, np.add.reduce(e, axis=1, keepdims=True)


@pytest.mark.parametrize("width", [1, 7, 64, 1000, 4099])
def test_rows_match_numpy(width):
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((37, width)) * rng.choice([0.1, 3, 30], (37, 1))).astype(np.float32)
    m, want_e, want_s = _numpy_rows(x)
    e, s = np.empty_like(x), np.empty_like(m)
    jit.load("softmax_jit").exp_rows(x, m, e, s)
    # NumPy's exp gives subnormals below exp(-87.3); the compiled one gives 0 there (|difference| < 1.2e-38)
    np.testing.assert_allclose(e, want_e, rtol=4e-7, atol=1.2e-38)
    np.testing.assert_allclose(s, want_s, rtol=2e-6)


def test_rows_with_infinities_and_nan():
    x = np.array([[0, 1, np.nan, 2], [np.inf, 0, 1, 2], [-np.inf] * 4, [-np.inf, 0, -1, -np.inf],
                  [-200, 0, -90, -87], [np.inf, np.inf, 0, 1], [3e38, -3e38, 0, 1]], np.float32)
    m, want_e, want_s = _numpy_rows(x)
    e, s = np.empty_like(x), np.empty_like(m)
    jit.load("softmax_jit").exp_rows(x, m, e, s)
    np.testing.assert_allclose(e, want_e, rtol=4e-7, atol=1.2e-38)  # NaN where NaN
    np.testing.assert_allclose(s, want_s, rtol=4e-7)


@pytest.mark.parametrize("width", [1, 2, 7, 16, 64])
def test_short_rows_take_their_maxima_in_the_kernel(width):
    """Rows up to SHORT_ROW: the maxima as np.maximum.reduce gives them (NaN where a row holds one, +-inf), then the
    same row pass."""
    rng = np.random.default_rng(width + 100)
    x = (rng.standard_normal((40, width)) * rng.choice([0.1, 3, 30], (40, 1))).astype(np.float32)
    for row, value in zip(range(0, 40, 5), [np.nan, np.inf, -np.inf, np.nan, np.inf, -np.inf, 3e38, -3e38]):
        x[row, rng.integers(0, width)] = value
    x[39] = -np.inf
    want_m, want_e, want_s = _numpy_rows(x)
    m, e, s = np.empty_like(want_m), np.empty_like(x), np.empty_like(want_m)
    kernels = jit.load("softmax_jit")
    assert width <= kernels.SHORT_ROW
    kernels.max_exp_rows(x, m, e, s)
    np.testing.assert_array_equal(m, want_m)  # NaN where NaN
    np.testing.assert_allclose(e, want_e, rtol=4e-7, atol=1.2e-38)
    np.testing.assert_allclose(s, want_s, rtol=2e-6)


def test_softmax_gradient_rows_match_numpy():
    """t = (g - sum(g o)) o along rows against the NumPy rows, to rounding (the row sums run in vector lanes); a
    NaN or inf in a row spreads over the row as in NumPy."""
    rng = np.random.default_rng(5)
    o = rng.dirichlet(np.ones(300), 50).astype(np.float32)
    g = (rng.standard_normal((50, 300)) * rng.choice([0.1, 3, 300], (50, 1))).astype(np.float32)
    g[3, 7], g[4, 0], o[5, 9] = np.nan, np.inf, np.nan
    with np.errstate(invalid="ignore"):
        want = (g - np.add.reduce(g * o, axis=1, keepdims=True)) * o
    t = np.empty_like(g)
    jit.load("softmax_jit").softmax_grad_rows(g, o, t)
    ok = np.isfinite(want)
    np.testing.assert_array_equal(t[~ok], want[~ok])  # NaN where NaN, the same infinities
    scale = np.abs(np.where(np.isfinite(g), g, 0)).max(1, keepdims=True)  # each row's sum cancels against its g
    assert (np.abs(t - want)[ok] <= (1e-6 * scale + 1e-5 * np.abs(want))[ok]).all()


def _run(lib, fn, x, g, **kw):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    y = fn(lib, xs, **kw)
    y.backward(lib.from_numpy(g.copy()))
    return y.detach().numpy(), xs.grad.numpy()


SOFTMAX = {"softmax": lambda lib, x, dim: lib.softmax(x, dim), "log_softmax": lambda lib, x, dim: x.log_softmax(dim)}


@pytest.mark.parametrize("name", sorted(SOFTMAX))
@pytest.mark.parametrize("shape", [(64, 1000), (3, 5, 129), (1, 1), (32, 16, 16), (5, 64)])
def test_softmax_ops_match_torch(name, shape, monkeypatch):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    calls = count_calls(monkeypatch, jit.load("softmax_jit"), "exp_rows", "max_exp_rows", "softmax_grad_rows")
    got = _run(ember, SOFTMAX[name], x, g, dim=-1)
    backward = ["softmax_grad_rows"] if name == "softmax" else []
    assert calls == ["max_exp_rows" if shape[-1] <= 64 else "exp_rows"] + backward
    for e, t in zip(got, _run(torch, SOFTMAX[name], x, g, dim=-1)):
        np.testing.assert_allclose(e, t, rtol=2e-5, atol=2e-6)


def _cross_entropy(lib, x, **kw):
    if kw.get("weight") is not None:
        kw["weight"] = lib.from_numpy(kw["weight"])
    target = lib.from_numpy(kw.pop("target"))
    return lib.nn.functional.cross_entropy(x, target, **kw)


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=3),
                                dict(label_smoothing=0.1), dict(weight=True, ignore_index=1, label_smoothing=0.2)],
                         ids=["mean", "sum", "none", "ignore", "smoothing", "weight"])
def test_cross_entropy_matches_torch(kw, monkeypatch):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((96, 200)) * 5).astype(np.float32)
    kw = dict(kw, target=rng.integers(0, 200, 96))
    if kw.get("weight"):
        kw["weight"] = rng.random(200).astype(np.float32)
    g = rng.standard_normal(96).astype(np.float32) if kw.get("reduction") == "none" else np.array(1.5, np.float32)
    calls = count_calls(monkeypatch, jit.load("softmax_jit"), "exp_rows")
    got = _run(ember, _cross_entropy, x, g, **dict(kw))
    assert calls
    for e, t in zip(got, _run(torch, _cross_entropy, x, g, **dict(kw))):
        np.testing.assert_allclose(e, t, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("shape", [(128, 10), (33, 1000), (1, 65)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_plain_cross_entropy_is_the_general_path_in_two_calls(shape, reduction, monkeypatch):
    """float32 (N, C) logits, every target counted, no weight or smoothing: nll_sum and nll_grad_rows run; the
    loss matches the general path to rounding (its float32 pairwise sum), the gradient bit for bit; both match
    torch, and under create_graph (the general composite) so do the second derivatives."""
    from ember._ops import loss
    k = jit.load("softmax_jit")
    calls = count_calls(monkeypatch, k, "nll_sum", "nll_grad_rows")
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    t = rng.integers(0, shape[1], shape[0])
    res = {}
    for plain in (True, False):
        monkeypatch.setattr(loss, "PLAIN_KERNEL", plain)
        xe = ember.from_numpy(x.copy()).requires_grad_()
        y = ember.nn.functional.cross_entropy(xe, ember.from_numpy(t), reduction=reduction)
        y.backward(ember.tensor(1.5))
        res[plain] = (y.item(), xe.grad.numpy())
    assert calls == ["nll_sum", "nll_grad_rows"]
    assert res[True][0] == pytest.approx(res[False][0], rel=1e-6)
    assert np.array_equal(res[True][1], res[False][1])
    xt = torch.from_numpy(x.copy()).requires_grad_()
    yt = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), reduction=reduction)
    yt.backward(torch.tensor(1.5))
    assert res[True][0] == pytest.approx(yt.item(), rel=2e-6, abs=1e-6)  # lse - x[t] cancels when one class dominates
    np.testing.assert_allclose(res[True][1], xt.grad.numpy(), rtol=2e-5, atol=2e-7)
    monkeypatch.setattr(loss, "PLAIN_KERNEL", True)
    v = rng.standard_normal(shape).astype(np.float32)
    second = []
    for lib in (ember, torch):
        xl = lib.from_numpy(x.copy()).requires_grad_()
        (g,) = lib.autograd.grad(lib.nn.functional.cross_entropy(xl, lib.from_numpy(t), reduction=reduction), xl,
                                 create_graph=True)
        (gg,) = lib.autograd.grad((g * lib.from_numpy(v)).sum(), xl)
        second.append(gg.detach().numpy())
    np.testing.assert_allclose(second[0], second[1], rtol=1e-4, atol=1e-6)


def test_large_logits_keep_the_split_rows(monkeypatch):
    """Logits whose rows split across the threads (parallel.run_rows) take the general path."""
    calls = count_calls(monkeypatch, jit.load("softmax_jit"), "exp_rows", "nll_sum")
    rng = np.random.default_rng(6)
    x = ember.from_numpy(rng.standard_normal((1024, 300)).astype(np.float32))
    ember.nn.functional.cross_entropy(x, ember.from_numpy(rng.integers(0, 300, 1024)))
    assert "exp_rows" in calls and "nll_sum" not in calls


def test_paths_without_the_kernel(monkeypatch):
    """float64, a class dim that is not the last, and the switch off keep the NumPy rows."""
    calls = count_calls(monkeypatch, jit.load("softmax_jit"), "exp_rows", "nll_sum")
    rng = np.random.default_rng(5)
    ember.softmax(ember.from_numpy(rng.standard_normal((8, 9))), -1)
    ember.softmax(ember.from_numpy(rng.standard_normal((8, 9, 3)).astype(np.float32)), 1)
    x = ember.from_numpy(rng.standard_normal((4, 9, 3)).astype(np.float32))
    ember.nn.functional.cross_entropy(x, ember.from_numpy(rng.integers(0, 9, (4, 3))))
    monkeypatch.setattr(jit, "ENABLED", False)
    ember.nn.functional.cross_entropy(ember.from_numpy(rng.standard_normal((8, 9)).astype(np.float32)),
                                      ember.from_numpy(rng.integers(0, 9, 8)))
    ember.softmax(ember.from_numpy(rng.standard_normal((8, 9)).astype(np.float32)), -1)
    assert calls == []


@pytest.mark.parametrize("shape", [(5, 0, 0), (0, 4), (2, 3, 0)])
def test_empty_softmax_and_its_gradient(shape):
    x = np.zeros(shape, np.float32)
    for name in sorted(SOFTMAX):
        for e, t in zip(_run(ember, SOFTMAX[name], x, x, dim=-1), _run(torch, SOFTMAX[name], x, x, dim=-1)):
            assert e.shape == t.shape and e.dtype == t.dtype
