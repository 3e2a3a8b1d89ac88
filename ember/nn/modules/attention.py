"""nn.MultiheadAttention. See https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html

torch keeps this class in nn/modules/activation.py; ember re-exports it from there as well.
Parameter names are torch's (in_proj_weight or q/k/v_proj_weight, in_proj_bias, out_proj.*,
bias_k, bias_v), so state_dicts interchange. The computation is F.multi_head_attention_forward.
Where torch would take its inference fast path (_native_multi_head_attention: eval mode, no grad,
batch_first self-attention ...) the values are the same except for queries whose keys are all
masked, which are NaN there; ember reproduces that by normalizing with the explicit-weights path.
"""
from ... import backends
from ...autograd.grad_mode import is_grad_enabled
from ..._ops.attention import _canonical_mask, _none_or_dtype, multi_head_attention_forward
from ..._ops.creation import empty
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim // num_heads, with input and output projections."""
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        """Projections ~ xavier_uniform_, biases 0, bias_k/bias_v ~ xavier_normal_ (torch's scheme)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """(attn_output, attn_weights or None); inputs (L, N, E) or (N, L, E) with batch_first, or unbatched."""
        is_batched = query.dim() == 3
        fast = self._takes_fast_path(query, key, value, attn_mask, key_padding_mask)
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                           "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and is_batched:
            # transpose to (L, N, E), keeping query/key/value identity (self-attention packs one GEMM)
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        if fast:
            # torch's fast path ignores the is_causal hint and normalizes with a plain softmax: a query
            # whose keys are all masked gives NaN (the explicit-weights computation does the same)
            out, weights = self._attend(query, key, value, key_padding_mask, True, attn_mask, average_attn_weights,
                                        False)
            if not need_weights:
                weights = None
        else:
            out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                        average_attn_weights, is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal):
        return multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)

    def _takes_fast_path(self, query, key, value, attn_mask, key_padding_mask):
        """Whether torch would run _native_multi_head_attention here (its conditions, in its order)."""
        for mask in (attn_mask, key_padding_mask):
            if mask is not None and mask.is_floating_point():
                return False
        if not backends.mha.get_fastpath_enabled() or query.dim() != 3:
            return False
        if query is not key or key is not value:
            return False
        if self.in_proj_weight is None or self.in_proj_bias is None:
            return False
        if query.dtype != self.in_proj_weight.dtype or query.dtype != self.in_proj_bias.dtype:
            return False
        if self.training or self.num_heads % 2 or not self.batch_first:
            return False
        if self.bias_k is not None or self.bias_v is not None or self.add_zero_attn or not self._qkv_same_embed_dim:
            return False
        if is_grad_enabled():
            for t in (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight, self.out_proj.bias):
                if t is not None and t.requires_grad:
                    return False
        return True

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """(merged mask, mask type) as torch's fast path combines them: 1 = key padding only, 2 = attn_mask
        (plus key padding), None = no mask."""
        mask_type = None
        merged_mask = None
        if key_padding_mask is not None:
            mask_type = 1
            merged_mask = key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(batch_size, self.num_heads, -1, -1)
            merged_mask = expanded
            if key_padding_mask is not None:
                padding = key_padding_mask.view(batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
                merged_mask = expanded + padding
        return merged_mask, mask_type
