"""ember.func against torch.func: every transform on the same functions and NumPy inputs must give
the same values, shapes, dtypes, requires_grad and errors; plus ember.utils._pytree against
torch.utils._pytree and functional_call/stack_module_state on real modules."""
import collections
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.utils._pytree as tpytree

import ember
import ember.utils._pytree as epytree
from ember.func import functional_call as e_functional_call

LIBS = (torch, ember)


def arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def t(lib, a, dtype=None, requires_grad=False):
    return lib.tensor(a, dtype=dtype or lib.float64, requires_grad=requires_grad)


def assert_tree(tv, ev, where="out", atol=1e-9, rtol=1e-7):
    """A torch result and an ember result agree leaf by leaf (tensors, containers, scalars)."""
    if isinstance(tv, torch.Tensor):
        assert isinstance(ev, ember.Tensor), f"{where}: ember gave {type(ev).__name__}"
        assert tuple(tv.shape) == tuple(ev.shape), f"{where}: shape {tuple(tv.shape)} vs {tuple(ev.shape)}"
        assert str(tv.dtype) == str(ev.dtype), f"{where}: dtype {tv.dtype} vs {ev.dtype}"
        assert tv.requires_grad == ev.requires_grad, f"{where}: requires_grad {tv.requires_grad} vs {ev.requires_grad}"
        np.testing.assert_allclose(ev.detach().numpy(), tv.detach().numpy(), atol=atol, rtol=rtol, err_msg=where)
    elif isinstance(tv, dict):
        assert list(tv) == list(ev), f"{where}: keys {list(tv)} vs {list(ev)}"
        for k in tv:
            assert_tree(tv[k], ev[k], f"{where}[{k!r}]", atol, rtol)
    elif isinstance(tv, (tuple, list)):
        assert type(tv) is type(ev) and len(tv) == len(ev), f"{where}: {tv!r} vs {ev!r}"
        for i, (a, b) in enumerate(zip(tv, ev)):
            assert_tree(a, b, f"{where}[{i}]", atol, rtol)
    else:
        assert tv == ev, f"{where}: {tv!r} vs {ev!r}"


def both(fn, **tol):
    """fn(lib) on torch and on ember give the same tree."""
    assert_tree(fn(torch), fn(ember), **tol)


def same_error(fn, match_message=True):
    """fn(lib) raises the same exception type (and message) on both libraries."""
    errors = []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn(lib)
        errors.append(info.value)
    te, ee = errors
    assert type(te) is type(ee), f"torch raised {type(te).__name__}: {te}; ember raised {type(ee).__name__}: {ee}"
    if match_message:
        assert str(te) == str(ee), f"\ntorch: {te}\nember: {ee}"


def mlp(lib, seed=0, d_in=4, hidden=5, d_out=3):
    """The same small tanh MLP on both libraries (weights from one NumPy stream)."""
    model = lib.nn.Sequential(lib.nn.Linear(d_in, hidden), lib.nn.Tanh(), lib.nn.Linear(hidden, d_out))
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.7, 0.7, tuple(p.shape)), dtype=p.dtype))
    return model


# ---- pytree ----------------------------------------------------------------------------------

Pair = collections.namedtuple("Pair", "a b")
TREES = [1, None, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, (3,)]}, ({"x": 1, "y": None}, [4]), Pair(1, [2, 3]),
         collections.OrderedDict(z=1, a=(2,)), collections.deque([1, 2], maxlen=4),
         collections.defaultdict(list, {"k": 1, "j": [2]})]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_pytree_flatten_unflatten_map(tree):
    tl, ts = tpytree.tree_flatten(tree)
    el, es = epytree.tree_flatten(tree)
    assert tl == el
    assert repr(ts) == repr(es)
    assert es.num_leaves == ts.num_leaves
    assert epytree.tree_unflatten(el, es) == tree
    inc = lambda v: None if v is None else v + 1  # noqa: E731
    assert epytree.tree_map(inc, tree) == tpytree.tree_map(inc, tree)


