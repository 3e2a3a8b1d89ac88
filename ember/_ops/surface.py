"""Small public APIs real programs touch (issue 13): Tensor.fill_diagonal_, the tensor predicates'
function forms (is_nonzero, is_same_size, is_signed, is_inference), torch.detach/detach_, and torch's
function forms of nn.functional ops and deprecated norms (bilinear, adaptive_max_pool1d, vander,
frobenius_norm, nuclear_norm, native_dropout, native_norm). All composites of ember ops."""
import warnings

from .. import _dtype as D
from .._tensor import Tensor
from ._argcheck import OPTIONAL_BOOL, OVERRIDES, _is_number, _type_name
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
    bool inputs give int64 and gradients flow through cumprod. Differs from linalg.vander's argument order."""
    from .. import cat, flip, ones
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
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
    _deprecated_once("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return norm(input, 2, dims, keepdim, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """Deprecated torch.nuclear_norm: linalg.matrix_norm(input, 'nuc', dim, keepdim), dim the last two by
    default. Torch's two overloads (input, keepdim) and (input, dim, keepdim) in one signature."""
    from .linalg_norm import linalg_matrix_norm
    _deprecated_once("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):  # nuclear_norm(A, True): the (input, keepdim) overload
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    return linalg_matrix_norm(input, "nuc", dim, keepdim, out=out)


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """torch.native_norm: the p-norm of a sparse COO tensor's values (torch's only kernels are sparse ones:
    full reductions, no keepdim or dtype); a dense input raises NotImplementedError, as torch's dispatcher."""
    from .. import norm
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


for _fn in (vander, frobenius_norm, nuclear_norm, native_norm):
    install(_fn, _fn.__name__, method=False)
del _fn
