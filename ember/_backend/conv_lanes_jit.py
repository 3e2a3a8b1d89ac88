"""2-D float32 convolutions of groups 1 as compiled direct loops over output-channel vectors (numba): the weight
gradient, and the forward of strided or dilated convolutions.

Note [Direct weight gradient]: dw[o, c, kh, kw] = sum over samples n and output positions (h, j) of
g[n, o, h, j] * x[n, c, s h + d kh - lo, s j + d kw - lo]. The output gradient is copied once channels-last,
(N, OH, OW, O) with O rounded up to 16, so that at each position the gradients of 16 output channels are two
vector loads; a tile keeps 6 taps (c, kh, kw) x 16 output channels in 12 AVX2 registers and, per position,
broadcasts the 6 input values the taps read and makes 12 fused multiply-adds. The sum runs over every position,
so a tile needs no horizontal sums however narrow the output (the row-vector tiles of conv_direct_jit.py do, and
lose below 25 output columns), and stride and dilation only change which input values are broadcast. Samples run
outermost (in chunks of 256 output positions or more), each chunk's padded input and gradient staying in cache while every tile of the thread adds its
share into a (taps, O) accumulator; the threads take disjoint tiles. Like conv_direct_jit.py's tiles, this one is
a numba intrinsic emitting LLVM's <8 x float> vectors and llvm.fma (numba leaves such register tiles scalar).
Sums in float32, over samples then positions: to rounding against the GEMM paths (tests/test_conv_direct.py holds
it to torch).

Note [Direct strided forward]: the forward the same way round, y[n, h, j, o] = sum over taps t = (c, kh, kw) of
x[n, c, s h + d kh - lo, s j + d kw - lo] * w[o, t]: the weight packed (O / 16 blocks, taps, 16), a tile keeps 6
consecutive output positions (of the flat (n, h, j) order, across rows) x 16 output channels in 12 registers and
runs over every tap: two weight vectors and six broadcast input values per tap. The result is channels-last,
copied to (N, O, OH, OW) at the end. Stride and dilation only change the positions' and taps' input offsets, so
this serves the strided and dilated convolutions that conv_direct_jit.py's row tiles (stride 1) do not.
Loaded through jit.load("conv_lanes_jit") (Note [JIT kernels]).
"""
import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import parallel
from .vector_ir import LANES, Vectors

VECTORS = 2  # output-channel vectors per tile
TAPS = 6  # (c, kh, kw) taps per tile
WIDTH = LANES * VECTORS  # output channels per tile; the channels-last gradient's last dim is a multiple of it
POSITIONS = 256  # output positions a tile sums at least per call (samples permitting): its 24 loads and stores of
                 # the accumulator weigh little against them


def _make_tile():
    """An intrinsic tile(x, g, acc, S, xns, gns, OH, OW, xrs, xcs, grs, gps, o0, ..., o5): for t < TAPS and
    v < VECTORS, acc[t WIDTH + 8v : +8] += sum over s < S, h < OH, j < OW of
    x[s xns + h xrs + j xcs + o_t] * g[s gns + h grs + j gps + 8v : +8].
    x, g, acc are addresses of float32, the strides (sample, row, column / position) and tap offsets o_t in
    elements; acc's rows are WIDTH apart."""
    @intrinsic
    def tile(typingctx, x, g, acc, S, xns, gns, OH, OW, xrs, xcs, grs, gps, o0, o1, o2, o3, o4, o5):
        sig = types.void(types.uintp, types.uintp, types.uintp, *[types.int64] * 15)

        def codegen(context, builder, signature, args):
            x_, g_, acc_, S_, xns_, gns_, OH_, OW_, xrs_, xcs_, grs_, gps_ = args[:12]
            offsets = args[12:]
            vx = Vectors(builder)
            const = vx.const
            xb, gb, ab = (vx.floats(a) for a in (x_, g_, acc_))
            sums = vx.accumulators(TAPS, VECTORS)
            for t in range(TAPS):  # from the accumulator's running sums
                for v in range(VECTORS):
                    builder.store(vx.load_vector(ab, const(t * WIDTH + v * LANES)), sums[t][v])
            with cgutils.for_range(builder, S_) as s_loop, cgutils.for_range(builder, OH_) as h_loop:
                xh = builder.add(builder.mul(s_loop.index, xns_), builder.mul(h_loop.index, xrs_))
                gh = builder.add(builder.mul(s_loop.index, gns_), builder.mul(h_loop.index, grs_))
                with cgutils.for_range(builder, OW_) as j_loop:
                    xj = builder.add(xh, builder.mul(j_loop.index, xcs_))
                    gj = builder.add(gh, builder.mul(j_loop.index, gps_))
                    gs = [vx.load_vector(gb, builder.add(gj, const(v * LANES))) for v in range(VECTORS)]
                    for t in range(TAPS):
                        xv = vx.splat(vx.load(xb, builder.add(xj, offsets[t])))
                        for v in range(VECTORS):
                            vx.fma_into(sums[t][v], xv, gs[v])
            for t in range(TAPS):
                for v in range(VECTORS):
                    vx.store_vector(builder.load(sums[t][v]), ab, const(t * WIDTH + v * LANES))
            return context.get_dummy_value()
        return sig, codegen
    return tile