def test_pytree_return_types():
    """torch.return_types are nodes of their own type; vmap stacks their fields."""
    def run(lib):
        leaves, spec = (tpytree if lib is torch else epytree).tree_flatten(lib.max(lib.ones(2, 2), 0))
        out = lib.func.vmap(lambda a: lib.max(a, 0))(t(lib, arr(3, 4)))
        return leaves, repr(spec).replace("ember", "torch"), type(out).__name__, out.values, out.indices
    both(run)


def test_pytree_broadcast_prefix():
    full = ({"a": 1, "b": 2}, [3, 4], 5)
    for prefix in [0, (0, None, 1), ({"a": 0, "b": None}, 1, None), (0, [1, 2], 3), (0, 1), ({"a": 0}, 1, 2)]:
        want = tpytree._broadcast_to_and_flatten(prefix, tpytree.tree_structure(full))
        got = epytree._broadcast_to_and_flatten(prefix, epytree.tree_structure(full))
        assert got == want, prefix


# ---- grad / grad_and_value --------------------------------------------------------------------

def f_elementwise(lib, x):
    return (x.sin() * x.exp()).sum()


def f_two(lib, x, w):
    return lib.tanh(x @ w).pow(2).mean()


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(argnums):
    def run(lib):
        x, w = t(lib, arr(3, 4)), t(lib, arr(4, 2, seed=1))
        return lib.func.grad(lambda x, w: f_two(lib, x, w), argnums=argnums)(x, w)
    both(run)


def test_grad_and_value_has_aux_and_kwargs():
    def run(lib):
        def f(x, scale=1.0):
            y = f_elementwise(lib, x) * scale
            return y, {"double": 2 * x, "y": y}
        x = t(lib, arr(5))
        return lib.func.grad_and_value(f, has_aux=True)(x, scale=3.0)
    both(run)


def test_grad_dict_input():
    def run(lib):
        params = {"w": t(lib, arr(4, 2)), "b": t(lib, arr(2, seed=1))}
        x = t(lib, arr(3, 4, seed=2))
        return lib.func.grad(lambda p, x: ((x @ p["w"] + p["b"]) ** 2).sum())(params, x)
    both(run)


def test_grad_of_grad():
    def run(lib):
        x = t(lib, arr(4))
        f = lambda x: (x ** 3 * x.sin()).sum()  # noqa: E731
        g = lib.func.grad(f)
        return lib.func.grad(lambda x: g(x).sum())(x), lib.func.grad(lib.func.grad(lambda s: s.sin() * s ** 2))(x[0])
    both(run)


def test_grad_outputs_do_not_leak_graph_state():
    def run(lib):
        x = t(lib, arr(3))
        g, v = lib.func.grad_and_value(lambda x: (x ** 3).sum())(x)
        return g, v, x.requires_grad
    both(run)


def test_grad_composes_with_autograd():
    """Inputs or closed-over tensors that require grad keep the transform's results differentiable."""
    def run(lib):
        x = t(lib, arr(3), requires_grad=True)
        w = t(lib, arr(3, seed=1), requires_grad=True)
        g = lib.func.grad(lambda x: (w * x ** 3).sum())(x)
        g.pow(2).sum().backward()
        g_closure = lib.func.grad(lambda y: (w * y ** 2).sum())(t(lib, arr(3, seed=2)))
        with lib.no_grad():
            g_off = lib.func.grad(lambda x: (x ** 3).sum())(x)
        return g.detach(), x.grad, w.grad, g_closure.requires_grad, g_off
    both(run)


def _under_no_grad(lib, fn):
    with lib.no_grad():
        return fn()


COMPOSE = {
    "grad_no_grad": lambda lib, x, v: _under_no_grad(lib, lambda: lib.func.grad(lambda a: (a ** 3).sum())(x)),
    "vjp_fn_no_grad": lambda lib, x, v: _under_no_grad(lib, lambda: lib.func.vjp(lambda a: a ** 3, x)[1](v)[0]),
    "vjp_fn_plain": lambda lib, x, v: lib.func.vjp(lambda a: a ** 3, x)[1](v, create_graph=False)[0],
    "jvp": lambda lib, x, v: lib.func.jvp(lambda a: a ** 3, (x,), (v,))[1],
    "jvp_tangent": lambda lib, x, v: lib.func.jvp(lambda a: a ** 3, (v.detach(),), (x,))[1],
    "jacrev": lambda lib, x, v: lib.func.jacrev(lambda a: a ** 3)(x),
    "hessian": lambda lib, x, v: lib.func.hessian(lambda a: (a ** 3).sum())(x),
    "vmap_no_grad": lambda lib, x, v: _under_no_grad(lib, lambda: lib.func.vmap(lambda a: a ** 3)(x)),
}


