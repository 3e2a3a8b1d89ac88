"""torch.autograd.graph.saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks against torch (Note [Packed
saved tensors] in ember/autograd/saved_hooks.py). The gradients must be torch's whatever the hooks do with the
saved tensors; the number of pack calls may differ where ember's ops save other tensors than torch's, so the
tests count calls only on ember's own invariants (one unpack per pack on a backward)."""
import threading

import numpy as np
import pytest
import torch

import ember


def _graph(lib):
    return lib.autograd.graph


def _both(fn):
    return fn(ember), fn(torch)


def _model_grads(lib, hooks):
    """A small conv + LSTM + MLP step under `hooks(lib)` (a context manager or None): the loss and all grads."""
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    conv = lib.nn.Conv2d(2, 3, 3, padding=1)
    lstm = lib.nn.LSTM(4, 5, batch_first=True)
    head = lib.nn.Sequential(lib.nn.Linear(5, 6), lib.nn.GELU(), lib.nn.LayerNorm(6), lib.nn.Linear(6, 2))
    for p in [*conv.parameters(), *lstm.parameters(), *head.parameters()]:
        with lib.no_grad():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    x = lib.from_numpy(rng.standard_normal((2, 2, 4, 4)).astype(np.float32)).requires_grad_(True)
    ctx = hooks(lib) if hooks is not None else None
    if ctx is not None:
        ctx.__enter__()
    try:
        h = lib.relu(conv(x)).mean(1)  # (2, 4, 4): 4 steps of 4 features
        out, _ = lstm(h)
        y = head(out[:, -1])
        loss = lib.nn.functional.cross_entropy(y, lib.tensor([0, 1])) + (x.sin() * x).sum() * 0.01
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    loss.backward()
    params = [*conv.parameters(), *lstm.parameters(), *head.parameters()]
    return loss.item(), [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in params]


HOOKS = {
    "identity": lambda lib: _graph(lib).saved_tensors_hooks(lambda t: t, lambda t: t),
    "numpy_round_trip": lambda lib: _graph(lib).saved_tensors_hooks(
        lambda t: t.detach().numpy().copy(), lambda a: lib.from_numpy(a)),
    "clone": lambda lib: _graph(lib).saved_tensors_hooks(lambda t: t.clone(), lambda t: t),
    "save_on_cpu": lambda lib: _graph(lib).save_on_cpu(),
    "save_on_cpu_pinned": lambda lib: _graph(lib).save_on_cpu(pin_memory=True),
}


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_gradients_under_hooks_are_torchs_and_unchanged(name):
    plain_loss, plain = _model_grads(ember, None)
    e_loss, e = _model_grads(ember, HOOKS[name])
    t_loss, t = _model_grads(torch, HOOKS[name])
    assert e_loss == pytest.approx(t_loss, rel=1e-5)
    for a, b, c in zip(e, t, plain):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(a, c)  # the hooks change nothing in ember's own numbers


def test_every_packed_tensor_is_unpacked_once_in_backward_and_again_on_each_access():
    packed, unpacked = [], []
    x = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.shape) or t,
                                                  lambda t: unpacked.append(t.shape) or t):
        y = x.exp()
        z = (y * x).sum()
    assert packed and not unpacked
    z.backward()
    assert len(unpacked) == len(packed)
    np.testing.assert_allclose(x.grad.numpy(), (np.exp([0.5, 1, 2]) * (1 + np.array([0.5, 1, 2]))), rtol=1e-6)
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append("u") or t):
        v = w.exp()
    before = unpacked.count("u")
    v.sum().backward(retain_graph=True)
    v.sum().backward()
    assert unpacked.count("u") == before + 2


def test_pack_sees_inputs_and_outputs_with_their_history_as_in_torch():
    def run(lib):
        seen = []
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(
                lambda t: seen.append((t.requires_grad, t.grad_fn is None)) or t, lambda t: t):
            x.exp()  # saves its result: an output with grad_fn
            x.sin()  # saves its input: the leaf
        return seen
    e, t = _both(run)
    assert e == t == [(True, False), (True, True)]


def test_no_version_check_on_packed_tensors_as_in_torch():
    def run(lib):
        b = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            c = b * 2
            d = c.sin()
        c.mul_(2)  # the identity hook kept c itself: backward reads the new values, silently (torch too)
        d.sum().backward()
        return b.grad.numpy()
    e, t = _both(run)
    np.testing.assert_allclose(e, t, rtol=1e-6)


