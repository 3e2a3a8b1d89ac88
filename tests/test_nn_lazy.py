"""Lazy modules (LazyLinear, LazyConv*/LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*) and
UninitializedParameter/UninitializedBuffer against torch: the state before the first forward, the
materialization on it (shapes, dtypes, the class they become), state_dict round trips, errors, and
optimizers built before materialization."""
import warnings

import numpy as np
import pytest
import torch

import ember

# (class name, constructor args, input shape)
LAZY = [
    ("LazyLinear", (4,), (2, 3)),
    ("LazyLinear", (4, False), (2, 5, 3)),
    ("LazyConv1d", (4, 3), (2, 2, 7)),
    ("LazyConv2d", (4, 3), (3, 5, 5)),  # unbatched
    ("LazyConv3d", (2, 2), (1, 2, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), (2, 2, 5)),
    ("LazyConvTranspose2d", (4, 3, 1, 0, 0, 2), (1, 2, 4, 4)),  # groups=2
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), (4, 3)),
    ("LazyBatchNorm2d", (1e-3, 0.2), (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(LAZY)]


def _e(t):
    return ember.from_numpy(t.detach().numpy().copy())


def _close(e, t, tol=1e-5):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args,shape", LAZY, ids=IDS)
def test_before_and_after_the_first_forward(name, args, shape):
    tm = getattr(torch.nn, name)(*args)
    em = getattr(ember.nn, name)(*args)
    assert repr(em) == repr(tm)
    assert em.has_uninitialized_params() and tm.has_uninitialized_params()
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert type(esd[k]).__name__ == type(tsd[k]).__name__, k
        assert ember.nn.parameter.is_lazy(esd[k]) == torch.nn.parameter.is_lazy(tsd[k])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tm(torch.from_numpy(x))
    em(ember.from_numpy(x))
    assert type(em).__name__ == type(tm).__name__ and not type(em).__name__.startswith("Lazy")
    assert repr(em) == repr(tm)
    tsd = tm.state_dict()
    esd = em.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert tuple(esd[k].shape) == tuple(tsd[k].shape), k
        assert type(esd[k]).__name__ == type(tsd[k]).__name__, k
    for (n1, p1), (n2, p2) in zip(tm.named_parameters(), em.named_parameters()):
        assert n1 == n2 and type(p2).__name__ == type(p1).__name__ == "Parameter"
    if "Norm" in name:  # deterministic init (weight 1, bias 0), running stats after one batch: the same values
        for k in tsd:
            _close(esd[k].to(ember.float64), tsd[k].to(torch.float64), 1e-5)
    # the same weights give the same forward and gradients
    em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    xt = torch.from_numpy(x).requires_grad_()
    xe = ember.from_numpy(x).requires_grad_()
    yt, ye = tm(xt), em(xe)
    _close(ye, yt)
    g = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.from_numpy(g))
    ye.backward(ember.from_numpy(g))
    _close(xe.grad, xt.grad, 1e-4)
    for (n, p1), (_, p2) in zip(tm.named_parameters(), em.named_parameters()):
        _close(p2.grad, p1.grad, 1e-4)


def test_uninitialized_parameter_access():
    for lib in (torch, ember):
        p = lib.nn.parameter.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>"
        assert tuple(p.size()) == (0,) and p.dtype == lib.float32 and p.requires_grad
        assert tuple(p.data.shape) == (0,)
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
            p.shape
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            p + 1
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            p.numel()
        p.materialize((2, 3))
        assert type(p).__name__ == "Parameter" and tuple(p.shape) == (2, 3) and p.requires_grad
        b = lib.nn.parameter.UninitializedBuffer(dtype=lib.float64)
        assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
        b.materialize(4)
        assert type(b) is lib.Tensor and tuple(b.shape) == (4,) and b.dtype == lib.float64


def test_dtype_conversion_before_materialization():
    for lib in (torch, ember):
        m = lib.nn.LazyBatchNorm1d().double()
        assert m.weight.dtype == lib.float64 and m.running_mean.dtype == lib.float64
        m(lib.ones(4, 3, dtype=lib.float64))
        assert m.weight.dtype == lib.float64 and m.running_var.dtype == lib.float64
        assert tuple(m.running_mean.shape) == (3,)


