"""Op table rows: autograd through complex tensors (torch's conjugate Wirtinger convention).

For a holomorphic f torch's gradient is grad * conj(f'(z)); abs, angle, sgn, real, imag,
conj and the view_as_* ops have formulas of their own. Every row runs in complex64 and
complex128 with a complex upstream gradient (the harness draws one for complex outputs);
rows marked gradgrad also compare second derivatives under a complex direction.
Real operands mixed into complex ops (real * complex) check torch's rule that a real
input gets the real part of its complex gradient.
"""
from .harness import Case as C, T

CPLX = ("complex64", "complex128")
C128 = ("complex128",)
NONZERO = T(values=[[0.5 + 1.2j, -1.5 + 0.3j, 2.0 - 0.7j], [-0.7 - 1.1j, 1.2 + 0.4j, 0.3 - 2.0j]])
WITH_ZERO = T(values=[[0.5 + 1.2j, 0j, 2.0 - 0.7j], [-0.7 - 1.1j, 1.2 + 0.4j, 0.3 - 2.0j]])
SMALL = T((3, 4), low=-0.8, high=0.8)
AWAY = T((3, 4), low=0.3, high=2.0)  # first quadrant, away from 0


def _u(name, inp=(3, 4), gradgrad=False, **kw):
    """torch.name(x) and x.name() on a complex input, in one row."""
    return C(name, [inp], lambda t, x, n=name: (getattr(t, n)(x), getattr(x, n)()), dtypes=CPLX,
             gradgrad=gradgrad, **kw)


def _c(name, inputs, fn, gradgrad=False, **kw):
    return C(name, inputs, fn, dtypes=CPLX, gradgrad=gradgrad, **kw)


def _real(shape=(3, 4), **kw):
    """A real (float64) operand in a complex row."""
    return T(shape, dtype="float64", **kw)


def _real32(shape=(3, 4), **kw):
    return T(shape, dtype="float32", **kw)


