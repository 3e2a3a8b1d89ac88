"""nn.CrossMapLRN2d against torch: the forward and torch's own backward (which is not the forward's exact
derivative: Note [Cross-map LRN windows]) for window sizes around the channel count, float32 and float64, and
torch's errors (a 3-d input; size 1 fails in torch's backward)."""
import numpy as np
import pytest
import torch

import ember


def _run(lib, size, channels, dtype):
    rng = np.random.default_rng(size * 10 + channels)
    x = lib.tensor(rng.standard_normal((2, channels, 3, 4)).astype(dtype), requires_grad=True)
    m = lib.nn.CrossMapLRN2d(size, 1e-1, 0.75, 2.0)
    y = m(x)
    y.backward(lib.tensor(rng.standard_normal((2, channels, 3, 4)).astype(dtype)))
    return y.detach().numpy(), x.grad.numpy(), y.grad_fn.name(), repr(m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size, channels", [(2, 1), (2, 7), (3, 3), (4, 7), (5, 3), (5, 7), (8, 7), (9, 16)])
def test_forward_and_torchs_backward(size, channels, dtype):
    e, t = _run(ember, size, channels, dtype), _run(torch, size, channels, dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(e[:2], t[:2]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, **tol)
    assert e[2:] == ("CrossMapLRN2dBackward", t[3])


def test_errors_as_torch():
    def run(lib):
        errors = []
        try:
            lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 4))
        except ValueError as e:
            errors.append(str(e))
        x = lib.ones(1, 2, 2, 2, requires_grad=True)
        try:
            lib.nn.CrossMapLRN2d(1)(x).sum().backward()
        except RuntimeError as e:
            errors.append(str(e))
        return errors
    assert run(ember) == run(torch)
