"""ember.masked against torch.masked: torch's own OpInfo samples for masked.* (op_db) at float32, float64,
int64, complex128 and bool (where the OpInfo lists them) and float64/complex128 gradients, then hand-picked
cases the samples do not reach: fully masked-out slices (identity / NaN conventions), broadcast masks,
non-bool masks, dtype=, unbiased= and correction=, integer promotion, and the errors. op_db is imported once for the module (seconds)."""
import math

import numpy as np
import pytest
import torch

import ember

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

OPS = [o for o in op_db if o.name.startswith("masked.")]
DTYPES = (torch.float32, torch.float64, torch.int64, torch.complex128, torch.bool)
SAMPLE_CAP = 45  # masked.norm has 450 samples per dtype (time); the hand cases below cover every ord


def _to_ember(v):
    """A sample's arguments in ember's terms: tensors through NumPy (keeping requires_grad), dtypes by name."""
    if isinstance(v, torch.Tensor):
        t = ember.from_numpy(v.detach().numpy().copy())
        return t.requires_grad_() if v.requires_grad else t
    if isinstance(v, torch.dtype):
        return getattr(ember, str(v).split(".")[-1])
    if isinstance(v, (list, tuple)):
        return type(v)(_to_ember(e) for e in v)
    if isinstance(v, dict):
        return {k: _to_ember(e) for k, e in v.items()}
    return v


def _compare(t, e, where, single=False):
    assert isinstance(e, ember.Tensor), f"{where}: ember gave {type(e).__name__}"
    assert str(e.dtype) == str(t.dtype), f"{where}: dtype {e.dtype} vs {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), f"{where}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
    tol = 2e-5 if single or t.dtype == torch.float32 else 1e-10
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=tol, rtol=tol, err_msg=where)


def _cases():
    return [pytest.param(op, dtype, id=f"{op.name}-{str(dtype).split('.')[-1]}")
            for op in OPS for dtype in DTYPES if dtype in op.supported_dtypes("cpu")]


@pytest.mark.parametrize("op,dtype", _cases())
def test_opinfo_samples(op, dtype):
    """Every masked.* OpInfo sample (up to SAMPLE_CAP) on both libraries; float64/complex128 input gradients."""
    grad = op.supports_autograd and dtype in (torch.float64, torch.complex128)
    efn = getattr(ember.masked, op.name.split(".")[1])
    rng = np.random.default_rng(0)
    for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=grad)):
        if i == SAMPLE_CAP:
            break
        where = f"{op.name} sample {i}: {sample}"
        args = (sample.input,) + tuple(sample.args)
        e_args = _to_ember(args)
        e_kwargs = _to_ember(sample.kwargs)
        try:
            t_out = op.op(*args, **sample.kwargs)
        except Exception as te:
            with pytest.raises(type(te)):
                efn(*e_args, **e_kwargs)
            continue
        e_out = efn(*e_args, **e_kwargs)
        _compare(t_out, e_out, where, single=dtype is torch.float32)
        if not (grad and t_out.requires_grad):
            continue
        g = rng.standard_normal(tuple(t_out.shape))
        if t_out.is_complex():
            g = np.asarray(g + 1j * rng.standard_normal(tuple(t_out.shape)))
        (tg,) = torch.autograd.grad(t_out, sample.input, torch.from_numpy(g), allow_unused=True)
        (eg,) = ember.autograd.grad(e_out, e_args[0], ember.from_numpy(g), allow_unused=True)
        if tg is None:
            assert eg is None or not np.any(eg.numpy()), where
            continue
        # masked-out positions of an all-masked slice may get NaN from both; compare with equal_nan
        _compare(tg, eg, f"{where}: gradient")


def test_every_masked_function_present():
    """ember.masked has every function torch.masked exports except the prototype MaskedTensor API."""
    prototype = {"MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor"}
    missing = [n for n in torch.masked.__all__ if n not in prototype and not hasattr(ember.masked, n)]
    assert not missing
    assert {o.name.split(".")[1] for o in OPS} <= set(ember.masked.__all__)


