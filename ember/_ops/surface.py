"""Small public APIs real programs touch (issue 13): Tensor.fill_diagonal_, the tensor predicates'
function forms (is_nonzero, is_same_size, is_signed, is_inference), torch.detach/detach_, and torch's
function forms of nn.functional ops and older norms (bilinear, adaptive_max_pool1d, vander,
frobenius_norm, nuclear_norm, native_dropout, native_norm, norm_except_dim). All composites of ember ops."""
import warnings

from .. import _dtype as D
from .._tensor import Tensor
from ._argcheck import OPTIONAL_BOOL, OVERRIDES, _ints_error, _is_int, _is_number, _type_name, ints_error
from ._registry import check_inplace, install


def _number_arg(op, name, pos, v):
    """torch's parser for a `Scalar` parameter: a number or a 0-d Tensor, else TypeError."""
    if not _is_number(v) or isinstance(v, (str, bytes)):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Number, not {_type_name(v)}")


# ---- fill_diagonal_ ------------------------------------------------------------------------------

def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the elements self[i, i, ..., i] in place; wrap=True restarts the diagonal of a tall matrix
    every ncols + 1 rows. Written as torch's kernel: fill_ on as_strided views (grad_fn CopySlices)."""
    _number_arg("fill_diagonal_", "fill_value", 1, fill_value)
    shape = self.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = shape[0], shape[1]
    if len(shape) > 2 and any(n != height for n in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    check_inplace(self)
    step = sum(self.stride())
    offset = self.storage_offset()
    size = min(height, width)
    self.as_strided((size,), (step,), offset).fill_(fill_value)
    if wrap and len(shape) == 2 and height > width + 1:
        wrap_size = -(-self.numel() // (width + 1)) - size
        self.as_strided((wrap_size,), (step,), offset + self.stride(0) * (width + 1)).fill_(fill_value)
    return self


install(fill_diagonal_, "fill_diagonal_", function=False)


# ---- predicates --------------------------------------------------------------------------------

def is_nonzero(input):
    """bool of a one-element tensor (NaN is nonzero); torch's RuntimeError for no or several values."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return input.item() != 0


def is_same_size(input, other):
    """True when the two shapes are equal."""
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' must be Tensor, not {_type_name(other)}")
    return input.shape == other.shape


install(is_nonzero, "is_nonzero")
install(is_same_size, "is_same_size")


def is_signed(input):
    """Tensor.is_signed as a function."""
    return input.is_signed()


def is_inference(input):
    """Tensor.is_inference as a function (always False: ember makes no inference tensors)."""
    return input.is_inference()


def detach(input):
    """Tensor.detach as a function."""
    return input.detach()


def detach_(input):
    """Tensor.detach_ as a function."""
    return input.detach_()


for _fn in (is_signed, is_inference, detach, detach_):
    install(_fn, _fn.__name__, method=False)
del _fn


# ---- torch.* forms of nn.functional ops ------------------------------------------------------------

def bilinear(input1, input2, weight, bias=None):
    """torch.bilinear: nn.functional.bilinear (imported on call: nn is loaded after the ops)."""
    from ..nn.functional import bilinear as f
    if input1.dim() == input2.dim() and weight.dim() < 3:  # torch reads weight.size(1), size(2) before its dim
        weight.size(1 if weight.dim() < 2 else 2)
    return f(input1, input2, weight, bias)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: always (output, indices), unlike nn.functional's."""
    from .pool import adaptive_max_pool1d as f
    return f(input, output_size, return_indices=True)


def native_dropout(input, p, train):
    """(output, bool mask); the mask is drawn as bernoulli_(1 - p), so seeded streams match torch's.
    train=None means training."""
    if input.numel() == 0:
        return input, input.new_empty(input.shape)
    if train is None or train:
        keep = 1.0 - p
        scale = 0.0 if keep == 0 else 1.0 / keep
        mask = input.new_empty(input.shape).bernoulli_(keep)
        out = input.mul(mask).mul_(scale)
        return out, mask.to(D.bool)
    return input.clone(), input.new_ones(input.shape, dtype=D.bool)


OVERRIDES["native_dropout"] = {"train": OPTIONAL_BOOL}  # torch's `bool?` (None: training)
for _fn in (bilinear, adaptive_max_pool1d, native_dropout):
    install(_fn, _fn.__name__, method=False)
del _fn


# ---- vander and the deprecated norms -----------------------------------------------------------------

def vander(x, N=None, increasing=False):
    """Columns x**0, x**1, ... (decreasing powers unless increasing): torch's cumprod of x, so integer and
    bool inputs give int64. Gradients flow through cumprod (torch 2.13's own vander backward raises an in-place
    error). Differs from linalg.vander's argument order."""
    from .. import cat, flip, ones
    if N is not None and not _is_int(N):
        raise TypeError(f"vander(): argument 'N' (position 2) must be int, not {_type_name(N)}")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = D.promote_types(x.dtype, D.int64)
    first = ones((x.shape[0], min(n, 1)), dtype=dtype)
    if n > 1:
        powers = x.unsqueeze(1).expand(x.shape[0], n - 1).to(dtype).cumprod(1)
        first = cat([first, powers], 1)
    return first if increasing else flip(first, (1,))


_WARNED = set()


def _deprecated_once(name, instead):
    """torch's TORCH_WARN_ONCE: one UserWarning per process."""
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will be removed in "
                      f"a future PyTorch release. Please use `{instead}` instead", UserWarning, stacklevel=4)  # past the op and its guard


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """Deprecated torch.frobenius_norm: norm(input, 2, dim, keepdim) over at most 2 dims."""
    from .. import norm
    if _ints_error(dim) is not None:
        raise ints_error("frobenius_norm", "dim", dim, 2)
    _deprecated_once("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return norm(input, 2, dims, keepdim, out=out)


def nuclear_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """Deprecated torch.nuclear_norm: linalg.matrix_norm(input, 'nuc', dim, keepdim). Torch's two overloads
    (input, keepdim) and (input, dim, keepdim) in one signature: a bool in dim's place is keepdim."""
    from .linalg_norm import linalg_matrix_norm
    if dim is None:  # neither overload takes it
        raise TypeError(_no_overload("nuclear_norm", (input, dim), _NUCLEAR_OVERLOADS))
    _deprecated_once("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):  # nuclear_norm(A, True): the (input, keepdim) overload
        dim, keepdim = (-2, -1), dim
    dims = (dim, dim) if _is_int(dim) else tuple(dim)  # torch's int[2]: one int stands for both
    n = input.dim()
    for d in dims if n >= 2 else ():  # torch wraps the dims before matrix_norm checks that there are two
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return linalg_matrix_norm(input, "nuc", dims, keepdim, out=out)


_NUCLEAR_OVERLOADS = ("(Tensor input, tuple of ints dim, bool keepdim = False, *, Tensor out = None)",
                      "(Tensor input, bool keepdim = False, *, Tensor out = None)")
_NATIVE_NORM_OVERLOADS = ("(Tensor input, Number p = 2)",
                          "(Tensor input, Number p, tuple of ints dim, bool keepdim, torch.dtype dtype)")
_NOT_GIVEN = type("NotGiven", (), {"__repr__": lambda self: "<not given>", "__slots__": ()})()


def _no_overload(name, args, overloads):
    """torch's TypeError for arguments that match none of an op's overloads."""
    got = ", ".join(type(a).__name__ if not isinstance(a, Tensor) else "Tensor" for a in args)
    lines = "".join(f"\n * {o}" for o in overloads)
    return f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:{lines}\n"


def native_norm(input, p=2, dim=_NOT_GIVEN, keepdim=_NOT_GIVEN, dtype=_NOT_GIVEN):
    """torch.native_norm: the p-norm of a sparse COO tensor's values (torch's only kernels are sparse ones:
    full reductions, no keepdim or dtype); a dense input raises NotImplementedError, as torch's dispatcher.
    Torch's overloads (input, p=2) and (input, p, dim, keepdim, dtype): the last three all or none."""
    from .. import norm
    rest = (dim, keepdim, dtype)
    given = [v is not _NOT_GIVEN for v in rest]
    if any(given) and not (all(given) and dim is not None and keepdim.__class__ is bool):
        args = (input, p) + tuple(v for v in rest if v is not _NOT_GIVEN)
        raise TypeError(_no_overload("native_norm", args, _NATIVE_NORM_OVERLOADS))
    if p is None and not all(given):
        raise TypeError("native_norm(): argument 'p' (position 2) must be Number, not NoneType")
    dim, keepdim, dtype = (dim, keepdim, dtype) if all(given) else (None, False, None)
    if p is not None:
        _number_arg("native_norm", "p", 2, p)
    if not input.is_sparse:
        raise NotImplementedError("Could not run 'aten::native_norm' with arguments from the 'CPU' backend. "
                                  "'aten::native_norm' is only available for these backends: [SparseCPU].")
    if keepdim:
        raise RuntimeError("norm_sparse currently does not support keepdim=True")
    if dtype is not None:
        raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if dims and sorted(d % input.dim() for d in dims) != list(range(input.dim())):
            raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' must either be "
                               "empty or contain all dimensions of the input")
    return norm(input.coalesce()._values(), 2 if p is None else p)


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm over every dim but `dim`, kept as size-1 dims (weight_norm's g); dim=-1: one norm of all.
    Torch's composite: a view to 2-d, norm, view back (other dims through transpose(0, dim))."""
    if not _is_int(pow):
        raise TypeError(f"norm_except_dim(): argument 'pow' (position 2) must be int, not {_type_name(pow)}")
    if dim == -1:
        return v.norm(pow)
    n = v.dim()
    if dim != 0 and dim != n - 1:
        return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)
    if n == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    size = [1] * n
    size[dim] = v.shape[dim]
    if dim == 0:
        return v.contiguous().view(v.shape[0], -1).norm(pow, 1).view(size)
    return v.contiguous().view(-1, v.shape[dim]).norm(pow, 0).view(size)


install(norm_except_dim, "norm_except_dim", method=False)


# the overloads' arguments are checked in the ops themselves (torch's words, None where an overload takes it)
OVERRIDES["native_norm"] = {"p": None, "dim": None, "keepdim": None, "dtype": None}
OVERRIDES["frobenius_norm"] = {"dim": None}
for _fn in (vander, frobenius_norm, nuclear_norm, native_norm):
    install(_fn, _fn.__name__, method=False)
del _fn
