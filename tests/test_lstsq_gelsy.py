"""torch.linalg.lstsq with its default CPU driver 'gelsy' against torch 2.13.0: the rank exactly and the
solution within the dtype's tolerance (scaled by the condition of the part of A the rank keeps), over
seeded full-rank, exactly and nearly rank-deficient, wide, tall, batched and vector-B problems, every
rcond kind, and all four dtypes (ember's algorithm: ember/_backend/gelsy.py).

The oracle is the xGELSY that torch 2.13.0 calls (MKL's, exported by libtorch_cpu.so), called as torch
calls it but with the pivot array zeroed. torch passes an uninitialized pivot array and reuses it across
a batch, so torch.linalg.lstsq's own rank and solution for a rank-deficient A, or where rcond bites,
depend on memory left by earlier allocations (pytorch/pytorch#187411; the fix zeroes it, #187436).
Where that cannot change the answer (full-rank A, rcond > 1, zero matrix, empty dims, the gradient)
torch.linalg.lstsq itself is the oracle. A torch without MKL's symbols falls back on scipy's LAPACK
gelsy, the same reference routine.
"""
import ctypes
import os

import numpy as np
import pytest
import torch

import ember

DTYPES = ["float32", "float64", "complex64", "complex128"]
RCONDS = [None, 1e-3, 0.5, 1.5, 0.0]
SHAPES = [(3, 4), (4, 3), (5, 5), (6, 2), (2, 6), (7, 4), (1, 3), (3, 1)]


def _lapack_gelsy(a, b, rcond):
    """(solution, rank) of torch's LAPACK xGELSY for one matrix, every column free to pivot."""
    m, n = a.shape
    k = b.shape[1]
    if rcond is None:
        rcond = np.finfo(a.real.dtype).eps * max(m, n)
    bb = np.zeros((max(m, n, 1), k), a.dtype, order="F")
    bb[:m] = b
    fn = _mkl(a.dtype)
    if fn is None:
        from scipy.linalg import lapack
        routine = lapack.get_lapack_funcs("gelsy", (a,))
        lwork = int(np.real(routine(a, bb, np.zeros(n, np.int32), rcond, -1)[-2][0]))
        _, x, _, rank, info = routine(a, bb, np.zeros(n, np.int32), rcond, max(1, lwork))
        assert info == 0
        return x[:n], rank
    A = np.asfortranarray(a.copy())
    jpvt = np.zeros(max(n, 1), np.int32)
    real = ctypes.c_float if a.real.dtype == np.float32 else ctypes.c_double
    rank = ctypes.c_int(0)
    info = ctypes.c_int(0)
    lwork = (m + n + k + 1) * (n + k + 256)
    work = np.zeros(lwork, a.dtype)
    rwork = np.zeros(2 * max(n, 1), a.real.dtype)
    args = [_int(m), _int(n), _int(k), _ptr(A), _int(max(1, m)), _ptr(bb), _int(max(1, m, n)), _ptr(jpvt),
            ctypes.byref(real(rcond)), ctypes.byref(rank), _ptr(work), _int(lwork)]
    if a.dtype.kind == "c":
        args.append(_ptr(rwork))
    fn(*args, ctypes.byref(info))
    assert info.value == 0
    return bb[:n].copy(), rank.value


def _int(v):
    return ctypes.byref(ctypes.c_int(v))


def _ptr(arr):
    return arr.ctypes.data_as(ctypes.c_void_p)


def _mkl(dtype):
    lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    name = {"float32": "sgelsy_", "float64": "dgelsy_", "complex64": "cgelsy_", "complex128": "zgelsy_"}[dtype.name]
    return getattr(lib, name, None)


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x


