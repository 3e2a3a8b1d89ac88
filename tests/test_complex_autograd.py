"""Complex autograd end to end, against torch: rotary position embeddings written with
view_as_complex/polar, a complex linear layer trained a few steps, in-place writes through
real/imag views of complex tensors, gradcheck on complex functions (the oracle where torch
itself refuses complex gradients), and the guarantee that real-valued gradients are computed
exactly as before (torch's conjugate convention costs real tensors nothing).

The per-op rows (every differentiable op in complex64/complex128, with second derivatives for
a subset) are in tests/ops/cases_complex.py.
"""
import numpy as np
import pytest
import torch

import ember
from ember._ops.complex import cj

from ._stories import check_story, raised


def _numpy(t):
    t = t.detach()
    if isinstance(t, torch.Tensor):
        return t.resolve_conj().resolve_neg().numpy()
    return t.numpy()


def _close(a, b, dtype, what=""):
    tol = 2e-5 if dtype in ("float32", "complex64") else 1e-10
    np.testing.assert_allclose(_numpy(b), _numpy(a), rtol=tol, atol=tol, err_msg=what)


# ---- rotary position embedding -----------------------------------------------------------------

def _rope(lib, x, freqs):
    """LLaMA's apply_rotary_emb: feature pairs as complex numbers times polar(1, pos * freq)."""
    seq = x.shape[-2]
    angles = lib.outer(lib.arange(seq, dtype=freqs.dtype), freqs)
    rot = lib.polar(lib.ones_like(angles), angles)
    xc = lib.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return lib.view_as_real(xc * rot).flatten(-2)


def _attention_with_rope(lib, dtype, create_graph=False):
    rng = np.random.default_rng(7)
    q0, k0, v0 = (rng.standard_normal((2, 3, 5, 8)) for _ in range(3))
    f0 = 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)
    d = getattr(lib, dtype)
    q, k, v = (lib.tensor(a, dtype=d, requires_grad=True) for a in (q0, k0, v0))
    freqs = lib.tensor(f0, dtype=d, requires_grad=True)
    rq, rk = _rope(lib, q, freqs), _rope(lib, k, freqs)
    scores = (rq @ rk.transpose(-1, -2) / 8 ** 0.5).softmax(-1)
    out = scores @ v
    loss = (out * out).sum() + out.sum()
    grads = lib.autograd.grad(loss, (q, k, v, freqs), create_graph=create_graph)
    return (q, k, v, freqs), loss, grads


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rope_attention_gradients(dtype):
    _, t_loss, t_grads = _attention_with_rope(torch, dtype)
    _, e_loss, e_grads = _attention_with_rope(ember, dtype)
    _close(t_loss, e_loss, dtype, "loss")
    for name, a, b in zip("q k v freqs".split(), t_grads, e_grads):
        _close(a, b, dtype, f"grad of {name}")


def test_rope_second_order():
    """d/dfreqs of |d loss / dq|^2: double backward through polar, view_as_complex and complex mul."""
    results = []
    for lib in (torch, ember):
        inputs, _, grads = _attention_with_rope(lib, "float64", create_graph=True)
        penalty = (grads[0] * grads[0]).sum()
        results.append(lib.autograd.grad(penalty, (inputs[3], inputs[1])))
    for a, b in zip(*results):
        _close(a, b, "float64", "second-order grad")


def test_rope_matches_real_rotation():
    """The complex form's gradient equals the rotate-half real form's (the rotation is orthogonal)."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((1, 2, 6, 8))
    g0 = rng.standard_normal((1, 2, 6, 8))
    f = ember.tensor(1.0 / 10000 ** (np.arange(0, 8, 2) / 8))
    x = ember.tensor(x0, requires_grad=True)
    _rope(ember, x, f).backward(ember.tensor(g0))
    angles = np.outer(np.arange(6), f.numpy())
    gp = g0.reshape(1, 2, 6, 4, 2)
    # the transpose of a rotation by +angle is a rotation by -angle
    expected = np.stack([gp[..., 0] * np.cos(angles) + gp[..., 1] * np.sin(angles),
                         -gp[..., 0] * np.sin(angles) + gp[..., 1] * np.cos(angles)], -1).reshape(x0.shape)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)


# ---- a complex linear layer, trained --------------------------------------------------------------

def _train(lib, dtype, opt_name, steps=5):
    rng = np.random.default_rng(11)
    w0 = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))) * 0.3
    b0 = (rng.standard_normal(3) + 1j * rng.standard_normal(3)) * 0.1
    x0 = rng.standard_normal((16, 4)) + 1j * rng.standard_normal((16, 4))
    target = x0 @ (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).T
    d = getattr(lib, dtype)
    model = lib.nn.Sequential(lib.nn.Linear(4, 3, dtype=d))
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(w0))
        model[0].bias.copy_(lib.tensor(b0))
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if opt_name == "sgd" else \
        lib.optim.Adam(model.parameters(), lr=0.05)
    x = lib.tensor(x0, dtype=d)
    y = lib.tensor(target, dtype=d)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (model(x) - y).abs().pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model[0].weight, model[0].bias


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_linear_layer_training(dtype, opt):
    t_losses, tw, tb = _train(torch, dtype, opt)
    e_losses, ew, eb = _train(ember, dtype, opt)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4 if dtype == "complex64" else 1e-10)
    _close(tw, ew, dtype, "weight")
    _close(tb, eb, dtype, "bias")
    assert e_losses[-1] < e_losses[0]


def test_complex_weight_gradients_are_conjugated():
    """The brief's example: grad of x * y with respect to x is g * conj(y)."""
    x = ember.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    y = ember.tensor([2 - 1j, 1 + 1j], requires_grad=True)
    g = ember.tensor([0.5 + 1j, -1 + 0.5j])
    gx, gy = ember.autograd.grad(x * y, (x, y), g)
    np.testing.assert_allclose(gx.numpy(), g.numpy() * np.conj(y.detach().numpy()))
    np.testing.assert_allclose(gy.numpy(), g.numpy() * np.conj(x.detach().numpy()))


