"""Linear algebra, part 3: QR, SVD, symmetric and general eigendecompositions, and the
functions built on them (pinv, matrix_rank, lstsq).

Singular vectors and eigenvectors are defined only up to sign (phase); gradients are
meaningful for losses that do not depend on that choice, as in torch.
"""
import numpy as np

from .. import _dtype as D
from .._backend.gelsy import gelsy
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install
from .linalg import adj, check_tensor, conj, matmul
from .linalg_common import check_float, check_matrix, diag_embed, eye_like, flat_batch, return_type, triu
from .linalg_decomp import _out, linalg_solve_triangular

_make = Tensor._make
_state = grad_mode._state

qr_t = return_type("linalg_qr", ["Q", "R"])
qr_old_t = return_type("qr", ["Q", "R"])
svd_t = return_type("linalg_svd", ["U", "S", "Vh"])
svd_old_t = return_type("svd", ["U", "S", "V"])
eigh_t = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
eig_t = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
lstsq_t = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _needs_grad(*ts):
    return _state.enabled and any(t._requires_grad for t in ts)


def _check_gauge(imag_diag, what, name):
    """torch's check that a loss does not depend on the arbitrary phase of complex vectors."""
    if not np.allclose(imag_diag, 0, rtol=1e-2, atol=1e-2):
        raise RuntimeError(f"{name}: The {what} in the complex case are specified up to multiplication by e^{{i phi}}. "
                           "The specified loss function depends on this phase term, making it ill-defined.")


def _nonzero(g):
    """g, or None when it is all zeros: the engine fills unused outputs' gradients with
    zeros, and skipping them avoids 0 * inf in the eigenvector terms (repeated values)."""
    return g if g is not None and np.any(g._data) else None


def _off_diag_inverse(d):
    """F[..., i, j] = 1 / (d_j - d_i) off the diagonal, 0 on it (ember ops, differentiable)."""
    diff = d.unsqueeze(-2) - d.unsqueeze(-1)
    eye = eye_like(diff)
    return (1 - eye) / (diff + eye)


# ---- QR -------------------------------------------------------------------------------

class LinalgQr(Op):
    _name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, x, mode):
        ctx.mode = mode
        if mode == "r":
            r = np.linalg.qr(x, mode="r")
            q = np.empty((0,), x.dtype)
        else:
            q, r = np.linalg.qr(x, mode=mode)
        ctx.save_for_backward(x, q, r)
        return q, r

    def backward(ctx, gQ, gR):
        A, Q, R = ctx.saved_tensors
        m, n = A._data.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_backward_tall(gQ, gR, Q, R)
        # wide: A = [X | Y] with X = Q U square, Y = Q V
        U = R[..., :, :m]
        gU = gR[..., :, :m]
        gV = gR[..., :, m:]
        Y = A[..., :, m:]
        gX = _qr_backward_tall(gQ + matmul(Y, adj(gV)), gU, Q, U)
        gY = matmul(Q, gV)
        from .indexing import cat
        return cat([gX, gY], -1)


def _qr_backward_tall(gQ, gR, Q, R):
    """m >= n: gA = (gQ + Q S) R^-H with S the Hermitian matrix built from the upper
    triangle of N = gR R^H - Q^H gQ (real diagonal)."""
    N = matmul(gR, adj(R)) - matmul(adj(Q), gQ)
    S = triu(N, 1)
    S = S + adj(S) + diag_embed(diagonal_real(N))
    return linalg_solve_triangular(adj(R), gQ + matmul(Q, S), upper=False, left=False)


def diagonal_real(t):
    d = t.diagonal(0, -2, -1)
    return d.real.to(t._dtype) if t._dtype.category == D.COMPLEX else d


def linalg_qr(A, mode="reduced", *, out=None):
    check_matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return _out(qr_t(*LinalgQr.apply(A, mode=mode)), out, "linalg.qr")


def qr(input, some=True, *, out=None):
    check_matrix(input, "qr", square=False)
    return _out(qr_old_t(*LinalgQr.apply(input, mode="reduced" if some else "complete")), out, "qr")


# ---- SVD ------------------------------------------------------------------------------

