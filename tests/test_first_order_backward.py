"""First-order backward paths on arrays (Linear, ReLU, the optimizers' array updates are in test_optim.py)
and the engine's taking over of gradient buffers into .grad, against torch.

Without create_graph, Linear's and ReLU's backward run as NumPy kernels with no op dispatch (Note [Fused
norm backward]); with it they stay ember ops. The engine moves a fresh gradient buffer into .grad instead
of copying it, and must never do so where someone else can still see the buffer.
"""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5)])
def test_relu_first_order_masks_like_torch(dtype, shape):
    """Masked positions give exactly 0 even for a NaN/inf upstream gradient; a NaN input passes it."""
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    x = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    if n > 1:
        x[:4] = [np.nan, -1.0, 0.0, -0.0]
        g[:4] = [3.0, np.nan, np.inf, -np.inf]
    x, g = x.reshape(shape), g.reshape(shape)
    grads = []
    for lib in (torch, ember):
        xt = lib.from_numpy(x.copy()).requires_grad_(True)
        y = lib.relu(xt)
        y.backward(lib.from_numpy(g.copy()))
        grads.append((y.detach().numpy().copy(), xt.grad.numpy().copy(), xt.grad.dtype))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    np.testing.assert_array_equal(grads[1][1], grads[0][1])
    assert str(grads[1][2]) == str(grads[0][2])


def test_relu_and_linear_double_backward_match_torch():
    """create_graph keeps the ember-op formulas: second derivatives through linear and relu."""
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal(5)
    res = []
    for lib in (torch, ember):
        xs = [lib.from_numpy(a.copy()).requires_grad_(True) for a in (x, w, b)]
        y = lib.nn.functional.linear(*xs).relu()
        gx, gw = lib.autograd.grad((y ** 3).sum(), xs[:2], create_graph=True)
        gg = lib.autograd.grad((gx * gx).sum() + gw.sum(), xs)
        res.append([t.detach().numpy().copy() for t in (gx, gw) + tuple(gg)])
    for a, b_ in zip(*res):
        np.testing.assert_allclose(b_, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(6, 3), (2, 4, 3), (3,)])
def test_linear_gradients_accumulate_over_two_backwards_like_torch(shape):
    """The taken-over gradient buffers are added into by the second backward: values as torch's."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    grads = []
    for lib in (torch, ember):
        lin = lib.nn.Linear(3, 4)
        with lib.no_grad():
            lin.weight.copy_(lib.from_numpy(w.copy()))
            lin.bias.copy_(lib.from_numpy(np.arange(4, dtype=np.float32)))
        xt = lib.from_numpy(x.copy()).requires_grad_(True)
        for k in range(2):
            (lin(xt) * (k + 1)).square().sum().backward()
        grads.append([t.numpy().copy() for t in (xt.grad, lin.weight.grad, lin.bias.grad)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


def test_gradient_shared_by_two_leaves_does_not_alias():
    """a + b hands one gradient tensor to both leaves: each .grad is its own buffer (as torch's)."""
    out = []
    for lib in (torch, ember):
        a = lib.ones(4, requires_grad=True)
        b = lib.ones(4, requires_grad=True)
        (a + b).backward(lib.arange(4.0))
        with lib.no_grad():
            a.grad.add_(10)
        out.append((a.grad.tolist(), b.grad.tolist()))
    assert out[1] == out[0]
    a = ember.ones(4, requires_grad=True)
    b = ember.ones(4, requires_grad=True)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


def test_lstm_bias_gradients_do_not_alias():
    """b_ih and b_hh of an LSTM get the same gradient: two buffers with equal values, as torch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    res = []
    for lib in (torch, ember):
        torch.manual_seed(0)
        m = lib.nn.LSTM(3, 4)
        if lib is ember:
            m.load_state_dict({k: ember.from_numpy(v.copy()) for k, v in res[0][2].items()})
        m(lib.from_numpy(x.copy()))[0].square().sum().backward()
        gi, gh = m.bias_ih_l0.grad, m.bias_hh_l0.grad
        vals = (gi.numpy().copy(), gh.numpy().copy())
        with lib.no_grad():
            gi.add_(1)
        res.append((vals, gh.numpy().copy(), {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}))
    np.testing.assert_allclose(res[1][0][0], res[0][0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(res[1][0][1], res[1][1])  # b_hh's gradient unchanged by b_ih's add_
    np.testing.assert_array_equal(res[0][0][1], res[0][1])


def test_hook_that_keeps_the_gradient_sees_it_unchanged():
    """A tensor hook keeping the gradient it saw: .grad is then not that buffer (torch copies too), so
    later in-place work on .grad leaves the kept tensor as it was."""
    out = []
    for lib in (torch, ember):
        kept = []
        w = lib.ones(3, requires_grad=True)
        w.register_hook(lambda g: kept.append(g))
        lin = (w * lib.tensor([1.0, 2.0, 3.0])).sum()
        lin.backward()
        with lib.no_grad():
            w.grad.mul_(100)
        (w * 2).sum().backward()  # accumulates into .grad in place
        out.append((kept[0].tolist(), kept[1].tolist(), w.grad.tolist()))
    assert out[1] == out[0]


@pytest.mark.parametrize("shape,dims,keepdim", [((1,), None, False), ((3, 4), (1,), False), ((2, 3, 4), (0, 2), True),
                                                ((5,), None, False)])
def test_sum_first_order_gradient_is_the_expanded_view_like_torch(shape, dims, keepdim):
    """sum's first-order gradient is a stride-0 view as torch's expand: values, strides of its dims of
    size > 1, and what an in-place write on it does (torch's error where elements overlap)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    reduced = x.sum() if dims is None else x.sum(dims, keepdims=keepdim)
    g = np.asarray(rng.standard_normal(np.shape(reduced)))
    res = []
    for lib in (torch, ember):
        xt = lib.from_numpy(x.copy()).requires_grad_(True)
        y = xt.sum() if dims is None else xt.sum(dims, keepdim=keepdim)
        (gx,) = lib.autograd.grad(y, xt, lib.from_numpy(g.copy()))
        before = gx.numpy().copy()
        strides = [s for s, n in zip(gx.stride(), gx.shape) if n > 1]
        try:
            gx.add_(1)
            err = None
        except RuntimeError:
            err = RuntimeError
        res.append((before, gx.numpy().copy(), strides, err))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    np.testing.assert_array_equal(res[1][1], res[0][1])
    assert res[1][2:] == res[0][2:]