_TILE = _make_tile()


def _make_forward_tile():
    """An intrinsic ftile(x, w, y, taps, T, yps, p0, ..., p5): for k < 6 and v < VECTORS,
    y[k yps + 8v : +8] = sum over t < T of x[p_k + taps[t]] * w[t WIDTH + 8v : +8].
    x, w, y, taps are addresses (float32; taps int64), offsets and yps (y's row length) in elements."""
    @intrinsic
    def ftile(typingctx, x, w, y, taps, T, yps, p0, p1, p2, p3, p4, p5):
        sig = types.void(types.uintp, types.uintp, types.uintp, types.uintp, *[types.int64] * 8)

        def codegen(context, builder, signature, args):
            x_, w_, y_, taps_, T_, yps_ = args[:6]
            positions = args[6:]
            vx = Vectors(builder)
            const = vx.const
            xb, wb, yb = (vx.floats(a) for a in (x_, w_, y_))
            tb = vx.ints(taps_)
            sums = vx.accumulators(len(positions), VECTORS)
            with cgutils.for_range(builder, T_) as t_loop:
                tap = vx.load(tb, t_loop.index)
                wt = builder.mul(t_loop.index, const(WIDTH))
                ws = [vx.load_vector(wb, builder.add(wt, const(v * LANES))) for v in range(VECTORS)]
                for k, p in enumerate(positions):
                    xv = vx.splat(vx.load(xb, builder.add(p, tap)))
                    for v in range(VECTORS):
                        vx.fma_into(sums[k][v], xv, ws[v])
            for k in range(len(positions)):
                for v in range(VECTORS):
                    vx.store_vector(builder.load(sums[k][v]), yb, builder.add(builder.mul(const(k), yps_),
                                                                              const(v * LANES)))
            return context.get_dummy_value()
        return sig, codegen
    return ftile


_FORWARD_TILE = _make_forward_tile()
POSITIONS_PER_TILE = 6


