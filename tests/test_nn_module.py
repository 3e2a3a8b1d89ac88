"""nn.Module, Parameter, containers and the simple layers, checked against torch module-for-module.

Weights are copied from torch into ember through NumPy, so outputs and gradients must agree.
"""
import copy
import inspect
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.nn.functional as EF

LIBS = (torch, ember)


def E(t):
    """An ember tensor with the values (and requires_grad) of torch tensor t."""
    return ember.tensor(t.detach().numpy().copy(), requires_grad=t.requires_grad)


def N(t):
    return t.detach().numpy()


def copy_weights(tmod, emod):
    """Load torch's state_dict into the ember module (through NumPy)."""
    emod.load_state_dict(OrderedDict((k, E(v)) for k, v in tmod.state_dict().items()))


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(N(a), N(b), rtol=rtol, atol=atol)


def both(fn):
    """fn(lib) for torch and ember."""
    return fn(torch), fn(ember)


def raises_like(fn):
    """fn(lib) raises the same exception type with the same message in torch and ember."""
    out = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append(info)
    assert out[0].type is out[1].type, (out[0].value, out[1].value)
    assert str(out[0].value) == str(out[1].value).replace("ember.", "torch.")  # class paths name the library


class Net:
    """The same small model in both libraries: buffers (persistent or not), shared and nested children."""

    @staticmethod
    def build(lib):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(4, 3)
                self.register_buffer("running", lib.zeros(3))
                self.register_buffer("scratch", lib.ones(2), persistent=False)
                self.register_buffer("count", lib.tensor(0))

            def forward(self, x):
                return self.fc(x) + self.running

        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.seq = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Identity(), lib.nn.Linear(5, 2))
                self.heads = lib.nn.ModuleList([lib.nn.Linear(2, 2), lib.nn.Linear(2, 1, bias=False)])
                self.shared = self.seq[0]
                self.scale = lib.nn.Parameter(lib.ones(1))
                self.none_param = None
                self.register_parameter("absent", None)

            def forward(self, x):
                h = self.seq(self.block(x))
                return self.heads[1](self.heads[0](h)) * self.scale
        return Model()


# ---- Parameter ---------------------------------------------------------------------------

