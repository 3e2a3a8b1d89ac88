"""grid_sample on 5-D input (torch's grid_sampler_3d: trilinear and nearest) as a composite of ember ops, and
torch.grid_sampler / grid_sampler_2d / grid_sampler_3d (the integer-coded entry points F.grid_sample calls).

The source coordinate is piecewise linear in the grid (slope * grid + offset, slope 0 where border/reflection
clamps, as conv_numpy._grid_source computes), so the trilinear fractions, and with them the input and grid
gradients and double backward, come from the parts."""
import numpy as np

from .._backend import conv_numpy as K
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install
from .creation import zeros_like
from .sampling import _Through

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def _source(grid, raw, k, size, padding_mode, align_corners):
    """Unnormalized, padded source coordinate along grid component k: (differentiable tensor, its values)."""
    n = raw.shape[0]
    comp = raw[..., k].reshape(n, -1)
    pos, slope = K._grid_source(comp, size, padding_mode, align_corners)
    return grid[..., k].reshape(n, -1) * Tensor._make(slope) + Tensor._make(pos - slope * comp), pos


def _tap_index(px, py, pz, sizes):
    """Flat index into a (depth, h, w) volume of the integer tap (px, py, pz), and whether it lies inside."""
    depth, h, w = sizes
    ok = (px >= 0) & (px < w) & (py >= 0) & (py < h) & (pz >= 0) & (pz < depth)
    return (np.clip(pz, 0, depth - 1) * h + np.clip(py, 0, h - 1)) * w + np.clip(px, 0, w - 1), ok


class _Tap(Op):
    """flat (n, c, voxels) read at index (n, points), one index for every channel: (n, c, points). Linear in flat:
    its backward is _TapBack (the scatter-add), whose backward is _Tap again, so derivatives of any order. The 2-D
    kernel's reads (conv_numpy.take_taps), without an (n, c, points) index or a general gather/scatter_add: 1.2M
    taps of torch's sample 11 -> ~2 ms a tap."""
    _name = "GatherBackward0"

    @staticmethod
    def forward(ctx, flat, index):
        ctx.index, ctx.voxels = index, flat.shape[2]
        return K.take_taps(flat, index)

    def backward(ctx, grad):
        return _TapBack.apply(grad, index=ctx.index, voxels=ctx.voxels)


class _TapBack(Op):
    """grad (n, c, points) summed into (n, c, voxels) at index (n, points): _Tap's adjoint (conv_numpy.tap_sums,
    the 2-D grid_sample backward's scatter)."""
    _name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, grad, index, voxels):
        ctx.index = index
        return K.tap_sums(grad, index, voxels).astype(grad.dtype, copy=False).reshape(grad.shape[:2] + (voxels,))

    def backward(ctx, grad):
        return _Tap.apply(grad, index=ctx.index)


class _Nearest(Op):
    """Nearest-neighbour volumetric sampling of flat (n, c, voxels) at index (n, points), zero where not ok. The
    grid gradient is zero; under create_graph both gradients hang off x and grid, as torch's do."""
    _name = "GridSampler3DBackward0"

    @staticmethod
    def forward(ctx, flat, grid, index, ok):
        ctx.save_for_backward(flat, grid)
        ctx.index, ctx.ok = index, ok
        out = K.take_taps(flat, index)
        out *= ok[:, None, :]
        return out

    def backward(ctx, grad):
        flat, grid = ctx.saved_tensors
        gx = _TapBack.apply(grad * Tensor._make(ctx.ok).unsqueeze(1), index=ctx.index, voxels=flat.shape[2])
        ggrid = zeros_like(grid)
        if grad_mode._state.enabled:
            gx, ggrid = _Through.apply(gx, flat, grid), _Through.apply(ggrid, flat, grid)
        return gx, ggrid


def grid_sample_3d(input, grid, mode, padding_mode, align_corners):
    """Volumetric grid sampling: out[n, c, d, h, w] from input[n, c] at grid[n, d, h, w] = (x, y, z)."""
    n, c, depth, h, w = input.shape
    raw = grid.detach()._data
    (ix, ix_np), (iy, iy_np), (iz, iz_np) = (_source(grid, raw, k, size, padding_mode, align_corners)
                                             for k, size in ((0, w), (1, h), (2, depth)))
    flat = input.reshape(n, c, depth * h * w)
    dt = input._data.dtype

    def tap(px, py, pz):
        index, ok = _tap_index(px, py, pz, (depth, h, w))
        return _Tap.apply(flat, index=index), Tensor._make(ok.astype(dt))

    if mode == "nearest":  # nearbyint: halves to even, as torch's kernel
        index, ok = _tap_index(*(np.rint(p).astype(np.int64) for p in (ix_np, iy_np, iz_np)), (depth, h, w))
        out = _Nearest.apply(flat, grid, index=index, ok=ok.astype(dt))
    else:
        lows = [np.floor(p) for p in (ix_np, iy_np, iz_np)]
        fracs = [t - Tensor._make(lo) for t, lo in zip((ix, iy, iz), lows)]
        lows = [lo.astype(np.int64) for lo in lows]
        out = None
        for corner in range(8):
            bits = ((corner >> 0) & 1, (corner >> 1) & 1, (corner >> 2) & 1)
            weight = None
            for b, f in zip(bits, fracs):
                part = f if b else 1 - f
                weight = part if weight is None else weight * part
            vals, ok = tap(*(lo + b for lo, b in zip(lows, bits)))
            term = vals * (weight * ok).unsqueeze(1)
            out = term if out is None else out + term
    return out.reshape((n, c) + tuple(raw.shape[1:4]))


def _decode(interpolation_mode, padding_mode):
    return _MODES[interpolation_mode], _PADDINGS[padding_mode]


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: F.grid_sample with integer codes (mode 0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection)."""
    from .sampling import grid_sample
    return grid_sample(input, grid, *_decode(interpolation_mode, padding_mode), align_corners=align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sampler on 4-D input and grid."""
    if input.dim() != 4 or grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_3d: grid_sampler on 5-D input and grid (bilinear or nearest)."""
    if input.dim() != 5 or grid.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


for _fn in (grid_sampler, grid_sampler_2d, grid_sampler_3d):
    install(_fn, _fn.__name__, method=False)
del _fn
