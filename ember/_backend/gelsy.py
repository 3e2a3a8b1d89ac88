"""LAPACK's xGELSY least squares in NumPy: torch.linalg.lstsq's default CPU driver.

For every matrix of a batch (all in step, each with its own pivots), in the input's precision,
as the reference routine does it:
1. scale A and B into the safe range (xLASCL) when their largest entry is tiny or huge;
2. QR with column pivoting (xGEQP3 with every column free): the column of largest remaining
   norm goes next; norms are downdated after each step and recomputed when cancellation
   makes the downdate inaccurate; the reflectors are applied to B as they are made (Q^H B);
3. rank by incremental condition estimation (xLAIC1): estimates of the largest and smallest
   singular values of the leading block R11 grow one column at a time, and the rank is the
   largest k with smax * rcond <= smin (0 when R[0, 0] == 0);
4. the minimum-norm solution of the truncated system [R11 R12] z = (Q^H B)[:rank]
   (xTZRZF/xORMRZ's complete orthogonal factorization; here a QR of [R11 R12]^H), and
   x = P z undoes the pivoting.

torch 2.13.0 hands LAPACK an uninitialized pivot array that it also reuses across a batch,
so its own result for a rank-deficient A can depend on memory left by earlier allocations
(pytorch/pytorch#187411, fixed by zeroing it: #187436). This is the routine as documented
(every column free, every matrix of the batch alike). Rounding differs from MKL's blocked
code, so a rank can differ where smin / smax lies within rounding of rcond; xLARFG's rescaling
of a column whose remaining norm is below tiny / eps is not reproduced.
"""
import numpy as np


def gelsy(a, b, rcond):
    """Solutions (batch, n, k) and ranks (batch,) of min ||a x - b|| for a (batch, m, n),
    b (batch, m, k) of one dtype; rcond None is torch's default eps * max(m, n).
    Matrices that are clearly of full column rank take a batched QR solve (Note [gelsy's full-rank
    shortcut]); the others the routine itself."""
    batch, m, n = a.shape
    k = b.shape[-1]
    real = a.real.dtype.type
    if rcond is None:
        rcond = np.finfo(real).eps * max(m, n)
    rcond = real(rcond)
    clear = _clearly_full_rank(a, b, rcond)
    if clear is None or not clear.any():
        return _routine(a, b, rcond)
    x = np.empty((batch, n, k), a.dtype)
    rank = np.full(batch, n, np.int64)
    q, r = np.linalg.qr(a[clear])
    x[clear] = np.linalg.solve(r, np.matmul(q.conj().swapaxes(-1, -2), b[clear]))
    rest = ~clear
    if rest.any():
        x[rest], rank[rest] = _routine(a[rest], b[rest], rcond)
    return x, rank


# Note [gelsy's full-rank shortcut]: xGELSY's rank is the largest k with smax_est * rcond <= smin_est
# for the leading k x k block of the pivoted R. Its estimates are bounds (smax_est <= smax and
# smin_est >= smin of that block), and for m >= n the block's columns are a subset of A's, whose
# smallest singular value is at least A's (interlacing). So when A's own smallest singular value
# exceeds rcond times its largest, with a margin for the SVD's rounding, the rank is n and the
# solution is the unique least-squares one, which a QR solve gives to rounding: one batched call
# instead of the routine's loop over columns (~100x faster on small matrices). Scaled inputs (tiny or
# huge entries), wide matrices and everything near the threshold take the routine.

