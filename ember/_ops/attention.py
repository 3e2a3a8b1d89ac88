"""Attention: torch.nn.functional.scaled_dot_product_attention as one fused op, and the composite
multi_head_attention_forward (with its mask helpers) that nn.MultiheadAttention calls.

scaled_dot_product_attention computes softmax(q k^T * scale + mask) v in one kernel and keeps
the attention probabilities for backward (torch's math path); rows whose every key is masked
give zeros, not NaN (torch's safe softmax). The probabilities are a second, non-differentiable
"workspace" output saved as an output slot, so the backward (written in ember ops) is
differentiable again: under create_graph a gradient can flow back into them.
"""
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ._registry import Op, install, shapes_error
from .random import dropout_keep

_make = Tensor._make


def _c10(dtype):
    return D.C_TYPE_NAMES[dtype]


# ---- scaled dot product attention -------------------------------------------------------------

class _SDPA(Op):
    """(out, probs) = (dropout(softmax(q k^T * scale + mask)) v, softmax(...)). mask is a bool
    array (True = attend), a float array (added), or None; causal adds torch's upper-left
    aligned lower-triangular mask; keep is the dropout mask (None without dropout)."""
    _name = "ScaledDotProductAttentionBackward0"
    nondiff = (1,)

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, causal, dropout_p):
        dtype = q.dtype
        if dtype.itemsize == 2 and dtype.kind in "fV":
            # float16/bfloat16 compute in float32 (torch's opmath), the results rounded back below
            out, probs = _SDPA.forward(ctx, q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),
                                       mask, scale, causal, dropout_p)
            probs = probs.astype(dtype)
            ctx.save_for_backward(q, k, v, probs)
            return out.astype(dtype), probs
        scores = np.matmul(q, np.swapaxes(k, -1, -2))
        scores *= np.asarray(scale, dtype=scores.dtype)
        neg_inf = np.asarray(-np.inf, dtype=scores.dtype)
        if mask is not None:
            if mask.dtype == np.bool_:
                scores = np.where(mask, scores, neg_inf)
            else:
                scores = scores + mask.astype(scores.dtype, copy=False)
        if causal:
            lower = np.tri(scores.shape[-2], scores.shape[-1], dtype=np.bool_)
            scores = np.where(lower, scores, neg_inf)
        probs = _safe_softmax(scores)
        ctx.scale = scale
        ctx.keep = None
        weights = probs
        if dropout_p > 0:
            # torch's math path calls dropout, which at p = 1 zeroes without drawing
            keep = dropout_keep(None, probs.shape)(dropout_p) if dropout_p < 1 else np.zeros(probs.shape, np.bool_)
            ctx.keep = (keep, 1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0)
            weights = probs * keep
            weights *= np.asarray(ctx.keep[1], dtype=probs.dtype)
        out = np.matmul(weights, v)
        ctx.save_for_backward(q, k, v, probs)
        return out, probs

    def backward(ctx, gout, gprobs):
        q, k, v, probs = ctx.saved_tensors
        need = ctx.needs_input_grad
        dropped = None
        if ctx.keep is not None:
            keep, factor = ctx.keep
            dropped = _make((keep * np.asarray(factor, dtype=probs._data.dtype)).astype(probs._data.dtype))
        dv = None
        dp = None
        if gout is not None:
            weights = probs if dropped is None else probs * dropped
            if need[2]:
                dv = weights.transpose(-1, -2).matmul(gout)
            dp = gout.matmul(v.transpose(-1, -2))
            if dropped is not None:
                dp = dp * dropped
        if gprobs is not None:
            dp = gprobs if dp is None else dp + gprobs
        if dp is None:
            return None, None, dv, None
        ds = probs * (dp - (dp * probs).sum(-1, keepdim=True))
        dq = ds.matmul(k) * ctx.scale if need[0] else None
        dk = ds.transpose(-1, -2).matmul(q) * ctx.scale if need[1] else None
        dmask = ds if need[3] else None
        return dq, dk, dv, dmask


