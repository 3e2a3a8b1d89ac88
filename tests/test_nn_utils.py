"""nn.utils against torch: gradient clipping, parameter vectors, weight/spectral norm in both
forms (hooks and parametrizations), and parametrize itself."""
import copy
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn

from ._stories import check_story, raised, warned

LIBS = (torch, ember)


def E(t):
    return ember.tensor(t.detach().numpy().copy(), requires_grad=t.requires_grad)


def N(t):
    return t.detach().numpy()


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(N(a), N(b), rtol=rtol, atol=atol)


def copy_state(tmod, emod):
    emod.load_state_dict(OrderedDict((k, E(v)) for k, v in tmod.state_dict().items()))


def raises_like(fn):
    out = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append(info)
    assert out[0].type is out[1].type, (out[0].value, out[1].value)
    assert str(out[0].value) == str(out[1].value).replace("ember.", "torch."), (out[0].value, out[1].value)


def _params_with_grads(lib, grads):
    ps = []
    for g in grads:
        p = lib.nn.Parameter(lib.zeros(g.shape, dtype=getattr(lib, str(g.dtype))))
        p.grad = lib.tensor(g.copy())
        ps.append(p)
    return ps


GRADS = [np.random.RandomState(0).randn(3, 4).astype(np.float32) * 3,
         np.random.RandomState(1).randn(5).astype(np.float32),
         np.random.RandomState(2).randn(2, 2, 2).astype(np.float32) * 0.1]


# ---- clipping ----------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, 0.5, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    tp, ep = _params_with_grads(torch, GRADS), _params_with_grads(ember, GRADS)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    en = enn.utils.clip_grad_norm_(ep, max_norm, norm_type=norm_type)
    assert isinstance(en, ember.Tensor) and en.shape == () and en.dtype is ember.float32
    close(tn, en)
    for t, e in zip(tp, ep):
        close(t.grad, e.grad)


def test_clip_grad_norm_forms():
    t = torch.nn.Parameter(torch.ones(3))
    t.grad = torch.full((3,), 4.0)
    e = enn.Parameter(ember.ones(3))
    e.grad = ember.full((3,), 4.0)
    close(torch.nn.utils.clip_grad_norm_(t, 1.0), enn.utils.clip_grad_norm_(e, 1.0))  # a single tensor
    close(t.grad, e.grad)
    assert enn.utils.clip_grad_norm_([enn.Parameter(ember.ones(2))], 1.0).item() == 0.0  # no grads
    with pytest.warns(UserWarning, match="empty generator"):
        enn.utils.clip_grad_norm_((p for p in []), 1.0)
    with pytest.warns(FutureWarning):
        enn.utils.clip_grad_norm([e], 1.0)
    m = enn.Linear(3, 2)
    m(ember.ones(4, 3)).sum().backward()
    total = enn.utils.clip_grad_norm_(m.parameters(), 0.1, foreach=True)
    assert total.item() > 0.1
    assert abs(enn.utils.get_total_norm([p.grad for p in m.parameters()]).item() - 0.1) < 1e-4


def test_clip_grad_norm_nonfinite():
    for lib in LIBS:
        ps = _params_with_grads(lib, [np.array([1.0, np.inf], dtype=np.float32)])
        with pytest.raises(RuntimeError, match="non-finite"):
            lib.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    raises_like(lambda lib: lib.nn.utils.clip_grad_norm_(_params_with_grads(lib, [np.array([np.nan], np.float32)]),
                                                          1.0, error_if_nonfinite=True))
    tp = _params_with_grads(torch, [np.array([1.0, np.inf], dtype=np.float32)])
    ep = _params_with_grads(ember, [np.array([1.0, np.inf], dtype=np.float32)])
    close(torch.nn.utils.clip_grad_norm_(tp, 1.0), enn.utils.clip_grad_norm_(ep, 1.0))
    np.testing.assert_array_equal(N(tp[0].grad), N(ep[0].grad))


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    tg = [torch.tensor(g) for g in GRADS]
    eg = [ember.tensor(g) for g in GRADS]
    for p in (2, 1, float("inf")):
        close(torch.nn.utils.get_total_norm(tg, p), enn.utils.get_total_norm(eg, p))
    tp, ep = _params_with_grads(torch, GRADS), _params_with_grads(ember, GRADS)
    torch.nn.utils.clip_grads_with_norm_(tp, 1.0, torch.tensor(7.0))
    enn.utils.clip_grads_with_norm_(ep, 1.0, ember.tensor(7.0))
    for t, e in zip(tp, ep):
        close(t.grad, e.grad)
    assert enn.utils.get_total_norm([]).item() == 0.0


