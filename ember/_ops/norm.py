"""Normalization: batch_norm (and instance_norm on top of it), layer_norm (and group_norm on
top of it), rms_norm, local_response_norm, with torch.nn.functional's signatures.

batch_norm and layer_norm are fused kernels (the hottest normalization ops: a composite
records ~8 nodes and keeps as many full-size temporaries). Each saves only the input and
the per-channel/per-row mean and 1/std, as torch does. Their backward has two paths
(Note [Fused norm backward]):
- first order (no create_graph): one NumPy kernel from the saved statistics;
- create_graph: the same formula written with ember ops, recomputing the statistics from
  the saved input, so double backward differentiates through them.
"""
import numbers

import math

import numpy as np

from .. import _backend as B
from .. import _dtype as D
from .._backend import batchnorm_numpy as BN
from .._backend import jit
from .._backend import parallel
from .._tensor import Tensor, _wrap_dim
from ..autograd import grad_mode
from ._argcheck import ints_error
from ._registry import Op, install

_state = grad_mode._state
_make = Tensor._make
_NAMES = D.SCALAR_NAMES

# Note [Fused norm backward]: backward runs with grad mode equal to create_graph. When it
# is off, nothing will differentiate the gradient, so the kernel works on arrays from the
# saved mean/invstd. When it is on, the gradient is built from ember ops on the saved input
# (statistics recomputed differentiably), so higher derivatives see how mean and variance
# depend on the input.


def _opmath(x):
    """float16/bfloat16 arrays compute in float32 (torch's opmath type); others as they are."""
    if x is not None and x.dtype.itemsize == 2:
        return x.astype(np.float32)
    return x


def _float_only(input, kernel):
    if input._dtype.category != D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_NAMES[input._dtype]}'")


# ---- batch_norm ----------------------------------------------------------------------------

def _bn_kernels(x3):
    """The training kernels for x3: compiled (ember/_backend/batchnorm_jit.py, Note [JIT kernels]) for float32/float64
    with ember[jit] installed and the switch on, else batchnorm_numpy's."""
    if x3.dtype in jit.DTYPES:
        kernels = jit.load("batchnorm_jit")
        if kernels is not None:
            return kernels
    return BN


class BatchNorm(Op):
    """y = (x - mean) * invstd * weight + bias per channel (dim 1), statistics over the other
    dims (training) or from the running buffers (eval). Training also updates the running
    buffers in place (momentum average; the variance enters unbiased)."""
    _name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        shape = x.shape
        n, c = shape[0], shape[1]
        x3 = _opmath(x).reshape(n, c, -1)
        count = x3.shape[0] * x3.shape[2]
        if training:
            xc, mean, var, invstd = _bn_kernels(x3).train_forward(x3, eps, _opmath(weight), _opmath(bias))
            if running_mean is not None:
                _update_running(running_mean, mean, momentum)
            if running_var is not None:
                unbiased = var * (count / (count - 1)) if count > 1 else np.full_like(var, np.nan)
                _update_running(running_var, unbiased, momentum)
        else:
            mean = running_mean.astype(np.float32 if x.dtype.itemsize == 2 else x.dtype)  # a copy: the
            invstd = 1.0 / np.sqrt(_opmath(running_var) + eps)  # buffers may change before backward
            xc = B.ufunc(np.subtract, x3, mean[:, None])
            scale = invstd if weight is None else invstd * _opmath(weight)
            np.multiply(xc, scale[:, None], out=xc)  # xc is a fresh array: it becomes the output
            if bias is not None:
                xc += _opmath(bias)[:, None]
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.args = (training, shape, eps)
        return xc.astype(x.dtype, copy=False).reshape(shape)

    def backward(ctx, grad):
        x, weight, mean, invstd = ctx.saved_tensors
        training, shape, eps = ctx.args
        need = ctx.needs_input_grad
        if _state.enabled:
            return _batch_norm_grads_composite(grad, x, weight, mean, invstd, training, eps, need)
        g3 = _opmath(grad._data).reshape(shape[0], shape[1], -1)
        x3 = _opmath(x._data).reshape(g3.shape)
        s = invstd._data
        w = None if weight is None else _opmath(weight._data)
        gx, sum_g, sum_gxc = _bn_kernels(g3).train_grads(g3, x3, mean._data, s, w, training and need[0])
        gw = _cast(sum_gxc * s, weight) if weight is not None and need[1] else None
        gb = _make(sum_g) if len(need) > 2 and need[2] else None  # the engine casts to bias's dtype
        if need[0]:
            if not training:
                gx = g3 * (s if w is None else s * w)[:, None]
            gx = _make(gx.astype(x._data.dtype, copy=False).reshape(shape), x._dtype)
        return gx, gw, gb