@pytest.mark.parametrize("case", list(COMPOSE))
def test_transforms_of_tensors_that_require_grad(case):
    """torch.func results stay on the autograd graph of inputs that require grad (also under no_grad)."""
    def run(lib):
        x = t(lib, arr(2, 3), requires_grad=True)
        out = COMPOSE[case](lib, x, t(lib, arr(2, 3, seed=1)))
        grads = lib.autograd.grad(out.sum(), x, allow_unused=True) if out.requires_grad else None
        return out, grads
    both(run)


def test_grad_errors():
    same_error(lambda lib: lib.func.grad(lambda x: x * 2)(t(lib, arr(3))))
    same_error(lambda lib: lib.func.grad(lambda x: x.sum())(3.0))
    same_error(lambda lib: lib.func.grad(lambda x: x.sum(), argnums=2)(t(lib, arr(3))))
    same_error(lambda lib: lib.func.grad(lambda x: x.sum(), argnums=(0, 0))(t(lib, arr(3))))
    same_error(lambda lib: lib.func.grad(lambda x: x.sum(), has_aux=True)(t(lib, arr(3))))
    same_error(lambda lib: lib.func.grad(lambda x: 1.0)(t(lib, arr(3))))


# ---- vjp / jvp / linearize --------------------------------------------------------------------

def test_vjp_tuple_output_and_aux():
    def run(lib):
        x, y = t(lib, arr(3, 2)), t(lib, arr(2, 4, seed=1))
        out, fn, aux = lib.func.vjp(lambda a, b: ((a @ b).sin(), a.exp().sum()), x, y, has_aux=False) + (None,)
        ct = (t(lib, arr(3, 4, seed=2)), t(lib, np.array(0.5)))
        g1 = fn(ct)
        g2 = fn(ct)  # vjp_fn can be called again (retain_graph=True by default)
        out_a, fn_a, aux_a = lib.func.vjp(lambda a: (a.cos(), a * 3), x, has_aux=True)
        return out, g1, g2, out_a, fn_a(t(lib, arr(3, 2, seed=3))), aux_a
    both(run)


def test_vjp_errors():
    same_error(lambda lib: lib.func.vjp(lambda a: (a, a), t(lib, arr(3)))[1](t(lib, arr(3))))
    same_error(lambda lib: lib.func.vjp(lambda a: a.long(), t(lib, arr(3))))


@pytest.mark.parametrize("case", ["sin", "matmul2", "tuple_out", "unused"])
def test_jvp(case):
    def run(lib):
        x, y = t(lib, arr(3, 2)), t(lib, arr(2, 4, seed=1))
        tx, ty = t(lib, arr(3, 2, seed=2)), t(lib, arr(2, 4, seed=3))
        if case == "sin":
            return lib.func.jvp(lambda a: a.sin() * a, (x,), (tx,))
        if case == "matmul2":
            return lib.func.jvp(lambda a, b: lib.tanh(a @ b), (x, y), (tx, ty))
        if case == "tuple_out":
            return lib.func.jvp(lambda a, b: ((a @ b).exp(), a.sum(), b), (x, y), (tx, ty))
        return lib.func.jvp(lambda a, b: (a * 2, lib.ones(2, dtype=lib.float64)), (x, y), (tx, ty))
    both(run)


def test_jvp_has_aux_and_dict_primal():
    def run(lib):
        p = {"a": t(lib, arr(3)), "b": t(lib, arr(3, seed=1))}
        tp = {"a": t(lib, arr(3, seed=2)), "b": t(lib, arr(3, seed=3))}
        return lib.func.jvp(lambda d: ((d["a"] * d["b"]).sin(), d["a"] + 1), (p,), (tp,), has_aux=True)
    both(run)


