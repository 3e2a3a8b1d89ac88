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


# the input projection is one packed (3E, E) weight, or three when key/value widths differ from E
_PROJECTION_WEIGHTS = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight")


def _to_sequence_first(query, key, value):
    """Swap dims 0 and 1 of (N, L, E) inputs, transposing a tensor shared as key and value (and query)
    only once: F.multi_head_attention_forward tests `key is value` / `query is key` to pack its GEMMs."""
    if key is not value:
        return tuple(x.transpose(1, 0) for x in (query, key, value))
    shared = key.transpose(1, 0)
    return (shared if query is key else query.transpose(1, 0)), shared, shared


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
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = (self.kdim, self.vdim) == (embed_dim, embed_dim)
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self._register_input_projection(bias, factory)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        # without add_bias_kv these are plain None attributes, not registered parameters (as in torch)
        for name in ("bias_k", "bias_v"):
            setattr(self, name, Parameter(empty((1, 1, embed_dim), **factory)) if add_bias_kv else None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _register_input_projection(self, bias, factory):
        """The weights in use first, then the unused ones as None, so every name exists (torch's order)."""
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            shapes = {"in_proj_weight": (3 * e, e)}
        else:
            shapes = {"q_proj_weight": (e, e), "k_proj_weight": (e, self.kdim), "v_proj_weight": (e, self.vdim)}
        for name, shape in shapes.items():
            self.register_parameter(name, Parameter(empty(shape, **factory)))
        for name in _PROJECTION_WEIGHTS:
            if name not in shapes:
                self.register_parameter(name, None)
        self.register_parameter("in_proj_bias", Parameter(empty(3 * e, **factory)) if bias else None)

    def _reset_parameters(self):
        """Projections ~ xavier_uniform_, biases 0, bias_k/bias_v ~ xavier_normal_ (torch's scheme and draw order)."""
        packed = self._qkv_same_embed_dim
        for name in _PROJECTION_WEIGHTS[:1] if packed else _PROJECTION_WEIGHTS[1:]:
            init.xavier_uniform_(getattr(self, name))
        if self.in_proj_bias is not None:
            for b in (self.in_proj_bias, self.out_proj.bias):
                init.constant_(b, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def __setstate__(self, state):
        # pickles from before kdim/vdim existed lack the flag; they always had one packed weight
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """(attn_output, attn_weights or None); inputs (L, N, E) or (N, L, E) with batch_first, or unbatched."""
        # decided on the masks as given: a float mask rules out torch's fast path before canonicalization
        native = self._native_path_applies(query, key, value, attn_mask, key_padding_mask)
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                           "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        swap_batch = self.batch_first and query.dim() == 3
        if swap_batch:
            query, key, value = _to_sequence_first(query, key, value)
        if native:
            # torch's fast path ignores the is_causal hint and normalizes with a plain softmax: a query
            # whose keys are all masked gives NaN, as the explicit-weights computation does
            out, weights = self._project_and_attend(query, key, value, key_padding_mask, True, attn_mask,
                                                    average_attn_weights, False)
            weights = weights if need_weights else None
        else:
            out, weights = self._project_and_attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                                    average_attn_weights, is_causal)
        return (out.transpose(1, 0) if swap_batch else out), weights

    def _project_and_attend(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                            average_attn_weights, is_causal):
        """F.multi_head_attention_forward with this module's weights, on sequence-first inputs."""
        return multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)

    def _native_path_applies(self, query, key, value, attn_mask, key_padding_mask):
        """Whether torch would run _native_multi_head_attention for this call (which changes NaN rows)."""
        if any(m is not None and m.is_floating_point() for m in (attn_mask, key_padding_mask)):
            return False
        if not backends.mha.get_fastpath_enabled() or query.dim() != 3:
            return False
        if not (query is key and key is value):
            return False
        w, b = self.in_proj_weight, self.in_proj_bias
        if w is None or b is None or query.dtype != w.dtype or query.dtype != b.dtype:
            return False
        if self.training or not self.batch_first or self.num_heads % 2:
            return False
        if self.bias_k is not None or self.bias_v is not None:
            return False
        if self.add_zero_attn or not self._qkv_same_embed_dim:
            return False
        if not is_grad_enabled():
            return True
        tracked = (query, w, b, self.out_proj.weight, self.out_proj.bias)
        return not any(t is not None and t.requires_grad for t in tracked)

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """(merged mask, mask type) as torch's fast path combines them: 1 = key padding only, 2 = attn_mask
        (plus key padding), None = no mask."""
        if attn_mask is None:
            return (None, None) if key_padding_mask is None else (key_padding_mask, 1)
        batch, length, _ = query.shape
        if attn_mask.dim() == 3:
            merged = attn_mask.view(batch, -1, length, length)
        else:
            merged = attn_mask.view(1, 1, length, length).expand(batch, self.num_heads, -1, -1)
        if key_padding_mask is not None:
            merged = merged + key_padding_mask.view(batch, 1, 1, length).expand(-1, self.num_heads, -1, -1)
        return merged, 2