@pytest.mark.parametrize("clip", [0.1, 2])
def test_clip_grad_value_matches_torch(clip):
    tp, ep = _params_with_grads(torch, GRADS), _params_with_grads(ember, GRADS)
    assert torch.nn.utils.clip_grad_value_(tp, clip) is None and enn.utils.clip_grad_value_(ep, clip) is None
    for t, e in zip(tp, ep):
        close(t.grad, e.grad)


# ---- parameters <-> vector --------------------------------------------------------------

def test_parameters_to_vector_and_back():
    tm, em = torch.nn.Linear(3, 2), enn.Linear(3, 2)
    copy_state(tm, em)
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    ev = enn.utils.parameters_to_vector(em.parameters())
    close(tv, ev)
    assert ev.requires_grad
    new = torch.arange(8, dtype=torch.float32)
    torch.nn.utils.vector_to_parameters(new, tm.parameters())
    enn.utils.vector_to_parameters(E(new), em.parameters())
    close(tm.weight, em.weight)
    close(tm.bias, em.bias)
    raises_like(lambda lib: lib.nn.utils.vector_to_parameters([1.0], lib.nn.Linear(1, 1).parameters()))


# ---- weight norm -------------------------------------------------------------------------

def _fwd_bwd(tm, em, x_shape, extra=()):
    x = torch.randn(x_shape, requires_grad=True)
    ex = E(x)
    ty, ey = tm(x), em(ex)
    close(ty, ey)
    g = torch.randn(ty.shape)
    ty.backward(g)
    ey.backward(E(g))
    close(x.grad, ex.grad, rtol=1e-4, atol=1e-5)
    for (name, tp), (ename, ep) in zip(tm.named_parameters(), em.named_parameters()):
        assert name == ename
        close(tp.grad, ep.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_hook_form_matches_torch(dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3), dim=dim)
        em = enn.utils.weight_norm(enn.Linear(4, 3), dim=dim)
    assert list(tm.state_dict()) == list(em.state_dict())
    assert [tuple(v.shape) for v in tm.state_dict().values()] == [tuple(v.shape) for v in em.state_dict().values()]
    copy_state(tm, em)
    _fwd_bwd(tm, em, (5, 4))
    torch.nn.utils.remove_weight_norm(tm)
    enn.utils.remove_weight_norm(em)
    assert list(tm.state_dict()) == list(em.state_dict()) == ["bias", "weight"]
    close(tm.weight, em.weight)
    assert isinstance(em.weight, enn.Parameter)
    raises_like(lambda lib: lib.nn.utils.remove_weight_norm(lib.nn.Linear(1, 1)))


def test_weight_norm_hook_form_warns_and_rejects_twice():
    with pytest.warns(FutureWarning, match="deprecated"):
        m = enn.utils.weight_norm(enn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enn.utils.weight_norm(m)



def test_weight_norm_of_a_1d_parameter_and_of_a_lazy_module():
    """g has the parameter's own shape for a 1-D parameter at dim=0 (both forms), and a lazy module's
    uninitialized weight gets torch's ValueError."""
    for form in ("hook", "parametrization"):
        shapes = []
        for lib in LIBS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                if form == "hook":
                    m = lib.nn.utils.weight_norm(lib.nn.Linear(4, 3), name="bias", dim=0)
                else:
                    m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(4, 3), name="bias", dim=0)
            shapes.append({k: tuple(v.shape) for k, v in m.state_dict().items()})
        assert shapes[0] == shapes[1], form
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        raises_like(lambda lib: lib.nn.utils.weight_norm(lib.nn.LazyLinear(3)))
        raises_like(lambda lib: lib.nn.utils.spectral_norm(lib.nn.LazyLinear(3)))
    raises_like(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.LazyLinear(3)))
    assert [lib.nn.parameter.UninitializedParameter().ndim for lib in LIBS] == [1, 1]

