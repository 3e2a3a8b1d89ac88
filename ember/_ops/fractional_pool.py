"""F.fractional_max_pool2d/3d (Graham 2014): max over windows at pseudo-random, increasing offsets drawn per
(batch, channel) plane from `_random_samples` (uniform [0, 1), one per pooled dim), by ATen's interval rule.
Given the same samples the result is torch's; without them ember draws its own from ember's generator."""
from collections.abc import Iterable

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import Op

_make = Tensor._make


def _intervals(samples, in_size, out_size, pool, dtype):
    """Window starts (planes, out_size) for one dim, ATen's generate_intervals in the input's dtype."""
    u = samples.astype(dtype)
    starts = np.empty(u.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = dtype.type(in_size - pool) / dtype.type(out_size - 1)
        i = np.arange(out_size - 1, dtype=dtype)
        first = (u[:, None] * alpha).astype(np.int64)
        starts[:, :-1] = ((i[None, :] + u[:, None]) * alpha).astype(np.int64) - first
    starts[:, -1] = in_size - pool
    return starts


class FractionalMaxPool(Op):
    """x: (P, *spatial) planes; out (P, *out) and the flat in-plane index of each max."""
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, samples, kernel, out_size):
        planes = x.shape[0]
        nd = len(kernel)
        spatial = x.shape[1:]
        # one index grid per dim: start + offset within the window, broadcast to (P, *out, *kernel)
        coords = []
        for d in range(nd):
            starts = _intervals(samples[:, d], spatial[d], out_size[d], kernel[d], x.dtype)
            idx = starts[:, :, None] + np.arange(kernel[d])[None, None, :]  # (P, out_d, k_d)
            shape = [planes] + [1] * (2 * nd)
            shape[1 + d] = out_size[d]
            shape[1 + nd + d] = kernel[d]
            coords.append(idx.reshape(shape))
        plane = np.arange(planes).reshape([planes] + [1] * (2 * nd))
        windows = x[(plane,) + tuple(coords)]  # (P, *out, *kernel)
        flat = windows.reshape(windows.shape[:1 + nd] + (int(np.prod(kernel)),))  # (an empty batch: no -1)
        arg = np.argmax(flat, axis=-1)
        nan = np.isnan(flat)
        if nan.any():  # ATen's `val > max || isnan(val)`: the last NaN of the window wins
            last_nan = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            arg = np.where(nan.any(-1), last_nan, arg)
        out = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
        # the winner's coordinates in the plane, flattened row-major
        index = np.zeros(arg.shape, dtype=np.int64)
        for d in range(nd):
            full = np.broadcast_to(coords[d], windows.shape).reshape(flat.shape)
            along = np.take_along_axis(full, arg[..., None], -1)[..., 0]
            index = index * spatial[d] + along
        ctx.args = (x.shape, index)
        return out, index

    def backward(ctx, grad, _):
        shape, index = ctx.args
        planes = shape[0]
        g = grad.reshape(planes, -1)
        zeros = g.new_zeros((planes, int(np.prod(shape[1:]))))
        return zeros.scatter_add(1, _make(index.reshape(planes, -1)), g).reshape(shape)


class FractionalMaxPool2d(FractionalMaxPool):
    _name = "FractionalMaxPool2DBackward0"


class FractionalMaxPool3d(FractionalMaxPool):
    _name = "FractionalMaxPool3DBackward0"


def _check(name, input, kernel, output_size, output_ratio, samples, nd):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{name}_out_frame\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")


def _fractional(name, nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    from .random import rand
    # first what torch's Python-level F function computes, in its order, before its C-level call checks anything:
    # a bad call fails where torch's does (a 2-d input's size(-3): IndexError; a bare float output_ratio of the 2-d
    # form: len()'s TypeError; Note [Python-level checks] in _argcheck.py)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = output_ratio
        if ratio.__class__ is not tuple and ratio.__class__ is not list:  # torch's _pair/_triple
            ratio = tuple(ratio) if isinstance(ratio, Iterable) else (ratio,) * nd
        spatial = input._data.shape[-nd:] if input._data.ndim >= nd else input.size(-nd)  # size(): an IndexError
        output_size = [int(spatial[d] * ratio[d]) for d in range(nd)]
    if _random_samples is None:
        n = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = rand(n, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * nd
    _check(name, input, kernel, output_size, output_ratio, _random_samples, nd)
    spatial = tuple(input.shape[-nd:])
    out_size = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    dims = "THW"[3 - nd:]
    for d in range(nd):
        if out_size[d] + kernel[d] - 1 > spatial[d]:
            what = {"T": "time", "H": "height", "W": "width"}[dims[d]]
            raise RuntimeError(f"{name}(): pool {what} {kernel[d]} too large relative to input {what} {spatial[d]}")
    batched = input.dim() == nd + 2
    n = input.shape[0] if batched else 1
    c = input.shape[-nd - 1]
    if _random_samples._dtype is not input._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    s = _random_samples
    if s.dim() != 3:
        raise RuntimeError(f"Expect _random samples to have 3 dimensions, got {s.dim()}")
    if s.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {s.shape[2]}.")
    if s.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if s.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    # ATen reads the samples per plane with W first for 2-d pooling and T, H, W for 3-d pooling
    smp = s._data[:n].reshape(n * c, nd)
    if nd == 2:
        smp = smp[:, ::-1]
    planes = input.reshape((n * c,) + spatial)
    op = FractionalMaxPool2d if nd == 2 else FractionalMaxPool3d
    out, index = op.apply(planes, samples=np.ascontiguousarray(smp), kernel=kernel,
                                         out_size=out_size)
    shape = (tuple(input.shape[:-nd]) if batched else (c,)) + out_size
    out = out.reshape(shape)
    index = index.reshape(shape)
    return (out, index) if return_indices else out


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.fractional_max_pool2d.html"""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.fractional_max_pool3d.html"""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)