class LinalgSvd(Op):
    """A = U diag(S) Vh. Backward: Townsend's formula for real input (reduced form; the
    extra columns of full_matrices=True do not enter it, as in torch)."""
    _name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, x, full_matrices, vectors):
        ctx.full = full_matrices
        if not vectors:
            s = np.linalg.svd(x, compute_uv=False)
            return s
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        ctx.save_for_backward(u, s, vh)
        return u, s, vh

    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        return svd_backward(_nonzero(gU), gS, _nonzero(gVh), U, S, Vh)


def svd_backward(gU, gS, gVh, U, S, Vh):
    """Townsend's formula; for complex input one more diagonal term, i Im(diag(U^H gU)) / S,
    which is what remains of the phase gauge once the loss is phase-invariant."""
    k = S._data.shape[-1]
    if U._data.shape[-1] != k:
        U = U[..., :, :k]
        gU = None if gU is None else gU[..., :, :k]
    if Vh._data.shape[-2] != k:
        Vh = Vh[..., :k, :]
        gVh = None if gVh is None else gVh[..., :k, :]
    m = U._data.shape[-2]
    n = Vh._data.shape[-1]
    inner = diag_embed(gS) if gS is not None else None
    if gU is None and gVh is None:
        return matmul(U * gS.unsqueeze(-2), Vh)
    s2 = S * S
    F = _off_diag_inverse(s2)
    extra = None
    if gU is not None:
        UtgU = matmul(adj(U), gU)
        J = F * UtgU
        term = (J + adj(J)) * S.unsqueeze(-2)
        if U._dtype.category == D.COMPLEX:
            d = UtgU.diagonal(0, -2, -1)
            phase = np.imag(d._data)
            if gVh is not None:
                phase = phase + np.imag(np.sum(Vh._data * np.conj(gVh._data), axis=-1))  # diag(V^H gV)
            _check_gauge(phase, "singular vectors", "svd_backward")
            term = term + diag_embed((d - d.conj()) / (2 * S))
        inner = term if inner is None else inner + term
        if m > k:
            extra = matmul((gU - matmul(U, UtgU)) / S.unsqueeze(-2), Vh)
    if gVh is not None:
        V = adj(Vh)
        gV = adj(gVh)
        VtgV = matmul(Vh, gV)
        K = F * VtgV
        term = S.unsqueeze(-1) * (K + adj(K))
        inner = term if inner is None else inner + term
        if n > k:
            e = matmul(U, adj((gV - matmul(V, VtgV)) / S.unsqueeze(-2)))
            extra = e if extra is None else extra + e
    gA = matmul(matmul(U, inner), Vh)
    return gA if extra is None else gA + extra


def _cpu_driver(driver):
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    check_matrix(A, "linalg.svd", square=False)
    _cpu_driver(driver)
    return _out(svd_t(*LinalgSvd.apply(A, full_matrices=full_matrices, vectors=True)), out, "linalg.svd")


def linalg_svdvals(A, *, driver=None, out=None):
    check_matrix(A, "linalg.svdvals", square=False)
    _cpu_driver(driver)
    if _needs_grad(A):
        return _out(LinalgSvd.apply(A, full_matrices=False, vectors="for_grad")[1], out, "linalg.svdvals")
    return _out(LinalgSvd.apply(A, full_matrices=False, vectors=False), out, "linalg.svdvals")


def svd(input, some=True, compute_uv=True, *, out=None):
    """Deprecated torch.svd: returns V (not Vh); without compute_uv, U and V are zero-filled."""
    check_matrix(input, "svd", square=False)
    if not compute_uv:
        m, n = input._data.shape[-2:]
        batch = input._data.shape[:-2]
        S = linalg_svdvals(input)
        U = _make(np.zeros(batch + (m, m), input._data.dtype), input._dtype)
        V = _make(np.zeros(batch + (n, n), input._data.dtype), input._dtype)
        return _out(svd_old_t(U, S, V), out, "svd")
    U, S, Vh = LinalgSvd.apply(input, full_matrices=not some, vectors=True)
    return _out(svd_old_t(U, S, adj(Vh)), out, "svd")


# ---- eigh / eig -----------------------------------------------------------------------