def test_real_leaf_in_complex_graph_gets_real_gradient():
    results = []
    for lib in (torch, ember):
        r = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        z = lib.tensor([1 + 1j, 2 - 1j, -1 + 0.5j], dtype=lib.complex128)
        loss = ((r * z).exp() * (1 - 2j)).real.sum() + (r * 1j).abs().sum()
        loss.backward()
        results.append(r.grad)
    assert results[1].dtype == ember.float64
    _close(results[0], results[1], "float64")


def test_dot_and_vdot():
    results = []
    for lib in (torch, ember):
        a = lib.tensor([1 + 2j, -1j, 0.5], requires_grad=True)
        b = lib.tensor([2 - 1j, 1 + 1j, -2j], requires_grad=True)
        out = lib.dot(a, b) * (1 + 1j) + lib.vdot(a, b) * (2 - 1j)
        results.append(lib.autograd.grad(out, (a, b), lib.tensor(0.5 - 1.5j)))
    for a, b in zip(*results):
        _close(a, b, "complex64")


# ---- in-place writes through real/imag views of complex tensors ------------------------------------

def _write_real_part(t, x, y, r):
    z = x * 1
    z.real.mul_(y.real)
    return (z,)


def _set_imag(t, x, y, r):
    z = x * 1
    z.imag = y.real * 2
    return (z,)


def _view_as_real_window(t, x, y, r):
    z = x * 1
    t.view_as_real(z)[..., 0].mul_(y.imag)
    return (z,)


def _complex_view_of_real(t, x, y, r):
    a = r * 1
    t.view_as_complex(a).mul_(y)
    return (a,)


def _stale_real_view(t, x, y, r):
    z = x * 1
    re = z.real
    im = z.imag
    im.mul_(y.real)
    return re.exp() + im, z


def _stale_complex_view(t, x, y, r):
    a = r * 1
    c = t.view_as_complex(a)
    a.mul_(2)
    return (c * y,)


def _strided_window_of_transpose(t, x, y, r):
    z = (x * 1).t()
    z.imag[1:, ::2].add_(y.real.t()[1:, ::2])
    return (z.abs(),)


@pytest.mark.parametrize("fn", [_write_real_part, _set_imag, _view_as_real_window, _complex_view_of_real,
                                _stale_real_view, _stale_complex_view, _strided_window_of_transpose],
                         ids=lambda f: f.__name__.strip("_"))
def test_inplace_through_complex_views(fn):
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    ya = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    ra = rng.standard_normal((3, 4, 2))
    results = []
    for lib in (torch, ember):
        x, y, r = (lib.tensor(a, requires_grad=True) for a in (xa, ya, ra))
        outs = fn(lib, x, y, r)
        g = np.random.default_rng(9)
        gos = []
        for o in outs:
            v = g.standard_normal(tuple(o.shape))
            if o.is_complex():
                v = v + 1j * g.standard_normal(tuple(o.shape))
            gos.append(lib.tensor(v).to(o.dtype))
        grads = lib.autograd.grad(outs, (x, y, r), gos, allow_unused=True, create_graph=True)
        grads = [lib.zeros_like(i) if gr is None else gr for gr, i in zip(grads, (x, y, r))]
        live = [gr for gr in grads if gr.requires_grad]
        second = lib.autograd.grad(sum((gr * gr.conj()).real.sum() for gr in live), (x, y, r), allow_unused=True) \
            if live else (None, None, None)
        results.append((outs, grads, second))
    for a, b in zip(results[0][0], results[1][0]):
        _close(a, b, "float64", "output")
    for a, b in zip(results[0][1], results[1][1]):
        _close(a, b, "float64", "gradient")
    for a, b in zip(results[0][2], results[1][2]):
        if a is None or b is None:
            assert (a is None or not _numpy(a).any()) and (b is None or not _numpy(b).any())
        else:
            _close(a, b, "float64", "second-order gradient")