def test_jvp_errors():
    x = lambda lib: t(lib, arr(3))  # noqa: E731
    same_error(lambda lib: lib.func.jvp(lambda a: a, (x(lib),), (lib.ones(3, dtype=lib.int64),)))
    same_error(lambda lib: lib.func.jvp(lambda a: a, (lib.ones(3, dtype=lib.int64),), (x(lib),)))
    same_error(lambda lib: lib.func.jvp(lambda a: a, x(lib), (x(lib),)))
    same_error(lambda lib: lib.func.jvp(lambda a: a, (x(lib),), (x(lib), x(lib))))
    same_error(lambda lib: lib.func.jvp(lambda a: a, (x(lib),), (t(lib, arr(4)),)))
    same_error(lambda lib: lib.func.jvp(lambda a: lib.ones(3, dtype=lib.float64), (x(lib),), (x(lib),), strict=True))


def test_linearize():
    def run(lib):
        x = t(lib, arr(4))
        out, fn = lib.func.linearize(lambda a: (a.sin() * a.exp(), a.sum()), x)
        return out, fn(t(lib, arr(4, seed=1))), fn(t(lib, arr(4, seed=2)))
    both(run)


# ---- jacrev / jacfwd / hessian ----------------------------------------------------------------

JAC_FUNCS = {
    "elementwise": lambda lib, x, w: x.sin() * x,
    "matmul": lambda lib, x, w: lib.tanh(x @ w),
    "reduction": lambda lib, x, w: (x @ w).logsumexp(dim=0),
    "tuple_out": lambda lib, x, w: (x.exp().sum(1), (x @ w).t()),
    "dict_out": lambda lib, x, w: {"s": (x * x).sum(), "m": x @ w},
}


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
@pytest.mark.parametrize("name", list(JAC_FUNCS))
def test_jacobians(jac, argnums, name):
    def run(lib):
        x, w = t(lib, arr(3, 2)), t(lib, arr(2, 4, seed=1))
        return getattr(lib.func, jac)(lambda x, w: JAC_FUNCS[name](lib, x, w), argnums=argnums)(x, w)
    both(run)


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_pytree_argnums_and_aux_errors(jac):
    def run(lib):
        a, k = t(lib, arr(2, 3)), t(lib, arr(2, 3, seed=1))
        return getattr(lib.func, jac)(lambda a, b: (a[0] * b["k"]).sum(0), argnums=(0, 1))([a], {"k": k})
    both(run)
    same_error(lambda lib: getattr(lib.func, jac)(lambda a: (a ** 3, 3.0), has_aux=True)(t(lib, arr(3))))


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_has_aux_float32(jac):
    def run(lib):
        x = t(lib, arr(4), dtype=lib.float32)
        return getattr(lib.func, jac)(lambda a: (a.exp() * a, a.sum()), has_aux=True)(x)
    both(run, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_errors(jac):
    if jac == "jacrev":
        same_error(lambda lib: lib.func.jacrev(lambda a: a.long())(t(lib, arr(3))))
    else:  # torch's jacfwd gives integer zeros there
        both(lambda lib: lib.func.jacfwd(lambda a: (a * 4).long())(t(lib, arr(3))))
    same_error(lambda lib: getattr(lib.func, jac)(lambda a: a.exp())(lib.tensor([1 + 2j, 3 - 1j])))
    same_error(lambda lib: getattr(lib.func, jac)(lambda a: a + 0j)(t(lib, arr(3))))
    same_error(lambda lib: getattr(lib.func, jac)(lambda a: a, argnums=(0, 0))(t(lib, arr(3))))
    same_error(lambda lib: getattr(lib.func, jac)(lambda a, b: a)(t(lib, arr(3)), b=1), match_message=False)


def test_jacrev_chunk_size_and_error():
    both(lambda lib: lib.func.jacrev(lambda a: a.cos().cumsum(0), chunk_size=2)(t(lib, arr(5))))
    same_error(lambda lib: lib.func.jacrev(lambda a: a, chunk_size=0))


def test_jacfwd_randomness_error():
    same_error(lambda lib: lib.func.jacfwd(lambda a: a * lib.rand(3, dtype=lib.float64))(t(lib, arr(3))))
    same_error(lambda lib: lib.func.jacfwd(lambda a: a, randomness="bad")(t(lib, arr(3))))


@pytest.mark.parametrize("compose", ["hessian", "jacrev_jacrev", "jacfwd_jacrev", "jacrev_jacfwd"])
def test_second_order_of_small_net(compose):
    def run(lib):
        model = mlp(lib, d_out=1)
        params = {k: v.detach() for k, v in model.named_parameters()}
        x = t(lib, arr(4, seed=5), dtype=lib.float32)

        def f(x):
            return lib.func.functional_call(model, params, (x,)).sum()
        F = lib.func
        if compose == "hessian":
            return F.hessian(f)(x)
        if compose == "jacrev_jacrev":
            return F.jacrev(F.jacrev(f))(x)
        if compose == "jacfwd_jacrev":
            return F.jacfwd(F.jacrev(f))(x)
        return F.jacrev(F.jacfwd(f))(x)
    both(run, atol=1e-6, rtol=1e-5)


def test_jacrev_of_net_params_and_hessian_argnums():
    def run(lib):
        model = mlp(lib)
        params = dict(model.named_parameters())
        x = t(lib, arr(2, 4, seed=5), dtype=lib.float32)
        jac = lib.func.jacrev(lambda p, x: lib.func.functional_call(model, p, x))(params, x)
        hess = lib.func.hessian(lambda a, b: (a.sin() * b ** 2).sum(), argnums=(0, 1))(t(lib, arr(3)), t(lib, arr(3)))
        return jac, hess
    both(run, atol=1e-6, rtol=1e-5)


# ---- vmap ----------------------------------------------------------------------------------

def test_vmap_in_dims_out_dims():
    def run(lib):
        V = lib.func.vmap
        x, y = t(lib, arr(3, 5)), t(lib, arr(5, 3, seed=1))
        d = {"x": t(lib, arr(4, 5, seed=2)), "y": t(lib, arr(5, seed=3))}
        return (V(lib.dot)(x, y.t()),
                V(lib.dot, in_dims=(0, 1))(x, y),
                V(lib.dot, in_dims=(0, None))(x, y[:, 0]),
                V(lambda a: a.sum())(x),                        # a reduction over all dims of each sample
                V(lambda a: a - a.mean(), in_dims=1)(x),       # shape-dependent per sample
                V(lambda a: a.outer(a), out_dims=1)(x),
                V(lambda a: a.outer(a), out_dims=-1)(x),
                V(lambda a: (a, a.sum()), out_dims=(1, 0))(x),
                V(lambda dd: dd["x"] @ dd["y"], in_dims=({"x": 0, "y": None},))(d),
                V(lambda a, scale: a * scale, in_dims=(-1, None))(x, 2.0),
                V(lambda a, k=1: a.roll(k))(x, k=2),
                V(V(lambda a: a.sum()))(x),
                V(V(lib.dot, in_dims=(0, None)), in_dims=(None, 1))(x, y),
                V(lambda a: (a.sum(), 3), out_dims=(0, None))(x))
    both(run)


def test_vmap_chunk_size():
    def run(lib):
        x = t(lib, arr(7, 3))
        return [lib.func.vmap(lambda a: a.exp() @ a, chunk_size=c)(x) for c in (None, 1, 3, 7, 10)]
    both(run)


def test_vmap_inplace_writes_reach_input():
    def run(lib):
        x = t(lib, arr(3, 4))
        lib.func.vmap(lambda a: a.mul_(2))(x)
        return x
    both(run)


def test_vmap_inside_grad():
    def run(lib):
        x = t(lib, arr(4, 3))
        return lib.func.grad(lambda a: lib.func.vmap(lambda r: (r.sin() * r).sum())(a).pow(2).sum())(x)
    both(run)


VMAP_ERRORS = {
    "in_dims_length": lambda lib: lib.func.vmap(lib.mul, in_dims=(0, 0, 0))(lib.ones(2), lib.ones(2)),
    "in_dims_list": lambda lib: lib.func.vmap(lib.mul, in_dims=[0, 0])(lib.ones(2), lib.ones(2)),
    "size_mismatch": lambda lib: lib.func.vmap(lib.mul)(lib.ones(2), lib.ones(3)),
    "in_dim_range": lambda lib: lib.func.vmap(lib.sin, in_dims=2)(lib.ones(2, 3)),
    "in_dim_not_int": lambda lib: lib.func.vmap(lib.sin, in_dims=(0.5,))(lib.ones(2, 3)),
    "non_tensor_mapped": lambda lib: lib.func.vmap(lib.mul)(lib.ones(2), 3.0),
    "nothing_mapped": lambda lib: lib.func.vmap(lib.mul, in_dims=None)(lib.ones(2), lib.ones(2)),
    "no_inputs": lambda lib: lib.func.vmap(lambda: 1)(),
    "non_tensor_out": lambda lib: lib.func.vmap(lambda a: 1.0)(lib.ones(2)),
    "out_dims_structure": lambda lib: lib.func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(lib.ones(2)),
    "out_dims_type": lambda lib: lib.func.vmap(lambda a: a, out_dims="x")(lib.ones(2)),
    "batched_out_dim_none": lambda lib: lib.func.vmap(lambda a: a * 2, out_dims=None)(lib.arange(3.0)),
    "chunk_size": lambda lib: lib.func.vmap(lib.sin, chunk_size=0),
    "randomness_value": lambda lib: lib.func.vmap(lib.sin, randomness="sometimes"),
    "random_in_error_mode": lambda lib: lib.func.vmap(lambda a: a + lib.randn(3))(lib.ones(2, 3)),
    "dropout_in_error_mode": lambda lib: lib.func.vmap(lambda a: lib.nn.functional.dropout(a, 0.5))(lib.ones(2, 3)),
    "grad_of_vector": lambda lib: lib.func.vmap(lib.func.grad(lambda a: a * 2))(lib.ones(2, 3)),
    "random_outer_error": lambda lib: lib.func.vmap(lib.func.vmap(lambda a: a + lib.rand(()),
                                                                  randomness="different"))(lib.ones(2, 3)),
    "random_inner_error": lambda lib: lib.func.vmap(lib.func.vmap(lambda a: a + lib.rand(())),
                                                    randomness="same")(lib.ones(2, 3)),
}


@pytest.mark.parametrize("case", list(VMAP_ERRORS))
def test_vmap_errors(case):
    same_error(VMAP_ERRORS[case])


def test_vmap_empty_batch():
    def run(lib):
        x = lib.ones(3, 0, 4)
        return (lib.func.vmap(lambda a, b: (a @ b, a.sum()), in_dims=(1, None), out_dims=(1, 0))(x, lib.ones(4, 2)),
                lib.func.vmap(lambda a: a.outer(a))(lib.ones(0, 3)))
    both(run)


def test_vmap_randomness_modes():
    for lib in LIBS:
        x = lib.zeros(4, 3)
        lib.manual_seed(0)
        same = lib.func.vmap(lambda a: a + lib.rand(3), randomness="same")(x)
        diff = lib.func.vmap(lambda a: a + lib.rand(3), randomness="different")(x)
        drop = lib.func.vmap(lambda a: lib.nn.functional.dropout(a + 1, 0.5), randomness="same")(x)
        assert bool((same == same[0]).all()) and bool((drop == drop[0]).all())
        assert not bool((diff == diff[0]).all())
        # 'same' advances the generator as one unbatched call does
        lib.manual_seed(1)
        lib.func.vmap(lambda a: a + lib.rand(3), randomness="same")(x)
        after = lib.rand(2)
        lib.manual_seed(1)
        lib.rand(3)
        assert bool((after == lib.rand(2)).all())


# ---- per-sample gradients and ensembling (torch.func tutorials) -------------------------------

def test_per_sample_grads_of_mlp():
    def run(lib):
        model = mlp(lib, d_in=6, hidden=8, d_out=4)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        data = t(lib, arr(5, 6, seed=3), dtype=lib.float32)
        targets = lib.tensor([0, 3, 1, 2, 3])

        def compute_loss(params, buffers, sample, target):
            pred = lib.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(pred, target.unsqueeze(0))
        per_sample = lib.func.vmap(lib.func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data,
                                                                                           targets)
        # the per-sample gradients sum to the batch gradient (times the batch size for a mean loss)
        loss = lib.nn.functional.cross_entropy(model(data), targets, reduction="sum")
        batch = lib.autograd.grad(loss, list(model.parameters()))
        return per_sample, [g.sum(0) for g in per_sample.values()], list(batch)
    both(run, atol=1e-6, rtol=1e-5)


def test_stack_module_state_ensemble():
    def run(lib):
        models = [mlp(lib, seed=s) for s in range(3)]
        params, buffers = lib.func.stack_module_state(models)
        base = models[0]

        def fmodel(params, buffers, x):
            return lib.func.functional_call(base, (params, buffers), (x,))
        x = t(lib, arr(6, 4, seed=9), dtype=lib.float32)
        same_batch = lib.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
        xs = t(lib, arr(3, 6, 4, seed=10), dtype=lib.float32)
        per_model = lib.func.vmap(fmodel)(params, buffers, xs)
        leaf = [(k, v.is_leaf, v.requires_grad) for k, v in params.items()]
        return params, same_batch, per_model, leaf, base[0].weight
    both(run, atol=1e-6, rtol=1e-5)


def test_stack_module_state_errors():
    same_error(lambda lib: lib.func.stack_module_state([]))
    same_error(lambda lib: lib.func.stack_module_state([mlp(lib), mlp(lib).eval()]))
    same_error(lambda lib: lib.func.stack_module_state([mlp(lib), lib.nn.Linear(4, 3)]))


# ---- functional_call --------------------------------------------------------------------------

def test_functional_call_swaps_and_restores():
    def run(lib):
        model = mlp(lib)
        orig = model[0].weight
        x = t(lib, arr(2, 4, seed=4), dtype=lib.float32)
        new = {"0.weight": lib.zeros(5, 4), "2.bias": lib.ones(3)}
        out = lib.func.functional_call(model, new, x)
        out_kw = lib.func.functional_call(model, [{"0.weight": lib.zeros(5, 4)}, {"2.bias": lib.ones(3)}],
                                          args=(), kwargs={"input": x})
        with pytest.raises(RuntimeError):
            lib.func.functional_call(model, {"0.weight": lib.ones(5, 7)}, x)  # the forward raises ...
        return out, out_kw, model[0].weight is orig, model(x)                  # ... and the weight is back
    both(run, atol=1e-6)


def test_functional_call_buffers_tied_and_strict():
    def run(lib):
        bn = lib.nn.BatchNorm1d(3)
        mean = lib.zeros(3)
        x = t(lib, arr(4, 3, seed=1), dtype=lib.float32)
        out = lib.func.functional_call(bn, {"running_mean": mean}, (x,))

        class Tied(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Linear(2, 2, bias=False)
                self.b = lib.nn.Linear(2, 2, bias=False)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        m = Tied()
        xx = lib.ones(1, 2)
        tied = lib.func.functional_call(m, {"a.weight": 2 * lib.eye(2)}, (xx,))
        untied = lib.func.functional_call(m, {"a.weight": 2 * lib.eye(2)}, (xx,), tie_weights=False)
        return out, mean, bn.running_mean, tied, tuple(untied.shape)
    both(run, atol=1e-6)
    same_error(lambda lib: lib.func.functional_call(mlp(lib), {"0.weight": lib.zeros(5, 4), "zz": lib.ones(1)},
                                                    (lib.ones(4),), strict=True))
    same_error(lambda lib: lib.func.functional_call(mlp(lib), ({"0.bias": lib.ones(5)}, {"0.bias": lib.ones(5)}),
                                                    (lib.ones(4),)))
    same_error(lambda lib: lib.func.functional_call(mlp(lib), 3, (lib.ones(4),)))


def test_functionalize_and_batch_norm_replacement():
    def run(lib):
        res = []
        for remove in ("mutations", "mutations_and_views"):
            for fn in (lambda a: a.add_(1).view(-1), lambda a: a.view(-1), lambda a: (a, a.sin()),
                       lambda a: a.t().add_(1), lambda a: a.add_(1)):
                x = lib.zeros(2, 2)
                out = lib.func.functionalize(fn, remove=remove)(x)
                first = out[0] if isinstance(out, tuple) else out
                first[(0,) * first.dim()] = 5
                res += [x, out, first is x]
        net = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.BatchNorm1d(3))
        lib.func.replace_all_batch_norm_modules_(net)
        bn = net[1]
        xb = t(lib, arr(4, 3), dtype=lib.float32)
        res += [bn.running_mean is None, bn.num_batches_tracked is None, bn.track_running_stats,
                lib.func.vmap(lambda r: r * 2)(xb).shape == (4, 3), lib.func.debug_unwrap(xb) is xb]
        return res
    both(run)
    same_error(lambda lib: lib.func.functionalize(lambda a: a, remove="views"))


def test_stateless_functional_call_warns():
    model = mlp(ember)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = ember.nn.utils.stateless.functional_call(model, {"2.bias": ember.ones(3)}, ember.zeros(4))
    assert out.shape == (3,)
    expected = e_functional_call(model, {"2.bias": ember.ones(3)}, ember.zeros(4))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy())