def _clearly_full_rank(a, b, rcond):
    """A bool per matrix (None if no matrix can qualify): full column rank by a clear margin."""
    batch, m, n = a.shape
    if m < n or n == 0 or b.shape[-1] == 0:
        return None
    real = a.real.dtype.type
    small = np.finfo(real).tiny / np.finfo(real).eps
    top_a = np.max(np.abs(a), axis=(-2, -1))
    top_b = np.max(np.abs(b), axis=(-2, -1))
    ok = (top_a >= small) & (top_a <= 1 / small) & (top_b <= 1 / small) & np.isfinite(top_a) & np.isfinite(top_b)
    if not ok.any():
        return None
    s = np.zeros((batch, n), real)
    s[ok] = np.linalg.svd(a[ok], compute_uv=False)
    margin = 2 * max(rcond, 0) + 16 * np.finfo(real).eps * max(m, n)
    return ok & (s[:, -1] > margin * s[:, 0])


def _routine(a, b, rcond):
    """xGELSY itself, steps 1-4 of the module docstring."""
    batch, m, n = a.shape
    k = b.shape[-1]
    x = np.zeros((batch, n, k), a.dtype)
    rank = np.zeros(batch, np.int64)
    if min(m, n) == 0 or k == 0:  # LAPACK returns at once: rank 0, and torch's solution stays 0
        return x, rank
    a_scale, a = _scaled(a)
    b_scale, b = _scaled(b)
    perm = _pivoted_qr(a, b)
    rank = _estimated_rank(a, rcond)
    for r in np.unique(rank[rank > 0]):  # matrices of one rank are solved together
        idx = np.flatnonzero(rank == r)
        t = np.triu(a[idx, :r])
        c = b[idx, :r]
        z = _substitution(t, c) if r == n else _min_norm_solution(t, c)
        xs = np.empty_like(z)
        np.put_along_axis(xs, perm[idx][:, :, None], z, axis=1)
        x[idx] = xs
    return x * (a_scale / b_scale)[:, None, None], rank


def _scaled(a):
    """(factor, a * factor) per matrix: xGELSY's scaling of a matrix whose largest magnitude
    is below tiny / eps or above its inverse into that range (factor 1 otherwise and for zeros)."""
    real = a.real.dtype.type
    small = np.finfo(real).tiny / np.finfo(real).eps
    big = 1 / small
    top = np.max(np.abs(a), axis=(-2, -1))
    target = np.where(top < small, small, np.where(top > big, big, top))
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(top > 0, target / top, 1).astype(real)
    return factor, a * factor[:, None, None]


def _pivoted_qr(a, b):
    """xGEQP3 (all columns free) in place on a batch: R in a's upper triangles, Q^H b in b;
    returns the permutations (column j of R[i] came from column perm[i, j] of a[i])."""
    batch, m, n = a.shape
    real = a.real.dtype.type
    tol3z = np.sqrt(real(np.finfo(real).eps / 2))  # sqrt of LAPACK's eps (unit roundoff)
    rows = np.arange(batch)
    perm = np.tile(np.arange(n), (batch, 1))
    vn1 = _norm(a, axis=-2)  # norms of the columns' remaining parts
    vn2 = vn1.copy()  # the norms when last computed exactly
    for i in range(min(m, n)):
        p = i + np.argmax(vn1[:, i:], axis=1)  # first of the largest, as IxAMAX
        col = a[:, :, i].copy()
        a[:, :, i] = a[rows, :, p]
        a[rows, :, p] = col
        at = perm[:, i].copy()
        perm[:, i] = perm[rows, p]
        perm[rows, p] = at
        vn1[rows, p] = vn1[:, i]
        vn2[rows, p] = vn2[:, i]
        tau, v = _reflector(a[:, i:, i])
        _apply_reflector(a[:, i:, i + 1:], tau, v)
        _apply_reflector(b[:, i:], tau, v)
        _downdate_norms(a, i, vn1, vn2, tol3z)
    return perm


def _apply_reflector(c, tau, v):
    """c := H^H c = c - v (conj(tau) v^H c) in place, rounded in xLARF's order."""
    w = np.conj(v)[:, None, :] @ c
    c -= v[:, :, None] * (np.conj(tau)[:, None, None] * w)


