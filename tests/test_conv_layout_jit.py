"""The compiled batch-last layout copies (ember/_backend/layout_jit.py, Note [JIT kernels]): the kernel against
NumPy's transposed copy over strided views (both loop orders, with and without a bias), and 2-D convolutions
whose im2col takes the batch-last layout (strided, few positions, conv_rows) against torch, with the copies
compiled and not (the same bits: the copies are exact)."""
import numpy as np
import pytest
import torch

import ember
from ember._backend import conv_numpy as K
from ember._backend import owns_memory
from ember._backend import jit
from ember._ops import conv as C
from tests._jit import count_calls

pytest.importorskip("numba", reason="the compiled kernels need the ember[jit] extra (numba)")


@pytest.fixture(autouse=True)
def gemm_paths(monkeypatch):
    """These tests are of the GEMM paths: the direct float32 convolution (tests/test_conv_direct.py) is off."""
    monkeypatch.setattr(C, "DIRECT_MODE", "never")


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch):
    """The compiled kernels on whatever EMBER_JIT says, from the first element."""
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(K, "LAYOUT_JIT_MIN", 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", [(1, 2, 0, 3), (1, 2, 3, 0), (0, 1, 3, 2)])
@pytest.mark.parametrize("bias", [False, True])
def test_swap_last_is_the_transposed_copy(dtype, order, bias):
    kernels = jit.load("layout_jit")
    rng = np.random.default_rng(len(order) + bias)
    base = rng.standard_normal((5, 3, 7, 6)).astype(dtype)
    src = base.transpose(order)
    dst_base = np.zeros((src.shape[0], src.shape[1] + 2, src.shape[3] + 1, src.shape[2]), dtype)
    dst = dst_base[:, 1:-1, 1:, :]  # a strided interior, as the padded buffer's
    b = rng.standard_normal(src.shape[0]).astype(dtype) if bias else None
    kernels.swap_last(src, dst, b)
    want = src.swapaxes(2, 3) + (b[:, None, None, None] if bias else 0)
    np.testing.assert_array_equal(dst, want)
    assert not dst_base[:, 0].any() and not dst_base[:, -1].any() and not dst_base[:, :, 0].any()


def _conv(lib, x, w, b, gy, **kw):
    xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
    bt = None if b is None else lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.conv2d(xt, wt, bt, **kw)
    grads = lib.autograd.grad(y, [t for t in (xt, wt, bt) if t is not None], lib.tensor(gy))
    return [y.detach().numpy()] + [g.numpy() for g in grads]


@pytest.mark.parametrize("case", [
    ((4, 16, 32, 32), (32, 16, 3, 3), dict(stride=2, padding=1), True),   # strided: batch-last im2col
    ((4, 32, 8, 8), (64, 32, 3, 3), dict(padding=1), False),              # few positions
    ((3, 8, 12, 10), (6, 8, 5, 5), dict(padding=2), True),                # 5x5 with K >= 48: conv_rows
    ((2, 6, 9, 9), (4, 3, 3, 3), dict(padding=1, groups=2), True),       # groups
], ids=["strided", "8x8", "rows", "groups"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_with_compiled_layout_copies(case, dtype, monkeypatch):
    x_shape, w_shape, kw, with_bias = case
    rng = np.random.default_rng(x_shape[1])
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if with_bias else None
    gy = rng.standard_normal(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).shape)
    gy = gy.astype(dtype)
    monkeypatch.setattr(C, "IMPLICIT_MODE", "never")  # the strided case's forward on im2col, not on phases
    calls = count_calls(monkeypatch, jit.load("layout_jit"), "swap_last")
    on = _conv(ember, x, w, b, gy, **kw)
    assert calls
    monkeypatch.setattr(jit, "ENABLED", False)
    off = _conv(ember, x, w, b, gy, **kw)
    ref = _conv(torch, x, w, b, gy, **kw)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    for a, c, r in zip(on, off, ref):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol * float(np.abs(r).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_col2im_is_the_numpy_scatter_bit_for_bit(dtype, monkeypatch):
    """Random strided geometries (dilation, uneven padding, windows past the input's end) through the compiled
    col2im and the NumPy one: the same sums in the same order."""
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    for _ in range(30):
        n, c = (int(v) for v in rng.integers(1, 4, 2))
        kernel = tuple(int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        lo = tuple(int(v) for v in rng.integers(0, 3, 2))
        hi = tuple(int(v) for v in rng.integers(0, 3, 2))
        spatial = tuple(int(v) for v in rng.integers(3, 12, 2))
        out = tuple(K.conv_out_size(s, k, st, d, a, b) for s, k, st, d, a, b in
                    zip(spatial, kernel, stride, dilation, lo, hi))
        if min(out) < 1:
            continue
        cols = rng.standard_normal((c * kernel[0] * kernel[1], n * out[0] * out[1])).astype(dtype)
        cols[rng.random(cols.shape) < 0.05] = -0.0
        args = ((n, c) + spatial, kernel, stride, dilation, lo, hi, out)
        on = K.col2im(cols, *args)
        monkeypatch.setattr(jit, "ENABLED", False)
        off = K.col2im(cols, *args)
        monkeypatch.setattr(jit, "ENABLED", True)
        assert on.shape == off.shape and on.flags.c_contiguous
        np.testing.assert_array_equal(on.view(np.uint8), off.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_swapped_is_the_transposed_copy(dtype, monkeypatch):
    """The weight gradient's (G, C * taps, O) -> (G, O, C * taps) copy, tiled and not (shapes off the tile size)."""
    rng = np.random.default_rng(3)
    for shape in [(1, 2304, 256), (2, 37, 19), (3, 1, 40), (1, 16, 16)]:
        a = rng.standard_normal(shape).astype(dtype)
        for on in (True, False):
            monkeypatch.setattr(jit, "ENABLED", on)
            out = K.swapped(a, (shape[0] * shape[2], shape[1]))
            assert out.flags.c_contiguous and out.dtype == a.dtype and owns_memory(out)
            np.testing.assert_array_equal(out.reshape(shape[0], shape[2], shape[1]), a.transpose(0, 2, 1))
