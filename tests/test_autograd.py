"""The autograd engine and its API, checked against torch: the same program runs on
both libraries (`lib` is torch or ember) and values, gradients, graph structure,
hook order and error messages must agree."""
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = (torch, ember)


# ---- helpers -----------------------------------------------------------------------------

def rand(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def leaves(lib, *arrays, requires_grad=True):
    return [lib.tensor(a, requires_grad=requires_grad) for a in arrays]


def values(t):
    return None if t is None else t.detach().numpy()


def assert_same(tv, ev, where="", atol=1e-10, rtol=1e-7):
    """A torch result and an ember result agree (tensors, None, sequences, scalars)."""
    if isinstance(tv, torch.Tensor):
        assert isinstance(ev, ember.Tensor), f"{where}: ember gave {type(ev).__name__}"
        assert tuple(tv.shape) == tuple(ev.shape), f"{where}: shape {tuple(tv.shape)} vs {tuple(ev.shape)}"
        assert str(tv.dtype) == str(ev.dtype), f"{where}: dtype {tv.dtype} vs {ev.dtype}"
        assert tv.requires_grad == ev.requires_grad, f"{where}: requires_grad {tv.requires_grad} vs {ev.requires_grad}"
        np.testing.assert_allclose(values(ev), values(tv), atol=atol, rtol=rtol, err_msg=where)
    elif isinstance(tv, (tuple, list)):
        assert len(tv) == len(ev), f"{where}: {len(tv)} vs {len(ev)} items"
        for i, (a, b) in enumerate(zip(tv, ev)):
            assert_same(a, b, f"{where}[{i}]", atol, rtol)
    else:
        assert tv == ev, f"{where}: {tv!r} vs {ev!r}"


def run_both(fn, *arrays, requires_grad=True):
    """fn(lib, *leaves) on torch and on ember; returns ((torch result, torch leaves), (ember ...))."""
    out = []
    for lib in LIBS:
        xs = leaves(lib, *arrays, requires_grad=requires_grad)
        out.append((fn(lib, *xs), xs))
    return out


def check_grads(fn, *arrays, seed=1, create_graph=False):
    """Compare fn's outputs and d(outputs)/d(leaves) under a random upstream gradient."""
    (t_out, t_in), (e_out, e_in) = run_both(fn, *arrays)
    assert_same(t_out, e_out, "output")
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    e_outs = e_out if isinstance(e_out, (tuple, list)) else (e_out,)
    rng = np.random.default_rng(seed)
    ups = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    t_g = torch.autograd.grad(t_outs, t_in, [torch.tensor(u) for u in ups], allow_unused=True,
                              create_graph=create_graph)
    e_g = ember.autograd.grad(e_outs, e_in, [ember.tensor(u) for u in ups], allow_unused=True,
                              create_graph=create_graph)
    assert_same(t_g, e_g, "grad")
    return (t_out, t_in, t_g), (e_out, e_in, e_g)


def same_error(fn):
    """fn(lib) raises the same exception type with the same message on both libraries."""
    errors = []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn(lib)
        errors.append(info.value)
    t, e = errors
    assert type(t) is type(e), f"torch raised {type(t).__name__}: {t}; ember raised {type(e).__name__}: {e}"
    assert str(t) == str(e), f"\ntorch: {t}\nember: {e}"


def graph_names(fn, depth=6):
    """Nested (name, [children]) structure of a grad_fn graph, to compare torch and ember."""
    if fn is None or depth == 0:
        return None
    kids = [(graph_names(n, depth - 1), nr) for n, nr in fn.next_functions]
    return (fn.name(), kids)


# ---- requires_grad, leaves, grad_fn ----------------------------------------------------------

@pytest.mark.parametrize("expr", [
    lambda lib, a, b, c: a + b,
    lambda lib, a, b, c: a * c,
    lambda lib, a, b, c: (b * c).exp(),
    lambda lib, a, b, c: a[0] + c.sum(),
    lambda lib, a, b, c: a.detach() * b,
    lambda lib, a, b, c: lib.where(a > 0, a, c),
    lambda lib, a, b, c: (a > 0).float() * b,
    lambda lib, a, b, c: a.sum() > 0,
    lambda lib, a, b, c: (a * c).floor(),
])
def test_requires_grad_propagation(expr):
    res = []
    for lib in LIBS:
        a = lib.tensor(rand(3, seed=1), requires_grad=True)
        b = lib.tensor(rand(3, seed=2))
        c = lib.tensor(rand(3, seed=3), requires_grad=True)
        out = expr(lib, a, b, c)
        res.append((out.requires_grad, out.is_leaf, out.grad_fn is None))
    assert res[0] == res[1]


def test_leaves_and_is_leaf():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0])
        assert x.is_leaf and not x.requires_grad and x.grad_fn is None
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        assert w.is_leaf and w.grad_fn is None
        y = w * 2
        assert not y.is_leaf and y.grad_fn is not None
        z = x * 2  # no input requires grad: a leaf
        assert z.is_leaf and not z.requires_grad
        d = y.detach()
        assert d.is_leaf and not d.requires_grad
        with lib.no_grad():
            n = w * 2
        assert n.is_leaf and not n.requires_grad