def _norm(x, axis):
    """2-norms along axis without the underflow or overflow of squaring tiny or huge entries
    in their own precision (as xNRM2 avoids them)."""
    mag = np.abs(x)
    top = np.max(mag, axis=axis, keepdims=True, initial=0)
    safe = np.where(top > 0, top, 1)
    return np.squeeze(top, axis) * np.sqrt(np.sum((mag / safe) ** 2, axis=axis))


def _reflector(cols):
    """xLARFG in place on each row of cols (batch, len): beta in cols[:, 0], zeros below, and
    the reflectors H = I - tau v v^H with v[0] = 1 and H^H col = (beta, 0, ..., 0); returns
    (tau, v); tau = 0 (H = I) where the column is already (real alpha, 0, ..., 0)."""
    alpha = cols[:, 0]
    xnorm = _norm(cols[:, 1:], axis=-1)
    same = (xnorm == 0) & (alpha.imag == 0)
    beta = -np.copysign(_norm(np.stack([alpha.real, alpha.imag, xnorm]), axis=0), alpha.real)
    beta = np.where(same, alpha.real, beta)
    safe = np.where(same, 1, beta)
    if np.iscomplexobj(cols):
        tau = (beta - alpha.real) / safe - 1j * (alpha.imag / safe)
    else:
        tau = (beta - alpha) / safe
    v = np.empty_like(cols)
    v[:, 0] = 1
    v[:, 1:] = cols[:, 1:] * (1 / np.where(same, 1, alpha - beta))[:, None]
    cols[:, 0] = beta
    cols[:, 1:] = 0
    return tau.astype(cols.dtype), v


def _downdate_norms(a, i, vn1, vn2, tol3z):
    """xLAQP2's update of the remaining columns' norms after step i: downdate by the entry
    row i took, or recompute where the downdate has lost too many digits."""
    m = a.shape[1]
    old = vn1[:, i + 1:]
    live = old != 0
    safe = np.where(live, old, 1)
    temp = 1 - (np.abs(a[:, i, i + 1:]) / safe) ** 2
    temp = np.maximum(temp, 0)
    temp2 = temp * (old / np.where(live, vn2[:, i + 1:], 1)) ** 2
    redo = live & (temp2 <= tol3z)
    keep = live & ~redo
    if i + 1 < m and redo.any():
        fresh = _norm(a[:, i + 1:, i + 1:], axis=-2)
    else:
        fresh = np.zeros_like(old)
    vn1[:, i + 1:] = np.where(keep, old * np.sqrt(temp), np.where(redo, fresh, old))
    vn2[:, i + 1:] = np.where(redo, fresh, vn2[:, i + 1:])


def _estimated_rank(r, rcond):
    """xGELSY's ranks for a batch of R factors: each leading block grows while
    smax * rcond <= smin (xLAIC1's estimates), all matrices in step; 0 where R[0, 0] == 0."""
    batch, m, n = r.shape
    mn = min(m, n)
    smax = np.abs(r[:, 0, 0])
    smin = smax.copy()
    xmin = np.zeros((batch, mn), r.dtype)  # approximate singular vectors of R11 for smin, smax
    xmax = np.zeros((batch, mn), r.dtype)
    xmin[:, 0] = 1
    xmax[:, 0] = 1
    growing = smax != 0
    rank = growing.astype(np.int64)
    with np.errstate(all="ignore"):  # matrices that stopped growing still flow through the arithmetic
        for j in range(1, mn):
            if not growing.any():
                break
            w = r[:, :j, j]
            gamma = r[:, j, j]
            sminpr, s1, c1 = _smallest(xmin[:, :j], smin, w, gamma)
            smaxpr, s2, c2 = _largest(xmax[:, :j], smax, w, gamma)
            growing = growing & (smaxpr * rcond <= sminpr)
            xmin[growing, :j] *= s1[growing, None]
            xmin[growing, j] = c1[growing]
            xmax[growing, :j] *= s2[growing, None]
            xmax[growing, j] = c2[growing]
            smin = np.where(growing, sminpr, smin)
            smax = np.where(growing, smaxpr, smax)
            rank += growing
    return rank


def _pick(cases, default, dtype):
    """xLAIC1's if/elif chain over a batch: the first case whose condition holds, else default;
    cases: [(condition, (estimate, s, c))]."""
    est, s, c = default
    for cond, (e1, s1, c1) in reversed(cases):
        est = np.where(cond, e1, est)
        s = np.where(cond, s1, s)
        c = np.where(cond, c1, c)
    return est.astype(np.finfo(dtype).dtype, copy=False), s.astype(dtype, copy=False), c.astype(dtype, copy=False)


def _laic1_terms(x, sest, w, gamma):
    """What both xLAIC1 jobs start from: the real type, eps, alpha = x^H w and the magnitudes |alpha|,
    |gamma|, |sest|."""
    real = sest.dtype.type
    alpha = (np.conj(x)[:, None, :] @ w[:, :, None])[:, 0, 0]
    return real, real(np.finfo(real).eps / 2), alpha, np.abs(alpha), np.abs(gamma), np.abs(sest)


def _largest(x, sest, w, gamma):
    """xLAIC1 job 1, per matrix of the batch: the largest singular value of [[R11, w], [0, gamma]]
    from that of R11 (sest, vector x); returns (estimate, s, c), the new vector being (s x, c)."""
    real, eps, alpha, absalp, absgam, absest = _laic1_terms(x, sest, w, gamma)
    # sest == 0
    s1 = np.maximum(absgam, absalp)
    one = np.where(s1 == 0, 1, s1)
    s = alpha / one
    c = gamma / one
    tmp = np.sqrt(np.abs(s) ** 2 + np.abs(c) ** 2)
    tmp1 = np.where(s1 == 0, 1, tmp)
    zero_est = (s1 * tmp, np.where(s1 == 0, 0, s / tmp1), np.where(s1 == 0, 1, c / tmp1))
    # gamma negligible
    top = np.maximum(absest, absalp)
    no_gamma = (top * np.sqrt((absest / top) ** 2 + (absalp / top) ** 2), 1, 0)
    # alpha negligible
    keep = absgam <= absest
    no_alpha = (np.where(keep, absest, absgam), np.where(keep, 1, 0), np.where(keep, 0, 1))
    # sest negligible
    big = np.maximum(absgam, absalp)
    scl = np.sqrt(1 + (np.minimum(absgam, absalp) / big) ** 2)
    no_sest = (big * scl, (alpha / big) / scl, (gamma / big) / scl)
    # the general case: the larger root of the secular equation
    zeta1 = absalp / absest
    zeta2 = absgam / absest
    b = (1 - zeta1 * zeta1 - zeta2 * zeta2) * real(0.5)
    cc = zeta1 * zeta1
    root = np.sqrt(b * b + cc)
    t = np.where(b > 0, cc / (b + root), root - b)
    sine = -(alpha / absest) / t
    cosine = -(gamma / absest) / (1 + t)
    tmp = np.sqrt(np.abs(sine) ** 2 + np.abs(cosine) ** 2)
    general = (np.sqrt(t + 1) * absest, sine / tmp, cosine / tmp)
    return _pick([(sest == 0, zero_est), (absgam <= eps * absest, no_gamma), (absalp <= eps * absest, no_alpha),
                  ((absest <= eps * absalp) | (absest <= eps * absgam), no_sest)], general, alpha.dtype)


