"""Max pooling's backward scattered by flat input index (Note [Max pooling backward by index],
ember/_ops/pool.py) against torch, and against the per-tap window_scatter it replaces.

Random 1-3-d shapes with overlapping strided windows (dilation and ceil_mode included, no padding), ties and
NaN in the input, float64 and float32; a spy checks which kernel ran. float64 gradients must equal torch's
bit for bit (both accumulate in output order); float32 ones match to rounding (the counts are summed in
float64). The double backward goes through the same indices. With padding, windows of nothing but -inf (or an
integer type's minimum) point at their first in-bounds position, as torch's do.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import depthwise_numpy as DW
from ember._ops import pool as P


@pytest.fixture
def ran(monkeypatch):
    """Records which scatter ran: "index" or "taps"."""
    seen = []
    real_scatter, real_taps = P._scatter, DW.DepthwisePlan.window_scatter

    def scatter(*args, **kw):
        seen.append("index")
        return real_scatter(*args, **kw)

    def taps(self, *args):
        seen.append("taps")
        return real_taps(self, *args)
    monkeypatch.setattr(P, "_scatter", scatter)
    monkeypatch.setattr(DW.DepthwisePlan, "window_scatter", taps)
    return seen


def _case(rng):
    nd = int(rng.choice([1, 2, 3], p=[0.25, 0.5, 0.25]))
    while True:
        k = [int(rng.integers(2, 5)) for _ in range(nd)]
        s = [int(rng.integers(2, 4)) for _ in range(nd)]
        d = [int(rng.integers(1, 3)) for _ in range(nd)]
        if any(dd * (kk - 1) >= ss for kk, ss, dd in zip(k, s, d)):  # some window overlaps the next
            break
    size = [dd * (kk - 1) + 1 + int(rng.integers(0, 7 if nd < 3 else 4)) for kk, dd in zip(k, d)]
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + size
    return nd, shape, dict(kernel_size=k, stride=s, dilation=d, ceil_mode=bool(rng.random() < 0.4))


def _input(rng, shape, dtype):
    x = np.round(rng.standard_normal(shape) * 2).astype(dtype)  # a coarse grid: ties within windows
    if rng.random() < 0.5:
        x.reshape(-1)[rng.choice(x.size, 2, replace=False)] = np.nan
    return x


def _grads(lib, nd, x, kw, g):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    gs = lib.from_numpy(g.copy()).requires_grad_()
    y = getattr(lib.nn.functional, f"max_pool{nd}d")(xs, **kw)
    (gx,) = lib.autograd.grad(y, xs, gs, create_graph=True)
    (gx * gx).sum().backward()  # the scatter's own backward: a gather at the same positions, into g
    return y.detach().numpy(), gx.detach().numpy(), gs.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_by_index_matches_torch(dtype, ran):
    rng = np.random.default_rng(0 if dtype is np.float64 else 1)
    for _ in range(40):
        nd, shape, kw = _case(rng)
        x = _input(rng, shape, dtype)
        with torch.no_grad():
            out = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.from_numpy(x), **kw).shape
        g = rng.standard_normal(tuple(out)).astype(dtype)
        ran.clear()
        got = _grads(ember, nd, x, kw, g)
        want = _grads(torch, nd, x, kw, g)
        assert ran == ["index"], (shape, kw)
        what = f"x{shape} {kw}"
        np.testing.assert_array_equal(got[0], want[0], err_msg=what)
        if dtype is np.float64:
            for e, t in zip(got[1:], want[1:]):
                np.testing.assert_array_equal(e, t, err_msg=what)
        else:
            for e, t in zip(got[1:], want[1:]):
                np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-6, err_msg=what)


def test_by_index_equals_window_scatter(ran, monkeypatch):
    """The two scatters agree on the same saved tap choices (to float64 rounding: they add in other orders)."""
    rng = np.random.default_rng(2)
    for _ in range(15):
        nd, shape, kw = _case(rng)
        x = _input(rng, shape, np.float64)
        xs = ember.from_numpy(x).requires_grad_()
        y = getattr(ember.nn.functional, f"max_pool{nd}d")(xs, **kw)
        g = ember.from_numpy(rng.standard_normal(tuple(y.shape)))
        results = []
        for on in (True, False):
            monkeypatch.setattr(P, "BY_INDEX", on)
            (gx,) = ember.autograd.grad(y, xs, g, retain_graph=True)
            results.append(gx.numpy())
        np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)
    assert ran.count("index") == ran.count("taps") == 15


@pytest.mark.parametrize("kw,dtype", [(dict(kernel_size=3, stride=2, padding=1), np.float32),  # padding
                                      (dict(kernel_size=2), np.float32),  # windows that do not overlap
                                      (dict(kernel_size=3, stride=1), np.float32),  # stride 1
                                      (dict(kernel_size=3, stride=2), np.float16)])  # half precision
def test_other_pools_keep_window_scatter(ran, kw, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 9)).astype(dtype)
    xs = ember.from_numpy(x).requires_grad_()
    ts = torch.from_numpy(x).requires_grad_()
    ember.nn.functional.max_pool2d(xs, **kw).sum().backward()
    torch.nn.functional.max_pool2d(ts, **kw).sum().backward()
    assert ran == ["taps"]
    np.testing.assert_array_equal(xs.grad.numpy(), ts.grad.numpy())


@pytest.mark.parametrize("nd,kw", [(1, dict(kernel_size=3, stride=2, padding=1)),
                                   (2, dict(kernel_size=3, stride=2, padding=1)),
                                   (2, dict(kernel_size=(3, 2), stride=(1, 2), padding=1, dilation=(2, 1))),
                                   (2, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                                   (3, dict(kernel_size=2, stride=1, padding=1))])
def test_padded_windows_of_fill_values_point_inside(nd, kw):
    """A window whose inputs are all -inf (or an integer type's minimum) reports, and sends its gradient to,
    its first in-bounds position, as torch does, not the padding tap its scan started from."""
    rng = np.random.default_rng(4)
    shape = (2, 2) + (6,) * nd
    for dtype in (np.float32, np.float64) + ((np.int64,) if nd > 1 else ()):  # torch: no integer max_pool1d
        low = -np.inf if dtype is not np.int64 else np.iinfo(np.int64).min
        x = np.where(rng.random(shape) < 0.7, low, rng.integers(-3, 3, shape)).astype(dtype)
        outs = []
        for lib in (ember, torch):
            xs = lib.from_numpy(x.copy())
            if dtype is not np.int64:
                xs.requires_grad_()
            y, idx = getattr(lib.nn.functional, f"max_pool{nd}d")(xs, return_indices=True, **kw)
            got = [y.detach().numpy(), idx.numpy()]
            if dtype is not np.int64:
                y.backward(lib.from_numpy(np.arange(y.numel(), dtype=dtype).reshape(tuple(y.shape))))
                got.append(xs.grad.numpy())
            outs.append(got)
        for e, t in zip(*outs):
            np.testing.assert_array_equal(e, t, err_msg=f"{dtype.__name__} {kw}")
