"""ember.distributions against torch.distributions: moments, log_prob, entropy, cdf/icdf and KL
values in float64 (to 1e-6) with their gradients; rsample gradients with the same noise fed to
both libraries; sample statistics over 100,000 draws within 4 standard errors; constraints,
transforms, validation errors; and two small training loops (REINFORCE, a VAE)."""
import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as ED

from ._stories import check_story, raised

N = 100_000
TOL = dict(rtol=1e-6, atol=1e-8)


def lib_dist(lib):
    return TD if lib is torch else ED


def T(lib, x, grad=False):
    """A float64 tensor of lib from values."""
    return lib.tensor(np.asarray(x, dtype=np.float64), requires_grad=grad)


def to_np(x):
    return x.detach().numpy()


# ---- the table: a distribution per row, with float64 parameters and values to score -----------

rng0 = np.random.default_rng(0)
_SIMPLEX = rng0.dirichlet(np.ones(4), size=3)
_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
_L = np.linalg.cholesky(_COV)

# name: (builder(D, params) -> dist, {param: values}, values to score (or callable of nothing))
DISTS = {
    "Normal": (lambda D, p: D.Normal(p["loc"], p["scale"]), {"loc": [-1.0, 0.5, 2.0], "scale": [0.5, 1.0, 3.0]},
               [[-0.3, 0.2, 5.0], [1.0, -2.0, 0.0]]),
    "LogNormal": (lambda D, p: D.LogNormal(p["loc"], p["scale"]), {"loc": [-1.0, 0.5, 0.2], "scale": [0.5, 1.0, 0.7]},
                  [[0.3, 1.2, 5.0], [2.0, 0.1, 0.9]]),
    "Uniform": (lambda D, p: D.Uniform(p["low"], p["high"]), {"low": [-1.0, 0.5, 2.0], "high": [0.5, 1.0, 3.0]},
                [[-0.3, 0.7, 2.5], [0.0, 0.9, 2.1]]),
    "Exponential": (lambda D, p: D.Exponential(p["rate"]), {"rate": [0.5, 1.0, 3.0]},
                    [[0.3, 1.2, 5.0], [0.0, 2.0, 0.1]]),
    "Laplace": (lambda D, p: D.Laplace(p["loc"], p["scale"]), {"loc": [-1.0, 0.5, 2.0], "scale": [0.5, 1.0, 3.0]},
                [[-0.3, 0.2, 5.0], [1.0, -2.0, 0.0]]),
    "Cauchy": (lambda D, p: D.Cauchy(p["loc"], p["scale"]), {"loc": [-1.0, 0.5, 2.0], "scale": [0.5, 1.0, 3.0]},
               [[-0.3, 0.2, 5.0], [1.0, -2.0, 0.0]]),
    "Gamma": (lambda D, p: D.Gamma(p["concentration"], p["rate"]),
              {"concentration": [0.5, 2.0, 7.5], "rate": [1.0, 0.5, 3.0]}, [[0.3, 1.2, 5.0], [2.0, 0.1, 0.9]]),
    "Chi2": (lambda D, p: D.Chi2(p["df"]), {"df": [1.0, 3.0, 10.0]}, [[0.3, 1.2, 5.0], [2.0, 0.1, 9.0]]),
    "Beta": (lambda D, p: D.Beta(p["c1"], p["c0"]), {"c1": [0.5, 2.0, 5.0], "c0": [1.5, 2.0, 0.7]},
             [[0.3, 0.5, 0.9], [0.01, 0.7, 0.99]]),
    "Dirichlet": (lambda D, p: D.Dirichlet(p["concentration"]), {"concentration": [[0.5, 2.0, 1.0], [3.0, 1.2, 4.0]]},
                  [[[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]]),
    "Bernoulli-probs": (lambda D, p: D.Bernoulli(probs=p["probs"]), {"probs": [0.1, 0.5, 0.8]},
                        [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
    "Bernoulli-logits": (lambda D, p: D.Bernoulli(logits=p["logits"]), {"logits": [-2.0, 0.3, 4.0]},
                         [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
    "Binomial": (lambda D, p: D.Binomial(10, probs=p["probs"]), {"probs": [0.1, 0.5, 0.8]},
                 [[0.0, 4.0, 10.0], [3.0, 5.0, 7.0]]),
    "Binomial-logits": (lambda D, p: D.Binomial(6, logits=p["logits"]), {"logits": [-2.0, 0.3, 4.0]},
                        [[0.0, 4.0, 6.0], [3.0, 5.0, 1.0]]),
    "Poisson": (lambda D, p: D.Poisson(p["rate"]), {"rate": [0.5, 2.0, 7.5]}, [[0.0, 1.0, 5.0], [3.0, 2.0, 10.0]]),
    "Categorical-probs": (lambda D, p: D.Categorical(probs=p["probs"]), {"probs": _SIMPLEX},
                          [[0.0, 3.0, 1.0], [2.0, 2.0, 0.0]]),
    "Categorical-logits": (lambda D, p: D.Categorical(logits=p["logits"]),
                           {"logits": rng0.standard_normal((3, 4))}, [[0.0, 3.0, 1.0], [2.0, 2.0, 0.0]]),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(probs=p["probs"]), {"probs": _SIMPLEX},
                          [np.eye(4)[[0, 3, 1]], np.eye(4)[[2, 2, 0]]]),
    "MultivariateNormal-cov": (lambda D, p: D.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
                               {"loc": [[0.0, 1.0, -1.0], [0.5, 0.5, 0.5]], "cov": _COV},
                               [[[0.3, 1.2, -0.5], [1.0, 0.0, 2.0]]]),
    "MultivariateNormal-tril": (lambda D, p: D.MultivariateNormal(p["loc"], scale_tril=p["tril"]),
                                {"loc": [0.0, 1.0, -1.0], "tril": _L}, [[0.3, 1.2, -0.5], [1.0, 0.0, 2.0]]),
    "MultivariateNormal-prec": (lambda D, p: D.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
                                {"loc": [0.0, 1.0, -1.0], "prec": np.linalg.inv(_COV)},
                                [[0.3, 1.2, -0.5], [1.0, 0.0, 2.0]]),
    "Independent": (lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1),
                    {"loc": [[-1.0, 0.5], [2.0, 0.0]], "scale": [[0.5, 1.0], [3.0, 1.5]]},
                    [[[-0.3, 0.2], [5.0, 1.0]]]),
    "MixtureSameFamily": (lambda D, p: D.MixtureSameFamily(D.Categorical(probs=p["w"]),
                                                           D.Normal(p["loc"], p["scale"])),
                          {"w": [0.2, 0.5, 0.3], "loc": [-2.0, 0.0, 3.0], "scale": [0.5, 1.0, 2.0]},
                          [[-0.3], [2.0], [10.0]]),
    "TransformedDistribution": (lambda D, p: D.TransformedDistribution(
        D.Normal(p["loc"], p["scale"]), [D.AffineTransform(1.0, 2.0), D.ExpTransform()]),
        {"loc": [-1.0, 0.5], "scale": [0.5, 1.0]}, [[0.3, 1.2], [2.0, 7.0]]),
    "TransformedDistribution-sigmoid": (lambda D, p: D.TransformedDistribution(
        D.Normal(p["loc"], p["scale"]), D.SigmoidTransform()), {"loc": [-1.0, 0.5], "scale": [0.5, 1.0]},
        [[0.3, 0.9], [0.01, 0.5]]),
    "TransformedDistribution-tanh": (lambda D, p: D.TransformedDistribution(
        D.Normal(p["loc"], p["scale"]), D.TanhTransform()), {"loc": [-1.0, 0.5], "scale": [0.5, 1.0]},
        [[0.3, -0.9], [0.01, 0.5]]),
    "Geometric": (lambda D, p: D.Geometric(probs=p["probs"]), {"probs": [0.1, 0.5, 1.0]},
                  [[0.0, 4.0, 0.0], [3.0, 1.0, 0.0]]),
    "Geometric-logits": (lambda D, p: D.Geometric(logits=p["logits"]), {"logits": [-2.0, 0.3, 4.0]},
                         [[0.0, 4.0, 10.0], [3.0, 5.0, 1.0]]),
    "Multinomial": (lambda D, p: D.Multinomial(5, probs=p["probs"]), {"probs": _SIMPLEX},
                    [[[1.0, 2.0, 0.0, 2.0], [5.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 3.0]]]),
    "StudentT": (lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": [0.8, 1.5, 5.0], "loc": [-1.0, 0.5, 2.0], "scale": [0.5, 1.0, 3.0]},
                 [[-0.3, 0.2, 5.0], [1.0, -2.0, 0.0]]),
    "HalfNormal": (lambda D, p: D.HalfNormal(p["scale"]), {"scale": [0.5, 1.0, 3.0]},
                   [[0.3, 1.2, 5.0], [2.0, 0.1, 0.0]]),
    "RelaxedBernoulli": (lambda D, p: D.RelaxedBernoulli(p["t"], probs=p["probs"]),
                         {"t": 0.7, "probs": [0.1, 0.5, 0.8]}, [[0.3, 0.5, 0.9], [0.01, 0.7, 0.99]]),
    "RelaxedOneHotCategorical": (lambda D, p: D.RelaxedOneHotCategorical(p["t"], probs=p["probs"]),
                                 {"t": 0.6, "probs": _SIMPLEX}, [_SIMPLEX[::-1].copy()]),
}

NOT_DIFFERENTIABLE = {"Binomial": (), "Binomial-logits": ()}  # every parameter is differentiable otherwise


def build(lib, name, grad=True):
    builder, params, _ = DISTS[name]
    p = {k: T(lib, v, grad) for k, v in params.items()}
    return builder(lib_dist(lib), p), p


def _outcome(fn):
    """("value", array) or ("error", type) for one property or method."""
    try:
        r = fn()
    except (NotImplementedError, ValueError, RuntimeError) as e:
        return ("error", type(e))
    return ("value", r)


def _compare(name, what, t, e, tol=TOL):
    assert t[0] == e[0], f"{name}.{what}: torch {t} ember {e}"
    if t[0] == "value":
        tv, ev = to_np(t[1]), to_np(e[1])
        assert ev.shape == tv.shape, (name, what, ev.shape, tv.shape)
        np.testing.assert_allclose(ev, tv, err_msg=f"{name}.{what}", **tol)


PROPERTIES = ["mean", "variance", "stddev", "mode"]


@pytest.mark.parametrize("name", list(DISTS))
def test_moments_entropy_and_shapes(name):
    dt, _ = build(torch, name)
    de, _ = build(ember, name)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape)
    assert tuple(de.event_shape) == tuple(dt.event_shape)
    assert de.has_rsample == dt.has_rsample
    assert de.has_enumerate_support == dt.has_enumerate_support
    for prop in PROPERTIES:
        _compare(name, prop, _outcome(lambda: getattr(dt, prop)), _outcome(lambda: getattr(de, prop)))
    _compare(name, "entropy", _outcome(dt.entropy), _outcome(de.entropy))
    _compare(name, "perplexity", _outcome(dt.perplexity), _outcome(de.perplexity))
    assert repr(de) == repr(dt)


@pytest.mark.parametrize("name", list(DISTS))
def test_log_prob_values_and_gradients(name):
    values = np.asarray(DISTS[name][2], dtype=np.float64)
    res = {}
    for lib in (torch, ember):
        d, params = build(lib, name)
        lp = d.log_prob(T(lib, values))
        w = T(lib, np.random.default_rng(1).standard_normal(tuple(lp.shape)))
        leaves = [v for v in params.values() if v.requires_grad]
        grads = lib.autograd.grad((lp * w).sum(), leaves, allow_unused=True)
        res[lib] = (to_np(lp), [None if g is None else to_np(g) for g in grads])
    np.testing.assert_allclose(res[ember][0], res[torch][0], **TOL)
    for ge, gt in zip(res[ember][1], res[torch][1]):
        assert (ge is None) == (gt is None)
        if gt is not None:
            np.testing.assert_allclose(ge, gt, **TOL)


@pytest.mark.parametrize("name", list(DISTS))
def test_entropy_gradients(name):
    res = {}
    for lib in (torch, ember):
        d, params = build(lib, name)
        try:
            h = d.entropy()
        except NotImplementedError:
            res[lib] = None
            continue
        leaves = [v for v in params.values() if v.requires_grad]
        grads = lib.autograd.grad(h.sum(), leaves, allow_unused=True)
        res[lib] = [None if g is None else to_np(g) for g in grads]
    assert (res[ember] is None) == (res[torch] is None)
    if res[torch] is not None:
        for ge, gt in zip(res[ember], res[torch]):
            assert (ge is None) == (gt is None)
            if gt is not None:
                np.testing.assert_allclose(ge, gt, **TOL)


CDF_DISTS = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Cauchy", "Gamma", "Chi2", "HalfNormal",
             "MixtureSameFamily", "TransformedDistribution", "TransformedDistribution-sigmoid",
             "TransformedDistribution-tanh"]


@pytest.mark.parametrize("name", CDF_DISTS)
def test_cdf_and_icdf(name):
    values = np.asarray(DISTS[name][2], dtype=np.float64)
    probs = np.array([[0.05, 0.5, 0.93], [0.3, 0.71, 0.999]])[:, :values.shape[-1]]
    res = {}
    for lib in (torch, ember):
        d, params = build(lib, name)
        out = {"cdf": _outcome(lambda: d.cdf(T(lib, values))), "icdf": _outcome(lambda: d.icdf(T(lib, probs)))}
        if out["cdf"][0] == "value":
            xs = [v for k, v in params.items() if v.requires_grad]
            if name.startswith("Gamma") or name == "Chi2":
                xs = []  # torch has no derivative of igamma in its first argument
            value = T(lib, values, grad=True)
            c = d.cdf(value)
            out["cdf-grad"] = [to_np(g) for g in lib.autograd.grad(c.sum(), [value] + xs)]
        res[lib] = out
    for key in ("cdf", "icdf"):
        _compare(name, key, res[torch][key], res[ember][key])
    if "cdf-grad" in res[torch]:
        for ge, gt in zip(res[ember]["cdf-grad"], res[torch]["cdf-grad"]):
            np.testing.assert_allclose(ge, gt, **TOL)


def test_gamma_cdf_gradient_in_concentration():
    """torch cannot differentiate igamma in a; ember can: compare with finite differences of torch."""
    a = np.array([0.5, 2.0, 7.5])
    x = np.array([0.3, 1.2, 12.0])
    ae = ember.tensor(a, requires_grad=True)
    ember.distributions._special.gammainc(ae, ember.tensor(x)).sum().backward()
    h = 1e-6
    fd = (torch.special.gammainc(torch.tensor(a + h), torch.tensor(x)) -
          torch.special.gammainc(torch.tensor(a - h), torch.tensor(x))).numpy() / (2 * h)
    np.testing.assert_allclose(ae.grad.numpy(), fd, rtol=1e-6)


@pytest.mark.parametrize("name", ["Bernoulli-probs", "Binomial", "Categorical-probs", "OneHotCategorical"])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support(name, expand):
    dt, _ = build(torch, name)
    de, _ = build(ember, name)
    np.testing.assert_array_equal(to_np(de.enumerate_support(expand)), to_np(dt.enumerate_support(expand)))


@pytest.mark.parametrize("name", list(DISTS))
def test_expand_and_sample_shapes(name):
    dt, _ = build(torch, name)
    de, _ = build(ember, name)
    for sample_shape in [(), (5,), (2, 3)]:
        st = dt.sample(sample_shape)
        se = de.sample(sample_shape)
        assert tuple(se.shape) == tuple(st.shape)
        assert str(se.dtype) == str(st.dtype)
        assert not se.requires_grad
        if dt.has_rsample:
            re_ = de.rsample(sample_shape)
            assert tuple(re_.shape) == tuple(st.shape)
            assert re_.requires_grad
    new_batch = (4,) + tuple(dt.batch_shape)
    et = dt.expand(new_batch)
    ee = de.expand(new_batch)
    assert type(ee).__name__ == type(et).__name__
    assert tuple(ee.batch_shape) == tuple(et.batch_shape) and tuple(ee.event_shape) == tuple(et.event_shape)
    assert tuple(ee.sample((2,)).shape) == tuple(et.sample((2,)).shape)
    values = np.asarray(DISTS[name][2], dtype=np.float64)
    values = np.expand_dims(values, values.ndim - len(dt.batch_shape) - len(dt.event_shape))  # before the batch dims
    np.testing.assert_allclose(to_np(ee.log_prob(T(ember, values))), to_np(et.log_prob(T(torch, values))), **TOL)


# ---- rsample: the same noise in both libraries ---------------------------------------------------------

class _Noise:
    """Patches both libraries' noise sources to hand out the same pre-drawn arrays."""

    def __init__(self, monkeypatch, kind):
        self.mp = monkeypatch
        self.kind = kind
        self.rng = np.random.default_rng(42)
        self.store = {}

    def draw(self, shape):
        key = tuple(shape)
        if key not in self.store:
            if self.kind == "normal":
                self.store[key] = self.rng.standard_normal(key)
            elif self.kind == "uniform01":
                self.store[key] = self.rng.random(key)
            elif self.kind == "exponential":
                self.store[key] = self.rng.standard_exponential(key)
            elif self.kind == "cauchy":
                self.store[key] = self.rng.standard_cauchy(key)
        return self.store[key]


def _patch_noise(mp, name, noise):
    """Route each distribution's base noise through `noise` in torch and in ember."""
    if name in ("Normal", "HalfNormal", "LogNormal", "Independent", "TransformedDistribution", "MultivariateNormal-cov",
                "MultivariateNormal-tril", "MultivariateNormal-prec", "TransformedDistribution-sigmoid",
                "TransformedDistribution-tanh"):
        for mod in (TD.normal, TD.multivariate_normal):
            mp.setattr(mod, "_standard_normal",
                       lambda shape, dtype, device: torch.tensor(noise.draw(shape), dtype=dtype))
        for mod in (ED.normal, ED.multivariate_normal):
            mp.setattr(mod, "_standard_normal", lambda shape, dtype, device=None: ember.tensor(noise.draw(shape),
                                                                                                dtype=dtype))
    elif name in ("Uniform", "RelaxedBernoulli", "RelaxedOneHotCategorical"):
        mp.setattr(torch, "rand", lambda shape, dtype=None, device=None: torch.tensor(noise.draw(shape), dtype=dtype))
        mp.setattr(ember, "rand", lambda shape, dtype=None: ember.tensor(noise.draw(shape), dtype=dtype))
    elif name == "Laplace":
        def fill(lib):
            def uniform_(self, a, b):
                with lib.no_grad():
                    self.copy_(lib.tensor(a + (b - a) * noise.draw(tuple(self.shape)), dtype=self.dtype))
                return self
            return uniform_
        mp.setattr(torch.Tensor, "uniform_", fill(torch))
        mp.setattr(ember.Tensor, "uniform_", fill(ember))
    elif name in ("Exponential", "Cauchy"):
        method = "exponential_" if name == "Exponential" else "cauchy_"

        def fill(lib):
            def sampler(self, *args, **kwargs):
                with lib.no_grad():
                    self.copy_(lib.tensor(noise.draw(tuple(self.shape)), dtype=self.dtype))
                return self
            return sampler
        mp.setattr(torch.Tensor, method, fill(torch))
        mp.setattr(ember.Tensor, method, fill(ember))


RSAMPLE_NOISE = {"HalfNormal": "normal", "Normal": "normal", "LogNormal": "normal", "Independent": "normal",
                 "TransformedDistribution": "normal",
                 "TransformedDistribution-sigmoid": "normal", "TransformedDistribution-tanh": "normal",
                 "MultivariateNormal-cov": "normal", "MultivariateNormal-tril": "normal",
                 "MultivariateNormal-prec": "normal", "Uniform": "uniform01", "RelaxedBernoulli": "uniform01",
                 "RelaxedOneHotCategorical": "uniform01", "Laplace": "uniform01", "Exponential": "exponential",
                 "Cauchy": "cauchy"}


@pytest.mark.parametrize("name", list(RSAMPLE_NOISE))
def test_rsample_values_and_gradients_with_shared_noise(name, monkeypatch):
    noise = _Noise(monkeypatch, RSAMPLE_NOISE[name])
    _patch_noise(monkeypatch, name, noise)
    res = {}
    for lib in (torch, ember):
        d, params = build(lib, name)
        x = d.rsample((4,))
        w = T(lib, np.random.default_rng(3).standard_normal(tuple(x.shape)))
        leaves = [v for v in params.values() if v.requires_grad]
        grads = lib.autograd.grad((x * w).sum(), leaves)
        res[lib] = (to_np(x), [to_np(g) for g in grads])
    np.testing.assert_allclose(res[ember][0], res[torch][0], **TOL)
    for ge, gt in zip(res[ember][1], res[torch][1]):
        np.testing.assert_allclose(ge, gt, **TOL)


def test_gamma_rsample_gradient_is_the_implicit_one():
    """dx/dalpha of ember's Gamma draws: exact to float64 against finite differences of torch's
    gammainc, and within torch's own approximation (~1e-3) of torch._standard_gamma_grad."""
    ember.manual_seed(0)
    alpha = ember.tensor([0.3, 1.0, 4.0, 50.0, 900.0], dtype=ember.float64, requires_grad=True)
    rate = ember.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=ember.float64, requires_grad=True)
    x = ED.Gamma(alpha, rate).rsample((200,))
    ga, gr = ember.autograd.grad(x.sum(), [alpha, rate])
    xs = x.detach().numpy() * rate.detach().numpy()  # standard Gamma draws
    a = np.broadcast_to(alpha.detach().numpy(), xs.shape)
    h = 1e-5 * a
    pdf = np.exp((a - 1) * np.log(xs) - xs - torch.lgamma(torch.tensor(a)).numpy())
    dP = (torch.special.gammainc(torch.tensor(a + h), torch.tensor(xs)) -
          torch.special.gammainc(torch.tensor(a - h), torch.tensor(xs))).numpy() / (2 * h)
    expected = (-dP / pdf / rate.detach().numpy()).sum(0)
    np.testing.assert_allclose(ga.numpy(), expected, rtol=1e-6)
    torch_grad = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(xs)).numpy() / rate.detach().numpy()
    np.testing.assert_allclose(ga.numpy(), torch_grad.sum(0), rtol=2e-3)
    np.testing.assert_allclose(gr.numpy(), (-x.detach().numpy() / rate.detach().numpy()).sum(0), rtol=1e-12)


