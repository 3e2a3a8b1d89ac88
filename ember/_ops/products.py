"""Ops that combine several tensors into one grid or block layout: cartesian_prod, block_diag.
Composites of meshgrid, stack and cat (torch's own formulation), so gradients come from those ops."""
from .. import _dtype as D
from .._tensor import Tensor
from ._registry import register
from .creation import _zeros
from .joining import cat, meshgrid, stack


@register(method=False)
def cartesian_prod(*tensors):
    """torch.cartesian_prod: the rows of every combination of the 1-D inputs' elements (one input: itself)."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"cartesian_prod(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}")
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")  # raises torch's error for mixed dtypes or no tensors
    return stack([g.flatten() for g in grids], 1)


@register(method=False)
def block_diag(*tensors):
    """torch.block_diag: the inputs (0-, 1- or 2-D, promoted to one dtype) along the diagonal of a matrix."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}")
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t._data.ndim} dimensions")
    if not tensors:
        return _zeros((1, 0), D.get_default_dtype())
    d = D.result_type_of(tensors)
    blocks = [t.reshape(1, -1) if t._data.ndim < 2 else t for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        r, c = b.shape
        b = b if b._dtype is d else b.to(d)
        rows.append(cat([_zeros((r, left), d), b, _zeros((r, width - left - c), d)], 1))
        left += c
    return cat(rows, 0)