def test_requires_grad_flag_errors():
    same_error(lambda lib: setattr(lib.tensor([1.0], requires_grad=True) * 2, "requires_grad", False))
    same_error(lambda lib: lib.tensor([1, 2]).requires_grad_())
    same_error(lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_())
    for lib in LIBS:
        y = lib.tensor([1.0], requires_grad=True) * 2
        assert y.requires_grad_() is y  # allowed: a no-op on a non-leaf
        with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
            y.requires_grad = True
        x = lib.tensor([1.0])
        assert x.requires_grad_() is x and x.requires_grad
        x.requires_grad_(False)
        assert not x.requires_grad


def test_integer_and_bool_results_do_not_require_grad():
    for lib in LIBS:
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        assert not (x > 0).requires_grad
        assert not x.long().requires_grad
        assert x.floor().requires_grad


# ---- .grad accumulation and backward() ------------------------------------------------------

def test_grad_accumulates_in_place_across_backward_calls():
    res = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        first = g.clone()
        (x * 3).sum().backward()
        assert x.grad is g, "the .grad object is kept and updated in place"
        res.append((first, x.grad))
    assert_same(res[0], res[1])


def test_grad_setter_errors():
    same_error(lambda lib: setattr(lib.ones(2, requires_grad=True), "grad", lib.ones(3)))
    same_error(lambda lib: setattr(lib.ones(2, requires_grad=True), "grad", lib.ones(2, dtype=lib.float64)))
    same_error(lambda lib: setattr(lib.ones(2, dtype=lib.float64, requires_grad=True), "grad", lib.ones(2)))
    same_error(lambda lib: setattr(lib.ones(2, requires_grad=True), "grad", 3))


def test_grad_set_by_user_then_accumulated():
    res = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.grad = lib.tensor([10.0, 20.0])
        user = x.grad
        (x * 2).sum().backward()
        assert x.grad is user
        x.grad = None
        (x * 5).sum().backward()
        res.append(x.grad)
    assert_same(res[0], res[1])


def test_backward_does_not_alias_the_users_gradient():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g = lib.tensor([1.0, 1.0])
        (x + 0).backward(g)
        (x + 0).backward(g)
        assert g.tolist() == [1.0, 1.0], "accumulating into .grad changed the user's gradient tensor"
        assert x.grad.tolist() == [2.0, 2.0]


def test_gradient_kept_by_a_hook_is_not_reused_as_grad():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        kept = []
        y = x + 0
        y.register_hook(lambda g: kept.append(g))
        (y * 2).sum().backward()
        (x * 3).sum().backward()
        assert kept[0].tolist() == [2.0, 2.0], "accumulating into x.grad changed the tensor a hook kept"
        assert x.grad.tolist() == [5.0, 5.0]


def test_backward_gradient_argument():
    def fn(lib, x):
        y = x.exp() * 2
        y.backward(lib.tensor([[1.0, 0.5, -1.0], [2.0, 0.0, 3.0]], dtype=lib.float64))
        return x.grad
    (t, _), (e, _) = run_both(fn, rand(2, 3))
    assert_same(t, e)


def test_gradient_of_other_dtype_is_cast():
    res = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).backward(lib.tensor([1.0, 3.0], dtype=lib.float64))
        res.append(x.grad)
    assert_same(res[0], res[1])


