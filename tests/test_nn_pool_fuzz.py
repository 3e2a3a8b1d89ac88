"""Random pooling against torch: max (with indices), average (count_include_pad, divisor_override),
power-average and adaptive max/average pooling in 1-3d, with random sizes, kernels, strides,
padding, dilation and ceil_mode, NaNs included. Outputs, indices and input gradients must match
torch, or both must raise the same exception type.

Skipped: max-pooling windows that lie wholly in padding (their output is -inf; torch 2.13 returns
out-of-range indices for them and its max_pool3d backward then corrupts the heap).
"""
import numpy as np
import pytest
import torch

import ember


def _case(rng):
    """(function name, x, kwargs)."""
    nd = int(rng.integers(1, 4))
    kind = rng.choice(["max", "avg", "lp", "adaptive_max", "adaptive_avg"])
    size = [int(rng.integers(1, 20 if nd < 3 else 8)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 4)) for _ in range(nd)]
    p = [int(rng.integers(0, kk // 2 + 1)) for kk in k]
    ceil = bool(rng.random() < 0.5)
    x = rng.standard_normal([int(rng.integers(1, 3)), int(rng.integers(1, 4))] + size)
    if rng.random() < 0.1:
        x[0, 0] = np.nan
    if kind == "max":
        dilation = [int(rng.integers(1, 3)) for _ in range(nd)]
        return f"max_pool{nd}d", x, dict(kernel_size=k, stride=s, padding=p, dilation=dilation, ceil_mode=ceil,
                                          return_indices=bool(rng.random() < 0.5))
    if kind == "avg":
        kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=bool(rng.random() < 0.5))
        if nd > 1 and rng.random() < 0.3:
            kw["divisor_override"] = int(rng.integers(1, 5))
        return f"avg_pool{nd}d", x, kw
    if kind == "lp":
        nd = min(nd, 2)  # 1-2d; an int kernel (torch 2.13's lp_pool1d fails on a list one)
        x = np.abs(x[(slice(None), slice(None)) + (slice(None),) * nd + (0,) * (x.ndim - 2 - nd)]) + 0.1
        return f"lp_pool{nd}d", x, dict(norm_type=float(rng.choice([1.0, 2.0, 3.0])), kernel_size=k[0],
                                        stride=s[0], ceil_mode=ceil)
    out = [int(rng.integers(1, 6)) for _ in range(nd)]
    if kind == "adaptive_max":
        return f"adaptive_max_pool{nd}d", x, dict(output_size=out, return_indices=bool(rng.random() < 0.5))
    return f"adaptive_avg_pool{nd}d", x, dict(output_size=out)


def _forward(lib, name, x, kw):
    xs = lib.from_numpy(x.copy()).requires_grad_()
    try:
        r = getattr(lib.nn.functional, name)(xs, **kw)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return xs, type(e).__name__
    return xs, r


@pytest.mark.parametrize("seed", range(4))
def test_random_pooling_matches_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        name, x, kw = _case(rng)
        what = f"{name} x{x.shape} {kw}"
        tx, t = _forward(torch, name, x, kw)
        ex, e = _forward(ember, name, x, kw)
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        ty, ey = (t[0], e[0]) if isinstance(t, tuple) else (t, e)
        if name.startswith("max_pool") and bool(torch.isinf(ty).any()):
            continue
        g = rng.standard_normal(tuple(ty.shape))
        ty.backward(torch.from_numpy(g.copy()))
        ey.backward(ember.from_numpy(g.copy()))
        pairs = [(ey, ty), (ex.grad, tx.grad)] + ([(e[1], t[1])] if isinstance(t, tuple) else [])
        for a, b in pairs:
            a, b = a.detach().numpy(), b.detach().numpy()
            assert a.shape == b.shape and a.dtype == b.dtype, what
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8, err_msg=what)