@pytest.mark.parametrize("name,param,moment", [
    ("Gamma", "concentration", "mean"), ("Gamma", "rate", "mean"), ("Beta", "c1", "mean"), ("Beta", "c0", "mean"),
    ("Dirichlet", "concentration", "mean"), ("Chi2", "df", "mean"), ("Gamma", "concentration", "second"),
    ("Beta", "c1", "second")])
def test_implicit_reparameterization_is_unbiased(name, param, moment):
    """Averaged over many draws, d/dtheta of E[f(x)] by rsample matches the analytic derivative of
    the moment (the Beta/Dirichlet estimator is not torch's, so this is the check that matters)."""
    ember.manual_seed(1)
    d, params = build(ember, name)
    x = d.rsample((N,))
    f = x if moment == "mean" else x.pow(2)
    est = ember.autograd.grad(f.mean(0).sum(), params[param])[0].numpy()
    dt, tparams = build(torch, name)
    m = dt.mean if moment == "mean" else dt.variance + dt.mean.pow(2)
    exact = torch.autograd.grad(m.sum(), tparams[param])[0].numpy()
    g_batches = []  # 20 independent estimates from N/20 draws each give the standard error
    for chunk in range(20):
        ember.manual_seed(100 + chunk)
        dd, pp = build(ember, name)
        xc = dd.rsample((N // 20,))
        fc = xc if moment == "mean" else xc.pow(2)
        g_batches.append(ember.autograd.grad(fc.mean(0).sum(), pp[param])[0].numpy())
    se_full = np.std(g_batches, axis=0, ddof=1) / math.sqrt(20)  # of a mean over all N draws
    assert np.all(np.abs(est - exact) <= 4 * se_full + 1e-12), (est, exact, se_full)


# ---- sample statistics over 100,000 draws --------------------------------------------------------------

def _check_mean_var(samples, mean, var, label):
    """Sample mean and variance within 4 standard errors of the analytic ones."""
    n = samples.shape[0]
    m = samples.mean(0)
    se_mean = np.sqrt(var / n)
    assert np.all(np.abs(m - mean) <= 4 * se_mean), (label, "mean", m, mean)
    sq = (samples - mean) ** 2
    v = sq.mean(0)
    se_var = sq.std(0) / np.sqrt(n)
    assert np.all(np.abs(v - var) <= 4 * se_var + 1e-12), (label, "variance", v, var)


MOMENT_DISTS = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Gamma", "Chi2", "Beta", "Dirichlet",
                "Bernoulli-probs", "Bernoulli-logits", "Binomial", "Binomial-logits", "Poisson", "OneHotCategorical",
                "MultivariateNormal-cov", "MultivariateNormal-prec", "Independent", "MixtureSameFamily",
                "TransformedDistribution-sigmoid", "Geometric-logits", "Multinomial", "HalfNormal"]


@pytest.mark.parametrize("name", MOMENT_DISTS)
def test_sample_moments(name):
    ember.manual_seed(7)
    d, _ = build(ember, name, grad=False)
    s = to_np(d.sample((N,)))
    if name == "TransformedDistribution-sigmoid":
        # no closed form: compare with torch's numerically integrated moments from a huge torch sample
        torch.manual_seed(0)
        dt, _ = build(torch, name, grad=False)
        ref = to_np(dt.sample((2_000_000,)))
        _check_mean_var(s, ref.mean(0), ref.var(0), name)
        return
    _check_mean_var(s, to_np(d.mean), to_np(d.variance), name)
    if name.startswith("MultivariateNormal"):
        cov = np.cov(s.reshape(N, -1, 3)[:, 0].T)
        assert np.abs(cov - _COV).max() < 4 * np.sqrt(2 * np.max(np.diag(_COV)) ** 2 / N)


@pytest.mark.parametrize("name", ["Cauchy", "Categorical-probs", "Categorical-logits", "RelaxedBernoulli",
                                  "TransformedDistribution-tanh", "StudentT"])
def test_sample_distribution_by_cdf(name):
    """Heavy tails or no moments: the empirical CDF at a few points within 4 standard errors."""
    ember.manual_seed(11)
    d, _ = build(ember, name, grad=False)
    s = to_np(d.sample((N,)))
    dt, _ = build(torch, name, grad=False)
    if name.startswith("Categorical"):
        probs = to_np(dt.probs)
        for k in range(probs.shape[-1]):
            freq = (s == k).mean(0)
            se = np.sqrt(probs[..., k] * (1 - probs[..., k]) / N)
            assert np.all(np.abs(freq - probs[..., k]) <= 4 * se)
        return
    if name in ("RelaxedBernoulli", "TransformedDistribution-tanh", "StudentT"):
        torch.manual_seed(0)
        ref = to_np(dt.sample((1_000_000,)))
        points = np.quantile(ref, [0.1, 0.3, 0.5, 0.7, 0.9], axis=0)
        for q, pt in zip([0.1, 0.3, 0.5, 0.7, 0.9], points):
            freq = (s <= pt).mean(0)
            assert np.all(np.abs(freq - q) <= 4 * np.sqrt(q * (1 - q) / N) + 2e-3), (name, q, freq)
        return
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        point = to_np(dt.icdf(torch.full(tuple(dt.batch_shape), q, dtype=torch.float64)))
        freq = (s <= point).mean(0)
        assert np.all(np.abs(freq - q) <= 4 * np.sqrt(q * (1 - q) / N)), (name, q, freq)


def test_sampling_is_reproducible_with_manual_seed():
    for name in ["Normal", "Gamma", "Categorical-probs", "Dirichlet", "Binomial", "Poisson", "Laplace"]:
        ember.manual_seed(3)
        a = to_np(build(ember, name, grad=False)[0].sample((10,)))
        ember.manual_seed(3)
        b = to_np(build(ember, name, grad=False)[0].sample((10,)))
        np.testing.assert_array_equal(a, b)


# ---- KL divergence -------------------------------------------------------------------------------------

KL_PAIRS = [
    ("Normal", "Normal"), ("Bernoulli-probs", "Bernoulli-logits"), ("Beta", "Beta"), ("Binomial", "Binomial"),
    ("Categorical-probs", "Categorical-logits"), ("Cauchy", "Cauchy"), ("Dirichlet", "Dirichlet"),
    ("Exponential", "Exponential"), ("Gamma", "Gamma"), ("Laplace", "Laplace"), ("Poisson", "Poisson"),
    ("Uniform", "Uniform"), ("OneHotCategorical", "OneHotCategorical"),
    ("MultivariateNormal-cov", "MultivariateNormal-tril"), ("MultivariateNormal-tril", "MultivariateNormal-prec"),
    ("Independent", "Independent"), ("LogNormal", "LogNormal"), ("Chi2", "Chi2"),
    ("Bernoulli-probs", "Poisson"), ("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"),
    ("Beta", "Uniform"), ("Exponential", "Gamma"), ("Exponential", "Normal"), ("Gamma", "Exponential"),
    ("Gamma", "Normal"), ("Laplace", "Normal"), ("Normal", "Laplace"), ("Uniform", "Beta"),
    ("Uniform", "Exponential"), ("Uniform", "Gamma"), ("Uniform", "Normal"), ("Exponential", "Uniform"),
    ("Gamma", "Uniform"), ("Laplace", "Beta"), ("Normal", "Gamma"), ("Poisson", "Binomial"),
    ("Normal", "Beta"), ("Laplace", "Exponential"), ("Geometric-logits", "Geometric"), ("HalfNormal", "HalfNormal"),
    ("StudentT", "StudentT"), ("Multinomial", "Multinomial"),
]

# second parameter sets, so that p and q differ
_ALT = {"Normal": {"loc": [0.0, -0.5, 1.0], "scale": [1.5, 0.7, 2.0]},
        "Beta": {"c1": [1.5, 0.8, 2.5], "c0": [0.5, 3.0, 1.0]},
        "Binomial": {"probs": [0.3, 0.6, 0.2]},
        "Cauchy": {"loc": [0.0, -0.5, 1.0], "scale": [1.5, 0.7, 2.0]},
        "Dirichlet": {"concentration": [[1.5, 0.5, 2.0], [1.0, 2.2, 0.4]]},
        "Exponential": {"rate": [1.5, 0.2, 1.0]},
        "Gamma": {"concentration": [1.5, 0.7, 3.0], "rate": [0.5, 2.0, 1.0]},
        "Laplace": {"loc": [0.0, -0.5, 1.0], "scale": [1.5, 0.7, 2.0]},
        "Poisson": {"rate": [1.5, 0.7, 3.0]},
        "Uniform": {"low": [-2.0, 0.0, 1.5], "high": [1.0, 3.0, 3.5]},
        "OneHotCategorical": {"probs": _SIMPLEX[::-1].copy()},
        "Independent": {"loc": [[0.0, 1.5], [1.0, -1.0]], "scale": [[1.5, 0.4], [2.0, 1.0]]},
        "LogNormal": {"loc": [0.0, -0.5, 1.0], "scale": [1.5, 0.7, 2.0]},
        "Chi2": {"df": [2.0, 5.0, 1.5]},
        "Geometric": {"probs": [0.3, 0.6, 0.2]},
        "HalfNormal": {"scale": [1.5, 0.7, 2.0]}}


def _kl_side(lib, name, alt):
    builder, params, _ = DISTS[name]
    params = dict(params)
    if alt and name in _ALT:
        params.update(_ALT[name])
    p = {k: T(lib, v, True) for k, v in params.items()}
    return builder(lib_dist(lib), p), p


@pytest.mark.parametrize("pq", KL_PAIRS, ids=lambda pq: f"{pq[0]}||{pq[1]}")
def test_kl_divergence_values_and_gradients(pq):
    res = {}
    for lib in (torch, ember):
        p, pp = _kl_side(lib, pq[0], False)
        q, qp = _kl_side(lib, pq[1], True)
        try:
            kl = lib_dist(lib).kl_divergence(p, q)
        except NotImplementedError:
            res[lib] = "not implemented"
            continue
        leaves = [v for v in list(pp.values()) + list(qp.values()) if v.requires_grad]
        finite = np.isfinite(to_np(kl))
        grads = None
        if finite.all():
            grads = lib.autograd.grad(kl.sum(), leaves, allow_unused=True)
            grads = [None if g is None else to_np(g) for g in grads]
        res[lib] = (to_np(kl), grads)
    assert type(res[ember]) is type(res[torch])
    if isinstance(res[torch], str):
        return
    np.testing.assert_allclose(res[ember][0], res[torch][0], **TOL)
    if res[torch][1] is not None:
        for ge, gt in zip(res[ember][1], res[torch][1]):
            if gt is None or ge is None:
                assert ge is None or not np.any(ge), "gradient where torch has none"
                continue
            np.testing.assert_allclose(ge, gt, **TOL)


def test_kl_infinite_and_errors():
    # q with no mass where p has some: inf, as torch
    for lib in (torch, ember):
        D = lib_dist(lib)
        assert np.isinf(to_np(D.kl_divergence(D.Uniform(T(lib, [0.0]), T(lib, [2.0])),
                                              D.Uniform(T(lib, [0.5]), T(lib, [3.0]))))).all()
        assert np.isinf(to_np(D.kl_divergence(D.Bernoulli(T(lib, [0.5])), D.Bernoulli(T(lib, [0.0]))))).all()
    for fn in (lambda D, lib: D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.5)),
               lambda D, lib: D.kl_divergence(D.Binomial(2, T(lib, [0.5])), D.Binomial(5, T(lib, [0.5]))),
               lambda D, lib: D.kl_divergence(D.Poisson(T(lib, [1.0])), D.Gamma(T(lib, [1.0]), T(lib, [1.0])))):
        with pytest.raises(NotImplementedError) as te:
            fn(TD, torch)
        with pytest.raises(NotImplementedError) as ee:
            fn(ED, ember)
        assert str(ee.value) == str(te.value)