def _matrix(rng, kind, m, n, dtype):
    """A seeded m x n matrix: 'full' rank, 'deficient' (product of thin factors), 'near' (a column a
    small perturbation of another), or 'zero'."""
    if kind == "zero":
        return np.zeros((m, n), dtype)
    if kind == "deficient" and min(m, n) > 1:
        r = int(rng.integers(1, min(m, n)))
        return (_rand(rng, (m, r), dtype) @ _rand(rng, (r, n), dtype)).astype(dtype)
    a = _rand(rng, (m, n), dtype)
    if kind == "near" and n > 1:
        a[:, -1] = a[:, 0] + 1e-4 * _rand(rng, m, dtype)
    return a.astype(dtype)


def _check(x, rank, a, b, rcond):
    """ember's solution/rank for one matrix against torch's LAPACK gelsy on it."""
    x_ref, rank_ref = _lapack_gelsy(a, b, rcond)
    assert rank == rank_ref, (a.shape, a.dtype, rcond, rank, rank_ref)
    if rcond == 0.0 and rank_ref == min(a.shape) and _cond(a, rank_ref) > 1e6:
        return  # rcond=0 keeps a numerically singular block: both solutions are rounding noise
    assert x.dtype == x_ref.dtype and x.shape == x_ref.shape
    tol = (2e-5 if a.real.dtype == np.float32 else 1e-12) * _cond(a, rank_ref)
    np.testing.assert_allclose(x, x_ref, rtol=0, atol=tol * max(1.0, np.abs(x_ref).max()))


def _cond(a, rank):
    """The condition number of the rank-rank part of A that the solution inverts."""
    if rank == 0:
        return 1.0
    s = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    return max(1.0, s[0] / s[rank - 1])


def _ember(a, b, rcond):
    r = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond=rcond)
    return r.solution.numpy(), r.rank.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["full", "deficient", "near"])
def test_single_matrices_match_lapack_gelsy(dtype, kind):
    rng = np.random.default_rng(["full", "deficient", "near"].index(kind) * 10 + DTYPES.index(dtype))
    for m, n in SHAPES:
        for _ in range(2):
            a = _matrix(rng, kind, m, n, dtype)
            b = _rand(rng, (m, 2), dtype).astype(dtype)
            for rcond in RCONDS:
                x, rank = _ember(a, b, rcond)
                assert rank.dtype == np.int64 and rank.shape == ()
                _check(x, int(rank), a, b, rcond)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_and_broadcast_match_lapack_gelsy(dtype):
    rng = np.random.default_rng(40 + DTYPES.index(dtype))
    m, n = 4, 5
    kinds = ["full", "deficient", "near", "zero", "deficient", "full"]
    a = np.stack([_matrix(rng, k, m, n, dtype) for k in kinds]).reshape(3, 2, m, n)
    b = _rand(rng, (1, 2, m, 3), dtype).astype(dtype)  # broadcast against a's (3, 2) batch
    b[0, 1, :, 0] = 0  # one zero column of B
    for rcond in RCONDS:
        x, rank = _ember(a, b, rcond)
        assert x.shape == (3, 2, n, 3) and rank.shape == (3, 2)
        for i in range(3):
            for j in range(2):
                _check(x[i, j], int(rank[i, j]), a[i, j], b[0, j], rcond)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_b_matches_lapack_gelsy(dtype):
    rng = np.random.default_rng(50 + DTYPES.index(dtype))
    for m, n in [(5, 3), (3, 5)]:
        a = np.stack([_matrix(rng, k, m, n, dtype) for k in ["deficient", "near"]])
        b = _rand(rng, (2, m), dtype).astype(dtype)
        for rcond in RCONDS:
            x, rank = _ember(a, b, rcond)
            assert x.shape == (2, n)
            for i in range(2):
                _check(x[i][:, None], int(rank[i]), a[i], b[i][:, None], rcond)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tiny_huge_and_zero_magnitudes_match_lapack_gelsy(dtype):
    """LAPACK scales A and B into a safe range, and its norms neither underflow nor overflow."""
    rng = np.random.default_rng(55 + DTYPES.index(dtype))
    wide = dtype in ("float64", "complex128")
    for scale in ((1e-300, 1e-310, 1e300, 1e-20) if wide else (1e-30, 1e-40, 1e30, 1e-20)):
        for kind in ("full", "deficient"):
            a = (_matrix(rng, kind, 6, 4, dtype) * scale).astype(dtype)
            b = (_rand(rng, (6, 2), dtype) * scale).astype(dtype)  # a solution of order 1 (no overflow)
            for bb in (b, b * 0):
                for rcond in (None, 0.5):
                    x, rank = _ember(a, bb, rcond)
                    _check(x, int(rank), a, bb, rcond)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_cancelling_column_norms_match_lapack_gelsy(dtype):
    """Nearly parallel columns: after the first step the other's norm is all cancellation, so LAPACK
    recomputes it rather than downdating, and that choice decides the next pivot."""
    rng = np.random.default_rng(57 + DTYPES.index(dtype))
    for _ in range(40):
        c0 = _rand(rng, 6, dtype)
        e1, e2 = 10.0 ** rng.uniform(-12, -6, 2)
        a = np.stack([c0, c0 + e1 * _rand(rng, 6, dtype), e2 * _rand(rng, 6, dtype), 1e-3 * _rand(rng, 6, dtype)], 1)
        a = a.astype(dtype)
        b = _rand(rng, (6, 1), dtype).astype(dtype)
        for rcond in (1e-8, 1e-4):
            x, rank = _ember(a, b, rcond)
            _check(x, int(rank), a, b, rcond)


