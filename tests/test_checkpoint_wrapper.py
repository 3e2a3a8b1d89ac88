"""torch.distributed.algorithms._checkpoint.checkpoint_wrapper against torch: apply_activation_checkpointing
wraps the same submodules (check_fn and auto-wrap policies, nested picks inside out), the wrapped model's
repr, state_dict keys, parameter names, outputs and gradients equal torch's for each wrapper kind, state
dicts load across wrapped and unwrapped models, and the errors match."""
import functools

import numpy as np
import pytest
import torch
import torch.utils.checkpoint
import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as tcw

import ember
import ember.utils.checkpoint
import ember.distributed.algorithms._checkpoint.checkpoint_wrapper as ecw

torch.set_num_threads(1)
CW = {"torch": tcw, "ember": ecw}
_LIBS = {tcw: torch, ecw: ember}


class _Block(object):
    """A residual block whose forward takes a keyword (scale), built for either library."""

    @staticmethod
    def make(lib):
        class Block(lib.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.fc = lib.nn.Linear(n, n)
                self.norm = lib.nn.LayerNorm(n)

            def forward(self, x, scale=1.0):
                return x + scale * lib.tanh(self.norm(self.fc(x)))
        return Block


def _model(lib):
    Block = _Block.make(lib)
    rng = np.random.default_rng(7)
    m = lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.ReLU(),
                          lib.nn.Sequential(lib.nn.Linear(8, 8), lib.nn.Dropout(0.0)),
                          Block(8), Block(8), lib.nn.Linear(8, 3))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    return m, Block


def _run(lib, model, **kwargs):
    x = lib.from_numpy(np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)).requires_grad_()
    h = x
    for layer in model:
        h = layer(h, **kwargs) if kwargs and type(layer).__name__ == "CheckpointWrapper" \
            and type(layer._checkpoint_wrapped_module).__name__ == "Block" else layer(h)
    h.square().sum().backward()
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return h.detach().numpy(), x.grad.numpy(), grads


PICKS = {
    "linear": lambda lib, Block: dict(check_fn=lambda m: isinstance(m, lib.nn.Linear)),
    "block": lambda lib, Block: dict(check_fn=lambda m: isinstance(m, Block)),
    "nested": lambda lib, Block: dict(check_fn=lambda m: isinstance(m, (lib.nn.Sequential, lib.nn.Linear))),
    "policy_numel": lambda lib, Block: dict(auto_wrap_policy=lambda module, recurse, nonwrapped_numel:
                                            recurse or nonwrapped_numel >= 60),
}
WRAPPERS = {
    "no_reentrant": lambda cw: cw.checkpoint_wrapper,
    "reentrant": lambda cw: functools.partial(cw.checkpoint_wrapper, checkpoint_impl=cw.CheckpointImpl.REENTRANT),
    "offload": lambda cw: cw.offload_wrapper,
    "custom_fn": lambda cw: functools.partial(cw.checkpoint_wrapper, checkpoint_fn=_LIBS[cw].utils.checkpoint.checkpoint,
                                              preserve_rng_state=False, use_reentrant=False),
}


def _wrapped(name, pick, wrapper):
    lib = {"torch": torch, "ember": ember}[name]
    model, Block = _model(lib)
    ret = CW[name].apply_activation_checkpointing(model, checkpoint_wrapper_fn=WRAPPERS[wrapper](CW[name]),
                                                  **PICKS[pick](lib, Block))
    assert ret is None
    return model


# every wrapper with every pick, but the custom checkpoint function with one pick only
CASES = [(pick, wrapper) for pick in PICKS for wrapper in WRAPPERS if wrapper != "custom_fn" or pick == "block"]


@pytest.mark.parametrize("pick,wrapper", CASES)
def test_wrapped_model_matches_torch(pick, wrapper):
    t, e = _wrapped("torch", pick, wrapper), _wrapped("ember", pick, wrapper)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    for mod_e, mod_t in zip(e.modules(), t.modules()):  # the wrapper's own view of its parameters
        assert [n for n, _ in mod_e.named_parameters()] == [n for n, _ in mod_t.named_parameters()]
    kwargs = {"scale": 0.5} if pick == "block" else {}
    out_e, gx_e, g_e = _run(ember, e, **kwargs)
    out_t, gx_t, g_t = _run(torch, t, **kwargs)
    np.testing.assert_allclose(out_e, out_t, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx_e, gx_t, rtol=1e-4, atol=1e-5)
    assert list(g_e) == list(g_t)
    for n in g_t:
        np.testing.assert_allclose(g_e[n], g_t[n], rtol=1e-4, atol=1e-5, err_msg=n)


def test_state_dicts_load_across_wrapped_and_plain_models():
    plain, _ = _model(ember)
    wrapped = _wrapped("ember", "nested", "no_reentrant")
    with ember.no_grad():
        for p in plain.parameters():
            p.mul_(2.0)
    wrapped.load_state_dict(plain.state_dict())  # no prefix in the source: added back on load
    for (n, a), b in zip(plain.state_dict().items(), wrapped.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)
    fresh, _ = _model(ember)
    fresh.load_state_dict(wrapped.state_dict())  # the wrapped model's keys load into the plain one
    np.testing.assert_array_equal(fresh[0].weight.detach().numpy(), plain[0].weight.detach().numpy())
    # and an ember-saved wrapped checkpoint into torch's plain model
    tplain, _ = _model(torch)
    tplain.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in wrapped.state_dict().items()})


def test_wrapper_forwards_attributes_and_indexing():
    for name, lib in (("torch", torch), ("ember", ember)):
        lin = lib.nn.Linear(2, 3)
        w = CW[name].checkpoint_wrapper(lin)
        assert w.weight is lin.weight and w.in_features == 2
        seq = CW[name].checkpoint_wrapper(lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh()))
        assert type(seq[1]).__name__ == "Tanh"
        assert w.checkpoint_impl is CW[name].CheckpointImpl.NO_REENTRANT
        with pytest.raises(AttributeError):
            w.no_such_attribute


def test_errors_match_torch():
    for name, lib in (("torch", torch), ("ember", ember)):
        cw = CW[name]
        with pytest.raises(TypeError):  # abstract: forward belongs to the subclasses
            cw.ActivationWrapper(lib.nn.Linear(2, 2))
        with pytest.raises(ValueError, match="callable"):
            cw.apply_activation_checkpointing(lib.nn.Sequential(lib.nn.Linear(2, 2)), auto_wrap_policy=3)
        with pytest.raises(TypeError, match="use_reentrant"):  # the flavour is checkpoint_impl's to say
            cw.checkpoint_wrapper(lib.nn.Linear(2, 2), use_reentrant=True)
