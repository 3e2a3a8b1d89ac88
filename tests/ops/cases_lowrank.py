"""Op table rows: svd_lowrank / pca_lowrank. Their random test matrix differs between torch and ember,
so rows compare what does not depend on it: on an exactly rank-3 input and q >= 3, the shapes and dtypes,
the top three singular values (and their gradients), and the reconstruction U diag(S) V^H."""
from .harness import Case as C

F64 = ("float64",)


def _svd(t, left, right, q=4, M=None, niter=2):
    A = left @ right
    U, S, V = t.svd_lowrank(A, q=q, niter=niter, M=M)
    recon = (U * S.unsqueeze(-2)) @ V.mH
    return U.shape, V.shape, U.dtype, S[..., :3], recon.detach()


def _svd_m(t, a, b, c, d):
    """The low-rank SVD of (a b + c d) - M with M = c d: the rank-3 part a b."""
    U, S, V = t.svd_lowrank(a @ b + c @ d, q=4, M=c @ d)
    return S[:3], ((U * S) @ V.mH).detach()


def _pca(t, left, right, center=True):
    A = left @ right + t.arange(right.shape[-1], dtype=right.dtype)  # column offsets that centering removes
    U, S, V = t.pca_lowrank(A, q=4, center=center)
    recon = (U * S.unsqueeze(-2)) @ V.mH
    return U.shape, V.shape, S[..., :3], recon.detach()


CASES = [
    C("svd_lowrank", [(8, 3), (3, 6)], lambda t, a, b: _svd(t, a, b), dtypes=F64),
    C("svd_lowrank", [(8, 3), (3, 6)], lambda t, a, b: _svd(t, a, b), dtypes=("float32",), grad=False, atol=1e-4,
      id="float32"),
    C("svd_lowrank", [(5, 3), (3, 9)], lambda t, a, b: _svd(t, a, b, q=5, niter=0), dtypes=F64, id="wide"),
    C("svd_lowrank", [(2, 7, 3), (2, 3, 5)], lambda t, a, b: _svd(t, a, b), dtypes=F64, id="batch"),
    C("svd_lowrank", [(8, 3), (3, 6), (8, 1), (1, 6)],
      lambda t, a, b, c, d: _svd(t, a, b + 0 * d, M=None) + _svd_m(t, a, b, c, d), dtypes=F64, id="M"),
    C("pca_lowrank", [(9, 3), (3, 5)], lambda t, a, b: _pca(t, a, b), dtypes=F64),
    C("pca_lowrank", [(9, 3), (3, 5)], lambda t, a, b: t.pca_lowrank(a @ b, q=6), dtypes=F64, error=ValueError,
      id="big-q"),
    C("pca_lowrank", [(9, 3), (3, 5)], lambda t, a, b: t.pca_lowrank(a @ b, niter=-1), dtypes=F64, error=ValueError,
      id="niter"),
]