def test_namespace():
    """ember.func, ember.vmap and ember.utils._pytree load on first use, not with `import ember`."""
    code = ("import sys, ember; assert 'ember.func' not in sys.modules; "
            "assert 'ember.utils._pytree' not in sys.modules; "
            "assert ember.vmap is ember.func.vmap; assert callable(ember.utils._pytree.tree_map); "
            "from ember.func import grad, vmap; from ember import vmap as v2; assert v2 is vmap; "
            "from ember.nn.utils.stateless import functional_call")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


@pytest.mark.parametrize("fn", ["vjp", "jacobian", "hessian", "vhp", "hvp"])
def test_autograd_functional_strict_refuses_an_unused_input(fn):
    """strict=True: an input the function does not use is torch's RuntimeError; without strict, zeros."""
    def call(lib, strict):
        F = lib.autograd.functional
        x, y = t(lib, arr(3)), t(lib, arr(3))
        f = lambda a, b: (a * a).sum()  # noqa: E731
        if fn == "vjp":
            return F.vjp(f, (x, y), strict=strict)[1]
        if fn in ("jacobian", "hessian"):
            return getattr(F, fn)(f, (x, y), strict=strict)
        return getattr(F, fn)(f, (x, y), (x, y), strict=strict)[1]
    for lib in (torch, ember):  # (hessian's message differs from torch's: types only)
        with pytest.raises(RuntimeError, match="independent of (the )?input"):
            call(lib, True)
    got, want = call(ember, False), call(torch, False)
    flat = lambda r: [v for v in (r if isinstance(r, tuple) else (r,)) for v in (v if isinstance(v, tuple) else (v,))]  # noqa: E731
    for g, w in zip(flat(got), flat(want)):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12)


def test_v_left_out_needs_a_single_element():
    """v may be left out only for one tensor of one element: vjp's output, jvp's input (torch's rule)."""
    for lib in (torch, ember):
        F = lib.autograd.functional
        assert float(F.vjp(lambda x: (x * 3).sum(), lib.tensor([2.0, 1.0]))[1][0]) == 3.0, lib.__name__
        assert float(F.jvp(lambda x: x * 3, lib.tensor(2.0))[1]) == 3.0, lib.__name__
        with pytest.raises(RuntimeError, match="can only be None if the user-provided function returns"):
            F.vjp(lambda x: x * 3, lib.tensor([1.0, 2.0]))
        for fn in (F.hvp, F.vhp):  # (their v is the input's tangent)
            assert float(fn(lambda x: (x ** 3).sum(), lib.tensor([2.0]))[1]) == 12.0, lib.__name__
        for inputs in (lib.tensor([1.0, 2.0]), (lib.tensor([1.0]), lib.tensor([2.0]))):
            for fn in (F.jvp, F.hvp, F.vhp):
                with pytest.raises(RuntimeError, match="can only be None if the input to the user-provided function"):
                    fn(lambda *x: (x[0] ** 3).sum(), inputs)