@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim):
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3), dim=dim)
    em = enn.utils.parametrizations.weight_norm(enn.Linear(4, 3), dim=dim)
    assert list(tm.state_dict()) == list(em.state_dict())
    assert [tuple(v.shape) for v in tm.state_dict().values()] == [tuple(v.shape) for v in em.state_dict().values()]
    assert repr(tm) == repr(em) and type(em).__name__ == "ParametrizedLinear"
    copy_state(tm, em)
    close(tm.weight, em.weight)
    _fwd_bwd(tm, em, (5, 4))


def test_weight_norm_parametrization_loads_hook_form_state():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    em = enn.utils.parametrizations.weight_norm(enn.Linear(4, 3))
    copy_state(old, em)
    close(old.weight_g, em.parametrizations.weight.original0)
    close(old.weight_v, em.parametrizations.weight.original1)


# ---- spectral norm -----------------------------------------------------------------------

def test_spectral_norm_hook_form_matches_torch():
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4))
    em = enn.utils.spectral_norm(enn.Linear(5, 4))
    assert list(tm.state_dict()) == list(em.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert tm.state_dict()._metadata[""]["spectral_norm"] == em.state_dict()._metadata[""]["spectral_norm"]
    copy_state(tm, em)
    for _ in range(2):  # training: the power iteration updates u and v in place, identically
        tm.zero_grad()
        em.zero_grad()
        _fwd_bwd(tm, em, (3, 5))
        close(tm.weight_u, em.weight_u)
        close(tm.weight_v, em.weight_v)
    tm.eval()
    em.eval()
    x = torch.randn(2, 5)
    close(tm(x), em(E(x)))
    torch.nn.utils.remove_spectral_norm(tm)
    enn.utils.remove_spectral_norm(em)
    assert list(tm.state_dict()) == list(em.state_dict())
    close(tm.weight, em.weight)
    em.load_state_dict(em.state_dict())  # no spectral-norm load hook is left behind
    raises_like(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(1, 1)))
    raises_like(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(1, 1), n_power_iterations=0))


def test_spectral_norm_parametrization_matches_torch():
    tm = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4))
    em = enn.utils.parametrizations.spectral_norm(enn.Linear(5, 4))
    assert list(tm.state_dict()) == list(em.state_dict())
    assert repr(tm) == repr(em)
    copy_state(tm, em)
    for _ in range(2):
        tm.zero_grad()
        em.zero_grad()
        _fwd_bwd(tm, em, (3, 5))
        close(tm.parametrizations.weight[0]._u, em.parametrizations.weight[0]._u)
    sigma = np.linalg.svd(N(em.parametrizations.weight.original), compute_uv=False)[0]
    em.eval()
    np.testing.assert_allclose(np.linalg.svd(N(em.weight), compute_uv=False)[0], 1.0, rtol=0.05)
    assert sigma > 0
    raises_like(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(1, 1), name="nope"))
    raises_like(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(1, 1), dim=3))


# ---- parametrize -------------------------------------------------------------------------

def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2
    return Symmetric, Scale


def test_register_parametrization_matches_torch():
    res = {}
    for lib in LIBS:
        Symmetric, Scale = _symmetric(lib)
        m = lib.nn.Linear(3, 3)
        with lib.no_grad():
            m.weight.copy_(lib.arange(9, dtype=lib.float32).reshape(3, 3))
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", Scale())
        P.register_parametrization(m, "weight", Symmetric())
        r = [repr(m), type(m).__name__, list(m.state_dict()), P.is_parametrized(m), P.is_parametrized(m, "bias"),
             P.type_before_parametrizations(m).__name__, N(m.weight).tolist(),
             N(m.parametrizations.weight.original).tolist()]
        m.weight = lib.eye(3) * 4  # assignment goes through right_inverse of the chain
        r.append(N(m.parametrizations.weight.original).tolist())
        with P.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        P.remove_parametrizations(m, "weight")
        r += [type(m).__name__, list(m.state_dict()), N(m.weight).tolist(), isinstance(m.weight, lib.nn.Parameter)]
        res[lib] = r
    assert res[torch] == res[ember]


