"""The LSTM's and GRU's steps as compiled loops (numba), with an exp the compiler vectorizes: the NumPy float32
LSTM cell (ember/_ops/rnn_sequence.py's lstm_cell) makes ~12 passes over the (B, 4H) gates, each a NumPy call,
where the compiled step makes one. A numba loop calling math.exp gets the C library's scalar expf (~4 ns an
element, twice NumPy's SIMD loop, measured: 240 vs 70-120 us for a 32x512 step); the exp below is plain float32
arithmetic (Cody-Waite reduction by ln 2, a degree-7 Taylor polynomial, the power of two put into the exponent
bits) over arguments <= 0 (the sigmoid takes exp(-|x|), the softmax rows exp(x - max)), which LLVM turns into
8-wide AVX2 code. Relative error ~1e-7 (2 ulp), as NumPy's; so the forward steps
agree with the NumPy ones to rounding, not bit for bit. The backward steps (float32 and float64) are plain
arithmetic in the NumPy recursions' operations and order: the same bits. Loaded through jit.load("lstm_jit")
(Note [JIT kernels]); tests/test_lstm_jit.py holds them to torch and to the NumPy steps.
"""
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import cblas, jit, parallel
from .conv_lanes_jit import _FORWARD_TILE, WIDTH

_F = np.float32
_LOG2E = _F(1.4426950408889634)
_LN2_HI = _F(0.693359375)  # ln 2 split so that k * _LN2_HI is exact for |k| < 2**9
_LN2_LO = _F(-2.1219444005469057e-4)
_LO = _F(-87.33654)  # below: exp is subnormal; 0 here (1 + it rounds to 1 in the sigmoid either way)
_ROUND = _F(12582912.0)  # 1.5 * 2**23: adding it rounds to an integer, held in the low mantissa bits
_ONE_BITS = np.int32(0x3F800000)  # 1.0f: the exponent bias in place
_ONE, _TWO, _HALF, _ZERO = _F(1), _F(2), _F(0.5), _F(0)
_C3, _C4, _C5, _C6, _C7 = _F(1 / 6), _F(1 / 24), _F(1 / 120), _F(1 / 720), _F(1 / 5040)
# The forward steps let LLVM contract a * b + c into one FMA (exp's reduction and polynomial, the cell's sums): the
# exp over 16,384 float32 values 1.02 -> 0.74 ns each, its largest difference from NumPy's 1.8e-7 -> 1.7e-7. The
# backward steps keep NumPy's separate roundings (the same bits as the NumPy recursions).
_CONTRACT = {"contract"}


@intrinsic
def _bits_to_float32(typingctx, i):
    """The float32 whose bits are the int32 i."""
    if i != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: the kernels run as Python, where an intrinsic cannot be called
    def _bits_to_float32(i):
        return np.array(i, np.int32).view(np.float32)[()]


@intrinsic
def _float32_bits(typingctx, f):
    """The int32 whose bits are the float32 f."""
    if f != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


if numba.config.DISABLE_JIT:
    def _float32_bits(f):
        return np.array(f, np.float32).view(np.int32)[()]


@numba.njit(inline="always", error_model="numpy")
def reduce_ln2(t):
    """(r, v) for a float32 t = k ln 2 + r, |r| <= ln 2 / 2: v = t log2(e) + 1.5 * 2**23, whose low mantissa bits
    hold the integer k (k rounded to nearest by the addition: no floor, no float-to-int conversion)."""
    v = t * _LOG2E + _ROUND
    k = v - _ROUND
    return (t - k * _LN2_HI) - k * _LN2_LO, v


@numba.njit(inline="always", error_model="numpy")
def exp_head(r):
    """h with exp(r) = 1 + r h: h = 1 + r/2 + r**2/6 + ... + r**6/7! (exp's degree-7 Taylor polynomial, Horner)."""
    h = _C7
    h = h * r + _C6
    h = h * r + _C5
    h = h * r + _C4
    h = h * r + _C3
    h = h * r + _HALF
    return h * r + _ONE


