"""grad_fn(*grads): calling an autograd node runs its formula once, as torch's nodes do (Note [Calling a node]
in ember/autograd/engine.py). Each program builds the same graph on ember and torch and calls the same node
with the same gradients: the result's kind (one tensor or a tuple), None positions, values, dtypes, shapes and
whether it has history must agree, and so must the errors."""
import numpy as np
import pytest
import torch

import ember

F32 = np.float32


def _inputs(lib, rng, *shapes, dtype=np.float64):
    return [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_(True) for s in shapes]


def _const(lib, rng, shape, dtype=np.float64):
    return lib.from_numpy(rng.standard_normal(shape).astype(dtype))


# each: lib, rng -> (node, grads); the grads are built on the same lib from the same rng draws
PROGRAMS = {
    "exp": lambda lib, rng: ((x := _inputs(lib, rng, (3, 4))[0]).exp().grad_fn, [_const(lib, rng, (3, 4))]),
    "mul_one_input_needs_grad": lambda lib, rng: (
        (_inputs(lib, rng, (3,))[0] * _const(lib, rng, (3,))).grad_fn, [_const(lib, rng, (3,))]),
    "add_broadcast_unreduced": lambda lib, rng: (
        (lambda a, b: (a + b).grad_fn)(*_inputs(lib, rng, (3, 1), (1, 4))), [_const(lib, rng, (3, 4))]),
    "mul_mixed_dtypes": lambda lib, rng: (
        (lambda a, b: (a * b).grad_fn)(*_inputs(lib, rng, (3, 1)), *_inputs(lib, rng, (3, 4), dtype=F32)),
        [_const(lib, rng, (3, 4))]),
    "sum_dim": lambda lib, rng: (_inputs(lib, rng, (3, 4))[0].sum(1).grad_fn, [_const(lib, rng, (3,))]),
    "view": lambda lib, rng: (_inputs(lib, rng, (3, 4), dtype=F32)[0].view(12).grad_fn,
                              [_const(lib, rng, (12,), F32)]),
    "mm_through_t": lambda lib, rng: ((lambda c: (c.t() @ c).grad_fn)(*_inputs(lib, rng, (3, 4), dtype=F32)),
                                      [_const(lib, rng, (4, 4), F32)]),
    "max_dim_indices_take_no_grad": lambda lib, rng: (_inputs(lib, rng, (5,))[0].max(0)[0].grad_fn,
                                                      [_const(lib, rng, ())]),
    "sort": lambda lib, rng: (lib.sort(_inputs(lib, rng, (6,))[0])[0].grad_fn, [_const(lib, rng, (6,))]),
    "unbind_three_outputs": lambda lib, rng: (
        _inputs(lib, rng, (3, 2))[0].unbind(0)[0].grad_fn, [_const(lib, rng, (2,)) for _ in range(3)]),
    "unbind_one_missing": lambda lib, rng: (
        _inputs(lib, rng, (3, 2))[0].unbind(0)[0].grad_fn, [_const(lib, rng, (2,)), None, _const(lib, rng, (2,))]),
    "conv2d_with_bias": lambda lib, rng: (
        lib.nn.functional.conv2d(*_inputs(lib, rng, (2, 3, 6, 6), (4, 3, 3, 3), (4,)), padding=1).grad_fn,
        [_const(lib, rng, (2, 4, 6, 6))]),
    "layer_norm": lambda lib, rng: (
        lib.nn.functional.layer_norm(*(lambda x, w, b: (x, (5,), w, b))(*_inputs(lib, rng, (4, 5), (5,), (5,)))
                                     ).grad_fn, [_const(lib, rng, (4, 5))]),
    "index_with_tensor": lambda lib, rng: (
        _inputs(lib, rng, (5, 2))[0][lib.tensor([4, 0, 4])].grad_fn, [_const(lib, rng, (3, 2))]),
    "expanded_scalar_gradient": lambda lib, rng: (_inputs(lib, rng, (4,))[0].tanh().grad_fn,
                                                  [_const(lib, rng, ())]),
    "all_none": lambda lib, rng: (_inputs(lib, rng, (3,))[0].exp().grad_fn, [None]),
}


# torch's layer-norm double backward is one node over all three gradients, so the bias gradient (the sum of the
# incoming gradient, which needs no grad) is marked as having history there; ember's is the plain sum
NO_HISTORY_IN_EMBER = {("layer_norm", 2)}


def _run(lib, name, grad_enabled):
    rng = np.random.default_rng(7)
    node, grads = PROGRAMS[name](lib, rng)
    with lib.set_grad_enabled(grad_enabled):
        return node(*grads)


def _flat(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("grad_enabled", [True, False])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_calling_a_node_matches_torch(name, grad_enabled):
    got, want = _run(ember, name, grad_enabled), _run(torch, name, grad_enabled)
    assert isinstance(got, tuple) == isinstance(want, tuple)
    assert len(_flat(got)) == len(_flat(want))
    for i, (g, w) in enumerate(zip(_flat(got), _flat(want))):
        assert (g is None) == (w is None)
        if w is None:
            continue
        assert tuple(g.shape) == tuple(w.shape) and str(g.dtype) == str(w.dtype)
        assert g.requires_grad == (w.requires_grad and (name, i) not in NO_HISTORY_IN_EMBER)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)


def _both(fn):
    return [fn(lib) for lib in (ember, torch)]


def test_accumulate_grad_adds_into_the_leaf_and_returns_nothing():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        acc = x.exp().grad_fn.next_functions[0][0]
        g = lib.tensor([1.0, 2.0, 3.0])
        first = acc(g)
        g.mul_(100)  # .grad is not the caller's tensor
        acc(lib.tensor([0.5, 0.5, 0.5]))
        return first, x.grad.numpy().copy()
    (e_ret, e_grad), (t_ret, t_grad) = _both(run)
    assert e_ret == () == t_ret
    np.testing.assert_array_equal(e_grad, t_grad)


@pytest.mark.parametrize("case", ["too_many", "too_few", "not_a_tensor", "list", "after_backward", "wrong_shape"])
def test_bad_calls_raise_torchs_error_types(case):
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        y = (x * x).exp()
        node = y.grad_fn
        calls = {
            "too_many": lambda: node(lib.ones(3), lib.ones(3)),
            "too_few": lambda: node(),
            "not_a_tensor": lambda: node(1.0),
            "list": lambda: node([lib.ones(3)]),
            "wrong_shape": lambda: node(lib.ones(2)),
        }
        if case == "after_backward":
            y.sum().backward()
            calls[case] = lambda: node(lib.ones(3))
        with pytest.raises(Exception) as info:
            calls[case]()
        return type(info.value)
    e, t = _both(run)
    assert e is t


def test_a_custom_functions_node_is_not_callable_as_in_torch():
    def run(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        node = Twice.apply(lib.ones(2, requires_grad=True)).grad_fn
        with pytest.raises(TypeError) as info:
            node(lib.ones(2))
        return str(info.value)
    e, t = _both(run)
    assert e == t


def test_calling_runs_no_hook_and_keeps_the_saved_values():
    seen = []
    x = ember.ones(3, requires_grad=True)
    y = x.sin()
    y.grad_fn.register_hook(lambda gi, go: seen.append("post"))
    y.grad_fn.register_prehook(lambda go: seen.append("pre"))
    first = y.grad_fn(ember.ones(3))
    second = y.grad_fn(ember.ones(3))
    assert seen == []
    np.testing.assert_array_equal(first.detach().numpy(), second.detach().numpy())
    y.sum().backward()  # the graph still runs afterwards
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.ones(3, F32)))
