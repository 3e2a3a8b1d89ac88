"""Losses and distances with torch.nn.functional's signatures.

cross_entropy over class indices is one fused op (log_softmax + nll, the hottest loss): it
saves the softmax probabilities and its gradient is (softmax - onehot) scaled per sample by
the class weight, ignore_index and label smoothing. Like the fused norms (Note [Fused norm
backward] in norm.py) the first-order gradient is a NumPy kernel, and under create_graph the
same formula is built from ember ops, so double backward works. Everything else is a
composite of ember ops (binary_cross_entropy has its own node for torch's gradient formula,
ctc_loss lives in ctc.py).
"""
import math
import warnings

import numpy as np

from .. import _dtype as D
from .. import _backend as B
from .._backend import parallel
from .._tensor import Tensor
from ..autograd import grad_mode
from ._argcheck import wrong_type
from ._registry import Op, install
from .activation import _log_softmax, _softmax, logsigmoid
from .ctc import ctc_loss  # noqa: F401  (re-exported for nn.functional)
from .distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from .reduction import gather
from .softmax import exp_rows_kernels, shifted_exp

_state = grad_mode._state
_make = Tensor._make
_NAMES = D.SCALAR_NAMES


# ---- reduction arguments --------------------------------------------------------------------

def _legacy_reduction(size_average, reduce):
    """torch's size_average/reduce -> reduction string, with its deprecation warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _reduction(reduction, size_average=None, reduce=None):
    """The checked reduction string ('none', 'mean' or 'sum')."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _size_warning(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)


def _const(arr, like):
    """A constant tensor of arr's values in like's dtype."""
    return _make(np.asarray(arr).astype(like._data.dtype, copy=False), like._dtype)


def _opmath(x):
    return x.astype(np.float32) if x.dtype.itemsize == 2 else x


# ---- nll_loss and cross_entropy: argument checks ---------------------------------------------

def _class_target_checks(input, target, weight, kernel):
    """torch's checks for class-index targets; returns the class dim."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() != 1 and input.shape[0] != (target.shape[0] if target.dim() else 0):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    if target._dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_NAMES[target._dtype]}")
    cd = 0 if input.dim() == 1 else 1
    if input.dim() <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.dim() > 2:
        expected = tuple(input.shape[:1]) + tuple(input.shape[2:])
        if tuple(target.shape) != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    c = input.shape[cd]
    if weight is not None:
        if weight.dim() != 1 or weight.numel() != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {list(weight.shape)}")
        if weight._dtype is not input._dtype:
            raise RuntimeError(f"expected scalar type {_NAMES[input._dtype]} but found {_NAMES[weight._dtype]}")
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[input._dtype]}'")
    return cd


def _valid_targets(target, ignore_index, c):
    """(int64 targets with ignored entries set to 0, mask of the entries that count); the mask is None when
    every entry counts (checked from the targets' range: two reductions instead of six passes)."""
    t = target._data.astype(np.int64, copy=False)
    if t.size:
        lo = np.minimum.reduce(t, axis=None)
        hi = np.maximum.reduce(t, axis=None)
        if 0 <= lo and hi < c and not lo <= ignore_index <= hi:
            return t, None
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {t[bad].flat[0]} is out of bounds.")
    return np.where(valid, t, 0), valid


def _target_index(t, cd):
    """An index tuple that picks, along class dim cd of an (N, C, *rest) array, each position's class t
    (shaped (N, *rest)): a[_target_index(t, cd)] has t's shape. (take_along_axis builds the same index with
    Python overhead that dominates a small loss.)"""
    grids = [np.arange(n).reshape((n,) + (1,) * (t.ndim - 1 - i)) for i, n in enumerate(t.shape)]
    return tuple(grids[:cd]) + (t,) + tuple(grids[cd:])


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] * weight[target[n]], ignoring ignore_index; 'mean' divides by the total
    weight. See https://pytorch.org/docs/stable/generated/torch.nn.functional.nll_loss.html"""
    reduction = _reduction(reduction, size_average, reduce)
    kernel = "nll_loss_out_frame" if input.dim() <= 2 else "nll_loss2d_forward_out_frame"
    cd = _class_target_checks(input, target, weight, kernel)
    t, valid = _valid_targets(target, ignore_index, input.shape[cd])
    wt = np.ones(t.shape, input._data.dtype) if valid is None else valid.astype(input._data.dtype)
    if weight is not None:
        wt = wt * weight._data[t]
    picked = gather(input, np.expand_dims(t, cd), cd).squeeze(cd) if input.dim() else input
    loss = picked * _const(-wt, input)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    if not wt.sum():
        return total + float("nan")  # torch: nan loss, zero gradient when every target is ignored
    return total / _const(wt.sum(), input)


