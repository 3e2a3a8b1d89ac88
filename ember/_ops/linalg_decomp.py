"""Linear algebra, part 2: inverses, determinants, solvers, Cholesky, matrix_power.

Forward kernels call np.linalg (LAPACK); backward formulas are ember ops, so they
differentiate again. Singular / non-positive-definite input raises LinAlgError with
torch's message, naming the batch element and the failing pivot or minor.
"""
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install, write_out
from .linalg import adj, check_tensor, conj, matmul
from .linalg_common import (LinAlgError, batch_prefix, check_matrix, check_same_dtype, eye_like, first_failure,
                            flat_batch, getrf, return_type, tril, triu)

_make = Tensor._make
_state = grad_mode._state

inv_ex_t = return_type("linalg_inv_ex", ["inverse", "info"])
slogdet_t = return_type("linalg_slogdet", ["sign", "logabsdet"])
slogdet_old_t = return_type("slogdet", ["sign", "logabsdet"])
solve_ex_t = return_type("linalg_solve_ex", ["result", "info"])
cholesky_ex_t = return_type("linalg_cholesky_ex", ["L", "info"])


def _out(r, out, name):
    if out is None:
        return r
    if isinstance(r, tuple):
        for o, v in zip(out, r):
            write_out(o, v, name)
        return type(r)(*out)
    return write_out(out, r, name)


def _singular_info(x):
    """getrf's info per matrix, computed only after LAPACK reported a singular input."""
    return getrf(x)[2]


# ---- inv ------------------------------------------------------------------------------

class LinalgInvEx(Op):
    _name = "LinalgInvExBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, check):
        batch = x.shape[:-2]
        try:
            r = np.linalg.inv(x)
            info = np.zeros(batch, np.int32)
        except np.linalg.LinAlgError:
            info = _singular_info(x)
            bad = first_failure(info)
            if check and bad is not None:
                raise LinAlgError(f"linalg.inv: {batch_prefix(x.shape, bad[0])}The diagonal element {bad[1]} is "
                                  "zero, the inversion could not be completed because the input matrix is "
                                  "singular.") from None
            r = _inv_each(x, info)
        ctx.save_for_backward(r)
        return r, info

    def backward(ctx, grad, grad_info):
        (inv,) = ctx.saved_tensors
        h = adj(inv)
        return -matmul(matmul(h, grad), h)


def _inv_each(x, info):
    """Inverse matrix by matrix; singular ones become nan (LAPACK leaves garbage there)."""
    flat = flat_batch(x)
    bad = np.asarray(info).reshape(-1)
    r = np.full(flat.shape, np.nan, dtype=x.dtype)
    for i in range(flat.shape[0]):
        if bad[i] == 0:
            try:
                r[i] = np.linalg.inv(flat[i])
            except np.linalg.LinAlgError:
                pass
    return r.reshape(x.shape)


def linalg_inv_ex(A, *, check_errors=False, out=None):
    check_matrix(A, "linalg.inv")
    return _out(inv_ex_t(*LinalgInvEx.apply(A, check=check_errors)), out, "linalg.inv_ex")


def linalg_inv(A, *, out=None):
    check_matrix(A, "linalg.inv")
    return _out(LinalgInvEx.apply(A, check=True)[0], out, "linalg.inv")


# ---- det, slogdet, logdet -----------------------------------------------------------

class LinalgDet(Op):
    _name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, x):
        r = np.asarray(np.linalg.det(x))
        ctx.save_for_backward(x, r)
        return r

    def backward(ctx, grad):
        x, det = ctx.saved_tensors
        d = (grad * conj(det)).unsqueeze(-1).unsqueeze(-1)
        if np.all(det._data != 0):
            return d * adj(linalg_inv(x))
        return d * _make(_cofactor_adjoint(x._data), x._dtype)