@numba.njit(inline="always", error_model="numpy")
def reduced_exp(t):
    """(exp(r), v) for a float32 t = k ln 2 + r (reduce_ln2); the caller scales by 2**k (_exp here,
    unary_jit.exp32)."""
    r, v = reduce_ln2(t)
    return exp_head(r) * r + _ONE, v


@numba.njit(inline="always", error_model="numpy")
def _exp(x):
    """exp(x) for a float32 x <= 0 (or NaN), from reduced_exp; 0 below _LO (where exp is subnormal). 2**k is v's low
    bits shifted into the exponent field, with no exponent overflow to guard, since k <= 0 (0.52 against 0.77-0.92
    ns an element for the full-range form this replaced, whose k reached 128)."""
    t = _LO if x < _LO else x  # NaN stays NaN (comparisons with NaN are false)
    p, v = reduced_exp(t)
    y = p * _bits_to_float32(np.int32((_float32_bits(v) << np.int32(23)) + _ONE_BITS))  # k in [-126, 0]: normal
    if x < _LO:
        y = _ZERO
    return y


@numba.njit(inline="always", error_model="numpy")
def _sigmoid(x):
    """1 / (1 + exp(-x)) from e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below (0 where e is)."""
    e = _exp(-abs(x))
    return (_ONE if x >= _ZERO else e) / (_ONE + e)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def _cell(gates, xg, bias, c, c_new, tanh_c, h):
    rows, width = gates.shape
    n = width // 4
    bi, bf, bg, bo = bias[:n], bias[n:2 * n], bias[2 * n:3 * n], bias[3 * n:4 * n]
    for b in range(rows):
        # gate by gate over views that start at index 0: with offsets (g[n + k]) LLVM cannot rule out negative
        # indices, keeps numba's wraparound check per access and does not vectorize (72 vs 29 us a step)
        g, x = gates[b], xg[b]
        i, f, gg, o = g[:n], g[n:2 * n], g[2 * n:3 * n], g[3 * n:4 * n]
        xi, xf, xgg, xo = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:4 * n]
        # the input's projection and the bias summed first: the rounding of xg + bias made before the loop
        for k in range(n):
            i[k] = _sigmoid(i[k] + (xi[k] + bi[k]))
        for k in range(n):
            f[k] = _sigmoid(f[k] + (xf[k] + bf[k]))
        for k in range(n):  # tanh(v) = 2 sigmoid(2 v) - 1 (Note [LSTM tanh gate])
            gg[k] = _TWO * _sigmoid(_TWO * (gg[k] + (xgg[k] + bg[k]))) - _ONE
        for k in range(n):
            o[k] = _sigmoid(o[k] + (xo[k] + bo[k]))
        # three loops of few arrays each: one loop over all seven would need more runtime overlap checks than
        # LLVM makes before vectorizing
        cb, nb, tb, hb = c[b], c_new[b], tanh_c[b], h[b]
        for k in range(n):
            nb[k] = f[k] * cb[k] + i[k] * gg[k]
        for k in range(n):
            tb[k] = _TWO * _sigmoid(_TWO * nb[k]) - _ONE
        for k in range(n):
            hb[k] = o[k] * tb[k]


def cell(gates, xg, c, c_new, tanh_c, h):
    """One LSTM step: gates (B, 4H; order i, f, g, o) += xg, activated in place; c_new = f c + i g, tanh_c =
    tanh(c_new), h = o tanh_c. float32 rows, each C-contiguous (views of the sequence's buffers)."""
    _cell(gates, xg, np.zeros(gates.shape[1], gates.dtype), c, c_new, tanh_c, h)  # x + 0: the same gates


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _back_step(h, c, go, gates, tc, c_prev, dg):
    rows, n = h.shape
    one = h.dtype.type(1)
    for b in range(rows):
        hb, cb, tb, pb, g4, d = h[b], c[b], tc[b], c_prev[b], gates[b], dg[b]
        i, f, g, o = g4[:n], g4[n:2 * n], g4[2 * n:3 * n], g4[3 * n:4 * n]
        di, df, dgg, do = d[:n], d[n:2 * n], d[2 * n:3 * n], d[3 * n:4 * n]
        if go.shape[0]:
            gb = go[b]
            for k in range(n):
                hb[k] += gb[k]
        for k in range(n):  # c += h o (1 - tanh(c)^2)
            cb[k] += hb[k] * ((one - tb[k] * tb[k]) * o[k])
        for k in range(n):  # d_o = h tanh(c) o (1 - o)
            do[k] = hb[k] * (((one - o[k]) * o[k]) * tb[k])
        for k in range(n):  # d_i = c g i (1 - i)
            di[k] = cb[k] * ((i[k] * (one - i[k])) * g[k])
        for k in range(n):  # d_f = c c_prev f (1 - f)
            df[k] = cb[k] * ((f[k] * (one - f[k])) * pb[k])
        for k in range(n):  # d_g = c i (1 - g^2)
            dgg[k] = cb[k] * ((one - g[k] * g[k]) * i[k])
        for k in range(n):
            cb[k] *= f[k]


def back_step(h, c, go, gates, tanh_c, c_prev, dg):
    """One step of the LSTM backward recursion before its GEMM, in place, in the NumPy recursion's operations
    and order (rnn_sequence._lstm_steps_back: the same bits): h += go (None: no output gradient); from the
    step's activated gates (B, 4H), tanh(c) and previous c, c += h o (1 - tanh(c)^2); the gate gradients dg =
    (c g i(1 - i), c c_prev f(1 - f), c i(1 - g^2), h tanh(c) o(1 - o)); c *= f. float32 or float64 rows."""
    _back_step(h, c, jit.optional(go, h.dtype, 2), gates, tanh_c, c_prev, dg)


# Note [Compiled LSTM sequence]: rnn_sequence.LSTMSequence's time loop makes, per step, a GEMM (np.matmul into the
# gates) and a compiled cell call, each paying its Python-side dispatch (~4-5 us: argument checks, the call from
# Python), which at GNMT's sizes (32x128 states, ~60 us of arithmetic a step) is a tenth of the loop. The loops below
# run the whole sequence in one compiled call, each step's product through the cblas routine NumPy links against
# (jit.blas_intrinsics), called as np.matmul calls it, so with the same bits: ?gemm, or ?gemv for a one-row step;
# the cells and backward steps as above. Padded or packed: steps holds each step's (rows, offset), in processing
# order; rows outside a step carry their state over (forward) or keep their gradient (backward), as the Python
# loops do. One layer direction, batch 32, 16 steps (GNMT's sizes), per-step calls -> one call (ms, medians of 10
# alternating rounds, 2026-11-29, 2-core EPYC VM), 2 threads: 128 hidden forward 1.94 -> 1.85, backward 1.34 ->
# 1.11; 64 hidden 0.78 -> 0.65, 0.46 -> 0.32; 256 hidden (32 steps) 9.56 -> 9.05, 8.29 -> 7.52; 1 thread alike
# (1.69 -> 1.59, 1.26 -> 1.08; 0.63 -> 0.55, 0.36 -> 0.30). The GRU's loops alike, 2 threads: 128 hidden 1.23 -> 1.08,
# 0.92 -> 0.78; 256 hidden (32 steps) 9.42 -> 8.80, 8.15 -> 7.65. rnn_sequence.WHOLE_LOOP = False keeps the Python
# loops.
_gemm, _gemv = jit.blas_intrinsics()


# Note [LSTM rows in parallel]: a batch row's recurrence never reads another row, so the loops take a row range
# [lo, hi) and _by_rows runs the batch in one piece per ember thread (parallel.run_blas: OpenBLAS on one thread
# meanwhile), each piece its whole sequence with no hand-off between steps. Unsplit, each step's GEMM ran on
# OpenBLAS's two threads and the cell on one, the other spinning; split, both run on both cores. Per step at GNMT's
# sizes (32 x 128 states, us, one thread unless said): GEMM 32 rows 89 (2 threads 56), 16 rows 58; cell 38.
# LSTM(128, 128) forward loop, 16 steps, 2 threads, ms: 1.68 whole -> 1.42 split. GNMT training step (bench/models.py),
# whole vs split alternating in one process, medians of 40, ms: 44.3 -> 41.4 and 46.7 -> 44.2 (forward LSTMs ~1.2
# of it, backward ~1-1.5). Pieces differ from the unsplit loop only in the GEMM's row count, which may change its
# bits (tests/test_lstm_jit.py holds the two to 1e-6).


