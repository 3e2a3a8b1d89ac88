"""hash_tensor: a reduction of the elements' bit patterns to one torch.uint64 per reduced row.

mode 0 (the only one torch 2.13 has): each element is widened to its 64-bit kind (floating -> float64,
integers and bool -> int64), its bits read as uint64, and the row reduced by xor. No gradient: the result
is an integer.
"""
import builtins

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import register, write_out
from .reduction import check_tensor, keep_shape, reduce_dims

_make = Tensor._make


def _bits(x, d):
    """x's elements widened to 64 bits (float64 or int64), as uint64 bit patterns."""
    wide = np.float64 if d.category == D.FLOAT else np.int64
    return x.astype(wide, copy=False).view(np.uint64)


@register()
def hash_tensor(input, dim=(), *, keepdim=False, mode=0, out=None):
    check_tensor(input, "hash_tensor")
    if type(mode) is builtins.bool or not isinstance(mode, int):
        raise TypeError(f"hash_tensor(): argument 'mode' must be int, not {type(mode).__name__}")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    x = input._data
    dims = reduce_dims(dim, x.ndim)
    if x.size == 0 and (dim is None or (isinstance(dim, (tuple, list)) and not dim)):
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    for i in dims:
        if x.shape[i] == 0:  # xor has an identity, but torch refuses as for amax
            raise IndexError(f"hash_tensor: Expected reduction dim {i} to have non-zero size.")
    d = input._dtype
    kept = tuple(n for i, n in enumerate(x.shape) if i not in dims)
    if 0 in kept:  # an empty result: torch runs no kernel, so takes every dtype
        r = np.zeros(keep_shape(x.shape, dims) if keepdim else kept, dtype=np.uint64)
    elif d.category == D.COMPLEX or d.limited:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{D.SCALAR_NAMES[d]}'")
    else:
        r = np.bitwise_xor.reduce(_bits(x, d), axis=dims, keepdims=keepdim)
    result = _make(np.asarray(r), D.uint64)
    if out is None:
        return result
    if isinstance(out, Tensor) and out._dtype is not D.uint64:
        raise RuntimeError(f"Expected result to be of dtype uint64, but got {D.SCALAR_NAMES[out._dtype]}")
    return write_out(out, result, "hash_tensor")