def test_register_kl_dispatch():
    class MyNormal(ED.Normal):
        pass

    @ED.register_kl(MyNormal, ED.Normal)
    def _kl(p, q):
        return ember.zeros(())

    assert ED.kl_divergence(MyNormal(0.0, 1.0), ED.Normal(1.0, 1.0)).item() == 0.0
    assert ED.kl_divergence(ED.Normal(0.0, 1.0), MyNormal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(TypeError):
        ED.register_kl(3, ED.Normal)


def test_expfamily_kl_matches_closed_form():
    """The Bregman-divergence fallback (used by subclasses) agrees with the registered closed forms."""
    from ember.distributions.kl import _kl_expfamily_expfamily
    pairs = [(ED.Normal(ember.tensor([0.3, -1.0], dtype=ember.float64), ember.tensor([1.2, 0.5], dtype=ember.float64)),
              ED.Normal(ember.tensor([1.0, 0.0], dtype=ember.float64), ember.tensor([0.7, 2.0], dtype=ember.float64))),
             (ED.Gamma(ember.tensor([2.0], dtype=ember.float64), ember.tensor([1.5], dtype=ember.float64)),
              ED.Gamma(ember.tensor([0.5], dtype=ember.float64), ember.tensor([3.0], dtype=ember.float64))),
             (ED.Poisson(ember.tensor([2.0], dtype=ember.float64)),
              ED.Poisson(ember.tensor([0.5], dtype=ember.float64))),
             (ED.Dirichlet(ember.tensor([2.0, 1.0, 0.5], dtype=ember.float64)),
              ED.Dirichlet(ember.tensor([1.0, 1.0, 3.0], dtype=ember.float64)))]
    for p, q in pairs:
        np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(),
                                   ED.kl_divergence(p, q).detach().numpy(), rtol=1e-10)