@numba.njit(inline="always", error_model="numpy")
def _times_wt(mm, mv, rows, a, w, out):
    """out[:rows] = a[:rows] w^T for a (B, H), w (G H, H), out (B, G H), all C-contiguous, as np.matmul computes it
    (gemv for one row)."""
    width, n = w.shape
    zero = out.dtype.type(0)
    if rows == 1:
        _gemv(mv, 0, width, n, w.ctypes.data, n, a.ctypes.data, zero, out.ctypes.data)
    else:
        _gemm(mm, 1, rows, width, n, a.ctypes.data, n, w.ctypes.data, n, zero, out.ctypes.data, width)


@numba.njit(inline="always", error_model="numpy")
def _times_w(mm, mv, rows, d, w, out):
    """out[:rows] = d[:rows] w for d (B, G H), w (G H, H), out (B, H), all C-contiguous, as np.matmul computes it
    (gemv for one row)."""
    width, n = w.shape
    zero = out.dtype.type(0)
    if rows == 1:
        _gemv(mv, 1, width, n, w.ctypes.data, n, d.ctypes.data, zero, out.ctypes.data)
    else:
        _gemm(mm, 0, rows, n, width, d.ctypes.data, width, w.ctypes.data, n, zero, out.ctypes.data, n)


@numba.njit(inline="always", error_model="numpy")
def _times_packed(a, packed, out):
    """out = a wp^T for the rows of a (R, K) and out (R, N), rows C-contiguous, packed = (wp, taps, zero) with wp
    (N / 16, K, 16) the weight by blocks of 16 output columns (_packing): 6 rows x 16 columns a register tile
    (conv_lanes_jit's forward tile, Note [Packed LSTM weights]); a last tile of fewer rows repeats its last."""
    wp, taps, zero = packed
    rows, xs, ys = a.shape[0], a.shape[1], out.shape[1]
    K, last = wp.shape[1], rows - 1
    xa, ya, wa, ta, za = a.ctypes.data, out.ctypes.data, wp.ctypes.data, taps.ctypes.data, zero.ctypes.data
    for blk in range(wp.shape[0]):
        w_at, y_at = wa + 4 * blk * K * WIDTH, ya + 4 * blk * WIDTH
        for r0 in range(0, rows, 6):
            r1, r2, r3, r4, r5 = min(r0 + 1, last), min(r0 + 2, last), min(r0 + 3, last), min(r0 + 4, last), \
                min(r0 + 5, last)
            _FORWARD_TILE(xa, w_at, za, y_at, ta, K, r0 * xs, r1 * xs, r2 * xs, r3 * xs, r4 * xs, r5 * xs,
                          r0 * ys, r1 * ys, r2 * ys, r3 * ys, r4 * ys, r5 * ys)


@numba.njit(inline="always", error_model="numpy")
def _product(mm, mv, rows, a, w, packed, out, transposed):
    """out[:rows] = a[:rows] w^T (transposed) or a[:rows] w: through the packed weight when there is one, else
    BLAS (_times_wt, _times_w)."""
    if packed[0].shape[0]:
        _times_packed(a[:rows], packed, out[:rows])
    elif transposed:
        _times_wt(mm, mv, rows, a, w, out)
    else:
        _times_w(mm, mv, rows, a, w, out)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _forward_sequence(mm, mv, w, packed, x, bias, gates, hs, cs, tcs, steps, lo, hi):
    n = hs.shape[2]
    for k in range(gates.shape[0]):
        rows, off = steps[k, 0], steps[k, 1]
        top = min(rows, hi)  # the step's rows in [lo, hi) are [lo, top)
        if top > lo:
            _product(mm, mv, top - lo, hs[k, lo:top], w, packed, gates[k, lo:top], True)
            _cell(gates[k, lo:top], x[off + lo:off + top], bias, cs[k, lo:top], cs[k + 1, lo:top], tcs[k, lo:top],
                  hs[k + 1, lo:top])
        for r in range(max(lo, rows), hi):
            for j in range(n):
                hs[k + 1, r, j] = hs[k, r, j]
                cs[k + 1, r, j] = cs[k, r, j]


