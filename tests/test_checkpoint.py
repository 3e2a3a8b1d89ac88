"""torch.utils.checkpoint: gradients identical with and without checkpointing (both flavours),
the RNG state replayed so dropout inside gives the same gradients, the RNG stream outside left
as it was, checkpoint_sequential, autocast inside a checkpoint, torch's warnings and errors, and
the activations really freed (memory held between forward and backward)."""
import tracemalloc
import warnings
import zlib

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import ember
import ember.utils.checkpoint

from ._stories import check_story

torch.set_num_threads(1)


def _rng(key):
    return np.random.default_rng(zlib.crc32(key.encode()))


def _mlp(lib, widths, dropout=0.0, seed_key="mlp"):
    rng = _rng(seed_key)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        lin = lib.nn.Linear(a, b)
        with lib.no_grad():
            lin.weight.copy_(lib.from_numpy((rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32)))
            lin.bias.copy_(lib.from_numpy(rng.standard_normal(b).astype(np.float32) * 0.1))
        layers += [lin, lib.nn.Tanh()]
        if dropout:
            layers.append(lib.nn.Dropout(dropout))
    return lib.nn.Sequential(*layers)


def _grads(lib, model, x, how, seed=3):
    """Loss gradients of the parameters and the input, with checkpointing `how`."""
    lib.manual_seed(seed)
    model.zero_grad()
    x = x.detach().requires_grad_()
    if how == "plain":
        y = model(x)
    elif how == "sequential":
        y = lib.utils.checkpoint.checkpoint_sequential(model, 2, x, use_reentrant=False)
    elif how == "sequential-reentrant":
        y = lib.utils.checkpoint.checkpoint_sequential(model, 3, x, use_reentrant=True)
    else:
        y = lib.utils.checkpoint.checkpoint(model, x, use_reentrant=how == "reentrant")
    (y * y).sum().backward()
    after = lib.rand(3)  # the RNG stream after backward
    return [p.grad.detach().numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()], after


HOWS = ["reentrant", "non-reentrant", "sequential", "sequential-reentrant"]


@pytest.mark.parametrize("how", HOWS)
def test_gradients_identical_with_dropout(how):
    """Dropout inside: the recomputation replays the forward's RNG state, so the gradients equal
    the un-checkpointed run's exactly, and the RNG stream after backward is the same too."""
    x = ember.from_numpy(_rng("x").standard_normal((6, 8)).astype(np.float32))
    model = _mlp(ember, [8, 16, 16, 16, 4], dropout=0.3)
    ref, ref_after = _grads(ember, model, x, "plain")
    got, after = _grads(ember, model, x, how)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert after.tolist() == ref_after.tolist()