def test_parameter_basics():
    data = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    p = enn.Parameter(data)
    assert isinstance(p, ember.Tensor) and isinstance(p, enn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    data[0, 0] = 7.0  # shares storage
    assert p[0, 0].item() == 7.0
    assert not enn.Parameter(data, requires_grad=False).requires_grad
    assert enn.Parameter().shape == (0,)
    assert type(p * 2) is ember.Tensor and type(p.detach()) is ember.Tensor and type(p.data) is ember.Tensor
    tp = torch.nn.Parameter(torch.tensor([[7.0, 2.0], [3.0, 4.0]]))
    assert repr(p) == repr(tp)
    assert repr(enn.Parameter(data, requires_grad=False)) == repr(torch.nn.Parameter(torch.tensor(
        [[7.0, 2.0], [3.0, 4.0]]), requires_grad=False))
    raises_like(lambda lib: lib.nn.Parameter(lib.ones(2, dtype=lib.int64)))


def test_parameter_deepcopy_and_pickle():
    p = enn.Parameter(ember.tensor([1.0, 2.0]))
    p.grad = ember.tensor([0.5, 0.5])
    q = copy.deepcopy(p)
    assert type(q) is enn.Parameter and q.requires_grad and q.grad is None  # torch does not copy .grad
    q.data.mul_(3)
    assert p.tolist() == [1.0, 2.0] and q.tolist() == [3.0, 6.0]
    r = pickle.loads(pickle.dumps(enn.Parameter(ember.tensor([1.0, 2.0]), requires_grad=False)))
    assert type(r) is enn.Parameter and not r.requires_grad and r.tolist() == [1.0, 2.0]


def test_buffer_assignment():
    for lib in LIBS:
        m = lib.nn.Module()
        m.a = lib.nn.Buffer(lib.ones(2))
        m.b = lib.nn.Buffer(lib.ones(3), persistent=False)
        m.c = lib.zeros(1)  # a plain tensor stays a plain attribute
        assert list(m._buffers) == ["a", "b"] and "c" in m.__dict__
        assert list(m.state_dict()) == ["a"]
        m.a = lib.zeros(2)  # reassigning a buffer name keeps it a buffer
        assert m.a.sum().item() == 0 and "a" in m._buffers


# ---- attribute routing -------------------------------------------------------------------

def test_attribute_routing():
    for lib in LIBS:
        m = lib.nn.Module()
        m.w = lib.nn.Parameter(lib.ones(2))
        m.sub = lib.nn.Linear(2, 2)
        m.register_buffer("buf", lib.zeros(2))
        assert {"w", "sub", "buf"}.isdisjoint(m.__dict__)
        assert m.w is m._parameters["w"] and m.sub is m._modules["sub"] and m.buf is m._buffers["buf"]
        m.w = None
        assert m._parameters["w"] is None and m.w is None
        m.sub = None
        assert m._modules["sub"] is None
        m.x = lib.nn.Linear(1, 1)
        m.x = lib.nn.Parameter(lib.ones(1))  # a parameter replaces the module of the same name
        assert "x" in m._parameters and "x" not in m._modules
        m.plain = 3
        m.plain = lib.nn.Identity()  # a module replaces a plain attribute
        assert "plain" not in m.__dict__ and "plain" in m._modules
        del m.x, m.buf, m.w, m.plain
        assert "x" not in m._parameters and "buf" not in m._buffers and "w" not in m._parameters
        assert "plain" not in m._modules
        with pytest.raises(AttributeError):
            m.missing


def test_attribute_errors_match_torch():
    def lin(lib):
        return lib.nn.Linear(3, 2)
    raises_like(lambda lib: setattr(lin(lib), "weight", lib.ones(2, 3)))
    raises_like(lambda lib: lin(lib).missing)
    raises_like(lambda lib: lib.nn.Module()())
    raises_like(lambda lib: lin(lib).register_parameter("a.b", None))
    raises_like(lambda lib: lin(lib).register_parameter("", None))
    raises_like(lambda lib: lin(lib).register_parameter("in_features", None))
    raises_like(lambda lib: lin(lib).register_buffer("weight", lib.ones(1)))
    raises_like(lambda lib: lin(lib).register_buffer("b", [1.0]))
    raises_like(lambda lib: lin(lib).add_module("a.b", lib.nn.Identity()))
    raises_like(lambda lib: lin(lib).add_module("x", 3))
    raises_like(lambda lib: lin(lib).register_parameter("p", lib.ones(1)))
    raises_like(lambda lib: setattr(lin(lib), "weight", lib.nn.Linear(1, 1)))
    raises_like(lambda lib: lin(lib).register_parameter("p", lib.nn.Parameter(lib.ones(1)) * 2))

    def assign_module_slot(lib):
        s = lib.nn.Sequential(lib.nn.Identity())
        setattr(s, "0", 5)
    raises_like(assign_module_slot)

    def before_init(lib):
        class Bad(lib.nn.Module):
            def __init__(self):
                self.p = lib.nn.Parameter(lib.ones(1))
        Bad()
    raises_like(before_init)
    raises_like(lambda lib: lib.nn.Module(3))
    raises_like(lambda lib: lib.nn.Module(foo=3))


def test_dir_lists_members():
    m = enn.Linear(2, 3)
    assert {"weight", "bias", "forward", "in_features"} <= set(dir(m))
    assert "0" not in dir(enn.Sequential(enn.Identity()))


# ---- traversal ---------------------------------------------------------------------------

def test_named_members_match_torch():
    tm, em = Net.build(torch), Net.build(ember)

    def names(it):
        return [n for n, _ in it]
    for kwargs in ({}, {"prefix": "root"}, {"recurse": False}, {"remove_duplicate": False}):
        assert names(tm.named_parameters(**kwargs)) == names(em.named_parameters(**kwargs))
        assert names(tm.named_buffers(**kwargs)) == names(em.named_buffers(**kwargs))
    for kwargs in ({}, {"prefix": "p"}, {"remove_duplicate": False}):
        assert names(tm.named_modules(**kwargs)) == names(em.named_modules(**kwargs))
    assert names(tm.named_children()) == names(em.named_children())
    assert len(list(tm.parameters())) == len(list(em.parameters())) == 10  # shared Linear counted once
    assert len(list(em.modules())) == len(list(tm.modules()))
    assert [type(c).__name__ for c in em.children()] == [type(c).__name__ for c in tm.children()]


def test_train_eval_requires_grad_apply():
    m = Net.build(ember)
    assert m.training and all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    raises_like(lambda lib: lib.nn.Linear(1, 1).train("yes"))
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    visited = {lib: [] for lib in LIBS}
    for lib in LIBS:
        Net.build(lib).apply(lambda mod: visited[lib].append(type(mod).__name__))
    assert visited[torch] == visited[ember]


def test_zero_grad():
    m = enn.Linear(3, 2)
    m(ember.ones(4, 3)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is not None and m.weight.grad.abs().sum().item() == 0
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_dtype_conversions_keep_parameter_identity():
    m = Net.build(ember)
    w = m.block.fc.weight
    m(ember.ones(2, 4)).sum().backward()
    assert m.double() is m
    assert m.block.fc.weight is w and w.dtype is ember.float64 and w.grad.dtype is ember.float64
    assert m.block.running.dtype is ember.float64 and m.block.count.dtype is ember.int64  # ints unchanged
    m.to(ember.float32)
    assert w.dtype is ember.float32 and w.grad.dtype is ember.float32
    m.to(ember.zeros(1, dtype=ember.float64))
    assert w.dtype is ember.float64
    m.float().half()
    assert w.dtype is ember.float16
    m.to("cpu", ember.float32)
    assert w.dtype is ember.float32 and m.cpu() is m
    m.type(ember.float64)
    assert w.dtype is ember.float64
    raises_like(lambda lib: lib.nn.Linear(1, 1).to(lib.int64))
    raises_like(lambda lib: lib.nn.Linear(1, 1).cuda())
    assert isinstance(enn.Module().cuda(), enn.Module)  # nothing to move, nothing raised (as torch)


# ---- state_dict --------------------------------------------------------------------------

def test_state_dict_keys_order_shapes_match_torch():
    tm, em = Net.build(torch), Net.build(ember)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd)
    assert [tuple(v.shape) for v in tsd.values()] == [tuple(v.shape) for v in esd.values()]
    assert dict(tsd._metadata) == dict(esd._metadata)
    assert all(not v.requires_grad for v in esd.values())
    kept = em.state_dict(keep_vars=True)
    assert kept["scale"] is em.scale
    assert list(em.state_dict(prefix="m.")) == list(tm.state_dict(prefix="m."))
    dest = OrderedDict()
    assert em.state_dict(destination=dest) is dest
    with pytest.warns(FutureWarning):
        em.state_dict(OrderedDict())


def test_load_state_dict_roundtrip_outputs_match():
    tm, em = Net.build(torch), Net.build(ember)
    with torch.no_grad():
        tm.block.running.uniform_()
    res = em.load_state_dict(OrderedDict((k, E(v)) for k, v in tm.state_dict().items()))
    assert repr(res) == "<All keys matched successfully>" and res.missing_keys == [] == res.unexpected_keys
    x = torch.randn(5, 4)
    close(tm(x), em(E(x)))


def test_load_state_dict_errors_match_torch():
    def load(sd_fn, **kw):
        def f(lib):
            m = Net.build(lib)
            sd = sd_fn(lib, m.state_dict())
            return m.load_state_dict(sd, **kw)
        return f

    def drop_and_add(lib, sd):
        del sd["seq.0.bias"]
        sd["block.extra"] = lib.ones(1)
        sd["nothere.weight"] = lib.ones(1)
        return sd

    def bad_shape(lib, sd):
        sd["block.fc.weight"] = lib.ones(2, 2)
        return sd

    def not_tensor(lib, sd):
        sd["scale"] = 3.0
        return sd

    raises_like(load(drop_and_add))
    raises_like(load(bad_shape))
    raises_like(load(not_tensor))
    raises_like(load(bad_shape, strict=False))
    raises_like(lambda lib: lib.nn.Linear(1, 1).load_state_dict([1, 2]))
    t, e = load(drop_and_add, strict=False)(torch), load(drop_and_add, strict=False)(ember)
    assert repr(t) == repr(e) and t.missing_keys == e.missing_keys and t.unexpected_keys == e.unexpected_keys
    t, e = both(lambda lib: lib.nn.Linear(2, 2).load_state_dict({}, strict=False))
    assert repr(t) == repr(e)


def test_load_state_dict_copies_or_assigns():
    m = enn.Linear(2, 3)
    w = m.weight
    new = {"weight": ember.ones(3, 2), "bias": ember.zeros(3)}
    m.load_state_dict(new)
    assert m.weight is w and w.tolist() == [[1.0, 1.0]] * 3 and new["weight"] is not w
    m.load_state_dict(new, assign=True)
    assert isinstance(m.weight, enn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == new["weight"].data_ptr()
    m2 = enn.Linear(1, 1)
    m2.load_state_dict({"weight": ember.ones(1, 1), "bias": ember.ones(1)})  # 0-d params accept shape (1,)
    s = enn.Module()
    s.p = enn.Parameter(ember.tensor(2.0))
    s.load_state_dict({"p": ember.tensor([5.0])})
    assert s.p.item() == 5.0


def test_extra_state_and_state_dict_hooks():
    calls = {lib: [] for lib in LIBS}
    for lib in LIBS:
        class WithState(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)
                self.counter = 3

            def get_extra_state(self):
                return {"counter": self.counter}

            def set_extra_state(self, state):
                self.counter = state["counter"]

        m = WithState()
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls[lib].append(("pre", prefix)))
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: calls[lib].append(("post", list(sd))))
        m._register_load_state_dict_pre_hook(
            lambda sd, prefix, meta, strict, mk, uk, em: calls[lib].append(("load_pre", sorted(sd))))
        m.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, meta, strict, mk, uk, em: calls[lib].append(("load_pre_mod", type(mod).__name__)))
        m.register_load_state_dict_post_hook(lambda mod, keys: calls[lib].append(("load_post", list(keys))))
        sd = m.state_dict()
        assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"]
        sd["_extra_state"] = {"counter": 9}
        m.load_state_dict(sd)
        assert m.counter == 9
        del sd["_extra_state"]
        with pytest.raises(RuntimeError, match='Missing key.*"_extra_state"'):
            m.load_state_dict(sd)
    assert calls[torch] == calls[ember]