class LinalgEigh(Op):
    """A = V diag(L) V^H for Hermitian A (read from one triangle). Backward: the
    Hermitian part of V (diag(gL) + F * (V^H gV)) V^H, F_ij = 1 / (L_j - L_i)."""
    _name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, x, uplo, vectors):
        if not vectors:
            return np.linalg.eigvalsh(x, UPLO=uplo)
        w, v = np.linalg.eigh(x, UPLO=uplo)
        ctx.save_for_backward(w, v)
        return w, v

    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        gV = _nonzero(gV)
        inner = diag_embed(gL.to(V._dtype)) if V._dtype.category == D.COMPLEX else diag_embed(gL)
        if gV is not None:
            VhgV = matmul(adj(V), gV)
            if V._dtype.category == D.COMPLEX:
                _check_gauge(np.imag(np.diagonal(VhgV._data, 0, -2, -1)), "eigenvectors", "linalg_eigh_backward")
            inner = inner + _off_diag_inverse(L).to(V._dtype) * VhgV
        G = matmul(matmul(V, inner), adj(V))
        return 0.5 * (G + adj(G))


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def linalg_eigh(input, UPLO="L", *, out=None):
    check_matrix(input, "linalg.eigh")
    _check_uplo(UPLO)
    return _out(eigh_t(*LinalgEigh.apply(input, uplo=UPLO, vectors=True)), out, "linalg.eigh")


def linalg_eigvalsh(input, UPLO="L", *, out=None):
    check_matrix(input, "linalg.eigvalsh")
    _check_uplo(UPLO)
    if _needs_grad(input):
        return _out(LinalgEigh.apply(input, uplo=UPLO, vectors="for_grad")[0], out, "linalg.eigvalsh")
    return _out(LinalgEigh.apply(input, uplo=UPLO, vectors=False), out, "linalg.eigvalsh")


class LinalgEig(Op):
    """A = V diag(L) V^-1 with unit-norm columns of V; outputs are always complex.
    Backward (for losses independent of each eigenvector's phase):
    gA = V^-H (diag(gL) + conj(F) * (V^H gV - V^H V diag(Re diag(V^H gV)))) V^H,
    F_ij = 1 / (L_j - L_i); its real part for real input."""
    _name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx, x, vectors):
        c = np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128
        if not vectors:
            return np.linalg.eigvals(x).astype(c, copy=False)
        w, v = np.linalg.eig(x)
        w = w.astype(c, copy=False)
        v = v.astype(c, copy=False)
        ctx.real_input = x.dtype.kind != "c"
        ctx.save_for_backward(w, v)
        return w, v

    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        Vh = adj(V)
        G = diag_embed(gL)
        gV = _nonzero(gV)
        if gV is not None:
            VhgV = matmul(Vh, gV)
            _check_gauge(np.imag(np.diagonal(VhgV._data, 0, -2, -1)), "eigenvectors", "linalg_eig_backward")
            d = VhgV.diagonal(0, -2, -1).real.to(V._dtype)
            inner = VhgV - matmul(Vh, V) * d.unsqueeze(-2)
            G = G + conj(_off_diag_inverse(L)) * inner
        from .linalg_decomp import linalg_solve
        gA = linalg_solve(Vh, matmul(G, Vh))
        return gA.real if ctx.real_input else gA


def linalg_eig(input, *, out=None):
    check_matrix(input, "linalg.eig")
    _check_finite(input, "linalg.eig")
    return _out(eig_t(*LinalgEig.apply(input, vectors=True)), out, "linalg.eig")


def linalg_eigvals(input, *, out=None):
    check_matrix(input, "linalg.eigvals")
    _check_finite(input, "linalg.eigvals")
    if _needs_grad(input):
        return _out(LinalgEig.apply(input, vectors="for_grad")[0], out, "linalg.eigvals")
    return _out(LinalgEig.apply(input, vectors=False), out, "linalg.eigvals")


def _check_finite(A, name):
    if not np.all(np.isfinite(A._data)):
        raise RuntimeError(f"torch.{name}: input tensor should not contain infs or NaNs.")


# ---- pinv, matrix_rank ----------------------------------------------------------------

def _tolerances(x, atol, rtol, smax):
    """torch's threshold max(atol, rtol * largest singular value), per matrix of array x;
    rtol defaults to eps * max(m, n), or to 0 where a positive atol is given."""
    m, n = x.shape[-2:]
    real = x.real.dtype
    eps = np.finfo(real).eps * max(m, n)
    a = np.zeros((), real) if atol is None else np.asarray(atol._data if isinstance(atol, Tensor) else atol, real)
    if rtol is not None:
        r = np.asarray(rtol._data if isinstance(rtol, Tensor) else rtol, real)
    elif atol is None:
        r = np.asarray(eps, real)
    else:
        r = np.where(a > 0, 0, eps).astype(real)
    return np.maximum(a, r * smax)


