"""histogram and histogramdd (torch's CPU semantics: right-open bins except the last, values outside
the range ignored, NaN/inf ranges refused). Not differentiable: the outputs of an input that requires
grad carry a node whose backward raises, as torch's NotImplemented node does."""
import numpy as np

from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor
from ._argcheck import _is_int, wrong_type
from ._registry import Op, install
from .sorting import _linspace_edges


class Histogramdd(Op):
    _name = "NotImplemented"

    @staticmethod
    def forward(ctx, x, weight, *edges, density):
        """x: (N, D) points; edges: one increasing array per dim; weight: (N,) or None."""
        n, dims = x.shape
        bins = [len(e) - 1 for e in edges]
        keep = np.ones(n, dtype=bool)
        flat = np.zeros(n, dtype=np.int64)
        for k, e in enumerate(edges):
            v = x[:, k]
            pos = np.searchsorted(e, v, side="right") - 1
            pos = np.where(v == e[-1], bins[k] - 1, pos)  # the last bin is closed on the right
            keep &= (v >= e[0]) & (v <= e[-1]) & (pos >= 0) & (pos < bins[k])
            flat = flat * bins[k] + np.clip(pos, 0, max(bins[k] - 1, 0))
        w = None if weight is None else weight[keep].astype(np.float64)
        size = int(np.prod(bins))
        hist = np.bincount(flat[keep], weights=w, minlength=size)[:size].astype(x.dtype).reshape(bins)
        if density:
            volume = np.ones((), dtype=x.dtype)
            for e in edges:
                volume = np.multiply.outer(volume, np.diff(e))
            hist = (hist / (hist.sum() * volume)).astype(x.dtype)
        return (hist,) + tuple(np.array(e) for e in edges)

    def backward(ctx, *grads):
        raise RuntimeError("the derivative for 'histogramdd' is not implemented.")


def _check_input(input, name):
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.SCALAR_NAMES[input._dtype]}'")


def _edges_for(x, k, bins, rng, dtype):
    """The edges of dim k: a given tensor's values, or bins+1 evenly spaced over range / the data's range."""
    if isinstance(bins, Tensor):
        return bins._data.astype(dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension {k}")
    if rng is not None:
        lo, hi = float(rng[2 * k]), float(rng[2 * k + 1])
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                               f"dimension {k}")
    elif x.shape[0]:
        lo, hi = float(x[:, k].min()), float(x[:, k].max())
    else:
        lo, hi = 0.0, 1.0
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _linspace_edges(lo, hi, int(bins), dtype)


def _histogramdd(input, bins, range, weight, density):
    x = input._data
    pts = x.reshape(-1, x.shape[-1])
    dims = pts.shape[1]
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * dims
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError("torch.histogramdd: for a " + str(dims) + "-dimensional histogram range should have "
                           f"{2 * dims} elements, but got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    edges = [_edges_for(pts, k, b, range, x.dtype) for k, b in enumerate(bins)]
    flat_input = input.reshape(-1, dims)
    flat_weight = None if weight is None else weight.reshape(-1)
    edge_tensors = [Tensor._make(e) for e in edges]
    return Histogramdd.apply(flat_input, flat_weight, *edge_tensors, density=bool(density))


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """Counts (or weights, or a density) of input's values in bins; returns (hist, bin_edges).
    See https://pytorch.org/docs/stable/generated/torch.histogram.html"""
    if bins.__class__ is not int and not isinstance(bins, Tensor) and not _is_int(bins):  # int(1.5) would take it
        raise wrong_type("histogram", "bins", bins, "Tensor", 2)
    _check_input(input, "histogramdd")
    points = input.reshape(-1, 1)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(points.shape)} and weight with shape {list(weight.shape)}")
    outs = _histogramdd(points, [bins], range, None if weight is None else weight.reshape(-1), density)
    r = return_types.histogram((outs[0], outs[1]))
    if out is not None:
        for o, v in zip(out, r):
            o.resize_(v.shape).copy_(v)
        return return_types.histogram(tuple(out))
    return r


def histogramdd(input, bins, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points in input's last dim; returns (hist, bin_edges list).
    See https://pytorch.org/docs/stable/generated/torch.histogramdd.html"""
    _check_input(input, "histogramdd")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    outs = _histogramdd(input, bins, range, weight, density)
    return return_types.histogramdd((outs[0], tuple(outs[1:])))


install(histogram, "histogram")
install(histogramdd, "histogramdd", method=False)
