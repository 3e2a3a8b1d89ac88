"""torch.nn.functional: the functional forms of the layers, grouped by family.

See https://pytorch.org/docs/stable/nn.functional.html. Each family has a banner;
add a new family as a new banner section (or import its functions from ember/_ops).
"""
import math

import numpy as np

from .. import _backend
from .. import _dtype as _D
from .._tensor import Tensor
from ..autograd.grad_mode import _state as _grad_state
from .._ops import activation as _activation
from .._ops._registry import Op
from .._ops.complex import cj as _cj

# ======================================================================================
# activation functions: declared (with F's signatures) in ember/_ops/activation.py
# ======================================================================================

for _name in _activation.FUNCTIONAL:
    globals()[_name] = getattr(_activation, _name)
del _name

# ======================================================================================
# linear functions
# ======================================================================================


class _Linear(Op):
    """y = x @ w.T + b as one op (the hottest layer op; a composite would record 2-3 nodes).
    Its backward is written with linear itself, so it is differentiable again."""
    _name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        dtype = x.dtype
        if dtype.itemsize == 2 and dtype.kind in "fV":
            # float16/bfloat16 accumulate in float32 (torch's opmath; also BLAS-fast)
            x = x.astype(np.float32)
            w = w.astype(np.float32)
            b = None if b is None else b.astype(np.float32)
        if x.ndim > 2:
            # one 2-D GEMM over all leading dims (NumPy's batched matmul would loop)
            x2 = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # explicit rows: -1 is ambiguous if empty
            out = _backend.matmul(x2, w.T).reshape(x.shape[:-1] + (w.shape[0],))
        else:
            out = _backend.matmul(x, w.T)
        if b is not None:  # out is a fresh array, so adding in place is safe; in pieces when large
            _backend.in_pieces(np.add, (out, b), out)  # (Note [Elementwise pieces])
        return out if out.dtype == dtype else out.astype(dtype)

    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        if not _grad_state.enabled and x._dtype in _BLAS_REAL and grad._dtype is x._dtype:
            return _linear_backward_kernel(grad._data, x._data, w._data, need)  # Note [Fused norm backward]
        gx = gw = gb = None
        if need[0]:
            gx = linear(grad, _cj(w).t())  # grad @ conj(w)
        if need[1] or need[2]:
            rows = int(np.prod(x.shape[:-1]))  # explicit: -1 is ambiguous when a size is 0
            g2 = grad.reshape(rows, w.shape[0])
            if need[1]:
                gw = linear(g2.t(), _cj(x).reshape(rows, x.shape[-1]).t())  # g2.T @ conj(x2)
            if need[2]:
                gb = g2.sum(0)
        return gx, gw, gb


_BLAS_REAL = (_D.float32, _D.float64)


def _linear_backward_kernel(g, x, w, need):
    """_Linear's first-order gradients on arrays: the same three GEMM/sum calls as the ember-op
    formula above (so the same values), without an op dispatch and node per term."""
    gx = gw = gb = None
    rows = math.prod(x.shape[:-1])  # explicit: -1 is ambiguous when a size is 0
    g2 = g if g.ndim == 2 else g.reshape(rows, w.shape[0])
    if need[0]:
        if g.ndim > 2:
            gx = _backend.matmul(g2, w).reshape(x.shape)
        else:
            gx = _backend.matmul(g, w)
        gx = Tensor._make(gx)
    if need[1]:
        gw = Tensor._make(_backend.matmul(g2.T, x.reshape(rows, x.shape[-1])))
    if need[2]:
        gb = Tensor._make(np.add.reduce(g2, axis=0, dtype=g2.dtype))  # np.sum(g2, 0) without its wrappers
    return gx, gw, gb


class _LinearNoBias(_Linear):
    _name = "MmBackward0"