def test_state_dict_post_hook_may_replace_dict():
    for lib in LIBS:
        m = lib.nn.Linear(1, 1)
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"replaced": 1})
        assert m.state_dict() == {"replaced": 1}
        m2 = lib.nn.Linear(1, 1)
        m2.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {"x": 1})
        with pytest.raises(RuntimeError, match="must return None"):
            m2.state_dict()


# ---- hooks -------------------------------------------------------------------------------

def _traced(lib, log):
    """A two-layer model whose every hook appends (event, details) to log."""
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Linear(4, 2))
    for name, mod in [("outer", model), ("l0", model[0]), ("l1", model[1])]:
        mod.register_forward_pre_hook(lambda m, args, n=name: log.append(("pre", n, tuple(args[0].shape))))
        mod.register_forward_hook(lambda m, args, out, n=name: log.append(("fwd", n, tuple(out.shape))))
        mod.register_full_backward_pre_hook(
            lambda m, gout, n=name: log.append(("bwd_pre", n, [None if g is None else tuple(g.shape) for g in gout])))
        mod.register_full_backward_hook(
            lambda m, gin, gout, n=name: log.append(("bwd", n, [None if g is None else tuple(g.shape) for g in gin])))
    return model


@pytest.mark.parametrize("input_grad", [True, False])
def test_hook_order_and_arguments_match_torch(input_grad):
    logs = {}
    for lib in LIBS:
        log = logs[lib] = []
        model = _traced(lib, log)
        x = lib.ones(5, 3, requires_grad=input_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model(x).sum().backward()
    assert logs[torch] == logs[ember]


def test_full_backward_hook_values_match_torch():
    seen = {}
    tmod, emod = torch.nn.Linear(3, 2), enn.Linear(3, 2)
    copy_weights(tmod, emod)
    for lib, mod in ((torch, tmod), (ember, emod)):
        rec = seen[lib] = {}

        def pre(m, gout, rec=rec):
            rec["gout"] = N(gout[0]).copy()
            return (gout[0] * 2,)  # doubled upstream gradient

        def post(m, gin, gout, rec=rec):
            rec["gin"] = N(gin[0]).copy()
            rec["gout2"] = N(gout[0]).copy()
            return (gin[0] + 1,)
        mod.register_full_backward_pre_hook(pre)
        mod.register_full_backward_hook(post)
        x = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 7, requires_grad=True)
        (mod(x) ** 2).sum().backward()
        rec["xgrad"] = N(x.grad).copy()
        rec["wgrad"] = N(mod.weight.grad).copy()
    for key in ("gout", "gin", "gout2", "xgrad", "wgrad"):
        np.testing.assert_allclose(seen[torch][key], seen[ember][key], rtol=1e-5, atol=1e-6)


