"""Embedding lookups: F.embedding and F.embedding_bag (torch.nn.functional signatures),
torch.embedding and torch.embedding_renorm_.

The backward of a lookup is a scatter-add of gradient rows into a zero table. np.add.at
walks one index at a time and is slow on wide rows, so EmbeddingDenseBackward uses the
backend's sorted-rows scatter (numpy_cpu.index_add_rows: one fancy-indexed pass per
occurrence rank, reduceat for heavily repeated rows). The scatter's own gradient is the
lookup again, so double backward works.
"""
import math

import numpy as np

from .. import _dtype as D
from .._backend import numpy_cpu as B
from .._backend import jit
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import Op, install
from .reduction import PlaceAlong

_state = grad_mode._state
_make = Tensor._make
_INDEX_TYPES = (D.int64, D.int32)


# ---- the lookup and its scatter-add backward ---------------------------------------------------

class Embedding(Op):
    """out[...] = weight[indices[...]] (rows of a 2-D table)."""
    _name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq, sparse=False):
        ctx.args = (indices, weight.shape[0], padding_idx, scale_grad_by_freq, sparse)
        return np.take(weight, indices, axis=0)

    def backward(ctx, grad):
        indices, num_weights, padding_idx, scale, sparse = ctx.args
        if sparse:
            if scale:
                raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
            return sparse_rows_grad(grad.reshape(-1, grad.shape[-1]), indices.reshape(-1), num_weights, padding_idx)
        return EmbeddingDenseBackward.apply(grad, indices=indices, num_weights=num_weights,
                                            padding_idx=padding_idx, scale_grad_by_freq=scale)


def sparse_rows_grad(rows, idx, num_weights, padding_idx):
    """The gradient of a table lookup as a sparse COO tensor (torch's embedding_sparse_backward): one
    uncoalesced entry per looked-up index, the row of `rows` (a Tensor) as its value; padding_idx left out."""
    from .sparse import _make_sparse
    if padding_idx is not None and padding_idx >= 0:
        keep = np.flatnonzero(idx != padding_idx)
        idx = idx[keep]
        rows = rows[_make(keep)]
    return _make_sparse(idx.astype(np.int64)[None, :], rows, (num_weights, rows.shape[-1]), False)


class EmbeddingDenseBackward(Op):
    """out = zeros(num_weights, D); out[indices[i]] += grad[i] (row padding_idx stays zero;
    rows divided by their index's count when scale_grad_by_freq)."""
    _name = "EmbeddingDenseBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
        idx = indices.reshape(-1)
        dim = grad.shape[-1]
        rows = grad.reshape(idx.size, dim)
        factor = _row_factor(idx, num_weights, padding_idx, scale_grad_by_freq)
        ctx.args = (indices, factor)
        if factor is not None:
            rows = rows * factor[:, None].astype(rows.dtype, copy=False)
        out = np.zeros((num_weights, dim), dtype=grad.dtype)
        kernels = _compiled(out, idx, rows)
        if kernels is not None:
            return kernels.index_add_rows(out, idx, rows)
        B.index_add_rows(out, idx, rows, fresh=True)
        return out

    def backward(ctx, gg):
        indices, factor = ctx.args
        rows = Embedding.apply(gg, indices=indices, padding_idx=-1, scale_grad_by_freq=False)
        if factor is not None:
            rows = rows * _make(factor.reshape(indices.shape + (1,)).astype(gg._data.dtype, copy=False))
        return rows


def _compiled(out, idx, rows):
    """The compiled scatter (ember/_backend/embedding_jit.py, Note [JIT kernels]) for float32/float64 rows whose
    indices all lie in the table, or None."""
    if rows.dtype not in jit.DTYPES or out.dtype != rows.dtype or rows.ndim != 2 or not idx.size:
        return None
    if idx.min() < 0 or idx.max() >= out.shape[0]:
        return None
    return jit.load("embedding_jit")


def _row_factor(idx, num_weights, padding_idx, scale_grad_by_freq):
    """Per-index multiplier of the gradient rows: 0 at padding_idx, 1/count when scaling by
    frequency; None when every row counts once."""
    factor = None
    if scale_grad_by_freq:
        counts = np.bincount(idx, minlength=num_weights)
        factor = 1.0 / counts[idx]
    if padding_idx is not None and padding_idx >= 0:
        keep = idx != padding_idx
        factor = keep.astype(np.float64) if factor is None else factor * keep
    return factor


# ---- argument checks ---------------------------------------------------------------------------

def _check_indices(indices, name, what="embedding"):
    if not isinstance(indices, Tensor):
        raise TypeError(f"{what}(): argument '{name}' must be Tensor, not {type(indices).__name__}")
    if indices._dtype not in _INDEX_TYPES:
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{_type_name(indices)} instead (while checking arguments for "
                           f"{what})")


