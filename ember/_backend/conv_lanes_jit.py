"""2-D float32 convolutions of groups 1 as compiled direct loops over output-channel vectors (numba): the weight
gradient, and the forward of strided or dilated convolutions.

Note [Direct weight gradient]: dw[o, c, kh, kw] = sum over samples n and output positions (h, j) of
g[n, o, h, j] * x[n, c, s h + d kh - lo, s j + d kw - lo]. The output gradient is copied once by blocks of 16
output channels, (O / 16, N OH OW, 16) with O rounded up to 16, so that at each position the gradients of a block
are two contiguous vector loads; a tile keeps 6 taps (c, kh, kw) x 16 output channels in 12 AVX2 registers and,
per position, broadcasts the 6 input values the taps read (at the position's offset, from a table, plus the tap's)
and makes 12 fused multiply-adds. The sum runs over every position in one flat loop, so a tile needs no horizontal
sums and no inner loop of a few columns however narrow the output (the row-vector tiles of conv_direct_jit.py sum
over columns, and lose below 25), and stride and dilation only change the offsets. Positions run outermost in
chunks of 256, each chunk's input and gradient staying in cache while every tile of the thread adds its share into
a (taps, O) accumulator; the threads take disjoint tiles. The flat loop against one over (sample, row, column) with
the gradient channels-last, ms, same process, 2 threads: 96->96 at 7x7 3.97 -> 3.04, 128->128 at 8x8 7.30 -> 6.11,
128->256 at 4x4 5.95 -> 4.10, 32->64 5x5 at 15x15 10.5 -> 8.4; 5-7% slower at 16x16 and 32x32 (16->16 3.26 ->
3.47); whole steps alternating: VGG 116.7 -> 105.9, ResNet-8 70.4 -> 69.9, AlexNet 86.9 -> 83.2. Like
conv_direct_jit.py's tiles, this one is a numba intrinsic emitting LLVM's <8 x float> vectors and llvm.fma (numba
leaves such register tiles scalar). Sums in float32, over positions in order: to rounding against the GEMM paths
(tests/test_conv_direct.py holds it to torch).

Note [Direct strided forward]: the forward the same way round, y[n, h, j, o] = sum over taps t = (c, kh, kw) of
x[n, c, s h + d kh - lo, s j + d kw - lo] * w[o, t]: the weight packed (O / 16 blocks, taps, 16), a tile keeps 6
consecutive output positions (of the flat (n, h, j) order, across rows) x 16 output channels in 12 registers and
runs over every tap: two weight vectors and six broadcast input values per tap; the bias starts the sums. Stride
and dilation only change the positions' and taps' input offsets, so this serves the strided and dilated
convolutions that conv_direct_jit.py's row tiles (stride 1) do not. Tiles store their vectors into a channels-last
scratch of 288 positions, which goes into (N, O, OH, OW) by 8 x 8 blocks transposed in registers while in cache
(_transpose). Storing lane by lane into NCHW instead cost AlexNet's stem (3->32 5x5 stride 2, 1,024 positions a
sample, so the 16 channel rows a tile wrote were 4 KiB apart and shared L1 sets) 5.7 ms of kernel against 2.7 at 1
thread; its whole forward 3.1 -> 2.2 ms at 2 threads (torch 1.6). The weight gradient's copy of the output gradient
by blocks of channels goes through the same transposition (NumPy's strided copy took 1.3-2.4 ms of that layer's 4
MB, now ~0.15): its weight gradient 4.1 -> 2.6 ms (torch 2.3).
Loaded through jit.load("conv_lanes_jit") (Note [JIT kernels]).
"""
import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import parallel
from .conv_direct_jit import padded
from .vector_ir import LANES, Vectors

VECTORS = 2  # output-channel vectors per tile
TAPS = 6  # (c, kh, kw) taps per tile
WIDTH = LANES * VECTORS  # output channels per tile; the channels-last gradient's last dim is a multiple of it
POSITIONS = 256  # output positions a weight tile sums per call: its 24 loads and stores of the accumulator weigh
                 # little against them