def _safe_softmax(scores):
    """softmax over the last dim; a row that is -inf everywhere gives zeros (torch's _safe_softmax)."""
    if scores.shape[-1] == 0:
        return np.zeros_like(scores)
    top = scores.max(axis=-1, keepdims=True)
    top[~np.isfinite(top)] = 0
    probs = np.exp(scores - top)
    total = probs.sum(axis=-1, keepdims=True)
    np.divide(probs, total, out=probs, where=total > 0)
    return probs


def _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal):
    """torch's argument checks, with its messages."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_c10(query.dtype)} key.dtype: {_c10(key.dtype)} and value.dtype: {_c10(value.dtype)} "
                           "instead.")
    if attn_mask is not None:
        md = attn_mask.dtype
        if md is not D.bool and md is not D.float32 and md is not query.dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {_c10(md)} and  query.dtype: {_c10(query.dtype)} instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")

    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if query.dtype.category != D.FLOAT:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: float != {_c10(query.dtype)}")


def _batch_count(a, b):
    """Number of matrices in a batched product of a and b (their broadcast batch dims)."""
    try:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise shapes_error("scaled_dot_product_attention", a._data[..., :1, :1], b._data[..., :1, :1]) from None
    n = 1
    for s in shape:
        n *= s
    return n


def _check_shapes(query, key, value):
    """torch's bmm messages for mismatched head dims / sequence lengths."""
    n = _batch_count(query, key)
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {query.shape[-1]}] "
                           f"but got: [{n}, {key.shape[-1]}].")
    if value.shape[-2] != key.shape[-2]:
        n = _batch_count(query, value)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {key.shape[-2]}] "
                           f"but got: [{n}, {value.shape[-2]}].")


def _check_mask_broadcast(query, key, attn_mask):
    """The mask must broadcast to the scores' shape (torch's broadcasting message otherwise)."""
    scores = np.broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (query.shape[-2], key.shape[-2])
    try:
        np.broadcast_shapes(scores, attn_mask.shape)
    except ValueError:
        raise shapes_error("scaled_dot_product_attention", np.empty(scores, np.bool_), attn_mask._data) from None