def test_backward_twice_needs_retain_graph():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        np.testing.assert_allclose(values(x.grad), 2 * (np.exp([1, 2]) * np.array([2, 3])))

    def twice(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward()
        y.backward()
    same_error(twice)


@pytest.mark.parametrize("case", ["nonscalar", "no_grad_output", "no_grad_explicit", "shape", "list_count",
                                  "complex_root", "bad_type"])
def test_backward_errors(case):
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        if case == "nonscalar":
            (x * 2).backward()
        elif case == "no_grad_output":
            lib.tensor([1.0, 2.0]).sum().backward()
        elif case == "no_grad_explicit":
            lib.tensor([1.0, 2.0]).backward(lib.ones(2))
        elif case == "shape":
            (x * 2).backward(lib.ones(3))
        elif case == "list_count":
            lib.autograd.backward([x.sum(), x.sum()], [lib.tensor(1.0)])
        elif case == "complex_root":
            (x * 2).backward(lib.ones(2, dtype=lib.complex64))
        elif case == "bad_type":
            lib.autograd.backward([x.sum()], [2.0])
    same_error(fn)


def test_backward_inputs_accumulates_only_into_inputs():
    res = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        y = x * w
        z = (y * y).sum()
        z.backward(inputs=[w], retain_graph=True)
        assert x.grad is None
        z.backward(inputs=y)  # a non-leaf input: its .grad is kept (torch calls retain_grad)
        assert y.retains_grad
        res.append((w.grad, y.grad, x.grad))
    assert_same(res[0], res[1])
    same_error(lambda lib: lib.tensor([1.0], requires_grad=True).sum().backward(inputs=[]))
    same_error(lambda lib: lib.tensor([1.0], requires_grad=True).sum().backward(inputs=[lib.ones(1)]))


def test_roots_unrelated_to_inputs_are_ignored():
    def fn(lib, x, w):
        log = []
        other = x.exp()
        other.register_hook(lambda g: log.append("hook on an unrelated root"))
        g, = lib.autograd.grad([(w * 2).sum(), other], [w], [None, lib.ones_like(other)])
        lib.autograd.backward([x, (w * 3).sum()], [lib.ones_like(x), None], inputs=[w])
        return g, w.grad, x.grad, log
    (t, _), (e, _) = run_both(fn, rand(3, seed=1), rand(3, seed=2))
    assert_same(t, e)


def test_backward_inputs_releases_the_graph():
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = y * y
        z.sum().backward(inputs=[y])
        z.sum().backward(inputs=[x])
    same_error(fn)


def test_backward_several_roots():
    def fn(lib, a, b):
        lib.autograd.backward([(a * b).sum(), (a.exp()).sum() * 2], [lib.tensor(2.0, dtype=lib.float64), None])
        return a.grad, b.grad
    (t, _), (e, _) = run_both(fn, rand(3, seed=1), rand(3, seed=2))
    assert_same(t, e)


# ---- autograd.grad -----------------------------------------------------------------------------

def test_grad_basic_and_leaves_untouched():
    for lib_out in [run_both(lambda lib, x, w: (lib.autograd.grad((x * w).exp().sum(), [x, w]), x.grad, w.grad),
                             rand(4, seed=1), rand(4, seed=2))]:
        (t, _), (e, _) = lib_out
        assert t[1] is None and e[1] is None and e[2] is None
        assert_same(t[0], e[0])


def test_grad_outputs_and_multiple_outputs():
    def fn(lib, x):
        outs = [x * 2, x.exp()]
        return lib.autograd.grad(outs, x, [lib.ones(3, dtype=lib.float64), lib.full((3,), 0.5, dtype=lib.float64)])
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


def test_grad_with_respect_to_non_leaf_and_itself():
    def fn(lib, x):
        y = x.exp()
        z = (y * y).sum()
        return lib.autograd.grad(z, y, retain_graph=True) + lib.autograd.grad(z, z) + lib.autograd.grad(z, [x, y])
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


def test_grad_allow_unused_and_materialize():
    def fn(lib, a, b):
        out = (a * 2).sum()
        r1 = lib.autograd.grad(out, [a, b], allow_unused=True, retain_graph=True)
        r2 = lib.autograd.grad(out, [a, b], materialize_grads=True)
        return list(r1) + list(r2)
    (t, _), (e, _) = run_both(fn, rand(2, seed=1), rand(2, seed=2))
    assert t[1] is None and e[1] is None
    assert_same(t, e)


@pytest.mark.parametrize("case", ["unused", "unused_second", "not_requires", "output_no_grad", "empty_inputs",
                                  "materialize_conflict", "count", "freed"])
def test_grad_errors(case):
    def fn(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([1.0, 2.0], requires_grad=True)
        out = (a * 2).sum()
        if case == "unused":
            lib.autograd.grad(out, [b])
        elif case == "unused_second":
            lib.autograd.grad(out, [a, b])
        elif case == "not_requires":
            lib.autograd.grad(out, [lib.ones(2)])
        elif case == "output_no_grad":
            lib.autograd.grad(lib.ones(2).sum(), [a])
        elif case == "empty_inputs":
            lib.autograd.grad(out, [])
        elif case == "materialize_conflict":
            lib.autograd.grad(out, [a], allow_unused=False, materialize_grads=True)
        elif case == "count":
            lib.autograd.grad([out, out], [a], [lib.tensor(1.0)])
        elif case == "freed":
            y = (a.exp() * b).sum()
            lib.autograd.grad(y, [a])
            lib.autograd.grad(y, [a])
    same_error(fn)


def test_grad_unused_through_non_differentiable_path():
    for lib in LIBS:
        a = lib.tensor([1.0, -2.0], requires_grad=True)
        out = (a > 0).float().sum() + (a * 0).sum()
        g, = lib.autograd.grad(out, a)
        assert g.tolist() == [0.0, 0.0]


def test_grad_is_grads_batched():
    def fn(lib, x):
        y = x.exp() * 2
        v = lib.eye(3, dtype=lib.float64)
        return lib.autograd.grad(y, x, v, is_grads_batched=True)
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


# ---- retain_grad and hooks ---------------------------------------------------------------------

def test_retain_grad_accumulates():
    def fn(lib, x):
        y = x * 2
        y.retain_grad()
        y.retain_grad()  # twice is harmless
        (y * y).sum().backward(retain_graph=True)
        first = y.grad.clone()
        (y * 3).sum().backward()
        return first, y.grad, x.grad, y.retains_grad, x.retains_grad
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


def test_retain_grad_errors_and_warning():
    same_error(lambda lib: lib.ones(2).retain_grad())
    for lib in LIBS:
        y = lib.tensor([1.0], requires_grad=True) * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
            assert y.grad is None


def test_leaf_hook_replaces_gradient_and_handle_removes_it():
    def fn(lib, x):
        h = x.register_hook(lambda g: g * 10)
        (x * 3).sum().backward()
        first = x.grad.clone()
        h.remove()
        (x * 3).sum().backward()
        return first, x.grad
    (t, _), (e, _) = run_both(fn, rand(2))
    assert_same(t, e)


def test_non_leaf_hooks_and_retain_grad_order():
    def fn(lib, x):
        log = []
        y = x * 2
        y.retain_grad()  # registered first, still sees the hooks' result (torch runs it last)
        y.register_hook(lambda g: log.append(("h1", g.tolist())) or g * 100)
        y.register_hook(lambda g: log.append(("h2", g.tolist())))
        (y * y).sum().backward()
        return log, y.grad, x.grad
    (t, _), (e, _) = run_both(fn, rand(2))
    assert_same(t, e)


def test_hooks_run_in_autograd_grad():
    def fn(lib, x):
        x.register_hook(lambda g: g * 10)
        y = x * 1
        y.register_hook(lambda g: g + 1)
        return lib.autograd.grad((y * 2).sum(), x) + lib.autograd.grad((y * 2).sum(), y)
    (t, _), (e, _) = run_both(fn, rand(2))
    assert_same(t, e)


def test_hook_order_across_nodes():
    def fn(lib, x, w):
        log = []
        a = x * w
        b = a.exp()
        c = a.sin()
        for name, t in (("x", x), ("w", w), ("a", a), ("b", b), ("c", c)):
            t.register_hook(lambda g, name=name: log.append(name))
        b.grad_fn.register_prehook(lambda go: log.append("pre-exp"))
        b.grad_fn.register_hook(lambda gi, go: log.append("post-exp"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("acc-x"))
        (b + c).sum().backward()
        return sorted(log), log.index("pre-exp") < log.index("post-exp"), log.index("a") < log.index("x")
    (t, _), (e, _) = run_both(fn, rand(3, seed=1), rand(3, seed=2))
    assert t == e


def test_hook_errors():
    def size(lib):
        y = lib.tensor([1.0, 2.0], requires_grad=True) * 1
        y.register_hook(lambda g: g.sum())
        y.sum().backward()

    def dtype(lib):
        y = lib.tensor([1.0, 2.0], requires_grad=True) * 1
        y.register_hook(lambda g: g.double())
        y.sum().backward()

    def not_tensor(lib):
        y = lib.tensor([1.0, 2.0], requires_grad=True) * 1
        y.register_hook(lambda g: 3)
        y.sum().backward()
    same_error(size)
    same_error(dtype)
    same_error(not_tensor)
    same_error(lambda lib: lib.ones(2).register_hook(lambda g: g))


def test_node_hooks():
    def fn(lib, a):
        log = []
        b = a * 3
        h = b.grad_fn.register_hook(lambda gi, go: log.append((len(gi), len(go))))
        b.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        b.sum().backward(retain_graph=True)
        h.remove()
        b.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 1, None))
        b.sum().backward()
        acc = (a * 1).grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append("acc-pre"))
        acc.register_hook(lambda gi, go: log.append(("acc-post", len(gi), len(go))))
        (a * 1).sum().backward()
        return log, a.grad
    (t, _), (e, _) = run_both(fn, rand(2))
    assert_same(t, e)


