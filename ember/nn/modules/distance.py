"""PairwiseDistance and CosineSimilarity. See https://pytorch.org/docs/stable/nn.html#distance-functions

Both compare two inputs with one F function and show nothing in their repr (as torch's)."""
from .. import functional as F
from ._options import FunctionalModule

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class _Comparison(FunctionalModule):
    """forward(x1, x2) = F.<_functional>(x1, x2, *<the attributes named in _passes>)."""

    def forward(self, x1, x2):
        function = getattr(F, self._functional)
        options = [getattr(self, name) for name in self._passes]
        return function(x1, x2, *options)


class PairwiseDistance(_Comparison):
    """||x1 - x2 + eps||_p over the last dim. The order p is stored as `norm` (torch's attribute name)."""
    __constants__ = ["norm", "eps", "keepdim"]
    _functional = "pairwise_distance"
    _passes = ("norm", "eps", "keepdim")

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim


class CosineSimilarity(_Comparison):
    """Cosine of the angle between x1 and x2 along dim, each norm floored at eps."""
    __constants__ = ["dim", "eps"]
    _functional = "cosine_similarity"
    _passes = ("dim", "eps")

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps
