"""ctc_loss: Connectionist Temporal Classification in log space (torch.nn.functional.ctc_loss).

Forward-backward over the target with blanks interleaved (l' = blank, l1, blank, l2, ...,
blank), vectorized over the batch and the 2S+1 positions, one step per time frame. The
gradient is torch's: with respect to log_probs it is exp(log_probs) - exp(log(sum over
positions s labelled c of alpha_t(s) beta_t(s)) + nll - log_probs), i.e. the gradient through
a log_softmax that produced log_probs, and zero past each input length. Like torch, the
gradient itself is not differentiable again.
"""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import Op

_make = Tensor._make
_NEG_INF = -np.inf


def _lse(*terms):
    """Elementwise log(sum(exp(terms))) that stays -inf when every term is -inf."""
    m = terms[0]
    for t in terms[1:]:
        m = np.maximum(m, t)
    safe = np.where(np.isfinite(m), m, 0.0)
    total = np.zeros_like(safe)
    for t in terms:
        total += np.exp(t - safe)
    with np.errstate(divide="ignore"):
        return np.log(total) + safe


def _shift(a, k, allowed=None):
    """a moved k positions right along the last axis (k < 0: left), -inf filled; positions where
    `allowed` is False become -inf."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    if allowed is not None:
        out = np.where(allowed, out, _NEG_INF)
    return out


class CtcLoss(Op):
    """Per-sample negative log likelihood of the targets under log_probs (T, N, C)."""
    _name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, log_probs, labels, target_lengths, input_lengths, zero_infinity):
        lp = log_probs.astype(np.float64)
        steps, n, _ = lp.shape
        width = labels.shape[1]
        lpe = np.take_along_axis(lp, np.broadcast_to(labels, (steps, n, width)), axis=2)
        skip = np.zeros((n, width), dtype=bool)
        skip[:, 2:] = (labels[:, 2:] != labels[:, :1]) & (labels[:, 2:] != labels[:, :-2])
        ends = 2 * target_lengths
        has_target = target_lengths > 0
        rows = np.arange(n)
        alpha = np.full((steps, n, width), _NEG_INF)
        alpha[0, :, 0] = lpe[0, :, 0]
        if width > 1:
            alpha[0, :, 1] = np.where(has_target, lpe[0, :, 1], _NEG_INF)
        for t in range(1, steps):
            prev = alpha[t - 1]
            alpha[t] = lpe[t] + _lse(prev, _shift(prev, 1), _shift(prev, 2, skip))
        last = np.maximum(input_lengths - 1, 0)
        final = alpha[last, rows]
        tail = np.where(has_target, final[rows, np.maximum(ends - 1, 0)], _NEG_INF)
        nll = -np.logaddexp(final[rows, ends], tail)
        nll = np.where((input_lengths == 0) & ~has_target, 0.0, nll)
        nll = np.where((input_lengths == 0) & has_target, np.inf, nll)
        infinite = np.isinf(nll)
        if zero_infinity:
            nll = np.where(infinite, 0.0, nll)
        ctx.args = (lp, lpe, labels, skip, alpha, nll, infinite, target_lengths, input_lengths, zero_infinity,
                    log_probs.dtype)
        return nll.astype(log_probs.dtype)

    def backward(ctx, grad):
        return _CtcGrad.apply(grad, args=ctx.args)


class _CtcGrad(Op):
    """The gradient of CtcLoss with respect to log_probs (from alpha, beta and the nll)."""
    _name = "CtcLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, args):
        lp, lpe, labels, skip, alpha, nll, infinite, target_lengths, input_lengths, zero_infinity, dtype = args
        steps, n, classes = lp.shape
        width = labels.shape[1]
        rows = np.arange(n)
        ends = 2 * target_lengths
        has_target = target_lengths > 0
        beta = np.full((steps, n, width), _NEG_INF)
        init = np.full((n, width), _NEG_INF)
        for t in range(steps - 1, -1, -1):
            starting = input_lengths - 1 == t
            init.fill(_NEG_INF)
            init[rows, ends] = lpe[t, rows, ends]
            second = np.maximum(ends - 1, 0)
            init[rows, second] = np.where(has_target, lpe[t, rows, second], init[rows, second])
            if t + 1 < steps:
                nxt = beta[t + 1]
                skip_next = np.zeros_like(skip)
                skip_next[:, :-2] = skip[:, 2:]
                rec = lpe[t] + _lse(nxt, _shift(nxt, -1), _shift(nxt, -2, skip_next))
            else:
                rec = np.full((n, width), _NEG_INF)
            running = (t < input_lengths - 1)[:, None]
            beta[t] = np.where(running, rec, np.where(starting[:, None], init, _NEG_INF))
        ab = alpha + beta
        peak = ab.max(axis=2, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0.0)
        weights = np.exp(ab - peak)
        acc = np.zeros((steps, n, classes))
        for s in range(width):
            acc[:, rows, labels[:, s]] += weights[:, :, s]
        with np.errstate(divide="ignore", invalid="ignore"):
            lcab = np.log(acc) + peak
            out = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
        past = np.arange(steps)[:, None] >= input_lengths[None, :]
        out[past] = 0.0
        if zero_infinity:
            out[:, infinite] = 0.0
        out *= grad.astype(np.float64)[None, :, None]
        return out.astype(dtype)

    def backward(ctx, gg):
        raise RuntimeError("the derivative for '_ctc_loss_backward' is not implemented.")


def _lengths(v, name):
    if isinstance(v, Tensor):
        return v._data.astype(np.int64).reshape(-1)
    if isinstance(v, (list, tuple)):
        return np.asarray(v, dtype=np.int64).reshape(-1)
    if isinstance(v, (int, np.integer)):
        return np.asarray([v], dtype=np.int64)
    raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.ctc_loss.html"""
    from .loss import _reduction
    reduction = _reduction(reduction)
    if log_probs._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{D.SCALAR_NAMES[log_probs._dtype]}'")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, "input_lengths")
    tg_len = _lengths(target_lengths, "target_lengths")
    if in_len.size != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tg_len.size != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    if in_len.size and in_len.max() > steps:
        raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {in_len.max()} "
                           "(while checking arguments for ctc_loss_allocate_outputs)")
    tg = targets._data.astype(np.int64)
    if not batched:
        tg = tg.reshape(1, -1)
    max_len = int(tg_len.max()) if tg_len.size else 0
    labels = np.full((n, 2 * max_len + 1), blank, dtype=np.int64)
    if tg.ndim == 1:
        starts = np.concatenate(([0], np.cumsum(tg_len)[:-1]))
        for i in range(n):
            labels[i, 1:2 * tg_len[i]:2] = tg[starts[i]:starts[i] + tg_len[i]]
    else:
        if tg.shape[1] < max_len:
            raise RuntimeError(f"Expected tensor to have size at least {max_len} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        for i in range(n):
            labels[i, 1:2 * tg_len[i]:2] = tg[i, :tg_len[i]]
    loss = CtcLoss.apply(lp, labels=labels, target_lengths=tg_len, input_lengths=in_len,
                         zero_infinity=bool(zero_infinity))
    if reduction == "mean":
        divisor = _make(np.maximum(tg_len, 1).astype(loss._data.dtype))
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