# ---- cross_entropy --------------------------------------------------------------------------

PLAIN_KERNEL = True  # _plain_cross_entropy for the common case (ember[jit]); False: the general path only


class CrossEntropy(Op):
    """Fused log_softmax + nll over class indices with weight, ignore_index, label smoothing. valid is None
    when every target counts; wt (the per-sample weights) is None when, further, there is no class weight:
    the per-sample factors are then all 1 and their multiplications are skipped (exact either way)."""
    _name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, t, valid, weight, cd, smoothing, reduction):
        if PLAIN_KERNEL and valid is None and weight is None and not smoothing and reduction != "none" and \
                x.ndim == 2 and x.size and x.dtype == np.float32 and \
                x.nbytes * parallel.ROW_WEIGHT < parallel._MIN_BYTES:  # (one thread's share: no row split)
            kernels = exp_rows_kernels(x, cd)
            if kernels is not None:
                return _plain_cross_entropy(ctx, x, t, reduction, kernels)
        xf = _opmath(x)
        c = xf.shape[cd]
        keep = list(xf.shape)
        keep[cd] = 1
        m, s = np.empty(keep, xf.dtype), np.empty(keep, xf.dtype)
        e = B.empty_like(xf)  # softmax = e / s: the division is folded into the backward's coefficients
        wx = np.empty(t.shape, xf.dtype) if smoothing else None
        wc = None if weight is None else _class_view(weight, xf.ndim, cd)

        kernels = exp_rows_kernels(xf, cd)

        def rows(xs, es, ms, ss, wxs):
            shifted_exp(xs, cd, kernels, es, ms, ss)
            if wxs is not None:
                np.add.reduce(xs if wc is None else xs * wc, axis=cd, out=wxs)
        parallel.run_rows(rows, (xf, e, m, s, wx), cd)
        lse = (m + np.log(s)).squeeze(cd)
        at = _target_index(t, cd)
        nll = lse - xf[at]
        if valid is not None:
            valid = valid.astype(xf.dtype)  # as a float mask, so every coefficient stays in x's dtype
        wt = None
        if weight is not None:
            wt = weight[t] if valid is None else valid * weight[t]
        elif valid is not None:
            wt = valid
        loss = nll if wt is None else wt * nll
        if smoothing:
            loss = loss * (1 - smoothing)
            w_all = float(c) if weight is None else float(weight.sum())
            loss += (smoothing / c) * _ones_or(valid, t.shape, xf.dtype) * (lse * w_all - wx)
        denom = xf.dtype.type(t.size) if wt is None else wt.sum()
        ctx.save_for_backward(x)
        ctx.args = (e, s, at, valid, wt, weight, cd, smoothing, reduction, denom)
        if reduction == "none":
            return loss.astype(x.dtype, copy=False)
        total = loss.sum()
        if reduction == "mean":
            total = total / denom if denom else np.array(np.nan, xf.dtype)
        return np.asarray(total, dtype=x.dtype)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        e, s, at, valid, wt, weight, cd, smoothing, reduction, denom = ctx.args
        if _state.enabled:
            return _cross_entropy_grad_composite(grad, x, ctx.args)
        plain = getattr(ctx, "plain", None)
        if plain is not None:  # _plain_cross_entropy's case: one compiled call
            g = e.dtype.type(grad._data)
            gx = B.empty_like(e)
            plain.nll_grad_rows(e, s, at[1], g / denom if reduction == "mean" else g, gx)
            return _make(gx, x._dtype)
        g = grad._data.astype(e.dtype)
        if reduction == "mean":
            g = g / denom if denom else np.zeros_like(g)  # every target ignored: nan loss, zero gradient
        # per sample: gx = g_i * (softmax * A_i - B_i), A_i = sum_c B_ic
        gi = g  # 0-d for 'mean' and 'sum', broadcast against the per-sample factors
        hit, a = _target_weights(e, valid, wt, weight, cd, smoothing)
        coef = gi if a is None else gi * a
        coef = (np.expand_dims(coef, cd) if coef.ndim else coef) / s
        if coef.shape != s.shape:
            coef = np.broadcast_to(coef, s.shape)
        gx = B.empty_like(e) if coef.dtype == e.dtype else np.empty_like(e, np.result_type(e, coef))
        parallel.run_rows(lambda es, cs, gxs: np.multiply(es, cs, out=gxs), (e, coef, gx), cd)
        gx[at] -= gi if hit is None else gi * hit
        if smoothing:
            w = 1.0 if weight is None else _class_view(weight, gx.ndim, cd)
            gx -= np.expand_dims(gi * (_ones_or(valid, at[cd].shape, e.dtype) * (smoothing / e.shape[cd])), cd) * w
        return _make(gx.astype(x._data.dtype, copy=False), x._dtype)


