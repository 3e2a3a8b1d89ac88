"""Convolution: conv1d/2d/3d and conv_transpose1d/2d/3d (torch.nn.functional and torch.*).

Three kernels share one geometry (stride, dilation, padding, groups) and are the three faces
of the trilinear form T(x, w, y) = <conv(x, w), y>:
    conv(x, w)         -> y-shaped (the forward)
    conv_input(y, w)   -> x-shaped = dT/dx (conv's input gradient, and conv_transpose's forward)
    conv_weight(x, y)  -> w-shaped = dT/dw (conv's weight gradient)
Each is an Op whose backward is written with the other two, so gradients of every order work.
The GEMM layout is described in Note [Convolution layout] (ember/_backend/conv_numpy.py);
depthwise convolutions (one input channel per group) take a per-tap multiply-accumulate path
over contiguous slices (Note [Depthwise flat layout], ember/_backend/depthwise_numpy.py).
"""
import warnings

import numpy as np

from .. import _backend as B
from .. import _dtype as D
from .._backend import cblas
from .._backend import conv_implicit as IM
from .._backend import conv_numpy as K
from .._backend import conv_rows as CR
from .._backend import cpu_features
from .._backend import depthwise_numpy as DW
from .._backend import jit
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install

_state = grad_mode._state
_make = Tensor._make


class Geometry:
    """Per spatial dim stride, dilation and padding (lo, hi), and the number of groups."""
    __slots__ = ("stride", "dilation", "lo", "hi", "groups")

    def __init__(self, stride, dilation, lo, hi, groups):
        self.stride = tuple(stride)
        self.dilation = tuple(dilation)
        self.lo = tuple(lo)
        self.hi = tuple(hi)
        self.groups = groups

    def out_size(self, spatial, kernel):
        return tuple(K.conv_out_size(s, k, st, d, a, b) for s, k, st, d, a, b in
                     zip(spatial, kernel, self.stride, self.dilation, self.lo, self.hi))


# ---- kernels (arrays in, arrays out) -----------------------------------------------------

def _opmath(*arrays):
    """Half-precision inputs compute in float32 (torch's opmath); others as they are."""
    return tuple(None if a is None else (a.astype(np.float32) if a.dtype.itemsize == 2 and a.dtype.kind in "fV"
                                         else a) for a in arrays)


def _is_depthwise(w, geo):
    return geo.groups > 1 and w.shape[1] == 1