def _cofactor_adjoint(a):
    """conj of the cofactor matrix of each matrix (d det / dA), from an SVD so that it also
    holds for singular matrices: det = det(U) det(Vh) prod(S)."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.empty_like(s)
    for i in range(n):
        others[..., i] = np.prod(np.delete(s, i, axis=-1), axis=-1)
    scale = np.linalg.det(u) * np.linalg.det(vh)
    cof = np.matmul(u * others[..., None, :], vh) * scale[..., None, None]
    return np.conj(cof)


def linalg_det(A, *, out=None):
    check_matrix(A, "linalg.det")
    return _out(LinalgDet.apply(A), out, "linalg.det")


class LinalgSlogdet(Op):
    """(sign, log|det|). d log det = tr(A^-1 dA) = d log|det| + i d(arg det), so
    gA = c A^-H with c = g_logabsdet - i Im(conj(g_sign) sign); for real input the sign is
    piecewise constant and c = g_logabsdet."""
    _name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, x):
        sign, logabs = np.linalg.slogdet(x)
        sign = np.asarray(sign)
        ctx.save_for_backward(x, sign)
        return sign, np.asarray(logabs)

    def backward(ctx, grad_sign, grad_logabs):
        x, sign = ctx.saved_tensors
        c = grad_logabs
        if x._dtype.category == D.COMPLEX:
            c = c - 1j * (grad_sign.conj() * sign).imag
        return c.unsqueeze(-1).unsqueeze(-1) * adj(linalg_inv(x))


def linalg_slogdet(A, *, out=None):
    check_matrix(A, "linalg.slogdet")
    return _out(slogdet_t(*LinalgSlogdet.apply(A)), out, "linalg.slogdet")


def slogdet(input):
    check_matrix(input, "linalg.slogdet")
    return slogdet_old_t(*LinalgSlogdet.apply(input))


def logdet(input):
    check_matrix(input, "logdet")
    sign, logabs = LinalgSlogdet.apply(input)
    if input._dtype.category == D.COMPLEX:
        return logabs + sign.log()
    nan = _make(np.array(np.nan, dtype=logabs._data.dtype), logabs._dtype)
    return nan.where(sign < 0, logabs)


# ---- solve ----------------------------------------------------------------------------

def _is_vector_rhs(a_shape, b_shape):
    """torch's rule: B is a (batch of) vector(s) if it is 1-D or has A's batch+row shape."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])