# ---- hand-picked cases -------------------------------------------------------------------------------

X = np.random.default_rng(1).standard_normal((3, 4, 5))
# row 0 of dim 1 (x[:, 0, :]) fully masked out along dim 2; a mask of shape (4, 5) broadcast over dim 0
MASK = np.random.default_rng(2).random((4, 5)) > 0.4
MASK[0] = False
MASK[1] = True

REDUCTIONS = [
    ("sum", {}), ("prod", {}), ("amax", {}), ("amin", {}), ("mean", {}), ("logsumexp", {}),
    ("norm", {"ord": 2.0}), ("norm", {"ord": 1}), ("norm", {"ord": math.inf}), ("norm", {"ord": -math.inf}),
    ("norm", {"ord": 0}), ("var", {}), ("std", {}), ("var", {"unbiased": False}), ("std", {"correction": 2}),
    ("var", {"correction": 0.5}),
]


@pytest.mark.parametrize("name,kwargs", REDUCTIONS, ids=[f"{n}-{k}" for n, k in REDUCTIONS])
@pytest.mark.parametrize("dim,keepdim", [(2, False), ((0, 2), True), (None, False), (-1, True)])
def test_reduction_all_masked_and_broadcast(name, kwargs, dim, keepdim):
    """A (4, 5) mask broadcast over a (3, 4, 5) input, with fully masked-out slices: values and gradients."""
    tx = torch.tensor(X, requires_grad=True)
    ex = ember.tensor(X, requires_grad=True)
    t_out = getattr(torch.masked, name)(tx, dim=dim, keepdim=keepdim, mask=torch.tensor(MASK), **kwargs)
    e_out = getattr(ember.masked, name)(ex, dim=dim, keepdim=keepdim, mask=ember.tensor(MASK), **kwargs)
    _compare(t_out, e_out, name)
    g = np.random.default_rng(3).standard_normal(tuple(t_out.shape))
    (tg,) = torch.autograd.grad(t_out, tx, torch.tensor(g), allow_unused=True)
    (eg,) = ember.autograd.grad(e_out, ex, ember.tensor(g), allow_unused=True)
    if tg is None:  # ord=0 counts nonzeros: torch's graph does not reach the input
        assert eg is None or not np.any(eg.numpy())
        return
    _compare(tg, eg, f"{name}: gradient")


NORMALIZATIONS = [("softmax", {}), ("log_softmax", {}), ("softmin", {}), ("cumsum", {}), ("cumprod", {}),
                  ("normalize", {"ord": 2.0}), ("normalize", {"ord": 1.0, "eps": 1e-3}),
                  ("softmax", {"dtype": torch.float32})]


@pytest.mark.parametrize("name,kwargs", NORMALIZATIONS, ids=[f"{n}-{k}" for n, k in NORMALIZATIONS])
@pytest.mark.parametrize("dim", [2, 1, -3])
def test_normalization_all_masked_and_broadcast(name, kwargs, dim):
    """Softmax-like ops and running sums with a broadcast mask and all-masked slices (NaN rows as torch)."""
    tx = torch.tensor(X, requires_grad=True)
    ex = ember.tensor(X, requires_grad=True)
    e_kwargs = _to_ember(kwargs)
    t_out = getattr(torch.masked, name)(tx, dim=dim, mask=torch.tensor(MASK), **kwargs)
    e_out = getattr(ember.masked, name)(ex, dim=dim, mask=ember.tensor(MASK), **e_kwargs)
    _compare(t_out, e_out, name)
    g = np.random.default_rng(3).standard_normal(tuple(t_out.shape))
    (tg,) = torch.autograd.grad(t_out, tx, torch.tensor(g, dtype=t_out.dtype))
    (eg,) = ember.autograd.grad(e_out, ex, ember.tensor(g, dtype=e_out.dtype))
    _compare(tg, eg, f"{name}: gradient", single=t_out.dtype == torch.float32)  # computed in float32


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod",
                                  "var", "std", "mean", "logsumexp", "median"])