@numba.njit(nogil=True, cache=True)
def _forward(xp, wt, taps, y, start, stop, OH, OW, sh, sw):
    """y (N OH OW, Op) channels-last: the output positions of the tiles start..stop-1 (tile i has flat positions
    6i..6i+5; past the last, the last again), every block of WIDTH output channels: xp (N, C, Hp, Wq) the padded
    input, wt (Op / WIDTH, T, WIDTH) the packed weight, taps (T,) each tap's element offset in a padded sample.
    Blocks of output channels run outermost, so that a block's weights (T x 64 bytes) stay in cache across the
    tiles (with the tiles outermost, 128->256 at 4x4 read the whole 1.2 MB weight for every 6 positions)."""
    C, Hp, Wq = xp.shape[1], xp.shape[2], xp.shape[3]
    blocks, T = wt.shape[0], wt.shape[1]
    Op = y.shape[1]
    total = xp.shape[0] * OH * OW  # y has spare rows past the last position
    xa, wa, ya, ta = xp.ctypes.data, wt.ctypes.data, y.ctypes.data, taps.ctypes.data
    per = OH * OW
    offs = np.empty((stop - start, POSITIONS_PER_TILE), np.int64)
    for i in range(start, stop):
        for k in range(POSITIONS_PER_TILE):
            q = min(i * POSITIONS_PER_TILE + k, total - 1)
            n, r = q // per, q % per
            offs[i - start, k] = ((n * C * Hp) + (r // OW) * sh) * Wq + (r % OW) * sw
    for blk in range(blocks):  # a short last tile computes the last position again into y's spare rows
        w_at = wa + 4 * blk * T * WIDTH
        for i in range(start, stop):
            o = offs[i - start]
            _FORWARD_TILE(xa, w_at, ya + 4 * (i * POSITIONS_PER_TILE * Op + blk * WIDTH), ta, T, Op,
                          o[0], o[1], o[2], o[3], o[4], o[5])


def forward(x, w, b, stride, dilation, lo, hi):
    """conv2d(x, w, b) of groups 1, any stride and dilation, padding lo, hi >= 0: (N, O, OH, OW) float32."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h + lo[0] + hi[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + lo[1] + hi[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    op = -(-o // WIDTH) * WIDTH
    xp = np.zeros((n, c, h + lo[0] + hi[0], wd + lo[1] + hi[1]), np.float32)
    xp[:, :, lo[0]:lo[0] + h, lo[1]:lo[1] + wd] = x
    taps = c * kh * kw
    cc, hh, ww = np.unravel_index(np.arange(taps), (c, kh, kw))
    offsets = ((cc * xp.shape[2] + hh * dilation[0]) * xp.shape[3] + ww * dilation[1]).astype(np.int64)
    wt = np.zeros((op, taps), np.float32)
    wt[:o] = w.reshape(o, taps)
    wt = np.ascontiguousarray(wt.reshape(op // WIDTH, WIDTH, taps).transpose(0, 2, 1))  # (blocks, taps, WIDTH)
    positions = n * oh * ow
    tiles = -(-positions // POSITIONS_PER_TILE)
    y = np.empty((tiles * POSITIONS_PER_TILE, op), np.float32)  # rows past the last position: scratch
    flops = 2 * positions * taps * op
    parallel.run_compiled(lambda a, z: _forward(xp, wt, offsets, y, a, z, oh, ow, stride[0], stride[1]), tiles, flops)
    out = y[:positions, :o].reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
    if b is not None:
        out = out + b.reshape(1, o, 1, 1)
    return np.ascontiguousarray(out)


@numba.njit(nogil=True, cache=True)
def _weight(xp, gt, acc, offsets, start, stop, sh, sw):
    """acc[group, block] (TAPS, WIDTH) += the weight gradient's share of taps group * TAPS.. and output channels
    block * WIDTH.., for the (group, block) pairs start..stop-1, numbered group * blocks + block: xp (N, C, Hp, Wq)
    the padded input, gt (N, OH, OW, Op) the channels-last output gradient, offsets (groups * TAPS,) each tap's
    element offset in a padded sample, sh / sw the stride. Samples come in chunks of POSITIONS output positions,
    the chunks outermost."""
    N, Hp, Wq = xp.shape[0], xp.shape[2], xp.shape[3]
    OH, OW, Op = gt.shape[1], gt.shape[2], gt.shape[3]
    blocks = Op // WIDTH
    xa, ga, aa = xp.ctypes.data, gt.ctypes.data, acc.ctypes.data
    xns, gns = xp.shape[1] * Hp * Wq, OH * OW * Op
    chunk = max(1, -(-POSITIONS // (OH * OW)))
    for n in range(0, N, chunk):
        S = min(chunk, N - n)
        for i in range(start, stop):
            grp, blk = i // blocks, i % blocks
            t = grp * TAPS
            _TILE(xa + 4 * n * xns, ga + 4 * (n * gns + blk * WIDTH), aa + 4 * ((grp * blocks + blk) * TAPS * WIDTH),
                  S, xns, gns, OH, OW, sh * Wq, sw, OW * Op, Op,
                  offsets[t], offsets[t + 1], offsets[t + 2], offsets[t + 3], offsets[t + 4], offsets[t + 5])


def weight(x, g, stride, dilation, lo, hi, w_shape):
    """The weight gradient of a 2-D convolution of groups 1: dw (O, C, KH, KW) float32 from the input x (N, C, H, W)
    and the output gradient g (N, O, OH, OW), any stride, dilation and padding lo, hi >= 0."""
    o, c, kh, kw = w_shape
    n, _, oh, ow = g.shape
    h, w = x.shape[2:]
    op = -(-o // WIDTH) * WIDTH
    xp = np.zeros((n, c, h + lo[0] + hi[0], w + lo[1] + hi[1]), np.float32)
    xp[:, :, lo[0]:lo[0] + h, lo[1]:lo[1] + w] = x
    gt = np.zeros((n, oh, ow, op), np.float32)
    gt[..., :o] = g.transpose(0, 2, 3, 1)
    taps = c * kh * kw
    groups = -(-taps // TAPS)
    cc, hh, ww = np.unravel_index(np.arange(taps), (c, kh, kw))
    offsets = np.zeros(groups * TAPS, np.int64)  # the padding taps read offset 0 and land in rows dropped below
    offsets[:taps] = (cc * xp.shape[2] + hh * dilation[0]) * xp.shape[3] + ww * dilation[1]
    blocks = op // WIDTH
    acc = np.zeros((groups, blocks, TAPS, WIDTH), np.float32)
    flops = 2 * n * oh * ow * groups * TAPS * op
    parallel.run_compiled(lambda a, z: _weight(xp, gt, acc, offsets, a, z, stride[0], stride[1]), groups * blocks,
                          flops)
    dw = acc.transpose(0, 2, 1, 3).reshape(groups * TAPS, op)[:taps, :o]
    return np.ascontiguousarray(dw.T).reshape(w_shape)
