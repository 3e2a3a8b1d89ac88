"""Batching rules of ember.nn.functional's losses, normalizations, convolutions and pools
(the rule protocol: _batch_rules.py)."""
from .._tensor import Tensor
from ._batch_rules import FALLBACK, RULES, Ready, _batched, _full, _has_tensor, _opname, _rule

# ---- nn.functional ------------------------------------------------------------------------------

def _arg(args, kwargs, pos, name, default=None):
    return args[pos] if len(args) > pos else kwargs.get(name, default)


@_rule("cross_entropy", "nll_loss")
def _class_loss(call, level, args, kwargs):
    """Class-index targets, inputs (C) or (N, C), no label smoothing: the unreduced loss of the
    flattened batch, then each sample's own sum or weighted mean."""
    name = _opname(call)
    x, target = args[0], _arg(args, kwargs, 1, "target")
    weight = _arg(args, kwargs, 2, "weight")
    ignore = _arg(args, kwargs, 4, "ignore_index", -100)
    reduction = _arg(args, kwargs, 6, "reduction", "mean")
    smoothing = _arg(args, kwargs, 7, "label_smoothing", 0.0) if name == "cross_entropy" else 0.0
    if len(args) > 3 and (args[3] is not None) or len(args) > 5 and args[5] is not None or \
            kwargs.get("size_average") is not None or kwargs.get("reduce") is not None:
        return FALLBACK  # the legacy size_average / reduce arguments
    if not isinstance(x, Tensor) or not isinstance(target, Tensor) or smoothing or target.is_floating_point() or \
            x.dim() not in (1, 2) or target.dim() != x.dim() - 1 or reduction not in ("none", "sum", "mean") or \
            (weight is not None and (not isinstance(weight, Tensor) or _batched(weight, level))) or \
            not x.is_floating_point():
        return FALLBACK
    import ember
    F = ember.nn.functional
    xv, tv = _full(x, level), _full(target, level)
    C = xv.shape[-1]
    flat_x = xv.reshape(-1, C)
    flat_t = tv.reshape(-1)
    fn = F.cross_entropy if name == "cross_entropy" else F.nll_loss
    loss = fn(flat_x, flat_t, weight=weight, ignore_index=ignore, reduction="none").reshape(tv.shape)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum(1) if loss.dim() == 2 else loss
    keep = flat_t != ignore
    if weight is None:
        w = keep.to(loss.dtype)
    else:
        w = weight[flat_t.masked_fill(~keep, 0)] * keep
    w = w.reshape(tv.shape)
    if loss.dim() == 1:
        return loss / w
    return loss.sum(1) / w.sum(1)


@_rule("mse_loss", "l1_loss")
def _pointwise_loss(call, level, args, kwargs):
    x, y = args[0], _arg(args, kwargs, 1, "target")
    reduction = _arg(args, kwargs, 4, "reduction", "mean")
    if len(args) > 2 or kwargs.get("size_average") is not None or kwargs.get("reduce") is not None or \
            not isinstance(y, Tensor) or tuple(x.shape) != tuple(y.shape) or x.dtype is not y.dtype or \
            reduction not in ("none", "sum", "mean"):
        return FALLBACK
    import ember
    d = ember.sub(x, y)
    loss = ember.mul(d, d) if _opname(call) == "mse_loss" else ember.abs(d)
    if reduction == "none":
        return Ready(loss)
    if x.dim() == 0:
        return Ready(loss)
    return Ready(ember.sum(loss) if reduction == "sum" else ember.mean(loss))


@_rule("layer_norm", "embedding")
def _first_only(call, level, args, kwargs):
    """Ops that treat every leading dim of their first operand alike: the batch is one more."""
    if not _batched(args[0], level) or args[0].dim() == 0:
        return FALLBACK
    for a in list(args[1:]) + list(kwargs.values()):
        if _batched(a, level):
            return FALLBACK
    return call((args[0]._value,) + tuple(args[1:]), kwargs)


_IMAGE_OPS = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "max_pool1d": 1, "max_pool2d": 2, "max_pool3d": 3,
              "avg_pool1d": 1, "avg_pool2d": 2, "avg_pool3d": 3, "adaptive_avg_pool1d": 1,
              "adaptive_avg_pool2d": 2, "adaptive_avg_pool3d": 3, "adaptive_max_pool1d": 1,
              "adaptive_max_pool2d": 2, "adaptive_max_pool3d": 3, "group_norm": None, "batch_norm": None}


def _image(call, level, args, kwargs):
    """Ops on (N, C, *spatial) or (C, *spatial) inputs with unbatched weights: the batch joins N."""
    x = args[0]
    name = _opname(call)
    spatial = _IMAGE_OPS[name]
    if not _batched(x, level):
        return FALLBACK
    for a in list(args[1:]) + list(kwargs.values()):
        if _batched(a, level) or (type(a) in (list, tuple) and _has_tensor(a)):
            return FALLBACK
    v = x._value
    if spatial is not None and x.dim() == spatial + 1:
        return call((v,) + tuple(args[1:]), kwargs)  # unbatched samples: the batch is N
    if x.dim() < 2 or (spatial is not None and x.dim() != spatial + 2):
        return FALLBACK
    B, N = v.shape[0], v.shape[1]
    out = call((v.flatten(0, 1),) + tuple(args[1:]), kwargs)
    if isinstance(out, tuple):
        return type(out)(o.unflatten(0, (B, N)) for o in out) if type(out) is tuple else FALLBACK
    return out.unflatten(0, (B, N))


for _n in _IMAGE_OPS:
    RULES[_n] = _image


@_rule("batch_norm")
def _batch_norm(call, level, args, kwargs):
    """F.batch_norm with running statistics (training=False): an affine map per channel, so the
    batch joins N; in training mode each sample's statistics are its own (the loop)."""
    if _arg(args, kwargs, 5, "training", False):
        return FALLBACK
    return _image(call, level, args, kwargs)