def test_forward_hook_variants():
    out = {}
    for lib in LIBS:
        log = []
        m = lib.nn.Linear(2, 2)
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
        m.register_forward_pre_hook(lambda mod, args, kwargs: log.append(("kw", sorted(kwargs))) or None,
                                    with_kwargs=True)
        m.register_forward_hook(lambda mod, args, output: log.append("second"))
        m.register_forward_hook(lambda mod, args, output: log.append("first"), prepend=True)
        m.register_forward_hook(lambda mod, args, kwargs, output: output + 1, with_kwargs=True)
        y = m(lib.ones(1, 2))
        log.append(np.round(N(y) - N(m.bias), 5).tolist())  # input was zeroed, output got +1
        h1.remove()
        h1.remove()  # removing twice is harmless
        m(lib.ones(1, 2))
        with h1:
            pass
        out[lib] = log
    assert out[torch] == out[ember]


def test_forward_hook_always_call_and_bad_pre_hook():
    out = {}
    for lib in LIBS:
        log = []

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        b = Boom()
        b.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
        b.register_forward_hook(lambda m, a, o: log.append("never"))
        with pytest.raises(ValueError, match="boom"):
            b(1)
        out[lib] = log
    assert out[torch] == out[ember] == [("always", None)]
    raises_like(lambda lib: _bad_pre(lib))


def _bad_pre(lib):
    m = lib.nn.Identity()
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    m(lib.ones(1))


def test_global_forward_hooks():
    from ember.nn.modules import module as emodule
    from torch.nn.modules import module as tmodule
    logs = {}
    for lib, mm in ((torch, tmodule), (ember, emodule)):
        log = logs[lib] = []
        h1 = mm.register_module_forward_pre_hook(lambda m, a: log.append(("gpre", type(m).__name__)))
        h2 = mm.register_module_forward_hook(lambda m, a, o: log.append(("gfwd", type(m).__name__)))
        try:
            m = lib.nn.Sequential(lib.nn.Identity())
            m.register_forward_hook(lambda mod, a, o: log.append(("local", type(mod).__name__)))
            m(lib.ones(1))
        finally:
            h1.remove()
            h2.remove()
    assert logs[torch] == logs[ember]


def test_hooks_with_no_input_requiring_grad_warn_and_fire():
    for lib in LIBS:
        m = lib.nn.Linear(2, 2)
        got = []
        m.register_full_backward_hook(lambda mod, gin, gout: got.append(gin))
        with pytest.warns(UserWarning, match="Full backward hook is firing"):
            m(lib.ones(1, 2)).sum().backward()
        assert got == [(None,)]


def test_mixing_backward_hook_kinds_raises():
    raises_like(lambda lib: _mix_hooks(lib))


def _mix_hooks(lib):
    m = lib.nn.Linear(1, 1)
    m.register_full_backward_hook(lambda *a: None)
    m.register_backward_hook(lambda *a: None)


# ---- repr --------------------------------------------------------------------------------

def _repr_models(lib):
    class Custom(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = lib.nn.Linear(1, 1)

        def extra_repr(self):
            return "alpha=1,\nbeta=2"
    nn = lib.nn
    return [
        nn.Linear(2, 3), nn.Linear(2, 3, bias=False), nn.Bilinear(2, 3, 4), nn.Identity(), nn.Flatten(),
        nn.Flatten(0, 2), nn.Unflatten(1, (2, 3)), nn.Module(),
        nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Identity(), nn.Linear(3, 3)), nn.Flatten()),
        nn.Sequential(OrderedDict([("first", nn.Linear(1, 2)), ("second", nn.Identity())])),
        nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Identity(), nn.Linear(2, 2)]),
        nn.ModuleList(), nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ModuleList([nn.Identity()])}),
        nn.ParameterList([nn.Parameter(lib.ones(2, 3)), nn.Parameter(lib.ones(2, dtype=lib.float64)), "x"]),
        nn.ParameterDict({"a": nn.Parameter(lib.ones(2, 3))}),
        nn.ParameterDict({"a": nn.Parameter(lib.ones(2, 3)), "b": lib.ones(1, dtype=lib.float64), "c": 3}),
        Custom(),
    ]


def test_repr_matches_torch():
    for t, e in zip(_repr_models(torch), _repr_models(ember)):
        assert repr(t) == repr(e)


# ---- lookup by path, copying -------------------------------------------------------------

def test_get_submodule_parameter_buffer():
    tm, em = Net.build(torch), Net.build(ember)
    assert em.get_submodule("seq.2") is em.seq[2]
    assert em.get_submodule("") is em
    assert em.get_parameter("block.fc.weight") is em.block.fc.weight
    assert em.get_buffer("block.running") is em.block.running
    for target in ("seq.9", "block.fc.weight.x", "scale.x"):
        raises_like(lambda lib: Net.build(lib).get_submodule(target))
    raises_like(lambda lib: Net.build(lib).get_parameter("block.running"))
    raises_like(lambda lib: Net.build(lib).get_parameter("block.nope"))
    raises_like(lambda lib: Net.build(lib).get_buffer("block.fc.weight"))
    em.set_submodule("seq.1", enn.Flatten())
    assert isinstance(em.seq[1], enn.Flatten)
    raises_like(lambda lib: Net.build(lib).set_submodule("seq.1", 3))


def test_deepcopy_and_pickle_module():
    m = Net.build(ember)
    c = copy.deepcopy(m)
    assert c.shared is c.seq[0] and c.seq[0].weight is not m.seq[0].weight
    x = ember.randn(3, 4)
    close(m(x), c(x))
    c.seq[0].weight.data.mul_(0)
    assert m.seq[0].weight.abs().sum().item() > 0
    p = pickle.loads(pickle.dumps(enn.Sequential(enn.Linear(2, 2), enn.Flatten())))
    y = ember.ones(1, 2)
    assert p(y).shape == (1, 2) and isinstance(p[0].weight, enn.Parameter)


# ---- containers --------------------------------------------------------------------------

