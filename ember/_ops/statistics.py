"""Statistical reductions with non-trivial gradients: var/std (and var_mean/std_mean),
logsumexp, vector norms (torch.norm, dist).

Backward formulas are ember ops, so second derivatives work; where torch defines a
subgradient (std or norm at 0) the formula masks exactly as torch's does.
"""
import builtins
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._argcheck import wrong_type
from ._registry import Op, install, make_inplace, namespace, register
from .complex import cj
from .reduction import check_tensor, finish, keep, mean, numel_of, numpy_names, reduce_dims

_bool = builtins.bool

# ---- var / std ---------------------------------------------------------------------------

class Var(Op):
    """Two-pass variance (mean first, then squared deviations), like torch and NumPy."""
    _name = "VarBackward0"

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, take_sqrt):
        n = numel_of(x.shape, dims)
        ctx.args = (x.shape, dims, keepdim, n - correction, take_sqrt)
        with np.errstate(invalid="ignore", divide="ignore"):
            centered = x - np.sum(x, axis=dims, keepdims=True) / n if n else x
            sq = np.abs(centered) ** 2 if x.dtype.kind == "c" else centered * centered
            out = np.sum(sq, axis=dims, keepdims=keepdim) / builtins.max(n - correction, 0)
            if take_sqrt:
                out = np.sqrt(out)
            out = np.asarray(out, dtype=sq.real.dtype)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape, dims, keepdim, dof, take_sqrt = ctx.args
        if take_sqrt:
            # d std = d var / (2 std); torch defines it as 0 where std == 0
            grad = (grad / (out * 2)).masked_fill(out == 0, 0)
        g = keep(grad, shape, dims, keepdim)
        scale = 2.0 / dof if dof else math.inf  # torch: inf * 0 = nan when nothing is left
        return g * scale * (x - x.mean(dims, keepdim=True))


def _var_args(name, input, dim, unbiased, keepdim, correction):
    check_tensor(input, name)
    if isinstance(dim, _bool):  # legacy var(input, unbiased)
        dim, unbiased = None, dim
    if input._dtype.category < D.FLOAT:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: Cannot pass both correction and unbiased arguments")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = reduce_dims(dim, input._data.ndim)
    n = numel_of(input._data.shape, dims)
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return dims, correction


@register()
@numpy_names
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    dims, c = _var_args("var", input, dim, unbiased, keepdim, correction)
    r = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=False)
    return finish(r, out, "var")


@register()
@numpy_names
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    dims, c = _var_args("std", input, dim, unbiased, keepdim, correction)
    r = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=True)
    if r._grad_fn is not None:
        r._grad_fn._name = "StdBackward0"
    return finish(r, out, "std")


@register(method=False)
@numpy_names
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dims, c = _var_args("var_mean", input, dim, unbiased, keepdim, correction)
    v = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=False)
    return v, mean(input, dims, keepdim)


@register(method=False)
@numpy_names
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dims, c = _var_args("std_mean", input, dim, unbiased, keepdim, correction)
    s = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=True)
    return s, mean(input, dims, keepdim)


# ---- logsumexp / norm / dist ---------------------------------------------------------------

class LogSumExp(Op):
    """log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m the max real part (0 where it is infinite)."""
    _name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.args = (x.shape, dims, keepdim)
        if numel_of(x.shape, dims) == 0:
            out = np.full(np.sum(x, axis=dims, keepdims=keepdim).shape, -np.inf, x.dtype)
        else:
            # complex: the shift is the largest real part (as torch), so the imaginary part comes out
            # wrapped into (-pi, pi] by the log
            m = np.amax(x.real, axis=dims, keepdims=True)
            m = np.where(np.isinf(m), np.zeros((), m.dtype), m).astype(x.dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                s = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
            out = s if keepdim else s.reshape(np.shape(np.sum(x, axis=dims)))
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.args
        return keep(grad, shape, dims, keepdim) * cj((x - keep(out, shape, dims, keepdim)).exp())


@register()
@numpy_names
def logsumexp(input, dim, keepdim=False, *, out=None):
    check_tensor(input, "logsumexp")
    if isinstance(dim, (tuple, list)) and not dim and input._data.ndim:  # torch's kernel fails writing its result
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * input._data.ndim}")
    x = input if input._dtype.category >= D.FLOAT else input.to(D.get_default_dtype())
    dims = reduce_dims(dim, x._data.ndim)
    return finish(LogSumExp.apply(x, dims=dims, keepdim=keepdim), out, "logsumexp")


