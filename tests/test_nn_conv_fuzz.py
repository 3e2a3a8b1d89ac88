"""Random convolutions against torch: conv1d/2d/3d and conv_transpose1d/2d/3d with random sizes,
kernels, strides, dilations, padding, groups (depthwise included) and output_padding.

The kernels pick their GEMM layout (per-sample, 1x1, batch-second, batch-last, depthwise, flipped or
col2im input gradient) from the sizes, so random sizes reach every path and the seams between them.
Outputs and all three gradients must match torch, or both must raise the same exception type.
"""
import numpy as np
import pytest
import torch

import ember


def _case(rng):
    """(function name, x, w, b, kwargs) or None when the kernel does not fit the padded input."""
    nd = int(rng.choice([1, 2, 3], p=[0.2, 0.6, 0.2]))
    groups = int(rng.choice([1, 1, 2, 3]))
    cin = groups * int(rng.integers(1, 4))
    cout = groups * int(rng.integers(1, 4))
    if rng.random() < 0.2:  # depthwise, with a channel multiplier of 1 or 2
        groups = cin
        cout = cin * int(rng.integers(1, 3))
    size = [int(rng.integers(1, 40 if nd == 2 else 12)) for _ in range(nd)]
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 3)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) for _ in range(nd)]
    p = [int(rng.integers(0, 3)) for _ in range(nd)]
    if any(n + 2 * pad < dil * (kk - 1) + 1 for n, pad, dil, kk in zip(size, p, d, k)):
        return None
    transpose = rng.random() < 0.25
    x = rng.standard_normal([int(rng.integers(1, 4)), cin] + size)
    w = rng.standard_normal(([cin, cout // groups] if transpose else [cout, cin // groups]) + k)
    kw = dict(stride=s, padding=p, dilation=d, groups=groups)
    if transpose:
        kw["output_padding"] = [int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)]
    name = f"conv_transpose{nd}d" if transpose else f"conv{nd}d"
    return name, x, w, rng.standard_normal(cout), kw


def _run(lib, name, x, w, b, kw, g):
    xs, ws, bs = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    try:
        y = getattr(lib.nn.functional, name)(xs, ws, bs, **kw)
        y.backward(lib.from_numpy(g(tuple(y.shape))))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return [t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)]


@pytest.mark.parametrize("seed", range(4))
def test_random_convolutions_match_torch(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    while checked < 150:
        case = _case(rng)
        if case is None:
            continue
        checked += 1
        grads = {}

        def grad_of(shape):  # the same upstream gradient for both libraries
            if shape not in grads:
                grads[shape] = rng.standard_normal(shape)
            return grads[shape].copy()
        t = _run(torch, *case, grad_of)
        e = _run(ember, *case, grad_of)
        what = f"{case[0]} x{case[1].shape} w{case[2].shape} {case[4]}"
        if isinstance(t, str) or isinstance(e, str):
            assert e == t, what
            continue
        for a, b in zip(e, t):
            assert a.shape == b.shape, what
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8, err_msg=what)