def test_integer_dtypes_and_identities(name, dtype):
    """Integer and bool inputs: int64 promotion of sum/prod, iinfo identities of amax/amin/argmax, the
    float32 result of var/std, argmax's cast to input dtype, and torch's errors where it has them."""
    values = np.random.default_rng(4).integers(0, 5, (4, 6)).astype(dtype)
    mask = np.random.default_rng(5).random((4, 6)) > 0.5
    mask[2] = False
    kwargs = {"dim": 1}
    args = (torch.from_numpy(values),)
    try:
        t_out = getattr(torch.masked, name)(*args, mask=torch.from_numpy(mask), **kwargs)
    except Exception as te:
        with pytest.raises(type(te)):
            getattr(ember.masked, name)(ember.from_numpy(values), mask=ember.from_numpy(mask), **kwargs)
        return
    e_out = getattr(ember.masked, name)(ember.from_numpy(values), mask=ember.from_numpy(mask), **kwargs)
    _compare(t_out, e_out, f"{name} {dtype}")


@pytest.mark.parametrize("mask_dtype", ["int64", "float32"])
def test_non_bool_and_none_masks(mask_dtype):
    """A non-bool mask (same shape, or broadcast) is converted to bool; mask=None is the plain op."""
    m = (np.arange(20).reshape(4, 5) % 3).astype(mask_dtype)
    for mask in (m, m[1]):
        t_out = torch.masked.sum(torch.tensor(X), dim=2, mask=torch.from_numpy(mask))
        e_out = ember.masked.sum(ember.tensor(X), dim=2, mask=ember.from_numpy(mask))
        _compare(t_out, e_out, f"sum mask {mask.shape}")
    for name in ("sum", "mean", "amax", "var", "norm", "logsumexp", "softmax", "cumprod", "median"):
        kw = {"dim": 1}
        t_out = getattr(torch.masked, name)(torch.tensor(X), **kw)
        e_out = getattr(ember.masked, name)(ember.tensor(X), **kw)
        _compare(t_out, e_out, f"{name} mask=None")


def test_logaddexp_masks():
    """logaddexp with separate input and other masks (masked-out operands are -inf)."""
    a, b = X[0], X[1]
    ma, mb = MASK, ~MASK
    t_out = torch.masked.logaddexp(torch.tensor(a), torch.tensor(b), input_mask=torch.tensor(ma),
                                   other_mask=torch.tensor(mb), dtype=torch.float32)
    e_out = ember.masked.logaddexp(ember.tensor(a), ember.tensor(b), input_mask=ember.tensor(ma),
                                   other_mask=ember.tensor(mb), dtype=ember.float32)
    _compare(t_out, e_out, "logaddexp")


@pytest.mark.parametrize("call", [
    lambda m, x, mk: m.sum(x, dim=2, mask=mk(np.ones((2, 3, 4, 5), bool))),  # mask of higher rank
    lambda m, x, mk: m.sum(x, dim=2, mask=mk(np.ones((3, 5), bool))),  # not broadcastable
    lambda m, x, mk: m.sum(x, dim=(1, 1)),  # repeated dim
    lambda m, x, mk: m.amax(x, dim=3),  # dim out of range
    lambda m, x, mk: m.mean(x.long(), dim=1),  # integer mean without dtype
    lambda m, x, mk: m.var(x, dim=1, unbiased=True, correction=1),
    lambda m, x, mk: m.amax(x.bool(), dim=1, mask=mk(MASK)),  # no identity for bool
    lambda m, x, mk: m.norm(x.long(), -math.inf, dim=1, mask=mk(MASK)),
], ids=["rank", "broadcast", "repeated", "range", "int-mean", "unbiased+correction", "bool-amax", "int-norm"])
def test_errors(call):
    """torch and ember raise the same exception type."""
    with pytest.raises(Exception) as te:
        call(torch.masked, torch.tensor(X), torch.from_numpy)
    with pytest.raises(te.type):
        call(ember.masked, ember.tensor(X), ember.from_numpy)