def _repeat_heads(t, heads, query):
    """enable_gqa: key/value heads repeated to the query's number of heads (dim -3)."""
    if t.dim() < 3 or query.dim() < 3:
        return t
    n = t.shape[-3]
    if heads % n != 0:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return t if n == heads else t.repeat_interleave(heads // n, dim=-3)


def _check_backends(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether torch's CPU build would run this call with the backends sdpa_kernel / enable_*_sdp leave on: it
    tries its flash kernel, then its math path, and raises when neither may run. ember computes the same math
    whichever runs, so only the refusals are reproduced (tests hold them to torch's)."""
    from ..backends.cuda import _sdp
    if math.prod(query.shape[:-1]) == 0 or key.shape[-2] == 0 or value.numel() == 0:
        return  # (no query rows, no keys or no values: torch returns before any kernel is chosen)
    if _sdp["flash"] and _flash_takes(query, key, value, attn_mask, dropout_p, enable_gqa):
        return
    if _sdp["math"]:
        return
    if not _sdp["flash"]:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    raise RuntimeError("No available kernel.  Aborting execution.")


def _flash_takes(q, k, v, mask, dropout_p, enable_gqa):
    """torch's CPU flash-attention rules, in its order: no dropout, 4-D q, k, v of one batch size, heads equal
    (or a multiple, with enable_gqa), no 3-D mask (reading the mask's size(-2): a mask of fewer than 2
    dimensions is an IndexError there, with the default backends too), one head size, unit strides on it."""
    if dropout_p > 0 or not (q.dim() == k.dim() == v.dim() == 4):
        return False
    (b, h, _, e), (bk, hk, _, ek), (bv, hv, _, ev) = q.shape, k.shape, v.shape
    if not (b == bk == bv and (h == hk == hv or (enable_gqa and hk == hv and h % hk == 0))):
        return False
    if mask is not None:
        if mask.dim() < 2:
            raise IndexError("Dimension specified as -2 but tensor has no dimensions" if mask.dim() == 0 else
                             "Dimension out of range (expected to be in range of [-1, 0], but got -2)")
        if mask.dim() == 3:
            return False
    return e == ek == ev and all(t.stride(-1) == 1 or t.shape[-1] == 1 for t in (q, k, v))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the attention weights.
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html"""
    _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal)
    _check_backends(query, key, value, attn_mask, dropout_p, enable_gqa)
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and value.dim() >= 3:
        heads = query.shape[-3]
        if heads % key.shape[-3] != 0 or heads % value.shape[-3] != 0:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
        key = _repeat_heads(key, heads, query)
        value = _repeat_heads(value, heads, query)
    _check_shapes(query, key, value)
    if scale is None:  # (head size 0: the scores are all 0 whatever the scale, as torch's; 1/sqrt(0) is not taken)
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if attn_mask is not None:
        _check_mask_broadcast(query, key, attn_mask)
    out, _ = _SDPA.apply(query, key, value, attn_mask, scale=scale, causal=bool(is_causal),
                         dropout_p=float(dropout_p) if dropout_p > 0 else 0.0)
    fn = out._grad_fn
    if fn is not None:
        fn.materialize_grads = False  # the probs workspace normally gets no gradient: skip its term
    return out


install(scaled_dot_product_attention, "scaled_dot_product_attention", method=False)


# ---- multi-head attention (torch.nn.functional.multi_head_attention_forward) -------------------
#
# multi_head_attention_forward runs in six steps, and its checks raise in this order (tests compare the first
# error with torch's): (1) ranks, with unbatched inputs given a batch dim of 1; (2) both masks made additive
# float masks; (3) the embedding size, then the q/k/v projections; (4) attn_mask's shape, the bias_k/bias_v key,
# the split into heads (or static_k/static_v), the zero key; (5) key_padding_mask folded into attn_mask, and
# attention: explicit when the weights are returned, else scaled_dot_product_attention; (6) heads merged and the
# output projection. Between the steps, q is (N * heads, L, head_dim) and k, v are (N * heads, S, head_dim).

def _none_or_dtype(input):
    """A mask's dtype, None for no mask: the type _canonical_mask compares the other mask with."""
    if input is not None and not isinstance(input, Tensor):
        raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")
    return None if input is None else input.dtype


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """mask as an additive float mask: bool becomes 0 / -inf in target_type, float passes through unchanged.
    Warns (torch deprecates it) when the other mask is of another type."""
    if mask is None:
        return None
    if mask.dtype is not D.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=2)
    if mask.is_floating_point():
        return mask
    from .creation import zeros_like
    return zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True for batched (3-D) inputs, False for unbatched (2-D); torch's AssertionErrors for other ranks."""
    rank = query.dim()
    if rank not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {rank}-D query "
                             "tensor")
    kind = "batched (3-D)" if rank == 3 else "unbatched (2-D)"
    if key.dim() != rank or value.dim() != rank:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {rank}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {rank - 1}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is None:
        return rank == 3
    if attn_mask.dim() not in (2, 3):
        raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if rank == 2 and attn_mask.dim() == 3:
        # unbatched: a 3-D mask holds one (L, S) mask per head
        per_head = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != per_head:
            raise AssertionError(f"Expected `attn_mask` shape to be {per_head} but got {attn_mask.shape}")
    return rank == 3


def _float_masks(key_padding_mask, attn_mask, is_causal, need_weights, dtype):
    """(key_padding_mask, attn_mask, is_causal) with both masks additive floats of dtype. A causal attn_mask
    is only a hint: when nothing is merged into it and no weights are returned, it is dropped and sdpa's
    is_causal does the masking; once key_padding_mask is merged in, the mask itself carries causality."""
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        return None, None, is_causal
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype, check_other=False)
    return key_padding_mask, attn_mask, is_causal and key_padding_mask is None


def _head_size(embed_dim, embed_dim_to_check, num_heads):
    """embed_dim // num_heads, after checking the query's size and that the heads divide it."""
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    size = embed_dim // num_heads
    if size * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    return size


def _linear(x, w, b):
    from ..nn.functional import linear
    return linear(x, w, b)


def _thirds(t):
    """t's three equal parts along dim 0 (the q, k, v rows of a packed weight or bias); three Nones for None."""
    return (None, None, None) if t is None else t.chunk(3)


