"""torch.native_batch_norm / native_layer_norm / native_group_norm: the functional norms plus the
statistics torch's kernels return beside the output (mean and inverse std, not differentiable)."""
import math

import numpy as np

from .._tensor import Tensor
from ._registry import install
from .norm import batch_norm, group_norm, layer_norm


def _opmath_np(arr):
    """The dtype the statistics come in: float32 for half types, else the input's."""
    return arr.astype(np.float32) if arr.dtype.itemsize == 2 else arr


def _stats(x2, eps):
    """(mean, 1 / sqrt(biased var + eps)) of each row of a 2-d array."""
    mean = x2.mean(axis=1)
    var = ((x2 - mean[:, None]) ** 2).mean(axis=1)
    return mean, 1.0 / np.sqrt(var + eps)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd); in eval mode the two statistics are empty, as torch's."""
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm: running_mean and running_var must be defined in evaluation mode")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    x = _opmath_np(input._data)
    if not training:
        empty = np.empty(0, dtype=x.dtype)
        return out, Tensor._make(empty), Tensor._make(empty.copy())
    c = x.shape[1]
    rows = np.moveaxis(x, 1, 0).reshape(c, -1)
    mean, invstd = _stats(rows, eps)
    return out, Tensor._make(mean), Tensor._make(invstd.astype(x.dtype))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd) with the statistics shaped input.shape[:axis] + (1,) * len(normalized_shape)."""
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    k = len(tuple(normalized_shape))
    lead = tuple(input.shape[:input.dim() - k])
    x = _opmath_np(input._data).reshape(math.prod(lead), math.prod(input.shape[input.dim() - k:]))
    mean, rstd = _stats(x, eps)
    stat_shape = lead + (1,) * k
    return out, Tensor._make(mean.reshape(stat_shape)), Tensor._make(rstd.astype(x.dtype).reshape(stat_shape))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd) with the statistics shaped (N, group)."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to be of size N * C * HxW = {N * C * HxW}, but got input of shape "
                           f"{list(input.shape)}")
    out = group_norm(input, group, weight, bias, eps)
    rows = input.reshape(N * group, (C // group) * HxW)
    if rows._dtype.itemsize == 2:  # half types: statistics in float32, as torch's opmath
        rows = rows.float()
    mean = rows.mean(1)  # ember ops: the statistics are graph outputs (requires_grad) as torch's are
    rstd = (rows.var(1, correction=0) + eps).rsqrt()
    return out, mean.reshape(N, group), rstd.reshape(N, group)


install(native_batch_norm, "native_batch_norm", method=False, out=True)  # out=(output, save_mean, save_invstd)
install(native_layer_norm, "native_layer_norm", method=False)
install(native_group_norm, "native_group_norm", method=False)