def _make_tile():
    """An intrinsic tile(x, g, acc, P, pos, o0, ..., o5): for t < TAPS and v < VECTORS,
    acc[t WIDTH + 8v : +8] += sum over q < P of x[pos[q] + o_t] * g[q WIDTH + 8v : +8].
    x, g, acc are addresses of float32 and pos of int64 (each output position's element offset in the padded
    input); the tap offsets o_t are in elements; acc's rows are WIDTH apart."""
    @intrinsic
    def tile(typingctx, x, g, acc, P, pos, o0, o1, o2, o3, o4, o5):
        sig = types.void(types.uintp, types.uintp, types.uintp, types.int64, types.uintp, *[types.int64] * 6)

        def codegen(context, builder, signature, args):
            x_, g_, acc_, P_, pos_ = args[:5]
            offsets = args[5:]
            vx = Vectors(builder)
            const = vx.const
            xb, gb, ab = (vx.floats(a) for a in (x_, g_, acc_))
            pb = vx.ints(pos_)
            sums = vx.accumulators(TAPS, VECTORS)
            for t in range(TAPS):  # from the accumulator's running sums
                for v in range(VECTORS):
                    builder.store(vx.load_vector(ab, const(t * WIDTH + v * LANES)), sums[t][v])
            with cgutils.for_range(builder, P_) as q_loop:
                xq = vx.load(pb, q_loop.index)
                gq = builder.mul(q_loop.index, const(WIDTH))
                gs = [vx.load_vector(gb, builder.add(gq, const(v * LANES))) for v in range(VECTORS)]
                for t in range(TAPS):
                    xv = vx.splat(vx.load(xb, builder.add(xq, offsets[t])))
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
    """An intrinsic ftile(x, w, b, y, taps, T, p0, ..., p5, q0, ..., q5): for k < 6 and c < WIDTH,
    y[q_k + c] = b[c] + sum over t < T of x[p_k + taps[t]] * w[t WIDTH + c]: the tile's 6 positions x 16 channels
    stored as vectors into channels-last rows. x, w, b, y, taps are addresses (float32; taps int64), offsets in
    elements."""
    @intrinsic
    def ftile(typingctx, x, w, b, y, taps, T, p0, p1, p2, p3, p4, p5, q0, q1, q2, q3, q4, q5):
        sig = types.void(*[types.uintp] * 5, *[types.int64] * 13)

        def codegen(context, builder, signature, args):
            x_, w_, b_, y_, taps_, T_ = args[:6]
            positions, outputs = args[6:12], args[12:]
            vx = Vectors(builder)
            const = vx.const
            xb, wb, bb, yb = (vx.floats(a) for a in (x_, w_, b_, y_))
            tb = vx.ints(taps_)
            sums = [[vx.accumulator(vx.load_vector(bb, const(v * LANES))) for v in range(VECTORS)] for _ in positions]
            with cgutils.for_range(builder, T_) as t_loop:
                tap = vx.load(tb, t_loop.index)
                wt = builder.mul(t_loop.index, const(WIDTH))
                ws = [vx.load_vector(wb, builder.add(wt, const(v * LANES))) for v in range(VECTORS)]
                for k, p in enumerate(positions):
                    xv = vx.splat(vx.load(xb, builder.add(p, tap)))
                    for v in range(VECTORS):
                        vx.fma_into(sums[k][v], xv, ws[v])
            for k, q in enumerate(outputs):
                for v in range(VECTORS):
                    vx.store_vector(builder.load(sums[k][v]), yb, builder.add(q, const(v * LANES)))
            return context.get_dummy_value()
        return sig, codegen
    return ftile


_FORWARD_TILE = _make_forward_tile()
POSITIONS_PER_TILE = 6
CHUNK = 48  # tiles a forward pass computes into its channels-last scratch (288 rows) before moving them to NCHW