# ---- constraints and transforms -------------------------------------------------------------------------

CONSTRAINTS = {
    "real": lambda C: C.real, "positive": lambda C: C.positive, "nonnegative": lambda C: C.nonnegative,
    "unit_interval": lambda C: C.unit_interval, "simplex": lambda C: C.simplex, "boolean": lambda C: C.boolean,
    "lower_cholesky": lambda C: C.lower_cholesky, "lower_triangular": lambda C: C.lower_triangular,
    "positive_definite": lambda C: C.positive_definite, "positive_semidefinite": lambda C: C.positive_semidefinite,
    "symmetric": lambda C: C.symmetric, "square": lambda C: C.square, "corr_cholesky": lambda C: C.corr_cholesky,
    "real_vector": lambda C: C.real_vector, "nonnegative_integer": lambda C: C.nonnegative_integer,
    "positive_integer": lambda C: C.positive_integer, "one_hot": lambda C: C.one_hot,
    "integer_interval": lambda C: C.integer_interval(0, 5), "interval": lambda C: C.interval(-1, 2),
    "half_open_interval": lambda C: C.half_open_interval(0.0, 1.0), "greater_than": lambda C: C.greater_than(2.0),
    "greater_than_eq": lambda C: C.greater_than_eq(2.0), "less_than": lambda C: C.less_than(-1.0),
    "independent": lambda C: C.independent(C.positive, 1), "multinomial": lambda C: C.multinomial(4),
}

