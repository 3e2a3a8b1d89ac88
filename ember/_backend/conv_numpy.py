"""NumPy-specific helpers of the convolution, pooling and resampling kernels.

Note [Convolution layout]: a convolution is one GEMM per group. The input is copied once into a
channel-major, batch-second buffer (C, N, *padded) so that the im2col matrix, a strided window
view of that buffer taken with as_strided, reads as (C, *kernel, N, *out): reshaped to
(groups, C/groups * taps, N * positions) it is the right operand of a single GEMM
W (groups, O/groups, C/groups * taps) @ cols. The transposed scatter (col2im) is one strided add
per kernel tap, vectorised over channels, batch and positions. Measured against a per-tap
accumulation over shifted flat views (no im2col matrix, 9 small GEMMs plus adds) and against a
per-sample batched GEMM, this layout was the fastest for forward + backward (report in the PR).
"""
import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided


def conv_out_size(size, k, s, d, lo, hi):
    """Positions a window of k taps (dilation d, stride s) takes on size + lo + hi."""
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def padded(x, lo, hi, value=0, batch_second=False):
    """x (N, C, *S) as a fresh array padded by lo/hi per spatial dim with `value`; with
    batch_second the copy is laid out (C, N, *padded). Without padding and in the natural
    layout x itself is returned (callers only read it)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    if not any(lo) and not any(hi):
        return x.transpose((1, 0) + tuple(range(2, x.ndim))) if batch_second else x
    shape = tuple(s + a + b for s, a, b in zip(spatial, lo, hi))
    lead = (c, n) if batch_second else (n, c)
    if value == 0:
        buf = np.zeros(lead + shape, dtype=x.dtype)
    else:
        buf = np.full(lead + shape, value, dtype=x.dtype)
    inner = tuple(slice(a, a + s) for a, s in zip(lo, spatial))
    src = x.transpose((1, 0) + tuple(range(2, x.ndim))) if batch_second else x
    buf[(slice(None), slice(None)) + inner] = src
    return buf


def tap_slices(kernel, stride, dilation, out):
    """(tap, slices) for every kernel tap: the slices select, from a padded (A, B, *S) buffer,
    the (A, B, *out) positions that tap reads."""
    ranges = [range(k) for k in kernel]
    for tap in itertools.product(*ranges):
        sl = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(tap, stride, dilation, out))
        yield tap, (slice(None), slice(None)) + sl


def windows(buf, kernel, stride, dilation, out):
    """A (A, *kernel, B, *out) read-only view of a padded (A, B, *S) buffer: element
    [a, k..., b, o...] is buf[a, b, o * stride + k * dilation]."""
    st = buf.strides
    shape = buf.shape[:1] + tuple(kernel) + buf.shape[1:2] + tuple(out)
    tap_strides = tuple(s * d for s, d in zip(st[2:], dilation))
    pos_strides = tuple(s * t for s, t in zip(st[2:], stride))
    strides = st[:1] + tap_strides + st[1:2] + pos_strides
    return as_strided(buf, shape, strides, writeable=False)


def im2col(x, kernel, stride, dilation, lo, hi, out, groups):
    """The (groups, C/groups * taps, N * positions) im2col matrix of x (N, C, *S)."""
    n, c = x.shape[:2]
    buf = padded(x, lo, hi, batch_second=True)
    view = windows(buf, kernel, stride, dilation, out)
    taps = int(np.prod(kernel))
    positions = n * int(np.prod(out))
    return np.ascontiguousarray(view).reshape(groups, (c // groups) * taps, positions)


def col2im(cols, x_shape, kernel, stride, dilation, lo, hi, out):
    """Transpose of im2col: cols (C * taps, N * positions) summed back into an (N, C, *S) array,
    one strided add per tap."""
    n, c = x_shape[:2]
    spatial = x_shape[2:]
    full = tuple(s + a + b for s, a, b in zip(spatial, lo, hi))
    buf = np.zeros((c, n) + full, dtype=cols.dtype)
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    for tap, sl in tap_slices(kernel, stride, dilation, out):
        buf[sl] += cols[(slice(None),) + tap]
    inner = tuple(slice(a, a + s) for a, s in zip(lo, spatial))
    crop = buf[(slice(None), slice(None)) + inner]
    return np.ascontiguousarray(crop.transpose((1, 0) + tuple(range(2, crop.ndim))))


def to_channel_major(y, groups):
    """y (N, O, *P) copied to (groups, O/groups, N * positions), the layout of a GEMM operand."""
    n, o = y.shape[:2]
    t = np.ascontiguousarray(y.transpose((1, 0) + tuple(range(2, y.ndim))))
    return t.reshape(groups, o // groups, -1)


def from_channel_major(y, n, out, bias=None):
    """y (O, N * positions) back to a fresh (N, O, *out) array, adding bias (O,) on the way."""
    o = y.shape[0]
    src = y.reshape((o, n) + tuple(out)).transpose((1, 0) + tuple(range(2, 2 + len(out))))
    res = np.empty((n, o) + tuple(out), dtype=y.dtype)
    if bias is None:
        np.copyto(res, src)
    else:
        np.add(src, bias.reshape((o,) + (1,) * len(out)).astype(y.dtype, copy=False), out=res)
    return res