def _by_rows(kernel, w, transposed, batch, flops, *args):
    """kernel(gemm, gemv, w, packed, *args, lo, hi) over the batch rows [lo, hi) split across ember's threads (Note
    [LSTM rows in parallel]); one call with OpenBLAS's own threads when the work is too small to split. Its steps'
    products are by w^T (transposed) or w, through w packed when _packing takes it."""
    mm, mv = cblas.address("gemm", w.dtype), cblas.address("gemv", w.dtype)
    packed = _packing(w, transposed)
    parallel.run_blas(lambda lo, hi: kernel(mm, mv, w, packed, *args, lo, hi), batch, flops)


# Note [Packed LSTM weights]: OpenBLAS packs its operands on every call; a step's product at GNMT's sizes is one
# call a step on 16 rows (a piece, Note [LSTM rows in parallel]), where the repacking of the 256 KB weight weighs
# against 2 MFLOP of work. The weight packed once a sequence, by blocks of 16 output columns, goes through
# conv_lanes_jit's 6 x 16 register tile instead. One thread, us a product (tile vs OpenBLAS): 16 x 128 times
# 128 x 512 36 vs 52, 16 x 512 times 512 x 128 41 vs 57; 32 rows 61 vs 64 and 64 vs 63; at 64 hidden even
# (11 vs 11, 10.5 vs 12). GNMT training step, BLAS vs packed alternating in one process, medians of 40, ms: 40.5 ->
# 40.2 and 46.1 -> 44.8 (the forward LSTMs 0.4-0.8 of it). float32 only, output columns a multiple of 16; sums in
# order over K in float32, so to rounding against BLAS (tests/test_lstm_jit.py). PACKED = False keeps BLAS.
PACKED = True
_UNPACKED = (np.empty((0, 1, WIDTH), np.float32), np.empty(0, np.int64), np.empty(0, np.float32))


