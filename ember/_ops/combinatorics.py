"""Index and combination builders: block_diag, cartesian_prod, combinations, tril_indices,
triu_indices, unravel_index, isin. Composites of ember ops (gradients flow through cat/pad/indexing)."""
import builtins
import itertools

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._argcheck import _is_int, wrong_type
from ._limited import refusal, refuse
from ._registry import install, write_out
from .creation import finish


def block_diag(*tensors):
    """Tensors (0-d, 1-d or 2-d) placed along the diagonal of one matrix.
    See https://pytorch.org/docs/stable/generated/torch.block_diag.html"""
    from .joining import cat
    from .sampling import ConstantPad
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return finish(np.zeros((1, 0), D.get_default_dtype().np), D.get_default_dtype(), False)
    d = mats[0]._dtype
    for m in mats[1:]:
        d = D.promote_types(d, m._dtype)
    width = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = width - left - m.shape[1]
        rows.append(ConstantPad.apply(m.to(d), pads=(left, right), value=0))
        left += m.shape[1]
    return cat(rows, 0)


def _check_1d(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Rows of every combination of the 1-d inputs' elements (itertools.product order).
    See https://pytorch.org/docs/stable/generated/torch.cartesian_prod.html"""
    from .joining import meshgrid, stack
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """Length-r combinations of a 1-d tensor's elements, one per row (itertools order).
    See https://pytorch.org/docs/stable/generated/torch.combinations.html"""
    from .joining import stack
    _check_1d(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if idx.size:
        refuse(input, "masked_select")  # torch selects the combinations with a mask
    return stack([input[Tensor._make(np.ascontiguousarray(idx[:, k]))] for k in range(r)], 1)


def _tri_indices(name, lower, row, col, offset, dtype, device, requires_grad):
    for pos, (arg, v) in enumerate((("row", row), ("col", col), ("offset", offset)), 1):
        if v.__class__ is not int and not _is_int(v):  # np.tri would take 2.5
            raise wrong_type(name, arg, v, "int", pos)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    d = D.int64 if dtype is None else dtype
    if d not in (D.int32, D.int64):
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.SCALAR_NAMES[d]}'")
    mask = np.tri(row, col, offset, dtype=bool)
    rr, cc = np.nonzero(mask if lower else ~np.tri(row, col, offset - 1, dtype=bool))
    return finish(np.stack([rr, cc]).astype(d.np), d, requires_grad, device)


def tril_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=False,
                 requires_grad=False):
    """Row and column indices (2 x N) of the lower triangle of a row x col matrix.
    See https://pytorch.org/docs/stable/generated/torch.tril_indices.html"""
    return _tri_indices("tril_indices", True, row, col, offset, dtype, device, requires_grad)


def triu_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=False,
                 requires_grad=False):
    """Row and column indices (2 x N) of the upper triangle of a row x col matrix.
    See https://pytorch.org/docs/stable/generated/torch.triu_indices.html"""
    return _tri_indices("triu_indices", False, row, col, offset, dtype, device, requires_grad)


def unravel_index(indices, shape):
    """Flat indices to one coordinate tensor per dim of shape (floor-modular, as torch: no bounds check).
    See https://pytorch.org/docs/stable/generated/torch.unravel_index.html"""
    if indices._dtype.category != D.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, builtins.bool):
        shape = (int(shape),)
    elif not isinstance(shape, (tuple, list)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for s in shape:
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(s)}")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    x = indices._data.astype(np.int64)
    outs = []
    step = 1
    for s in reversed(shape):
        with np.errstate(divide="ignore"):
            outs.append(np.floor_divide(x, step) % s if s else np.zeros_like(x))
        step *= s
    if not outs:
        return ()
    stacked = np.stack(outs[::-1], axis=-1)  # torch's are the columns of one (..., len(shape)) tensor
    return tuple(finish(stacked[..., i], D.int64, False) for i in range(len(shape)))


def isin(elements=None, test_elements=None, *, assume_unique=False, invert=False, out=None, element=None,
         test_element=None):
    """Elementwise membership of elements in test_elements (either may be a scalar: torch's overloads then
    name it element= / test_element=). See https://pytorch.org/docs/stable/generated/torch.isin.html"""
    elements = element if elements is None else elements
    test_elements = test_element if test_elements is None else test_elements
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got (elements="
                        f"{type(elements).__name__}, test_elements={type(test_elements).__name__}), expected at "
                        "least one Tensor")
    common = D.result_type_of((elements, test_elements))
    if common.limited:
        raise refusal("isin_default", common)
    for v in (elements, test_elements):
        d = v._dtype if isinstance(v, Tensor) else D.scalar_dtype(v)
        if d is D.bool or d.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {D.SCALAR_NAMES[d]}")
    a = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    a = a.astype(common.np, copy=False)
    b = b.astype(common.np, copy=False)
    r = finish(np.asarray(np.isin(a, b, assume_unique=assume_unique, invert=invert)), D.bool, False)
    return r if out is None else write_out(out, r, "isin")


install(block_diag, "block_diag", method=False)
install(cartesian_prod, "cartesian_prod", method=False)
install(combinations, "combinations", method=False)
install(tril_indices, "tril_indices", method=False)
install(triu_indices, "triu_indices", method=False)
install(unravel_index, "unravel_index", method=False)
install(isin, "isin", method=False)