def test_errors_match_torch():
    def run(lib):
        G = lib.autograd.graph
        errors = []
        c = lib.tensor([0.5, 1.0], requires_grad=True) * 2

        def bad(t):
            t.mul_(2)
            return t
        try:
            with G.saved_tensors_hooks(bad, lambda t: t):
                c.sin()
        except RuntimeError as e:
            errors.append(("pack in place", str(e)))
        with G.saved_tensors_hooks(lambda t: t, lambda t: 5):
            h = c.exp().sum()
        try:
            h.backward()
        except TypeError as e:
            errors.append(("unpack type", str(e)))
        with G.disable_saved_tensors_hooks("outer"):
            with G.disable_saved_tensors_hooks("inner"):
                try:
                    with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                        pass
                except RuntimeError as e:
                    errors.append(("disabled", str(e)))
            try:
                with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            except RuntimeError as e:
                errors.append(("disabled", str(e)))
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
            try:
                with G.disable_saved_tensors_hooks("while active"):
                    pass
            except RuntimeError as e:
                errors.append(("disable while active", str(e)))
        try:
            with G.saved_tensors_hooks(lambda t: 1 / 0, lambda t: t):
                c.exp()
        except ZeroDivisionError:
            errors.append(("pack raises", None))
        return errors
    e, t = _both(run)
    assert e == t
    assert [kind for kind, _ in e] == ["pack in place", "unpack type", "disabled", "disabled",
                                       "disable while active", "pack raises"]


def test_unpacked_tensors_are_cast_back_and_a_wrong_shape_is_an_error():
    """Where torch hands an unpacked tensor of another dtype or shape to the formula as it is (some formulas then
    fail with a dtype error, some broadcast a wrong shape silently), ember casts it back to the saved dtype and
    rejects another shape."""
    G = ember.autograd.graph
    plain_loss, plain = _model_grads(ember, None)
    _, cast = _model_grads(ember, lambda lib: G.saved_tensors_hooks(
        lambda t: t.double() if t.is_floating_point() else t, lambda t: t))
    for a, b in zip(cast, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    c = ember.tensor([0.5, 1.0], requires_grad=True) * 2
    with G.saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
        h = c.exp().sum()
    with pytest.raises(RuntimeError, match=r"shape \[1\] for a tensor saved with shape \[2\]"):
        h.backward()


def test_innermost_hooks_win_none_under_no_grad_and_none_for_a_hooks_own_ops():
    calls = []
    G = ember.autograd.graph
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: calls.append("outer") or t, lambda t: t):
        with G.saved_tensors_hooks(lambda t: calls.append("inner") or t * t, lambda t: t):
            x.exp()
        with ember.no_grad():
            x.exp()
    assert calls == ["inner"]  # the hook's own t * t (which saves t) packs nothing


def test_double_backward_through_packed_leaves_and_outputs():
    def run(lib):
        g = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            h = (g ** 3).sum() + g.exp().sum()
        gr, = lib.autograd.grad(h, g, create_graph=True)
        gr.sum().backward()
        return g.grad.numpy()
    e, t = _both(run)
    np.testing.assert_allclose(e, t, rtol=1e-6)


def test_custom_function_and_in_place_op_under_hooks():
    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x * x * g

        k = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                                    lambda a: lib.from_numpy(a)):
            m = k * 1
            m.mul_(k)  # needs m's old value: packed from a copy taken before the write
            y = Cube.apply(m)
        y.sum().backward()
        return k.grad.numpy()
    e, t = _both(run)
    np.testing.assert_allclose(e, t, rtol=1e-6)


def test_hooks_are_per_thread():
    calls = []
    G = ember.autograd.graph
    x = ember.tensor([1.0, 2.0], requires_grad=True)

    def other():
        x.exp()  # no hooks in this thread
    with G.saved_tensors_hooks(lambda t: calls.append(threading.current_thread().name) or t, lambda t: t):
        th = threading.Thread(target=other, name="other")
        th.start()
        th.join()
        x.exp()
    assert calls == [threading.current_thread().name]


def test_names_are_torchs():
    for name in ("saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"):
        assert hasattr(ember.autograd.graph, name) and hasattr(torch.autograd.graph, name)