@pytest.mark.parametrize("how", HOWS)
def test_gradients_against_torch(how):
    """Without dropout the checkpointed gradients equal torch's checkpointed gradients."""
    x_np = _rng("xt").standard_normal((5, 6)).astype(np.float32)
    out = {}
    for lib in (torch, ember):
        model = _mlp(lib, [6, 12, 12, 12, 3])
        out[lib], _ = _grads(lib, model, lib.from_numpy(x_np), how)
    for e, t in zip(out[ember], out[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reentrant", [True, False])
def test_without_preserved_rng_the_masks_differ(reentrant):
    """preserve_rng_state=False: the recomputation draws new dropout masks, so the gradients
    differ from the un-checkpointed run (in torch as in ember)."""
    for lib in (torch, ember):
        x = lib.from_numpy(_rng("x").standard_normal((6, 8)).astype(np.float32))
        model = _mlp(lib, [8, 32, 32, 4], dropout=0.5)
        ref, _ = _grads(lib, model, x, "plain")
        lib.manual_seed(3)
        model.zero_grad()
        xg = x.detach().requires_grad_()
        y = lib.utils.checkpoint.checkpoint(model, xg, use_reentrant=reentrant, preserve_rng_state=False)
        (y * y).sum().backward()
        assert not np.array_equal(xg.grad.numpy(), ref[-1])


def _structure(lib, reentrant):
    cp = lib.utils.checkpoint.checkpoint
    x = lib.ones(2, 3, requires_grad=True)
    w = lib.full((3, 3), 0.5, requires_grad=True)
    seen = []
    y = cp(lambda a: (a @ w).sin(), x, use_reentrant=reentrant)
    seen.append(y.grad_fn.name())
    z = lib.zeros(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y2 = cp(lambda a: (a @ w).sin(), z, use_reentrant=reentrant)
    seen.append((y2.requires_grad, [str(c.message) for c in caught]))
    if not reentrant:  # only parameters need grad: non-reentrant still reaches them
        y2.sum().backward()
        seen.append(w.grad.sum().item())
    y3 = cp(lambda a, scale=1.0: (a * scale, {"s": a.sum()}), x, use_reentrant=False, scale=2.0) \
        if not reentrant else cp(lambda a, b: (a * b, b), x, 2.0, use_reentrant=True)
    seen.append(type(y3).__name__)
    return seen


@pytest.mark.parametrize("reentrant", [True, False])
def test_structure_matches_torch(reentrant):
    """Observable differences of the flavours: the output's grad_fn, inputs without grad,
    keyword arguments and nested outputs."""
    assert _structure(ember, reentrant) == _structure(torch, reentrant)


def _grad_and_inputs(lib, reentrant):
    x = lib.ones(2, 3, requires_grad=True)
    y = lib.utils.checkpoint.checkpoint(lambda a: a.exp() * 3, x, use_reentrant=reentrant)
    g = lib.autograd.grad(y.sum(), x)[0]
    y = lib.utils.checkpoint.checkpoint(lambda a: a.exp() * 3, x, use_reentrant=reentrant)
    y.sum().backward(inputs=[x])
    return g.numpy(), x.grad.numpy()


def test_non_reentrant_supports_grad_and_backward_inputs():
    for e, t in zip(_grad_and_inputs(ember, False), _grad_and_inputs(torch, False)):
        np.testing.assert_allclose(e, t, rtol=1e-6)


def _errors(lib, what):
    cp = lib.utils.checkpoint
    x = lib.ones(2, requires_grad=True)
    if what == "reentrant-grad":
        lib.autograd.grad(cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True).sum(), x)
    if what == "reentrant-backward-inputs":
        cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True).sum().backward(inputs=[x])
    if what == "reentrant-kwargs":
        cp.checkpoint(lambda a, b=1: a, x, use_reentrant=True, b=2)
    if what == "reentrant-context_fn":
        cp.checkpoint(lambda a: a, x, use_reentrant=True, context_fn=lambda: (None, None))
    if what == "reentrant-debug":
        cp.checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    if what == "determinism-check-name":
        cp.checkpoint(lambda a: a.exp(), x, use_reentrant=False, determinism_check="strict")
    if what == "sequential-kwargs":
        cp.checkpoint_sequential([lambda a: a], 1, x, use_reentrant=True, foo=1)
    if what == "reentrant-no-grad-output":
        cp.checkpoint(lambda a: a.detach(), x, use_reentrant=True).sum().backward()
    if what == "recompute-differs":
        calls = []

        def f(a):
            calls.append(1)
            return a.exp()[: len(calls)].sin()
        cp.checkpoint(f, lib.ones(3, requires_grad=True), use_reentrant=False).sum().backward()
    if what == "twice":
        y = cp.checkpoint(lambda a: a.exp().sin(), x, use_reentrant=False)
        y.sum().backward()
        y.sum().backward()


@pytest.mark.parametrize("what", ["reentrant-grad", "reentrant-backward-inputs", "reentrant-kwargs",
                                  "reentrant-context_fn", "reentrant-debug", "determinism-check-name",
                                  "sequential-kwargs", "reentrant-no-grad-output", "recompute-differs", "twice"])
def test_errors_like_torch(what):
    with pytest.raises(Exception) as te:
        _errors(torch, what)
    expected = type(te.value)
    if expected is torch.utils.checkpoint.CheckpointError:
        expected = ember.utils.checkpoint.CheckpointError
    with pytest.raises(expected) as ee:
        _errors(ember, what)
    if type(te.value) in (ValueError, RuntimeError):
        assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0]


