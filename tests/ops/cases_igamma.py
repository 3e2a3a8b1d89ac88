"""Op table rows: igamma / igammac (regularized incomplete gamma; SciPy kernels) and their in-place forms."""
from .harness import Case as C, T

A = T((3, 4), low=0.1, high=4.0, grad=False)
X = T((3, 4), low=0.05, high=6.0)
EDGE_A = T((8,), values=[0.0, 0.0, 1, 2, -1, 1, float("inf"), 0.5], grad=False)
EDGE_X = T((8,), values=[0.0, 1, 0, float("inf"), 1, -1, 1, 1e30], grad=False)

CASES = [
    C("igamma", [A, X], lambda t, a, x: t.igamma(a, x)),
    C("igamma", [A, X], lambda t, a, x: a.igamma(x), id="method"),
    C("igamma", [A, T((4,), low=0.05, high=6.0)], lambda t, a, x: t.igamma(a, x), id="broadcast"),
    C("igamma", [EDGE_A, EDGE_X], lambda t, a, x: t.igamma(a, x), id="edges"),
    C("igamma", [T((3,), low=0.1, high=4, grad=False), T((3,), dtype="int64", low=0, high=5, grad=False)],
      lambda t, a, x: t.igamma(a, x), id="int-other"),
    C("igamma", [A, X], lambda t, a, x: a.clone().igamma_(x), id="inplace"),
    C("igamma", [A, X], lambda t, a, x: t.igamma(a.requires_grad_(), x).sum().backward(),
      error=NotImplementedError, id="input-grad"),
    C("igamma", [T((3,), dtype="int64"), T((3,), dtype="int64")], lambda t, a, x: t.igamma(a, x), dtypes=("int64",),
      error=NotImplementedError, id="int"),
    C("igamma", [A], lambda t, a: t.igamma(a, 2.0), error=TypeError, id="scalar"),
    C("igammac", [A, X], lambda t, a, x: t.igammac(a, x)),
    C("igammac", [EDGE_A, EDGE_X], lambda t, a, x: t.igammac(a, x), id="edges"),
    C("igammac", [A, X], lambda t, a, x: a.clone().igammac_(x), id="inplace"),
    C("igammac", [T((3,), dtype="complex64"), T((3,), dtype="complex64")], lambda t, a, x: t.igammac(a, x),
      dtypes=("complex64",), error=NotImplementedError, id="complex"),
]
