"""Random matmul against torch: 1-D to 4-D operands with broadcast batch dims (size 1 or not),
zero-size rows, columns and inner dims, a transposed right operand, float32/float64/int64, and
the occasional inner-size mismatch. Result dtype, shape, values and both gradients, or the
raised exception type, must match torch.
"""
import numpy as np
import pytest
import torch

import ember

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-9, atol=1e-9), "int64": {}}


def _shapes(rng):
    da, db = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    n, k, m = (int(v) for v in rng.integers(0 if rng.random() < 0.1 else 1, 5, size=3))
    batch = [int(v) for v in rng.integers(1, 4, size=max(da, db) - 2)] if max(da, db) > 2 else []

    def shape(d, last2):
        if d == 1:
            return (k,)
        lead = batch[len(batch) - (d - 2):] if d > 2 else []
        return tuple(1 if rng.random() < 0.3 else v for v in lead) + last2
    sa, sb = shape(da, (n, k)), shape(db, (k, m))
    if rng.random() < 0.1:  # a mismatched inner size
        sb = (sb[0] + 1,) if db == 1 else sb[:-2] + (sb[-2] + 1, sb[-1])
    return sa, sb


def _run(lib, a, b, transposed):
    x, y = lib.from_numpy(a.copy()), lib.from_numpy(b.copy())
    grads = a.dtype.kind == "f"
    if grads:
        x.requires_grad_()
        y.requires_grad_()
    try:
        rhs = y.transpose(-1, -2).contiguous().transpose(-1, -2) if transposed and y.dim() >= 2 else y
        r = x @ rhs
        if not grads:
            return [str(r.dtype), tuple(r.shape), r.numpy()]
        r.backward(lib.ones_like(r))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return [str(r.dtype), tuple(r.shape), r.detach().numpy(), x.grad.numpy(), y.grad.numpy()]


@pytest.mark.parametrize("seed", range(3))
def test_random_matmuls_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        sa, sb = _shapes(rng)
        dtype = str(rng.choice(["float32", "float64", "int64"]))
        a, b = (rng.standard_normal(sa) * 3).astype(dtype), (rng.standard_normal(sb) * 3).astype(dtype)
        transposed = bool(rng.random() < 0.3)
        t, e = _run(torch, a, b, transposed), _run(ember, a, b, transposed)
        what = (sa, sb, dtype, transposed)
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        assert e[:2] == t[:2], what
        for p, q in zip(e[2:], t[2:]):
            np.testing.assert_allclose(p, q, err_msg=str(what), **TOL[dtype])


@pytest.mark.parametrize("x_shape,w_shape", [((2, 3, 0), (4, 0)), ((2, 0, 3), (4, 3)), ((2, 3, 3), (0, 3)),
                                             ((0, 3), (2, 3)), ((3, 0), (2, 0)), ((0,), (2, 0)), ((3,), (2, 3))])
def test_linear_with_empty_dims_matches_torch(x_shape, w_shape):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    results = []
    for lib in (torch, ember):
        xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        y = lib.nn.functional.linear(xs, ws, bs)
        y.backward(lib.ones_like(y))
        results.append([t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)])
    for e, t in zip(results[1], results[0]):
        assert e.shape == t.shape
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)