class LinalgSolve(Op):
    _name = "LinalgSolveExBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, a, b, left, vector, check):
        ctx.args = (left, vector)
        a0 = a
        if not left:
            a = np.swapaxes(a, -1, -2)
            if not vector:
                b = np.swapaxes(b, -1, -2)
        try:
            x = np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)
            info = np.zeros(a.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            info = _singular_info(a)
            bad = first_failure(info)
            if check and bad is not None:
                raise LinAlgError(f"torch.linalg.solve: {batch_prefix(a.shape, bad[0])}The solver failed because "
                                  "the input matrix is singular.") from None
            x = _solve_each(a, b, vector)
        if not left and not vector:
            x = np.swapaxes(x, -1, -2)
        ctx.save_for_backward(a0, x)
        return x, info

    def backward(ctx, grad, grad_info):
        A, X = ctx.saved_tensors
        left, vector = ctx.args
        need = ctx.needs_input_grad
        gB = _solve(adj(A), grad, left, vector)[0]
        gA = None
        if need[0]:
            if vector:
                gA = -(gB.unsqueeze(-1) * conj(X).unsqueeze(-2)) if left else \
                    -(conj(X).unsqueeze(-1) * gB.unsqueeze(-2))
            else:
                gA = -matmul(gB, adj(X)) if left else -matmul(adj(X), gB)
        return gA, (gB if need[1] else None)


def _solve_each(a, b, vector):
    """Solve matrix by matrix after a singular report; singular systems become nan."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-1 if vector else -2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-1 if vector else -2:])
    fa = flat_batch(a)
    fb = flat_batch(b, 1 if vector else 2)
    r = np.full(fb.shape, np.nan, dtype=np.result_type(a, b))
    for i in range(fa.shape[0]):
        try:
            r[i] = np.linalg.solve(fa[i], fb[i][..., None])[..., 0] if vector else np.linalg.solve(fa[i], fb[i])
        except np.linalg.LinAlgError:
            pass
    return r.reshape(b.shape)


def _solve(A, B, left, vector, check=True):
    return LinalgSolve.apply(A, B, left=left, vector=vector, check=check)


def _solve_checked(A, B, left, name):
    check_matrix(A, name)
    check_tensor(B, name, "B", 2)
    check_same_dtype(A, B, name)
    a = A._data.shape
    b = B._data.shape
    vector = _is_vector_rhs(a, b)
    if not vector and len(b) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = a[-1]
    rows = b[-1] if vector else (b[-2] if left else b[-1])
    if rows != n:
        shown = f"{b[-1]}x1" if vector else f"{b[-2]}x{b[-1]}"
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} ({a[-2]}x{a[-1]} and "
                           f"{shown})")
    batch_b = b[:-1] if vector else b[:-2]
    try:
        np.broadcast_shapes(a[:-2], batch_b)
    except ValueError:
        from ._registry import shapes_error
        raise shapes_error(name, np.empty(a[:-2]), np.empty(batch_b)) from None
    return vector


def linalg_solve(A, B, *, left=True, out=None):
    vector = _solve_checked(A, B, left, "linalg.solve")
    return _out(_solve(A, B, left, vector)[0], out, "linalg.solve")


def linalg_solve_ex(A, B, *, left=True, check_errors=False, out=None):
    vector = _solve_checked(A, B, left, "linalg.solve_ex")
    return _out(solve_ex_t(*_solve(A, B, left, vector, check_errors)), out, "linalg.solve_ex")


# ---- cholesky -------------------------------------------------------------------------

class LinalgCholeskyEx(Op):
    """A = L L^H. Backward (Murray 2016): gA = L^-H sym(Phi(L^H gL)) L^-1, Phi taking the
    lower triangle with half the diagonal, sym(X) = (X + X^H) / 2."""
    _name = "LinalgCholeskyExBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, x, upper, check, name="linalg.cholesky"):
        if upper:  # LAPACK's uplo="U" reads the upper triangle: factor its Hermitian lower mirror
            x = np.conj(np.swapaxes(x, -1, -2))
        try:
            L = np.linalg.cholesky(x)
            info = np.zeros(x.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            L, info = _potf2(x)
            bad = first_failure(info)
            if check and bad is not None:
                raise LinAlgError(f"{name}: {batch_prefix(x.shape, bad[0])}The factorization could not be "
                                  "completed because the input is not positive-definite (the leading minor of "
                                  f"order {bad[1]} is not positive-definite).") from None
        if upper:
            L = np.ascontiguousarray(np.conj(np.swapaxes(L, -1, -2)))
        ctx.upper = upper
        ctx.save_for_backward(L)
        return L, info

    def backward(ctx, grad, grad_info):
        (L,) = ctx.saved_tensors
        if ctx.upper:
            L = adj(L)
            grad = adj(grad)
        P = tril(matmul(adj(L), grad))
        P = 0.5 * (P + adj(tril(P, -1)))
        gA = linalg_solve_triangular(adj(L), P, upper=True)
        return linalg_solve_triangular(L, gA, upper=False, left=False)


class Cholesky(LinalgCholeskyEx):
    _name = "CholeskyBackward0"


def _potf2(a):
    """Column-by-column Cholesky of each matrix (LAPACK potf2's semantics on failure: the factored
    columns, the failing pivot's value on the diagonal, info = its order, the rest of the lower
    triangle as given; torch's MKL switches to a blocked form for larger n (seen from n = 130),
    whose failing block differs)."""
    flat = flat_batch(a)
    n = a.shape[-1]
    L = np.tril(flat)
    info = np.zeros(flat.shape[0], np.int32)
    for b in range(flat.shape[0]):
        A = flat[b]
        for j in range(n):
            d = A[j, j] - np.vdot(L[b, j, :j], L[b, j, :j])
            d = d.real if np.iscomplexobj(d) else d
            if not d > 0:
                info[b] = j + 1
                L[b, j, j] = d
                break
            L[b, j, j] = np.sqrt(d)
            L[b, j + 1:, j] = (A[j + 1:, j] - L[b, j + 1:, :j] @ np.conj(L[b, j, :j])) / L[b, j, j]
        if info[b] == 0:
            try:
                L[b] = np.linalg.cholesky(A)
            except np.linalg.LinAlgError:
                pass
    return L.reshape(a.shape), info.reshape(a.shape[:-2])


def linalg_cholesky_ex(input, *, upper=False, check_errors=False, out=None):
    check_matrix(input, "linalg.cholesky_ex")
    return _out(cholesky_ex_t(*LinalgCholeskyEx.apply(input, upper=upper, check=check_errors)), out,
                "linalg.cholesky_ex")


def linalg_cholesky(input, *, upper=False, out=None):
    check_matrix(input, "linalg.cholesky")
    return _out(LinalgCholeskyEx.apply(input, upper=upper, check=True)[0], out, "linalg.cholesky")


def cholesky(input, upper=False, *, out=None):
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    check_matrix(input, "cholesky")
    return _out(Cholesky.apply(input, upper=upper, check=True, name="cholesky")[0], out, "cholesky")


# ---- solve_triangular -----------------------------------------------------------------

class LinalgSolveTriangular(Op):
    _name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        ctx.args = (upper, left, unitriangular)
        tri = np.triu(a) if upper else np.tril(a)
        if unitriangular:
            idx = np.arange(a.shape[-1])
            tri[..., idx, idx] = 1
        if left:
            x = _tri_solve(tri, b, upper)
        else:
            x = np.swapaxes(_tri_solve(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2), not upper), -1, -2)
        ctx.save_for_backward(a, x)
        return x

    def backward(ctx, grad):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.args
        need = ctx.needs_input_grad
        gB = linalg_solve_triangular(adj(A), grad, upper=not upper, left=left, unitriangular=unit)
        gA = None
        if need[0]:
            gA = -matmul(gB, adj(X)) if left else -matmul(adj(X), gB)
            k = (1 if unit else 0) if upper else (-1 if unit else 0)
            gA = triu(gA, k) if upper else tril(gA, k)
        return gA, (gB if need[1] else None)


def _tri_solve(tri, b, upper):
    """Solve tri @ x = b for a triangular tri. LAPACK's general solver gives the same answer
    to rounding; a zero on the diagonal falls back to substitution (inf/nan, as trsm)."""
    try:
        return np.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        pass
    shape = np.broadcast_shapes(tri.shape[:-2], b.shape[:-2])
    tri = np.broadcast_to(tri, shape + tri.shape[-2:])
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(tri, b))
    n = tri.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        rest = slice(i + 1, n) if upper else slice(0, i)
        s = np.einsum("...j,...jk->...k", tri[..., i, rest], x[..., rest, :])
        x[..., i, :] = (x[..., i, :] - s) / tri[..., i, i, None]
    return x


def linalg_solve_triangular(input, B, *, upper, left=True, unitriangular=False, out=None):
    name = "linalg.solve_triangular"
    check_matrix(input, name)
    check_tensor(B, name, "B", 2)
    if B._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    check_same_dtype(input, B, name)
    a = input._data.shape
    b = B._data.shape
    if (b[-2] if left else b[-1]) != a[-1]:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} ({a[-2]}x{a[-1]} and "
                           f"{b[-2]}x{b[-1]})")
    r = LinalgSolveTriangular.apply(input, B, upper=upper, left=left, unitriangular=unitriangular)
    return _out(r, out, name)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Deprecated torch.triangular_solve: returns (solution, cloned_coefficient)."""
    M = A.mT if transpose else A
    x = linalg_solve_triangular(M, input, upper=upper != transpose, unitriangular=unitriangular)
    return _out(triangular_solve_t(x, A.clone()), out, "triangular_solve")


triangular_solve_t = return_type("triangular_solve", ["solution", "cloned_coefficient"])


def _cholesky_solve_values(b, factor, upper):
    """X with (L L^H) X = b from the triangle of factor (two triangular solves)."""
    if upper:
        y = linalg_solve_triangular(adj(factor), b, upper=False)
        return linalg_solve_triangular(factor, y, upper=True)
    y = linalg_solve_triangular(factor, b, upper=False)
    return linalg_solve_triangular(adj(factor), y, upper=True)


class CholeskySolve(Op):
    """cholesky_solve with torch's gradient, which (as cholesky_inverse's) treats the whole input2 as the factor:
    grad_input2 = -(C @ input2) (lower) or -(input2 @ C) (upper), C = G X^H + X G^H, G = cholesky_solve(grad)."""
    _name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, b, factor, upper):
        ctx.upper = upper
        prev = _state.enabled
        _state.enabled = False
        try:
            x = _cholesky_solve_values(Tensor._make(b), Tensor._make(factor), upper)._data
        finally:
            _state.enabled = prev
        ctx.save_for_backward(factor, x)
        return x

    def backward(ctx, grad):
        factor, x = ctx.saved_tensors
        gb = cholesky_solve(grad, factor, ctx.upper)
        gf = None
        if ctx.needs_input_grad[1]:
            common = matmul(gb, adj(x))
            common = common + adj(common)
            gf = -matmul(factor, common) if ctx.upper else -matmul(common, factor)
        return gb, gf