def test_sequential_ops_match_torch():
    def ops(lib):
        nn = lib.nn
        a, b, c, d = nn.Linear(1, 1), nn.Identity(), nn.Linear(1, 2), nn.Flatten()
        s = nn.Sequential(a, b, c)
        res = [len(s), s[-1] is c, s[0] is a, isinstance(s[1:], nn.Sequential), len(s[::2])]
        res.append([type(m).__name__ for m in s])
        s.append(d)
        s.insert(1, nn.Identity())
        s.insert(-1, nn.Linear(2, 2))
        s.extend([nn.Identity()])
        res.append(list(s.state_dict()))
        res.append(type(s.pop(0)).__name__)
        del s[1]
        del s[-2:]
        res.append(list(s.state_dict()))
        s[0] = nn.Linear(3, 3)
        res.append([type(m).__name__ for m in s])
        res.append(list((s + nn.Sequential(nn.Linear(1, 1))).state_dict()))
        res.append(len(s * 2))
        s += nn.Sequential(nn.Identity())
        res.append(list(s._modules))
        res.append(list(nn.Sequential(OrderedDict([("x", a), ("y", c)])).state_dict()))
        return res
    assert ops(torch) == ops(ember)
    for bad in (lambda lib: lib.nn.Sequential()[0], lambda lib: lib.nn.Sequential(lib.nn.Identity())[-2],
                lambda lib: lib.nn.Sequential() + lib.nn.ModuleList(),
                lambda lib: lib.nn.Sequential(lib.nn.Identity()).insert(5, lib.nn.Identity())):
        raises_like(bad)


def test_sequential_forward_matches_torch():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Flatten(0), torch.nn.Unflatten(0, (3, 8)),
                             torch.nn.Linear(8, 2))
    em = enn.Sequential(enn.Linear(4, 8), enn.Flatten(0), enn.Unflatten(0, (3, 8)), enn.Linear(8, 2))
    copy_weights(tm, em)
    x = torch.randn(3, 4, requires_grad=True)
    ex = E(x)
    ty, ey = tm(x), em(ex)
    close(ty, ey)
    g = torch.randn(ty.shape)
    ty.backward(g)
    ey.backward(E(g))
    close(x.grad, ex.grad)
    for (n, tp), ep in zip(tm.named_parameters(), em.parameters()):
        close(tp.grad, ep.grad)


def test_module_list_and_dict_ops_match_torch():
    def ops(lib):
        nn = lib.nn
        ml = nn.ModuleList([nn.Linear(1, 1), nn.Identity()])
        ml.append(nn.Linear(1, 2))
        ml += [nn.Identity()]
        ml.extend([nn.Linear(2, 2)])
        ml.insert(1, nn.Linear(3, 3))
        res = [len(ml), list(ml.state_dict()), type(ml[-1]).__name__, len(ml[1:4]), type(ml[1:3]).__name__]
        res.append(type(ml.pop(1)).__name__)
        del ml[0]
        ml[0] = nn.Linear(4, 4)
        res.append(list(ml.state_dict()))
        res.append(list((ml + nn.ModuleList([nn.Linear(1, 1)])).state_dict()))
        md = nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.Identity()})
        md["c"] = nn.Linear(2, 2)
        md.update([("d", nn.Identity()), ("b", nn.Linear(3, 3))])
        res += [list(md.keys()), list(md), "a" in md, len(md), list(md.state_dict())]
        res.append(type(md.pop("a")).__name__)
        del md["c"]
        res.append([k for k, _ in md.items()])
        md.clear()
        res.append(len(md))
        return res
    assert ops(torch) == ops(ember)
    raises_like(lambda lib: lib.nn.ModuleList()[0])
    raises_like(lambda lib: lib.nn.ModuleList().extend(3))
    raises_like(lambda lib: lib.nn.ModuleDict().update(3))
    raises_like(lambda lib: lib.nn.ModuleDict().update([(1, 2, 3)]))


def test_parameter_list_and_dict_match_torch():
    def ops(lib):
        nn = lib.nn
        pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(3), requires_grad=False)])
        pl.append(lib.ones(1))
        pl.extend([lib.ones(4)])
        res = [len(pl), list(pl.state_dict()), type(pl[0]).__name__, pl[1].requires_grad, len(pl[1:]),
               [tuple(p.shape) for p in pl]]
        pl[0] = lib.ones(5)
        res.append(tuple(pl[0].shape))
        pd = nn.ParameterDict({"z": lib.ones(1), "a": lib.ones(2)})  # plain dicts are sorted (as torch)
        pd["m"] = lib.ones(3)
        pd.update(OrderedDict([("q", lib.ones(1)), ("b", lib.ones(1))]))
        res += [list(pd.keys()), list(pd.state_dict()), "a" in pd, len(pd)]
        res.append(tuple(pd.pop("a").shape))
        res.append(pd.popitem()[0])
        res.append(pd.get("nope", 7))
        res.append(list(pd.copy().keys()))
        res.append(list((pd | nn.ParameterDict({"new": lib.ones(1)})).keys()))
        res.append(tuple(pd.setdefault("s", lib.ones(6)).shape))
        res.append(list(pd.fromkeys(["u", "v"], lib.ones(1)).keys()))
        return res
    assert ops(torch) == ops(ember)
    raises_like(lambda lib: lib.nn.ParameterList()(1))
    raises_like(lambda lib: lib.nn.ParameterDict()(1))
    raises_like(lambda lib: lib.nn.ParameterDict()[1])
    raises_like(lambda lib: lib.nn.ParameterList().extend(lib.ones(2)))