_SHORT = {"float32": "float", "float64": "double", "float16": "half", "bfloat16": "bfloat16", "int64": "long",
          "int32": "int", "int16": "short", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
          "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "uint16": "short unsigned int",
          "uint32": "unsigned int", "uint64": "long unsigned int"}


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias. See https://pytorch.org/docs/stable/generated/torch.nn.functional.linear.html"""
    # fast path for the common, valid call; everything else is checked (and explained) below
    if type(input) is Tensor and isinstance(weight, Tensor) and input._dtype is weight._dtype:
        x = input._data
        w = weight._data
        if w.ndim == 2 and x.ndim >= 1 and x.shape[-1] == w.shape[1]:
            if bias is None:
                return _LinearNoBias.apply(input, weight, None)
            if isinstance(bias, Tensor) and bias._dtype is weight._dtype and bias._data.shape == w.shape[:1]:
                return _Linear.apply(input, weight, bias)
    return _linear_checked(input, weight, bias)


def _linear_checked(input, weight, bias):
    """linear with torch's argument checks and error messages, and the 1-D weight form."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' must be Tensor, not {type(bias).__name__}")
    if weight.dim() == 1:
        out = linear(input, weight.unsqueeze(0)).squeeze(-1)
        return out if bias is None else out + bias
    if weight.dim() != 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {weight.dim()}D")
    if input.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D and 2D")
    xs = input.shape
    if xs[-1] != weight.shape[1]:
        rows = 1
        for s in xs[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{xs[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_SHORT[input.dtype.name]} != "
                           f"{_SHORT[weight.dtype.name]}")
    if bias is None:
        return _LinearNoBias.apply(input, weight, None)
    if bias.dtype is not weight.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_type_word(bias)} and "
                           f"{_type_word(weight)}")
    _check_bias_shape(bias.shape, tuple(xs[:-1]) + (weight.shape[0],))
    return _Linear.apply(input, weight, bias)


def _type_word(t):
    """torch's ScalarType name: Float, Double, Long ..."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int"}.get(t.dtype.name, t.dtype.name)


def _check_bias_shape(bias_shape, out_shape):
    """The bias must broadcast to the output shape (torch expands it)."""
    if len(bias_shape) > len(out_shape):
        raise RuntimeError(f"The expanded size of the tensor ({out_shape[-1] if out_shape else 1}) must match the "
                           f"existing size ({bias_shape[-1]}) at non-singleton dimension {len(bias_shape) - 1}.  "
                           f"Target sizes: {list(out_shape)}.  Tensor sizes: {list(bias_shape)}")
    offset = len(out_shape) - len(bias_shape)
    for i, s in enumerate(bias_shape):
        if s != 1 and s != out_shape[offset + i]:
            raise RuntimeError(f"The expanded size of the tensor ({out_shape[offset + i]}) must match the existing "
                               f"size ({s}) at non-singleton dimension {offset + i}.  Target sizes: "
                               f"{list(out_shape)}.  Tensor sizes: {list(bias_shape)}")


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].
    Composite: one linear against weight laid out as (out*in2, in1), then a product with input2."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.size(1):  # size(): a weight of fewer dims is torch's IndexError
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.size(2):
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {weight.dim()}-D")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                           f"{weight.shape[0]}")
    if not (input1.dtype is input2.dtype is weight.dtype):
        raise RuntimeError(f"All tensors must have the same dtype, got input1: {_SHORT[input1.dtype.name]}, "
                           f"input2: {_SHORT[input2.dtype.name]}, weight: {_SHORT[weight.dtype.name]}")
    out_features, in1, in2 = weight.shape
    lead = tuple(input1.shape[:-1])
    w = weight.permute(0, 2, 1).reshape(out_features * in2, in1)
    t = linear(input1.reshape(-1, in1), w).reshape(-1, out_features, in2)
    y = (t * input2.reshape(-1, 1, in2)).sum(-1).reshape(lead + (out_features,))
    return y if bias is None else y + bias