_VALUES = {
    0: np.array([[-1.0, 0.0, 0.5, 1.0, 2.0, 3.0], [np.nan, 1.5, 4.0, -3.0, 1.0, 0.0]]),
    1: np.array([[0.2, 0.3, 0.5], [0.5, 0.6, -0.1], [0.0, 1.0, 0.0], [1.0, 2.0, 1.0]]),
    2: np.stack([_L, _COV, np.eye(3), -np.eye(3), np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0.0, 0.6, 0.8]]),
                 np.array([[1.0, 2.0, 0], [2.0, 1.0, 0], [0, 0, 1.0]])]),
}


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_constraints_match_torch(name):
    ct = CONSTRAINTS[name](TD.constraints)
    ce = CONSTRAINTS[name](ED.constraints)
    assert repr(ce) == repr(ct)
    assert ce.event_dim == ct.event_dim and ce.is_discrete == ct.is_discrete
    values = _VALUES[min(ct.event_dim, 2)]
    np.testing.assert_array_equal(ce.check(ember.tensor(values)).numpy(), ct.check(torch.tensor(values)).numpy())


def test_dependent_constraints():
    C = ED.constraints
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(ember.ones(1))
    d = C.dependent(is_discrete=True, event_dim=1)
    assert d.is_discrete and d.event_dim == 1
    assert C.is_dependent(ED.Uniform.support) and C.is_dependent(ED.Categorical.support)
    with pytest.raises(NotImplementedError):
        C.dependent.event_dim


