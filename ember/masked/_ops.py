"""torch.masked's reductions and normalizations on strided tensors (torch/masked/_ops.py's semantics).

Each is a composite, as in torch: masked-out elements are replaced by the operation's identity
(`_identity`), then the ordinary op runs, so gradients come from the ops underneath. Fully masked-out
slices give the identity (sum 0, amax -inf, ...) or NaN where none exists (mean, var, std, softmax).
"""
import math

import ember
from .. import _dtype as D
from .._dtype import bool as _bool, float32, int64, int8, int16, int32, uint8

_PROMOTE_TO_INT64 = (uint8, _bool, int8, int16, int32)


def _canonical_dim(dim, ndim):
    """dim as a sorted tuple of non-negative dims; None and () mean every dim (torch's gh-29137 rule)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, mask):
    """The mask broadcast to input's shape, as bool (torch's canonical input mask)."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask "
                             "(got mask dimensionality higher than of the input)")
        mask = ember.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=_bool)


def _identity(op_name, input, ord=2):
    """The reduction identity as a 0-d tensor of input's dtype, or None where it is undefined."""
    dtype = input.dtype
    floating = dtype.is_floating_point
    integral = dtype.category == D.INT and not dtype.limited  # torch's "is_signed or uint8" (not uint16/32/64)
    if op_name in ("sum", "cumsum"):
        return ember.tensor(0, dtype=dtype)
    if op_name in ("prod", "cumprod"):
        return ember.tensor(1, dtype=dtype)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating:
            return ember.tensor(-math.inf, dtype=dtype)
        if op_name == "logsumexp" and dtype.is_complex:
            return ember.tensor(complex(-math.inf, 0), dtype=dtype)
        if integral:
            return ember.tensor(ember.iinfo(dtype).min, dtype=dtype)
    elif op_name in ("amin", "argmin"):
        if floating:
            return ember.tensor(math.inf, dtype=dtype)
        if integral:
            return ember.tensor(ember.iinfo(dtype).max, dtype=dtype)
    elif op_name == "norm":
        if ord == -math.inf:
            if not floating:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return ember.tensor(math.inf, dtype=dtype)
        return ember.tensor(0, dtype=dtype)
    elif op_name == "median":
        return ember.tensor(math.nan, dtype=dtype if floating else float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _masked_input(op_name, input, mask, ord=2):
    """input with masked-out elements replaced by op_name's identity (input itself when mask is None)."""
    if mask is None:
        return input
    return ember.where(_input_mask(input, mask), input, _identity(op_name, input, ord))


def _sum_dtype(input, dtype):
    """sum/prod's default output dtype: small integers and bool promote to int64."""
    if dtype is not None:
        return dtype
    return int64 if input.dtype in _PROMOTE_TO_INT64 else input.dtype


# ---- reductions -------------------------------------------------------------------------------------

def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.sum: the sum of the masked-in elements (0 where none)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return ember.sum(_masked_input("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.prod: the product of the masked-in elements (1 where none), one dim at a time."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _masked_input("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amax: the maximum of the masked-in elements (-inf, or the dtype's min, where none)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("amax", input, mask)
    return ember.amax(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amin: the minimum of the masked-in elements (inf, or the dtype's max, where none)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("amin", input, mask)
    return ember.amin(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmax; as torch, the index is cast to `dtype`, which defaults to input's dtype."""
    dtype = input.dtype if dtype is None else dtype
    return ember.argmax(_masked_input("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmin; as torch, the index is cast to `dtype`, which defaults to input's dtype."""
    dtype = input.dtype if dtype is None else dtype
    return ember.argmin(_masked_input("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.mean: masked sum / masked count (NaN where nothing is masked in)."""
    source = "Optional"
    if dtype is None:
        dtype = input.dtype
        source = "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=int64), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.median over one dim (nanmedian of the input with masked-out elements as NaN)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=float32)
    output = ember.nanmedian(_masked_input("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not bool(ember.isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.logsumexp: log of the summed exponentials of the masked-in elements (-inf where none)."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return ember.logsumexp(_masked_input("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """torch.masked.logaddexp: elementwise logaddexp, each operand's masked-out elements taken as -inf."""
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("logaddexp", input, input_mask)
    y = _masked_input("logaddexp", other, other_mask)
    return ember.logaddexp(x, y).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.norm: vector_norm of the masked-in elements (masked-out ones count as 0, inf for ord=-inf)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("norm", input, mask, ord)
    dims = _canonical_dim(dim, input.ndim)
    return ember.linalg.vector_norm(masked, ord, dims, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction_opt, keepdim, dtype, mask, take_sqrt):
    """Masked variance (or its square root) with torch's correction rules; NaN where nothing is masked in."""
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else float32
    inmask = None
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=int64), dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    x = input - sample_total / count
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = count.to(real_dtype) - correction
        count = ember.maximum(count, count.new_zeros([]))
    output = (total / count).to(dtype=dtype)
    return ember.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.var: the variance of the masked-in elements."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.std: the standard deviation of the masked-in elements."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


# ---- normalizations ---------------------------------------------------------------------------------

def softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmax: softmax with masked-out elements as -inf (all-masked slices give NaN)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.softmax(_masked_input("amax", input, mask), d, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.log_softmax: log_softmax with masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.log_softmax(_masked_input("amax", input, mask), d, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmin: softmin with masked-out elements as +inf."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.softmin(_masked_input("amin", input, mask), d, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """torch.masked.normalize: input (masked-out elements 0) divided by max(masked norm, eps)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _masked_input("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ember.maximum(nrm, nrm.new_full([], eps))
    return ember.divide(masked, denom)


def cumsum(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumsum: running sum with masked-out elements as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.cumsum(_masked_input("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumprod: running product with masked-out elements as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.cumprod(_masked_input("prod", input, mask), d, dtype=dtype).to(dtype=dtype)