def _unstack_features(proj, n, e):
    """The n projections side by side in proj's last dim (n * e features), as n contiguous (..., e) tensors."""
    stacked = proj.unflatten(-1, (n, e)).movedim(-2, 0).contiguous()
    return tuple(stacked[i] for i in range(n))


def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v through the packed (3E, E) in_proj weight. One tensor given twice is projected once: one matmul
    for self-attention (q is k is v), two when key is value (encoder-decoder attention)."""
    e = q.size(-1)
    if q is k and k is v:
        return _unstack_features(_linear(q, w, b), 3, e)
    if k is v:
        w_q, w_kv = w.split([e, 2 * e])
        b_q, b_kv = (None, None) if b is None else b.split([e, 2 * e])
        q_proj = _linear(q, w_q, b_q)
        return (q_proj,) + _unstack_features(_linear(k, w_kv, b_kv), 2, e)
    w_q, w_k, w_v = _thirds(w)
    b_q, b_k, b_v = _thirds(b)
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """q, k, v through separate weights (key and value sizes may differ from embed_dim: kdim, vdim)."""
    e = q.size(-1)
    rows = (("query", q, w_q, b_q), ("key", k, w_k, b_k), ("value", v, w_v, b_v))
    for name, x, w, _ in rows:
        if tuple(w.shape) != (e, x.size(-1)):
            raise AssertionError(f"expecting {name} weights shape of {(e, x.size(-1))}, but got {w.shape}")
    for name, _, _, b in rows:
        if b is not None and tuple(b.shape) != (e,):
            raise AssertionError(f"expecting {name} bias shape of {(e,)}, but got {b.shape}")
    return tuple(_linear(x, w, b) for _, x, w, b in rows)


def _project_inputs(query, key, value, separate, in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight,
                    v_proj_weight):
    """(q, k, v) projected: by q/k/v_proj_weight when use_separate_proj_weight, else by in_proj_weight."""
    if not separate:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                             f"{value.shape[:2]}")
    weights = {"q": q_proj_weight, "k": k_proj_weight, "v": v_proj_weight}
    for name, w in weights.items():
        if w is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
    return _in_projection(query, key, value, *weights.values(), *_thirds(in_proj_bias))


def _mask_3d(attn_mask, tgt_len, src_len, batch_heads):
    """attn_mask as (1, L, S) or (N * heads, L, S), after checking its shape (2-D or 3-D by _mha_shape_check)."""
    if attn_mask is None:
        return None
    flat = attn_mask.dim() == 2
    expected = (tgt_len, src_len) if flat else (batch_heads, tgt_len, src_len)
    if tuple(attn_mask.shape) != expected:
        raise RuntimeError(f"The shape of the {attn_mask.dim()}D attn_mask is {attn_mask.shape}, but should be "
                           f"{expected}.")
    return attn_mask.unsqueeze(0) if flat else attn_mask


def _bias_adds_key(bias_k, bias_v, static_k, static_v):
    """Whether bias_k/bias_v append a key: both or neither must be given, and never with static_k/static_v."""
    if bias_k is None and bias_v is None:
        return False
    if bias_k is None:
        raise AssertionError("bias_v is set but bias_k is None")
    if bias_v is None:
        raise AssertionError("bias_k is set but bias_v is None")
    for what, static in (("key", static_k), ("value", static_v)):
        if static is not None:
            raise AssertionError(f"bias cannot be added to static {what}.")
    return True


def _pad_last(mask):
    """mask with one more (zero) column at the end: the key added by bias_k or add_zero_attn."""
    from .creation import zeros
    from .joining import cat
    return cat([mask, zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype)], -1)


def _append_key(k, v, key_row, value_row, dim, masks):
    """k and v with one more key along dim (key_row(k), value_row(v) build it), and every mask in masks with a
    zero column for it: the added key is attended everywhere."""
    from .joining import cat
    k = cat([k, key_row(k)], dim)
    v = cat([v, value_row(v)], dim)
    return k, v, tuple(None if m is None else _pad_last(m) for m in masks)


def _zero_key(t):
    """An all-zero key for each of the N * heads rows of t: the one add_zero_attn appends."""
    from .creation import zeros
    return zeros((t.shape[0], 1, t.shape[2]), dtype=t.dtype)


def _split_heads(t, bsz, num_heads, head_dim):
    """(S, N, E) -> (N * heads, S, head_dim)."""
    return t.view(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1)


def _merge_heads(t, tgt_len, bsz, embed_dim):
    """(N * heads, L, head_dim) -> (L * N, E): the rows the output projection takes."""
    return t.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)


def _key_heads(t, static, name, bsz, num_heads, head_dim):
    """k or v split into heads, or in its place the caller's static_k / static_v, checked for that shape."""
    if static is None:
        return _split_heads(t, bsz, num_heads, head_dim)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def _merge_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    """attn_mask with the (N, S) key_padding_mask added for every head of its batch row; (N * heads, 1, S)."""
    if key_padding_mask is None:
        return attn_mask
    rows, cols = key_padding_mask.shape[0], key_padding_mask.shape[1]
    if rows != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {rows}")
    if cols != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got {cols}")
    per_head = key_padding_mask.view(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
    per_head = per_head.reshape(bsz * num_heads, 1, src_len)
    return per_head if attn_mask is None else attn_mask + per_head


def _attend_with_weights(q, k, v, attn_mask, dropout_p):
    """(weights @ v, weights), weights = dropout(softmax(q k^T / sqrt(head_dim) + mask)). A plain softmax, as
    torch's: a query whose every key is masked gets NaN here (sdpa's safe softmax gives zeros)."""
    from .activation import softmax
    from .dropout import dropout
    q = q * math.sqrt(1.0 / float(q.shape[-1]))
    k_t = k.transpose(-2, -1)
    scores = q.bmm(k_t) if attn_mask is None else attn_mask.baddbmm(q, k_t)
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    return weights.bmm(v), weights


def _attend_fused(q, k, v, attn_mask, dropout_p, is_causal, bsz, num_heads):
    """scaled_dot_product_attention on the heads laid out as (N, heads, ., head_dim); (N * heads, L, head_dim)."""
    if attn_mask is not None:
        # a mask shared by all heads and batch rows stays broadcast
        shared = attn_mask.size(0) == 1
        attn_mask = attn_mask.unsqueeze(0) if shared else attn_mask.view(bsz, num_heads, -1, k.size(1))
    q, k, v = (t.unflatten(0, (bsz, num_heads)) for t in (q, k, v))
    return scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal).flatten(0, 1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on (L, N, E) query and (S, N, E_k/E_v) key/value (or unbatched (L, E)).
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.multi_head_attention_forward.html"""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask, attn_mask, is_causal = _float_masks(key_padding_mask, attn_mask, is_causal, need_weights,
                                                          query.dtype)
    head_dim = _head_size(embed_dim, embed_dim_to_check, num_heads)
    q, k, v = _project_inputs(query, key, value, use_separate_proj_weight, in_proj_weight, in_proj_bias,
                              q_proj_weight, k_proj_weight, v_proj_weight)

    masks = (_mask_3d(attn_mask, tgt_len, key.shape[0], bsz * num_heads), key_padding_mask)
    if _bias_adds_key(bias_k, bias_v, static_k, static_v):
        k, v, masks = _append_key(k, v, lambda _: bias_k.repeat(1, bsz, 1), lambda _: bias_v.repeat(1, bsz, 1), 0,
                                  masks)
    q = _split_heads(q, bsz, num_heads, head_dim)
    k = _key_heads(k, static_k, "k", bsz, num_heads, head_dim)
    v = _key_heads(v, static_v, "v", bsz, num_heads, head_dim)
    if add_zero_attn:
        k, v, masks = _append_key(k, v, _zero_key, _zero_key, 1, masks)
    attn_mask = _merge_padding(*masks, bsz, num_heads, k.size(1))

    dropout_p = dropout_p if training else 0.0
    weights = None
    if need_weights:
        out, weights = _attend_with_weights(q, k, v, attn_mask, dropout_p)
        weights = weights.unflatten(0, (bsz, num_heads))
        if average_attn_weights:
            weights = weights.mean(dim=1)
    else:
        out = _attend_fused(q, k, v, attn_mask, dropout_p, is_causal, bsz, num_heads)
    out = _linear(_merge_heads(out, tgt_len, bsz, embed_dim), out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