TRANSFORMS = {
    "Exp": (lambda D, t: D.ExpTransform(), [[-1.0, 0.5], [2.0, 0.0]]),
    "Affine": (lambda D, t: D.AffineTransform(1.5, -2.0), [[-1.0, 0.5], [2.0, 0.0]]),
    "Affine-tensor": (lambda D, t: D.AffineTransform(t([0.5, 1.0]), t([2.0, -3.0])), [[-1.0, 0.5], [2.0, 0.0]]),
    "Affine-event": (lambda D, t: D.AffineTransform(t([0.5, 1.0]), t([2.0, 3.0]), event_dim=1),
                     [[-1.0, 0.5], [2.0, 0.0]]),
    "Sigmoid": (lambda D, t: D.SigmoidTransform(), [[-1.0, 0.5], [2.0, 0.0]]),
    "Tanh": (lambda D, t: D.TanhTransform(), [[-1.0, 0.5], [2.0, 0.0]]),
    "Softplus": (lambda D, t: D.SoftplusTransform(), [[-1.0, 0.5], [2.0, 0.0]]),
    "Power": (lambda D, t: D.PowerTransform(t(2.5)), [[1.0, 0.5], [2.0, 3.0]]),
    "Abs": (lambda D, t: D.AbsTransform(), [[-1.0, 0.5], [2.0, 0.0]]),
    "Compose": (lambda D, t: D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.ExpTransform(), D.PowerTransform(
        t(0.5))]), [[-1.0, 0.5], [2.0, 0.0]]),
    "Exp-inv": (lambda D, t: D.ExpTransform().inv, [[1.0, 0.5], [2.0, 3.0]]),
    "StickBreaking": (lambda D, t: D.StickBreakingTransform(), [[-1.0, 0.5, 0.2], [2.0, 0.0, -1.0]]),
    "Softmax": (lambda D, t: D.SoftmaxTransform(), [[-1.0, 0.5, 0.2], [2.0, 0.0, -1.0]]),
    "LowerCholesky": (lambda D, t: D.LowerCholeskyTransform(), [[[0.1, 0.5], [2.0, -0.3]]]),
    "Independent": (lambda D, t: D.IndependentTransform(D.ExpTransform(), 1), [[-1.0, 0.5], [2.0, 0.0]]),
    "Reshape": (lambda D, t: D.ReshapeTransform((2,), (2, 1)), [[-1.0, 0.5], [2.0, 0.0]]),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_torch(name):
    make, x = TRANSFORMS[name]
    res = {}
    for lib in (torch, ember):
        t = make(lib_dist(lib), lambda v: lib.tensor(v, dtype=lib.float64))
        xt = T(lib, x, grad=True)
        y = t(xt)
        out = {"y": to_np(y), "inv": to_np(t.inv(y.detach())), "repr": repr(t), "bijective": t.bijective,
               "shape": tuple(t.forward_shape(xt.shape)), "ishape": tuple(t.inverse_shape(y.shape)),
               "event": (t.domain.event_dim, t.codomain.event_dim)}
        try:
            ladj = t.log_abs_det_jacobian(xt, y)
            out["ladj"] = to_np(ladj)
            if ladj.requires_grad:
                out["ladj-grad"] = to_np(lib.autograd.grad(ladj.sum(), xt, retain_graph=True, allow_unused=True)[0])
        except NotImplementedError:
            out["ladj"] = "n/a"
        out["y-grad"] = to_np(lib.autograd.grad(y.sum(), xt, allow_unused=True)[0])
        try:
            out["sign"] = to_np(t.sign) if isinstance(t.sign, (torch.Tensor, ember.Tensor)) else t.sign
        except NotImplementedError:
            out["sign"] = "n/a"
        res[lib] = out
    for key in res[torch]:
        a, b = res[ember][key], res[torch][key]
        if isinstance(b, np.ndarray):
            np.testing.assert_allclose(a, b, err_msg=key, **TOL)
        else:
            assert a == b, key


def test_transform_cache_and_equality():
    t = ED.ExpTransform(cache_size=1)
    x = ember.tensor([0.5])
    y = t(x)
    assert t.inv(y) is x
    assert ED.ExpTransform() == ED.ExpTransform() and ED.ExpTransform() != ED.SigmoidTransform()
    assert t.inv.inv is t
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        ED.ExpTransform(cache_size=2)


@pytest.mark.parametrize("name", ["positive", "unit_interval", "simplex", "interval", "greater_than", "less_than",
                                  "real", "real_vector", "lower_cholesky", "independent"])
def test_biject_to_and_transform_to(name):
    ce = CONSTRAINTS[name](ED.constraints)
    ct = CONSTRAINTS[name](TD.constraints)
    x = np.random.default_rng(5).standard_normal((4, 3, 3) if ce.event_dim == 2 else (4, 3))
    for reg_e, reg_t in ((ED.transform_to, TD.transform_to), (ED.biject_to, TD.biject_to)):
        try:
            tt = reg_t(ct)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                reg_e(ce)
            continue
        te = reg_e(ce)
        ye = te(ember.tensor(x))
        assert bool(ce.check(ye).all())
        np.testing.assert_allclose(ye.numpy(), tt(torch.tensor(x)).numpy(), **TOL)


# ---- validation -----------------------------------------------------------------------------------------