def _type_name(t):
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
            "int32": "IntTensor", "bool": "BoolTensor", "uint8": "ByteTensor", "int16": "ShortTensor",
            "int8": "CharTensor", "bfloat16": "BFloat16Tensor"}.get(t._dtype.name, t._dtype.name)


def _check_range(idx, num_weights):
    if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
        raise IndexError("index out of range in self")


def _padding(padding_idx, num_weights, what="Padding_idx"):
    """torch's padding_idx normalization: None -> -1, negative -> counted from the end."""
    if padding_idx is None:
        return -1
    if padding_idx > 0 and padding_idx >= num_weights:
        raise AssertionError(f"{what} must be within num_embeddings")
    if padding_idx < 0:
        if padding_idx < -num_weights:
            raise AssertionError(f"{what} must be within num_embeddings")
        padding_idx = num_weights + padding_idx
    return padding_idx


# ---- max_norm: renormalize the looked-up rows in place ------------------------------------------

def _row_norms(rows, p):
    a = np.abs(rows.astype(np.float64))
    if p == math.inf:
        return a.max(1) if a.shape[1] else np.zeros(a.shape[0])
    if p == 0:
        return (a != 0).sum(1).astype(np.float64)
    return (a ** p).sum(1) ** (1.0 / p)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rows of input (a 2-D table) named in indices whose norm_type-norm exceeds max_norm are
    scaled to norm max_norm (torch's 1e-7 guard in the divisor). In place, no gradient."""
    _check_indices(indices, "indices", "embedding_renorm_")
    if input.dim() != 2:
        raise RuntimeError("'self' must be 2-D")
    table = input._data
    _check_range(indices._data, table.shape[0])
    rows = np.unique(indices._data.reshape(-1))
    norms = _row_norms(table[rows], norm_type)
    over = norms > max_norm
    if over.any():
        scale = max_norm / (norms[over] + 1e-7)
        table[rows[over]] *= scale[:, None].astype(table.dtype)
        input._version_counter.value += 1
    return input


# ---- F.embedding ------------------------------------------------------------------------------

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.embedding.html"""
    if not isinstance(weight, Tensor):
        raise TypeError(f"embedding(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    pad = _padding(padding_idx, weight.size(0)) if weight.dim() else -1
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    return _embedding(weight, input, pad, scale_grad_by_freq, sparse)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False)."""
    _check_indices(indices, "indices")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = indices._data
    _check_range(idx, weight._data.shape[0])
    if idx.dtype != np.int64:
        idx = idx.astype(np.int64)
    return Embedding.apply(weight, indices=idx, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                           sparse=bool(sparse))


_embedding.__name__ = _embedding.__qualname__ = "embedding"
install(_embedding, "embedding", method=False)
install(embedding_renorm_, "embedding_renorm_", method=False)


# ---- F.embedding_bag ----------------------------------------------------------------------------

class EmbeddingBag(Op):
    """out[b] = reduction over bag b of weight[indices[i]] (* per_sample_weights[i]); bags are
    the contiguous runs of `bags` (one bag id per index). Indices equal to padding_idx are left
    out (and not counted by 'mean'); empty bags give zeros."""
    _name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx, weight, per_sample_weights, indices, bags, num_bags, mode, padding_idx, scale_grad_by_freq,
                sparse=False):
        dim = weight.shape[1]
        keep = indices != padding_idx if padding_idx >= 0 else None
        rows = np.take(weight, indices, axis=0)
        out = np.zeros((num_bags, dim), dtype=weight.dtype)
        if mode == "max":
            arg = _bag_max(out, rows, indices, bags, keep)
            ctx.args = (mode, arg, weight.shape)
            return out
        factor = np.ones(indices.size, dtype=weight.dtype) if keep is None else keep.astype(weight.dtype)
        if mode == "mean":
            counts = np.bincount(bags[keep] if keep is not None else bags, minlength=num_bags)
            factor = factor / np.maximum(counts, 1)[bags].astype(weight.dtype)
        ctx.args = (mode, factor, weight.shape, indices, bags, scale_grad_by_freq, sparse, padding_idx)
        ctx.save_for_backward(weight, per_sample_weights)
        if per_sample_weights is not None:
            factor = factor * per_sample_weights
        B.index_add_rows(out, bags, rows * factor[:, None], fresh=True)
        return out

    def backward(ctx, grad):
        mode = ctx.args[0]
        need = ctx.needs_input_grad
        if mode == "max":
            _, arg, shape = ctx.args
            valid = arg >= 0
            index = np.where(valid, arg, 0)
            src = grad * _make(valid.astype(grad._data.dtype))
            gw = PlaceAlong.apply(src, shape=shape, index=index, dim=0, accumulate=True)
            return gw, None
        _, factor, shape, indices, bags, scale, sparse, padding_idx = ctx.args
        weight, psw = ctx.saved_tensors
        per_index = Embedding.apply(grad, indices=bags, padding_idx=-1, scale_grad_by_freq=False)
        gw = gp = None
        if need[0]:
            f = _make(factor[:, None])
            if psw is not None:
                f = f * psw.reshape(-1, 1)
            if sparse:
                if scale:
                    raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
                gw = sparse_rows_grad(per_index * f, indices, shape[0], padding_idx)
            else:
                gw = EmbeddingDenseBackward.apply(per_index * f, indices=indices, num_weights=shape[0],
                                                  padding_idx=-1, scale_grad_by_freq=scale)
        if need[1]:
            rows = Embedding.apply(weight, indices=indices, padding_idx=-1, scale_grad_by_freq=False)
            gp = (per_index * rows).sum(1) * _make(factor)
        return gw, gp