# ======================================================================================
# normalization functions
# ======================================================================================


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps); p=None is the 2-norm (torch's Tensor.norm default).
    See torch.nn.functional.normalize."""
    from .. import linalg
    try:
        norm = linalg.vector_norm(input, 2.0 if p is None else p, dim, keepdim=True)
    except TypeError:
        if not isinstance(p, str):
            raise
        norm = input.norm(p, dim, keepdim=True)  # torch's Tensor.norm: 'fro' over one dim is the 2-norm
    denom = norm.clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    from .._ops.pointwise import div
    return div(input, denom, out=out)


# ======================================================================================
# normalization layers: batch_norm, instance_norm, layer_norm, group_norm, rms_norm,
# local_response_norm (declared in ember/_ops/norm.py)
# ======================================================================================

from .._ops import norm as _norm  # noqa: E402

for _name in _norm.FUNCTIONAL:
    globals()[_name] = getattr(_norm, _name)
del _name

# ======================================================================================
# dropout functions (declared in ember/_ops/dropout.py)
# ======================================================================================

from .._ops import dropout as _dropout  # noqa: E402

for _name in _dropout.FUNCTIONAL:
    globals()[_name] = getattr(_dropout, _name)
del _name

# ======================================================================================
# sparse functions: embedding, embedding_bag, one_hot (declared in ember/_ops/embedding.py)
# ======================================================================================

from .._ops import embedding as _embedding  # noqa: E402

for _name in _embedding.FUNCTIONAL:
    globals()[_name] = getattr(_embedding, _name)
del _name


# ======================================================================================
# convolution, pooling, resampling and padding functions: declared (with F's signatures)
# in ember/_ops/conv.py, pool.py and sampling.py
# ======================================================================================

from .._ops import conv as _conv, pool as _pool, sampling as _sampling  # noqa: E402

for _mod in (_conv, _pool, _sampling):
    for _name in _mod.FUNCTIONAL:
        globals()[_name] = getattr(_mod, _name)
del _mod, _name

# ======================================================================================
# loss functions and distances (declared in ember/_ops/loss.py; ctc_loss in ember/_ops/ctc.py)
# ======================================================================================

from .._ops.layout_ops import channel_shuffle, channel_shuffle as native_channel_shuffle  # noqa: E402,F401
from .._ops.linear_loss import linear_cross_entropy  # noqa: E402,F401
from .._ops.fractional_pool import (fractional_max_pool2d, fractional_max_pool2d_with_indices,  # noqa: E402,F401
                                    fractional_max_pool3d, fractional_max_pool3d_with_indices)
from .._ops import loss as _loss  # noqa: E402

for _name in _loss.FUNCTIONAL:
    globals()[_name] = getattr(_loss, _name)
del _name

# ======================================================================================
# attention: scaled_dot_product_attention, multi_head_attention_forward and its mask
# helpers (declared in ember/_ops/attention.py)
# ======================================================================================

from .._ops.attention import (_canonical_mask, _in_projection, _in_projection_packed,  # noqa: E402,F401
                              _mha_shape_check, _none_or_dtype, multi_head_attention_forward,
                              scaled_dot_product_attention)

# ======================================================================================
# autocast: the functions with a policy run wrapped (Note [Autocast dispatch] in ember/amp/_dispatch.py)
# ======================================================================================

from ..amp._dispatch import wrap_namespace as _wrap_namespace  # noqa: E402

_wrap_namespace(globals())

from .._ops._argcheck import guard_namespace as _guard_namespace  # noqa: E402

_guard_namespace(globals(), "", precheck={  # these hand their flags to torch's C-level parser
    "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "poisson_nll_loss"},
    c_level={  # torch's C-level functions here; the others are Python code in torch (Note [Python-level checks])
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu_", "channel_shuffle",
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_similarity", "elu_", "gelu", "hardshrink", "hardtanh_", "leaky_relu_", "linear", "logsigmoid",
    "native_channel_shuffle", "one_hot", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu",
    "relu_", "rrelu_", "scaled_dot_product_attention", "selu_", "softplus", "softshrink", "threshold_"})
# Note [Checked at the boundary] in ember/_ops/_argcheck.py