# ---- gradcheck: finite differences as the oracle -------------------------------------------------

_F = ember.nn.functional


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * y).exp() / (y.sin() + 2),
    lambda x, y: x.abs() * y.angle() + x.sgn() * y.conj(),
    lambda x, y: (x @ y.mT).tanh().sigmoid().sqrt(),
    lambda x, y: ember.view_as_real(x.log() * y.rsqrt()).sum(-1),
    lambda x, y: x.prod(1) * y.cumprod(0).sum(),
    lambda x, y: ember.linalg.solve(x[:, :3] + 4 * ember.eye(3), y[:, :2]),
    lambda x, y: _F.silu(x) + ember.nan_to_num(y),  # torch refuses complex autograd for these two
    lambda x, y: _F.mse_loss(x, y) + _F.cosine_similarity(x, y).sum(),  # (and these)
    lambda x, y: x.scatter_reduce(0, ember.tensor([[0, 1, 1, 0], [2, 2, 0, 1], [1, 0, 2, 2]]), y, "prod"),  # (and)
    lambda x, y: ember.sparse.mm(x.to_sparse(), y.mT) + ember.sparse.addmm(x[:, :3], x.to_sparse(), y.mT, beta=1j),
], ids=["holomorphic", "nonholomorphic", "matmul-chain", "view-as-real", "prod-cumprod", "solve", "silu-nan-to-num",
        "losses", "scatter-reduce-prod", "sparse-mm"])
def test_gradcheck_complex(fn):
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)), requires_grad=True)
    y = ember.tensor(rng.uniform(0.5, 2, (3, 4)) + 1j * rng.uniform(0.5, 2, (3, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x, y))
    assert ember.autograd.gradcheck(fn, (x, y), fast_mode=True)


def test_gradgradcheck_complex():
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal(4) + 1j * rng.standard_normal(4), requires_grad=True)
    y = ember.tensor(rng.standard_normal(4) + 0.5, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x, y: (x * y).exp() * x.conj() + x.abs() ** 3 * y, (x, y))


def test_gradcheck_catches_a_missing_conjugate():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x  # should be 2 * g * x.conj()

    x = ember.tensor([1 + 2j, -0.5 + 1j], dtype=ember.complex128, requires_grad=True)
    assert not ember.autograd.gradcheck(Square.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):  # GradcheckError, a RuntimeError
        ember.autograd.gradcheck(Square.apply, (x,))


def test_inplace_abs_of_complex_raises():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
            lib.tensor([1 + 1j]).abs_()


# ---- real tensors: results unchanged, no extra work -----------------------------------------------

def test_conj_of_real_is_free():
    x = ember.randn(3, requires_grad=True)
    assert cj(x) is x
    assert x.conj() is x
    assert cj(2.5) == 2.5 and cj(3) == 3
    assert cj(1 + 2j) == 1 - 2j


def _real_reference(name, x, y, g):
    """The gradients ember computed for real tensors before complex support, in NumPy, same order
    of operations (so the comparison below is bit for bit)."""
    if name == "mul":
        return g * y, g * x
    if name == "div":
        return g / y, (-g * x) / (y * y)
    if name == "exp":
        return (g * np.exp(x),)
    if name == "log":
        return (g / x,)
    if name == "reciprocal":
        out = np.reciprocal(x)
        return ((-g * out) * out,)
    if name == "tanh":
        out = np.tanh(x)
        return (g * (1 - out * out),)
    if name == "sin":
        return (g * np.cos(x),)
    if name == "sqrt":
        return (g / (2 * np.sqrt(x)),)
    if name == "prod":
        out = np.prod(x, axis=1, keepdims=True)
        return ((g[:, None] * out) / x,)
    if name == "pow":
        return (g * (2.5 * x ** np.asarray(1.5, x.dtype)),)
    raise KeyError(name)


_REAL_OPS = {
    "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "exp": lambda x, y: x.exp(), "log": lambda x, y: x.log(),
    "reciprocal": lambda x, y: x.reciprocal(), "tanh": lambda x, y: x.tanh(), "sin": lambda x, y: x.sin(),
    "sqrt": lambda x, y: x.sqrt(), "prod": lambda x, y: x.prod(1), "pow": lambda x, y: x.pow(2.5),
}


