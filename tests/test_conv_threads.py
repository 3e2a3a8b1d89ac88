"""Dense convolutions with their GEMMs split across the intra-op threads (Note [BLAS pieces],
ember/_backend/parallel.py) against torch.

The split thresholds are forced to zero on 2 threads so that small random convolutions split
too: implicit GEMM (forced and not), per-sample and channel-major im2col, GEMM + col2im input
gradients, 1x1 convolutions and transposed convolutions. Outputs, all gradients and double
backward must match torch; a spy checks the pieces really ran on 2 threads, and OpenBLAS's thread
count must be back afterwards, also when a piece raises.
"""
import numpy as np
import pytest
import torch

import ember
from ember._backend import blas, parallel
from ember._ops import conv as C

from ._threads import spy_splits
from .test_nn_conv import check_conv2d_double_backward

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """These tests are of the GEMM paths: the direct float32 convolution (tests/test_conv_direct.py) is off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")


@pytest.fixture
def split(monkeypatch):
    """2 intra-op threads, every BLAS piece split; yields the list of piece counts of the splits."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(parallel, "_MIN_FLOPS", 0)
    yield spy_splits(monkeypatch)
    ember.set_num_threads(before)


def _case(rng, dtype):
    nd = int(rng.choice([1, 2, 3], p=[0.2, 0.6, 0.2]))
    groups = int(rng.choice([1, 1, 2]))
    cin = groups * int(rng.integers(1, 5))
    cout = groups * int(rng.integers(1, 5))
    size = [int(rng.integers(2, 20 if nd == 2 else 7)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.choice([1, 1, 2])) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    p = [int(rng.integers(0, 3)) for _ in range(nd)]
    if rng.random() < 0.2:  # a 1x1 convolution (per-sample GEMMs)
        k, d, p, groups = [1] * nd, [1] * nd, [0] * nd, 1
        cin, cout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    if any(n + 2 * pad < dil * (kk - 1) + 1 for n, pad, dil, kk in zip(size, p, d, k)):
        p = [dil * (kk - 1) for dil, kk in zip(d, k)]
    transpose = rng.random() < 0.2
    x = rng.standard_normal([int(rng.integers(2, 5)), cin] + size).astype(dtype)
    w = rng.standard_normal(([cin, cout // groups] if transpose else [cout, cin // groups]) + k).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype)
    kw = dict(stride=s, padding=p, dilation=d, groups=groups)
    if transpose:
        kw["output_padding"] = [int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)]
    return (f"conv_transpose{nd}d" if transpose else f"conv{nd}d"), x, w, b, kw


def _run(lib, name, x, w, b, kw, g):
    xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    y = getattr(lib.nn.functional, name)(xs, ws, bs, **kw)
    y.backward(lib.from_numpy(g.copy()))
    return [t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)]


@pytest.mark.parametrize("mode", ["auto", "always", "never"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_split_convolutions_match_torch(dtype, mode, split, monkeypatch):
    monkeypatch.setattr(C, "IMPLICIT_MODE", mode)
    rng = np.random.default_rng(["auto", "always", "never"].index(mode) * 2 + (dtype is np.float32))
    checked = 0
    while checked < 25:
        name, x, w, b, kw = _case(rng, dtype)
        try:  # sizes torch refuses (a transposed output too small) are test_nn_conv_fuzz.py's business
            with torch.no_grad():
                shape = getattr(torch.nn.functional, name)(torch.from_numpy(x), torch.from_numpy(w), **kw).shape
        except RuntimeError:
            continue
        checked += 1
        g = rng.standard_normal(tuple(shape)).astype(dtype)
        got = _run(ember, name, x, w, b, kw, g)
        want = _run(torch, name, x, w, b, kw, g)
        what = f"{name} x{x.shape} w{w.shape} {kw}"
        for e, t in zip(got, want):
            assert e.dtype == t.dtype and e.shape == t.shape, what
            np.testing.assert_allclose(e, t, err_msg=what, **TOL[dtype])
    assert split and all(n == 2 for n in split)  # the pieces ran, on both threads
    assert blas.get_threads() == 2  # OpenBLAS's own setting is back


@pytest.mark.parametrize("mode", ["always", "never"])
def test_split_double_backward_matches_torch(mode, split, monkeypatch):
    monkeypatch.setattr(C, "IMPLICIT_MODE", mode)
    rng = np.random.default_rng(11)
    x, w, b = (rng.standard_normal(s) for s in ((4, 4, 9, 7), (6, 2, 3, 2), (6,)))
    check_conv2d_double_backward(x, w, b, padding=(1, 2), dilation=(2, 1), groups=2)
    assert len(split) >= 4


def test_one_thread_does_not_split(monkeypatch):
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    monkeypatch.setattr(parallel, "_MIN_FLOPS", 0)
    seen = []
    monkeypatch.setattr(parallel, "_run_parts", lambda fn, parts: seen.append(parts))
    try:
        x = ember.randn(4, 16, 20, 20, requires_grad=True)
        ember.nn.functional.conv2d(x, ember.randn(16, 16, 3, 3), padding=1).sum().backward()
    finally:
        ember.set_num_threads(before)
    assert seen == []


def test_blas_threads_restored_after_a_piece_raises(split):
    def piece(i, j):
        assert blas.get_threads() == 1  # OpenBLAS runs on one thread inside the pieces
        if i > 0:
            raise ValueError("piece failed")
    with pytest.raises(ValueError, match="piece failed"):
        parallel.run_blas(piece, 4, 1 << 30)
    assert split == [2]
    assert blas.get_threads() == 2


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_split_max_pooling_matches_torch(nd, split, monkeypatch):
    """Max pooling's window maxima and gradient scatter split by channel ranges (every copy split too),
    NaN included: values, indices and the input gradient."""
    monkeypatch.setattr(parallel, "_MIN_BYTES", 0)
    rng = np.random.default_rng(20 + nd)
    for _ in range(8):
        size = [int(rng.integers(3, 12)) for _ in range(nd)]
        x = rng.standard_normal([int(rng.integers(1, 3)), int(rng.integers(2, 6))] + size).astype(np.float32)
        x[rng.random(x.shape) < 0.05] = np.nan
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        kw = dict(kernel_size=k, stride=[int(rng.integers(1, 3)) for _ in range(nd)],
                  padding=[int(rng.integers(0, kk // 2 + 1)) for kk in k], dilation=1,
                  ceil_mode=bool(rng.random() < 0.5), return_indices=True)
        g = None
        results = []
        for lib in (ember, torch):
            xs = lib.from_numpy(x.copy()).requires_grad_()
            y, idx = getattr(lib.nn.functional, f"max_pool{nd}d")(xs, **kw)
            if g is None:
                g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
            y.backward(lib.from_numpy(g.copy()))
            results.append([y.detach().numpy(), idx.numpy(), xs.grad.numpy()])
        for e, t in zip(*results):
            np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-6, err_msg=f"x{x.shape} {kw}")
    assert split and all(n == 2 for n in split)
