"""ember.func.vmap's vectorized path (Note [Vectorized vmap]) against torch.func.vmap.

Each case runs the same function under ember and torch: values, dtypes and shapes must agree, the
vectorized path must be the one that ran (or the loop, for the cases that need it), and ember's
forced per-sample loop must give the same values as its vectorized path.
"""
import numpy as np
import pytest
import torch

import ember
from ember.func import _batched
from ember.func._vmap import _vmap

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return rng.standard_normal(shape)


def ints(high, *shape):
    return rng.integers(0, high, shape).astype(np.int64)


def _to(lib, x):
    if isinstance(x, np.ndarray):
        return lib.from_numpy(x.copy())
    if isinstance(x, dict):
        return {k: _to(lib, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to(lib, v) for v in x)
    return x


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in x for v in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for y in x for v in _leaves(y)]
    return [x]


def _same(e, t, rtol=1e-5, atol=1e-6):
    el, tl = _leaves(e), _leaves(t)
    assert len(el) == len(tl)
    for a, b in zip(el, tl):
        if not isinstance(b, (torch.Tensor, ember.Tensor)):
            assert a == b
            continue
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


# name -> (function of lib, inputs, vmap kwargs); all run vectorized with no per-op loop
VECTORIZED = {
    "unary": (lambda L: lambda a: (a.exp() - a.tanh().abs()).sqrt().neg() + a.sigmoid() * 2, [f32(4, 3)], {}),
    "activations": (lambda L: lambda a: L.nn.functional.gelu(a) + L.nn.functional.relu(a)
                    + L.nn.functional.silu(a) + L.nn.functional.softplus(a, beta=2.0)
                    + L.nn.functional.leaky_relu(a, 0.1) + L.nn.functional.elu(a), [f32(4, 3, 2)], {}),
    "binary_broadcast": (lambda L: lambda a, b: a * b - b / (a.abs() + 1) + 2, [f32(4, 3), f32(5, 4, 1, 3)],
                         {"in_dims": (0, 1)}),
    "unbatched_more_dims": (lambda L: lambda a, b: a + b, [f32(4, 3), f32(2, 3)], {"in_dims": (0, None)}),
    "scalar_samples_promotion": (lambda L: lambda a, b: (a * b, b - a), [f64(4), f32(3)], {"in_dims": (0, None)}),
    "int_float_promotion": (lambda L: lambda a, b: (a + b, a // 2, a > b), [ints(5, 4, 3), f32(3)],
                            {"in_dims": (0, None)}),
    "where_clamp_masked_fill": (lambda L: lambda a, b: L.where(a > 0, a, b).clamp(min=-0.5, max=0.5)
                                .masked_fill(b > 0.3, 7.0), [f32(4, 3), f32(4, 3)], {}),
    "reductions": (lambda L: lambda a: (a.sum(), a.mean(0), a.sum((0, -1), keepdim=True), a.amax(-1),
                                        a.std(), a.var(1, correction=0), a.logsumexp(1), a.norm(dim=1),
                                        a.prod(), a.all(), (a > 0).any(1)), [f32(5, 3, 4)], {}),
    "max_min_arg": (lambda L: lambda a: (a.max(), a.min(1), a.max(dim=-1, keepdim=True).values, a.argmax(),
                                         a.argmin(0), L.max(a, a.flip(0))), [f32(5, 3, 4)], {}),
    "softmax_cumsum_sort": (lambda L: lambda a: (L.softmax(a, 1), a.log_softmax(-1), a.cumsum(0),
                                                 a.sort(-1).values, a.topk(2).indices),
                            [f32(3, 4, 5)], {"in_dims": 1}),
    "views": (lambda L: lambda a: (a.view(-1), a.reshape(2, 6), a.t(), a.T, a.permute(1, 0), a.transpose(0, 1),
                                   a.unsqueeze(0), a.unsqueeze(-1).squeeze(), a.flatten(), a.view(3, 4)
                                   .unflatten(1, (2, 2)), a.expand(2, 3, 4), a.movedim(0, 1), a.mT),
              [f32(5, 3, 4)], {}),
    "views_in_dim_2": (lambda L: lambda a: a.reshape(-1, 2).sum(0) + a.flatten(0, 1)[:2], [f32(3, 4, 6)],
                       {"in_dims": 2}),
    "indexing": (lambda L: lambda a: (a[0], a[:, 1:], a[..., -1], a[None, 1, ::2], a.select(1, 0),
                                      a.narrow(0, 1, 2), a.unbind(1), a.split(1, dim=0), a.chunk(2, -1)),
                 [f32(4, 3, 4)], {}),
    "cat_stack": (lambda L: lambda a, b: (L.cat([a, b], 0), L.stack([a, b], -1), L.cat((b, a * 2), dim=1)),
                  [f32(4, 2, 3), f32(2, 3)], {"in_dims": (0, None)}),
    "matmul_family": (lambda L: lambda a, b, v: (a @ b, L.matmul(v, a), a.matmul(v.unsqueeze(-1)), L.mm(a, b),
                                                 L.mv(a, v), L.dot(v, v), a @ v, v @ b),
                      [f32(4, 3, 3), f32(3, 5), f32(4, 3)], {"in_dims": (0, None, 0)}),
    "matmul_broadcast_batch": (lambda L: lambda a, b: (a @ b, b.t() @ a.mT), [f32(4, 2, 3, 5), f32(5, 3)],
                               {"in_dims": (0, None)}),
    "bmm_both_batched": (lambda L: lambda a, b: L.bmm(a, b), [f32(4, 2, 3, 5), f32(4, 2, 5, 2)], {}),
    "linear": (lambda L: lambda x, w, b: (L.nn.functional.linear(x, w, b), L.nn.functional.linear(x, w)),
               [f32(6, 5), f32(3, 5), f32(3)], {"in_dims": (0, None, None)}),
    "linear_batched_weight": (lambda L: lambda x, w, b: L.nn.functional.linear(x, w, b),
                              [f32(2, 5), f32(6, 3, 5), f32(6, 3)], {"in_dims": (None, 0, 0)}),
    "cross_entropy": (lambda L: lambda x, y: (L.nn.functional.cross_entropy(x, y),
                                              L.nn.functional.cross_entropy(x, y, reduction="sum"),
                                              L.nn.functional.cross_entropy(x, y, reduction="none")),
                      [f32(5, 3, 4), ints(4, 5, 3)], {}),
    "cross_entropy_one_sample": (lambda L: lambda x, y, w: (L.nn.functional.cross_entropy(x, y, weight=w),
                                                            L.nn.functional.nll_loss(x.log_softmax(0), y)),
                                 [f32(5, 4), ints(4, 5), np.abs(f32(4))], {"in_dims": (0, 0, None)}),
    "cross_entropy_ignore_index": (lambda L: lambda x, y: L.nn.functional.cross_entropy(x, y, ignore_index=1),
                                   [f32(5, 3, 4), np.array([[1, 1, 1], [0, 1, 2], [3, 1, 0], [2, 2, 2],
                                                            [1, 0, 1]])], {}),
    "mse_l1": (lambda L: lambda x, y: (L.nn.functional.mse_loss(x, y), L.nn.functional.l1_loss(x, y, reduction="sum"),
                                       L.nn.functional.mse_loss(x, y, reduction="none")),
               [f32(4, 3, 2), f32(4, 3, 2)], {}),
    "layer_norm_embedding": (lambda L: lambda x, i, w: (L.nn.functional.layer_norm(x, (3,)),
                                                        L.nn.functional.embedding(i, w)),
                             [f32(4, 2, 3), ints(5, 4, 2), f32(5, 3)], {"in_dims": (0, 0, None)}),
    "conv_pool": (lambda L: lambda x, w: (L.nn.functional.conv2d(x, w, padding=1),
                                          L.nn.functional.max_pool2d(x, 2),
                                          L.nn.functional.avg_pool2d(x.unsqueeze(0), 2),
                                          L.nn.functional.batch_norm(x.unsqueeze(0), L.full((2,), 0.5),
                                                                     L.full((2,), 2.0), training=False),
                                          L.nn.functional.group_norm(x.unsqueeze(0), 2)),
                  [f32(3, 2, 4, 4), f32(3, 2, 3, 3)], {"in_dims": (0, None)}),
    "dtype_casts": (lambda L: lambda a: (a.double(), a.to(L.float64) + 1, a.long(), a.type_as(L.ones(1, dtype=L.int32)),
                                         L.zeros_like(a), a.clone().contiguous().detach()), [f32(3, 2)], {}),
    "out_dims": (lambda L: lambda a, b: (a * b, a.sum(), b), [f32(3, 4), f32(3)],
                 {"in_dims": (1, None), "out_dims": (1, 0, None)}),
    "out_dims_negative": (lambda L: lambda a: a.reshape(2, 2), [f32(3, 4)], {"out_dims": -1}),
    "unbatched_output": (lambda L: lambda a, b: (a + 1, b * 2), [f32(3, 2), f32(2)], {"in_dims": (0, None)}),
    "nested_inputs": (lambda L: lambda d: d["x"] @ d["w"][0] + d["w"][1],
                      [{"x": f32(4, 3), "w": [f32(3, 2), f32(2)]}], {"in_dims": ({"x": 0, "w": None},)}),
    "chunk_size": (lambda L: lambda a: a.exp() @ a.t(), [f32(7, 3)], {"chunk_size": 3}),
    "randomness_outside": (lambda L: lambda a: a + 1, [f32(3, 2)], {"randomness": "different"}),
    "inplace_on_intermediates": (lambda L: _inplace_ops(L), [f32(4, 3, 5), f32(5)], {"in_dims": (0, None)}),
    "python_on_shapes": (lambda L: lambda a: L.stack([r * i for i, r in enumerate(a)]).reshape(a.size(0), -1)
                         .sum(-1) * a.shape[-1] + len(a) + a.numel(), [f32(4, 3, 2)], {"in_dims": 1}),
    "attention": (lambda L: lambda q, k, v: L.nn.functional.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, -1) @ v,
                  [f32(3, 4, 8), f32(3, 5, 8), f32(3, 5, 8)], {}),
    "normalize_standardize": (lambda L: lambda a: (L.nn.functional.normalize(a, dim=-1),
                                                   (a - a.mean(-1, keepdim=True)) / a.std(-1, keepdim=True)),
                              [f32(4, 3, 6)], {}),
    "flip_outer_noncontiguous": (lambda L: lambda a, b: (a.flip(0, 1), L.outer(a[0], b), a.t().contiguous().view(-1)),
                                 [f32(3, 4, 5), f32(2, 4)], {"in_dims": (1, 1)}),
    "int_bool": (lambda L: lambda a: (a * 2 + 1, a // 2, a.sum(), a.float().mean(), (a > 0) & (a < 2), ~(a > 0)),
                 [ints(3, 4, 3)], {}),
}


def _inplace_ops(L):
    def f(a, b):
        y = a.clone()
        y.mul_(2).add_(b)
        y += 1
        y.sub_(a[0])
        y[0] = 3.0
        y[1, :2] = b[:2]
        z = L.nn.functional.relu(y * 1, inplace=True)
        z.clamp_(max=2.5)
        return z, y, y.new_zeros(2)
    return f


def _run(lib, case, vectorize=True):
    fn, inputs, kw = VECTORIZED[case] if case in VECTORIZED else LOOPED[case]
    args = _to(lib, inputs)
    if lib is torch:
        if case in LOOPED and case not in OP_LOOPED:  # torch refuses these: its own loop is the reference
            return torch.stack([fn(torch)(*[a[i] for a in args]) for i in range(len(args[0]))])
        return torch.func.vmap(fn(torch), **kw)(*args)
    kw = dict(kw)
    return _vmap(fn(ember), kw.pop("in_dims", 0), kw.pop("out_dims", 0), kw.pop("randomness", "error"),
                 kw.pop("chunk_size", None), vectorize)(*args)


@pytest.mark.parametrize("case", sorted(VECTORIZED))
def test_vectorized_matches_torch(case):
    before = dict(_batched.stats)
    out = _run(ember, case)
    assert _batched.stats["loop"] == before["loop"], _batched.last_fallback[0]
    assert _batched.stats["vectorized"] == before["vectorized"] + 1
    assert _batched.stats["op_loop"] == before["op_loop"], "an op ran per sample"
    _same(out, _run(torch, case))
    _same(_run(ember, case, vectorize=False), out)


# functions that need a per-sample loop for one op (no batching rule) or for the whole function
OP_LOOPED = {
    "no_rule_op": (lambda L: lambda a: L.trace(a) + a.diag().sum() + L.linalg.det(a), [f64(4, 3, 3)], {}),
    "advanced_index": (lambda L: lambda a, i: a[i] + a[:, i].sum(), [f32(4, 3, 3), np.array([2, 0])],
                       {"in_dims": (0, None)}),
    "einsum": (lambda L: lambda a, b: L.einsum("ij,jk->ik", a, b), [f32(4, 2, 3), f32(4, 3, 2)], {}),
}
LOOPED = {
    "inplace_on_input": (lambda L: lambda a: a.mul_(2).add_(1), [f32(4, 3)], {}),
    "inplace_mixed_dtypes": (lambda L: lambda a: a.clone().add_(L.ones((), dtype=L.float64)), [f32(4, 3)], {}),
    "item": (lambda L: lambda a: a * 2 if a.sum().item() > 0 else a - 1, [f32(4, 3)], {}),
    "data_dependent_if": (lambda L: lambda a: a.exp() if (a > 0).all() else a.cos(), [np.abs(f32(4, 3)) * np.array(
        [[1], [-1], [1], [1]], dtype=np.float32)], {}),
    "setitem_on_input": (lambda L: lambda a: _setitem(a), [f32(4, 3)], {}),
}
LOOPED.update(OP_LOOPED)


def _setitem(a):
    a[0] = 5.0
    return a


@pytest.mark.parametrize("case", sorted(LOOPED))
def test_fallbacks_match_torch(case):
    before = dict(_batched.stats)
    out = _run(ember, case)
    if case in OP_LOOPED:
        assert _batched.stats["vectorized"] == before["vectorized"] + 1, _batched.last_fallback[0]
        assert _batched.stats["op_loop"] > before["op_loop"]
    else:
        assert _batched.stats["loop"] == before["loop"] + 1
    _same(out, _run(torch, case))


# ---- composition with grad: per-sample gradients -------------------------------------------------

def _mlp_loss(L):
    F = L.nn.functional

    def loss(params, x, y):
        h = F.relu(F.linear(x.unsqueeze(0), params["w1"], params["b1"]))
        h = L.tanh(h @ params["w2"].t() + params["b2"])
        return F.cross_entropy(F.linear(h, params["w3"], params["b3"]), y.unsqueeze(0))
    return loss


_PARAMS = {"w1": f32(8, 5), "b1": f32(8), "w2": f32(6, 8), "b2": f32(6), "w3": f32(3, 6), "b3": f32(3)}


_XY = [f32(7, 5), ints(3, 7)]
_W3 = f32(3, 8)


def _per_sample(L, transform=None):
    params = _to(L, _PARAMS)
    x, y = _to(L, _XY)
    t = transform or L.func.grad
    return L.func.vmap(t(_mlp_loss(L)), in_dims=(None, 0, 0))(params, x, y)


def test_per_sample_gradients():
    before = dict(_batched.stats)
    out = _per_sample(ember)
    assert _batched.stats["loop"] == before["loop"] and _batched.stats["op_loop"] == before["op_loop"]
    _same(out, _per_sample(torch), rtol=1e-4, atol=1e-5)
    gv = _per_sample(ember, lambda f: ember.func.grad_and_value(f))
    _same(gv, _per_sample(torch, lambda f: torch.func.grad_and_value(f)), rtol=1e-4, atol=1e-5)


def test_per_sample_gradients_of_a_module():
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(5, 8), L.nn.ReLU(), L.nn.Linear(8, 3))
        for p, v in zip(model.parameters(), [_PARAMS["w1"], _PARAMS["b1"], _W3, _PARAMS["b3"]]):
            with L.no_grad():
                p.copy_(L.from_numpy(v))
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y):
            return L.nn.functional.cross_entropy(L.func.functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
        x, y = _to(L, _XY)
        return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"]
    _same(out, run(torch), rtol=1e-4, atol=1e-5)


_ABC = [f32(4, 3), f32(3, 2), f32(4, 2)]
_XBW = [f32(3, 4, 5), f32(5), f32(2, 5, 3)]
_XW = [f32(4, 3, 5), f32(5, 2)]


def test_vjp_inside_vmap_and_grad_of_batched_input():
    def run(L):
        a, b, ct = _to(L, _ABC)

        def f(x, ct):
            out, fn = L.func.vjp(lambda x, w: (x @ w).sin(), x, b)
            return out, fn(ct)
        g = L.func.vmap(L.func.grad(lambda x: (x.exp() * x).sum()))(a)
        return L.func.vmap(f)(a, ct), g
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"]
    _same(out, run(torch))


def test_nested_vmap():
    def run(L):
        x, b, w = _to(L, _XBW)
        inner = L.func.vmap(lambda a, c: (a * c).sum() + a.exp().mean(), in_dims=(0, None))
        r1 = L.func.vmap(inner, in_dims=(0, None))(x, b)
        r2 = L.func.vmap(L.func.vmap(L.func.grad(lambda w, v: L.tanh(v @ w).pow(2).sum()), in_dims=(None, 0)),
                         in_dims=(0, None))(w, x[0])
        r3 = L.func.vmap(L.func.vmap(lambda a, c: a @ c, in_dims=(0, None)), in_dims=(None, 0), out_dims=1)(x[0], w)
        r4 = L.func.vmap(L.func.vmap(lambda a: L.trace(a) * a.sum()))(x.reshape(3, 2, 2, 5)[..., :2])  # per-op loop
        return r1, r2, r3, r4
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"], _batched.last_fallback[0]
    _same(out, run(torch))


def test_vmap_inside_grad_gradients():
    """Backward through the batched ops: the gradient of a vmapped function by autograd."""
    def run(L):
        x, w = _to(L, _XW)
        x.requires_grad_()
        w.requires_grad_()
        out = L.func.vmap(lambda a: (L.softmax(a @ w, -1) * a[:, :2]).sum(0).norm(), in_dims=0)(x)
        (out * L.arange(4.0)).sum().backward()
        return out, x.grad, w.grad
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"]
    _same(out, run(torch))


def test_errors_and_randomness():
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        ember.func.vmap(lambda a: a * 2, out_dims=None)(ember.ones(3))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ember.func.vmap(lambda a: ember.nn.functional.dropout(a, 0.5))(ember.ones(3, 2))
    # a draw in 'different'/'same' mode takes the loop, with the loop's random stream
    for mode in ("different", "same"):
        ember.manual_seed(3)
        before = dict(_batched.stats)
        v = ember.func.vmap(lambda a: a + ember.rand(2), randomness=mode)(ember.zeros(3, 2))
        assert _batched.stats["loop"] == before["loop"] + 1
        ember.manual_seed(3)
        looped = _vmap(lambda a: a + ember.rand(2), 0, 0, mode, None, False)(ember.zeros(3, 2))
        assert ember.equal(v, looped)
    # a failed attempt leaves ember's functions and Tensor's methods as they were
    assert all(d[n] is fn for d, originals, _ in _batched._wrappers for n, fn in originals.items())
    assert ember.Tensor.matmul is _batched._TENSOR_METHODS["matmul"][0]


def test_inplace_on_an_input_happens_once():
    """An in-place op on an input is left to the loop, even when the attempt went further first."""
    for lib in (ember, torch):
        x = lib.ones(3, 2)
        if lib is ember:
            lib.func.vmap(lambda a: (a.mul_(2), a.sum().item()), out_dims=(0, None))(x)
        else:
            lib.func.vmap(lambda a: a.mul_(2))(x)
        assert x.sum().item() == 12.0


def test_jacrev_inside_vmap():
    def run(L):
        x, w = _to(L, [_XBW[0][0].astype(np.float64), _XBW[2][0].astype(np.float64)])
        f = L.func.jacrev(lambda x, w: (x @ w).tanh() * x[:2].sum(), argnums=(0, 1))
        return L.func.vmap(f, in_dims=(0, None))(x, w), L.func.vmap(L.func.jacrev(lambda a: a.sin().sum()))(x)
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"], _batched.last_fallback[0]
    _same(out, run(torch), rtol=1e-10, atol=1e-12)


def test_forward_mode_transforms_inside_vmap():
    def run(L):
        x, w, t = _to(L, [_XBW[0][0].astype(np.float64), _XBW[2][0].astype(np.float64),
                          _XBW[0][1].astype(np.float64)])
        jf = L.func.vmap(L.func.jacfwd(lambda x, w: (x @ w).tanh() * x[:2].sum(), argnums=(0, 1)),
                         in_dims=(0, None))(x, w)
        h = L.func.vmap(L.func.hessian(lambda x: x.sin().sum() * (x * x).sum()))(x)
        jv = L.func.vmap(lambda x, t: L.func.jvp(lambda a: (a.exp() * a).sum(0, keepdim=True), (x,), (t,)))(x, t)
        return jf, h, jv
    before = dict(_batched.stats)
    out = run(ember)
    assert _batched.stats["loop"] == before["loop"], _batched.last_fallback[0]
    assert _batched.stats["op_loop"] == before["op_loop"]
    _same(out, run(torch), rtol=1e-10, atol=1e-12)


def test_errors_and_randomness_match_torch():
    """test_errors_and_randomness's public half on both libraries: the raised types, and seeded draws under
    randomness='different'/'same' give torch's numbers and leave torch's RNG state."""
    def story(lib):
        out = []
        for fn in (lambda: lib.func.vmap(lambda a: a * 2, out_dims=None)(lib.ones(3)),
                   lambda: lib.func.vmap(lambda a: lib.nn.functional.dropout(a, 0.5))(lib.ones(3, 2))):
            try:
                fn()
                out.append(None)
            except Exception as e:  # noqa: BLE001 - the type is the observation
                out.append(type(e).__name__)
        for mode in ("different", "same"):
            lib.manual_seed(3)
            out += [lib.func.vmap(lambda a: a + lib.rand(2), randomness=mode)(lib.zeros(3, 2)).tolist(),
                    lib.rand(1).tolist()]
        return out
    assert story(ember) == story(torch)
