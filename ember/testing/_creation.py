"""torch.testing.make_tensor: a tensor of uniform random values in [low, high) for tests,
with torch's default ranges per dtype (bool [0, 2), unsigned [0, 10), signed [-9, 10),
floating and complex [-9, 9)), drawn from ember's default generator."""
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._device import as_device

__all__ = ["make_tensor"]


def _bounds(dtype, low, high, lowest, highest, default_low, default_high):
    """Check and clamp the user's [low, high) to what dtype can hold; integers are ceiled."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if (isinstance(low, float) and math.isnan(low)) or (isinstance(high, float) and math.isnan(high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    floating = dtype.category >= D.FLOAT
    if low == high and floating:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                      "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                      FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low = min(max(low, lowest), highest)
    high = min(max(high, lowest), highest)
    if not floating:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape, dtype, low, high):
    """Uniform [low, high) in a real floating dtype; a range wider than the dtype's max is
    drawn at half scale and doubled (as torch does, to keep high - low finite)."""
    from .. import empty
    t = empty(shape, dtype=dtype)
    if high - low >= float(D.finfo(dtype).max):
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """torch.testing.make_tensor (https://pytorch.org/docs/stable/testing.html)."""
    from .. import complex as make_complex, randint
    as_device(device)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor().")
    integral = dtype.category < D.FLOAT
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and int(np.prod(shape, dtype=np.int64)) > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)  # every other element of a doubled last dim
    if dtype is D.bool:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        result = randint(low, high, shape, dtype=dtype)
    elif integral:
        info = np.iinfo(dtype.np)
        # randint draws below 2**63 - 1 at most, so int64's top value is excluded
        top = int(info.max) + (0 if dtype is D.int64 else 1)
        low, high = _bounds(dtype, low, high, int(info.min), top, -9, 10)
        result = randint(low, high, shape, dtype=dtype)
    else:
        real = dtype.to_real() if dtype.category == D.COMPLEX else dtype
        info = D.finfo(real)
        low, high = _bounds(dtype, low, high, float(info.min), float(info.max), -9, 9)
        if dtype.category == D.COMPLEX:
            result = make_complex(_uniform(shape, real, low, high), _uniform(shape, real, low, high))
        else:
            result = _uniform(shape, dtype, low, high)
    if noncontiguous:
        result = result[..., ::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result = _replace_zeros(result, dtype)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _replace_zeros(t, dtype):
    """Zeros become 1 (bool, integers), the smallest normal number (floating), or tiny + tiny*j."""
    x = t._data
    zero = x == 0
    if not zero.any():
        return t
    if dtype.category < D.FLOAT:
        x[zero] = 1
    else:
        real = dtype.to_real() if dtype.category == D.COMPLEX else dtype
        tiny = D.finfo(real).tiny
        x[zero] = complex(tiny, tiny) if dtype.category == D.COMPLEX else tiny
    return t