def test_parametrization_gradients_match_torch():
    grads = []
    for lib in LIBS:
        Symmetric, _ = _symmetric(lib)
        m = lib.nn.Linear(3, 3)
        with lib.no_grad():
            m.weight.copy_(lib.arange(9, dtype=lib.float32).reshape(3, 3) / 10)
            m.bias.zero_()
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
        m(lib.ones(2, 3) / 3).pow(2).sum().backward()
        grads.append(N(m.parametrizations.weight.original.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_remove_parametrization_leave_unparametrized():
    res = []
    for lib in LIBS:
        _, Scale = _symmetric(lib)
        m = lib.nn.Linear(2, 2)
        with lib.no_grad():
            m.weight.fill_(3.0)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Scale())
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
        res.append(N(m.weight).tolist())
    assert res[0] == res[1] == [[1.5, 1.5], [1.5, 1.5]]


def test_parametrize_errors_match_torch():
    def bad_shape(lib):
        class Flat(lib.nn.Module):
            def forward(self, X):
                return X.reshape(-1)
        lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Flat())

    def bad_name(lib):
        lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "nope", lib.nn.Identity())

    def not_parametrized(lib):
        lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight")

    def no_right_inverse(lib):
        class Triple(lib.nn.Module):
            def forward(self, X):
                return X * 3
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Triple())
        m.weight = lib.ones(2, 2)
    for fn in (bad_shape, bad_name, not_parametrized, no_right_inverse):
        raises_like(fn)


def test_parametrized_module_deepcopy_and_pickle():
    m = enn.utils.parametrizations.weight_norm(enn.Linear(3, 2))
    c = copy.deepcopy(m)
    x = ember.ones(1, 3)
    close(m(x), c(x))
    assert c.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    import pickle
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(m)


def test_spectral_norm_hook_form_loads_version0_state_dict():
    """Old state dicts stored `weight` and no `weight_v`; v is solved for on load (as torch)."""
    import copy as _copy
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4))
    tm(torch.randn(2, 5))
    sd = tm.state_dict()
    sd["weight"] = tm.weight.detach().clone()
    del sd["weight_v"]
    sd._metadata[""]["spectral_norm"]["weight.version"] = 0
    t2 = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4))
    t2.load_state_dict(_copy.copy(sd))
    em = enn.utils.spectral_norm(enn.Linear(5, 4))
    esd = OrderedDict((k, E(v)) for k, v in sd.items())
    esd._metadata = _copy.deepcopy(sd._metadata)
    assert repr(em.load_state_dict(esd)) == "<All keys matched successfully>"
    t2.eval()
    em.eval()
    x = torch.randn(3, 5)
    close(t2(x), em(E(x)), rtol=1e-4, atol=1e-5)


# ---- the ember-only tests above, told again on torch (issue 19) -----------------------------------------------

def _story_weight_norm_twice(lib):
    cats, m = warned(lambda: lib.nn.utils.weight_norm(lib.nn.Linear(2, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = raised(lambda: lib.nn.utils.weight_norm(m))
    return [cats, again, list(m.state_dict()), [tuple(v.shape) for v in m.state_dict().values()]]


def _story_parametrized_copy(lib):
    lib.manual_seed(0)
    m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
    c = copy.deepcopy(m)
    x = lib.ones(1, 3)
    import pickle
    return [m(x), c(x), c.parametrizations.weight.original0 is not m.parametrizations.weight.original0,
            type(c).__name__, list(c.state_dict()), raised(lambda: pickle.dumps(m))]


@pytest.mark.parametrize("story", [_story_weight_norm_twice, _story_parametrized_copy],
                         ids=["weight_norm_hook_form_warns_and_rejects_twice",
                              "parametrized_module_deepcopy_and_pickle"])
def test_utils_stories_match_torch(story):
    """Warnings, raised types, state_dict keys and seeded outputs (within float32 rounding) are torch's."""
    check_story(story, atol=1e-6)
