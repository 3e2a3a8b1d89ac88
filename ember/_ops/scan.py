"""Scans along one dim: cumsum, cumprod, cummax/cummin, logcumsumexp; and diff.

Each scan op takes a `reverse` flag (scan from the end) because the backward of a scan is
the same scan run the other way; with both directions declared here, every backward is
again made of differentiable scan ops and double backward works.
"""
import cmath
import math

import numpy as np

from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor
from ..autograd import grad_mode
from .._backend import check_internal_overlap, contiguous
from ._registry import Op, assign_result, check_inplace, register
from .complex import cj
from .reduction import (_as_1d, _make, accumulate_dtype, check_tensor, finish, index_grad, numpy_names, one_dim,
                        refuse_complex)


def _scan(ufunc, x, dim, reverse, dtype=None):
    """ufunc.accumulate along dim (from the end when reverse); a 0-d x is its own scan."""
    if x.ndim == 0:
        return x.astype(dtype if dtype is not None else x.dtype)
    if not reverse:
        return ufunc.accumulate(x, axis=dim, dtype=dtype)
    flipped = ufunc.accumulate(np.flip(x, dim), axis=dim, dtype=dtype)
    return np.ascontiguousarray(np.flip(flipped, dim))


# ---- cumsum ------------------------------------------------------------------------------

class CumSum(Op):
    _name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype, reverse):
        ctx.args = (dim, reverse)
        return contiguous(_scan(np.add, x, dim, reverse, dtype.np))  # torch's result is contiguous

    def backward(ctx, grad):
        dim, reverse = ctx.args
        return cumsum_dir(grad, dim, not reverse)


def cumsum_dir(t, dim, reverse, dtype=None):
    """cumsum of an ember tensor from either end (sums of bool/int in int64)."""
    d = accumulate_dtype(dtype, t._dtype, "cumsum_out_cpu")
    return CumSum.apply(t, dim=dim, dtype=d, reverse=reverse)


@register(inplace=False)
@numpy_names
def cumsum(input, dim, *, dtype=None, out=None):
    check_tensor(input, "cumsum")
    if dtype is None and out is not None and isinstance(out, Tensor):  # torch sums in out's dtype
        dtype = out._dtype
    if dtype is D.bool:
        raise NotImplementedError('"cumsum_out_cpu" not implemented for \'Bool\'')
    d = one_dim(dim, input._data.ndim)
    return finish(cumsum_dir(input, d, False, dtype), out, "cumsum")


# ---- cumprod -----------------------------------------------------------------------------

class CumProd(Op):
    _name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype, reverse):
        ctx.args = (dim, reverse)
        out = _scan(np.multiply, x, dim, reverse, dtype.np)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim, reverse = ctx.args
        return cumprod_grad(grad, x, out, dim, reverse)


def cumprod_grad(grad, x, out, dim, reverse):
    """d/dx_i of sum_k grad_k * prod_{j<=k} x_j, correct when x has zeros.

    Before the first zero (in scan order) it is rev_cumsum(grad * out) / x. At the first
    zero z it is rev_cumsum(grad * cumprod(x with x_z := 1)). After it, every product
    that contains x_i also contains x_z = 0, so the gradient is 0.
    """
    back = not reverse
    if x._data.ndim == 0:
        return grad
    if not (x._data == 0).any():
        return cumsum_dir(grad * cj(out), dim, back) / cj(x)
    if grad_mode._state.enabled:
        return _cumprod_grad_table(grad, x, dim, reverse)
    zero = x == 0
    zeros_so_far = cumsum_dir(zero, dim, reverse)
    before = zeros_so_far == 0
    first = zero & (zeros_so_far == 1)
    part_before = (cumsum_dir(grad * cj(out), dim, back) / cj(x.masked_fill(~before, 1))).masked_fill(~before, 0)
    skip_zero = cumprod_dir(x.masked_fill(first, 1), dim, reverse)
    part_first = cumsum_dir(grad * cj(skip_zero), dim, back).masked_fill(~first, 0)
    return part_before + part_first


def _cumprod_grad_table(grad, x, dim, reverse):
    """The same gradient as a polynomial in x, for create_graph=True with zeros in x (the O(n)
    form above is exact but its own derivative is not). Row i of an n x n table holds x with
    x_i replaced by 1; its cumprod at k is prod_{j<=k, j!=i} x_j. O(n^2) memory, as torch's
    loop for this case."""
    n = x._data.shape[dim]
    xm = x.movedim(dim, -1)
    gm = grad.movedim(dim, -1)
    eye = _make(np.eye(n, dtype=bool))
    table = xm.unsqueeze(-2).expand(xm.shape[:-1] + (n, n)).masked_fill(eye, 1)
    products = cumprod_dir(table, table._data.ndim - 1, reverse)
    later = _make(np.tril(np.ones((n, n), bool), -1) if not reverse else np.triu(np.ones((n, n), bool), 1))
    terms = (cj(products) * gm.unsqueeze(-2)).masked_fill(later, 0)
    return terms.sum(-1).movedim(-1, dim)


def cumprod_dir(t, dim, reverse, dtype=None):
    d = accumulate_dtype(dtype, t._dtype, "cumprod_out_cpu")
    return CumProd.apply(t, dim=dim, dtype=d, reverse=reverse)