# ---- layers ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3,), (5, 3), (2, 4, 3), (2, 0, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape, bias, dtype):
    tm = torch.nn.Linear(3, 4, bias=bias).to(getattr(torch, dtype))
    em = enn.Linear(3, 4, bias=bias).to(getattr(ember, dtype))
    copy_weights(tm, em)
    x = torch.randn(shape, dtype=getattr(torch, dtype), requires_grad=True)
    ex = E(x)
    ty, ey = tm(x), em(ex)
    assert ey.dtype is getattr(ember, dtype) and tuple(ey.shape) == tuple(ty.shape)
    close(ty, ey)
    g = torch.randn(ty.shape, dtype=ty.dtype)
    ty.backward(g)
    ey.backward(E(g))
    close(x.grad, ex.grad)
    close(tm.weight.grad, em.weight.grad)
    if bias:
        close(tm.bias.grad, em.bias.grad)


def test_linear_double_backward_matches_torch():
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True)
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    res = []
    for lib, args in ((torch, (x, w, b)), (ember, tuple(E(t) for t in (x, w, b)))):
        y = lib.nn.functional.linear(*args)
        gx, gw = lib.autograd.grad((y ** 2).sum(), args[:2], create_graph=True)
        gg = lib.autograd.grad((gx ** 2).sum() + (gw ** 3).sum(), args)
        res.append([N(t) for t in (gx, gw) + tuple(gg)])
    for a, b_ in zip(*res):
        np.testing.assert_allclose(a, b_, rtol=1e-10)


def test_functional_linear_forms_and_errors():
    x = torch.randn(4, 3)
    for w, b in ((torch.randn(3), None), (torch.randn(2, 3), torch.randn(2)), (torch.randn(2, 3), torch.tensor(1.0)),
                 (torch.randn(2, 3), torch.randn(1, 2))):
        t = torch.nn.functional.linear(x, w, b)
        e = EF.linear(E(x), E(w), None if b is None else E(b))
        close(t, e)
    ints = both(lambda lib: lib.nn.functional.linear(lib.ones(4, 3, dtype=lib.int64), lib.ones(2, 3,
                                                                                                dtype=lib.int64)))
    assert ints[0].tolist() == ints[1].tolist() and ints[1].dtype is ember.int64
    for bad in (lambda lib: lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 5)),
                lambda lib: lib.nn.functional.linear(lib.ones(3), lib.ones(2, 5)),
                lambda lib: lib.nn.functional.linear(lib.ones(2, 4, 3), lib.ones(2, 5)),
                lambda lib: lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 3), lib.ones(3)),
                lambda lib: lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 3, dtype=lib.float64)),
                lambda lib: lib.nn.functional.linear(lib.ones(4, 3), lib.ones(2, 3),
                                                     lib.ones(2, dtype=lib.float64))):
        raises_like(bad)


@pytest.mark.parametrize("shapes", [((5, 2), (5, 3)), ((2,), (3,)), ((2, 4, 2), (2, 4, 3))])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(shapes, bias):
    tm, em = torch.nn.Bilinear(2, 3, 4, bias=bias), enn.Bilinear(2, 3, 4, bias=bias)
    copy_weights(tm, em)
    x1 = torch.randn(shapes[0], requires_grad=True)
    x2 = torch.randn(shapes[1], requires_grad=True)
    e1, e2 = E(x1), E(x2)
    ty, ey = tm(x1, x2), em(e1, e2)
    close(ty, ey)
    g = torch.randn(ty.shape)
    ty.backward(g)
    ey.backward(E(g))
    close(x1.grad, e1.grad)
    close(x2.grad, e2.grad)
    close(tm.weight.grad, em.weight.grad)
    if bias:
        close(tm.bias.grad, em.bias.grad)


def test_bilinear_errors_match_torch():
    F = lambda lib, a, b, w, bias=None: lib.nn.functional.bilinear(lib.ones(*a), lib.ones(*b), lib.ones(*w),  # noqa
                                                                   None if bias is None else lib.ones(*bias))
    for args in (((4, 2), (5, 3), (6, 2, 3)), ((4, 2), (4, 4), (6, 2, 3)), ((4, 3), (4, 3), (6, 2, 3)),
                 ((4, 2), (4, 3), (6, 2, 3), (5,)), ((4, 2), (4, 5, 3), (6, 2, 3)), ((3, 2), (3, 3), (2, 3))):
        raises_like(lambda lib: F(lib, *args))
    raises_like(lambda lib: lib.nn.functional.bilinear(lib.ones(3, 2), lib.ones(3, 3, dtype=lib.float64),
                                                       lib.ones(6, 2, 3)))


def test_flatten_unflatten_identity_match_torch():
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    for tmod, emod in ((torch.nn.Flatten(), enn.Flatten()), (torch.nn.Flatten(0, 2), enn.Flatten(0, 2)),
                       (torch.nn.Flatten(-2), enn.Flatten(-2)), (torch.nn.Unflatten(2, (2, 2)), enn.Unflatten(2, (2, 2))),
                       (torch.nn.Unflatten(-1, [5, 1]), enn.Unflatten(-1, [5, 1])),
                       (torch.nn.Identity(3, k=1), enn.Identity(3, k=1))):
        ex = E(x)
        ty, ey = tmod(x), emod(ex)
        assert tuple(ty.shape) == tuple(ey.shape)
        close(ty, ey)
        ey.sum().backward()
        assert tuple(ex.grad.shape) == tuple(x.shape)
    for bad in (lambda lib: lib.nn.Unflatten(1, 3), lambda lib: lib.nn.Unflatten(1, (2, "a")),
                lambda lib: lib.nn.Unflatten(1, ((2,), 3))):
        raises_like(bad)


def _stats(t):
    a = N(t).astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