CASES = [
    # ---- holomorphic unary math: grad * conj(f'(z)) ------------------------------------------
    _u("exp", gradgrad=True),
    _u("exp2"),
    _u("expm1", gradgrad=True),
    _u("log", NONZERO, gradgrad=True),
    _u("log2", NONZERO),
    _u("log10", NONZERO),
    _u("log1p", SMALL),
    _u("sqrt", NONZERO, gradgrad=True),
    _u("rsqrt", NONZERO, gradgrad=True),
    _u("square", gradgrad=True),
    _u("reciprocal", NONZERO, gradgrad=True),
    _u("neg"),
    _u("sin", gradgrad=True),
    _u("cos"),
    _u("tan", SMALL, gradgrad=True),
    _u("asin", SMALL),
    _u("acos", SMALL),
    _u("atan", SMALL),
    _u("sinh"),
    _u("cosh", gradgrad=True),
    _u("tanh", SMALL, gradgrad=True),
    _u("asinh", SMALL),
    _u("acosh", NONZERO, gradgrad=True),
    _u("atanh", SMALL),
    _u("sigmoid", gradgrad=True),
    _u("sinc", NONZERO),
    C("arcsin", [SMALL], lambda t, x: t.arcsin(x), dtypes=C128),
    # ---- non-holomorphic: their own formulas --------------------------------------------------
    _u("abs", NONZERO, gradgrad=True),
    _u("sgn", NONZERO, gradgrad=True),
    _u("angle", NONZERO, gradgrad=True),
    _u("conj", gradgrad=True),
    _c("conj_physical", [(3, 4)], lambda t, x: t.conj_physical(x)),
    _c("real", [(3, 4)], lambda t, x: (t.real(x), x.real * 2), gradgrad=True),
    _c("imag", [(3, 4)], lambda t, x: (t.imag(x), x.imag * 2), gradgrad=True),
    _c("real", [(3, 4)], lambda t, x: x.real * x.imag, id="product"),
    _c("view_as_real", [(3, 4)], lambda t, x: t.view_as_real(x) * 2),
    _c("view_as_real", [(3, 4)], lambda t, x: t.view_as_real(x * x).sum(-1), id="after-mul", gradgrad=True),
    C("view_as_complex", [(3, 4, 2)], lambda t, x: t.view_as_complex(x) * (1 + 2j), dtypes=("float32", "float64")),
    C("view_as_complex", [(3, 4, 2)], lambda t, x: t.view_as_complex(x).square(), dtypes=("float32", "float64"),
      gradgrad=True, id="square"),
    C("polar", [T((3, 4), low=0.2, high=2.0), (3, 4)], lambda t, r, a: t.polar(r, a) * (0.5 - 1j),
      dtypes=("float32", "float64"), gradgrad=True),
    C("complex", [(3, 4), (3, 4)], lambda t, a, b: t.complex(a, b).exp(), dtypes=("float32", "float64"),
      gradgrad=True),
    _c("abs", [NONZERO], lambda t, x: x.abs().square(), id="squared"),
    _c("abs", [NONZERO, NONZERO], lambda t, x, y: (x * y).abs(), id="of-product"),
    # ---- arithmetic ---------------------------------------------------------------------------
    _c("add", [(3, 4), (4,)], lambda t, x, y: (t.add(x, y), x + y)),
    _c("add", [(3, 4), (3, 4)], lambda t, x, y: t.add(x, y, alpha=2 - 1.5j), id="complex-alpha"),
    _c("sub", [(3, 4), (3, 4)], lambda t, x, y: (x - y, t.sub(x, y, alpha=0.5j)), id="alpha"),
    _c("mul", [(3, 4), (4,)], lambda t, x, y: (t.mul(x, y), x * y), gradgrad=True),
    _c("mul", [(3, 4)], lambda t, x: (x * (2 - 3j), (1j + 0.5) * x, x * 2.5), id="scalar"),
    _c("mul", [(3, 4), _real()], lambda t, x, y: x * y.to(x.dtype), id="real-other"),
    C("mul", [(3, 4), (3, 4)], lambda t, x, y: t.complex(x, y) * x, dtypes=("float32", "float64"),
      gradgrad=True, id="real-times-complex"),
    C("mul", [(3, 4)], lambda t, x: x * (1 + 2j), dtypes=("float32", "float64"), id="real-tensor-complex-scalar"),
    _c("div", [(3, 4), AWAY], lambda t, x, y: (t.div(x, y), x / y),
       gradgrad=True),
    _c("div", [NONZERO], lambda t, x: (x / (2 - 1j), (1 + 1j) / x, 3 / x), id="scalar"),
    _c("true_divide", [(3, 4), T((3, 4), low=0.3, high=2.0)], lambda t, x, y: t.true_divide(x, y)),
    # ---- powers -------------------------------------------------------------------------------
    _c("pow", [NONZERO], lambda t, x: (x.pow(3), x ** 2.5, t.pow(x, -1.5)), gradgrad=True, id="scalar-exponent"),
    _c("pow", [NONZERO], lambda t, x: (x ** (0.5 + 1j), x.pow(0)), id="complex-exponent"),
    _c("pow", [NONZERO, (2, 3)], lambda t, x, y: (x ** y, t.pow(x, y)), gradgrad=True, id="tensor-exponent"),
    _c("pow", [(2, 3)], lambda t, y: (2 ** y, (1.5 - 0.5j) ** y, t.pow(-2, y)), id="scalar-base"),
    _c("pow", [NONZERO, _real((2, 3))], lambda t, x, y: x ** y, id="real-exponent-tensor"),
    C("pow", [T((2, 3), low=-2.0, high=-0.2), (2, 3)], lambda t, x, y: x.to(t.complex128) ** t.complex(y, y),
      dtypes=("float64",), id="negative-real-base"),
    _c("float_power", [NONZERO], lambda t, x: t.float_power(x, 2.0), id="scalar"),
    _c("sqrt", [NONZERO], lambda t, x: x.sqrt().sqrt(), gradgrad=True, id="twice"),
    # ---- three-operand and selection ----------------------------------------------------------
    _c("lerp", [(3, 4), (3, 4)], lambda t, x, y: t.lerp(x, y, 0.3 + 0.2j)),
    _c("lerp", [(3, 4), (3, 4), (3, 4)], lambda t, x, y, w: t.lerp(x, y, w), id="tensor-weight", gradgrad=True),
    _c("addcmul", [(3, 4), (3, 4), (3, 4)], lambda t, x, a, b: t.addcmul(x, a, b, value=1 - 2j)),
    _c("addcdiv", [(3, 4), (3, 4), AWAY],
       lambda t, x, a, b: t.addcdiv(x, a, b, value=0.5j)),
    _c("logaddexp", [(3, 4), (3, 4)], lambda t, x, y: t.logaddexp(x, y)),
    _c("where", [(3, 4), (3, 4), T((3, 4), dtype="bool")], lambda t, x, y, m: t.where(m, x * x, y)),
    _c("masked_fill", [(3, 4), T((3, 4), dtype="bool")], lambda t, x, m: (x * 2).masked_fill(m, 1 - 1j)),
    _c("clone", [(3, 4)], lambda t, x: x.clone() * x),
    # ---- reductions and scans -----------------------------------------------------------------
    _c("sum", [(3, 4)], lambda t, x: (x.sum(), x.sum(1), (x * x).sum(0, keepdim=True))),
    _c("mean", [(3, 4)], lambda t, x: (x.mean(), (x * x).mean(1))),
    _c("prod", [NONZERO], lambda t, x: (x.prod(), x.prod(1)), gradgrad=True),
    _c("prod", [WITH_ZERO], lambda t, x: (x.prod(), x.prod(1), x.prod(0)), gradgrad=True, id="zeros"),
    _c("cumsum", [(3, 4)], lambda t, x: (x.cumsum(1), (x * x).cumsum(0))),
    _c("cumprod", [NONZERO], lambda t, x: x.cumprod(1), gradgrad=True),
    _c("cumprod", [WITH_ZERO], lambda t, x: (x.cumprod(1), x.cumprod(0)), id="zeros"),
    _c("cumprod", [WITH_ZERO], lambda t, x: x.cumprod(1), gradgrad=True, id="zeros-gradgrad"),
    _c("logsumexp", [(3, 4)], lambda t, x: x.logsumexp(1)),
    _c("logsumexp", [(3, 4)], lambda t, x: (x * 4).logsumexp(1), id="wrapped-imag"),  # |Im| > pi: wraps
    _c("logsumexp", [()], lambda t, x: (x * 8).logsumexp(0), id="0d-wrapped-imag"),
    _c("var", [(3, 4)], lambda t, x: (x.var(), x.var(1), x.std(0))),
    _c("linalg.vector_norm", [(3, 4)], lambda t, x: (t.linalg.vector_norm(x), t.linalg.vector_norm(x, 1, dim=1),
                                                      x.norm(dim=0))),
    _c("dist", [(3, 4), (3, 4)], lambda t, x, y: t.dist(x, y)),
    _c("trace", [(3, 3)], lambda t, x: (x * x).trace()),
    _c("diff", [(3, 4)], lambda t, x: t.diff(x * x, dim=1)),
    # ---- matmul family: conj of the other operand (dot vs vdot) ---------------------------------
    _c("matmul", [(3, 4), (4, 5)], lambda t, x, y: x @ y, gradgrad=True, id="2d"),
    _c("matmul", [(4,), (4,)], lambda t, x, y: x @ y, gradgrad=True, id="1d-1d"),
    _c("matmul", [(3, 4), (4,)], lambda t, x, y: x @ y, id="2d-1d"),
    _c("matmul", [(4,), (4, 5)], lambda t, x, y: x @ y, id="1d-2d"),
    _c("matmul", [(2, 3, 4), (2, 4, 5)], lambda t, x, y: x @ y, id="batched"),
    _c("matmul", [(4,), (2, 4, 5)], lambda t, x, y: x @ y, id="1d-3d"),
    _c("matmul", [(2, 3, 4), (4,)], lambda t, x, y: x @ y, id="3d-1d"),
    _c("bmm", [(2, 3, 4), (2, 4, 5)], lambda t, x, y: t.bmm(x, y)),
    _c("dot", [(5,), (5,)], lambda t, x, y: t.dot(x, y), gradgrad=True),
    _c("vdot", [(5,), (5,)], lambda t, x, y: t.vdot(x, y), gradgrad=True),
    _c("outer", [(3,), (4,)], lambda t, x, y: (t.outer(x, y), t.ger(x, y))),
    _c("inner", [(3, 4), (2, 4)], lambda t, x, y: t.inner(x, y)),
    _c("tensordot", [(3, 4), (4, 2)], lambda t, x, y: t.tensordot(x, y, dims=1)),
    _c("kron", [(2, 2), (2, 3)], lambda t, x, y: t.kron(x, y)),
    _c("einsum", [(3, 4), (4,)], lambda t, x, y: t.einsum("ij,j->i", x, y), id="mv"),
    _c("einsum", [(3, 4), (3, 4)], lambda t, x, y: t.einsum("ij,ij->", x, y), id="full"),
    _c("addmm", [(5,), (3, 4), (4, 5)], lambda t, b, x, y: t.addmm(b, x, y, beta=0.5 + 1j, alpha=2 - 1j),
       id="complex-scalars"),
    _c("addmv", [(3,), (3, 4), (4,)], lambda t, b, x, y: t.addmv(b, x, y, beta=1j, alpha=0.5)),
    _c("addr", [(3, 4), (3,), (4,)], lambda t, b, x, y: t.addr(b, x, y, alpha=1 + 1j)),
    _c("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], lambda t, b, x, y: t.baddbmm(b, x, y, alpha=1j)),
    _c("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)], lambda t, b, x, y: t.addbmm(b, x, y, beta=2j)),
    _c("nn.functional.linear", [(2, 4), (3, 4), (3,)], lambda t, x, w, b: t.nn.functional.linear(x, w, b)),
    _c("nn.functional.conv1d", [(1, 2, 6), (3, 2, 3)], lambda t, x, w: t.nn.functional.conv1d(x, w)),
    _c("linalg.inv", [(3, 3)], lambda t, x: t.linalg.inv(x + 6 * t.eye(3, dtype=x.dtype)), gradgrad=True,
       id="cplx-gradgrad"),
    _c("linalg.det", [(2, 3, 3)], lambda t, x: t.linalg.det(x + 6 * t.eye(3, dtype=x.dtype)), id="cplx-batched"),
    _c("linalg.slogdet", [(3, 3)], lambda t, x: t.linalg.slogdet(x + 6 * t.eye(3, dtype=x.dtype)).logabsdet,
       id="cplx-logabsdet"),
    _c("linalg.solve", [(3, 3), (3,)], lambda t, a, b: t.linalg.solve(a + 6 * t.eye(3, dtype=a.dtype), b),
       id="cplx-vector"),
    _c("linalg.svdvals", [(4, 3)], lambda t, x: t.linalg.svdvals(x), id="cplx"),
    _c("linalg.eigvalsh", [(3, 3)], lambda t, x: t.linalg.eigvalsh(x @ x.mH), id="cplx"),
    _c("linalg.matrix_norm", [(3, 3)], lambda t, x: t.linalg.matrix_norm(x), id="cplx-fro"),
    _c("linalg.eigh", [(3, 3)],
       lambda t, x: _eigh_invariants(t.linalg.eigh(x @ x.mH + t.diag(t.arange(3.0)).to(x.dtype))), id="cplx-vectors"),
    _c("linalg.svd", [(4, 3)], lambda t, x: _svd_invariants(t.linalg.svd(x, full_matrices=False)), id="cplx-vectors"),
    _c("linalg.eig", [(3, 3)], lambda t, x: _eig_invariants(t.linalg.eig(x + t.diag(t.arange(3.0) * 3).to(x.dtype))),
       id="cplx-vectors"),
    _c("linalg.matrix_exp", [(3, 3)], lambda t, x: t.linalg.matrix_exp(x * 0.5), id="cplx-scaled"),
    _c("linalg.pinv", [(3, 4)], lambda t, x: t.linalg.pinv(x), id="cplx-wide"),
    # a Cholesky factor: triangular with a real positive diagonal (LAPACK's lauum ignores imaginary diagonals)
    _c("cholesky_inverse", [(3, 3)], lambda t, x: (t.cholesky_inverse(x.tril(-1) + (2 + x.real.abs()).diag().diag(
        ).to(x.dtype)), t.cholesky_inverse(x.triu(1) + 2 * t.eye(3, dtype=x.dtype), True))),
    _c("linalg.cholesky", [(3, 3)], lambda t, x: t.linalg.cholesky(x @ x.mH + 3 * t.eye(3, dtype=x.dtype)),
       gradgrad=True, id="cplx-gradgrad"),
    # ---- views, copies, indexing (linear: the gradient routes unchanged) -------------------------
    _c("reshape", [(3, 4)], lambda t, x: (x.reshape(4, 3) * 2, x.view(2, 6).square(), x.flatten())),
    _c("transpose", [(3, 4)], lambda t, x: (x.transpose(0, 1) * x.T, x.mT, x.permute(1, 0), x.t())),
    _c("Tensor.mH", [(3, 4)], lambda t, x: (x.mH * 2, x.H, x.adjoint())),
    _c("expand", [(3, 1)], lambda t, x: (x.expand(3, 4) * 1j, x.expand_as(t.ones(2, 3, 4, dtype=x.dtype)))),
    _c("cat", [(2, 3), (1, 3)], lambda t, x, y: (t.cat([x, y * y]), t.stack([x, x * 2]), t.hstack([x, x]))),
    _c("split", [(4, 3)], lambda t, x: (x.split(2), x.chunk(2, 1), x.unbind(0))),
    _c("getitem", [(4, 3)], lambda t, x: (x[1:, ::2], x[[0, 2, 2]], x[x.real > 0], x[..., 1])),
    _c("setitem", [(4, 3), (3,)], lambda t, x, v: _setitem(x, v)),
    _c("index_select", [(4, 3)], lambda t, x: (x.index_select(0, t.tensor([3, 0, 3])),
                                              x.gather(1, t.tensor([[0, 2], [1, 1], [2, 0], [0, 0]])))),
    _c("scatter_add", [(4, 3), (2, 3)], lambda t, x, s: x.scatter_add(0, t.tensor([[0, 1, 2], [3, 3, 3]]), s)),
    _c("flip", [(3, 4)], lambda t, x: (x.flip(0), x.roll(1, 1), x.tril(), x.triu(1), x.diag_embed(), x.diagonal())),
    _c("repeat", [(2, 3)], lambda t, x: (x.repeat(2, 1), x.unsqueeze(0).squeeze(0), x.narrow(1, 1, 2),
                                         x.movedim(0, 1), x.unfold(1, 2, 1))),
    _c("index_put", [(4, 3), (2, 3)], lambda t, x, v: x.index_put((t.tensor([1, 3]),), v, accumulate=True)),
    # ---- dtype conversions ----------------------------------------------------------------------
    C("Tensor.to", [(3, 4)], lambda t, x: (x.to(t.complex128) * (1 + 1j), x.to(t.complex64).exp()),
      dtypes=("float32", "float64"), id="real-to-complex"),
    C("Tensor.to", [(3, 4)], lambda t, x: x.to(t.complex128).square(), dtypes=("complex64",), id="widen"),
    C("Tensor.to", [(3, 4)], lambda t, x: x.to(t.complex64) * x.to(t.complex64), dtypes=C128, id="narrow"),
    _c("Tensor.to", [(3, 4)], lambda t, x: ((x * x).to(x.real.dtype).exp(), x.to(t.float64)), id="complex-to-real"),
    C("Tensor.type_as", [(3, 4), T((3, 4), dtype="complex128", grad=False)],
      lambda t, x, y: x.type_as(y) * y, dtypes=("float64",), id="real-to-complex"),
    _c("ldexp", [(3, 4), (3, 4)], lambda t, x, y: t.ldexp(x, y)),
    # ---- errors ---------------------------------------------------------------------------------
    _c("abs_", [(3, 4)], lambda t, x: (x * 1).abs_(), error=RuntimeError, id="inplace"),
    _c("Tensor.backward", [(3, 4)], lambda t, x: (x * x).sum().backward(), error=RuntimeError, id="complex-scalar"),
]


def _setitem(x, v):
    y = x * 1
    y[1] = v * v
    y[2:, 0] = 1 - 2j
    return y


def _eigh_invariants(r):
    """Eigenvalues and functions of the eigenvectors that do not depend on their phases."""
    L, V = r
    return L, (V * V.conj()).real, (V * L.unsqueeze(-2)) @ V.mH


def _svd_invariants(r):
    U, S, Vh = r
    return S, U @ Vh, (U * U.conj()).real


def _eig_invariants(r):
    L, V = r
    return L, (V * V.conj()).real.sum(-2)