def _bag_max(out, rows, indices, bags, keep):
    """Per bag and column: the max over the bag's rows into out, and the table row it came
    from (-1 for empty bags). One vectorized pass per position within the bags."""
    arg = np.full(out.shape, -1, dtype=np.int64)
    if indices.size == 0:
        return arg
    starts = np.flatnonzero(np.r_[True, bags[1:] != bags[:-1]])
    lengths = np.diff(np.r_[starts, bags.size])
    best = np.full(out.shape, -np.inf, dtype=out.dtype)
    for k in range(int(lengths.max())):
        alive = starts[lengths > k] + k
        if keep is not None:
            alive = alive[keep[alive]]
        b = bags[alive]
        cand = rows[alive]
        better = cand > best[b]
        best[b] = np.where(better, cand, best[b])
        arg[b] = np.where(better, indices[alive][:, None], arg[b])
    found = arg >= 0
    out[found] = best[found]
    return arg


def _check_offsets(offsets, n, include_last_offset):
    off = offsets._data.astype(np.int64)
    if include_last_offset and off.size == 0:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    if off.size == 0:
        return off
    if off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {off[0]}")
    if off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{off[-1]}")
    if (np.diff(off) < 0).any():
        raise RuntimeError("offsets must be non-decreasing")
    return off


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.embedding_bag.html"""
    if weight._dtype is D.int64 and input.is_floating_point():
        import warnings
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        n_bags, length = input.shape
        flat = input.reshape(-1)
        bags = np.repeat(np.arange(n_bags, dtype=np.int64), length)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        flat = input
        off = _check_offsets(offsets, input.numel(), include_last_offset)
        if include_last_offset:
            n_bags = max(off.size - 1, 0)
            ends = off[1:]
        else:
            n_bags = off.size
            ends = np.r_[off[1:], input.numel()].astype(np.int64)
        lengths = ends - off[:n_bags]
        bags = np.repeat(np.arange(n_bags, dtype=np.int64), lengths)
        if bags.size < input.numel():  # include_last_offset: entries past the last offset belong to no bag
            flat = flat[:bags.size]
            if per_sample_weights is not None:
                per_sample_weights = per_sample_weights[:bags.size]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    _check_indices(flat, "indices", "embedding_bag")
    if per_sample_weights is not None and per_sample_weights._dtype is not weight._dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                           f"'per_sample_weights'; but type torch.{_type_name(weight)} does not equal "
                           f"torch.{_type_name(per_sample_weights)} (while checking arguments for embedding_bag)")
    idx = flat._data.astype(np.int64, copy=False).reshape(-1)
    bad = np.flatnonzero((idx < 0) | (idx >= weight.size(0)))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in the valid range "
                           f"[0, {weight.size(0)})")
    pad = _padding(padding_idx, weight.size(0), "padding_idx")
    return EmbeddingBag.apply(weight, per_sample_weights, indices=idx, bags=bags, num_bags=n_bags, mode=mode,
                              padding_idx=pad, scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse))


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape (*tensor.shape, num_classes) with a 1 at each value's class.
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.one_hot.html"""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not {type(tensor).__name__}")
    if tensor._dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    x = tensor._data
    if x.size == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _make(np.zeros(x.shape + (num_classes,), dtype=np.int64))
    if x.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(x.max()) + 1
    elif x.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(x.shape + (num_classes,), dtype=np.int64)
    np.put_along_axis(out, x[..., None], 1, axis=-1)
    return _make(out)


FUNCTIONAL = ["embedding", "embedding_bag", "one_hot"]