@pytest.mark.parametrize("lib_layer", [
    lambda lib: lib.nn.Linear(400, 300),
    lambda lib: lib.nn.Linear(40, 3000),
    lambda lib: lib.nn.Bilinear(20, 30, 400),
])
def test_default_initialisation_statistics_match_torch(lib_layer):
    tm, em = lib_layer(torch), lib_layer(ember)
    for (name, tp), ep in zip(tm.named_parameters(), em.parameters()):
        tmean, tstd, tmin, tmax = _stats(tp)
        emean, estd, emin, emax = _stats(ep)
        bound = 1 / np.sqrt(tm.weight.shape[1])  # fan_in for Linear, in1_features for Bilinear
        assert ep.dtype is ember.float32
        assert -bound <= emin and emax <= bound  # U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        n = ep.numel()
        # U(-b, b): mean 0 +- 5 sigma of the sample mean, std b/sqrt(3) within 5 sigma of the sample std
        assert abs(emean) < 5 * bound / np.sqrt(3 * n) and abs(tmean) < 5 * bound / np.sqrt(3 * n)
        assert abs(estd - bound / np.sqrt(3)) < 5 * bound * 0.3 / np.sqrt(n) + 1e-9
        assert abs(estd - tstd) < 10 * bound * 0.3 / np.sqrt(n)
        assert abs(emin - tmin) < 20 * bound / n and abs(emax - tmax) < 20 * bound / n


def test_reset_parameters_is_separate_from_construction():
    m = enn.Linear(50, 40)
    before = N(m.weight).copy()
    w = m.weight
    m.reset_parameters()
    assert m.weight is w and not np.array_equal(before, N(m.weight))
    nb = enn.Linear(5, 4, bias=False)
    assert nb.bias is None and list(nb.state_dict()) == ["weight"]
    assert enn.Linear(3, 2, dtype=ember.float64).weight.dtype is ember.float64


def test_call_is_lean_without_hooks():
    """Without hooks __call__ goes straight to forward (no hook machinery, same result)."""
    m = enn.Linear(3, 2)
    calls = []
    orig = enn.Module._call_impl
    enn.Module._call_impl = lambda self, *a, **k: calls.append(1) or orig(self, *a, **k)
    try:
        m(ember.ones(1, 3))
        assert calls == []
        m.register_forward_hook(lambda *a: None)
        m(ember.ones(1, 3))
        assert calls == [1]
    finally:
        enn.Module._call_impl = orig


def test_backward_hooks_multiple_inputs_and_outputs_match_torch():
    """Non-tensor args give None, tensors not requiring grad give zeros; outputs that got
    no gradient show None in grad_output (torch's packing)."""
    res = {}

    def show(gs):
        return [None if g is None else np.round(g.numpy(), 4).tolist() for g in gs]
    for lib in LIBS:
        class Two(lib.nn.Module):
            def forward(self, a, k, b, scale=1.0):
                return a * b * scale, (a + b).sum() * k

        class Ignore(lib.nn.Module):
            def forward(self, a, b):
                return b * 2
        log = res[lib] = []
        m = Two()
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", show(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("post", show(gi), show(go))))
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        o1, o2 = m(a, 3, b, scale=2.0)
        (o1.sum() + o2).backward()
        o1, o2 = m(a, 3, b, scale=2.0)
        o1.sum().backward()
        log.append(a.grad.tolist())
        m2 = Ignore()
        m2.register_full_backward_hook(lambda mod, gi, go: log.append(("ign", show(gi))))
        m2(a, lib.tensor([1.0], requires_grad=True)).sum().backward()
    assert res[torch] == res[ember]


def test_state_dict_crosses_to_torch_through_checkpoints(tmp_path):
    """A state_dict saved by ember loads into the torch model, and back (keys, dtypes, values)."""
    tm, em = Net.build(torch), Net.build(ember)
    ember.save(em.state_dict(), tmp_path / "e.pt")
    tm.load_state_dict(torch.load(tmp_path / "e.pt"))
    x = torch.randn(2, 4)
    close(tm(x), em(E(x)))
    with torch.no_grad():
        tm.block.fc.weight.mul_(2)
    torch.save(tm.state_dict(), tmp_path / "t.pt")
    em.load_state_dict(ember.load(tmp_path / "t.pt"))
    close(tm(x), em(E(x)))


def test_training_loop_matches_torch():
    """A few SGD steps on an MLP from identical weights give identical losses and weights."""
    losses = {}
    rng = np.random.RandomState(0)
    xs, ys = rng.randn(4, 8, 5).astype(np.float32), rng.randn(4, 8, 2).astype(np.float32)
    for lib in LIBS:
        nn = lib.nn

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(5, 16)
                self.fc2 = nn.Linear(16, 2)

            def forward(self, x):
                return self.fc2(self.fc1(x).tanh())
        m = MLP().double()
        if lib is torch:
            initial = OrderedDict((k, E(v)) for k, v in m.state_dict().items())
        else:
            m.load_state_dict(initial)
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        out = losses[lib] = []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = ((m(lib.tensor(x).double()) - lib.tensor(y).double()) ** 2).mean()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            out.append(loss.item())
        out.append(N(m.fc1.weight).copy())
    np.testing.assert_allclose(losses[torch][:-1], losses[ember][:-1], rtol=1e-10)
    np.testing.assert_allclose(losses[torch][-1], losses[ember][-1], rtol=1e-10)