def cholesky_solve(input, input2, upper=False, *, out=None):
    """Solve A X = B given A's Cholesky factor."""
    return _out(CholeskySolve.apply(input, input2, upper=bool(upper)), out, "cholesky_solve")


class CholeskyInverse(Op):
    """(L L^H)^-1 from the triangle LAPACK's potri reads; the gradient is torch's formula, which
    treats the whole input matrix as the factor (so it is nonzero off the triangle too). A complex
    diagonal (never a Cholesky factor's) is taken as given, where LAPACK's lauum drops parts of it."""
    _name = "CholeskyInverseBackward0"

    @staticmethod
    def forward(ctx, L, upper):
        ctx.upper = upper
        t = np.triu(L) if upper else np.tril(L)
        n = t.shape[-1]
        zero = (np.diagonal(t, axis1=-2, axis2=-1) == 0).reshape(-1, n) if t.size else np.zeros((0, 0), bool)
        if zero.any():  # trtri's check: the first exactly-zero diagonal element of the first such matrix
            b = int(np.flatnonzero(zero.any(1))[0])
            i = int(np.argmax(zero[b])) + 1
            raise LinAlgError(f"cholesky_inverse: {batch_prefix(L.shape, b)}The diagonal element {i} is "
                              f"zero, the inversion could not be completed because the input matrix is singular.")
        t_inv = np.linalg.inv(t) if t.size else t.copy()
        t_inv_h = np.conj(np.swapaxes(t_inv, -1, -2))
        out = np.matmul(t_inv, t_inv_h) if upper else np.matmul(t_inv_h, t_inv)
        ctx.save_for_backward(L, out)
        return out

    def backward(ctx, grad):
        L, x = ctx.saved_tensors
        common = matmul(matmul(x, grad + adj(grad)), x)
        return -matmul(L, common) if ctx.upper else -matmul(common, L)


