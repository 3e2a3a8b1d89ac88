"""torch.amp.GradScaler against torch's on CPU: the scale sequence, skipped steps and parameters
over a training run with injected infs and NaNs (growth and backoff), unscale_ before gradient
clipping, several optimizers, state_dict round trips, enabled=False as an exact no-op, the
'cuda' scalers that disable themselves without CUDA, and torch's errors for misuse."""
import pickle
import warnings
import zlib

import numpy as np
import pytest
import torch

import ember

torch.set_num_threads(1)


def _rng(key):
    return np.random.default_rng(zlib.crc32(key.encode()))


def _setup(lib, key, lr=0.1, opt="SGD"):
    rng = _rng(key)
    w1 = rng.standard_normal((4, 3)).astype(np.float32)
    w2 = rng.standard_normal((1, 4)).astype(np.float32)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4, bias=False), lib.nn.Tanh(), lib.nn.Linear(4, 1, bias=False))
    with lib.no_grad():
        model[0].weight.copy_(lib.from_numpy(w1))
        model[2].weight.copy_(lib.from_numpy(w2))
    optim = getattr(lib.optim, opt)(model.parameters(), lr=lr)
    x = lib.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))
    y = lib.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))
    return model, optim, x, y


def _train(lib, scaler_args, steps, bad=None, clip=None, opt="SGD"):
    """Train with a GradScaler; bad maps a step to the value ('inf'/'nan') put into one gradient."""
    model, optim, x, y = _setup(lib, "train", opt=opt)
    scaler = lib.amp.GradScaler(*scaler_args[0], **scaler_args[1])
    trace = []
    for step in range(steps):
        optim.zero_grad()
        with lib.autocast("cpu"):
            out = model(x)
        loss = ((out.float() - y) ** 2).mean()
        scaler.scale(loss).backward()
        if bad and step in bad:
            model[0].weight.grad.view(-1)[step % 12] = float(bad[step])
        if clip is not None:
            scaler.unscale_(optim)
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        before = model[2].weight.detach().clone()
        scaler.step(optim)
        skipped = bool((model[2].weight == before).all())
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker(), skipped))
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return trace, params, scaler.state_dict()


@pytest.mark.parametrize("args,bad,clip,opt", [
    (((), dict(device="cpu", init_scale=2.0 ** 10, growth_interval=3)), {2: "inf", 3: "nan", 9: "-inf"}, None,
     "SGD"),
    ((("cpu",), dict(init_scale=4.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)), {5: "nan"}, 1.0,
     "Adam"),
    ((("cpu", 3.0e38), dict(growth_interval=1)), {}, None, "SGD"),  # growth would overflow: the scale stays
], ids=["infs-and-nans", "clip-adam", "no-overflow"])
def test_training_run_matches_torch(args, bad, clip, opt):
    t_trace, t_params, t_state = _train(torch, args, 12, bad, clip, opt)
    e_trace, e_params, e_state = _train(ember, args, 12, bad, clip, opt)
    assert e_trace == t_trace
    assert e_state == t_state
    for e, t in zip(e_params, t_params):  # the forward ran in bfloat16: gradients agree to its precision
        np.testing.assert_allclose(e, t, rtol=2e-2, atol=2e-2)
    if bad:
        assert sum(s for _, _, s in t_trace) == len(bad)


def test_disabled_scaler_is_a_no_op():
    plain = {}
    for lib in (torch, ember):
        model, optim, x, y = _setup(lib, "noop")
        scaler = lib.amp.GradScaler("cpu", enabled=False)
        for _ in range(3):
            optim.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            scaled = scaler.scale(loss)
            assert scaled is loss
            scaled.backward()
            scaler.unscale_(optim)
            scaler.step(optim)
            scaler.update()
        plain[lib] = ([p.detach().numpy().copy() for p in model.parameters()], scaler.get_scale(),
                      scaler.state_dict(), scaler.is_enabled(), scaler._get_growth_tracker())
        model2, optim2, x2, y2 = _setup(lib, "noop")
        for _ in range(3):
            optim2.zero_grad()
            ((model2(x2) - y2) ** 2).mean().backward()
            optim2.step()
        for a, b in zip(plain[lib][0], [p.detach().numpy() for p in model2.parameters()]):
            np.testing.assert_array_equal(a, b)
    assert plain[ember][1:] == plain[torch][1:] == (1.0, {}, False, 0)


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category.__name__, str(x.message)) for x in w]


@pytest.mark.parametrize("make", [lambda t: t.amp.GradScaler(), lambda t: t.cuda.amp.GradScaler(),
                                  lambda t: t.cuda.amp.GradScaler(enabled=False), lambda t: t.cpu.amp.GradScaler(),
                                  lambda t: t.amp.GradScaler("cuda", enabled=False)],
                         ids=["default-cuda", "cuda.amp", "cuda.amp-disabled", "cpu.amp", "cuda-disabled"])
def test_constructors_warn_and_disable_like_torch(make):
    seen = {}
    for lib in (torch, ember):
        s, w = _warned(lambda: make(lib))
        seen[lib] = (w, s.is_enabled(), s.get_scale(), s.state_dict())
    assert seen[ember] == seen[torch]