def test_issue_example():
    """The reported case: A = randn(3, 4) float32, B = A[:, :1]; rcond 1.5 gives rank 1, 0.5 rank 2."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, generator=g).numpy()
    b = a[:, :1].copy()
    for rcond in (1.5, 0.5):
        x, rank = _ember(a, b, rcond)
        _check(x, int(rank), a, b, rcond)
    assert int(_ember(a, b, 1.5)[1]) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_against_torch_where_its_pivot_array_cannot_matter(dtype):
    """Full-rank well-conditioned A (any column order keeps every column, the solution is unique) and
    rcond > 1 (the rank is 1 whatever the order): torch.linalg.lstsq itself, every field."""
    rng = np.random.default_rng(60 + DTYPES.index(dtype))
    tdt = getattr(torch, dtype)
    for shape, bshape, rcond in [((4, 3), (4, 2), None), ((3, 5), (3, 1), 1e-3), ((2, 4, 4), (2, 4, 3), None),
                                 ((3, 4), (3,), None), ((2, 5, 3), (2, 5, 2), 1.5), ((3, 3, 6), (3, 3, 1), 2.0)]:
        a = _rand(rng, shape, dtype).astype(dtype)
        b = _rand(rng, bshape, dtype).astype(dtype)
        t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond=rcond)
        e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond=rcond)
        np.testing.assert_array_equal(e.rank.numpy(), t.rank.numpy())
        for field in ("solution", "residuals", "singular_values"):
            te, tt = getattr(e, field).numpy(), getattr(t, field).numpy()
            assert te.shape == tt.shape and te.dtype == tt.dtype, field
        if rcond is None or rcond < 1:
            tol = 1e-4 if dtype in ("float32", "complex64") else 1e-11
            np.testing.assert_allclose(e.solution.numpy(), t.solution.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", [(6, 2), (2, 6)])
def test_default_rcond_is_eps_times_the_larger_dim(dtype, m, n):
    """A with singular values 1 and 4 eps: rank 1 under rcond = eps * max(m, n) = 6 eps, 2 under 2 eps.
    With two nonzero orthogonal columns either column order gives the same R up to order, so for the
    tall case torch's pivot array cannot matter: torch.linalg.lstsq itself; the wide one has zero columns
    (which a stale pivot array can move to the front), so there torch's gelsy with a zeroed one."""
    a = np.zeros((m, n), dtype)
    a[0, 0] = 1
    a[1, 1] = 4 * np.finfo(a.real.dtype).eps
    b = np.ones((m, 1), dtype)
    for rcond in (None, 3 * np.finfo(a.real.dtype).eps):
        x, rank = _ember(a, b, rcond)
        if m > n:
            t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond=rcond)
            assert int(rank) == int(t.rank) == (1 if rcond is None else 2)
            np.testing.assert_allclose(x, t.solution.numpy(), rtol=1e-6)
        else:
            _check(x, int(rank), a, b, rcond)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (3, 2)), ((0, 3), (0, 2)), ((3, 0), (3, 2)), ((3, 3), (3, 0)),
                                              ((0, 0), (0, 2)), ((0, 3, 3), (0, 3, 2)), ((2, 0, 3), (2, 0))])