VALIDATION = {
    "normal-scale": lambda D, lib: D.Normal(0.0, -1.0),
    "normal-scale-tensor": lambda D, lib: D.Normal(T(lib, [0.0, 1.0]), T(lib, [1.0, -2.0])),
    "normal-nan-loc": lambda D, lib: D.Normal(T(lib, [math.nan]), T(lib, [1.0])),
    "bernoulli-probs": lambda D, lib: D.Bernoulli(T(lib, [1.5])),
    "bernoulli-both": lambda D, lib: D.Bernoulli(probs=T(lib, [0.5]), logits=T(lib, [0.0])),
    "bernoulli-none": lambda D, lib: D.Bernoulli(),
    "bernoulli-support": lambda D, lib: D.Bernoulli(0.3).log_prob(T(lib, 0.5)),
    "categorical-simplex": lambda D, lib: D.Categorical(probs=T(lib, [-0.1, 1.1])),
    "categorical-0d": lambda D, lib: D.Categorical(probs=T(lib, 1.0)),
    "categorical-support": lambda D, lib: D.Categorical(probs=T(lib, [0.5, 0.5])).log_prob(T(lib, 2.0)),
    "uniform-order": lambda D, lib: D.Uniform(1.0, 0.0),
    "uniform-support": lambda D, lib: D.Uniform(0.0, 1.0).log_prob(T(lib, 2.0)),
    "gamma-rate": lambda D, lib: D.Gamma(T(lib, [1.0]), T(lib, [0.0])),
    "beta-c0": lambda D, lib: D.Beta(1.0, -1.0),
    "dirichlet": lambda D, lib: D.Dirichlet(T(lib, [1.0, -1.0])),
    "dirichlet-support": lambda D, lib: D.Dirichlet(T(lib, [1.0, 1.0])).log_prob(T(lib, [0.5, 0.6])),
    "poisson-rate": lambda D, lib: D.Poisson(T(lib, [-1.0])),
    "poisson-support": lambda D, lib: D.Poisson(T(lib, [1.0])).log_prob(T(lib, [1.5])),
    "binomial-count": lambda D, lib: D.Binomial(T(lib, [2.5]), T(lib, [0.5])),
    "geometric-zero": lambda D, lib: D.Geometric(T(lib, [0.5, 0.0])),
    "multinomial-count": lambda D, lib: D.Multinomial(2.5, T(lib, [0.5, 0.5])),
    "multinomial-support": lambda D, lib: D.Multinomial(3, T(lib, [0.5, 0.5])).log_prob(T(lib, [3.0, 1.0])),
    "exponential-support": lambda D, lib: D.Exponential(T(lib, [1.0])).log_prob(T(lib, [-1.0])),
    "shape-mismatch": lambda D, lib: D.Normal(T(lib, [0.0, 0.0, 0.0]), 1.0).log_prob(T(lib, [0.0, 1.0])),
    "event-mismatch": lambda D, lib: D.Dirichlet(T(lib, [1.0, 1.0])).log_prob(T(lib, [0.2, 0.3, 0.5])),
    "not-tensor": lambda D, lib: D.Normal(0.0, 1.0).log_prob(0.5),
    "mvn-loc-0d": lambda D, lib: D.MultivariateNormal(T(lib, 0.0), T(lib, [[1.0]])),
    "mvn-two-params": lambda D, lib: D.MultivariateNormal(T(lib, [0.0]), covariance_matrix=T(lib, [[1.0]]),
                                                          scale_tril=T(lib, [[1.0]])),
    "mvn-cov-1d": lambda D, lib: D.MultivariateNormal(T(lib, [0.0]), covariance_matrix=T(lib, [1.0])),
    "mvn-not-pd": lambda D, lib: D.MultivariateNormal(T(lib, [0.0, 0.0]), T(lib, [[1.0, 2.0], [2.0, 1.0]])),
    "independent-ndims": lambda D, lib: D.Independent(D.Normal(T(lib, [0.0]), 1.0), 2),
    "mixture-type": lambda D, lib: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(T(lib, [0.0]), 1.0)),
    "mixture-k": lambda D, lib: D.MixtureSameFamily(D.Categorical(T(lib, [0.5, 0.5])),
                                                    D.Normal(T(lib, [0.0, 1.0, 2.0]), 1.0)),
    "transformed-bad": lambda D, lib: D.TransformedDistribution(D.Normal(0.0, 1.0), "exp"),
    "set-default-bad": lambda D, lib: D.Distribution.set_default_validate_args(3),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_validation_errors_match_torch(case):
    fn = VALIDATION[case]
    with pytest.raises(Exception) as te:
        fn(TD, torch)
    with pytest.raises(Exception) as ee:
        fn(ED, ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_validate_args_switches():
    # per instance
    d = ED.Normal(0.0, -1.0, validate_args=False)
    assert math.isnan(d.log_prob(ember.tensor(0.0)).item())
    assert ED.Uniform(0.0, 1.0, validate_args=False).log_prob(ember.tensor(2.0)).item() == -math.inf
    # process-wide default
    ED.Distribution.set_default_validate_args(False)
    try:
        ED.Normal(0.0, -1.0)
        ED.Bernoulli(0.3).log_prob(ember.tensor(0.5))
    finally:
        ED.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ED.Normal(0.0, -1.0)


def test_distribution_base_api():
    d = ED.Normal(ember.zeros(2), ember.ones(2))
    with pytest.warns(FutureWarning):
        assert tuple(d.sample_n(3).shape) == (3, 2)
    with pytest.raises(NotImplementedError):
        ED.Bernoulli(0.3).rsample()
    with pytest.raises(NotImplementedError):
        ED.Poisson(ember.ones(1)).entropy()
    with pytest.raises(NotImplementedError):
        ED.Geometric(ember.tensor([0.5])).enumerate_support()
    with pytest.raises(NotImplementedError, match="does not implement mode"):
        ED.TransformedDistribution(ED.Normal(0.0, 1.0), ED.ExpTransform()).mode
    assert repr(ED.Normal.arg_constraints["scale"]) == "GreaterThan(lower_bound=0.0)"
    s = ED.Categorical(probs=ember.tensor([0.2, 0.8])).support
    assert repr(s) == repr(TD.Categorical(probs=torch.tensor([0.2, 0.8])).support)
    assert ED.Binomial(10, ember.tensor([0.5])).support.upper_bound.tolist() == [10.0]


def test_mixture_repr_and_mvn_lazy_parameters():
    loc = np.array([0.0, 1.0, -1.0])
    for kw in ("covariance_matrix", "scale_tril", "precision_matrix"):
        mat = {"covariance_matrix": _COV, "scale_tril": _L, "precision_matrix": np.linalg.inv(_COV)}[kw]
        dt = TD.MultivariateNormal(torch.tensor(loc), **{kw: torch.tensor(mat)})
        de = ED.MultivariateNormal(ember.tensor(loc), **{kw: ember.tensor(mat)})
        for attr in ("covariance_matrix", "scale_tril", "precision_matrix"):
            np.testing.assert_allclose(getattr(de, attr).numpy(), getattr(dt, attr).numpy(), rtol=1e-10, atol=1e-12)
        assert repr(de) == repr(dt)



def test_mixture_support_is_torchs_constraint():
    """MixtureSameFamily.support: a dependent property on the class, MixtureSameFamilyConstraint on an instance
    (a value must lie in every component's support; the event dims of Independent components are reduced)."""
    out = []
    for lib in (torch, ember):
        D = lib.distributions
        mix = D.Categorical(lib.ones(2))
        uni = D.MixtureSameFamily(mix, D.Uniform(lib.tensor([0.0, 1.0]), lib.tensor([2.0, 3.0])), validate_args=True)
        ind = D.MixtureSameFamily(mix, D.Independent(D.Normal(lib.zeros(2, 3), 1.0), 1))
        rec = [repr(D.MixtureSameFamily.support), repr(uni.support), repr(ind.support),
               uni.support.check(lib.tensor([0.5, 1.5, 2.5])).tolist(), tuple(ind.support.check(lib.zeros(4, 3)).shape),
               uni.support.event_dim, ind.support.event_dim, uni.support.is_discrete,
               raised(lambda: uni.log_prob(lib.tensor([2.5]))),
               raised(lambda: ind.support.check(lib.zeros(()))),
               raised(lambda: D.constraints.MixtureSameFamilyConstraint(3))]
        out.append(rec)
    assert out[0] == out[1]
    assert "MixtureSameFamilyConstraint" in ED.constraints.__all__


def test_constraint_argument_errors_match_torch():
    """Bad arguments to independent/cat/stack and dims out of range in their checks: torch's AssertionErrors."""
    cases = [lambda C, lib: C.independent(3, 1), lambda C, lib: C.independent(C.real, -1),
             lambda C, lib: C.independent(C.real, 1.5), lambda C, lib: C.cat([C.real, C.positive], 0, [1]),
             lambda C, lib: C.stack([C.real, 3]), lambda C, lib: C.cat([C.real, "x"]),
             lambda C, lib: C.stack([C.real, C.real], 1).check(lib.zeros(2)),
             lambda C, lib: C.cat([C.real], 2).check(lib.zeros(2)),
             lambda C, lib: C.stack([C.real, C.positive], -1).check(lib.tensor([1.0, -1.0])).tolist()]
    for case in cases:
        got = []
        for lib in (torch, ember):
            try:
                got.append(case(lib.distributions.constraints, lib))
            except Exception as e:  # noqa: BLE001 - the error is the observation
                got.append((type(e).__name__, str(e)))
        assert got[0] == got[1]


def test_sigmoid_and_stick_breaking_clamp_as_torch():
    """SigmoidTransform and StickBreakingTransform keep sigmoid's output in [tiny, 1 - eps] (float64 shown: the
    inverse of sigmoid(-40) is -40 again, and far-out inputs give tiny rather than eps)."""
    got = []
    for lib in (torch, ember):
        T = lib.distributions.transforms
        x = lib.tensor([-800.0, -100.0, -40.0, 0.0, 40.0, 100.0], dtype=lib.float64)
        sig = T.SigmoidTransform()
        stick = T.StickBreakingTransform()(lib.tensor([[-800.0, 50.0, 3.0]], dtype=lib.float64))
        got.append((sig(x).tolist(), sig.inv(sig(x)).tolist(), stick.tolist(),
                    T.SigmoidTransform()(lib.tensor([-100.0])).tolist()))
    assert got[0] == got[1]


def test_broadcast_all_refuses_like_torch():
    got = []
    for lib in (torch, ember):
        try:
            lib.distributions.utils.broadcast_all("a", 1.0)
        except Exception as e:  # noqa: BLE001 - the error is the observation
            got.append((type(e).__name__, str(e)))
    assert len(got) == 2 and got[0] == got[1]


def test_reshape_transform_shapes_are_sizes():
    for lib in (torch, ember):
        r = lib.distributions.transforms.ReshapeTransform((2, 3), (6,))
        assert type(r.forward_shape((4, 2, 3))) is lib.Size and tuple(r.forward_shape((4, 2, 3))) == (4, 6)
        assert type(r.inverse_shape((4, 6))) is lib.Size and tuple(r.inverse_shape((4, 6))) == (4, 2, 3)

# ---- training loops --------------------------------------------------------------------------------------

def test_reinforce_policy_gradient_learns_a_contextual_bandit():
    """A linear softmax policy picks one of 4 arms from a context; the best arm is argmax of the
    context's first 4 features. REINFORCE with a running baseline must raise the reward."""
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    policy = ember.nn.Linear(6, 4)
    opt = ember.optim.Adam(policy.parameters(), lr=0.05)
    baseline = 0.0
    rewards = []
    for step in range(150):
        ctx = ember.tensor(rng.standard_normal((64, 6)), dtype=ember.float32)
        dist = ED.Categorical(logits=policy(ctx))
        action = dist.sample()
        reward = (action == ctx[:, :4].argmax(1)).float()
        loss = -(dist.log_prob(action) * (reward - baseline)).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        baseline = 0.9 * baseline + 0.1 * reward.mean().item()
        rewards.append(reward.mean().item())
    assert np.mean(rewards[:10]) < 0.4  # about chance (1/4) at the start
    assert np.mean(rewards[-20:]) > 0.75


def test_vae_with_reparameterized_normal_trains():
    """A small VAE on 2-cluster data: the ELBO loss (reconstruction + KL to the prior, through
    Normal.rsample and kl_divergence) decreases substantially."""
    ember.manual_seed(0)
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((2, 8)) * 3
    data = ember.tensor((centers[rng.integers(0, 2, 512)] + 0.3 * rng.standard_normal((512, 8))).astype(np.float32))
    enc = ember.nn.Sequential(ember.nn.Linear(8, 32), ember.nn.Tanh(), ember.nn.Linear(32, 4))
    dec = ember.nn.Sequential(ember.nn.Linear(2, 32), ember.nn.Tanh(), ember.nn.Linear(32, 8))
    opt = ember.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.01)
    prior = ED.Normal(ember.zeros(2), ember.ones(2))
    losses = []
    for step in range(150):
        batch = data[(step * 64) % 512:(step * 64) % 512 + 64]
        h = enc(batch)
        q = ED.Normal(h[:, :2], ember.nn.functional.softplus(h[:, 2:]) + 1e-3)
        z = q.rsample()
        recon = ED.Normal(dec(z), 1.0).log_prob(batch).sum(-1)
        kl = ED.kl_divergence(q, prior).sum(-1)
        loss = (kl - recon).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with ember.no_grad():
        recon_mse = (dec(enc(data)[:, :2]) - data).pow(2).mean().item()
    floor = 8 * 0.5 * math.log(2 * math.pi)  # the unit-variance decoder's constant
    assert np.mean(losses[-10:]) - floor < 0.3 * (np.mean(losses[:10]) - floor)
    assert recon_mse < 0.5  # the data's variance per coordinate is about 9