def conv_forward(x, w, b, geo):
    """y[n, o] = sum over the group's channels and taps of w * x-windows, plus b[o]."""
    dtype = x.dtype
    x, w, b = _opmath(x, w, b)
    kernel = w.shape[2:]
    out = geo.out_size(x.shape[2:], kernel)
    if _is_depthwise(w, geo):
        y = _depthwise_forward(x, w, b, geo, out)
    elif _pointwise(x.shape, kernel, geo):
        y = _pointwise_forward(x, w, b, geo)
    elif (kind := _direct_kind(x, w.shape, out, geo, w)) is not None:
        y = _direct_forward(kind, x, w, b, geo)
    elif _rows(x, w.shape, out, geo):
        plan = CR.RowPlan(x.shape, kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out)
        y = K.from_channel_major(CR.conv(plan, x, w), x.shape[0], out, b, K.BATCH_LAST)
    elif _implicit(x, w.shape, out, geo):
        y = IM.forward(x, w, b, geo.dilation, geo.lo, geo.hi, geo.groups, geo.stride)
    else:
        n = x.shape[0]
        g = geo.groups
        layout = K.PER_SAMPLE if _per_sample(out) else _channel_major(out)
        cols = K.im2col(x, kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out, g, layout)
        y = K.matmul_split(w.reshape(g, w.shape[0] // g, -1), cols)
        if layout == K.PER_SAMPLE:
            y = _add_bias(y.reshape((n, w.shape[0]) + out), b)
        else:
            y = K.from_channel_major(y.reshape(w.shape[0], -1), n, out, b, layout)
    return y if y.dtype == dtype else y.astype(dtype)


def conv_input(y, w, geo, x_shape):
    """dT/dx: the gradient y (N, O, *out) carried back to an (N, C, *x_spatial) input."""
    dtype = y.dtype
    y, w = _opmath(y, w)
    kernel = w.shape[2:]
    out = y.shape[2:]
    if _is_depthwise(w, geo):
        x = _depthwise_input(y, w, geo, x_shape)
    elif _pointwise(y.shape, kernel, geo):
        x = _pointwise_input(y, w, geo, x_shape)
    elif (flipped := _flipped_plan(y, w, geo, x_shape)) is not None:
        fgeo, kind = flipped
        if kind == "lanes":  # packs the flipped weight from w in one pass
            x = jit.load("conv_lanes_jit").forward(y, w, None, fgeo.stride, fgeo.dilation, fgeo.lo, fgeo.hi, True)
        else:
            x = conv_forward(y, _flip_weight(w, geo.groups), None, fgeo)
    else:
        g = geo.groups
        wt = w.reshape(g, w.shape[0] // g, -1).transpose(0, 2, 1)
        yt = K.to_channel_major(y, g)
        cols = K.matmul_split(wt, yt, out=K.scratch((g, wt.shape[1], yt.shape[2]), yt.dtype))
        x = K.col2im(cols, x_shape, kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out)
    return x if x.dtype == dtype else x.astype(dtype)


# With stride 1 the input gradient is itself a convolution: of the gradient, padded by
# d*(k-1) - padding, with the kernel flipped and its in/out channels swapped per group. That is an
# im2col of the gradient and one GEMM, measured ~20% faster than the GEMM + col2im scatter
# (which remains for strided convolutions and for padding wider than the kernel). Not when the
# convolution widens the channels a lot: the flipped im2col is of the gradient, O/C times larger than
# the GEMM + col2im's matrix. Conv2d(3, 32, 5, padding=2) on 32x3x32x32: 4.1 ms GEMM + col2im vs
# 14.6-17.3 ms flipped; at 2x widening the two are even (32 -> 64 at 15x15: 11.1 vs 11.4 ms) and
# at 1.5x flipped wins (64 -> 96 at 7x7: 1.45 vs 3.2 ms).
_FLIP_MAX_WIDENING = 4

def _as_flipped_conv(kernel, geo):
    if any(s != 1 for s in geo.stride):
        return False
    for k, d, a, b in zip(kernel, geo.dilation, geo.lo, geo.hi):
        if not (0 <= a <= d * (k - 1) and 0 <= b <= d * (k - 1)):
            return False
    return True


def _flip_weight(w, groups):
    o, cg = w.shape[:2]
    nd = w.ndim - 2
    wg = w.reshape((groups, o // groups, cg) + w.shape[2:])
    flipped = np.flip(wg, axis=tuple(range(3, 3 + nd))).swapaxes(1, 2)
    return np.ascontiguousarray(flipped).reshape((groups * cg, o // groups) + w.shape[2:])


def _flipped_geometry(kernel, geo, y_spatial, x_spatial):
    """The flipped convolution's padding: d*(k-1) - padding before, and after whatever makes its output
    x_spatial long (d*(k-1) - padding, plus a transposed convolution's output_padding)."""
    lo = tuple(d * (k - 1) - a for k, d, a in zip(kernel, geo.dilation, geo.lo))
    hi = tuple(x - y - a + d * (k - 1) for x, y, a, k, d in zip(x_spatial, y_spatial, lo, kernel, geo.dilation))
    return Geometry(geo.stride, geo.dilation, lo, hi, geo.groups)


def conv_weight(x, y, geo, w_shape):
    """dT/dw: sum over batch and positions of y times the input windows, shaped like the weight."""
    dtype = y.dtype
    x, y = _opmath(x, y)
    kernel = w_shape[2:]
    out = y.shape[2:]
    if geo.groups > 1 and w_shape[1] == 1:
        w = _depthwise_weight(x, y, geo, w_shape)
    elif _pointwise(y.shape, kernel, geo):
        w = _pointwise_weight(x, y, geo, w_shape)
    elif (kind := _direct_kind(x, w_shape, out, geo, y, weight=True)) == "lanes":
        w = jit.load("conv_lanes_jit").weight(x, y, geo.stride, geo.dilation, geo.lo, geo.hi, w_shape)
    elif kind == "rows":
        w = jit.load("conv_direct_jit").weight(x, y, geo.lo, geo.hi, w_shape)
    elif _rows(x, w_shape, out, geo):
        plan = CR.RowPlan(x.shape, kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out)
        w = CR.weight(plan, x, K.to_channel_major(y, 1, K.BATCH_LAST).reshape(w_shape[0], -1), w_shape)
    elif _per_sample_weight(x, y, w_shape, geo):
        w = K.weight_per_sample(x, y, kernel, geo.stride, geo.dilation, geo.lo, geo.hi)
    else:
        g = geo.groups
        layout = _channel_major(out)
        yt = K.to_channel_major(y, g, layout)
        if layout == K.BATCH_LAST:  # one matrix; y @ cols^T is the weight's layout (Note [Weight-gradient GEMM])
            cols = K.im2col(x, kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out, g, layout)
            w = K.weight_gemm(yt, cols, w_shape)
        else:
            w = _weight_in_chunks(x, yt, geo, w_shape, out)
    return w if w.dtype == dtype else w.astype(dtype)


def _weight_in_chunks(x, yt, geo, w_shape, out):
    """The batch-second im2col weight gradient: chunks of samples (Note [Weight-gradient chunks]), each
    cols @ y^T with its reduction split across the threads, summed, then transposed to w_shape."""
    kernel = w_shape[2:]
    n = x.shape[0]
    positions = int(np.prod(out))
    per = max(1, min(n, WEIGHT_COLS_MAX // max(1, x.itemsize * x.shape[1] * int(np.prod(kernel)) * positions)))
    w = None
    for n0 in range(0, max(n, 1), per):  # one pass when the batch is empty
        n1 = min(n, n0 + per)
        cols = K.im2col(x[n0:n1], kernel, geo.stride, geo.dilation, geo.lo, geo.hi, out, geo.groups, K.BATCH_SECOND)
        # cols @ y^T, transposed after, measured faster than y @ cols^T for these long reductions
        part = K.matmul_reduce(cols, yt[:, :, n0 * positions:n1 * positions].transpose(0, 2, 1))
        if w is None:
            w = part
        else:
            w += part
    return K.swapped(w, w_shape)  # its own buffer, so autograd takes it as .grad as it is


# Note [Per-sample weight gradient]: the im2col weight gradient writes a matrix taps times the input
# (19 MB for a 16->16 3x3 layer at 32x32, batch 32) and reads it back from memory for one GEMM. With 256 or
# more output positions per sample, each sample's matrix (C * taps, positions: 590 KB there) is built and
# multiplied at once, the GEMMs accumulating (beta = 1, ember/_backend/cblas.py) and reading y's samples as
# they lie (no layout copy of y). 2-D, groups 1, after the row path. Medians of 15 alternating calls, 2
# threads, batch 32, float32, im2col -> per sample (ms, 2026-11-29, 2-core EPYC VM): 16->16 3x3 at 32x32
# 5.50 -> 4.68, 32->32 at 16x16 5.16 -> 3.60, 32->64 at 16x16 7.65 -> 6.04; best of 5, twice: 3->16 at
# 32x32 3.1 -> 1.8, 3->32 at 32x32 5.1-5.3 -> 2.3, 16->32 stride 2 at 32x32 4.5-5.2 -> 3.3-3.5, 3->32 5x5
# stride 2 at 64x64 7.4-7.8 -> 6.1-6.3. With 64 positions it lost (64->64 at 8x8 3.2-3.4 -> 4.2, 128->128
# at 8x8 10.3-10.6 -> 11.4-11.6: GEMMs too small), so fewer positions keep im2col, and so do 1x1 kernels
# (ResNet-8's strided shortcut 0.60 -> 0.68 ms). Inside training steps (medians of 10 alternating steps, the
# weight gradients' sum): ResNet-8 21.0 -> 19.1 ms; whole steps alternating, medians of 12: VGG 141.6 ->
# 125.3, AlexNet 121.9 -> 117.0, ResNet-8 even (117.3 / 121.2, 109.3 / 107.0). SAMPLE_WEIGHT_MODE "always"
# takes it for every 2-D groups-1 weight gradient cblas can run, "never" keeps im2col.
SAMPLE_WEIGHT_MODE = "auto"
_SAMPLE_WEIGHT_MIN_POSITIONS = 256


def _per_sample_weight(x, y, w_shape, geo):
    """Whether conv_weight takes the per-sample path (Note [Per-sample weight gradient])."""
    if (SAMPLE_WEIGHT_MODE == "never" or x.ndim != 4 or geo.groups != 1 or 0 in x.shape or 0 in y.shape
            or y.dtype != x.dtype or not cblas.available(x.dtype)):
        return False
    if SAMPLE_WEIGHT_MODE == "always":
        return True
    return w_shape[2] * w_shape[3] > 1 and int(np.prod(y.shape[2:])) >= _SAMPLE_WEIGHT_MIN_POSITIONS


# Note [Weight-gradient GEMM]: the im2col weight gradient is one GEMM of y (O, N * positions) with the im2col
# matrix (C * taps, N * positions) over their long common axis. In the batch-last layout (few positions a
# sample) it is y @ cols^T at OpenBLAS's own threads, written straight into a weight-shaped array; in the
# batch-second layout (many positions, in chunks) cols @ y^T, its reduction split across the intra-op threads
# (matmul_reduce) and transposed after (swapped). At 4x4 and smaller the transposition of a 2304x256 product
# took 2.5 ms, and the split's partial sums more. Weight gradient, batch 32, float32, 3x3 padding 1, 2 threads,
# medians of 12 alternating pairs (ms, 2026-11-30, 2-core EPYC VM), cols @ y^T + split + transpose -> y @
# cols^T: 256->256 at 4x4 11.9 -> 8.0 (torch 11.0), 128->256 at 4x4 5.7 -> 4.3 (torch 5.5), 64->64 at 6x6 2.3
# -> 2.0, 512->512 at 2x2 26.5 -> 9.6; with the direct kernels off (DIRECT_MODE "never"), 128->128 at 8x8 12.3
# -> 11.5, 96->96 at 7x7 6.6 -> 5.8, 64->64 at 16x16 12.9 -> 12.6. Batch-second shapes lost that way (16->16 at
# 32x32 7.1 -> 7.3, 32->32 at 32x32 14.8 -> 16.4, 32->64 at 32x32 24.5 -> 26.2), so they keep cols @ y^T.


# Note [Weight-gradient chunks]: the weight gradient's im2col matrix is taps times the input (19 MB for a
# 16->16 3x3 layer at 32x32, batch 32), and conv_numpy's scratch buffer keeps the largest one for the
# process. In the channel-major layout whose columns run over (sample, position), the samples come in
# chunks whose matrix stays under WEIGHT_COLS_MAX, each chunk's GEMM added to the last (the sum over the
# batch in a few pieces: the same terms, added in another order).
WEIGHT_COLS_MAX = 1 << 22


# With many output positions per sample, the im2col matrix is built per sample, (N, C * taps, P):
# the GEMM then writes y in NCHW order (no layout copy of the output) and a sample's matrix, about
# the size of the L2 cache, is still there when its GEMM reads it. Forward of Conv2d(16, 16, 3,
# padding=1) on 32x16x32x32: 4.0 ms vs 6.6 ms channel-major (its input gradient, the same path:
# 4.1 vs 6.0 ms); at 16x16 it is even and at 8x8 channel-major wins (2.2 vs 3.0 ms: the per-sample
# GEMMs are too small). The weight gradient stays channel-major: per-sample GEMMs with a long
# reduction and a sum over samples measured 6.4 vs 4.2 ms.
_PER_SAMPLE_MIN_POSITIONS = 1024


def _per_sample(out):
    return int(np.prod(out)) >= _PER_SAMPLE_MIN_POSITIONS


# Few output positions per sample: the channel-major im2col's columns run over (position, batch), so
# that each tap copies runs of out[-1] * N contiguous elements rather than out[-1]. Forward, input
# and weight gradient of Conv2d(64, 64, 3, padding=1) on 32x64x8x8: 3.1/3.2/3.1 ms vs 6.5/6.8/5.9
# batch-second; Conv2d(32, 32, 3) at 16x16: 5.0/4.9/4.9 vs 9.6/9.7/6.6; at 24x24 batch-second
# is ahead (2.0/2.0/2.2 vs 2.5/3.1/3.1).
_BATCH_LAST_MAX_POSITIONS = 256


def _channel_major(out):
    """The channel-major im2col layout for out positions per sample."""
    return K.BATCH_LAST if int(np.prod(out)) <= _BATCH_LAST_MAX_POSITIONS else K.BATCH_SECOND


# Convolutions run as implicit GEMMs (Note [Implicit GEMM], ember/_backend/conv_implicit.py):
# no padded copy, no im2col copy, one BLAS call per tap accumulating into the output; the forward and,
# through the flipped convolution, the input gradient. Conv2d 3x3 padding 1, batch 32, float32,
# forward / input gradient, im2col -> implicit (ms), wall time at 2 threads on an idle Xeon (OpenBLAS
# SkylakeX kernel) and CPU time at 1 thread on the loaded 2-core EPYC (Haswell kernel):
#                      2 threads, idle Xeon                    1 thread CPU time, EPYC
#   16->16 at 32x32    6.0 -> 3.6 / 5.6 -> 3.6                  7.4 -> 6.2 / 7.4 -> 5.6
#   32->32 at 32x32    12.5 -> 8.4 / 12.6 -> 8.4                18.2 -> 17.7 / 18.1 -> 15.7
#   64->64 at 32x32    32.0 -> 20.9 / 32.0 -> 21.2              48.4 -> 46.6 / 52.2 -> 44.9
#   16->32 at 32x32    7.0 -> 5.7 / 11.5 -> 5.7                 7.3 -> 8.1 / 11.7 -> 10.6
#   32->32 at 16x16    3.7 -> 3.1 / 3.3 -> 3.1                  5.9 -> 3.8 / 4.8 -> 3.6
#   16->32 at 16x16    2.2 -> 2.0 / 2.6 -> 2.1                  2.6 -> 2.3 / 3.6 -> 2.4
#   64->64 at 8x8      2.7 -> 2.7 / 2.4 -> 2.8                  4.1 -> 4.9 / 4.3 -> 5.3
#   3->16 at 32x32                                              1.8 -> 2.9 (a 3-long reduction per tap)
# so: from 16 channels per group in (K per tap) up to 64 in and out (wider is unmeasured), from 256
# output positions per sample (below, the padding positions it computes and drops cost more than the
# copies saved). Strided forwards split the input into phases (Note [Strided implicit GEMM]) and take the
# path from 64 output positions per sample (ResNet's downsampling 3x3 layers; the figures in the note).
# Whole ResNet-8 steps, strided forwards on phases vs im2col, alternating in one process (medians of 14-16):
# 2 threads 99.8 -> 94.9 and 91.5 -> 88.1 ms, 1 thread 114.9 -> 112.0 (87.9 -> 91.8 in a 10-round run).
# IMPLICIT_MODE "always" takes it for every convolution it can run (float32/float64 with NumPy's OpenBLAS
# found), "never" keeps im2col (the tests force both).
IMPLICIT_MODE = "auto"
_IMPLICIT_CHANNELS = (16, 64)
_IMPLICIT_MIN_POSITIONS = 256
_IMPLICIT_MIN_POSITIONS_STRIDED = 64


def _implicit(x, w_shape, out, geo):
    """Whether the convolution of x with a weight of w_shape takes the implicit-GEMM path."""
    if IMPLICIT_MODE == "never" or x.shape[0] == 0 or not cblas.available(x.dtype):
        return False
    if IMPLICIT_MODE == "always":
        return True
    lo, hi = _IMPLICIT_CHANNELS
    strided = any(s != 1 for s in geo.stride)
    return (lo <= w_shape[1] <= hi and w_shape[0] // geo.groups <= hi
            and int(np.prod(out)) >= (_IMPLICIT_MIN_POSITIONS_STRIDED if strided else _IMPLICIT_MIN_POSITIONS))


# 2-D convolutions of groups 1 with kernels of 5x5 and more, and those _implicit leaves (wide channels,
# few positions), copy the input kw times instead of kh * kw (Note [Row im2col],
# ember/_backend/conv_rows.py): kh GEMMs with K = C * kw accumulate. CPU time at 1 thread, batch 32,
# float32, medians of 15-21 alternating pairs, forward / input gradient / weight gradient (ms):
#   im2col -> rows
#     32->64 5x5 at 15x15 (AlexNet)      16.2 -> 15.2 / 17.6 -> 14.7 / 14.4 -> 13.1
#     64->96, 96->96, 96->64 3x3 at 7x7  even (0.91-1.03x: M = 1568 is short)
#     16->32, 32->64 3x3 stride 2 at 32x32, 16x16  even to 1.06x slower
#     3->32 5x5 stride 2 at 64x64        4.7 -> 8.4 / - / 5.8 -> 10.4 (K = 15: too narrow)
#   implicit GEMM (forward, input gradient; the weight gradient im2col) -> rows
#     32->64 5x5 at 32x32                0.82x / 0.90x / 0.98x
#     16->32 5x5 at 32x32                0.85x / 0.86x / 1.07x
#     64->64 5x5 at 16x16                0.66x / 0.67x / 0.87x
#     32->32 7x7 at 32x32                0.65x / 0.62x / 0.75x
#     64->64, 16->16 3x3 at 32x32        1.12x / 1.05x / 1.14x, 1.34x / 1.42x / 1.23x (implicit stays)
# so: stride 1, K = C * kw >= 48, 100 output positions per sample, and a kernel of >= 25 taps or one the
# implicit GEMM does not take (IMPLICIT_MODE "always" keeps its own). ROWS_MODE "always" takes it for every
# 2-D convolution of groups 1 (strided too), "never" keeps the other paths (the tests force both).
ROWS_MODE = "auto"
_ROWS_MIN_K = 48
_ROWS_MIN_POSITIONS = 100
_ROWS_OVER_IMPLICIT_TAPS = 25


def _rows(x, w_shape, out, geo):
    """Whether the 2-D convolution of x with a weight of w_shape takes the row-im2col path."""
    if ROWS_MODE == "never" or x.ndim != 4 or geo.groups != 1 or 0 in x.shape[:2] or 0 in w_shape or 0 in out:
        return False
    if ROWS_MODE == "always":
        return True
    if (IMPLICIT_MODE == "always" or any(s != 1 for s in geo.stride) or w_shape[1] * w_shape[3] < _ROWS_MIN_K
            or out[0] * out[1] < _ROWS_MIN_POSITIONS):
        return False
    return w_shape[2] * w_shape[3] >= _ROWS_OVER_IMPLICIT_TAPS or not _implicit(x, w_shape, out, geo)


# 2-D float32 convolutions of groups 1 with a kernel wider than 1x1 run as compiled direct loops with ember[jit]:
# no im2col, no GEMM; their stride-1 input gradients too (the flipped form above, whatever its widening: no im2col
# of the gradient is made). Two kernels:
# - "rows" (Note [Direct convolution], ember/_backend/conv_direct_jit.py): stride 1, tiles of 4 output channels x
#   16 columns of an output row, so it wastes the columns past a multiple of 8; forwards from 16 output columns.
#   Forward, batch 32, 3x3 padding 1, alternating with the GEMM paths and torch in one process, medians of 3x7
#   calls, 2 threads (ms, 2026-11-29, 2-core EPYC VM), GEMM paths -> rows (torch): 3->16 at 32x32 1.17 -> 0.46
#   (0.54), 16->16 at 32x32 4.01 -> 2.73 (2.56), 32->32 at 16x16 3.02 -> 1.98 (1.60), 16->32 at 32x32 5.45 -> 3.06
#   (2.98), 32->64 at 16x16 4.65 -> 4.07 (2.87), 64->128 at 16x16 16.5 -> 11.3 (10.7).
# - "lanes" (Notes [Direct weight gradient] and [Direct strided forward], ember/_backend/conv_lanes_jit.py): tiles
#   of 16 output channels x 6 positions (forward) or 6 taps (weight gradient), any stride and dilation; forwards
#   from 16 output positions a sample, weight gradients from 49. Forward, rows or GEMM paths -> lanes (torch):
#   16->32 stride 2 at 32x32 2.37 -> 1.27 (0.94), 32->64 stride 2 at 16x16 2.05 -> 1.15 (0.96), 3->32 5x5 stride 2
#   at 64x64 4.05 -> 3.23 (1.50), 64->96 at 7x7 3.10 -> 2.06 (2.15), 96->96 at 7x7 4.32 -> 2.94 (3.03), 32->64 5x5
#   at 15x15 7.15 -> 6.48 (5.48), 64->64 at 8x8 even (1.99 / 1.93), 4x4 outputs (once a block's weights stayed in
#   cache across the tiles) 128->256 3.28 -> 3.22 (3.41), 256->256 6.30 -> 6.07 (6.77), their input gradients
#   5.11 -> 4.30 and 7.41 -> 7.19; 16->16 at 32x32 lost (1.91 -> 3.01). Writing NCHW from the tile instead of
#   channels-last + a transposed copy, with bias, ms: 3->32 5x5 stride 2 at 64x64 4.36 -> 3.62 (torch 1.65),
#   32->64 5x5 at 15x15 6.83 -> 6.30 (5.49), 16->32 stride 2 1.48 -> 1.20 (0.91), the 7x7 and 8x8 layers even.
#   Then channels-last again, moved to NCHW by 8 x 8 register transposes while in cache (the earlier copy was
#   NumPy's strided one): 3->32 5x5 stride 2 3.30 -> 2.22 (1.56), 64->96 at 7x7 2.19 -> 2.05 (1.99); AlexNet's
#   step 84.9 -> 76.8 ms and VGG's 127.8 -> 118.5 with the weight gradient's transposition below.
#   Weight gradient, from 16 input channels, ms, previous path -> lanes (torch): 16->16 at 32x32 2.73 -> 2.33
#   (1.89), 16->32 stride 2 at 32x32 3.18 -> 1.40 (1.23), 32->32 at 16x16 3.35 -> 1.98 (1.62), 32->64 stride 2
#   1.50 -> 1.21 (0.95), 64->64 at 8x8 1.76 -> 1.34 (1.30), 96->96 at 7x7 3.94 -> 3.32 (2.89) (and faster at
#   7x7 and smaller since, Note [Direct weight gradient]); with 3 input
#   channels it lost at stride 1 (3->16 at 32x32 0.66 -> 1.42: 27 taps in 5 tiles for 2 threads; 3->32 1.12 ->
#   3.29) but won strided, where the rows kernel cannot go (AlexNet's 3->32 5x5 stride 2 at 64x64 5.36 -> 4.24,
#   torch 2.31), so fewer than 16 channels take it only strided or dilated; at 4x4 it lost too (128->256 4.57
#   -> 6.28; the flat loop since: 4.10 against 4.18, even; VGG's step 105.9 ms with the threshold at 49, 109.7 at
#   16, so it stays at 49). Whole steps, alternating in one process, medians of 8x3: ResNet-8 71.9 -> 68.2 ms,
#   VGG 132.0 -> 121.1.
#   Narrower inputs at stride 1 take the rows kernel's weight tiles, which sum over output columns in vectors, each
#   ending in horizontal sums: from 25 output columns, GEMM paths -> rows (torch): 3->16 at 32x32 1.46 -> 0.73
#   (0.50); narrower they lost (64->64 at 8x8 2.27 -> 4.42, 32->64 5x5 at 15x15 11.5 -> 14.7).
# DIRECT_MODE "rows" / "lanes" takes that kernel wherever it can run, "never" keeps the GEMM paths (the tests force
# each).
DIRECT_MODE = "auto"
_ROWS_MIN_WIDTH = 16
_ROWS_WEIGHT_MIN_WIDTH = 25
_LANES_MIN_POSITIONS = 16
_LANES_WEIGHT_MIN_POSITIONS = 49
_LANES_WEIGHT_MIN_CHANNELS = 16


def _direct_kind(x, w_shape, out, geo, other, weight=False):
    """Which direct kernel takes the convolution of x (N, C, H, W) with a weight of w_shape and out positions (its
    forward, or with weight=True its weight gradient): "rows", "lanes" or None (the GEMM paths). x and other (the
    weight or the output gradient) must be float32, and ember[jit] there."""
    if (DIRECT_MODE == "never" or x.ndim != 4 or geo.groups != 1 or x.dtype != np.float32
            or other.dtype != np.float32 or 0 in x.shape or 0 in w_shape or 0 in out or w_shape[2] * w_shape[3] == 1
            or min(geo.lo + geo.hi) < 0):
        return None
    unit = all(s == 1 for s in geo.stride) and all(d == 1 for d in geo.dilation)
    positions = out[0] * out[1]
    if DIRECT_MODE == "rows":
        kind = "rows" if unit else None
    elif DIRECT_MODE == "lanes":
        kind = "lanes"
    elif weight:
        lanes = (x.shape[1] >= _LANES_WEIGHT_MIN_CHANNELS or not unit) and positions >= _LANES_WEIGHT_MIN_POSITIONS
        kind = "lanes" if lanes else "rows" if unit and out[1] >= _ROWS_WEIGHT_MIN_WIDTH else None
    else:
        kind = ("rows" if unit and out[1] >= _ROWS_MIN_WIDTH
                else "lanes" if positions >= _LANES_MIN_POSITIONS else None)
    if kind is None or jit.load("conv_direct_jit" if kind == "rows" else "conv_lanes_jit") is None:
        return None
    # under NUMBA_DISABLE_JIT=1 (the compiled kernels run as Python) the tiles, LLVM IR, cannot run: GEMM paths
    return None if jit.load("conv_direct_jit").DISABLED else kind


def _direct_forward(kind, x, w, b, geo):
    if kind == "rows":
        return jit.load("conv_direct_jit").forward(x, w, b, geo.lo, geo.hi)
    return jit.load("conv_lanes_jit").forward(x, w, b, geo.stride, geo.dilation, geo.lo, geo.hi)


def _flipped_plan(y, w, geo, x_shape):
    """(geometry, direct kernel "rows" / "lanes" or None) of the flipped convolution that gives a stride-1 input
    gradient, when that path is taken: with a direct kernel whatever the widening, else below _FLIP_MAX_WIDENING;
    None for the GEMM + col2im path."""
    kernel = w.shape[2:]
    if not _as_flipped_conv(kernel, geo):
        return None
    fgeo = _flipped_geometry(kernel, geo, y.shape[2:], x_shape[2:])
    kind = None if geo.groups != 1 else _direct_kind(y, (w.shape[1], w.shape[0]) + kernel, x_shape[2:], fgeo, w)
    if kind is None and w.shape[0] // geo.groups >= _FLIP_MAX_WIDENING * w.shape[1]:
        return None
    return fgeo, kind


def _add_bias(y, b):
    """y (N, O, *S) += b (O,) in place (y is a fresh result); y when b is None."""
    if b is not None:
        y += b.reshape((-1,) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return y


# A 1x1 convolution without padding (groups 1) is a GEMM per sample over (C, positions) planes,
# which are already the rows of NCHW memory: W (O, C) @ x[n] (C, P) gives y[n] in place, so the
# layout copies of the im2col path (channel-major input, output back to NCHW) disappear. Stride s
# reads every s-th position first. Used when a sample has enough positions for its GEMM to be
# efficient; below that, one channel-major GEMM over the whole batch is faster.
_POINTWISE_MIN_POSITIONS = 16


def _pointwise(shape, kernel, geo):
    """Whether shape (N, C or O, *out) takes the per-sample GEMM path of a 1x1 convolution."""
    return (geo.groups == 1 and all(k == 1 for k in kernel) and not any(geo.lo) and not any(geo.hi)
            and int(np.prod(shape[2:])) >= _POINTWISE_MIN_POSITIONS)


def _read(out, stride):
    """Index of the input positions a 1x1 convolution with out positions reads: every s-th from 0."""
    return (slice(None), slice(None)) + tuple(slice(0, (p - 1) * s + 1, s) for p, s in zip(out, stride))


def _pointwise_forward(x, w, b, geo):
    xs = x[_read(geo.out_size(x.shape[2:], w.shape[2:]), geo.stride)]
    n, c = xs.shape[:2]
    y = K.matmul_split(w.reshape(w.shape[0], c), B.contiguous(xs).reshape(n, c, -1))
    return _add_bias(y, b).reshape((n, w.shape[0]) + xs.shape[2:])


def _pointwise_input(y, w, geo, x_shape):
    n, o = y.shape[:2]
    gx = K.matmul_split(w.reshape(o, -1).T, B.contiguous(y).reshape(n, o, -1))
    gx = gx.reshape((n, gx.shape[1]) + y.shape[2:])
    if gx.shape == tuple(x_shape):
        return gx
    # the positions not read (stride gaps, a transposed convolution's output_padding) get no gradient
    full = np.zeros(x_shape, dtype=gx.dtype)
    full[_read(y.shape[2:], geo.stride)] = gx
    return full


def _pointwise_weight(x, y, geo, w_shape):
    xs = B.contiguous(x[_read(y.shape[2:], geo.stride)])
    n, c = xs.shape[:2]
    y3 = B.contiguous(y).reshape(n, y.shape[1], -1)
    return K.matmul_sum(y3, xs.reshape(n, c, -1).transpose(0, 2, 1)).reshape(w_shape)


def _depthwise_plan(x_shape, w_shape, geo):
    mult = w_shape[0] // x_shape[1]
    return DW.DepthwisePlan(x_shape, w_shape[2:], geo.stride, geo.dilation, geo.lo, geo.hi, mult)


# See Note [Depthwise phases kept] (ember/_backend/depthwise_numpy.py); False turns it off (tests
# compare both paths).
KEEP_DEPTHWISE_PHASES = True


def _keeps_phases(x, w, geo):
    return (KEEP_DEPTHWISE_PHASES and _is_depthwise(w, geo) and x.dtype in _KEEP_DTYPES
            and _depthwise_kernels(x) is None)


_KEEP_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _depthwise_kernels(x, x_shape=None):
    """The compiled 2-D depthwise kernels (ember/_backend/depthwise_jit.py, Note [JIT kernels]) for the convolution
    of x (of x_shape when given), or None: a 2-D float32/float64 convolution of planes at least
    _JIT_MIN_WIDTH wide, with ember[jit] installed and the switch on."""
    shape = x.shape if x_shape is None else x_shape
    if len(shape) != 4 or x.dtype not in jit.DTYPES or shape[-1] < _JIT_MIN_WIDTH:
        return None
    return jit.load("depthwise_jit")


_JIT_MIN_WIDTH = 8


def _depthwise_forward(x, w, b, geo, out):
    kernels = _depthwise_kernels(x)
    if kernels is not None:
        return kernels.forward(x, w, b, geo.stride, geo.lo, geo.dilation, out)
    return _depthwise_plan(x.shape, w.shape, geo).forward(x, w, b)


def _depthwise_input(y, w, geo, x_shape):
    kernels = _depthwise_kernels(y, x_shape)
    if kernels is not None:
        return kernels.input_grad(y, w, geo.stride, geo.lo, geo.dilation, x_shape)
    return _depthwise_plan(x_shape, w.shape, geo).input_grad(y, w)


def _depthwise_weight(x, y, geo, w_shape):
    kernels = _depthwise_kernels(x)
    if kernels is not None:
        return kernels.weight_grad(x, y, geo.stride, geo.lo, geo.dilation, w_shape)
    return _depthwise_plan(x.shape, w_shape, geo).weight_grad(x, y, w_shape)


# ---- ops -------------------------------------------------------------------------------

def _conj(saved):
    """Complex gradients pair with the conjugate of the other factor (torch's convention); real
    tensors are returned as they are."""
    return tuple(t.conj() for t in saved)


class BiasGrad(Op):
    """The bias gradient: grad summed over batch and positions. src (the weight, not read) is an input so
    that, as in torch's convolution backward, the result requires grad when the weight does."""
    _name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, g, src):
        ctx.shape = g.shape
        axes = (0,) + tuple(range(2, g.ndim))
        if g.dtype.itemsize == 2 and g.dtype.kind in "fV":
            return g.sum(axis=axes, dtype=np.float32).astype(g.dtype)  # half: accumulate in float32
        return g.sum(axis=axes)

    def backward(ctx, grad):
        shape = ctx.shape
        return grad.reshape((1, -1) + (1,) * (len(shape) - 2)).expand(shape), None


def _sum_bias(grad, w):
    return BiasGrad.apply(grad, w)


class Convolution(Op):
    """y = conv(x, w) + b."""
    _name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, geo, keep_phases=False):
        ctx.geo = geo
        if x.shape[1] == 0:  # no input channels: torch's output has no channels either, and no bias added
            ctx.empty = (x, w, b)
            return np.zeros((x.shape[0], 0) + geo.out_size(x.shape[2:], w.shape[2:]), dtype=x.dtype)
        if keep_phases and _keeps_phases(x, w, geo):
            y, src = _depthwise_plan(x.shape, w.shape, geo).forward(x, w, b, keep=True)
            ctx.save_for_backward(x, w, src)
            return y
        ctx.save_for_backward(x, w)
        return conv_forward(x, w, b, geo)

    def backward(ctx, grad):
        if hasattr(ctx, "empty"):  # zero gradients, bias included (torch's empty-input convolution)
            return tuple(None if a is None or not need else _make(np.zeros_like(a))
                         for a, need in zip(ctx.empty, ctx.needs_input_grad))
        saved = ctx.saved_tensors
        x, w = _conj(saved[:2])
        need = ctx.needs_input_grad
        geo = ctx.geo
        if len(saved) == 3 and need[1] and not _state.enabled:  # first order: one depthwise kernel
            gx, gw = _depthwise_plan(x._data.shape, w._data.shape, geo).backward(
                saved[2]._data, grad._data, w._data, need[0], x._data)
            return (None if gx is None else _make(gx), _make(gw), _sum_bias(grad, w) if need[2] else None)
        if not _state.enabled and (need[0] or need[1]) and _is_depthwise(w._data, geo):
            kernels = _depthwise_kernels(x._data)
            if kernels is not None:  # first order, compiled: both gradients in one pass over each channel
                gx, gw = kernels.backward(x._data, grad._data, w._data, geo.stride, geo.lo, geo.dilation,
                                          x._data.shape, need[0], need[1])
                return (None if gx is None else _make(gx), None if gw is None else _make(gw),
                        _sum_bias(grad, w) if need[2] else None)
        gx = ConvInputGrad.apply(grad, w, geo=geo, x_shape=x._data.shape) if need[0] else None
        gw = ConvWeightGrad.apply(x, grad, geo=geo, w_shape=w._data.shape) if need[1] else None
        gb = _sum_bias(grad, w) if need[2] else None
        return gx, gw, gb


def _conv_as(like, x, w, geo):
    """conv(x, w) cropped to like's positions: x shaped like a transposed convolution's output has
    output_padding positions at the end (where stride 1 does not absorb them: dilation > 1) that
    produce extra outputs."""
    y = Convolution.apply(x, w, None, geo=geo)
    want = like._data.shape[2:]
    if y._data.shape[2:] == want:
        return y
    return y[(slice(None), slice(None)) + tuple(slice(0, n) for n in want)]


class ConvInputGrad(Op):
    """x' = conv_input(y, w): linear in y (adjoint of conv in x) and in w."""
    _name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, y, w, geo, x_shape):
        ctx.save_for_backward(y, w)
        ctx.geo = geo
        return conv_input(y, w, geo, x_shape)

    def backward(ctx, grad):
        y, w = _conj(ctx.saved_tensors)
        need = ctx.needs_input_grad
        geo = ctx.geo
        gy = _conv_as(y, grad, w, geo) if need[0] else None
        gw = ConvWeightGrad.apply(grad, y, geo=geo, w_shape=w._data.shape) if need[1] else None
        return gy, gw


class ConvWeightGrad(Op):
    """w' = conv_weight(x, y): linear in x and in y."""
    _name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, y, geo, w_shape):
        ctx.save_for_backward(x, y)
        ctx.geo = geo
        return conv_weight(x, y, geo, w_shape)

    def backward(ctx, grad):
        x, y = _conj(ctx.saved_tensors)
        need = ctx.needs_input_grad
        geo = ctx.geo
        gx = ConvInputGrad.apply(y, grad, geo=geo, x_shape=x._data.shape) if need[0] else None
        gy = _conv_as(y, x, grad, geo) if need[1] else None
        return gx, gy


class ConvTranspose(Op):
    """x = conv_input(y, w) + b: the transposed convolution."""
    _name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, y, w, b, geo, x_shape):
        ctx.save_for_backward(y, w)
        ctx.geo = geo
        return _add_bias(conv_input(y, w, geo, x_shape), b)

    def backward(ctx, grad):
        y, w = _conj(ctx.saved_tensors)
        need = ctx.needs_input_grad
        geo = ctx.geo
        gy = _conv_as(y, grad, w, geo) if need[0] else None
        gw = ConvWeightGrad.apply(grad, y, geo=geo, w_shape=w._data.shape) if need[1] else None
        gb = _sum_bias(grad, w) if need[2] else None
        return gy, gw, gb


# ---- argument checking (torch's messages) ------------------------------------------------

_TENSOR_TYPE = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                "bfloat16": "torch.BFloat16Tensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                "complex64": "torch.ComplexFloatTensor", "complex128": "torch.ComplexDoubleTensor",
                "bool": "torch.BoolTensor", "uint16": "torch.UInt16Tensor", "uint32": "torch.UInt32Tensor",
                "uint64": "torch.UInt64Tensor"}


def _ints(value, n, what, fname):
    """An int or a sequence of ints expanded to n ints (a one-element sequence is repeated)."""
    if isinstance(value, bool) or not isinstance(value, (int, tuple, list, np.integer)):
        raise TypeError(f"{fname}(): argument '{what}' must be tuple of ints, not {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    items = tuple(value)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{fname}(): argument '{what}' must be tuple of ints, but found element of type "
                            f"{type(v).__name__} at pos {items.index(v)}")
    items = tuple(int(v) for v in items)
    return items * n if len(items) == 1 else items


def _check_len(values, n, what):
    if len(values) != n:
        raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {what}={list(values)}")


def _size(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _check_tensors(fname, input, weight, bias):
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{fname}(): argument 'bias' must be Tensor, not {type(bias).__name__}")


def _check_dtypes(input, weight, bias):
    di = input.dtype.name
    dw = weight.dtype.name
    if di == "bool":
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    if di != dw:
        if input._dtype.itemsize < weight._dtype.itemsize or input._dtype.category < weight._dtype.category:
            raise RuntimeError(f"Input type ({_TENSOR_TYPE[di]}) and weight type ({_TENSOR_TYPE[dw]}) should be the "
                               "same or input should be a MKLDNN tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {D.SCALAR_NAMES[input._dtype]} but found {D.SCALAR_NAMES[weight._dtype]}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({D.C_TYPE_NAMES[input._dtype]}) and bias type ({D.C_TYPE_NAMES[bias._dtype]}) should be the same")


def _check_params(stride, padding, dilation, groups, output_padding=None):
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_weight_groups(weight, groups):
    ws = weight.shape
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {_size(ws)} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{_size(ws)}] instead")


def _prepare(fname, nd, input, weight, bias):
    """Type/rank checks shared by conv and conv_transpose; returns (input, batched)."""
    _check_tensors(fname, input, weight, bias)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fname}, but got input "
                           f"of size: {_size(input.shape)}")
    batched = input.dim() == nd + 2
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    return (input if batched else input.unsqueeze(0)), batched


def _check_rank(input, weight):
    if weight.dim() != input.dim():
        wd = weight.dim()
        raise RuntimeError(f"Expected {wd}-dimensional input for {wd}-dimensional weight {_size(weight.shape)}, but "
                           f"got {input.dim()}-dimensional input of size {_size(input.shape)} instead")


def _same_padding(kernel, dilation, fname):
    """(lo, hi) of padding='same': the total d*(k-1) split with the extra element on the right."""
    lo, hi = [], []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        lo.append(total // 2)
        hi.append(total - total // 2)
    if lo != hi:
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded "
                      "copy of the input be created", UserWarning, stacklevel=4)
    return tuple(lo), tuple(hi)


# ---- public functions ------------------------------------------------------------------

def _convnd(fname, nd, input, weight, bias, stride, padding, dilation, groups):
    x, batched = _prepare(fname, nd, input, weight, bias)
    stride = _ints(stride, nd, "stride", fname)
    dilation = _ints(dilation, nd, "dilation", fname)
    kd = weight.dim() - 2
    _check_len(stride, kd, "stride")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * kd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _ints(padding, nd, "padding", fname)
        _check_len(padding, kd, "padding")
    _check_len(dilation, kd, "dilation")
    _check_params(stride, padding if not isinstance(padding, str) else (0,), dilation, groups)
    _check_rank(x, weight)
    _check_weight_groups(weight, groups)
    ws = tuple(weight.shape)
    if x.shape[1] != ws[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {_size(ws)}, expected input{_size(x.shape)} to "
                           f"have {ws[1] * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != ws[0]):
        raise RuntimeError(f"Given weight of size {_size(ws)}, expected bias to be 1-dimensional with {ws[0]} "
                           f"elements, but got bias of size {_size(bias.shape)} instead")
    kernel = ws[2:]
    if isinstance(padding, str):
        lo, hi = _same_padding(kernel, dilation, fname)
    else:
        lo = hi = padding
    spatial = x.shape[2:]
    padded = [s + a + b for s, a, b in zip(spatial, lo, hi)]
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < e for p, e in zip(padded, extent)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, extent))}). Kernel size can't be greater than actual input "
                           "size")
    _check_dtypes(x, weight, bias)
    out = Convolution.apply(x, weight, bias, geo=Geometry(stride, dilation, lo, hi, groups),
                            keep_phases=groups > 1 and weight._requires_grad and _state.enabled)
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv1d.html"""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html"""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv3d.html"""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


_DIM_NAMES = {1: ("height", "width"), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _check_output_padding(output_padding, stride, dilation):
    if all(p < s or p < d for p, s, d in zip(output_padding, stride, dilation)):
        return
    names = _DIM_NAMES[len(stride)]
    op, st, dl = list(output_padding), list(stride), list(dilation)
    if len(st) == 1:  # torch runs 1-d transposed convolutions as 2-d ones of height 1
        op, st, dl = [0] + op, [1] + st, [1] + dl
    parts = [f"output_padding_{n}: {v}" for n, v in zip(names, op)]
    parts += [f"stride_{n}: {v}" for n, v in zip(names, st)]
    parts += [f"dilation_{n}: {v}" for n, v in zip(names, dl)]
    raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))


def _conv_transposend(fname, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, batched = _prepare(fname, nd, input, weight, bias)
    stride = _ints(stride, nd, "stride", fname)
    padding = _ints(padding, nd, "padding", fname)
    output_padding = _ints(output_padding, nd, "output_padding", fname)
    dilation = _ints(dilation, nd, "dilation", fname)
    kd = weight.dim() - 2
    for name, v in (("stride", stride), ("padding", padding), ("output_padding", output_padding),
                    ("dilation", dilation)):
        _check_len(v, kd, name)
    _check_params(stride, padding, dilation, groups, output_padding)
    _check_output_padding(output_padding, stride, dilation)
    _check_rank(x, weight)
    _check_weight_groups(weight, groups)
    ws = tuple(weight.shape)
    if x.shape[1] != ws[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {_size(ws)}, expected input{_size(x.shape)} to have "
                           f"{ws[0]} channels, but got {x.shape[1]} channels instead")
    out_channels = ws[1] * groups
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"Given transposed=1, weight of size {_size(ws)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {_size(bias.shape)} instead")
    kernel = ws[2:]
    spatial = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                    zip(x.shape[2:], stride, padding, dilation, kernel, output_padding))
    # torch 2.13 on CPU: an empty output is refused by its native kernels (float64, float16, ...) but
    # returned by oneDNN, which takes float32 and complex64, and bfloat16 where the CPU runs it natively;
    # a negative size always raises
    empty_ok = x._dtype in (D.float32, D.complex64) or (x._dtype is D.bfloat16 and cpu_features.onednn_bf16())
    if any(s < 0 or (s == 0 and not empty_ok) for s in spatial):
        lead = (1,) if nd == 1 else ()  # torch runs 1-d as 2-d and reports the added dim
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, lead + spatial))}). Output size is too small")
    _check_dtypes(x, weight, bias)
    geo = Geometry(stride, dilation, padding, padding, groups)
    out = ConvTranspose.apply(x, weight, bias, geo=geo, x_shape=(x.shape[0], out_channels) + spatial)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv_transpose1d.html"""
    return _conv_transposend("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv_transpose2d.html"""
    return _conv_transposend("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.conv_transpose3d.html"""
    return _conv_transposend("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

for _fn in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d):
    install(_fn, _fn.__name__, method=False)
del _fn
