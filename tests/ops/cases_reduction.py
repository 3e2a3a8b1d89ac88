"""Op table rows: reductions (sum, mean, prod, max/min, var/std, logsumexp, norm, all/any ...) and
scans (cumsum, cumprod, cummax/cummin, logcumsumexp, diff)."""
from .harness import Case as C, T

NAN = float("nan")
INF = float("inf")
INT = ("int64",)
BOOL = ("bool",)
F64 = ("float64",)

TIES = T(values=[[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 1.0, 2.0]])
WITH_NAN = T(values=[[1.0, NAN, 3.0, NAN], [0.5, 2.0, -1.0, 4.0]])
ZEROS1 = T(values=[[1.5, 0.0, 2.0, -3.0], [0.5, 1.0, -2.0, 2.0]])        # one zero in row 0
ZEROS2 = T(values=[[1.5, 0.0, 2.0, 0.0], [0.0, 1.0, -2.0, 2.0]])         # two zeros in row 0
MIXED_INT = T((3, 4), dtype="int32", low=-5, high=5)



CASES = [
    # ---- sum / nansum -----------------------------------------------------------------------
    C("sum", [(3, 4)], lambda t, x: t.sum(x), gradgrad=True),
    C("sum", [(2, 3, 4)], lambda t, x: x.sum(1), id="dim"),
    C("sum", [(2, 3, 4)], lambda t, x: x.sum((0, -1), keepdim=True), gradgrad=True, id="tuple-keepdim"),
    C("sum", [(2, 3, 4)], lambda t, x: t.sum(x, dim=[-2]), id="neg-list"),
    C("sum", [(2, 3)], lambda t, x: x.sum(dim=None, keepdim=True), id="none-keepdim"),
    C("sum", [()], lambda t, x: x.sum(0), id="0d-dim"),
    C("sum", [(0, 3)], lambda t, x: x.sum(0), id="empty"),
    C("sum", [T((3, 4), noncontig=True)], lambda t, x: x.sum(1), id="noncontig"),
    C("sum", [T(values=[1.0, NAN, INF, 2.0])], lambda t, x: x.sum(), id="nan-inf"),
    C("sum", [MIXED_INT], lambda t, x: x.sum(0), dtypes=INT, id="int32-to-int64"),
    C("sum", [T((5,))], lambda t, x: x.sum(), dtypes=BOOL, id="bool"),
    C("sum", [T((3,))], lambda t, x: x.sum(dtype=t.float64), dtypes=INT, id="dtype"),
    C("sum", [(3, 4), T((4,), grad=False)], lambda t, x, o: t.sum(x, 0, out=o), grad=False, id="out"),
    C("sum", [(2, 3)], lambda t, x: x.sum((1, -1)), error=RuntimeError, id="repeated-dim"),
    C("sum", [(2, 3)], lambda t, x: x.sum(2), error=IndexError, id="dim-range"),
    C("nansum", [WITH_NAN], lambda t, x: t.nansum(x)),
    C("nansum", [WITH_NAN], lambda t, x: x.nansum(1, keepdim=True), id="dim"),
    C("nansum", [MIXED_INT], lambda t, x: x.nansum(), dtypes=INT, id="int"),

    # ---- mean / nanmean ----------------------------------------------------------------------
    C("mean", [(3, 4)], lambda t, x: x.mean(), gradgrad=True),
    C("mean", [(2, 3, 4)], lambda t, x: t.mean(x, (0, 2)), gradgrad=True, id="tuple"),
    C("mean", [(2, 3, 4)], lambda t, x: x.mean(-1, keepdim=True), id="keepdim"),
    C("mean", [(0, 3)], lambda t, x: x.mean(0), id="empty-nan"),
    C("mean", [MIXED_INT], lambda t, x: x.mean(), dtypes=INT, error=RuntimeError, id="int-error"),
    C("mean", [MIXED_INT], lambda t, x: x.mean(1, dtype=t.float64), dtypes=INT, id="int-dtype"),
    C("nanmean", [WITH_NAN], lambda t, x: x.nanmean()),
    C("nanmean", [T(values=[[NAN, NAN], [1.0, 2.0]])], lambda t, x: x.nanmean(1), id="all-nan-row"),
    C("nanmean", [MIXED_INT], lambda t, x: x.nanmean(), dtypes=INT, error=RuntimeError, id="int-error"),

    # ---- prod -----------------------------------------------------------------------------------
    C("prod", [(3, 4)], lambda t, x: x.prod(), gradgrad=True),
    C("prod", [(3, 4)], lambda t, x: t.prod(x, 1, keepdim=True), gradgrad=True, id="dim"),
    C("prod", [ZEROS1], lambda t, x: x.prod(1), gradgrad=True, id="one-zero"),
    C("prod", [ZEROS2], lambda t, x: x.prod(-1), gradgrad=True, id="two-zeros"),
    C("prod", [ZEROS1], lambda t, x: x.prod(), gradgrad=True, id="full-one-zero"),
    C("prod", [ZEROS2], lambda t, x: x.prod(0), id="dim0-zeros"),
    C("prod", [MIXED_INT], lambda t, x: x.prod(0), dtypes=INT, id="int"),
    C("prod", [T((4,))], lambda t, x: x.prod(), dtypes=BOOL, id="bool"),
    C("prod", [(2, 3)], lambda t, x: x.prod(dtype=t.float64), id="dtype"),
    C("prod", [(2, 3)], lambda t, x: x.prod((0, 1)), error=TypeError, id="tuple-error"),

    # ---- max / min / amax / amin / aminmax --------------------------------------------------------
    C("max", [(3, 4)], lambda t, x: t.max(x)),
    C("max", [(3, 4)], lambda t, x: x.max(1), id="dim"),
    C("max", [(2, 3, 4)], lambda t, x: t.max(x, dim=-2, keepdim=True), id="keepdim-neg"),
    C("max", [TIES], lambda t, x: x.max(1), id="ties-first-index"),
    C("max", [TIES], lambda t, x: x.max(), id="ties-full-grad-split"),
    C("max", [WITH_NAN], lambda t, x: x.max(1), id="nan-dim"),
    C("max", [WITH_NAN], lambda t, x: x.max(), id="nan-full"),
    C("max", [(3, 4), (4,)], lambda t, x, y: t.max(x, y), id="binary"),
    C("max", [(0,)], lambda t, x: x.max(), error=RuntimeError, id="empty-error"),
    C("max", [(0, 3)], lambda t, x: x.max(0), error=IndexError, id="empty-dim-error"),
    C("max", [(0, 3)], lambda t, x: x.max(1), id="empty-other-dim"),
    C("max", [()], lambda t, x: x.max(0), id="0d"),
    C("max", [MIXED_INT], lambda t, x: x.max(0), dtypes=INT, id="int"),
    C("max", [T((5,))], lambda t, x: x.max(), dtypes=BOOL, id="bool"),
    C("max", [T((3, 4), noncontig=True)], lambda t, x: x.max(0), id="noncontig"),
    C("max", [(3, 4), T((3,), grad=False), T((3,), dtype="int64")],
      lambda t, x, v, i: t.max(x, 1, out=(v, i)), grad=False, id="out"),
    C("min", [(3, 4)], lambda t, x: t.min(x)),
    C("min", [TIES], lambda t, x: x.min(1, keepdim=True), id="ties"),
    C("min", [TIES], lambda t, x: x.min(), id="ties-full"),
    C("min", [(3, 4), (3, 4)], lambda t, x, y: x.min(y), id="binary"),
    C("amax", [(2, 3, 4)], lambda t, x: t.amax(x, (0, 2))),
    C("amax", [TIES], lambda t, x: x.amax(1), id="ties"),
    C("amax", [TIES], lambda t, x: x.amax(), id="full-ties"),
    C("amax", [WITH_NAN], lambda t, x: x.amax(1, keepdim=True), id="nan"),
    C("amax", [(0, 3)], lambda t, x: x.amax(0), error=IndexError, id="empty-error"),
    C("amin", [(2, 3, 4)], lambda t, x: x.amin(-1, keepdim=True)),
    C("amin", [MIXED_INT], lambda t, x: x.amin(1), dtypes=INT, id="int"),
    C("aminmax", [TIES], lambda t, x: t.aminmax(x)),
    C("aminmax", [(3, 4)], lambda t, x: x.aminmax(dim=1, keepdim=True), id="dim"),
    C("aminmax", [(0, 3)], lambda t, x: t.aminmax(x), error=RuntimeError, id="empty-error"),

    # ---- argmax / argmin ------------------------------------------------------------------------------
    C("argmax", [(3, 4)], lambda t, x: t.argmax(x)),
    C("argmax", [(3, 4)], lambda t, x: x.argmax(1, keepdim=True), id="dim"),
    C("argmax", [(3, 4)], lambda t, x: x.argmax(keepdim=True), id="none-keepdim"),
    C("argmax", [TIES], lambda t, x: x.argmax(-1), id="ties-first"),
    C("argmax", [WITH_NAN], lambda t, x: x.argmax(1), id="nan"),
    C("argmax", [(0,)], lambda t, x: x.argmax(), error=IndexError, id="empty-error"),
    C("argmax", [T((4,))], lambda t, x: x.argmax(), dtypes=BOOL, error=RuntimeError, id="bool-error"),
    C("argmax", [MIXED_INT], lambda t, x: x.argmax(0), dtypes=INT, id="int"),
    C("argmin", [TIES], lambda t, x: t.argmin(x, 1)),
    C("argmin", [WITH_NAN], lambda t, x: x.argmin(), id="nan"),

    # ---- var / std ----------------------------------------------------------------------------------
    C("var", [(3, 4)], lambda t, x: x.var(), gradgrad=True),
    C("var", [(3, 4)], lambda t, x: t.var(x, 1, keepdim=True), gradgrad=True, id="dim"),
    C("var", [(2, 3, 4)], lambda t, x: x.var((0, 2), correction=0), id="tuple-correction0"),
    C("var", [(3, 5)], lambda t, x: x.var(1, correction=2.5), id="float-correction"),
    C("var", [(3, 4)], lambda t, x: x.var(0, False), id="legacy-unbiased"),
    C("var", [(3, 4)], lambda t, x: x.var(unbiased=False), id="unbiased-kw"),
    C("var", [(1, 3)], lambda t, x: x.var(0), id="one-element-nan"),
    C("var", [MIXED_INT], lambda t, x: x.var(), dtypes=INT, error=RuntimeError, id="int-error"),
    C("std", [(3, 4)], lambda t, x: x.std(), gradgrad=True),
    C("std", [(3, 4)], lambda t, x: t.std(x, -1, correction=0, keepdim=True), gradgrad=True, id="dim"),
    C("std", [T(values=[[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])], lambda t, x: x.std(1), id="zero-std-grad"),
    C("var_mean", [(3, 4)], lambda t, x: t.var_mean(x, 1)),
    C("std_mean", [(3, 4)], lambda t, x: t.std_mean(x, (0, 1), correction=0, keepdim=True)),

    # ---- logsumexp --------------------------------------------------------------------------------
    C("logsumexp", [(3, 4)], lambda t, x: t.logsumexp(x, 1), gradgrad=True),
    C("logsumexp", [(2, 3, 4)], lambda t, x: x.logsumexp((0, 2), keepdim=True), gradgrad=True, id="tuple"),
    C("logsumexp", [T((3, 4), low=500, high=1000)], lambda t, x: x.logsumexp(1), id="large-stable"),
    C("logsumexp", [T(values=[[-INF, -INF], [INF, 1.0], [2.0, -INF]])], lambda t, x: x.logsumexp(1),
      grad=False, id="inf"),
    C("logsumexp", [(0, 3)], lambda t, x: x.logsumexp(0), id="empty"),
    C("logsumexp", [MIXED_INT], lambda t, x: x.logsumexp(0), dtypes=INT, id="int"),

    # ---- norm / dist --------------------------------------------------------------------------------
    C("norm", [(3, 4)], lambda t, x: x.norm(), gradgrad=True),
    C("norm", [(3, 4)], lambda t, x: t.norm(x, p=1, dim=1), id="p1"),
    C("norm", [(3, 4)], lambda t, x: t.norm(x, p=3, dim=0, keepdim=True), gradgrad=True, id="p3"),
    C("norm", [(3, 4)], lambda t, x: x.norm(0.5, dim=1), id="p0.5"),
    C("norm", [TIES], lambda t, x: x.norm(float("inf"), dim=1), id="inf-ties"),
    C("norm", [(3, 4)], lambda t, x: x.norm(-float("inf")), id="-inf"),
    C("norm", [T(values=[[1.0, 0.0, -2.0], [0.0, 0.0, 0.0]])], lambda t, x: x.norm(0, dim=1), id="p0"),
    C("norm", [T(values=[[1.0, -2.0, 2.0], [0.0, 0.0, 0.0]])], lambda t, x: x.norm(dim=1), gradgrad=True,
      id="zero-subgradient"),
    C("norm", [T(values=[[1.0, -2.0, 2.0], [0.0, 0.0, 0.0]])], lambda t, x: x.norm(1.5, dim=1), id="zero-p1.5"),
    C("norm", [T(values=[[1.0, -2.0, 2.0], [0.0, 0.0, 0.0]])], lambda t, x: x.norm(-1, dim=1), id="zero-p-1"),
    C("norm", [(2, 3, 4)], lambda t, x: t.norm(x, "fro", dim=(1, 2)), id="fro-dims"),
    C("norm", [(3, 4)], lambda t, x: x.norm(dtype=t.float64), dtypes=("float32",), id="dtype"),
    C("norm", [MIXED_INT], lambda t, x: x.norm(), dtypes=INT, error=RuntimeError, id="int-error"),
    C("norm", [(2, 2, 2)], lambda t, x: t.norm(x, "fro", dim=(0, 1, 2)), error=RuntimeError, id="fro-3-dims"),
    C("norm", [(0,)], lambda t, x: x.norm(float("inf")), error=RuntimeError, id="inf-empty-error"),
    C("norm", [(3, 4)], lambda t, x: t.norm(x, "nuc"), id="nuc"),
    C("norm", [(2, 3, 4)], lambda t, x: x.norm("nuc", dim=(0, 2), keepdim=True), id="nuc-dims"),
    C("dist", [(3, 4), (3, 4)], lambda t, x, y: t.dist(x, y)),
    C("dist", [(3, 4), (4,)], lambda t, x, y: t.dist(x, y, 1), id="p1-broadcast"),
    C("dist", [(3, 4), (3, 4)], lambda t, x, y: x.dist(y, float("inf")), id="inf"),

    # ---- all / any / count_nonzero ------------------------------------------------------------------
    C("all", [T(values=[[1.0, 0.0], [2.0, 3.0]])], lambda t, x: t.all(x), grad=False),
    C("all", [T((3, 4))], lambda t, x: x.all(1), dtypes=BOOL, id="dim"),
    C("all", [T((2, 3, 4))], lambda t, x: x.all((0, 2), keepdim=True), dtypes=BOOL, id="tuple"),
    C("all", [T((3, 4), dtype="uint8", low=0, high=2)], lambda t, x: x.all(0), dtypes=INT, id="uint8"),
    C("all", [(0, 3)], lambda t, x: x.all(0), grad=False, id="empty"),
    C("any", [T(values=[[1, 0], [0, 0]])], lambda t, x: t.any(x, 1), dtypes=INT),
    C("any", [T((3, 4))], lambda t, x: x.any(), dtypes=BOOL, id="bool"),
    C("any", [T((3, 4), dtype="uint8", low=0, high=2)], lambda t, x: x.any(), dtypes=INT, id="uint8"),
    C("count_nonzero", [T((3, 4), low=-1, high=2)], lambda t, x: t.count_nonzero(x), dtypes=INT),
    C("count_nonzero", [T((2, 3, 4), low=-1, high=2)], lambda t, x: x.count_nonzero((0, 2)), dtypes=INT,
      id="dims"),
    C("count_nonzero", [T(values=[[0.0, 1.5], [NAN, 0.0]])], lambda t, x: x.count_nonzero(1), grad=False,
      id="float"),

    # ---- scans ---------------------------------------------------------------------------------------
    C("cumsum", [(3, 4)], lambda t, x: t.cumsum(x, 1), gradgrad=True),
    C("cumsum", [(2, 3, 4)], lambda t, x: x.cumsum(-3), gradgrad=True, id="neg-dim"),
    C("cumsum", [MIXED_INT], lambda t, x: x.cumsum(0), dtypes=INT, id="int32-to-int64"),
    C("cumsum", [T((6,))], lambda t, x: x.cumsum(0), dtypes=BOOL, id="bool"),
    C("cumsum", [(3, 4)], lambda t, x: x.cumsum(0, dtype=t.float64), id="dtype"),
    C("cumsum", [()], lambda t, x: x.cumsum(0), id="0d"),
    C("cumsum", [T((6,))], lambda t, x: x.cumsum(0, dtype=t.bool), dtypes=BOOL, error=NotImplementedError,
      id="err-bool-dtype"),
    C("cumprod", [T((6,))], lambda t, x: x.cumprod(0, dtype=t.bool), dtypes=BOOL, error=NotImplementedError,
      id="err-bool-dtype"),
    C("cumsum", [T((3, 4), noncontig=True)], lambda t, x: x.cumsum(0), id="noncontig"),
    C("cumsum", [MIXED_INT], lambda t, x: x.clone().cumsum_(1), dtypes=INT, id="inplace-int32"),
    C("cumprod", [(3, 4)], lambda t, x: x.cumprod(1), gradgrad=True),
    C("cumprod", [ZEROS1], lambda t, x: t.cumprod(x, 1), gradgrad=True, id="one-zero"),
    C("cumprod", [ZEROS2], lambda t, x: x.cumprod(-1), gradgrad=True, id="two-zeros"),
    C("cumprod", [MIXED_INT], lambda t, x: x.cumprod(1), dtypes=INT, id="int"),
    C("cummax", [TIES], lambda t, x: t.cummax(x, 1)),
    C("cummax", [WITH_NAN], lambda t, x: x.cummax(1), id="nan"),
    C("cummax", [T((4,), low=0, high=2)], lambda t, x: x.cummax(0), dtypes=BOOL, id="bool"),
    C("cummin", [TIES], lambda t, x: x.cummin(-1)),
    C("cummin", [(3, 4)], lambda t, x: x.cummin(0), id="dim0"),
    C("logcumsumexp", [(3, 4)], lambda t, x: t.logcumsumexp(x, 1), gradgrad=True),
    C("logcumsumexp", [T((3, 4), low=-800, high=800)], lambda t, x: x.logcumsumexp(0), id="large"),
    C("logcumsumexp", [MIXED_INT], lambda t, x: x.logcumsumexp(0), dtypes=INT, error=NotImplementedError,
      id="int-error"),
    C("diff", [(3, 5)], lambda t, x: t.diff(x)),
    C("diff", [(3, 5)], lambda t, x: x.diff(n=2, dim=0), id="n2-dim0"),
    C("diff", [(3, 5), (3, 1), (3, 2)], lambda t, x, p, a: t.diff(x, prepend=p, append=a), id="prepend-append"),
    C("diff", [T((6,))], lambda t, x: x.diff(), dtypes=BOOL, id="bool"),
    C("diff", [(4,)], lambda t, x: x.diff(n=5), id="n-too-large"),
    C("diff", [()], lambda t, x: x.diff(), error=RuntimeError, id="0d-error"),
    C("sum_to_size", [(2, 3, 4)], lambda t, x: x.sum_to_size(3, 1), gradgrad=True),

    # ---- NumPy spellings axis= / keepdims= (torch's argument parser accepts them) -------------
    C("sum", [(2, 3)], lambda t, x: t.sum(x, axis=1, keepdims=True), id="axis-keepdims"),
    C("max", [(2, 3)], lambda t, x: x.max(axis=0, keepdims=True), id="axis-keepdims"),
    C("var", [(2, 3)], lambda t, x: x.var(axis=1), id="axis"),
    C("cumsum", [(2, 3)], lambda t, x: x.cumsum(axis=0), id="axis"),
]