# ---- the ember-only distribution tests above, told again on torch (issue 19) ----------------------------------

def _story_register_kl(lib):
    D = lib_dist(lib)

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return lib.zeros(())
    return [D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)), D.kl_divergence(D.Normal(0.0, 1.0),
                                                                                     MyNormal(1.0, 1.0)),
            raised(lambda: D.register_kl(3, D.Normal)), raised(lambda: D.register_kl(D.Normal, "Normal")),
            callable(D.register_kl(int, D.Normal))]  # any class passes torch's check


def _story_expfamily_kl(lib):
    D = lib_dist(lib)
    kl = __import__(D.__name__ + ".kl", fromlist=["kl"])

    def t(v):
        return lib.tensor(v, dtype=lib.float64)
    pairs = [(D.Normal(t([0.3, -1.0]), t([1.2, 0.5])), D.Normal(t([1.0, 0.0]), t([0.7, 2.0]))),
             (D.Gamma(t([2.0]), t([1.5])), D.Gamma(t([0.5]), t([3.0]))), (D.Poisson(t([2.0])), D.Poisson(t([0.5]))),
             (D.Dirichlet(t([2.0, 1.0, 0.5])), D.Dirichlet(t([1.0, 1.0, 3.0])))]
    return [[kl._kl_expfamily_expfamily(p, q), D.kl_divergence(p, q)] for p, q in pairs]


def _story_dependent(lib):
    C = lib_dist(lib).constraints
    d = C.dependent(is_discrete=True, event_dim=1)
    return [C.is_dependent(C.dependent), C.is_dependent(C.real), raised(lambda: C.dependent.check(lib.ones(1))),
            d.is_discrete, d.event_dim, C.is_dependent(lib_dist(lib).Uniform.support),
            C.is_dependent(lib_dist(lib).Categorical.support), raised(lambda: C.dependent.event_dim), repr(d)]


def _story_transform_cache(lib):
    D = lib_dist(lib)
    t = D.ExpTransform(cache_size=1)
    x = lib.tensor([0.5])
    y = t(x)
    return [t.inv(y) is x, D.ExpTransform() == D.ExpTransform(), D.ExpTransform() != D.SigmoidTransform(),
            t.inv.inv is t, raised(lambda: D.ExpTransform(cache_size=2)), y, t(x) is y]


def _story_validate_args(lib):
    D = lib_dist(lib)
    out = [D.Normal(0.0, -1.0, validate_args=False).log_prob(lib.tensor(0.0)),
           D.Uniform(0.0, 1.0, validate_args=False).log_prob(lib.tensor(2.0))]
    D.Distribution.set_default_validate_args(False)
    try:
        out += [D.Normal(0.0, -1.0).scale, D.Bernoulli(0.3).log_prob(lib.tensor(0.5))]
    finally:
        D.Distribution.set_default_validate_args(True)
    return out + [raised(lambda: D.Normal(0.0, -1.0))]


def _story_reinforce(lib):
    D = lib_dist(lib)
    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    policy = lib.nn.Linear(6, 4)
    opt = lib.optim.Adam(policy.parameters(), lr=0.05)
    baseline, out = 0.0, []
    for _ in range(8):
        ctx = lib.tensor(rng.standard_normal((64, 6)), dtype=lib.float32)
        dist = D.Categorical(logits=policy(ctx))
        action = dist.sample()
        reward = (action == ctx[:, :4].argmax(1)).float()
        loss = -(dist.log_prob(action) * (reward - baseline)).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        baseline = 0.9 * baseline + 0.1 * reward.mean().item()
        out += [action, loss]
    return out


def _story_vae(lib):
    D = lib_dist(lib)
    lib.manual_seed(0)
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((2, 8)) * 3
    data = lib.tensor((centers[rng.integers(0, 2, 128)] + 0.3 * rng.standard_normal((128, 8))).astype(np.float32))
    enc = lib.nn.Sequential(lib.nn.Linear(8, 32), lib.nn.Tanh(), lib.nn.Linear(32, 4))
    dec = lib.nn.Sequential(lib.nn.Linear(2, 32), lib.nn.Tanh(), lib.nn.Linear(32, 8))
    opt = lib.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.01)
    prior = D.Normal(lib.zeros(2), lib.ones(2))
    losses = []
    for step in range(6):
        batch = data[(step * 32) % 128:(step * 32) % 128 + 32]
        h = enc(batch)
        q = D.Normal(h[:, :2], lib.nn.functional.softplus(h[:, 2:]) + 1e-3)
        z = q.rsample()
        loss = (D.kl_divergence(q, prior).sum(-1) - D.Normal(dec(z), 1.0).log_prob(batch).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses + list(enc.parameters())


DIST_STORIES = {"register_kl_dispatch": _story_register_kl, "expfamily_kl_matches_closed_form": _story_expfamily_kl,
                "dependent_constraints": _story_dependent, "transform_cache_and_equality": _story_transform_cache,
                "validate_args_switches": _story_validate_args,
                "reinforce_policy_gradient_learns_a_contextual_bandit": _story_reinforce,
                "vae_with_reparameterized_normal_trains": _story_vae}


@pytest.mark.parametrize("name", sorted(DIST_STORIES))
def test_distribution_stories_match_torch(name):
    """KL dispatch and fallback, constraints, transform caching, validation switches and two short seeded
    training runs (sampled actions bit for bit; float32 losses and weights within 1e-4) are torch's."""
    check_story(DIST_STORIES[name], atol=1e-4)