class LinalgPinv(Op):
    """Moore-Penrose inverse. Backward (constant rank; Golub & Pereyra):
    gA = -P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A), P = pinv(A)."""
    _name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, x, atol, rtol, hermitian):
        if hermitian:
            w, v = np.linalg.eigh(x)
            s = np.abs(w)
            tol = _tolerances(x, atol, rtol, np.max(s, axis=-1, initial=0))
            inv = np.where(s > tol[..., None], 1 / np.where(s > tol[..., None], w, 1), 0).astype(w.dtype)
            p = np.matmul(v * inv[..., None, :], np.conj(np.swapaxes(v, -1, -2)))
        else:
            u, s, vh = np.linalg.svd(x, full_matrices=False)
            tol = _tolerances(x, atol, rtol, np.max(s, axis=-1, initial=0))
            inv = np.where(s > tol[..., None], 1 / np.where(s > tol[..., None], s, 1), 0).astype(s.dtype)
            p = np.matmul(np.conj(np.swapaxes(vh, -1, -2)) * inv[..., None, :], np.conj(np.swapaxes(u, -1, -2)))
        p = p.astype(x.dtype, copy=False)
        ctx.save_for_backward(x, p)
        return p

    def backward(ctx, grad):
        A, P = ctx.saved_tensors
        return pinv_backward(grad, P, A)


def pinv_backward(g, P, A):
    Ph = adj(P)
    gh = adj(g)
    m, n = A._data.shape[-2:]
    I_m = eye_like(A, m)
    I_n = eye_like(A, n)
    gA = -matmul(matmul(Ph, g), Ph)
    gA = gA + matmul(matmul(I_m - matmul(A, P), gh), matmul(P, Ph))
    gA = gA + matmul(matmul(Ph, P), matmul(gh, I_n - matmul(P, A)))
    return gA