@pytest.mark.parametrize("name", list(_REAL_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_gradients_bit_identical(name, dtype):
    rng = np.random.default_rng(1)
    xa = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    ya = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    x = ember.tensor(xa, requires_grad=True)
    y = ember.tensor(ya, requires_grad=True)
    out = _REAL_OPS[name](x, y)
    ga = rng.standard_normal(tuple(out.shape)).astype(dtype)
    grads = ember.autograd.grad(out, (x, y), ember.tensor(ga), allow_unused=True)
    for got, want in zip(grads, _real_reference(name, xa, ya, ga)):
        assert got.dtype == getattr(ember, dtype)
        assert got.numpy().tobytes() == want.astype(dtype).tobytes(), name


# ---- the real fast path against torch (issue 19) -----------------------------------------------------------
@pytest.mark.parametrize("name", list(_REAL_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_gradients_match_torch(name, dtype):
    """The real-input gradients of test_real_gradients_bit_identical (ember's formulas against NumPy) are also
    torch's: the same call through torch.autograd.grad with the same upstream gradient."""
    rng = np.random.default_rng(1)
    xa = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    ya = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    results = []
    for lib in (ember, torch):
        x = lib.tensor(xa, requires_grad=True)
        y = lib.tensor(ya, requires_grad=True)
        out = _REAL_OPS[name](x, y)
        ga = np.random.default_rng(2).standard_normal(tuple(out.shape)).astype(dtype)
        grads = lib.autograd.grad(out, (x, y), lib.tensor(ga), allow_unused=True)
        results.append([None if g is None else (str(g.dtype).split(".")[-1], g.numpy()) for g in grads])
    for e, t in zip(*results):
        assert (e is None) == (t is None), name
        if e is not None:
            assert e[0] == t[0] == dtype
            np.testing.assert_allclose(e[1], t[1], rtol=2e-6 if dtype == "float32" else 1e-13, err_msg=name)


# ---- the ember-only complex tests above, told again on torch (issue 19) ---------------------------------------

def _story_rope(lib):
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((1, 2, 6, 8)), requires_grad=True)
    y = _rope(lib, x, lib.tensor(1.0 / 10000 ** (np.arange(0, 8, 2) / 8)))
    y.backward(lib.tensor(rng.standard_normal((1, 2, 6, 8))))
    return [y, x.grad]


def _story_conjugated(lib):
    x = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    y = lib.tensor([2 - 1j, 1 + 1j], requires_grad=True)
    return list(lib.autograd.grad(x * y, (x, y), lib.tensor([0.5 + 1j, -1 + 0.5j])))


def _story_gradgrad(lib):
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.standard_normal(4) + 1j * rng.standard_normal(4), requires_grad=True)
    y = lib.tensor(rng.standard_normal(4) + 0.5, requires_grad=True)

    def f(x, y):
        return (x * y).exp() * x.conj() + x.abs() ** 3 * y
    out = f(x, y)
    g1 = lib.autograd.grad(out, (x, y), lib.ones_like(out), create_graph=True)
    g2 = lib.autograd.grad(g1[0].abs().sum() + g1[1].sum(), (x, y))
    return [lib.autograd.gradgradcheck(f, (x, y)), *g1, *g2]


def _story_missing_conjugate(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x  # should be 2 * g * x.conj()

    x = lib.tensor([1 + 2j, -0.5 + 1j], dtype=lib.complex128, requires_grad=True)
    try:
        lib.autograd.gradcheck(Square.apply, (x,))
        err = None
    except RuntimeError as e:
        err = [type(e).__name__, isinstance(e, RuntimeError), "Jacobian mismatch" in str(e)]
    return [lib.autograd.gradcheck(Square.apply, (x,), raise_exception=False), err]


def _story_conj_of_real(lib):
    x = lib.randn(3, requires_grad=True)
    z = lib.tensor([1 + 2j])
    # (z.conj().is_conj() is not compared: ember has no lazy conjugate bit, a documented difference)
    return [x.conj() is x, lib.conj(x) is x, x.conj_physical() is x, x.is_conj(), z.conj() is z,
            z.conj().resolve_conj(),
            raised(lambda: x.resolve_conj() is x)]


COMPLEX_STORIES = {"rope_matches_real_rotation": _story_rope, "complex_weight_gradients_are_conjugated":
                   _story_conjugated, "gradgradcheck_complex": _story_gradgrad,
                   "gradcheck_catches_a_missing_conjugate": _story_missing_conjugate,
                   "conj_of_real_is_free": _story_conj_of_real}


@pytest.mark.parametrize("name", sorted(COMPLEX_STORIES))
def test_complex_stories_match_torch(name):
    """Values, gradients (float64, within 1e-12), gradcheck verdicts and raised types are torch's."""
    check_story(COMPLEX_STORIES[name], atol=1e-12)