def _plain_cross_entropy(ctx, x, t, reduction, kernels):
    """CrossEntropy.forward for float32 (N, C) logits under one thread's share, every target counted, no class
    weight or smoothing, 'mean' or 'sum': the row pass and the losses' sum in two compiled calls, where the general
    path's ~20 NumPy calls cost more than its arithmetic on small batches (128 x 10: 98 us against torch's 16). Its
    backward is one compiled call too (softmax_jit.nll_grad_rows; under create_graph the general composite)."""
    e = B.empty_like(x)
    m, s = shifted_exp(x, 1, kernels, e)
    total = kernels.nll_sum(x, t, m, s)
    denom = np.float32(t.size)
    ctx.save_for_backward(x)
    ctx.args = (e, s, (np.arange(t.size), t), None, None, None, 1, 0.0, reduction, denom)
    ctx.plain = kernels
    if reduction == "mean":
        return np.asarray(total / t.size, np.float32)
    return np.asarray(total, np.float32)


def _ones_or(mask, shape, dtype):
    """mask, or ones of shape where it is None (every target counts)."""
    return np.ones(shape, dtype) if mask is None else mask


def _target_weights(e, valid, wt, weight, cd, smoothing):
    """(B_i at the target class, A_i) of CrossEntropy's gradient, None where both are 1 for every sample
    (no smoothing, no class weight, no ignored target): B_it = (1 - smoothing) * wt_i,
    A_i = B_it + smoothing / C * (the class weights' sum) * valid_i."""
    if not smoothing:
        return wt, wt
    shape = e.shape[:cd] + e.shape[cd + 1:]
    c = e.shape[cd]
    w_all = float(c) if weight is None else float(weight.sum())
    hit = (1 - smoothing) * _ones_or(wt, shape, e.dtype)
    return hit, hit + (smoothing / c) * w_all * _ones_or(valid, shape, e.dtype)


def _class_view(w, ndim, cd):
    shape = [1] * ndim
    shape[cd] = w.shape[0]
    return w.reshape(shape)


def _cross_entropy_grad_composite(grad, x, args):
    """The gradient of CrossEntropy with ember ops (differentiable again)."""
    p, _, at, valid, wt, weight, cd, smoothing, reduction, denom = args
    c = p.shape[cd]
    hit, a = _target_weights(p, valid, wt, weight, cd, smoothing)
    b = np.zeros(p.shape, dtype=p.dtype)
    b[at] = 1 if hit is None else hit
    if smoothing:
        w = np.ones(c, p.dtype) if weight is None else weight
        b += np.expand_dims(_ones_or(valid, at[cd].shape, p.dtype) * (smoothing / c), cd) * _class_view(w, p.ndim, cd)
    g = grad
    if reduction == "mean":
        g = g / float(denom) if denom else g * 0.0
    if reduction == "none":
        g = g.unsqueeze(cd)
    sm = _softmax(x, cd)
    scaled = sm if a is None else sm * _const(np.expand_dims(a, cd), x)
    return (scaled - _const(b, x)) * g


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html"""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(input.shape) == tuple(target.shape) and input.dim() >= 1:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing)
    if label_smoothing < 0.0 or label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.dim() >= 1 and input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{_NAMES[input._dtype]}'")
    cd = _class_target_checks(input, target, weight, "nll_loss_out_frame")
    t, valid = _valid_targets(target, ignore_index, input.shape[cd])
    w = None if weight is None else _opmath(weight._data)
    return CrossEntropy.apply(input, t=t, valid=valid, weight=w, cd=cd, smoothing=float(label_smoothing),
                              reduction=reduction)


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing):
    """Class probabilities as targets (same shape as input): -sum_c w_c * target_c * log_softmax_c."""
    if target._dtype.category != D.FLOAT:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_NAMES[target._dtype]}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    cd = 0 if input.dim() == 1 else 1
    c = input.shape[cd]
    if weight is not None and (weight.dim() != 1 or weight.numel() != c):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no classes "
                           f"but got weight tensor of shape: {list(weight.shape)}")
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        target = target * (1 - label_smoothing) + label_smoothing / c
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{_NAMES[input._dtype]}'")
    terms = _log_softmax(input, cd) * target
    if weight is not None:
        shape = [1] * input.dim()
        shape[cd] = c
        terms = terms * weight.reshape(shape)
    if reduction == "none":
        return -terms.sum(cd)
    total = -terms.sum()
    if reduction == "sum":
        return total
    n = input.numel() // c if c else 0
    return total / n if n else total * float("nan")


# ---- regression losses ----------------------------------------------------------------------

def _weighted(loss, weight, input, reduction):
    """torch's weighted mse/l1/huber: loss * weight, 'mean' over the weights (huber: over elements)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _integral_kernel(kernel, *tensors):
    """torch's NotImplementedError when a loss kernel would run on an integral (or bool) dtype."""
    d = D.result_type_of(tensors)
    if d.category < D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[d]}'")