@register(inplace=False)
@numpy_names
def cumprod(input, dim, *, dtype=None, out=None):
    check_tensor(input, "cumprod")
    if dtype is None and out is not None and isinstance(out, Tensor):  # torch multiplies in out's dtype
        dtype = out._dtype
    if dtype is D.bool:
        raise NotImplementedError('"cumprod_out_cpu" not implemented for \'Bool\'')
    d = one_dim(dim, input._data.ndim)
    return finish(cumprod_dir(input, d, False, dtype), out, "cumprod")


def _inplace_scan(fn, name):
    """cumsum_/cumprod_ compute in self's dtype (the out-of-place op would widen ints)."""

    def inplace(input, dim, *, dtype=None):
        check_inplace(input)
        check_internal_overlap(input._data)  # Note [Expanded self]
        r = fn(input, dim, dtype=input._dtype if dtype is None else dtype)
        return assign_result(input, r, name + "_")
    inplace.__name__ = inplace.__qualname__ = name + "_"
    return inplace


Tensor.cumsum_ = numpy_names(_inplace_scan(cumsum, "cumsum"))
Tensor.cumprod_ = numpy_names(_inplace_scan(cumprod, "cumprod"))


# ---- cummax / cummin ---------------------------------------------------------------------

class CumMax(Op):
    """Running max/min with the index of the element it came from: on ties the later index,
    and a NaN, once seen, stays (its index moves to each later NaN), as torch."""
    _name = "CummaxBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, dim, largest):
        xs = _as_1d(x)
        values = (np.maximum if largest else np.minimum).accumulate(xs, axis=dim)
        pos_shape = [1] * xs.ndim
        pos_shape[dim] = xs.shape[dim]
        pos = np.arange(xs.shape[dim], dtype=np.int64).reshape(pos_shape)
        hit = xs == values
        if xs.dtype.kind in "fc":
            hit |= np.isnan(xs)
        idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=dim) if xs.size else np.zeros(xs.shape, np.int64)
        ctx.args = (x.shape, dim, idx)
        return values.reshape(x.shape), idx.reshape(x.shape)

    def backward(ctx, grad, grad_indices=None):
        shape, dim, idx = ctx.args
        return index_grad(grad, idx.reshape(shape), dim, shape, accumulate=True)


def _cum_extreme(name, largest, input, dim, out):
    check_tensor(input, name)
    refuse_complex(input, name + "_cpu")
    d = one_dim(dim, input._data.ndim)
    values, indices = CumMax.apply(input, dim=d, largest=largest)
    if values._grad_fn is not None and not largest:
        values._grad_fn._name = "CumminBackward0"
    return finish(getattr(return_types, name)((values, indices)), out, name)


@register()
@numpy_names
def cummax(input, dim, *, out=None):
    return _cum_extreme("cummax", True, input, dim, out)


@register()
@numpy_names
def cummin(input, dim, *, out=None):
    return _cum_extreme("cummin", False, input, dim, out)


# ---- logcumsumexp ------------------------------------------------------------------------

def _logaddexp_complex(a, b):
    """log(exp(a) + exp(b)) for complex scalars, scaled by the larger real part (torch's complex logaddexp)."""
    a, b = complex(a), complex(b)
    if a.real < b.real:
        a, b = b, a
    if a.real == -math.inf:
        return a
    return a + cmath.log(1 + cmath.exp(b - a))


_LOGADDEXP_COMPLEX = np.frompyfunc(_logaddexp_complex, 2, 1)


class LogCumSumExp(Op):
    """log(cumsum(exp(x))) as a running logaddexp, which never overflows."""
    _name = "LogcumsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.args = (dim, reverse)
        if np.iscomplexobj(x):  # NumPy's logaddexp is real only: a Python ufunc over complex scalars
            out = _scan(_LOGADDEXP_COMPLEX, x.astype(object), dim, reverse).astype(x.dtype)
        else:
            out = _scan(np.logaddexp, x, dim, reverse)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        # dx_i = sum_{k >= i} grad_k * exp(x_i - out_k), summed in log space separately for the
        # positive and the negative part of grad so that nothing overflows
        x, out = ctx.saved_tensors
        dim, reverse = ctx.args
        lowest = float(np.finfo(grad._data.dtype).min)
        log_abs = grad.abs().log()
        log_pos = log_abs.where(grad > 0, lowest)
        log_neg = log_abs.where(grad < 0, lowest)
        pos = (logcumsumexp_dir(log_pos - out, dim, not reverse) + x).exp()
        neg = (logcumsumexp_dir(log_neg - out, dim, not reverse) + x).exp()
        return pos - neg


def logcumsumexp_dir(t, dim, reverse):
    return LogCumSumExp.apply(t, dim=dim, reverse=reverse)


@register()
@numpy_names
def logcumsumexp(input, dim, *, out=None):
    check_tensor(input, "logcumsumexp")
    if input._dtype.category < D.FLOAT:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")
    d = one_dim(dim, input._data.ndim)
    return finish(logcumsumexp_dir(input, d, False), out, "logcumsumexp")


# ---- diff --------------------------------------------------------------------------------

@register(out=True)
@numpy_names
def diff(input, n=1, dim=-1, prepend=None, append=None):
    check_tensor(input, "diff")
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = one_dim(dim, nd)
    if n == 0:  # torch: a copy of the input, prepend and append ignored
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        if t._data.ndim != nd:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    from .indexing import cat
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x._data.shape[d]
        if length == 0:
            break
        later = x.narrow(d, 1, length - 1)
        earlier = x.narrow(d, 0, length - 1)
        x = later.logical_xor(earlier) if x._dtype is D.bool else later - earlier
    return x

