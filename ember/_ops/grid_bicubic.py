"""grid_sample(mode='bicubic') on 4-D input: torch's grid_sampler_2d bicubic kernel as a composite of ember
ops. The source point is the unnormalized grid coordinate (no padding); each of the 16 taps around it goes
through the padding mode (zeros: outside taps count 0) and is weighted by the cubic convolution (A = -0.75)
of the fractional offsets, so input and grid gradients (and double backward) come from the parts."""
import numpy as np

from .._backend import conv_numpy as K
from .._tensor import Tensor

_A = -0.75


def _near(t):
    """Cubic convolution for |x| <= 1."""
    return ((_A + 2) * t - (_A + 3)) * t * t + 1


def _far(t):
    """Cubic convolution for 1 < |x| < 2."""
    return ((_A * t - 5 * _A) * t + 8 * _A) * t - 4 * _A


def _coefficients(t):
    return [_far(t + 1), _near(t), _near(1 - t), _far(2 - t)]


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def grid_sample_bicubic(input, grid, padding_mode, align_corners):
    n, c, h, w = input.shape
    points = grid.shape[1] * grid.shape[2]
    ix = _unnormalize(grid[..., 0].reshape(n, points), w, align_corners)
    iy = _unnormalize(grid[..., 1].reshape(n, points), h, align_corners)
    ix_np = ix.detach()._data
    iy_np = iy.detach()._data
    tx = ix - Tensor._make(np.floor(ix_np))
    ty = iy - Tensor._make(np.floor(iy_np))
    cx = _coefficients(tx)
    cy = _coefficients(ty)
    flat = input.reshape(n, c, h * w)
    out = None
    for j, i, index, ok in K.bicubic_taps(ix_np, iy_np, h, w, padding_mode, align_corners):
        gather_at = Tensor._make(np.ascontiguousarray(np.broadcast_to(index[:, None, :], (n, c, points))))
        weight = cx[i] * cy[j] * Tensor._make(ok.astype(input._data.dtype))
        term = flat.gather(2, gather_at) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, grid.shape[1], grid.shape[2])
