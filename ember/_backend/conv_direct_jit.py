"""Stride-1 2-D convolutions of groups 1 in float32 as a compiled direct loop with register tiles (numba).

Note [Direct convolution]: ember's other paths run a convolution as BLAS GEMMs over copies of the input
(im2col, rows, implicit GEMM). With 16-64 channels those GEMMs are narrow (K = C per tap, or 9 C), and
OpenBLAS's Haswell kernel runs them at 26-59 GFLOP/s where it reaches 130 on square ones: 16->16 3x3 at
32x32, batch 32, took 3.1 ms forward at 1 thread against torch's 3.1 (oneDNN's direct kernels). Here a
tile of up to 4 output channels x 16 output columns of one output row (8 AVX2 registers of 8 floats) is
accumulated in registers over every input channel and tap: each step loads the input row's 16 shifted
values as two vectors, broadcasts 4 weights and makes 8 fused multiply-adds. The padded input is copied
once (zeros around, the row widened to a multiple of 8 output columns), the weight packed as
(O/4, C, KH, KW, 4) so that a step's 4 weights lie side by side. numba does not keep such tiles in
vector registers when written as scalar loops (3-29 GFLOP/s, measured), so the tile is a numba intrinsic
that emits LLVM's <8 x float> vectors and llvm.fma itself; the loops around it are plain numba. Same
layer, 1 thread: 1.9-2.5 ms (60-80 GFLOP/s); 2 threads (samples split) ~1.2 ms.

The sums run over channels, then kernel rows, then kernel columns, in float32 with fused multiply-adds:
the result differs from the GEMM paths' by rounding only (tests/test_conv_direct.py holds it to torch).
The input gradient of a stride-1 convolution is itself one (the flipped form in ember/_ops/conv.py), so it
takes this path too. The weight gradient's tiles here (4 output channels x 3 taps, summing over output columns in
vectors) serve inputs of fewer than 16 channels at 25 output columns or more; wider inputs take the
output-channel-vector kernel of conv_lanes_jit.py. Loaded through jit.load("conv_direct_jit") (Note [JIT kernels]).
"""
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import parallel
from .vector_ir import LANES, Vectors

BLOCK = 4  # output channels per tile, the packed weight's last dim
DISABLED = numba.config.DISABLE_JIT  # NUMBA_DISABLE_JIT=1: the tiles (LLVM IR) cannot run as Python; ember/_ops/conv.py
                                     # then keeps the GEMM paths
WEIGHT_ROWS = 64  # vector rows a weight-gradient tile sums at least (samples permitting)


def _make_tile(rows, vectors, taps=0):
    """An intrinsic tile(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs): for o < rows and v < vectors,
    y[o ycs + v yvs : +8] = b[o] + sum over c < C, kh < KH, kw < KW of
    w[((c KH + kh) KW + kw) BLOCK + o] * x[c xcs + kh xrs + kw + v xvs : +8].
    x, w, b, y are addresses of float32; the strides are in elements: xcs / xrs the input's channel / row
    stride, ycs the output's channel stride, xvs / yvs where the second vector sits (8 further along the row,
    or a row further down). taps > 0 unrolls the kw loop for KW == taps (a loop over kw costs ~2x)."""
    @intrinsic
    def tile(typingctx, x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs):
        sig = types.void(types.uintp, types.uintp, types.uintp, types.uintp, *[types.int64] * 8)

        def codegen(context, builder, signature, args):
            x_, w_, b_, y_, C_, KH_, KW_, xcs_, xrs_, xvs_, ycs_, yvs_ = args
            vx = Vectors(builder)
            const = vx.const
            xb, wb, bb, yb = (vx.floats(a) for a in (x_, w_, b_, y_))
            x_vec = [builder.mul(const(v), xvs_) for v in range(vectors)]
            acc = [vx.accumulators(1, vectors, vx.splat(vx.load(bb, const(o))))[0] for o in range(rows)]  # the bias

            def tap(row, step, kw):
                xo = builder.add(row, kw)
                wo = builder.mul(builder.add(step, kw), const(BLOCK))
                xs = [vx.load_vector(xb, builder.add(xo, x_vec[v])) for v in range(vectors)]
                for o in range(rows):
                    wv = vx.splat(vx.load(wb, builder.add(wo, const(o))))
                    for v in range(vectors):
                        vx.fma_into(acc[o][v], wv, xs[v])

            with cgutils.for_range(builder, C_) as c_loop:
                with cgutils.for_range(builder, KH_) as kh_loop:
                    c, kh = c_loop.index, kh_loop.index
                    row = builder.add(builder.mul(c, xcs_), builder.mul(kh, xrs_))
                    step = builder.mul(builder.add(builder.mul(c, KH_), kh), KW_)
                    if taps:
                        for kw in range(taps):
                            tap(row, step, const(kw))
                    else:
                        with cgutils.for_range(builder, KW_) as kw_loop:
                            tap(row, step, kw_loop.index)
            for o in range(rows):
                for v in range(vectors):
                    yo = builder.add(builder.mul(const(o), ycs_), builder.mul(const(v), yvs_))
                    vx.store_vector(builder.load(acc[o][v]), yb, yo)
            return context.get_dummy_value()
        return sig, codegen
    return tile