def test_use_reentrant_warnings_like_torch():
    msgs = {}
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.utils.checkpoint.checkpoint(lambda a: a.exp(), x)
            lib.utils.checkpoint.checkpoint_sequential([lambda a: a.exp(), lambda a: a.sin()], 2, x)
        msgs[lib] = ([(c.category.__name__, str(c.message)) for c in caught], y.grad_fn.name())
    assert msgs[ember] == msgs[torch]


def test_retain_graph_allows_a_second_backward():
    out = {}
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda a: a.exp().sin() * a, x, use_reentrant=False)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        out[lib] = x.grad.numpy().copy()
    np.testing.assert_allclose(out[ember], out[torch], rtol=1e-6)


@pytest.mark.parametrize("reentrant", [True, False])
def test_autocast_state_replayed_in_recomputation(reentrant):
    """A checkpoint inside an autocast region recomputes in bfloat16 although backward runs outside."""
    x_np = _rng("ac").standard_normal((4, 6)).astype(np.float32)
    res = {}
    for lib in (torch, ember):
        for ckpt in (False, True):
            model = _mlp(lib, [6, 8, 3], seed_key="ac")
            x = lib.from_numpy(x_np).requires_grad_()
            with lib.autocast("cpu"):
                y = lib.utils.checkpoint.checkpoint(model, x, use_reentrant=reentrant) if ckpt else model(x)
            assert y.dtype is lib.bfloat16
            y.float().sum().backward()
            res[lib, ckpt] = [p.grad.float().numpy().copy() for p in model.parameters()] + [x.grad.numpy()]
    for a, b in zip(res[ember, True], res[ember, False]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(res[ember, True], res[torch, True]):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2)