def cholesky_inverse(input, upper=False, *, out=None):
    check_matrix(input, "cholesky_inverse")
    return _out(CholeskyInverse.apply(input, upper=bool(upper)), out, "cholesky_inverse")


# ---- matrix_power ---------------------------------------------------------------------

class _Identity(Op):
    """matrix_power(A, 0): identities shaped like A; the gradient is zero."""
    _name = "CopyBackwards"

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return np.array(np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape))

    def backward(ctx, grad):
        return grad * 0


def linalg_matrix_power(input, n, *, out=None):
    check_matrix(input, "linalg.matrix_power", allow_int=True)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n == 0:
        r = _Identity.apply(input)
    elif n == 1:
        r = input.clone()
    else:
        if n < 0:
            input = linalg_inv(input)
            n = -n
        r = None
        base = input
        while n:
            if n & 1:
                r = base if r is None else matmul(r, base)
            n >>= 1
            if n:
                base = matmul(base, base)
    return _out(r, out, "linalg.matrix_power")


# ---- installation ---------------------------------------------------------------------

for _fn, _name in [(linalg_inv, "inv"), (linalg_inv_ex, "inv_ex"), (linalg_det, "det"),
                   (linalg_slogdet, "slogdet"), (linalg_solve, "solve"), (linalg_solve_ex, "solve_ex"),
                   (linalg_cholesky, "cholesky"), (linalg_cholesky_ex, "cholesky_ex"),
                   (linalg_solve_triangular, "solve_triangular"), (linalg_matrix_power, "matrix_power")]:
    install(_fn, "linalg." + _name, method=False, function=False)


def _inverse(input, *, out=None):
    return linalg_inv(input, out=out)


def _det(input):
    return linalg_det(input)


def _matrix_power(input, n):
    return linalg_matrix_power(input, n)


install(_det, "det")
install(logdet, "logdet")
install(slogdet, "slogdet", out=True)
install(_inverse, "inverse")
install(_matrix_power, "matrix_power", out=True)
install(cholesky, "cholesky")
install(cholesky_solve, "cholesky_solve")
install(cholesky_inverse, "cholesky_inverse")
install(triangular_solve, "triangular_solve")