def _cast(arr, like):
    return _make(arr.astype(like._data.dtype, copy=False), like._dtype)


def _update_running(buf, stat, momentum):
    """buf = (1 - momentum) * buf + momentum * stat, in place."""
    buf *= 1 - momentum
    buf += (momentum * stat).astype(buf.dtype, copy=False)


def _channel_view(t, ndim):
    """A per-channel (C,) tensor shaped to broadcast against (N, C, *) of ndim dims."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm_grads_composite(grad, x, weight, mean, invstd, training, eps, need):
    """The gradients of BatchNorm with ember ops (see Note [Fused norm backward])."""
    nd = x.dim()
    dims = (0,) + tuple(range(2, nd))
    if training:
        mean_b = x.mean(dims, keepdim=True)
        xc = x - mean_b
        invstd_b = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        xc = x - _channel_view(mean, nd)
        invstd_b = _channel_view(invstd, nd)
    xhat = xc * invstd_b
    gx = gw = gb = None
    if need[0]:
        gy = grad if weight is None else grad * _channel_view(weight, nd)
        if training:
            gx = (gy - gy.mean(dims, keepdim=True) - xhat * (gy * xhat).mean(dims, keepdim=True)) * invstd_b
        else:
            gx = gy * invstd_b
    if weight is not None and need[1]:
        gw = (grad * xhat).sum(dims)
    if len(need) > 2 and need[2]:
        gb = grad.sum(dims)
    return gx, gw, gb


def _check_channels(name, t, c):
    if t is not None and t._data.size != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")


def _check_param_dtype(input, tensors):
    """torch's CPU kernel: parameters share the input's dtype (float32 ones with half input)."""
    d = input._dtype
    for t in tensors:
        if t is None or t._dtype is d:
            continue
        if d.itemsize == 2 and t._dtype is D.float32:
            continue
        if d is D.float32 or d.itemsize == 2:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.batch_norm.html"""
    if training:
        if input.dim() < 2 and input.numel():
            _wrap_dim(1, input.dim())  # torch's IndexError: training needs a channel dim (empty input: none)
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    _float_only(input, "batch_norm")
    c = input.size(1) if input.dim() > 1 else 0  # torch counts no channels in a 1-d input
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    if not training and running_var is None:
        raise RuntimeError("running_var must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        _check_channels(name, t, c)  # torch's order
    _check_param_dtype(input, (weight, bias, running_mean, running_var))
    if input._data.size == 0:  # as torch: no statistics; the output keeps a gradient path to the parameters
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    rm = None if running_mean is None else running_mean._data.reshape(-1)
    rv = None if running_var is None else running_var._data.reshape(-1)
    out = BatchNorm.apply(input, _flat(weight), _flat(bias), running_mean=rm, running_var=rv,
                          training=bool(training), momentum=momentum, eps=eps)
    if training:
        for buf in (running_mean, running_var):
            if buf is not None:
                buf._version_counter.value += 1
    return out


def _flat(t):
    return t if t is None or t.dim() == 1 else t.reshape(-1)


# ---- instance_norm: batch_norm over (1, N*C, *) ---------------------------------------------

def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each (sample, channel) plane normalized by its own statistics: batch_norm on the input
    seen as one sample of N*C channels; running buffers get the average over the batch.
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.instance_norm.html"""
    if use_input_stats:
        _verify_spatial_size(input.size())
    shape = tuple(input.shape)
    n, c = shape[0], shape[1]
    folded = input.reshape((1, n * c) + shape[2:])
    w = None if weight is None else weight.repeat(n)
    b = None if bias is None else bias.repeat(n)
    rm = None if running_mean is None else running_mean.repeat(n)
    rv = None if running_var is None else running_var.repeat(n)
    out = batch_norm(folded, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        for buf, rep in ((running_mean, rm), (running_var, rv)):
            if buf is not None:
                buf._data[...] = rep._data.reshape(n, c).mean(0).astype(buf._data.dtype)
                buf._version_counter.value += 1
    return out.reshape(shape)


# ---- layer_norm ----------------------------------------------------------------------------

# Note [Row blocks]: the layer-norm kernels make ~6 elementwise passes over their rows
# (NumPy cannot fuse them). Running all passes on a block of rows of about 1 MiB at a time
# keeps the block in cache between passes: measured ~20% faster forward and ~30% faster
# backward on 4096x512 float32 than whole-array passes.
# The blocks are also the unit of the thread split (Note [Row pieces] in ember/_backend/parallel.py): each
# intra-op thread runs all passes on one contiguous range of blocks. The blocks do not depend on the thread
# count (work worth a split has at least two), and the weight and bias gradients add the blocks' partial
# sums in block order, so the results are the same on any number of threads.
_BLOCK_BYTES = 1 << 20


# The compiled kernels make 2-3 passes where the NumPy blocks make 6-11, so they weigh their bytes once, not
# ROW_WEIGHT times (0 still keeps them whole): fwd+bwd on 256x1024 float32 (1 MB) at 2 threads, alternating in one
# process, medians of 10 rounds, 0.80 ms whole against 1.10 split (1.45 against 1.71 with a GEMM just before);
# from 2 MB the split still wins (1024x1024: 3.13 split, 4.00 whole).
_JIT_WEIGHT = 1


def _row_blocks(rows, inner, itemsize, compiled=False):
    """(rows per block, number of blocks, the work for parallel.run) of a layer-norm kernel, compiled or not."""
    weight = min(parallel.ROW_WEIGHT, _JIT_WEIGHT) if compiled else parallel.ROW_WEIGHT
    work = rows * inner * itemsize * weight
    step = max(1, _BLOCK_BYTES // max(1, inner * 4))
    if work >= parallel._MIN_BYTES:
        step = min(step, max(1, -(-rows // 2)))
    return step, -(-rows // step), work


def _ln_kernels(x2, inner):
    """The compiled layer-norm kernels (ember/_backend/layernorm_jit.py, Note [JIT kernels]) for float32/float64
    rows, or None."""
    if x2.dtype not in jit.DTYPES or not inner or not x2.shape[0]:
        return None
    return jit.load("layernorm_jit")


class LayerNorm(Op):
    """y = (x - mean) * invstd * weight + bias, statistics over the last k dims of x."""
    _name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, k, eps):
        shape = x.shape
        inner = math.prod(shape[x.ndim - k:])
        x2 = _opmath(x).reshape(-1, inner)
        rows = x2.shape[0]
        out = B.empty(x2.shape, x2.dtype)
        mean = np.empty(rows, dtype=x2.dtype)
        invstd = np.empty(rows, dtype=x2.dtype)
        w = None if weight is None else _opmath(weight).reshape(-1)
        b = None if bias is None else _opmath(bias).reshape(-1)
        kernels = _ln_kernels(x2, inner)
        step, blocks, work = _row_blocks(rows, inner, x2.itemsize, kernels is not None)

        def run_blocks(first, last):
            for i in range(first * step, min(rows, last * step), step):
                xs = x2[i:i + step]
                o = out[i:i + step]
                m = np.einsum("mk->m", xs) / inner if inner else np.full(len(xs), np.nan, xs.dtype)
                np.subtract(xs, m[:, None], out=o)
                var = np.einsum("mk,mk->m", o, o) / inner if inner else m
                s = 1.0 / np.sqrt(var + eps)
                o *= s[:, None]
                if w is not None:
                    o *= w
                if b is not None:
                    o += b
                mean[i:i + step] = m
                invstd[i:i + step] = s
        if kernels is not None:  # compiled (ember/_backend/layernorm_jit.py): rows split across the threads
            x2 = np.ascontiguousarray(x2)
            wk, bk = jit.optional(w, x2.dtype), jit.optional(b, x2.dtype)
            parallel.run(lambda r0, r1: kernels.forward(x2, wk, bk, float(eps), out, mean, invstd, r0, r1), rows, work)
        else:
            parallel.run(run_blocks, blocks, work)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.args = (k, shape, eps)
        return out.astype(x.dtype, copy=False).reshape(shape)

    def backward(ctx, grad):
        x, weight, mean, invstd = ctx.saved_tensors
        k, shape, eps = ctx.args
        need = ctx.needs_input_grad
        if _state.enabled:
            return _layer_norm_grads_composite(grad, x, weight, k, eps, need)
        inner = math.prod(shape[len(shape) - k:])
        g2 = _opmath(grad._data).reshape(-1, inner)
        x2 = _opmath(x._data).reshape(g2.shape)
        rows = g2.shape[0]
        w = None if weight is None else _opmath(weight._data).reshape(-1)
        want_w = weight is not None and need[1]
        want_b = bias_needed(need)
        # gx is made in the input's shape (the 2-D rows view it) so that .grad can take the buffer uncopied
        gx_out = B.empty(shape, g2.dtype) if need[0] else None
        gx = None if gx_out is None else gx_out.reshape(g2.shape)
        kernels = _ln_kernels(g2, inner)
        step, blocks, work = _row_blocks(rows, inner, g2.itemsize, kernels is not None)
        if kernels is not None:  # compiled: every block's partial sums kept, added in block order
            g2, x2 = np.ascontiguousarray(g2), np.ascontiguousarray(x2, dtype=g2.dtype)
            parts = [np.empty((blocks, inner), dtype=g2.dtype) if want else None for want in (want_w, want_b)]
            args = (g2, x2, mean._data, invstd._data, jit.optional(w, g2.dtype), jit.optional(gx, g2.dtype, 2),
                    jit.optional(parts[0], g2.dtype, 2), jit.optional(parts[1], g2.dtype, 2), step)
            parallel.run(lambda b0, b1: kernels.backward(*args, b0, b1), blocks, work)
            # axis 0 of a C-ordered array adds its rows one after another: block order
            sums = [None if p is None else np.add.reduce(p, axis=0) for p in parts]
            return _layer_norm_results(gx_out, sums, x, weight, grad, shape, k)
        # the blocks' partial sums of the weight and bias gradients: added up in place on one thread, kept
        # per block and added in block order after a split (the same sums either way)
        split = len(parallel.chunks(blocks, work)) > 1
        sums = [np.zeros(inner, dtype=g2.dtype) if want else None for want in (want_w, want_b)]
        parts = [np.empty((blocks, inner), dtype=g2.dtype) if want and split else None for want in (want_w, want_b)]

        def add(j, which, value):
            if parts[which] is not None:
                parts[which][j] = value
            else:
                sums[which] += value

        def run_blocks(first, last):
            xhat = np.empty((min(step, rows), inner), dtype=g2.dtype)
            for j in range(first, last):
                i = j * step
                g = g2[i:i + step]
                t = xhat[:len(g)]
                s = invstd._data[i:i + step, None]
                np.subtract(x2[i:i + step], mean._data[i:i + step, None], out=t)
                t *= s
                if want_w:
                    add(j, 0, np.einsum("mk,mk->k", g, t))
                if want_b:
                    add(j, 1, np.einsum("mk->k", g))
                if gx is None:
                    continue
                # gx = (gy - mean(gy) - xhat * mean(gy * xhat)) * invstd with gy = g * w
                o = gx[i:i + step]
                if w is None:
                    o[...] = g
                else:
                    np.multiply(g, w, out=o)
                c1 = np.einsum("mk,mk->m", o, t) / inner
                c0 = np.einsum("mk->m", o) / inner
                t *= c1[:, None]
                o -= t
                o -= c0[:, None]
                o *= s
        parallel.run(run_blocks, blocks, work)
        for total, part in zip(sums, parts):
            if part is not None:
                for p in part:
                    total += p
        return _layer_norm_results(gx_out, sums, x, weight, grad, shape, k)


def _layer_norm_results(gx, sums, x, weight, grad, shape, k):
    """LayerNorm's (input, weight, bias) gradients as tensors from the computed arrays (None where not wanted)."""
    gw, gb = sums
    if gw is not None:
        gw = _cast(B.shaped(gw, weight.shape), weight)
    if gb is not None:
        gb = _make(B.shaped(gb.astype(grad._data.dtype, copy=False), shape[len(shape) - k:]))
    if gx is not None:
        gx = _make(gx.astype(x._data.dtype, copy=False), x._dtype)
    return gx, gw, gb


def bias_needed(need):
    return len(need) > 2 and need[2]


def _layer_norm_grads_composite(grad, x, weight, k, eps, need):
    """The gradients of LayerNorm with ember ops (see Note [Fused norm backward])."""
    dims = tuple(range(x.dim() - k, x.dim()))
    lead = x.dim() - k
    xc = x - x.mean(dims, keepdim=True)
    var = (xc * xc).mean(dims, keepdim=True)
    invstd_b = (var + eps).rsqrt()
    xhat = xc * invstd_b
    gx = gw = gb = None
    if need[0]:
        gy = grad if weight is None else grad * weight
        gx = (gy - gy.mean(dims, keepdim=True) - xhat * (gy * xhat).mean(dims, keepdim=True)) * invstd_b
    if weight is not None and need[1]:
        gw = (grad * xhat).sum(tuple(range(lead))) if lead else grad * xhat
    if bias_needed(need):
        gb = grad.sum(tuple(range(lead))) if lead else grad
    return gx, gw, gb


def _shape_list(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _normalized_shape(normalized_shape, name):
    if isinstance(normalized_shape, numbers.Integral) or not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(f"{name}(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    err = ints_error(name, "normalized_shape", normalized_shape, 2)
    if err is not None:
        raise err
    return tuple(int(s) for s in normalized_shape)


def _check_normalized(input, ns, sep=", "):
    k = len(ns)
    if k == 0:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {_shape_list(ns)}")
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={_shape_list(ns)}, expected input with shape "
                           f"[*{sep}{', '.join(str(s) for s in ns)}], but got input of size{_shape_list(input.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.layer_norm.html"""
    ns = _normalized_shape(normalized_shape, "layer_norm")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{_shape_list(t.shape)} and normalized_shape = {_shape_list(ns)}")
    _check_normalized(input, ns)
    _float_only(input, "LayerNormKernelImpl")
    _check_param_dtype(input, (weight, bias))
    return LayerNorm.apply(input, weight, bias, k=len(ns), eps=eps)


# ---- group_norm: layer_norm over (N, G, C/G * spatial) ---------------------------------------

def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.group_norm.html"""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    shape = tuple(input.shape)
    n, c = shape[0], shape[1]
    _verify_batch_size([n * c // num_groups, num_groups] + list(shape[2:]))
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {_shape_list(shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {_shape_list(t.shape)} and input of shape "
                               f"{_shape_list(shape)}")
    _float_only(input, "group_norm")
    per_group = c // num_groups * math.prod(shape[2:])  # explicit: reshape(n, g, -1) is ambiguous when n == 0
    y = LayerNorm.apply(input.reshape(n, num_groups, per_group), None, None, k=1, eps=eps).reshape(shape)
    if weight is not None:
        y = y * _channel_view(weight, len(shape))
    if bias is not None:
        y = y + _channel_view(bias, len(shape))
    return y


# ---- rms_norm, local_response_norm (composites) ----------------------------------------------

def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims (eps: the dtype's machine epsilon).
    See https://pytorch.org/docs/stable/generated/torch.nn.functional.rms_norm.html"""
    ns = _normalized_shape(normalized_shape, "rms_norm")
    _check_normalized(input, ns, sep="")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{_shape_list(weight.shape)} and normalized_shape = {_shape_list(ns)}")
    if input._dtype.category != D.COMPLEX:  # torch's composite takes complex too (x * x, not |x|^2)
        _float_only(input, "rms_norm")
    if eps is None:
        eps = D.finfo(input._dtype).eps
    dims = tuple(range(input.dim() - len(ns), input.dim()))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over a window of `size` channels) ** beta, the window zero-padded
    (size // 2 before, (size - 1) // 2 after). See torch.nn.functional.local_response_norm."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    window = None
    for shift in range(-before, after + 1):
        lo = max(0, -shift)
        hi = min(c, c - shift)
        if hi <= lo:
            continue
        part = sq.narrow(1, lo + shift, hi - lo)
        part = _pad_channels(part, lo, c - hi)
        window = part if window is None else window + part
    if window is None:
        window = sq * 0
    if input.dtype.is_floating_point or input.dtype.is_complex:
        div = (window * (alpha / size) + k) ** beta
    else:  # torch averages the integer squares with avg_pool (integer division), then scales in float
        div = ((window // size) * alpha + k) ** beta
    return input / div


def _pad_channels(t, before, after):
    """t zero-padded along dim 1 (differentiable: a cat with constant zeros)."""
    if not before and not after:
        return t
    from .joining import cat
    from .creation import zeros
    parts = []
    shape = list(t.shape)
    if before:
        shape[1] = before
        parts.append(zeros(shape, dtype=t.dtype))
    parts.append(t)
    if after:
        shape[1] = after
        parts.append(zeros(shape, dtype=t.dtype))
    return cat(parts, 1)


FUNCTIONAL = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "local_response_norm"]


# ---- torch.* names ---------------------------------------------------------------------------

def _torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                         cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _torch_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


def _torch_rms_norm(input, normalized_shape, weight=None, eps=None):
    return rms_norm(input, normalized_shape, weight, eps)


for _fn, _n in ((_torch_batch_norm, "batch_norm"), (_torch_instance_norm, "instance_norm"),
                 (_torch_layer_norm, "layer_norm"), (_torch_group_norm, "group_norm"), (_torch_rms_norm, "rms_norm")):
    _fn.__name__ = _fn.__qualname__ = _n
    install(_fn, _n, method=False)
del _fn, _n