def test_scale_outputs_and_state_dict():
    for lib in (torch, ember):
        s = lib.amp.GradScaler("cpu", init_scale=8.0)
        a, b = lib.ones(2), lib.full((3,), 2.0)
        r = s.scale([a, (b, a)])
        assert isinstance(r, list) and isinstance(r[1], tuple)
        assert r[1][0].tolist() == [16.0] * 3 and r[0].dtype is lib.float32
        assert list(s.scale(iter([a])))[0].tolist() == [8.0, 8.0]
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
            s.scale([1.0])
    t = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=7)
    e = ember.amp.GradScaler("cpu", init_scale=8.0, growth_interval=7)
    assert e.state_dict() == t.state_dict()
    state = {"scale": 32.0, "growth_factor": 3.0, "backoff_factor": 0.125, "growth_interval": 5,
             "_growth_tracker": 2}
    for s, lib in ((t, torch), (e, ember)):
        s.scale(lib.ones(1))
        s.load_state_dict(state)
        s.set_growth_factor(4.0)
        s.set_backoff_factor(0.25)
        s.set_growth_interval(6)
    assert e.state_dict() == t.state_dict()
    assert (e.get_growth_factor(), e.get_backoff_factor(), e.get_growth_interval()) == (4.0, 0.25, 6)
    e2 = pickle.loads(pickle.dumps(e))
    assert e2.state_dict() == e.state_dict() and e2._scale is None
    for s, lib in ((t, torch), (e, ember)):
        s.update(64.0)
        assert s.get_scale() == 64.0
        s.update(lib.tensor(128.0))
        assert s.get_scale() == 128.0
        with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast shape \[1\]"):
            s.update(lib.tensor([256.0]))  # torch's scale is 0-d: copy_ refuses a [1] tensor
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        ember.amp.GradScaler("cpu").load_state_dict({})


def _misuse(lib, what):
    model, optim, x, y = _setup(lib, "misuse")
    s = lib.amp.GradScaler("cpu")
    if what == "update-before-scale":
        s.update()
    s.scale(((model(x) - y) ** 2).mean()).backward()
    if what == "unscale-twice":
        s.unscale_(optim)
        s.unscale_(optim)
    if what == "unscale-after-step":
        s.step(optim)
        s.unscale_(optim)
    if what == "step-twice":
        s.step(optim)
        s.step(optim)
    if what == "closure":
        s.step(optim, closure=lambda: None)
    if what == "fp16-grads":
        model[0].weight.grad = model[0].weight.grad.half()
        s.unscale_(optim)
    if what == "no-grads":
        optim.zero_grad()
        s.step(optim)
    if what == "update-without-step":
        s.update()
    if what == "pickle-mid-iteration":
        s.unscale_(optim)
        pickle.dumps(s)
    if what == "bad-new-scale":
        s.update(lib.ones(2))


@pytest.mark.parametrize("what", ["update-before-scale", "unscale-twice", "unscale-after-step", "step-twice",
                                  "closure", "fp16-grads", "no-grads", "update-without-step",
                                  "pickle-mid-iteration", "bad-new-scale"])
def test_misuse_raises_torch_errors(what):
    with pytest.raises(Exception) as te:
        _misuse(torch, what)
    with pytest.raises(type(te.value)) as ee:
        _misuse(ember, what)
    assert str(ee.value) == str(te.value)


def test_two_optimizers_share_one_update():
    """An inf in one optimizer's gradients skips only that optimizer's step, and backs off the
    scale once for the iteration."""
    seen = {}
    for lib in (torch, ember):
        m1, o1, x, y = _setup(lib, "two")
        m2, o2, _, _ = _setup(lib, "two")
        s = lib.amp.GradScaler("cpu", init_scale=16.0)
        trace = []
        for step in range(3):
            o1.zero_grad()
            o2.zero_grad()
            loss = ((m1(x) - y) ** 2).mean() + ((m2(x) - y) ** 2).mean()
            s.scale(loss).backward()
            if step == 1:
                m2[0].weight.grad.view(-1)[0] = float("inf")
            s.step(o1)
            s.step(o2)
            s.update()
            trace.append(s.get_scale())
        seen[lib] = (trace, [p.detach().numpy().copy() for p in list(m1.parameters()) + list(m2.parameters())])
    assert seen[ember][0] == seen[torch][0] == [16.0, 8.0, 8.0]
    for a, b in zip(seen[ember][1], seen[torch][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_update_with_an_explicit_scale_matches_torch():
    """update(new_scale): a float or a 1-element tensor is taken; an int or str fails on its missing .device as in
    torch, a shape-(1,) tensor on the copy into the 0-d scale, a 2-element tensor on torch's assertion."""
    got = []
    for lib in (torch, ember):
        rec = []
        for value in (64, "x", lib.tensor([2.0]), lib.tensor(2.0), 2.5, lib.tensor([1.0, 2.0])):
            scaler = lib.amp.GradScaler("cpu")
            p = lib.nn.Parameter(lib.ones(2))
            opt = lib.optim.SGD([p], lr=0.1)
            scaler.scale(p.sum()).backward()
            scaler.step(opt)
            try:
                scaler.update(value)
                rec.append(("ok", scaler.get_scale()))
            except Exception as e:  # noqa: BLE001 - the error is the observation
                rec.append((type(e).__name__, str(e)))
        got.append(rec)
    assert got[0] == got[1]