def test_post_accumulate_grad_hook():
    def fn(lib, x):
        seen = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return seen
    (t, _), (e, _) = run_both(fn, rand(2))
    assert_same(t, e)
    same_error(lambda lib: (lib.ones(1, requires_grad=True) * 2).register_post_accumulate_grad_hook(print))


# ---- detach ---------------------------------------------------------------------------------

def test_detach_shares_storage_and_version():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf
        d.add_(1)
        assert y.tolist() == [3.0, 5.0]

    def modified(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.detach().zero_() if hasattr(y, "zero_") else y.detach().mul_(0)
        y.sum().backward()
    same_error(modified)


def test_detach_in_place():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        assert y.detach_() is y
        assert y.is_leaf and not y.requires_grad and y.grad_fn is None
    same_error(lambda lib: (lib.tensor([1.0, 2.0], requires_grad=True) * 2)[0:1].detach_())


def test_data_is_detached_and_unversioned():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.data.mul_(2)  # bypasses the version check, as in torch
        y.sum().backward()
        np.testing.assert_allclose(values(x.grad), 2 * np.exp([1.0, 2.0]))


# ---- graph structure -------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    lambda lib, x, w: (x * w).sum(),
    lambda lib, x, w: (x + w * 2).exp().mean(1),
    lambda lib, x, w: ((x - w) * x.rsqrt()).sum(1),
    lambda lib, x, w: (x / w.abs()).view(6).sin(),
    lambda lib, x, w: x.t().tanh().sum(0),
    lambda lib, x, w: x[0] * w[:, 1:].sum(),
    lambda lib, x, w: lib.cat([x, w]).sigmoid(),
    lambda lib, x, w: x.unsqueeze(0).expand(2, 2, 3).sum(),
    lambda lib, x, w: (-x).reshape(3, 2).transpose(0, 1).sqrt(),
    lambda lib, x, w: (x * w).log().neg()[1:],
    lambda lib, x, w: lib.maximum(x, w).clone().exp2(),
    lambda lib, x, w: lib.nn.functional.celu(x - w, 0.5) + lib.nn.functional.selu(w) + lib.nn.functional.elu(x),
    lambda lib, x, w: lib.nn.functional.leaky_relu_(x * w, 0.1).sum(),
    lambda lib, x, w: lib.nn.functional.threshold_(x * w, 0.1, 0.0) + lib.nn.functional.threshold(x, 0.2, 1.0),
])
def test_grad_fn_names_and_next_functions(expr):
    (t, _), (e, _) = run_both(expr, rand(2, 3, seed=1, low=0.1), rand(2, 3, seed=2, low=0.1))
    assert graph_names(t.grad_fn) == graph_names(e.grad_fn)