def test_context_fn_runs_around_forward_and_recompute():
    log = []

    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            log.append(self.name)

        def __exit__(self, *exc):
            return False
    x = ember.ones(2, requires_grad=True)
    y = ember.utils.checkpoint.checkpoint(lambda a: a.exp(), x, use_reentrant=False,
                                          context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
    assert log == ["forward"]
    y.sum().backward()
    assert log == ["forward", "recompute"]


def _held_bytes(lib, how, depth=12, width=256, batch=64):
    """Bytes still allocated after the forward of a deep MLP (what the graph keeps for backward)."""
    model = _mlp(lib, [width] * (depth + 1), seed_key="mem")
    x = lib.from_numpy(_rng("memx").standard_normal((batch, width)).astype(np.float32)).requires_grad_()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    if how == "plain":
        y = model(x)
    else:
        y = lib.utils.checkpoint.checkpoint_sequential(model, 3, x, use_reentrant=how == "reentrant")
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    y.sum().backward()
    return held


def test_activations_are_freed():
    """Between forward and backward an un-checkpointed 12-layer MLP holds every tanh output (the
    next layer's input); in 3 segments it holds the 2 segment boundaries and the last segment's 4
    (checkpoint_sequential runs the last segment as it is)."""
    plain = _held_bytes(ember, "plain")
    activation = 64 * 256 * 4
    assert plain >= 12 * activation * 0.9
    for how in ("reentrant", "non-reentrant"):
        held = _held_bytes(ember, how)
        assert held < 7 * activation, (how, held, plain)


def test_weight_cast_cached_before_the_region():
    """Inside autocast a weight used before the checkpoint is cast once (cached); the recomputation
    (a new autocast region) casts it again. The extra cast saves nothing, so the recomputation
    still matches, as in torch."""
    rng = _rng("cached")
    w_np = rng.standard_normal((4, 4)).astype(np.float32)
    x_np = rng.standard_normal((2, 4)).astype(np.float32)
    grads = {}
    for lib in (torch, ember):
        for ckpt in (False, True):
            w = lib.from_numpy(w_np).requires_grad_()
            with lib.autocast("cpu"):
                h = lib.nn.functional.linear(lib.from_numpy(x_np), w)
                f = lambda a: lib.nn.functional.linear(a, w).sin()  # noqa: E731
                y = lib.utils.checkpoint.checkpoint(f, h, use_reentrant=False) if ckpt else f(h)
            y.float().sum().backward()
            grads[lib, ckpt] = w.grad.numpy()
    np.testing.assert_array_equal(grads[ember, True], grads[ember, False])
    np.testing.assert_allclose(grads[ember, True], grads[torch, True], rtol=3e-2, atol=3e-2)


# ---- the ember-only checkpoint tests above, told again on torch (issue 19) ------------------------------------

@pytest.mark.parametrize("how", HOWS)
def test_gradients_with_dropout_match_torch(how):
    """test_gradients_identical_with_dropout on both libraries: the checkpointed gradients (dropout masks
    replayed) and the RNG stream after backward are torch's."""
    x_np = _rng("x").standard_normal((6, 8)).astype(np.float32)
    out = {}
    for lib in (torch, ember):
        model = _mlp(lib, [8, 16, 16, 16, 4], dropout=0.3)
        out[lib] = _grads(lib, model, lib.from_numpy(x_np), how)
    for e, t in zip(out[ember][0], out[torch][0]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
    assert out[ember][1].tolist() == out[torch][1].tolist()


def test_context_fn_runs_like_torch():
    """test_context_fn_runs_around_forward_and_recompute on both libraries: the same log and gradient."""
    def story(lib):
        log = []

        class Ctx:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                log.append(self.name)

            def __exit__(self, *exc):
                log.append("exit " + self.name)
                return False
        x = lib.ones(2, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda a: a.exp(), x, use_reentrant=False,
                                            context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
        first = list(log)
        y.sum().backward()
        return [first, log, y, x.grad]
    check_story(story, atol=1e-6)  # float32 exp: NumPy's is within an ulp of torch's


NESTINGS = {
    "inner_then_op": lambda cp, m: lambda x: cp(lambda h: cp(m, h, use_reentrant=False) * 2, x, use_reentrant=False),
    "passthrough": lambda cp, m: lambda x: cp(lambda h: cp(m, h, use_reentrant=False), x, use_reentrant=False),
    "three_levels": lambda cp, m: lambda x: cp(lambda a: cp(lambda b: cp(m, b, use_reentrant=False).tanh(), a,
                                                            use_reentrant=False), x, use_reentrant=False),
    "per_layer_inside": lambda cp, m: lambda x: cp(lambda h: _layers(cp, m, h), x, use_reentrant=False),
}


def _call(function, *args, use_reentrant):
    return function(*args)


def _layers(cp, model, h):
    for layer in model:
        h = cp(layer, h, use_reentrant=False)
    return h


@pytest.mark.parametrize("nesting", list(NESTINGS))
def test_nested_non_reentrant_checkpoints_match_torch(nesting):
    """Checkpoints inside checkpoints (nodes stripped by both frames; a pass-through outer call whose
    every node is an inner one's): gradients equal torch's, dropout masks replayed at every level."""
    x_np = _rng("nest").standard_normal((5, 6)).astype(np.float32)
    out = {}
    for lib in (torch, ember):
        model = _mlp(lib, [6, 12, 12, 3], dropout=0.25 if lib is ember else 0.0)
        for cp in (_call, lib.utils.checkpoint.checkpoint):  # the same calls without checkpoints, then with
            lib.manual_seed(3)
            model.zero_grad()
            x = lib.from_numpy(x_np).requires_grad_()
            y = NESTINGS[nesting](cp, model)(x)
            (y * y).sum().backward()
            plain, out[lib] = out.get(lib), [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy()]
        if lib is ember:  # with dropout: identical to the un-checkpointed run
            for a, b in zip(out[lib], plain):
                np.testing.assert_array_equal(a, b)
    model_e = _mlp(ember, [6, 12, 12, 3])  # without dropout against torch
    model_e.zero_grad()
    x = ember.from_numpy(x_np).requires_grad_()
    y = NESTINGS[nesting](ember.utils.checkpoint.checkpoint, model_e)(x)
    (y * y).sum().backward()
    for e, t in zip([p.grad.numpy() for p in model_e.parameters()] + [x.grad.numpy()], out[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