def test_zero_matrix_and_empty_dims_against_torch(dtype, a_shape, b_shape):
    a = np.zeros(a_shape, dtype)
    b = np.ones(b_shape, dtype)
    for rcond in (None, 0.5):
        t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond=rcond)
        e = ember.linalg.lstsq(ember.from_numpy(a), ember.from_numpy(b), rcond=rcond)
        for field in ("solution", "residuals", "rank", "singular_values"):
            te, tt = getattr(e, field).numpy(), getattr(t, field).numpy()
            assert te.shape == tt.shape and te.dtype == tt.dtype, field
            np.testing.assert_array_equal(te, tt)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradient_against_torch_on_rank_deficient_input(dtype):
    """torch's lstsq backward goes through pinv(A) whatever the driver's rank, and so does ember's."""
    rng = np.random.default_rng(70 + DTYPES.index(dtype))
    a = _matrix(rng, "deficient", 5, 4, dtype)
    b = _rand(rng, (5, 2), dtype).astype(dtype)
    g = _rand(rng, (4, 2), dtype).astype(dtype)
    grads = []
    for lib in (torch, ember):
        A = lib.tensor(a, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)
        lib.linalg.lstsq(A, B, rcond=0.5).solution.backward(lib.tensor(g))
        grads.append((A.grad.numpy(), B.grad.numpy()))
    for ge, gt in zip(grads[1], grads[0]):
        np.testing.assert_allclose(ge, gt, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_rank_shortcut_agrees_with_the_routine_and_lapack(dtype):
    """Clearly full-rank tall/square matrices take a batched QR solve (Note [gelsy's full-rank shortcut]);
    the others the routine. Both paths are forced here, and each agrees with LAPACK's gelsy."""
    from ember._backend import gelsy as G
    rng = np.random.default_rng(7 + DTYPES.index(dtype))
    for m, n in [(4, 3), (5, 5), (7, 2)]:
        kinds = ["full", "full", "deficient", "near", "zero"]
        a = np.stack([_matrix(rng, kind, m, n, dtype) for kind in kinds])
        b = _rand(rng, (len(kinds), m, 2), dtype).astype(dtype)
        for rcond in [None, 1e-3, 0.5]:
            real = np.finfo(a.real.dtype).eps * max(m, n) if rcond is None else rcond
            clear = G._clearly_full_rank(a, b, a.real.dtype.type(real))
            margin = 2 * real + 16 * np.finfo(a.real.dtype).eps * max(m, n)
            ratio = np.array([1 / _cond(x, n) if np.abs(x).max() > 0 else 0.0 for x in a])
            sure = np.abs(ratio / margin - 1) > 0.1  # the float64 SVD decides away from the edge
            assert list(clear[sure]) == list((ratio > margin)[sure]), (m, n, rcond, clear, ratio, margin)
            assert clear[0] == (rcond != 0.5 or ratio[0] > margin) and not clear[2] and not clear[4]
            x, rank = G.gelsy(a, b, rcond)
            x_routine, rank_routine = G._routine(a, b, a.real.dtype.type(real))
            np.testing.assert_array_equal(rank, rank_routine)
            for i in range(len(kinds)):
                _check(x[i], int(rank[i]), a[i], b[i], rcond)
    assert G._clearly_full_rank(np.ones((1, 2, 3), dtype), np.ones((1, 2, 1), dtype), 1e-6) is None  # wide