def test_accumulate_grad_node():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        assert type(acc).__name__ == "AccumulateGrad"
        assert acc.variable is x
        assert acc.name() == "torch::autograd::AccumulateGrad"
        assert (x * 3).grad_fn.next_functions[0][0] is acc, "one accumulator per leaf while it is alive"
        assert acc.next_functions == ()


def test_sequence_numbers():
    """An AccumulateGrad takes no number from the count (torch gives it UINT64_MAX), so consecutive ops on a
    leaf take consecutive numbers."""
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)
        y = x * 2
        z = y + x
        assert y.grad_fn.next_functions[0][0]._sequence_nr() == 2 ** 64 - 1
        assert z.grad_fn._sequence_nr() == y.grad_fn._sequence_nr() + 1


def test_needs_input_grad_of_built_in_nodes():
    """A built-in node's needs_input_grad follows its edges; the engine checks each gradient against the
    metadata of the node its edge leads to."""
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    c = ember.tensor([3.0, 4.0])
    y = x * c
    assert y.grad_fn.needs_input_grad == (True, False)
    assert y.grad_fn._input_meta == (((2,), ember.float32), None)
    (c * x).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


# ---- grad modes ----------------------------------------------------------------------------

def test_no_grad_enable_grad_nesting():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)
        with lib.no_grad():
            assert not lib.is_grad_enabled()
            assert not (x * 2).requires_grad
            with lib.enable_grad():
                assert lib.is_grad_enabled()
                assert (x * 2).requires_grad
                with lib.no_grad():
                    assert not (x * 2).requires_grad
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()


def test_set_grad_enabled_forms():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)
        lib.set_grad_enabled(False)  # a plain call takes effect immediately
        try:
            assert not (x * 2).requires_grad
        finally:
            lib.set_grad_enabled(True)
        with lib.set_grad_enabled(False):
            assert not lib.is_grad_enabled()
            with lib.set_grad_enabled(True):
                assert (x * 2).requires_grad
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()

        @lib.set_grad_enabled(False)
        def f():
            return (x * 2).requires_grad
        assert lib.is_grad_enabled(), "decorating must not change the current mode"
        assert f() is False and lib.is_grad_enabled()
    same_error(lambda lib: lib.set_grad_enabled(1))
    same_error(lambda lib: lib.set_grad_enabled(lambda: 0))


def test_grad_mode_decorators():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)

        @lib.no_grad()
        def a():
            return (x * 2).requires_grad

        @lib.no_grad
        def b():
            return (x * 2).requires_grad

        @lib.enable_grad()
        def c():
            return (x * 2).requires_grad

        @lib.enable_grad
        def d():
            return (x * 2).requires_grad

        @lib.inference_mode()
        def e():
            return (x * 2).requires_grad, lib.is_inference_mode_enabled()

        @lib.inference_mode
        def f():
            return (x * 2).requires_grad

        @lib.inference_mode(False)
        def g():
            return (x * 2).requires_grad

        assert a() is False and b() is False and f() is False
        assert e() == (False, True)
        assert g() is True
        with lib.no_grad():
            assert c() is True and d() is True
        assert a.__name__ == "a" and b.__name__ == "b"
        assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


def test_grad_mode_decorates_generators():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)

        @lib.no_grad()
        def gen():
            for _ in range(2):
                yield (x * 2).requires_grad, lib.is_grad_enabled()

        it = gen()
        assert next(it) == (False, False)
        assert lib.is_grad_enabled(), "grad mode is restored between yields"
        assert next(it) == (False, False)


def test_grad_mode_restored_after_exception():
    for lib in LIBS:
        @lib.no_grad()
        def boom():
            raise ValueError("x")
        with pytest.raises(ValueError):
            boom()
        assert lib.is_grad_enabled()
        with pytest.raises(KeyError):
            with lib.inference_mode():
                raise KeyError
        assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


def test_no_grad_enter_returns_none_and_in_place_on_leaf_allowed():
    for lib in LIBS:
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad() as ctx:
            assert ctx is None
            w.mul_(2)  # an optimizer step
        assert w.requires_grad and w.is_leaf and w.tolist() == [2.0, 4.0]


def test_grad_mode_is_per_thread():
    import threading
    for lib in LIBS:
        seen = {}

        def worker():
            seen["start"] = lib.is_grad_enabled()
            lib.set_grad_enabled(False)
            seen["set"] = lib.is_grad_enabled()
        with lib.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        assert seen == {"start": True, "set": False}
        assert lib.is_grad_enabled(), "a thread's mode does not leak into the main thread"


def test_inference_mode_nesting():
    for lib in LIBS:
        x = lib.tensor([1.0], requires_grad=True)
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
            with lib.inference_mode(False):
                assert not lib.is_inference_mode_enabled()
            assert not (x * 2).requires_grad
        with lib.inference_mode(mode=False):
            assert (x * 2).requires_grad


# ---- higher-order gradients -----------------------------------------------------------------

def test_create_graph_grad_has_history():
    def fn(lib, x):
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg, g.grad_fn.name()
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


def test_hessian_vector_product():
    def fn(lib, x, v):
        y = (x.sin() * x.exp()).sum() + (x * x).sum() ** 2
        g, = lib.autograd.grad(y, x, create_graph=True)
        hv, = lib.autograd.grad(g, x, v.detach())
        return g, hv
    (t, _), (e, _) = run_both(fn, rand(4, seed=1), rand(4, seed=2))
    assert_same(t, e)