def _packing(w, transposed):
    """(wp, taps, zero) for _times_packed: w^T's (transposed) or w's columns by blocks of 16, (N / 16, K, 16),
    the taps' offsets 0..K-1 and a zero bias; _UNPACKED (empty) when the product stays on BLAS."""
    n = w.shape[0] if transposed else w.shape[1]
    if not PACKED or w.dtype != np.float32 or n % WIDTH:
        return _UNPACKED
    k = w.shape[1] if transposed else w.shape[0]
    blocks = w.reshape(n // WIDTH, WIDTH, k).transpose(0, 2, 1) if transposed else \
        w.reshape(k, n // WIDTH, WIDTH).transpose(1, 0, 2)
    return np.ascontiguousarray(blocks), np.arange(k, dtype=np.int64), np.zeros(WIDTH, np.float32)


def forward_sequence(w, x, gates, hs, cs, tcs, steps, bias=None):
    """An LSTM layer direction's forward time loop in one call (Note [Compiled LSTM sequence]): for each step k of
    steps ((count, 2) int64: rows, offset), gates[k, :rows] = hs[k, :rows] w^T (w (4H, H) C-contiguous), then cell
    with x[offset:offset + rows] + bias (x: the inputs' projections as (rows, 4H); bias (4H,) or None), into
    cs[k + 1], tcs[k] and hs[k + 1]; the other rows of hs[k + 1] and cs[k + 1] are copied from step k. float32;
    sequence_runs(w) must hold."""
    bias = np.zeros(w.shape[0], w.dtype) if bias is None else bias
    _by_rows(_forward_sequence, w, True, gates.shape[1], 2 * gates[..., 0].size * w.size, x, bias, gates, hs, cs,
             tcs, steps)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _backward_sequence(mm, mv, w, packed, gates, cs, tcs, dgates, dh, dc, go, steps, lo, hi):
    for k in range(gates.shape[0] - 1, -1, -1):
        rows, off = steps[k, 0], steps[k, 1]
        top = min(rows, hi)
        if top > lo:
            # go[...] of an empty go (no output gradient) is empty, as back_step takes it
            _back_step(dh[lo:top], dc[lo:top], go[off + lo:off + top], gates[k, lo:top], tcs[k, lo:top],
                       cs[k, lo:top], dgates[k, lo:top])
            _product(mm, mv, top - lo, dgates[k, lo:top], w, packed, dh[lo:top], False)


def backward_sequence(w, gates, cs, tcs, dgates, dh, dc, go, steps):
    """rnn_sequence._lstm_steps_back's recursion in one call (Note [Compiled LSTM sequence]), the same bits as its
    per-step loop: back_step, then dh[:rows] = dgates[k, :rows] w (w (4H, H) C-contiguous), from the last step of
    steps ((count, 2) int64: rows, offset) to the first; go (the output's gradient as (rows, H)) may be None.
    float32 or float64; sequence_runs(w) must hold."""
    _by_rows(_backward_sequence, w, False, dh.shape[0], 2 * gates[..., 0].size * w.size, gates, cs, tcs, dgates, dh,
             dc, jit.optional(go, dh.dtype, 2), steps)


def sequence_runs(w):
    """Whether the compiled sequences run with weight w (the BLAS is reachable from compiled code, w is
    C-contiguous float32/float64)."""
    return (w.dtype in jit.DTYPES and w.flags.c_contiguous and cblas.address("gemm", w.dtype) is not None
            and cblas.address("gemv", w.dtype) is not None)


# ---- GRU (gate order r, z, n; torch's placement of b_hn: n = tanh(xg_n + r (h W_hn^T + b_hn))) ----------

@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def _gru_cell(hg, xg, ws, h_prev, h):
    rows, width = hg.shape
    n = width // 3
    for b in range(rows):
        g, x, w, hp, hb = hg[b], xg[b], ws[b], h_prev[b], h[b]
        r, z, new, hn = w[:n], w[n:2 * n], w[2 * n:3 * n], w[3 * n:4 * n]
        gr, gz, gn = g[:n], g[n:2 * n], g[2 * n:3 * n]
        xr, xz, xn = x[:n], x[n:2 * n], x[2 * n:3 * n]
        for k in range(n):
            r[k] = _sigmoid(xr[k] + gr[k])
        for k in range(n):
            z[k] = _sigmoid(xz[k] + gz[k])
        for k in range(n):
            hn[k] = gn[k]
        for k in range(n):  # tanh(v) = 2 sigmoid(2 v) - 1 (Note [LSTM tanh gate])
            new[k] = _TWO * _sigmoid(_TWO * (r[k] * gn[k] + xn[k])) - _ONE
        for k in range(n):
            hb[k] = (hp[k] - new[k]) * z[k] + new[k]


def gru_cell(hg, xg, ws, h_prev, h):
    """One GRU step from hg = h_prev W_hh^T + b_hh (B, 3H) and the inputs' xg (B, 3H): ws (B, 4H) = (r, z, n, hg_n)
    with r, z = sigmoid(xg + hg), n = tanh(xg_n + r hg_n), and h = (h_prev - n) z + n. float32 rows."""
    _gru_cell(hg, xg, ws, h_prev, h)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _gru_back_step(h, go, ws, h_prev, dxg, dhg):
    rows, n = h.shape
    one = h.dtype.type(1)
    for b in range(rows):
        hb, w, hp, dx, dg = h[b], ws[b], h_prev[b], dxg[b], dhg[b]
        r, z, new, hn = w[:n], w[n:2 * n], w[2 * n:3 * n], w[3 * n:4 * n]
        dxr, dxz, dxn = dx[:n], dx[n:2 * n], dx[2 * n:3 * n]
        dgr, dgz, dgn = dg[:n], dg[n:2 * n], dg[2 * n:3 * n]
        if go.shape[0]:
            gb = go[b]
            for k in range(n):
                hb[k] += gb[k]
        for k in range(n):  # with a = (1 - n^2)(1 - z): d(xg_r) = h a hn r (1 - r)
            a = (one - new[k] * new[k]) * (one - z[k])
            v = hb[k] * (((a * hn[k]) * r[k]) * (one - r[k]))
            dxr[k] = v
            dgr[k] = v
        for k in range(n):  # d(xg_z) = h (h_prev - n) z (1 - z)
            v = hb[k] * (((hp[k] - new[k]) * z[k]) * (one - z[k]))
            dxz[k] = v
            dgz[k] = v
        for k in range(n):  # d(xg_n) = h a, d(hg_n) = h a r
            a = (one - new[k] * new[k]) * (one - z[k])
            dxn[k] = hb[k] * a
            dgn[k] = hb[k] * (a * r[k])
        for k in range(n):
            hb[k] *= z[k]


def gru_back_step(h, go, ws, h_prev, dxg, dhg):
    """One step of the GRU backward recursion before its GEMM, in place, in the NumPy recursion's operations and
    order (the same bits): h += go (None: no output gradient); from the step's ws (r, z, n, hg_n) and previous
    h, the gradients of xg and hg (B, 3H each); h *= z (the caller adds d(hg) W_hh)."""
    _gru_back_step(h, jit.optional(go, h.dtype, 2), ws, h_prev, dxg, dhg)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _gru_forward_sequence(mm, mv, w, packed, b, x, ws, hs, hg_all, steps, lo, hi):
    n = hs.shape[2]
    width = 3 * n
    for k in range(ws.shape[0]):
        rows, off = steps[k, 0], steps[k, 1]
        top = min(rows, hi)
        if top > lo:
            hg = hg_all[lo:top]
            _product(mm, mv, top - lo, hs[k, lo:top], w, packed, hg, True)
            if b.shape[0]:
                for r in range(top - lo):
                    for j in range(width):
                        hg[r, j] += b[j]
            _gru_cell(hg, x[off + lo:off + top], ws[k, lo:top], hs[k, lo:top], hs[k + 1, lo:top])
        for r in range(max(lo, rows), hi):
            for j in range(n):
                hs[k + 1, r, j] = hs[k, r, j]


def gru_forward_sequence(w, b, x, ws, hs, hg, steps):
    """A GRU layer direction's forward time loop in one call (Note [Compiled LSTM sequence]): for each step k of
    steps ((count, 2) int64: rows, offset), hg[:rows] = hs[k, :rows] w^T (+ b: b_hh, or None), then gru_cell with
    x[offset:offset + rows] into ws[k] and hs[k + 1]; the other rows of hs[k + 1] are copied from step k. hg is
    (B, 3H) scratch. float32; sequence_runs(w) must hold."""
    _by_rows(_gru_forward_sequence, w, True, hg.shape[0], 2 * ws[..., 0].size * w.size, jit.optional(b, w.dtype), x,
             ws, hs, hg, steps)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _gru_backward_sequence(mm, mv, w, packed, ws, hs, dxg, dhg, dh, go, tmp, steps, lo, hi):
    n = hs.shape[2]
    for k in range(ws.shape[0] - 1, -1, -1):
        rows, off = steps[k, 0], steps[k, 1]
        top = min(rows, hi)
        if top > lo:
            h = dh[lo:top]
            _gru_back_step(h, go[off + lo:off + top], ws[k, lo:top], hs[k, lo:top], dxg[k, lo:top], dhg[k, lo:top])
            t = tmp[lo:top]
            _product(mm, mv, top - lo, dhg[k, lo:top], w, packed, t, False)
            for r in range(top - lo):
                for j in range(n):
                    h[r, j] += t[r, j]


def gru_backward_sequence(w, ws, hs, dxg, dhg, dh, go, tmp, steps):
    """rnn_sequence._gru_steps_back's recursion in one call (Note [Compiled LSTM sequence]), the same bits as its
    per-step loop: gru_back_step, then dh[:rows] += dhg[k, :rows] w, from the last step of steps ((count, 2) int64:
    rows, offset) to the first; dxg and dhg (count, B, 3H), tmp (B, H) scratch, go (rows, H) or None. float32 or
    float64; sequence_runs(w) must hold."""
    _by_rows(_gru_backward_sequence, w, False, dh.shape[0], 2 * ws[..., 0].size * w.size, ws, hs, dxg, dhg, dh,
             jit.optional(go, dh.dtype, 2), tmp, steps)