@numba.njit(nogil=True, cache=True)
def _forward(xp, wt, bias, taps, pos, y, start, stop):
    """y (N, O, OH OW): the output positions of the tiles start..stop-1 (tile i has flat positions 6i..6i+5 of
    the (n, h, j) order; past the last, the last again): xp the padded input, wt (Op / WIDTH, T, WIDTH) the packed
    weight, bias (Op,), taps (T,) each tap's element offset in a padded sample, pos (N OH OW,) each output
    position's in xp (_positions). By chunks of
    CHUNK tiles: every block of WIDTH output channels into a channels-last scratch (CHUNK 6, Op) that stays in
    cache, then moved into NCHW by 8 x 8 register blocks (_transpose). Within a chunk the blocks run outermost, so
    that a block's weights (T x 64 bytes) stay in cache across its tiles."""
    blocks, T = wt.shape[0], wt.shape[1]
    o, per = y.shape[1], y.shape[2]
    total = pos.shape[0]
    op = blocks * WIDTH
    rows = CHUNK * POSITIONS_PER_TILE
    scratch = np.empty((rows, op), np.float32)
    ins = np.empty((CHUNK, POSITIONS_PER_TILE), np.int64)
    xa, wa, ba, sa, ta = xp.ctypes.data, wt.ctypes.data, bias.ctypes.data, scratch.ctypes.data, taps.ctypes.data
    for c0 in range(start, stop, CHUNK):
        c1 = min(stop, c0 + CHUNK)
        for i in range(c0, c1):
            for k in range(POSITIONS_PER_TILE):
                ins[i - c0, k] = pos[min(i * POSITIONS_PER_TILE + k, total - 1)]
        for blk in range(blocks):
            w_at, b_at, s_at = wa + 4 * blk * T * WIDTH, ba + 4 * blk * WIDTH, sa + 4 * blk * WIDTH
            for i in range(c1 - c0):
                a, z = ins[i], i * POSITIONS_PER_TILE * op
                _FORWARD_TILE(xa, w_at, b_at, s_at, ta, T, a[0], a[1], a[2], a[3], a[4], a[5],
                              z, z + op, z + 2 * op, z + 3 * op, z + 4 * op, z + 5 * op)
        q0, q1 = c0 * POSITIONS_PER_TILE, min(total, c1 * POSITIONS_PER_TILE)
        for n in range(q0 // per, (q1 - 1) // per + 1):
            a, z = max(q0, n * per), min(q1, (n + 1) * per)
            _transpose(scratch[a - q0:z - q0, :o], y[n, :, a - n * per:z - n * per])


def _make_transpose():
    """An intrinsic transpose(src, ss, dst, ds): dst[i ds + j] = src[j ss + i] for i, j < 8, an 8 x 8 block of
    float32 through registers (addresses, strides in elements)."""
    @intrinsic
    def transpose(typingctx, src, ss, dst, ds):
        sig = types.void(types.uintp, types.int64, types.uintp, types.int64)

        def codegen(context, builder, signature, args):
            src_, ss_, dst_, ds_ = args
            vx = Vectors(builder)
            sb, db = vx.floats(src_), vx.floats(dst_)
            rows = [vx.load_vector(sb, builder.mul(vx.const(i), ss_)) for i in range(LANES)]
            for i, column in enumerate(vx.transpose(rows)):
                vx.store_vector(column, db, builder.mul(vx.const(i), ds_))
            return context.get_dummy_value()
        return sig, codegen
    return transpose


_TRANSPOSE = _make_transpose()


@numba.njit(nogil=True, cache=True)
def _transpose(src, dst):
    """dst[j, i] = src[i, j]: src (R, K) and dst (K, R) float32 with contiguous rows, by 8 x 8 blocks through
    registers, the edges past a multiple of 8 one by one. NumPy's strided copy of the same took ~8x longer on
    1024-position planes: read rows 4 KiB apart share their L1 sets (AlexNet stem's 4 MB gradient 1.3-2.4 ms, a
    plain copy 0.18)."""
    r, k = src.shape
    ss, ds = src.strides[0] // 4, dst.strides[0] // 4
    sa, da = src.ctypes.data, dst.ctypes.data
    rv, kv = r - r % LANES, k - k % LANES
    for j in range(0, kv, LANES):
        for i in range(0, rv, LANES):
            _TRANSPOSE(sa + 4 * (i * ss + j), ss, da + 4 * (j * ds + i), ds)
    for j in range(k):
        for i in range(rv if j < kv else 0, r):
            dst[j, i] = src[i, j]


@numba.njit(nogil=True, cache=True)
def _by_blocks(g, gt, start, stop):
    """gt[b, s P + q, c] = g[s, b WIDTH + c, q], zero past g's O channels, for the samples start..stop-1: g (N, O,
    P) to (blocks, N P, WIDTH)."""
    o, p = g.shape[1], g.shape[2]
    for s in range(start, stop):
        for b in range(gt.shape[0]):
            c1 = min(o, (b + 1) * WIDTH)
            _transpose(g[s, b * WIDTH:c1], gt[b, s * p:(s + 1) * p, :c1 - b * WIDTH])
            gt[b, s * p:(s + 1) * p, c1 - b * WIDTH:] = 0


def _positions(xp, out, stride):
    """Each output position's element offset in the padded input xp (N, C, Hp, Wq), in the flat (n, h, j) order:
    where its window's first tap reads (the forward's tiles and the weight gradient's rows both run over them)."""
    n, c, hp, wq = xp.shape
    at = np.arange(out[0], dtype=np.int64)[:, None] * (stride[0] * wq) + np.arange(out[1], dtype=np.int64) * stride[1]
    return (np.arange(n, dtype=np.int64)[:, None] * (c * hp * wq) + at.reshape(-1)).reshape(-1)


def _padded_taps(x, kernel, dilation, lo, hi):
    """The padded input (conv_direct_jit.padded) and each (c, kh, kw) tap's element offset in a padded sample."""
    xp = padded(x, lo, hi)
    c, (kh, kw) = x.shape[1], kernel
    rows = np.arange(c, dtype=np.int64)[:, None] * xp.shape[2] + np.arange(kh, dtype=np.int64) * dilation[0]
    return xp, (rows[:, :, None] * xp.shape[3] + np.arange(kw, dtype=np.int64) * dilation[1]).reshape(-1)


@numba.njit(nogil=True, cache=True)
def _pack_flipped(w, wt):
    """wt[b, (o KH + kh) KW + kw, l] = w[o, b WIDTH + l, KH-1-kh, KW-1-kw]: the flipped convolution's packed weight
    (its output channels are w's inputs), straight from w (zeros past them must be there already); one pass where
    flipping (a strided NumPy copy) and packing took two, 256->256 3x3 0.88 -> 0.47 ms."""
    O, C = w.shape[0], w.shape[1]
    T = w.shape[2] * w.shape[3]
    src = w.reshape(O, C, T)
    for o in range(O):
        for c in range(C):
            b, lane = c // WIDTH, c % WIDTH
            for t in range(T):
                wt[b, o * T + T - 1 - t, lane] = src[o, c, t]


def forward(x, w, b, stride, dilation, lo, hi, flipped=False):
    """conv2d(x, w, b) of groups 1, any stride and dilation, padding lo, hi >= 0: (N, O, OH, OW) float32. With
    flipped, the convolution with w's kernel flipped and its in/out channels swapped (a stride-1 input gradient,
    ember/_ops/conv.py), packed from w itself."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    o = w.shape[1] if flipped else w.shape[0]
    oh = (h + lo[0] + hi[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + lo[1] + hi[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    op = -(-o // WIDTH) * WIDTH
    xp, offsets = _padded_taps(x, (kh, kw), dilation, lo, hi)
    taps = c * kh * kw
    if flipped:
        wt = np.zeros((op // WIDTH, taps, WIDTH), np.float32)
        _pack_flipped(np.ascontiguousarray(w), wt)
    else:  # (blocks, taps, WIDTH), by the weight gradient's register transposes
        wt = np.empty((op // WIDTH, taps, WIDTH), np.float32)
        _by_blocks(np.ascontiguousarray(w).reshape(1, o, taps), wt, 0, 1)
    bias = np.zeros(op, np.float32)
    if b is not None:
        bias[:o] = b
    positions = n * oh * ow
    tiles = -(-positions // POSITIONS_PER_TILE)
    y = np.empty((n, o, oh, ow), np.float32)
    flops = 2 * positions * taps * op
    yf = y.reshape(n, o, oh * ow)
    pos = _positions(xp, (oh, ow), stride)
    parallel.run_compiled(lambda a, z: _forward(xp, wt, bias, offsets, pos, yf, a, z), tiles, flops)
    return y


@numba.njit(nogil=True, cache=True)
def _weight(xp, gt, pos, acc, offsets, start, stop):
    """acc[group, block] (TAPS, WIDTH) += the weight gradient's share of taps group * TAPS.. and output channels
    block * WIDTH.., for the (group, block) pairs start..stop-1, numbered group * blocks + block: xp the padded input,
    gt (blocks, P, WIDTH) the output gradient by block of channels, one row per output position (sample, row,
    column), pos (P,) each position's element offset in xp, offsets (groups * TAPS,) each tap's. The positions come
    in chunks of POSITIONS, the chunks outermost, so that a chunk's input and gradient stay in cache across the
    pairs."""
    blocks, P = gt.shape[0], gt.shape[1]
    xa, ga, pa, aa = xp.ctypes.data, gt.ctypes.data, pos.ctypes.data, acc.ctypes.data
    for q in range(0, P, POSITIONS):
        length = min(POSITIONS, P - q)
        for i in range(start, stop):
            grp, blk = i // blocks, i % blocks
            t = grp * TAPS
            _TILE(xa, ga + 4 * ((blk * P + q) * WIDTH), aa + 4 * ((grp * blocks + blk) * TAPS * WIDTH), length,
                  pa + 8 * q, offsets[t], offsets[t + 1], offsets[t + 2], offsets[t + 3], offsets[t + 4],
                  offsets[t + 5])


def weight(x, g, stride, dilation, lo, hi, w_shape):
    """The weight gradient of a 2-D convolution of groups 1: dw (O, C, KH, KW) float32 from the input x (N, C, H, W)
    and the output gradient g (N, O, OH, OW), any stride, dilation and padding lo, hi >= 0."""
    o, c, kh, kw = w_shape
    n, _, oh, ow = g.shape
    op = -(-o // WIDTH) * WIDTH
    xp, tap_offsets = _padded_taps(x, (kh, kw), dilation, lo, hi)
    blocks = op // WIDTH
    gt = np.empty((blocks, n * oh * ow, WIDTH), np.float32)  # (blocks, positions, WIDTH)
    gc = np.ascontiguousarray(g).reshape(n, o, oh * ow)
    parallel.run(lambda a, z: _by_blocks(gc, gt, a, z), n, 2 * gt.nbytes)
    pos = _positions(xp, (oh, ow), stride)
    taps = c * kh * kw
    groups = -(-taps // TAPS)
    offsets = np.zeros(groups * TAPS, np.int64)  # the padding taps read offset 0 and land in rows dropped below
    offsets[:taps] = tap_offsets
    acc = np.zeros((groups, blocks, TAPS, WIDTH), np.float32)
    flops = 2 * n * oh * ow * groups * TAPS * op
    parallel.run_compiled(lambda a, z: _weight(xp, gt, pos, acc, offsets, a, z), groups * blocks, flops)
    dw = np.empty((op, groups * TAPS), np.float32)  # dw[o, t] = acc[t // TAPS, o // WIDTH, t % TAPS, o % WIDTH]
    dw.reshape(blocks, WIDTH, groups, TAPS)[...] = acc.transpose(1, 3, 0, 2)
    return np.ascontiguousarray(dw[:o, :taps]).reshape(w_shape)
