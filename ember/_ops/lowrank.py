"""svd_lowrank and pca_lowrank: randomized range finding with subspace iterations (Halko, Martinsson
and Tropp 2009, algorithms 4.4 and 5.1), as torch does, in ember ops (so differentiable). The random
test matrix comes from ember's generator, so values match torch's only up to that choice."""
from .. import _dtype as D
from .._tensor import Tensor
from ._registry import install


def _floating(A):
    """torch's get_floating_dtype: float types stay, everything else (integers) computes in float32."""
    return A._dtype if A._dtype in (D.float16, D.float32, D.float64) else D.float32


def _orthonormal(X):
    from .linalg_spectral import linalg_qr
    return linalg_qr(X).Q


def _range_basis(A, q, niter, M):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M."""
    from .random import randn
    dtype = A._dtype if A.is_complex() else _floating(A)
    R = randn(A.shape[-1], q, dtype=dtype)
    X = A @ R if M is None else A @ R - M @ R
    Q = _orthonormal(X)
    for _ in range(niter):
        X = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = _orthonormal(X)
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = _orthonormal(X)
    return Q


def _svd_lowrank(A, q, niter, M):
    from .linalg_spectral import linalg_svd
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:  # work on the tall orientation
        A = A.mH
        M = None if M is None else M.mH
    Q = _range_basis(A, q, niter, M)
    Bm = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg_svd(Bm, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate SVD (U, S, V) of A (or A - M) of rank q: A ~ U diag(S) V^H.
    See https://pytorch.org/docs/stable/generated/torch.svd_lowrank.html"""
    if not isinstance(A, Tensor):
        raise TypeError(f"svd_lowrank(): argument 'A' must be Tensor, not {type(A).__name__}")
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components of A's rows: the low-rank SVD of A with its column means removed.
    See https://pytorch.org/docs/stable/generated/torch.pca_lowrank.html"""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)


install(svd_lowrank, "svd_lowrank", method=False)
install(pca_lowrank, "pca_lowrank", method=False)
