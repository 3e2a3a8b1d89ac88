"""Op table rows: sorting and order statistics (sort, topk, kthvalue, median, mode, quantile),
unique, bincount, histc.

torch leaves the index of tied elements unspecified for topk, kthvalue and sort(stable=False);
rows with ties either use stable=True (fully specified) or compare values only. Random float
inputs have no ties, so every index is compared there.
"""
from .harness import Case as C, T

NAN = float("nan")
INT = ("int64",)
BOOL = ("bool",)
F32 = ("float32",)

TIES = T(values=[[2.0, 1.0, 2.0, 1.0, 2.0, 1.0], [0.5, 0.5, 3.0, 3.0, 0.5, -1.0]])
WITH_NAN = T(values=[[2.0, NAN, 1.0, NAN, 2.5], [0.5, 1.5, -1.0, 4.0, 3.0]])
SMALL_INT = T((4, 7), dtype="int64", low=0, high=3)
Q = T(values=[0.0, 0.25, 0.5, 0.9, 1.0], grad=False)


def _checked_indices(t, r, x, dim=1):
    """values, and the 2-d input read back at the returned indices along dim (keepdim=True results):
    equal to the values whichever of several tied elements an implementation picks."""
    if dim == 1:
        return r.values, x.detach()[t.arange(x.shape[0]).unsqueeze(1), r.indices]
    return r.values, x.detach()[r.indices, t.arange(x.shape[1]).unsqueeze(0)]


