"""The aten overloads torch exposes only as torch.ops.aten.* (ember.ops.aten): slice.Tensor,
native_dropout_backward, max_pool2d_with_indices_backward, each written with ember ops."""
from .. import _dtype as D
from .pool import IndexScatter


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def slice_tensor(self, dim=0, start=None, end=None, step=1):
    """aten.slice.Tensor: self[..., start:end:step, ...] along dim, a view (start/end clamped, step > 0)."""
    dim = _wrap_dim(dim, self.dim())
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    if self.dim() == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    return self[(slice(None),) * dim + (slice(start, end, step),)]


def native_dropout_backward(grad_output, mask, scale):
    """aten.native_dropout_backward: grad_output * mask * scale (integral and bool gradients promote to
    the default float dtype, as torch's)."""
    return grad_output * mask * scale


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    """aten.max_pool2d_with_indices_backward: grad_output summed into self's shape at the flat per-plane
    positions indices (max_pool2d_with_indices' second output); the pooling arguments are not read."""
    if indices.dtype is not D.int64:
        raise RuntimeError(f"expected indices of dtype Long, but got {indices.dtype}")
    if tuple(grad_output.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected grad_output and indices to have the same shape, but got "
                           f"{list(grad_output.shape)} and {list(indices.shape)}")
    batched = self.dim() == 4
    g = grad_output if batched else grad_output.unsqueeze(0)
    src = self if batched else self.unsqueeze(0)
    idx = (indices if batched else indices.unsqueeze(0))._data
    out = IndexScatter.apply(g, src, idx=idx, plane_shape=tuple(self.shape[-2:]), unique=False, assign=False)
    return out if batched else out.squeeze(0)


PACKETS = {
    "slice": {"Tensor": slice_tensor},
    "native_dropout_backward": {"default": native_dropout_backward},
    "max_pool2d_with_indices_backward": {"default": max_pool2d_with_indices_backward},
}
