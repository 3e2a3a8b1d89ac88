"""SyncBatchNorm's training step: batch norm whose statistics and gradient sums are those of the whole batch
across the processes of a group (Note [Synchronized batch norm])."""
import numpy as np

from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op

_make = Tensor._make

# Note [Synchronized batch norm]: each process reduces its own slice of the batch to a count and, per channel, a
# sum and a sum of squares (float64); one all_reduce adds them over the group, and every process normalizes with
# the mean and biased variance of the whole batch (the running variance takes the unbiased one, of the whole
# count). Backward all-reduces the per-channel sums of dy and dy * (x - mean) the same way: each process's input
# gradient is then that of the sum of all processes' losses, its weight and bias gradients those of its own slice
# (as torch's: DDP then averages them). Every process of the group must run forward and backward in step, as
# with any collective.


def _all_reduce(arr, group):
    """arr (float64) summed over the group, in place."""
    from .. import distributed as dist
    dist.all_reduce(_make(arr), group=group)
    return arr


class SyncBatchNorm(Op):
    _name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
        c = x.shape[1]
        x3 = x.reshape(x.shape[0], c, -1).astype(np.float64)
        local = np.empty(2 * c + 1)
        local[0] = x3.shape[0] * x3.shape[2]
        local[1:c + 1] = x3.sum(axis=(0, 2))
        local[c + 1:] = np.einsum("ncl,ncl->c", x3, x3)
        total = _all_reduce(local, group)
        count = total[0]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {int(count)}")
        mean = total[1:c + 1] / count
        var = np.maximum(total[c + 1:] / count - mean * mean, 0.0)
        invstd = 1.0 / np.sqrt(var + eps)
        if running_mean is not None:
            running_mean *= 1 - momentum
            running_mean += (momentum * mean).astype(running_mean.dtype)
        if running_var is not None:
            running_var *= 1 - momentum
            running_var += (momentum * var * count / (count - 1)).astype(running_var.dtype)
        scale = invstd if weight is None else invstd * weight.astype(np.float64)
        y = (x3 - mean[:, None]) * scale[:, None]
        if bias is not None:
            y += bias.astype(np.float64)[:, None]
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, invstd, count, group)
        return y.astype(x.dtype).reshape(x.shape)

    def backward(ctx, grad):
        if grad_mode._state.enabled:
            raise NotImplementedError("SyncBatchNorm has no double backward (create_graph=True)")
        x, weight = ctx.saved_tensors
        mean, invstd, count, group = ctx.stats
        need = ctx.needs_input_grad
        x_arr = x._data
        c = x_arr.shape[1]
        g3 = grad._data.reshape(x_arr.shape[0], c, -1).astype(np.float64)
        xmu = x_arr.reshape(x_arr.shape[0], c, -1).astype(np.float64) - mean[:, None]
        sums = np.empty(2 * c)
        sums[:c] = g3.sum(axis=(0, 2))
        sums[c:] = np.einsum("ncl,ncl->c", g3, xmu)
        gw = _make((sums[c:] * invstd).astype(weight._data.dtype)) if weight is not None and need[1] else None
        gb = _make(sums[:c].astype(x_arr.dtype if weight is None else weight._data.dtype)) if need[2] else None
        gx = None
        if need[0]:
            total = _all_reduce(sums.copy(), group)
            mean_dy = total[:c] / count
            mean_dy_xmu = total[c:] / count
            w = invstd if weight is None else invstd * weight._data.astype(np.float64)
            gx3 = (g3 - mean_dy[:, None] - xmu * (invstd * invstd * mean_dy_xmu)[:, None]) * w[:, None]
            gx = _make(gx3.astype(x_arr.dtype).reshape(x_arr.shape))
        return gx, gw, gb


def sync_batch_norm(input, weight, bias, running_mean, running_var, eps, momentum, group):
    """SyncBatchNorm's training forward over the group (the module checked its input)."""
    rm = None if running_mean is None else running_mean._data.reshape(-1)
    rv = None if running_var is None else running_var._data.reshape(-1)
    out = SyncBatchNorm.apply(input, weight, bias, running_mean=rm, running_var=rv, eps=eps, momentum=momentum,
                              group=group)
    for buf in (running_mean, running_var):
        if buf is not None:
            buf._version_counter.value += 1
    return out