def test_gradient_penalty():
    """WGAN-GP: the penalty on ||d critic / d input|| trains the critic's weight."""
    def fn(lib, w, real, fake, eps):
        interp = (eps * real + (1 - eps) * fake).detach().requires_grad_(True)
        critic = ((interp * w).sum(1)).tanh() * 3
        g, = lib.autograd.grad(critic, interp, lib.ones_like(critic), create_graph=True)
        penalty = ((g.pow(2).sum(1).sqrt() - 1) ** 2).mean()
        loss = critic.mean() + 10 * penalty
        loss.backward()
        return loss, w.grad
    (t, _), (e, _) = run_both(fn, rand(5, seed=1), rand(4, 5, seed=2), rand(4, 5, seed=3), rand(4, 1, seed=4, low=0))
    assert_same(t, e)


@pytest.mark.parametrize("expr", [
    lambda lib, x, y: x.exp() * y,
    lambda lib, x, y: (x * y).sin().cos(),
    lambda lib, x, y: x.tanh() / (y * y + 1),
    lambda lib, x, y: x.sigmoid().log() + y.pow(3),
    lambda lib, x, y: (x - y).abs().sqrt(),
    lambda lib, x, y: x.pow(y.abs() + 1),
    lambda lib, x, y: (x * y).sum(0).reshape(1, 3).expand(2, 3) * x,
    lambda lib, x, y: lib.where(x > y, x * x, y.exp()),
    lambda lib, x, y: lib.maximum(x, y) * x.t().t(),
    lambda lib, x, y: (x[:, 1:] * y[:, :2]).mean(),
    lambda lib, x, y: lib.cat([x, y], 1).unsqueeze(0).exp().sum(2),
    lambda lib, x, y: (x @ y.t()).relu() * (x @ y.t()),
    lambda lib, x, y: x.softmax(1) * y,
    lambda lib, x, y: x.log_softmax(0) * y.exp(),
    lambda lib, x, y: x.var(1) * y.mean(1) + x.norm(),
    lambda lib, x, y: (x * y).cumsum(1).prod(1),
    lambda lib, x, y: x.max(1).values * y.clamp(0.3, 0.7).sum(1),
])
def test_double_backward(expr):
    (_, t_in, t_g), (_, e_in, e_g) = check_grads(expr, rand(2, 3, seed=1, low=0.2), rand(2, 3, seed=2, low=0.2),
                                                   create_graph=True)
    rng = np.random.default_rng(7)
    vs = [rng.standard_normal(tuple(g.shape)) for g in t_g]
    t_gg = torch.autograd.grad(t_g, t_in, [torch.tensor(v) for v in vs], allow_unused=True)
    e_gg = ember.autograd.grad(e_g, e_in, [ember.tensor(v) for v in vs], allow_unused=True)
    assert_same(t_gg, e_gg, "second order")


