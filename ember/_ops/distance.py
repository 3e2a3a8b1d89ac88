"""Distances: pairwise_distance, pdist, cdist, cosine_similarity (torch.nn.functional signatures; also
installed as torch.pairwise_distance / torch.pdist / torch.cosine_similarity). Composites of
ember ops; the losses in loss.py build on them."""
import numpy as np

from .. import _dtype as D
from .._tensor import _wrap_dim
from ._registry import install


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim. See torch.nn.functional.pairwise_distance."""
    from .statistics import vector_norm
    output_dim = max(x1.dim(), x2.dim())
    diff = x1 - x2 + eps
    if output_dim == 0:
        return vector_norm(diff, p, None, keepdim)
    return vector_norm(diff, p, output_dim - 1, keepdim)


def pdist(input, p=2):
    """p-norm distances between every pair of rows i < j of a 2-D input, in row-major pair order.
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.pdist.html"""
    from .statistics import vector_norm
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if input._dtype.category != D.FLOAT:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    return vector_norm(input[i] - input[j], p, 1)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along dim; the norms' clamp passes the gradient
    through (as torch's no_grad clamp_). See torch.nn.functional.cosine_similarity."""
    from .statistics import vector_norm
    from .joining import broadcast_tensors
    if x1._dtype.category < D.FLOAT:
        x1 = x1.to(D.get_default_dtype())
    if x2._dtype.category < D.FLOAT:
        x2 = x2.to(D.get_default_dtype())
    a, b = broadcast_tensors(x1, x2)
    d = _wrap_dim(dim, a.dim())
    n1 = vector_norm(a, 2, d, True)
    n2 = vector_norm(b, 2, d, True)
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((a / n1) * (b / n2)).sum(d)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of x1 and each row of x2, batched over leading dims.
    ember always takes the norm of the differences (torch's exact path); torch's matmul path for
    p=2 and more than 25 rows is faster and rounds differently. See torch.cdist."""
    from .statistics import vector_norm
    from .joining import broadcast_shapes
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x._dtype.category != D.FLOAT:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {D.SCALAR_NAMES[x._dtype]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1._dtype.itemsize == 2:
        raise NotImplementedError(f"\"cdist\" not implemented for '{D.SCALAR_NAMES[x1._dtype]}'")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"expected scalar type {D.SCALAR_NAMES[x1._dtype]} but found {D.SCALAR_NAMES[x2._dtype]}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    a = x1.expand(*batch, *x1.shape[-2:]).unsqueeze(-2)
    b = x2.expand(*batch, *x2.shape[-2:]).unsqueeze(-3)
    return vector_norm(a - b, p, -1)


install(pairwise_distance, "pairwise_distance", method=False)
install(cosine_similarity, "cosine_similarity", method=False)
install(pdist, "pdist", method=False)
install(cdist, "cdist", method=False)