def linalg_pinv(input, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """torch's two overloads in one: (input, rcond, hermitian=False) and (input, *, atol, rtol, hermitian)."""
    check_tensor(input, "linalg.pinv", "input", 1)
    if rcond is not None and (atol is not None or rtol is not None):
        raise TypeError("linalg_pinv() received an invalid combination of arguments: rcond= (the legacy "
                        "overload) cannot be given with atol= or rtol=")
    if input._data.ndim < 2 or input._dtype.category < D.FLOAT:
        shape = list(input._data.shape)
        raise RuntimeError(f"linalg.pinv({D.SCALAR_NAMES[input._dtype]}{{{shape}}}): expected a tensor with "
                           "2 or more dimensions of float, double, cfloat or cdouble types")
    check_matrix(input, "linalg.pinv", square=False)
    if rcond is not None:
        rtol = rcond
    return _out(LinalgPinv.apply(input, atol=atol, rtol=rtol, hermitian=hermitian), out, "linalg.pinv")


def pinverse(input, rcond=1e-15, hermitian=False):
    return linalg_pinv(input, rtol=rcond, hermitian=hermitian)


def linalg_matrix_rank(input, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    check_matrix(input, "linalg.matrix_rank", square=False)
    if tol is not None:
        atol, rtol = tol, 0.0
    x = input._data
    s = np.abs(np.linalg.eigvalsh(x)) if hermitian else np.linalg.svd(x, compute_uv=False)
    tol_ = _tolerances(x, atol, rtol, np.max(s, axis=-1, initial=0))
    r = np.sum(s > tol_[..., None], axis=-1).astype(np.int64)
    return _out(_make(np.asarray(r)), out, "linalg.matrix_rank")


# ---- lstsq ----------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class LinalgLstsq(Op):
    """Least squares (min ||A X - B||, minimum norm). Values via LAPACK gelsy's algorithm
    (_backend.gelsy: pivoted QR, rank by condition estimation) for driver 'gelsy', LAPACK
    gelsd per matrix for the others; rank / residuals / singular_values reported following
    the requested driver's contract.
    Backward through X = pinv(A) B, and through residuals ||A X - B||^2."""
    _name = "LinalgLstsqBackward0"
    nondiff = (2, 3)

    @staticmethod
    def forward(ctx, a, b, rcond, driver, vector):
        m, n = a.shape[-2:]
        b0 = b
        if vector:
            b = b[..., None]
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        fa = flat_batch(np.broadcast_to(a, batch + a.shape[-2:]))
        fb = flat_batch(np.broadcast_to(b, batch + b.shape[-2:]))
        dtype = np.result_type(a, b)
        svals = np.empty((fa.shape[0], min(m, n)), a.real.dtype)
        if driver == "gelsy":
            x, ranks = gelsy(fa, fb.astype(dtype, copy=False), rcond)
        else:
            x = np.empty((fa.shape[0], n, fb.shape[-1]), dtype)
            ranks = np.empty(fa.shape[0], np.int64)
            for i in range(fa.shape[0]):
                if m == 0 or n == 0:  # nothing to fit: the minimum-norm solution is 0
                    x[i], ranks[i] = 0, 0
                    continue
                x[i], _, ranks[i], svals[i] = np.linalg.lstsq(fa[i], fb[i], rcond=rcond)
        full_rank = bool(np.all(ranks == n))
        x = x.reshape(batch + x.shape[1:])
        if driver != "gelsy" and m > n and full_rank:
            # squared residual norms per column (a vector B counts as one column, as in torch)
            res = np.sum(np.abs(np.matmul(a, x) - b) ** 2, axis=-2).astype(a.real.dtype)
        else:
            res = np.empty((0,), a.real.dtype)
        rank = ranks.reshape(batch) if driver != "gels" else np.empty((0,), np.int64)
        sv = svals.reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") else np.empty((0,), a.real.dtype)
        if vector:
            x = x[..., 0]
        ctx.vector = vector
        ctx.save_for_backward(a, b0, x, res)
        return x, res, rank, sv

    def backward(ctx, grad, grad_res, grad_rank, grad_sv):
        A, B, X, res = ctx.saved_tensors
        need = ctx.needs_input_grad
        vector = ctx.vector
        if vector:
            B = B.unsqueeze(-1)
            X = X.unsqueeze(-1)
            grad = grad.unsqueeze(-1)
        P = linalg_pinv(A)
        gB = matmul(adj(P), grad)
        gA = pinv_backward(matmul(grad, adj(B)), P, A) if need[0] else None
        if res._data.size:
            R = (matmul(A, X) - B) * grad_res.unsqueeze(-2)
            gB = gB - 2 * R
            if need[0]:
                gA = gA + 2 * matmul(R, adj(X))
        if vector:
            gB = gB.squeeze(-1)
        return gA, (gB if need[1] else None)


def linalg_lstsq(input, b, rcond=None, *, driver=None, out=None):
    name = "torch.linalg.lstsq"
    check_matrix(input, name, square=False)
    check_tensor(b, "linalg.lstsq", "B", 2)
    check_float(b, name)
    if input._dtype is not b._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{D.SCALAR_NAMES[input._dtype]} and other's dtype {D.SCALAR_NAMES[b._dtype]}")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    a = input._data.shape
    bs = b._data.shape
    vector = len(bs) == len(a) - 1
    if len(bs) < len(a) - 1 or len(bs) > len(a):
        raise RuntimeError(f"{name}: input.dim() must be greater or equal to other.dim() and (input.dim() - "
                           "other.dim()) <= 1")
    if (bs[-1] if vector else bs[-2]) != a[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-{1 if vector else 2})")
    rc = None if rcond is None else float(rcond)
    batch_b = bs[:-1] if vector else bs[:-2]
    try:
        np.broadcast_shapes(a[:-2], batch_b)
    except ValueError:  # checked before the kernel, so that none of its own errors is reported as this
        from ._registry import shapes_error
        raise shapes_error(name, np.empty(a[:-2]), np.empty(batch_b)) from None
    r = LinalgLstsq.apply(input, b, rcond=rc, driver=driver, vector=vector)
    return _out(lstsq_t(*r), out, "linalg.lstsq")


# ---- installation ---------------------------------------------------------------------

for _fn, _name in [(linalg_qr, "qr"), (linalg_svd, "svd"), (linalg_svdvals, "svdvals"), (linalg_eigh, "eigh"),
                   (linalg_eigvalsh, "eigvalsh"), (linalg_eig, "eig"), (linalg_eigvals, "eigvals"),
                   (linalg_pinv, "pinv"), (linalg_matrix_rank, "matrix_rank"), (linalg_lstsq, "lstsq")]:
    install(_fn, "linalg." + _name, method=False, function=False)

install(qr, "qr")
install(svd, "svd")
install(pinverse, "pinverse")