# The full tile, its kw loop unrolled for 3x3 and 5x5 kernels and a loop otherwise; the tiles for the last
# output channels (O not a multiple of 4) and a last lone vector of columns.
_FULL3, _FULL5, _FULL = _make_tile(BLOCK, 2, 3), _make_tile(BLOCK, 2, 5), _make_tile(BLOCK, 2)
_PART = [(_make_tile(r, 1), _make_tile(r, 2)) for r in range(1, BLOCK + 1)]
_P11, _P12 = _PART[0]
_P21, _P22 = _PART[1]
_P31, _P32 = _PART[2]
_P41, _P42 = _PART[3]


@numba.njit(inline="always")
def _tile(rows, vectors, x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs):
    """The tile of `rows` output channels by `vectors` vectors of 8 output columns (see _make_tile)."""
    if rows == BLOCK and vectors == 2:
        if KW == 3:
            _FULL3(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
        elif KW == 5:
            _FULL5(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
        else:
            _FULL(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
    elif rows == 4:
        if vectors == 2:
            _P42(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
        else:
            _P41(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
    elif rows == 3:
        if vectors == 2:
            _P32(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
        else:
            _P31(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
    elif rows == 2:
        if vectors == 2:
            _P22(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
        else:
            _P21(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
    elif vectors == 2:
        _P12(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)
    else:
        _P11(x, w, b, y, C, KH, KW, xcs, xrs, xvs, ycs, yvs)


@numba.njit(nogil=True, cache=True)
def _forward(xp, wp, bp, y, start, stop, KH, KW):
    """y[n, o] for the (sample, block of BLOCK output channels) pairs start..stop-1, numbered n * blocks + block:
    xp (N, C, Hp, Wq) the padded input, wp (blocks, C, KH, KW, BLOCK) the packed weight, bp the bias padded to
    blocks * BLOCK, y (N, O, OH, OWt) with OWt a multiple of LANES."""
    C, Hp, Wq = xp.shape[1], xp.shape[2], xp.shape[3]
    O, OH, OWt = y.shape[1], y.shape[2], y.shape[3]
    blocks = wp.shape[0]
    xa, wa, ba, ya = xp.ctypes.data, wp.ctypes.data, bp.ctypes.data, y.ctypes.data
    xcs, ycs = Hp * Wq, OH * OWt
    wsize = C * KH * KW * BLOCK
    for i in range(start, stop):
        n, blk = i // blocks, i % blocks
        o = blk * BLOCK
        rows = min(BLOCK, O - o)
        w_at = wa + 4 * blk * wsize
        b_at = ba + 4 * o
        if OWt == LANES:  # 8 output columns: a tile takes two output rows
            h = 0
            while h < OH:
                x_at = xa + 4 * ((n * C * Hp + h) * Wq)
                y_at = ya + 4 * (((n * O + o) * OH + h) * OWt)
                vectors = 2 if h + 1 < OH else 1
                _tile(rows, vectors, x_at, w_at, b_at, y_at, C, KH, KW, xcs, Wq, Wq, ycs, OWt)
                h += 2
            continue
        for h in range(OH):
            x_row = xa + 4 * ((n * C * Hp + h) * Wq)
            y_row = ya + 4 * (((n * O + o) * OH + h) * OWt)
            j = 0
            while j < OWt:
                vectors = 2 if j + LANES < OWt else 1
                _tile(rows, vectors, x_row + 4 * j, w_at, b_at, y_row + 4 * j, C, KH, KW, xcs, Wq, LANES, ycs,
                      LANES)
                j += LANES * vectors


def _make_weight_tile(taps):
    """An intrinsic wtile(x, y, dw, S, xns, yns, OH, V, xrs, yrs, ycs, dws): for o < BLOCK and kw < taps,
    dw[o dws + kw] += sum over s < S, h < OH, v < V of the 8 products
    y[s yns + o ycs + h yrs + 8v : +8] * x[s xns + h xrs + kw + 8v : +8]
    (S samples' share of the weight gradient at one input channel and kernel row). x, y, dw are addresses of
    float32, the strides in elements: xns / yns the input's / output gradient's sample stride, xrs / yrs their row
    stride, ycs the output gradient's channel stride, dws the weight gradient's stride between output channels."""
    @intrinsic
    def wtile(typingctx, x, y, dw, S, xns, yns, OH, V, xrs, yrs, ycs, dws):
        sig = types.void(types.uintp, types.uintp, types.uintp, *[types.int64] * 9)

        def codegen(context, builder, signature, args):
            x_, y_, dw_, S_, xns_, yns_, OH_, V_, xrs_, yrs_, ycs_, dws_ = args
            vx = Vectors(builder)
            const = vx.const
            xb, yb, wb = (vx.floats(a) for a in (x_, y_, dw_))
            acc = vx.accumulators(BLOCK, taps)
            y_rows = [builder.mul(const(o), ycs_) for o in range(BLOCK)]
            with cgutils.for_range(builder, S_) as s_loop, cgutils.for_range(builder, OH_) as h_loop:
                xh = builder.add(builder.mul(s_loop.index, xns_), builder.mul(h_loop.index, xrs_))
                yh = builder.add(builder.mul(s_loop.index, yns_), builder.mul(h_loop.index, yrs_))
                with cgutils.for_range(builder, V_) as v_loop:
                    col = builder.mul(v_loop.index, const(LANES))
                    ys = [vx.load_vector(yb, builder.add(builder.add(y_rows[o], yh), col)) for o in range(BLOCK)]
                    for kw in range(taps):
                        xv = vx.load_vector(xb, builder.add(builder.add(xh, col), const(kw)))
                        for o in range(BLOCK):
                            vx.fma_into(acc[o][kw], ys[o], xv)
            for o in range(BLOCK):
                for kw in range(taps):
                    at = builder.gep(wb, [builder.add(builder.mul(const(o), dws_), const(kw))])
                    builder.store(builder.fadd(builder.load(at), vx.horizontal_sum(builder.load(acc[o][kw]))), at)
            return context.get_dummy_value()
        return sig, codegen
    return wtile


_W1, _W2, _W3 = _make_weight_tile(1), _make_weight_tile(2), _make_weight_tile(3)


@numba.njit(nogil=True, cache=True)
def _weight(xp, yp, dw, start, stop):
    """dw[o, c, kh, kw] = sum over samples and output positions of yp[n, o, h, j] * xp[n, c, h + kh, j + kw], for
    the (block of BLOCK output channels, input channel) pairs start..stop-1, numbered block * C + c: xp (N, C, Hp,
    Wq) the padded input, yp (N, O, OH, OWt) the output gradient with O a multiple of BLOCK and OWt of LANES (zeros
    past the output), dw (O, C, KH, KW) zeroed. A tile takes enough samples for WEIGHT_ROWS vector rows (one at
    32x32, eight at 8x8: its horizontal sums and dw updates then weigh little), and the chunks of samples run
    outermost, so that their input and output gradient stay in cache across the pairs."""
    N, C, Hp, Wq = xp.shape
    O, OH, OWt = yp.shape[1], yp.shape[2], yp.shape[3]
    KH, KW = dw.shape[2], dw.shape[3]
    xa, ya, wa = xp.ctypes.data, yp.ctypes.data, dw.ctypes.data
    dws = C * KH * KW
    V = OWt // LANES
    xns, yns = C * Hp * Wq, O * OH * OWt
    chunk = max(1, -(-WEIGHT_ROWS // (OH * V)))
    for n in range(0, N, chunk):
        S = min(chunk, N - n)
        for i in range(start, stop):
            o, c = (i // C) * BLOCK, i % C
            y_at = ya + 4 * ((n * O + o) * OH * OWt)
            for kh in range(KH):
                x_at = xa + 4 * (((n * C + c) * Hp + kh) * Wq)
                w_at = wa + 4 * (((o * C + c) * KH + kh) * KW)
                kw = 0
                while kw < KW:
                    taps = min(3, KW - kw)
                    if taps == 3:
                        _W3(x_at + 4 * kw, y_at, w_at + 4 * kw, S, xns, yns, OH, V, Wq, OWt, OH * OWt, dws)
                    elif taps == 2:
                        _W2(x_at + 4 * kw, y_at, w_at + 4 * kw, S, xns, yns, OH, V, Wq, OWt, OH * OWt, dws)
                    else:
                        _W1(x_at + 4 * kw, y_at, w_at + 4 * kw, S, xns, yns, OH, V, Wq, OWt, OH * OWt, dws)
                    kw += taps


def _make_copy():
    """Intrinsics copy(dst, src, count) and zero(dst, count): count float32 copied or zeroed at addresses, by
    llvm.memcpy / llvm.memset (libc's vector loops); numba's own element loops cost ~100 cycles a row here."""
    i8p = ir.IntType(8).as_pointer()

    @intrinsic
    def copy(typingctx, dst, src, count):
        def codegen(context, builder, signature, args):
            d, s, n = args
            cgutils.raw_memcpy(builder, builder.inttoptr(d, i8p), builder.inttoptr(s, i8p), n, 4)
            return context.get_dummy_value()
        return types.void(types.uintp, types.uintp, types.int64), codegen

    @intrinsic
    def zero(typingctx, dst, count):
        def codegen(context, builder, signature, args):
            d, n = args
            cgutils.memset(builder, builder.inttoptr(d, i8p), builder.mul(n, ir.Constant(n.type, 4)), 0)
            return context.get_dummy_value()
        return types.void(types.uintp, types.int64), codegen
    return copy, zero


_COPY, _ZERO = _make_copy()


@numba.njit(nogil=True, cache=True)
def _pad(x, xp, start, stop, top, left):
    """xp[n] = x[n] placed at (top, left) in zeros, for samples start..stop-1 (every element of xp[n] written):
    x (N, C, H, W) and xp (N, C, Hp, Wq) C-contiguous. Each input row is one copy, and the zeros between two rows
    (this row's right margin, the next one's left) one fill. Against element loops, 1 thread: 32 channels at
    32x32, batch 32, 1.56 -> 0.34 ms; 256 at 4x4 0.60 -> 0.36 (0.14 below); 3 at 64x64 0.58 -> 0.08."""
    C, H, W, Hp, Wq = x.shape[1], x.shape[2], x.shape[3], xp.shape[2], xp.shape[3]
    sa, da = x.ctypes.data, xp.ctypes.data
    right = Wq - left - W
    narrow = W <= 16  # rows of up to 16: the whole range zeroed in one fill first, then only the copies (the calls
    if narrow:        # cost more than the bytes there: 96 channels at 7x7 0.137 -> 0.093 ms, 256 at 4x4 0.21 -> 0.14)
        _ZERO(da + 4 * start * C * Hp * Wq, (stop - start) * C * Hp * Wq)
    for p in range(start * C, stop * C):  # one (sample, channel) plane at a time
        d0, s0 = p * Hp * Wq, p * H * W
        if not narrow:
            _ZERO(da + 4 * d0, top * Wq + left)  # the top rows and the first row's left margin
        for h in range(H):
            d = d0 + (h + top) * Wq + left
            _COPY(da + 4 * d, sa + 4 * (s0 + h * W), W)
            if not narrow:
                _ZERO(da + 4 * (d + W), right + (left if h < H - 1 else 0))
        if not narrow:
            _ZERO(da + 4 * (d0 + (top + H) * Wq), (Hp - top - H) * Wq)


def padded(x, lo, hi, kw=1, owt=0):
    """x (N, C, H, W) in zeros, lo / hi rows and columns around, the rows widened to owt + kw - 1 columns (what
    owt output columns read) where that is wider; one compiled pass, split over samples (conv_lanes_jit.py too)."""
    x = np.ascontiguousarray(x)
    n, c, h, w = x.shape
    xp = np.empty((n, c, h + lo[0] + hi[0], max(owt + kw - 1, w + lo[1] + hi[1])), np.float32)
    parallel.run(lambda a, z: _pad(x, xp, a, z, lo[0], lo[1]), n, xp.nbytes)
    return xp


def weight(x, y, lo, hi, w_shape):
    """The weight gradient of conv2d at stride 1, dilation 1, groups 1, padding lo, hi >= 0: dw (O, C, KH, KW)
    float32 from the input x (N, C, H, W) and the output gradient y (N, O, OH, OW)."""
    o, c, kh, kw = w_shape
    n, _, oh, ow = y.shape
    owt = -(-ow // LANES) * LANES
    blocks = -(-o // BLOCK)
    xp = padded(x, lo, hi, kw, owt)
    if owt != ow or blocks * BLOCK != o:  # zeros past the output columns and channels
        yp = np.zeros((n, blocks * BLOCK, oh, owt), np.float32)
        yp[:, :o, :, :ow] = y
    else:
        yp = np.ascontiguousarray(y)
    dw = np.zeros((blocks * BLOCK, c, kh, kw), np.float32)
    flops = 2 * n * blocks * BLOCK * oh * owt * c * kh * kw
    parallel.run_compiled(lambda a, z: _weight(xp, yp, dw, a, z), blocks * c, flops)
    return dw if blocks * BLOCK == o else np.ascontiguousarray(dw[:o])


def forward(x, w, b, lo, hi):
    """conv2d(x, w, b) at stride 1, dilation 1, groups 1, padding lo (top, left) and hi (bottom, right) >= 0:
    (N, O, OH, OW) float32."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h + lo[0] + hi[0] - kh + 1, wd + lo[1] + hi[1] - kw + 1
    owt = -(-ow // LANES) * LANES
    xp = padded(x, lo, hi, kw, owt)
    blocks = -(-o // BLOCK)
    wp = np.zeros((blocks * BLOCK, c, kh, kw), np.float32)
    wp[:o] = w
    wp = np.ascontiguousarray(wp.reshape(blocks, BLOCK, c, kh, kw).transpose(0, 2, 3, 4, 1))
    bp = np.zeros(blocks * BLOCK, np.float32)
    if b is not None:
        bp[:o] = b
    y = np.empty((n, o, oh, owt), np.float32)
    flops = 2 * n * o * oh * owt * c * kh * kw
    parallel.run_compiled(lambda a, z: _forward(xp, wp, bp, y, a, z, kh, kw), n * blocks, flops)
    return y if owt == ow else np.ascontiguousarray(y[..., :ow])