def test_load_state_dict_materializes():
    tl = torch.nn.Linear(3, 4)
    results = []
    for lib, sd in ((torch, tl.state_dict()), (ember, {k: _e(v) for k, v in tl.state_dict().items()})):
        m = lib.nn.LazyLinear(4)
        m.load_state_dict(sd)
        results.append((type(m).__name__, tuple(m.weight.shape), type(m.weight).__name__, m.in_features))
        y = m(lib.ones(2, 3))
        results.append((type(m).__name__, tuple(y.shape), float(y.detach().sum())))
        lazy = lib.nn.LazyLinear(4)
        lazy.load_state_dict(lib.nn.LazyLinear(4).state_dict())  # lazy into lazy: stays lazy
        results.append((type(lazy).__name__, lazy.has_uninitialized_params()))
        with pytest.raises(RuntimeError, match="uninitialized parameter"):
            lib.nn.Linear(3, 4).load_state_dict(lib.nn.LazyLinear(4).state_dict())
    half = len(results) // 2
    t_res, e_res = results[:half], results[half:]
    assert t_res[0] == e_res[0] and t_res[2] == e_res[2]
    assert t_res[1][:2] == e_res[1][:2]
    np.testing.assert_allclose(e_res[1][2], t_res[1][2], rtol=1e-5)


def test_optimizer_built_before_materialization():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    outs = []
    for lib in (torch, ember):
        m = lib.nn.LazyLinear(2)
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)  # torch allows it: the same objects materialize
        m(lib.from_numpy(x))
        with lib.no_grad():
            m.weight.copy_(lib.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3) / 10))
            m.bias.fill_(0.5)
        for _ in range(2):
            opt.zero_grad()
            m(lib.from_numpy(x)).pow(2).sum().backward()
            opt.step()
        outs.append((m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-5)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-5)


@pytest.mark.parametrize("name,args,shape,exc", [
    ("LazyConv2d", (4, 3, 1, 0, 1, 2), (1, 3, 5, 5), ValueError),  # in_channels not divisible by groups
    ("LazyConv2d", (4, 3), (5, 5), RuntimeError),
    ("LazyConvTranspose1d", (4, 3), (2, 2, 2, 5), RuntimeError),
])
def test_lazy_errors(name, args, shape, exc):
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = getattr(lib.nn, name)(*args)
        with pytest.raises(exc):
            m(lib.ones(*shape))


def _custom_lazy(lib):
    """A user's lazy module without cls_to_become: it keeps its class after materializing."""
    class LazyScale(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.parameter.UninitializedParameter()

        def initialize_parameters(self, x):
            if self.has_uninitialized_params():
                with lib.no_grad():
                    self.weight.materialize((x.shape[-1],))
                    self.weight.fill_(2.0)

        def forward(self, x):
            return x * self.weight
    return LazyScale()


def test_custom_lazy_module_without_cls_to_become_keeps_its_class():
    seen = []
    for lib in (torch, ember):
        m = _custom_lazy(lib)
        y = m(lib.ones(2, 3))
        seen.append((type(m).__name__, m.has_uninitialized_params(), y.tolist()))
    assert seen[1] == seen[0] and seen[0][0] == "LazyScale"


def _lazy_with_extra_state(lib):
    """A lazy module (no cls_to_become) with extra state and a non-persistent buffer."""
    class LazyTagged(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.parameter.UninitializedParameter()
            self.register_buffer("scratch", lib.zeros(1), persistent=False)
            self.loaded = []

        def get_extra_state(self):
            return {"tag": 5}

        def set_extra_state(self, state):
            self.loaded.append(state)

        def initialize_parameters(self, x):
            self.weight.materialize((x.shape[-1],))

        def forward(self, x):
            return x
    return LazyTagged()


def _load_outcome(m, sd, strict):
    try:
        result = m.load_state_dict(sd, strict=strict)
        return ("ok", sorted(result.missing_keys), sorted(result.unexpected_keys), m.loaded)
    except RuntimeError as e:
        return ("RuntimeError", str(e))


def test_lazy_state_dict_leaves_out_extra_state_as_torch_does():
    """LazyModuleMixin._save_to_state_dict saves parameters and persistent buffers only, before and after
    materializing: torch's override never calls get_extra_state, so a strict round trip reports the extra
    state missing, and a hand-added `_extra_state` entry still reaches set_extra_state on load."""
    seen = []
    for lib in (torch, ember):
        m = _lazy_with_extra_state(lib)
        out = [list(m.state_dict()), _load_outcome(m, m.state_dict(), True)]
        m(lib.ones(2, 3))
        sd = m.state_dict()
        out += [list(sd), _load_outcome(m, sd, False)]
        sd["_extra_state"] = {"tag": 7}
        out.append(_load_outcome(_lazy_with_extra_state(lib), sd, True))
        seen.append(out)
    assert seen[1] == seen[0]
    assert "_extra_state" not in seen[0][2]


def test_uninitialized_classes_in_the_nn_namespace():
    for name in ("UninitializedParameter", "UninitializedBuffer"):
        assert getattr(ember.nn, name) is getattr(ember.nn.parameter, name)
        assert getattr(torch.nn, name) is getattr(torch.nn.parameter, name)
