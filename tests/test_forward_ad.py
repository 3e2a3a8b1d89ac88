"""ember.autograd.forward_ad (dual tensors) against torch.autograd.forward_ad."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(0)
X, T, W, T2 = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (3, 4), (4, 5), (4, 5)))
IDX = np.array([[0, 2, 1, 3], [1, 1, 0, 2], [3, 0, 2, 1]])


def _np(t):
    return None if t is None else t.detach().numpy()


FUNCTIONS = {
    "pointwise": lambda L, d, w: (d.sin() * d.exp() - d / (d.abs() + 1)).pow(2),
    "matmul_softmax": lambda L, d, w: L.nn.functional.softmax(d @ w, -1),
    "mlp_loss": lambda L, d, w: L.nn.functional.cross_entropy(L.relu(L.nn.functional.linear(d, w.t())),
                                                              L.tensor([0, 2, 4])),
    "reductions": lambda L, d, w: (d.sum(0), d.mean(), d.norm(dim=1), d.max(1).values, d.logsumexp(-1)),
    "shapes": lambda L, d, w: (d.t().reshape(2, 6), L.cat([d, d * 2], 1)[:, 1:5], L.stack([d, d]).permute(2, 0, 1),
                               d.unsqueeze(0).expand(2, 3, 4), d[1], d.flip(0)),
    "where_gather": lambda L, d, w: (L.where(d > 0, d, d * d), d.gather(1, L.tensor(IDX)), d.clamp(-0.5, 0.5)),
    "two_duals": lambda L, d, w: (d @ w).tanh() + (d @ w).sigmoid(),
    "integer_output": lambda L, d, w: (d.argmax(1), d > 0, d.sort(1)),
    "inplace": lambda L, d, w: _inplace(d),
    "no_grad": lambda L, d, w: _no_grad(L, d, w),
}


def _inplace(d):
    y = d.clone()
    y.mul_(2).add_(d)
    y += 1
    return y


def _no_grad(L, d, w):
    with L.no_grad():
        return d * 3 + (d @ w).sum()


def _run(L, name, primal_requires_grad=False):
    fw = L.autograd.forward_ad
    x = L.from_numpy(X.copy()).requires_grad_(primal_requires_grad)
    w = L.from_numpy(W.copy())
    with fw.dual_level():
        d = fw.make_dual(x, L.from_numpy(T.copy()))
        wd = fw.make_dual(w, L.from_numpy(T2.copy())) if name == "two_duals" else w
        out = FUNCTIONS[name](L, d, wd)
        outs = out if isinstance(out, tuple) else (out,)
        flat = []
        for o in outs:
            flat.extend(o if isinstance(o, tuple) else (o,))
        unpacked = [fw.unpack_dual(o) for o in flat]
        flags = (d.requires_grad, d._base is x, [u.primal.requires_grad for u in unpacked])
    return unpacked, flags


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_tangents_match_torch(name):
    e, e_flags = _run(ember, name)
    t, t_flags = _run(torch, name)
    assert e_flags == t_flags
    for (ep, et), (tp, tt) in zip(e, t):
        assert tuple(ep.shape) == tuple(tp.shape) and str(ep.dtype) == str(tp.dtype)
        np.testing.assert_allclose(_np(ep), _np(tp), rtol=1e-5, atol=1e-6)
        assert (et is None) == (tt is None), name
        if tt is not None:
            assert str(et.dtype) == str(tt.dtype)
            np.testing.assert_allclose(_np(et), _np(tt), rtol=1e-4, atol=1e-5)


def test_tangents_are_backward_differentiable():
    def run(L):
        fw = L.autograd.forward_ad
        x = L.from_numpy(X.copy()).requires_grad_()
        with fw.dual_level():
            d = fw.make_dual(x, L.from_numpy(T.copy()))
            primal, tangent = fw.unpack_dual((d.sin() * d).sum())
            assert primal.requires_grad and tangent.requires_grad
            tangent.backward()
        return primal, tangent, x.grad
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


def test_level_lifetime_and_errors():
    for L in (ember, torch):
        fw = L.autograd.forward_ad
        x, t = L.ones(3), L.ones(3)
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, t)
        assert fw.unpack_dual(x).tangent is None

        @fw.dual_level()
        def make():
            assert fw.unpack_dual(x).tangent is None  # a plain tensor has no tangent
            with pytest.raises(RuntimeError, match="different size"):
                fw.make_dual(x, L.ones(4))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(x.long(), t)
            with pytest.raises(RuntimeError, match="Nested forward mode AD"):
                fw.enter_dual_level()
            with pytest.raises(RuntimeError, match="not the last one"):
                fw.exit_dual_level(level=3)
            d = fw.make_dual(x, t)
            y = d * 2
            assert fw.unpack_dual(y).tangent is not None
            return y
        y = make()
        assert fw.unpack_dual(y).tangent is None  # tangents die with their level
        assert (y + 1).sum().item() == 9.0        # and the tensor goes on as a plain one
        with fw.dual_level():
            assert fw.unpack_dual(y).tangent is None and fw.unpack_dual(y * 2).tangent is None
    assert ember.matmul is ember._ops._registry.namespace["matmul"]  # the level's swaps are undone
