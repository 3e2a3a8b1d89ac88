"""Training batch norm's forward and first-order backward as NumPy kernels over (N, C, L) arrays.

The per-channel operands are expanded to (C*L,) planes so that every elementwise pass is a loop over
long contiguous rows (see Note [Batch norm planes]); the arithmetic is torch's two-pass form.
"""
import numpy as np

from . import allocator, parallel

# Note [Batch norm planes]: a per-channel operand broadcast as a (C, 1) column against (N, C, L)
# makes NumPy run N*C inner loops of L elements with a stride-0 operand: 2.4-3.5x slower than the
# same pass against a (C*L,) plane (the column repeated L times, 1/N of the input's size) over the
# (N, C*L) view. Measured on 32x{48,96,192}x{1024,256,16} float32 (one thread, AVX2): centre, scale
# and shift 1.00 -> 0.38 ms at L = 256, 0.27 -> 0.12 ms at L = 16. Same operations, same order: the
# results are bit-for-bit those of the column form.

# Note [Batch norm across threads]: training batch norm makes several passes over (N, C, L), each
# per channel (mean, centre, variance, scale, shift; five more backward), so the channels split into
# one range per intra-op thread, each range running all its passes (NumPy releases the GIL in them).
# Cache-sized blocks of channels were slower: an einsum over a block of a few channels is N strided
# pieces. Forward / backward kernels on 32x64x32x32 float32: 1.10 / 1.64 ms vs 2.11 / 3.11 ms on one
# thread over the whole tensor, and 4.0 / 3.9 ms in 256 KB blocks (column operands, before the planes).


def _over_channel_ranges(arr, body):
    """body(a, b) over ranges of whole channels of arr (N, C, L), one per intra-op thread."""
    parallel.run(body, arr.shape[1], arr.nbytes)


def _rows(arr, a, b):
    """Channels a:b of arr (N, C, L) as an (N, (b - a) * L) view: contiguous rows, strided by sample."""
    return arr[:, a:b].reshape(arr.shape[0], -1)


def _plane(values, length):
    """(C,) per-channel values repeated into a (C * length,) plane."""
    return np.repeat(values, length)


# Note [Batch norm one-pass variance]: the forward reads x twice (its sum, then its sum of squares)
# and writes y once as x * alpha + beta (alpha = invstd * weight, beta = bias - mean * alpha: torch's own
# formula, batch_norm_cpu_contiguous_impl), instead of centring x into y first: 4 passes instead of 5,
# ~30% less time on 3-6 MB inputs. E[x^2] - mean^2 cancels when the mean is large against the spread:
# channels with mean^2 > _SPREAD * var (at most log2(1 + _SPREAD) bits lost) take the two-pass variance,
# as torch computes it. In a MobileNetV2-style step ~6% of channels do.
_SPREAD = 4.0


def _variance(xs, mean, count):
    """Biased variance per channel of xs (N, C, L): one pass (E[x^2] - mean^2, in float64), two passes
    for the channels where that would cancel (Note [Batch norm one-pass variance])."""
    m = mean.astype(np.float64)
    var = np.einsum("ncl,ncl->c", xs, xs) / count - m * m
    redo = np.flatnonzero(m * m > _SPREAD * var)
    if redo.size:
        xc = xs[:, redo] - mean[redo][:, None]
        var[redo] = np.einsum("ncl,ncl->c", xc, xc) / count
    return var.astype(xs.dtype)


def train_forward(x3, eps, weight, bias):
    """(y, mean, biased var, invstd) of training batch norm on x3 (N, C, L), y in a fresh buffer."""
    n, c, l = x3.shape
    count = n * l
    y = allocator.empty(x3.shape, x3.dtype)
    stats = np.empty((3, c), dtype=x3.dtype)

    def block(a, b):
        xs = x3[:, a:b]
        mean = np.einsum("ncl->c", xs) / count
        var = _variance(xs, mean, count)
        invstd = 1.0 / np.sqrt(var + eps)
        stats[:, a:b] = mean, var, invstd
        alpha = invstd if weight is None else invstd * weight[a:b]
        beta = -mean * alpha if bias is None else bias[a:b] - mean * alpha
        ys = _rows(y, a, b)
        np.multiply(_rows(x3, a, b), _plane(alpha, l), out=ys)
        ys += _plane(beta, l)
    _over_channel_ranges(x3, block)
    return y, stats[0], stats[1], stats[2]


def train_grads(g3, x3, mean, invstd, weight, need_gx):
    """(gx or None, sum of g, sum of g * (x - mean)) per channel; gx is training batch norm's input
    gradient (g - mean(g) - xhat * mean(g * xhat)) * invstd * w, in a fresh buffer."""
    n, c, l = g3.shape
    count = n * l
    gx = allocator.empty(g3.shape, g3.dtype) if need_gx else None
    sums = np.empty((2, c), dtype=g3.dtype)

    def block(a, b):
        s = invstd[a:b]
        full = gx[:, a:b] if need_gx else np.empty((n, b - a, l), g3.dtype)
        buf = full.reshape(n, -1)
        gs = _rows(g3, a, b)
        np.subtract(_rows(x3, a, b), _plane(mean[a:b], l), out=buf)
        sum_g = np.einsum("ncl->c", g3[:, a:b])
        sum_gxc = np.einsum("ncl,ncl->c", g3[:, a:b], full)
        sums[:, a:b] = sum_g, sum_gxc
        if need_gx:
            np.multiply(buf, _plane(s * s * sum_gxc / count, l), out=buf)
            np.subtract(gs, buf, out=buf)
            buf -= _plane(sum_g / count, l)
            buf *= _plane(s if weight is None else s * weight[a:b], l)
    _over_channel_ranges(g3, block)
    return gx, sums[0], sums[1]