def _smallest(x, sest, w, gamma):
    """xLAIC1 job 2: as _largest, for the smallest singular value."""
    real, eps, alpha, absalp, absgam, absest = _laic1_terms(x, sest, w, gamma)
    # sest == 0
    both0 = np.maximum(absgam, absalp) == 0
    sine = np.where(both0, 1, -np.conj(gamma))
    cosine = np.where(both0, 0, np.conj(alpha))
    s1 = np.maximum(np.abs(sine), np.abs(cosine))
    s = sine / s1
    c = cosine / s1
    tmp = np.sqrt(np.abs(s) ** 2 + np.abs(c) ** 2)
    zero_est = (np.zeros_like(absest), s / tmp, c / tmp)
    # gamma negligible
    no_gamma = (absgam, 0, 1)
    # alpha negligible
    keep = absgam <= absest
    no_alpha = (np.where(keep, absgam, absest), np.where(keep, 0, 1), np.where(keep, 1, 0))
    # sest negligible
    small_gam = absgam <= absalp
    big = np.where(small_gam, absalp, absgam)
    ratio = np.where(small_gam, absgam / absalp, absalp / absgam)
    scl = np.sqrt(1 + ratio * ratio)
    no_sest = (np.where(small_gam, absest * (ratio / scl), absest / scl),
               -(np.conj(gamma) / big) / scl, (np.conj(alpha) / big) / scl)
    # the general case: the smaller root of the secular equation
    zeta1 = absalp / absest
    zeta2 = absgam / absest
    norma = np.maximum(1 + zeta1 * zeta1 + zeta1 * zeta2, zeta1 * zeta2 + zeta2 * zeta2)
    test = 1 + 2 * (zeta1 - zeta2) * (zeta1 + zeta2)
    # test >= 0
    b = (zeta1 * zeta1 + zeta2 * zeta2 + 1) * real(0.5)
    cc = zeta2 * zeta2
    t = cc / (b + np.sqrt(np.abs(b * b - cc)))
    sine_p = (alpha / absest) / (1 - t)
    cosine_p = -(gamma / absest) / t
    est_p = np.sqrt(t + 4 * eps * eps * norma) * absest
    # test < 0
    b = (zeta2 * zeta2 + zeta1 * zeta1 - 1) * real(0.5)
    cc = zeta1 * zeta1
    root = np.sqrt(b * b + cc)
    t = np.where(b >= 0, -cc / (b + root), b - root)
    sine_n = -(alpha / absest) / t
    cosine_n = -(gamma / absest) / (1 + t)
    est_n = np.sqrt(1 + t + 4 * eps * eps * norma) * absest
    pos = test >= 0
    sine = np.where(pos, sine_p, sine_n)
    cosine = np.where(pos, cosine_p, cosine_n)
    tmp = np.sqrt(np.abs(sine) ** 2 + np.abs(cosine) ** 2)
    general = (np.where(pos, est_p, est_n), sine / tmp, cosine / tmp)
    return _pick([(sest == 0, zero_est), (absgam <= eps * absest, no_gamma), (absalp <= eps * absest, no_alpha),
                  ((absest <= eps * absalp) | (absest <= eps * absgam), no_sest)], general, alpha.dtype)


def _min_norm_solution(r, c):
    """The minimum-norm z with r z = c for each r (rank, n) of full row rank: with r^H = Q2 R2,
    z = Q2 R2^-H c (the same z as xTZRZF's r = [T11 0] Y and z = Y^H [T11^-1 c; 0])."""
    q2, r2 = np.linalg.qr(np.conj(np.swapaxes(r, -1, -2)))
    y = _substitution(np.conj(np.swapaxes(r2, -1, -2)), c, lower=True)
    return q2 @ y


def _substitution(t, c, lower=False):
    """z with t z = c for a batch of triangular t, row by row as xTRSM: a zero on the diagonal
    (kept by rcond=0) gives inf/nan as LAPACK's does, not an error."""
    z = np.array(c)
    size = t.shape[-1]
    rows = range(size) if lower else range(size - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, None)
            z[:, i] = (z[:, i] - (t[:, i:i + 1, done] @ z[:, done])[:, 0]) / t[:, i, i, None]
    return z