CASES = [
    # ---- sort / argsort / msort -------------------------------------------------------------
    C("sort", [(3, 5)], lambda t, x: t.sort(x)),
    C("sort", [(3, 5)], lambda t, x: x.sort(0, descending=True), id="dim0-desc"),
    C("sort", [TIES], lambda t, x: x.sort(stable=True), id="stable-ties"),
    C("sort", [TIES], lambda t, x: t.sort(x, dim=-1, descending=True, stable=True), id="stable-ties-desc"),
    C("sort", [WITH_NAN], lambda t, x: x.sort(1), id="nan-last"),
    C("sort", [WITH_NAN], lambda t, x: x.sort(1, descending=True), id="nan-first-desc"),
    C("sort", [T((3, 5), noncontig=True)], lambda t, x: x.sort(0), id="noncontig"),
    C("sort", [SMALL_INT], lambda t, x: x.sort(stable=True), dtypes=INT, id="int"),
    C("sort", [T((9,))], lambda t, x: x.sort(stable=True), dtypes=BOOL, id="bool"),
    C("sort", [()], lambda t, x: x.sort(), id="0d"),
    C("sort", [(0, 3)], lambda t, x: x.sort(0), id="empty"),
    C("sort", [(2, 5), T((2, 5), grad=False), T((2, 5), dtype="int64")],
      lambda t, x, v, i: t.sort(x, out=(v, i)), grad=False, id="out"),
    C("argsort", [(3, 5)], lambda t, x: t.argsort(x, 1), grad=False),
    C("argsort", [TIES], lambda t, x: x.argsort(descending=True, stable=True), grad=False, id="stable-desc"),
    C("msort", [(4, 3)], lambda t, x: t.msort(x)),
    C("sort", [(3, 5)], lambda t, x: x.sort(axis=0), id="axis"),

    # ---- topk ---------------------------------------------------------------------------------
    C("topk", [(3, 6)], lambda t, x: t.topk(x, 2)),
    C("topk", [(3, 6)], lambda t, x: x.topk(3, largest=False), id="smallest"),
    C("topk", [(5, 4)], lambda t, x: x.topk(2, dim=0), id="dim0"),
    C("topk", [(3, 6)], lambda t, x: x.topk(6), id="k-all"),
    C("topk", [(3, 6)], lambda t, x: x.topk(0), id="k0"),
    C("topk", [(3, 6)], lambda t, x: x.topk(4, sorted=False).values.sort(-1).values, id="unsorted-values"),
    C("topk", [WITH_NAN], lambda t, x: x.topk(2), id="nan-largest"),
    C("topk", [TIES], lambda t, x: _checked_indices(t, x.topk(4), x), grad=False, id="ties"),
    C("topk", [T((3, 6), dtype="int64", low=-50, high=50)], lambda t, x: x.topk(2).values, dtypes=INT, id="int"),
    C("topk", [(3, 4)], lambda t, x: x.topk(5), error=RuntimeError, id="k-too-large"),
    C("topk", [(3, 4)], lambda t, x: x.topk(1), dtypes=BOOL, error=RuntimeError, id="bool-error"),

    # ---- kthvalue -------------------------------------------------------------------------------
    C("kthvalue", [(3, 6)], lambda t, x: t.kthvalue(x, 2)),
    C("kthvalue", [(4, 5)], lambda t, x: x.kthvalue(4, 0, keepdim=True), id="dim0-keepdim"),
    C("kthvalue", [TIES], lambda t, x: _checked_indices(t, x.kthvalue(3, 1, True), x), grad=False,
      id="ties"),
    C("kthvalue", [(3, 4)], lambda t, x: x.kthvalue(5), error=RuntimeError, id="k-range"),
    C("kthvalue", [(0, 3)], lambda t, x: x.kthvalue(1, 0), error=IndexError, id="empty-dim"),
    C("kthvalue", [T((3, 4))], lambda t, x: x.kthvalue(1), dtypes=BOOL, error=NotImplementedError, id="bool"),

    # ---- median / nanmedian ------------------------------------------------------------------------
    C("median", [(3, 5)], lambda t, x: t.median(x)),
    C("median", [(3, 4)], lambda t, x: x.median(), id="even-lower"),
    C("median", [(3, 4)], lambda t, x: (x.median().grad_fn.name(), x.nanmedian().grad_fn.name(),
                                        x.median(0).values.grad_fn.name(), x.nanmedian(0).values.grad_fn.name()),
      id="grad-fn-names"),
    C("median", [(3, 4)], lambda t, x: x.median(1), id="dim"),
    C("median", [(4, 3)], lambda t, x: t.median(x, 0, keepdim=True), id="dim0-keepdim"),
    C("median", [T(values=[1.0, 2.0, 2.0, 2.0, 5.0, 5.0])], lambda t, x: x.median(), id="ties-grad-split"),
    C("median", [TIES], lambda t, x: x.median(1), id="ties-dim"),
    C("median", [WITH_NAN], lambda t, x: x.median(1), id="nan-dim"),
    C("median", [WITH_NAN], lambda t, x: x.median(), id="nan-full"),
    C("median", [SMALL_INT], lambda t, x: x.median(1), dtypes=INT, id="int"),
    C("median", [(0,)], lambda t, x: x.median(), id="empty-nan"),
    C("median", [(0, 3)], lambda t, x: x.median(0), error=IndexError, id="empty-dim-error"),
    C("median", [T((4,))], lambda t, x: x.median(), dtypes=BOOL, error=NotImplementedError, id="bool"),
    C("nanmedian", [WITH_NAN], lambda t, x: t.nanmedian(x)),
    C("nanmedian", [WITH_NAN], lambda t, x: x.nanmedian(1), id="dim"),
    C("nanmedian", [T(values=[[1.0, 2.0, 3.0], [NAN, NAN, NAN]])], lambda t, x: x.nanmedian(1, keepdim=True),
      id="all-nan-row"),

    # ---- mode -------------------------------------------------------------------------------------
    # which of the tied occurrences mode() reports is unspecified in torch (its sort is unstable)
    C("mode", [SMALL_INT], lambda t, x: _checked_indices(t, t.mode(x, keepdim=True), x), dtypes=INT),
    C("mode", [SMALL_INT], lambda t, x: _checked_indices(t, x.mode(0, keepdim=True), x, 0), dtypes=INT, id="dim0"),
    C("mode", [T((3, 30), integer=True, low=-2, high=2)], lambda t, x: _checked_indices(t, x.mode(1, True), x),
      grad=False, id="float-discrete"),
    C("mode", [(3, 5)], lambda t, x: x.mode(1), id="distinct-grad"),
    C("mode", [T(values=[3.0, 1.0, 2.0, 2.0, 1.0, 3.0, 3.0, 1.0])], lambda t, x: x.mode(), id="tie-smallest"),
    C("mode", [()], lambda t, x: x.mode(), id="0d"),
    C("mode", [(3, 0)], lambda t, x: x.mode(1), error=IndexError, id="empty"),

    # ---- quantile / nanquantile ---------------------------------------------------------------------
    C("quantile", [(3, 7)], lambda t, x: t.quantile(x, 0.3)),
    C("quantile", [(3, 7), Q], lambda t, x, q: x.quantile(q, dim=1, keepdim=True), id="q-tensor-dim"),
    C("quantile", [(4, 6), Q], lambda t, x, q: t.quantile(x, q, 0, interpolation="lower"), id="lower"),
    C("quantile", [(4, 6), Q], lambda t, x, q: t.quantile(x, q, 1, interpolation="higher"), id="higher"),
    C("quantile", [(4, 6), Q], lambda t, x, q: t.quantile(x, q, -1, interpolation="midpoint"), id="midpoint"),
    C("quantile", [(4, 6), Q], lambda t, x, q: t.quantile(x, q, 1, interpolation="nearest"), id="nearest"),
    C("quantile", [T(values=[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])], lambda t, x: x.quantile(0.5, interpolation="nearest"),
      id="nearest-half-even"),
    C("quantile", [(2, 3, 4)], lambda t, x: x.quantile(0.75, keepdim=True), id="none-keepdim"),
    C("quantile", [WITH_NAN], lambda t, x: x.quantile(0.5, dim=1), id="nan"),
    C("quantile", [(5,)], lambda t, x: x.quantile(1.5), error=RuntimeError, id="q-range"),
    C("quantile", [(5,), T(values=[0.5], dtype="float64", grad=False)], lambda t, x, q: x.quantile(q), dtypes=F32,
      error=RuntimeError, id="q-dtype"),
    C("quantile", [(0,)], lambda t, x: x.quantile(0.5), error=RuntimeError, id="empty"),
    C("quantile", [T((5,), dtype="int64")], lambda t, x: x.quantile(0.5), dtypes=INT, error=RuntimeError, id="int"),
    C("nanquantile", [WITH_NAN, Q], lambda t, x, q: t.nanquantile(x, q, dim=1)),
    C("nanquantile", [WITH_NAN], lambda t, x: t.nanquantile(x, 0.3), id="all-dims"),
    C("nanquantile", [T(values=[[NAN, NAN], [1.0, 2.0]])], lambda t, x: x.nanquantile(0.4, 1), id="all-nan-row"),

    # ---- unique / unique_consecutive -----------------------------------------------------------------
    C("unique", [SMALL_INT], lambda t, x: t.unique(x), dtypes=INT),
    C("unique", [SMALL_INT], lambda t, x: x.unique(return_inverse=True, return_counts=True), dtypes=INT,
      id="inverse-counts"),
    C("unique", [T(values=[[3, 1, 2], [1, 2, 3], [3, 1, 2]])], lambda t, x: t.unique(x, dim=0, return_inverse=True,
      return_counts=True), dtypes=INT, id="dim0"),
    C("unique", [T(values=[[3, 1, 3], [1, 2, 1]])], lambda t, x: x.unique(dim=1, return_inverse=True), dtypes=INT,
      id="dim1"),
    C("unique", [T(values=[3.0, 1.0, NAN, 2.0, 1.0, NAN])], lambda t, x: x.unique(return_counts=True), grad=False,
      id="float-nan-distinct"),
    C("unique", [T((3, 5), integer=True, low=0, high=3)], lambda t, x: t.unique(x, sorted=False), grad=False,
      id="float-unsorted-arg"),
    C("unique", [(5,)], lambda t, x: (t.unique(x).requires_grad, t.unique(x.view(5, 1), dim=0).requires_grad),
      id="requires-grad"),
    C("unique", [(5,)], lambda t, x: t.unique(x).sum().backward(), error=NotImplementedError, id="no-backward"),
    C("unique_consecutive", [(5,)], lambda t, x: t.unique_consecutive(x).sum().backward(),
      error=NotImplementedError, id="no-backward"),
    C("unique", [T((7,))], lambda t, x: x.unique(return_inverse=True), dtypes=BOOL, id="bool"),
    C("unique", [()], lambda t, x: t.unique(x, return_inverse=True), dtypes=INT, id="0d"),
    C("unique_consecutive", [T(values=[1, 1, 2, 2, 3, 1, 1, 2])],
      lambda t, x: t.unique_consecutive(x, return_inverse=True, return_counts=True), dtypes=INT),
    C("unique_consecutive", [T(values=[[3, 1], [3, 1], [1, 2], [3, 1]])],
      lambda t, x: x.unique_consecutive(dim=0, return_counts=True, return_inverse=True), dtypes=INT, id="dim0"),
    C("unique_consecutive", [T(values=[NAN, NAN, 1.0, 1.0])], lambda t, x: x.unique_consecutive(), grad=False,
      id="nan"),

    # ---- bincount / histc -------------------------------------------------------------------------------
    C("bincount", [T((20,), low=0, high=6)], lambda t, x: t.bincount(x), dtypes=INT),
    C("bincount", [T((20,), low=0, high=6), T((20,), dtype="float32")], lambda t, x, w: x.bincount(w, minlength=9),
      dtypes=INT, grad=False, id="weights-f32"),
    C("bincount", [T((5,), low=0, high=3), T((5,), dtype="float64")], lambda t, x, w: x.bincount(w),
      dtypes=INT, grad=False, id="weights-f64"),
    C("bincount", [T((5,), low=0, high=3), T((5,), dtype="int32")], lambda t, x, w: x.bincount(w),
      dtypes=INT, id="weights-int"),
    C("bincount", [T((0,))], lambda t, x: x.bincount(minlength=3), dtypes=INT, id="empty"),
    C("bincount", [T(values=[1, -1])], lambda t, x: x.bincount(), dtypes=INT, error=RuntimeError, id="negative"),
    C("bincount", [T((2, 2), low=0, high=3)], lambda t, x: x.bincount(), dtypes=INT, error=RuntimeError, id="2d"),
    C("bincount", [(3,)], lambda t, x: x.bincount(), error=NotImplementedError, id="float"),
    C("histc", [(50,)], lambda t, x: t.histc(x, bins=7), grad=False),
    C("histc", [(5, 10)], lambda t, x: x.histc(bins=4, min=-1, max=1), grad=False, id="range"),
    C("histc", [T(values=[0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 0.5])], lambda t, x: x.histc(bins=6), grad=False,
      id="edges"),
    C("histc", [T(values=[2.0, 2.0])], lambda t, x: x.histc(bins=4), grad=False, id="degenerate"),
    C("histc", [(5,)], lambda t, x: x.histc(bins=3, min=1, max=0), grad=False, error=RuntimeError, id="min>max"),
    C("histc", [T((5,), dtype="int64")], lambda t, x: x.histc(), dtypes=INT, error=NotImplementedError, id="int"),
]