def _float_result_into(input, name=_NAMES):
    """torch computes these losses into a tensor of the input's dtype: a float result can't go into an integer."""
    if input._dtype.category < D.FLOAT:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {name[input._dtype]}")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.mse_loss.html"""
    _size_warning(input, target)
    _integral_kernel("mse_cpu", input, target)
    reduction = _reduction(reduction, size_average, reduce)
    d = input - target
    loss = d * d
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, input, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.l1_loss.html"""
    _size_warning(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    loss = (input - target).abs()
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, input, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta == 0: l1_loss)."""
    _size_warning(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _integral_kernel("smooth_l1_cpu", input, target)
    d = input - target
    z = d.abs()
    if beta == 0.0:
        return _reduce(z, reduction)
    loss = (d * d * (0.5 / beta)).where(z < beta, z - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta)."""
    _size_warning(input, target)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _integral_kernel("huber_cpu", input, target)
    _float_result_into(input)
    d = input - target
    z = d.abs()
    loss = (d * d * 0.5).where(z < delta, (z - 0.5 * delta) * delta)
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    return _reduce(loss * weight, reduction)


# ---- binary losses --------------------------------------------------------------------------

class BinaryCrossEntropy(Op):
    """-w * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)); torch's gradient
    w * (x - t) / max(x (1 - x), 1e-12), written with ember ops."""
    _name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        with np.errstate(divide="ignore"):
            log_x = np.maximum(np.log(x), -100)
            log_1mx = np.maximum(np.log1p(-x), -100)
        return -(t * log_x + (1 - t) * log_1mx)

    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = gt = None
        if need[0]:
            gx = grad * (x - t) / (x * (1 - x)).clamp_min(1e-12)
        if need[1]:
            gt = grad * ((1 - x).log().clamp_min(-100) - x.log().clamp_min(-100))
        return gx, gt


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.binary_cross_entropy.html"""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if target._dtype is not input._dtype:
        raise RuntimeError(f"Found dtype {_NAMES[target._dtype]} but expected {_NAMES[input._dtype]}")
    _integral_kernel("binary_cross_entropy", input)
    x = input._data
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight.expand(np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """(1 - t) x - lw * logsigmoid(x) with lw = (pos_weight - 1) t + 1, times weight."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    if pos_weight is not None:
        if not isinstance(pos_weight, Tensor):  # torch's Tensor? (a number would broadcast)
            raise wrong_type("binary_cross_entropy_with_logits", "pos_weight", pos_weight, "Tensor", 4)
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * logsigmoid(input)
    else:
        loss = (1 - target) * input - logsigmoid(input)
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise wrong_type("binary_cross_entropy_with_logits", "weight", weight, "Tensor", 3)
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    if not isinstance(target, Tensor):  # -input * 1.5 would not refuse
        raise wrong_type("soft_margin_loss", "target", target, "Tensor", 2)
    reduction = _reduction(reduction, size_average, reduce)
    _float_result_into(input)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Mean over classes of the binary logistic loss of each label."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


# ---- distribution losses --------------------------------------------------------------------

def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) (log_target: exp(target) * (target - input)); 'batchmean' divides
    the sum by the batch size. See torch.nn.functional.kl_div."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        if reduction != "batchmean":
            reduction = _reduction(reduction)
    return _kl_div(input, target, reduction, log_target)


def _kl_div(input, target, reduction, log_target):
    if input._dtype.category < D.FLOAT or target._dtype.category < D.FLOAT:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() != 0 else total
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full adds
    Stirling's term for target > 1."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if not isinstance(target, Tensor):  # target * input would take a number
        raise wrong_type("poisson_nll_loss", "target", target, "Tensor", 2)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full);
    the clamp of var passes the gradient through unchanged, as torch's in-place no_grad clamp."""
    from .reduction import any as _any
    from .creation import ones_like
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif _any(var < 0):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    _float_result_into(var, D.C_TYPE_NAMES)  # torch clamps var in place
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---- margin losses --------------------------------------------------------------------------

def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + float(margin)).clamp_min(0), reduction)  # margin: a C++ double


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1."""
    reduction = _reduction(reduction, size_average, reduce)
    zeros = input * 0
    if input._dtype.category < D.FLOAT:  # torch computes margin - input in the input's (integer) dtype
        margin = input.new_full((), margin)
    margin_part = (margin - input).clamp_min(0).where(target != 1, zeros)
    self_part = input.where(target != -1, zeros)
    return _reduce(margin_part + self_part, reduction)


def _check_multi_target(input, target, name):
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or (input.dim() == 1 and not input.numel()):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target._dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {_NAMES[target._dtype]}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j])^p * weight[y], divided by the number of classes."""
    reduction = _reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_multi_target(input, target, "multi_margin_loss")
    _integral_kernel("multi_margin_loss_cpu_kernel", input)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n, c = x.shape
    t = target._data.reshape(-1)
    if t.size != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if ((t < 0) | (t >= c)).any():
        raise RuntimeError("target out of range")
    x_y = gather(x, t[:, None], 1)
    z = (x - x_y + margin).clamp_min(0)
    if p == 2:
        z = z * z
    off_target = np.ones((n, c), dtype=bool)
    off_target[np.arange(n), t] = False
    z = z * _const(off_target, x)
    if weight is not None:
        z = z * _const(weight._data[t][:, None], x)
    loss = z.sum(1) / c
    if input.dim() == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (the entries of target before the first -1) and non-target classes
    k of max(0, 1 - (x[j] - x[k])), divided by the number of classes."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_multi_target(input, target, "multilabel_margin_loss")
    _integral_kernel("multilabel_margin_loss_forward_out_frame", input)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n, c = x.shape
    t = target._data.reshape(n, c)
    if ((t < -1) | (t >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    listed = np.cumprod(t != -1, axis=1).astype(bool)  # entries before the first -1
    safe = np.where(listed, t, 0)
    is_target = np.zeros((n, c), dtype=bool)
    rows = np.repeat(np.arange(n), c).reshape(n, c)
    is_target[rows[listed], safe[listed]] = True
    x_j = gather(x, safe, 1)
    z = (1 - x_j.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    mask = listed[:, :, None] & ~is_target[:, None, :]
    loss = (z * _const(mask, x)).sum((1, 2)) / c
    if input.dim() == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# ---- distances ------------------------------------------------------------------------------

def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    d = input1.dim() - 1 if input1.dim() else 0
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + eps
    mag2 = (input2 * input2).sum(d) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos * 0
    pos = (1 - cos).where(target == 1, zeros)
    neg = (cos - margin).clamp_min(0).where(target == -1, zeros)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm pairwise distance."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p and p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance function (default: pairwise_distance)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance_function(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)



FUNCTIONAL = ["nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
              "binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss",
              "multilabel_soft_margin_loss", "kl_div", "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss",
              "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "pairwise_distance", "pdist",
              "cosine_similarity", "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
              "ctc_loss"]


# ---- torch.* names: the ATen signatures, reduction as an enum (0 none, 1 mean, 2 sum) --------
# (torch's Python bindings of these default to 0, no reduction, whatever the schema says)

_ENUM = ("none", "mean", "sum")


def _torch_level(name, fn):
    fn.__name__ = fn.__qualname__ = name
    install(fn, name, method=False)


_torch_level("binary_cross_entropy_with_logits", lambda input, target, weight=None, pos_weight=None, reduction=0:
             binary_cross_entropy_with_logits(input, target, weight, reduction=_ENUM[reduction],
                                              pos_weight=pos_weight))
_torch_level("kl_div", lambda input, target, reduction=0, *, log_target=False:
             _kl_div(input, target, _ENUM[reduction], log_target))
_torch_level("hinge_embedding_loss", lambda input, target, margin=1.0, reduction=0:
             hinge_embedding_loss(input, target, margin, reduction=_ENUM[reduction]))
_torch_level("margin_ranking_loss", lambda input1, input2, target, margin=0.0, reduction=0:
             margin_ranking_loss(input1, input2, target, margin, reduction=_ENUM[reduction]))
_torch_level("cosine_embedding_loss", lambda input1, input2, target, margin=0.0, reduction=0:
             cosine_embedding_loss(input1, input2, target, margin, reduction=_ENUM[reduction]))
_torch_level("poisson_nll_loss", lambda input, target, log_input, full, eps, reduction:
             poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_ENUM[reduction]))
_torch_level("triplet_margin_loss", lambda anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
             reduction=0: triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                              reduction=_ENUM[reduction]))
_torch_level("ctc_loss", lambda log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False: ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                                           _ENUM[reduction], zero_infinity))
