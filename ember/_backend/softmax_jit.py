"""The softmax family's row pass as a compiled loop (numba): e = exp(x - m) and its row sum s in one pass over a
row, where NumPy makes three (a subtraction, its exp, a sum; NumPy's float32 exp alone costs ~2 ns an element on
this AVX2 VM, the compiled one below ~1.1). The row maxima m come from NumPy's maximum.reduce (it propagates NaN),
or for short rows (SHORT_ROW) from a loop here that propagates NaN the same way.
float32 only: the exp is lstm_jit's (Cody-Waite reduction, a polynomial, the exponent bits; ~2 ulp, as NumPy's;
for arguments <= 0, which x - m always is), so results agree with the NumPy rows to rounding, not bit for bit; and
the sum runs in vector lanes (partial sums added at the end, as NumPy's pairwise sum does in blocks). Loaded through
jit.load("softmax_jit") (Note [JIT kernels]); tests/test_softmax_jit.py holds it to the NumPy rows and the ops to
torch.
"""
import numba
import numpy as np

from .lstm_jit import _CONTRACT, _exp

_ZERO = np.float32(0)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_sum(a):
    """sum(a) of a float32 row, reassociated so that it runs in vector lanes."""
    s = _ZERO
    for j in range(a.shape[0]):
        s += a[j]
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def _exp_rows(x, m, e, s, normalize):
    for i in range(x.shape[0]):
        mi = m[i, 0]
        xi = x[i]
        ei = e[i]
        for j in range(x.shape[1]):
            ei[j] = _exp(xi[j] - mi)
        si = _row_sum(ei)
        s[i, 0] = si
        if normalize:  # softmax: the row divided while in cache (IEEE division: NumPy's e / s, the same bits)
            for j in range(x.shape[1]):
                ei[j] = ei[j] / si


def exp_rows(x, m, e, s, normalize=False):
    """e = exp(x - m) and s = e.sum(1, keepdims=True) for 2-D float32 x and e (rows contiguous), m the rows'
    maxima and s as (rows, 1) float32 arrays; then e /= s when normalize (softmax)."""
    _exp_rows(x, m, e, s, normalize)


# Rows up to SHORT_ROW wide also take their maxima here: NumPy's maximum.reduce along a short last axis pays per row
# (an attention softmax over 32 x 16 rows of 16: 37 us of the op's 96; here ~4), where along rows of thousands it
# runs in vector lanes and this scalar loop would not.
SHORT_ROW = 64


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_CONTRACT)
def _max_exp_rows(x, m, e, s, normalize):
    for i in range(x.shape[0]):
        xi = x[i]
        mi = xi[0]
        for j in range(1, x.shape[1]):
            v = xi[j]
            if v > mi or v != v:  # a NaN stays the maximum, as in np.maximum
                mi = v
        m[i, 0] = mi
    _exp_rows(x, m, e, s, normalize)


def max_exp_rows(x, m, e, s, normalize=False):
    """exp_rows with m (rows, 1) written first: the rows' maxima, NaN where a row holds one (np.maximum.reduce's);
    for rows of 1 to SHORT_ROW elements."""
    _max_exp_rows(x, m, e, s, normalize)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _nll_sum(x, t, m, s):
    total = 0.0
    for i in range(x.shape[0]):
        lse = m[i, 0] + np.float32(np.log(np.float64(s[i, 0])))  # float32 m + log(s), as NumPy's lse rows
        total += np.float64(np.float32(lse - x[i, t[i]]))
    return total


def nll_sum(x, t, m, s):
    """sum over rows i of m_i + log(s_i) - x[i, t_i] (cross_entropy's per-sample losses from the row pass's maxima m
    and exp sums s, (rows, 1) float32) for 2-D float32 x and in-range int64 targets t: each loss rounded to float32
    as the NumPy rows compute it, their sum in float64 (NumPy sums them pairwise in float32: to rounding)."""
    return _nll_sum(x, t, m, s)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _nll_grad_rows(e, s, t, c, gx):
    for i in range(e.shape[0]):
        ci = c / s[i, 0]
        ei, gi = e[i], gx[i]
        for j in range(e.shape[1]):
            gi[j] = ei[j] * ci
        gi[t[i]] -= c


def nll_grad_rows(e, s, t, c, gx):
    """cross_entropy's plain backward, gx = c (e / s - onehot(t)) for 2-D float32 e (exp(x - m)), s its row sums
    ((rows, 1)), int64 targets t and the float32 scalar c (the loss's gradient over the count): the general path's
    operations (c / s, e times it, c off at the targets) in one call."""
    _nll_grad_rows(e, s, t, c, gx)


@numba.njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _row_dot(a, b):
    """sum(a * b) of two float32 rows, the products rounded, their sum reassociated into vector lanes."""
    s = _ZERO
    for j in range(a.shape[0]):
        s += a[j] * b[j]
    return s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _softmax_grad_rows(g, o, t):
    for i in range(g.shape[0]):
        gi, oi, ti = g[i], o[i], t[i]
        s = _row_dot(gi, oi)
        for j in range(g.shape[1]):
            ti[j] = (gi[j] - s) * oi[j]


def softmax_grad_rows(g, o, t):
    """softmax's backward along rows, t = (g - sum(g o)) o, for 2-D float32 g, o and t (rows contiguous): one call
    where the NumPy rows make four passes (a product, its row sums, a difference, a product); the row sums in vector
    lanes, so to rounding against them."""
    _softmax_grad_rows(g, o, t)