class VectorNorm(Op):
    """sum(|x|**ord)**(1/ord) over dims, with ord in {0, 1, 2, inf, -inf} computed directly."""
    _name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        ctx.args = (x.shape, dims, keepdim, ord)
        a = np.abs(x)
        if ord == 2:
            out = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        elif ord == 1:
            out = np.sum(a, axis=dims, keepdims=keepdim)
        elif ord == math.inf:
            out = np.amax(a, axis=dims, keepdims=keepdim)
        elif ord == -math.inf:
            out = np.amin(a, axis=dims, keepdims=keepdim)
        elif ord == 0:
            out = np.sum(a != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        else:
            with np.errstate(divide="ignore"):
                out = np.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
        out = np.asarray(out, dtype=a.dtype)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape, dims, keepdim, ord = ctx.args
        g = keep(grad, shape, dims, keepdim)
        n = keep(out, shape, dims, keepdim)
        if ord == 0:
            return x * 0 * g
        if ord == 1:
            return x.sgn() * g
        if ord == 2:
            return g * (x / n).masked_fill(n == 0, 0)
        if math.isinf(ord):
            a = x.abs()
            mask = (a == n) | a.isnan()
            return x.sgn() * (g / mask.sum(dims, keepdim=True)) * mask.to(g.dtype)
        if ord < 1:
            scaled = x.sgn() * x.abs().pow(ord - 1).masked_fill(x == 0, 0)
            return scaled * g * n.pow(1 - ord)
        if ord < 2:
            return x.sgn() * x.abs().pow(ord - 1) * (g / n.pow(ord - 1)).masked_fill(n == 0, 0)
        return x * x.abs().pow(ord - 2) * (g / n.pow(ord - 1)).masked_fill(n == 0, 0)


def vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, name="linalg.vector_norm"):
    """torch.linalg.vector_norm semantics (shared with torch.norm and dist)."""
    check_tensor(input, name)
    if input._dtype.category < D.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_NAMES[input._dtype]}")
    x = input if dtype is None else input.to(dtype)
    dims = reduce_dims(dim, x._data.ndim)
    ord = float(ord)
    if ord < 0 or math.isinf(ord):
        what = "inf" if math.isinf(ord) else "negative"
        if x._data.size == 0 and dim is None:
            raise RuntimeError(f"{name} cannot compute the {what} norm on an empty tensor because the operation "
                               "does not have an identity")
        for d in dims:
            if x._data.shape[d] == 0:
                raise RuntimeError(f"{name} cannot compute the {what} norm on the dimension {d}because this "
                                   "dimension is empty and the operation does not have an identity")
    return VectorNorm.apply(x, ord=ord, dims=dims, keepdim=keepdim)


@register(method=False)
@numpy_names
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    check_tensor(input, "norm")
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return finish(vector_norm(input, 2, dim, keepdim, dtype=dtype), out, "norm")
        dims = tuple(range(input._data.ndim)) if dim is None else tuple(dim)
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
        from .. import linalg
        return finish(linalg.matrix_norm(input, p, dims, keepdim, dtype=dtype), out, "norm")
    return finish(vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype), out, "norm")


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Tensor.norm: torch.norm without out= (torch's method puts dtype fourth)."""
    return norm(self, p, dim, keepdim, dtype=dtype)


install(_norm_method, "norm", function=False)


@register()
def dist(input, other, p=2):
    if other.__class__ is not Tensor and not isinstance(other, Tensor):  # input - 1.5 would not refuse
        raise wrong_type("dist", "other", other, "Tensor", 2)
    diff = input - other  # torch promotes the operands (an int and a float tensor give a float distance)
    if diff._dtype.category < D.FLOAT:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{D.SCALAR_NAMES[diff._dtype]} instead.")
    return vector_norm(diff, p, name="norm")


def _renorm_inplace(self, p, dim, maxnorm):
    """renorm_: the composite saves its input, so it runs on a copy of self before self is overwritten."""
    return renorm(self.clone(), p, dim, maxnorm)


@register(inplace=make_inplace(_renorm_inplace, "renorm"))
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm (torch's factor
    maxnorm / (norm + 1e-7)); differentiable through the norm, as torch's renorm_backward."""
    from .._tensor import _wrap_dim
    from .pointwise_params import where
    check_tensor(input, "renorm")
    if input._data.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input._data.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _wrap_dim(dim, input._data.ndim)
    dims = tuple(i for i in range(input._data.ndim) if i != d)
    nrm = vector_norm(input, p, dims, True, name="renorm")
    factor = where(nrm > maxnorm, maxnorm / (nrm + 1e-7), 1.0)
    return finish(input * factor, out, "renorm")
namespace.pop("renorm_")  # torch has renorm_ as a Tensor method only