def test_third_derivative():
    def fn(lib, x):
        y = (x.sin() * x).sum()
        g1, = lib.autograd.grad(y, x, create_graph=True)
        g2, = lib.autograd.grad(g1.sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        return g1, g2, g3
    (t, _), (e, _) = run_both(fn, rand(3))
    assert_same(t, e)


# ---- version counters and in-place ops -----------------------------------------------------------

def version(t):
    """Tensor._version is an int in both libraries."""
    return t._version


def test_version_counter_shared_by_views():
    for lib in LIBS:
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        v = x[0]
        w = x.view(4)
        before = version(x)
        v.mul_(2)
        assert version(x) == version(v) == version(w) == before + 1
        w.add_(1)
        assert version(x) == version(v) == before + 2
        assert version(x.detach()) == before + 2, "detach() shares the version counter"
        assert version(x.data) == 0, ".data does not"


def test_modified_saved_tensor_raises():
    def input_saved(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        z = y * y
        y.add_(1)
        z.sum().backward()

    def output_saved(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x.sigmoid()
        y.mul_(2)
        y.sum().backward()

    def through_view(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        z = y * y
        y[0].add_(1)
        z.sum().backward()

    def constant_saved(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0])
        y = x * w
        w.add_(1)
        y.sum().backward()

    def leaf_under_no_grad(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        y = x * w
        with lib.no_grad():
            w.add_(1)
        y.sum().backward()

    def exp_then_in_place(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.mul_(2).add_(1)
        y.sum().backward()

    def saved_view_then_base_in_place(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        y = x * 1
        v = y.view(4)
        w = v * v
        y.mul_(2)
        w.sum().backward()

    def in_place_result_saved(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y.exp_()
        y.add_(1)
        y.sum().backward()
    for fn in (input_saved, output_saved, through_view, constant_saved, leaf_under_no_grad, exp_then_in_place,
               saved_view_then_base_in_place, in_place_result_saved):
        same_error(fn)


def test_modified_saved_tensor_with_anomaly_hint():
    def fn(lib):
        with lib.autograd.detect_anomaly():
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x * 1
            z = y * y
            y.add_(1)
            z.sum().backward()
    same_error(fn)


def test_in_place_on_leaf_errors():
    same_error(lambda lib: lib.tensor([1.0], requires_grad=True).add_(1))
    same_error(lambda lib: lib.tensor([[1.0, 2.0]], requires_grad=True)[0].mul_(2))
    same_error(lambda lib: lib.tensor([[1.0, 2.0]], requires_grad=True).view(2).exp_())


def _scenario_slice_mul(lib, a, b):
    y = a * 1
    y[1:3].mul_(b[1:3])
    return y


def _scenario_setitem_grad_value(lib, a, b):
    y = a * 1
    y[0] = b[0] * 2
    return y


def _scenario_chain(lib, a, b):
    y = a * 1
    y.mul_(2).add_(b).exp_()
    z = y * 1
    z.sin_().mul_(b)
    return z


def _scenario_view_of_view(lib, a, b):
    y = a * 1
    v = y[1:]
    w = v[:, 2:]
    w.mul_(b[:3, :3])
    return y * 2 + v.sum()


def _scenario_base_changed_then_view_used(lib, a, b):
    y = a * 1
    v = y[1]
    y.mul_(b)
    return v * 3


def _scenario_transposed_view(lib, a, b):
    y = a * 1
    y.t().add_(b.t())
    return y


def _scenario_setitem_columns(lib, a, b):
    y = a.clone()
    y[:, 1] = b[:, 0]
    y[2] = 0
    return y.sum(0)


def _scenario_select_of_transpose(lib, a, b):
    y = a + 0
    y.transpose(0, 1)[2].mul_(b[0, :4])
    return y


def _scenario_overlapping_views(lib, a, b):
    y = a * 1
    v1 = y[:2]
    v2 = y[1:]
    v1.mul_(2)
    v2.mul_(b[:3])
    return v1.sum() + v2.sum() + y


def _scenario_flat_view(lib, a, b):
    y = a * 1
    y.view(20)[3:7].mul_(b.view(20)[:4])
    return y


def _scenario_into_constant(lib, a, b):
    y = lib.zeros(4, 5, dtype=lib.float64)
    y[1:3] = a[1:3] * b[1:3]
    return y


def _scenario_select(lib, a, b):
    y = a * 1
    y.select(0, 1).mul_(b[0])
    return y


def _scenario_mask(lib, a, b):
    y = a * 1
    y[y > 0] = 0.0
    return y * b


def _scenario_view_then_base_in_place(lib, a, b):
    y = a * 1
    v = y.view(5, 4)
    y.add_(b)
    y.mul_(2)
    w = v * v
    return w.sum() + v[0]


def _scenario_in_place_on_view_of_constant_with_grad(lib, a, b):
    y = lib.ones(4, 5, dtype=lib.float64)
    y[:, :2].mul_(a[:, :2])
    y.mul_(b)
    return y


def _scenario_in_place_unsqueezed(lib, a, b):
    y = a * 1
    y.unsqueeze(0)[0, 1:3].div_(b[1:3].exp())
    return y


def _scenario_in_place_sigmoid_saved_output(lib, a, b):
    y = a * b
    y.sigmoid_()
    return y * 2


def _scenario_clamp_on_column(lib, a, b):
    y = a * b
    y[:, 2].clamp_(-0.1, 0.1)
    return y.exp()


def _scenario_diagonal_view(lib, a, b):
    y = a[:4, :4] * 1
    y.diagonal().mul_(b[0, :4])
    return y


def _scenario_masked_fill_on_view(lib, a, b):
    y = b * 1
    y[1:].masked_fill_(a[1:] > 0, 0.5)
    return y * a


def _scenario_index_put_with_grad(lib, a, b):
    y = a * 1
    y[lib.tensor([0, 2])] = b[1:3] * 3
    return y.sin()


def _scenario_narrow_of_transpose(lib, a, b):
    y = a * 1
    y.t().narrow(0, 1, 2).sub_(b.t()[:2])
    return y * y


def _scenario_view_modified_then_base_read(lib, a, b):
    y = a.tanh()
    z = y * 1
    r = z.view(2, 10)
    r[0].add_(b.view(20)[:10])
    return z.sum(1) * r.sum()


def _scenario_two_views_same_window(lib, a, b):
    y = a * 1
    v1 = y[1]
    v2 = y[1]
    v1.mul_(b[1])
    return v2 * 2 + y


@pytest.mark.parametrize("scenario", [
    _scenario_clamp_on_column, _scenario_diagonal_view, _scenario_masked_fill_on_view,
    _scenario_index_put_with_grad, _scenario_narrow_of_transpose, _scenario_view_modified_then_base_read,
    _scenario_two_views_same_window,
    _scenario_slice_mul, _scenario_setitem_grad_value, _scenario_chain, _scenario_view_of_view,
    _scenario_base_changed_then_view_used, _scenario_transposed_view, _scenario_setitem_columns,
    _scenario_select_of_transpose, _scenario_overlapping_views, _scenario_flat_view, _scenario_into_constant,
    _scenario_select, _scenario_mask, _scenario_view_then_base_in_place,
    _scenario_in_place_on_view_of_constant_with_grad, _scenario_in_place_unsqueezed,
    _scenario_in_place_sigmoid_saved_output,
], ids=lambda f: f.__name__[10:])
def test_in_place_gradients(scenario):
    check_grads(scenario, rand(4, 5, seed=1), rand(4, 5, seed=2))


def test_in_place_double_backward():
    check_grads(_scenario_slice_mul, rand(4, 5, seed=1), rand(4, 5, seed=2), create_graph=True)
    check_grads(_scenario_chain, rand(4, 5, seed=1), rand(4, 5, seed=2), create_graph=True)


def test_view_grad_fn_after_base_in_place():
    for lib in LIBS:
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        v = y[0]
        assert v.grad_fn.name() == "SelectBackward0"
        y.mul_(2)
        assert v.grad_fn.name() == "AsStridedBackward0"
        assert y.grad_fn.name() == "MulBackward0"
        v.add_(1)
        assert y.grad_fn.name() == "torch::autograd::CopySlices"
        assert repr(y.grad_fn).startswith("<CopySlices object at")


# ---- anomaly mode ------------------------------------------------------------------------------

def test_detect_anomaly_nan_in_backward():
    def fn(lib):
        with lib.autograd.detect_anomaly():
            x = lib.tensor([0.0, 1.0], requires_grad=True)
            y = (x.sqrt() * 0).sum()
            y.backward()
    same_error(fn)
    for lib in LIBS:
        with pytest.warns(UserWarning) as record:
            with lib.autograd.detect_anomaly():
                x = lib.tensor([0.0, 1.0], requires_grad=True)
                y = (x.sqrt() * 0).sum()  # the forward line the trace must show
                with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th"):
                    y.backward()
        text = "\n".join(str(r.message) for r in record)
        assert "Anomaly Detection has been enabled" in text
        assert "Error detected in SqrtBackward0" in text
        trace = next(str(r.message) for r in record if "Error detected" in str(r.message))
        forward = trace.split("Traceback of forward call that caused the error:\n")[1].split(" (Triggered")[0]
        assert forward.rstrip().endswith("y = (x.sqrt() * 0).sum()  # the forward line the trace must show"), \
            f"{lib.__name__}: the forward traceback ends at the line that made the node:\n{forward}"


def test_set_detect_anomaly_and_check_nan_flag():
    for lib in LIBS:
        assert not lib.is_anomaly_enabled()
        lib.autograd.set_detect_anomaly(True)
        try:
            assert lib.is_anomaly_enabled()
            x = lib.tensor([0.0], requires_grad=True)
            with pytest.raises(RuntimeError, match="returned nan values"):
                (x.sqrt() * 0).sum().backward()
        finally:
            lib.autograd.set_detect_anomaly(False)
        assert not lib.is_anomaly_enabled()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
            x = lib.tensor([0.0], requires_grad=True)
            (x.sqrt() * 0).sum().backward()
            assert np.isnan(values(x.grad)).all()
        assert not lib.is_anomaly_enabled()
        x = lib.tensor([0.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()  # anomaly mode off: NaN passes silently
        assert np.isnan(values(x.grad)).all()


# ---- deep graphs --------------------------------------------------------------------------------

def test_backward_through_100000_ops():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y = y * 3
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_recurrent_cell_5000_steps():
    n, steps = 4, 5000
    w0 = rand(n, n, seed=1) * 0.4
    xs0 = rand(steps, n, seed=2)
    res = []
    for lib in LIBS:
        w = lib.tensor(w0, requires_grad=True)
        xs = lib.tensor(xs0)
        h = lib.zeros(n, dtype=lib.float64)
        for i in range(steps):
            h = ((w * h).sum(1) + xs[i]).tanh()
        h.sum().backward()
        res.append((h, w.grad))
    assert_same(res[0], res[1], atol=1e-9)


def test_create_graph_with_a_constant_gradient():
    """backward(create_graph=True) whose gradient has no history: .grad is plain (no CopyBackwards), as in torch."""
    out = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's reference-cycle warning for backward(create_graph=True)
            (x * 2.0).sum().backward(create_graph=True)
        out.append((x.grad.tolist(), x.grad.requires_grad, x.grad.grad_fn is None))
    assert out[0] == out[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradcheck_warns_on_single_precision_inputs(dtype):
    """gradcheck warns (UserWarning) about an input that is not double precision, and only then, as torch."""
    seen = []
    for lib in LIBS:
        x = lib.tensor(np.array([0.5, 1.5]), dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda a: a * 2.0, (x,), eps=1e-3, atol=1e-2, rtol=1e-2, raise_exception=False)
        seen.append(any("double precision" in str(w.message) and w.category is UserWarning for w in caught))
    assert seen[0] == seen[1] == (dtype == "float32")


@pytest.mark.parametrize("op", ["mul", "add", "sub", "div", "atan2"])
def test_node_hook_sees_none_for_inputs_without_grad(op):
    """A grad_fn's post hook gets grad_inputs with None for every input that needs no gradient (torch's)."""
    seen = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        out = []
        for a, b in [(c, x), (x, c)]:
            z = getattr(lib, op)(a, b)
            z.grad_fn.register_hook(lambda gi, go: out.append(tuple(g is None for g in gi)))
            z.sum().backward()
        seen.append(out)
    assert seen[1] == seen[0]


def test_backward_through_10000_ops_like_torch():
    """test_backward_through_100000_ops (a long chain) on both libraries, shorter: torch's gradient, value and dtype."""
    def story(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x
        for _ in range(10_000):
            y = y + 1e-6
        y = y * 3
        y.sum().backward()
        return [x.grad.tolist(), y.tolist(), str(y.dtype)]
    assert story(ember) == story(torch)