def test_functional_reexports_activations():
    from ember._ops import activation
    for name in activation.FUNCTIONAL:  # (autocast policies and out= forms wrap some of them)
        assert inspect.unwrap(getattr(EF, name)) is inspect.unwrap(getattr(activation, name))
    x = torch.randn(3, 4)
    close(torch.nn.functional.relu(x), EF.relu(E(x)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_half_precision_matches_torch(dtype):
    """Half types accumulate in float32 like torch, so results agree to the output's rounding."""
    tm = torch.nn.Linear(256, 8).to(getattr(torch, dtype))
    em = enn.Linear(256, 8).to(getattr(ember, dtype))
    em.load_state_dict(OrderedDict((k, ember.tensor(v.float().numpy()).to(getattr(ember, dtype)))
                                   for k, v in tm.state_dict().items()))
    x = torch.randn(16, 256).to(getattr(torch, dtype))
    ty = tm(x)
    ey = em(ember.tensor(x.float().numpy()).to(getattr(ember, dtype)))
    assert ey.dtype is getattr(ember, dtype)
    ulp = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
    t32, e32 = ty.float().detach().numpy(), ey.float().detach().numpy()
    assert np.all(np.abs(t32 - e32) <= ulp * np.maximum(np.abs(t32), 1.0))


def test_share_memory_to_empty_compile():
    m = enn.Linear(3, 2)
    w = m.weight
    assert m.share_memory() is m and m.weight is w
    m.to_empty(device="cpu")
    assert m.weight is w and tuple(w.shape) == (2, 3)
    assert m.compile() is None and m(ember.ones(1, 3)).shape == (1, 2)


def _params(cls):
    """(name, default, kind) of a constructor's parameters; a function default by its name (each library its own)."""
    import inspect
    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        d = p.default
        out.append((p.name, d.__name__ if callable(d) else repr(d), p.kind))
    return out


def test_module_constructor_signatures_match_torch():
    """Every nn module ember has takes torch's constructor parameters, in torch's order, with torch's defaults."""
    checked = []
    for name in dir(torch.nn):
        tc, ec = getattr(torch.nn, name), getattr(ember.nn, name, None)
        if isinstance(tc, type) and issubclass(tc, torch.nn.Module) and ec is not None:
            assert _params(ec) == _params(tc), name
            checked.append(name)
    assert len(checked) > 100


# ---- the ember-only module tests above, told again on torch (issue 19) ----------------------------------------

def _plain(v):
    """Tensors as (type name, dtype, shape, values, requires_grad); containers element-wise."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return (type(v).__name__, str(v.dtype), tuple(v.shape), v.detach().tolist(), v.requires_grad)
    return v


def _story_parameter_copy(lib):
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    p.grad = lib.tensor([0.5, 0.5])
    q = copy.deepcopy(p)
    out = [q, q.grad is None]
    q.data.mul_(3)
    r = pickle.loads(pickle.dumps(lib.nn.Parameter(lib.tensor([1.0, 2.0]), requires_grad=False)))
    return out + [p, q, r, r.grad is None]


def _story_dir(lib):
    m = lib.nn.Linear(2, 3)
    names = ("weight", "bias", "forward", "in_features", "out_features", "training", "_parameters", "0")
    return [[n in dir(m) for n in names], "0" in dir(lib.nn.Sequential(lib.nn.Identity())),
            "0" in dir(lib.nn.ModuleList([lib.nn.Identity()]))]


def _story_zero_grad(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    m(lib.ones(4, 3)).sum().backward()
    g = m.weight.grad
    out = [g]
    m.zero_grad(set_to_none=False)
    out += [m.weight.grad is g, m.weight.grad, m.bias.grad]
    m.zero_grad()
    return out + [m.weight.grad is None, m.bias.grad is None]


def _story_load_state_dict(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(2, 3)
    w = m.weight
    new = {"weight": lib.ones(3, 2), "bias": lib.zeros(3)}
    out = [repr(m.load_state_dict(new)), m.weight is w, w, new["weight"] is not w]
    m.load_state_dict(new, assign=True)
    out += [type(m.weight).__name__, m.weight.requires_grad, m.weight.data_ptr() == new["weight"].data_ptr()]
    m2 = lib.nn.Linear(1, 1)
    m2.load_state_dict({"weight": lib.ones(1, 1), "bias": lib.ones(1)})
    s = lib.nn.Module()
    s.p = lib.nn.Parameter(lib.tensor(2.0))
    s.load_state_dict({"p": lib.tensor([5.0])})
    return out + [m2.weight, m2.bias, s.p]


def _story_deepcopy_module(lib):
    lib.manual_seed(0)
    m = Net.build(lib)
    c = copy.deepcopy(m)
    out = [c.shared is c.seq[0], c.seq[0].weight is not m.seq[0].weight]
    x = lib.randn(3, 4)
    out += [np.round(m(x).detach().numpy(), 5).tolist(), np.round(c(x).detach().numpy(), 5).tolist()]  # matmul order
    c.seq[0].weight.data.mul_(0)
    out.append(m.seq[0].weight)
    p = pickle.loads(pickle.dumps(lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Flatten())))
    return out + [tuple(p(lib.ones(1, 2)).shape), type(p[0].weight).__name__, list(p.state_dict())]


def _story_reset_parameters(lib):
    lib.manual_seed(3)
    m = lib.nn.Linear(50, 40)
    w = m.weight
    before = m.weight.detach().clone()
    m.reset_parameters()
    nb = lib.nn.Linear(5, 4, bias=False)
    return [before, m.weight is w, m.weight, m.bias, nb.bias is None, list(nb.state_dict()),
            lib.nn.Linear(3, 2, dtype=lib.float64).weight]


def _story_share_memory_to_empty(lib):
    m = lib.nn.Linear(3, 2)
    w = m.weight
    out = [m.share_memory() is m, m.weight is w]
    m.to_empty(device="cpu")
    return out + [m.weight is w, tuple(w.shape), str(w.dtype), type(m.weight).__name__]


MODULE_STORIES = {"parameter_deepcopy_and_pickle": _story_parameter_copy, "dir_lists_members": _story_dir,
                  "zero_grad": _story_zero_grad, "load_state_dict_copies_or_assigns": _story_load_state_dict,
                  "deepcopy_and_pickle_module": _story_deepcopy_module,
                  "reset_parameters_is_separate_from_construction": _story_reset_parameters,
                  "share_memory_to_empty": _story_share_memory_to_empty}


@pytest.mark.parametrize("name", sorted(MODULE_STORIES))
def test_module_stories_match_torch(name):
    """Each observation of the ember-only module tests above (identities, seeded values, dtypes, types, reprs) is
    torch's."""
    theirs = str(_plain(MODULE_STORIES[name](torch)))
    ours = str(_plain(MODULE_STORIES[name](ember)))
    assert ours.replace("torch.", "") == theirs.replace("torch.", "")
