"""Resampling and padding: F.interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), F.pad, pixel_shuffle/pixel_unshuffle, F.unfold/F.fold, F.grid_sample and F.affine_grid.

Note [Separable maps]: interpolation, non-constant padding and adaptive average pooling are chains
of per-axis linear maps out[.., o, ..] = sum_t w[t, o] * x[.., idx[t, o], ..]. AxisMaps applies
such a chain (a few gathers along one axis, no dense matrices); its backward is the transposed
chain (a sorted reduceat scatter per tap), whose backward is the chain again, so every order of
gradient works. Indices and weights are computed the way torch's CPU kernels compute them
(float32 index arithmetic for float32 and half inputs).
"""
import math
import operator
from collections.abc import Iterable

import numpy as np

from .. import _dtype as D
from .._backend import conv_numpy as K
from .._tensor import Tensor
from ..autograd import grad_mode
from ._argcheck import _is_int
from ._limited import refuse
from ._registry import Op, install
from .joining import stack

# ---- separable per-axis maps -------------------------------------------------------------


class AxisMaps(Op):
    """x through a chain of AxisMap (Note [Separable maps]). With keep_input the backward takes x as
    a (non-differentiating) input, so the gradient requires grad exactly when torch's does (torch's
    pooling and reflection/replication backward kernels take `self`)."""
    _name = "AxisMapsBackward0"

    @staticmethod
    def forward(ctx, x, maps, names, keep_input=False):
        ctx.maps = maps
        ctx.names = names
        if keep_input:
            ctx.save_for_backward(x)
        for m in maps:
            x = m.gather(x)
        return x

    def backward(ctx, grad):
        src = ctx.saved_tensors[0] if ctx._saved else None
        return _maps_t(ctx.names[1])(grad, src, maps=ctx.maps, names=ctx.names)


class AxisMapsT(Op):
    """The transposed chain: scatter through the maps in reverse order (src is not read)."""
    _name = "AxisMapsBackwardBackward0"

    @staticmethod
    def forward(ctx, g, src, maps, names):
        ctx.maps = maps
        ctx.names = names
        for m in reversed(maps):
            g = m.scatter(g)
        return g

    def backward(ctx, grad):
        return _maps(ctx.names[0])(grad, maps=ctx.maps, names=ctx.names), None


_NAMED = {}


def _named(base, name):
    """base with torch's grad_fn name (UpsampleBilinear2DBackward0, ReflectionPad1DBackward0 ...)."""
    key = (base, name)
    if key not in _NAMED:
        _NAMED[key] = type(name.replace("Backward", "_"), (base,), {"__slots__": (), "_name": name})
    return _NAMED[key].apply


def _maps(name):
    return _named(AxisMaps, name)


def _maps_t(name):
    return _named(AxisMapsT, name)


def apply_maps(input, maps, name, keep_input=False):
    """input through the chain `maps`, its node named `name` (torch's grad_fn name)."""
    return _maps(name)(input, maps=tuple(maps), names=(name, name.replace("Backward0", "BackwardBackward0")),
                       keep_input=keep_input)


# ---- padding ----------------------------------------------------------------------------------


class ConstantPad(Op):
    """Pad (or, with negative amounts, crop) the trailing dims with a constant. Its adjoint is the
    same op with the amounts negated, so it is its own backward."""
    _name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        ctx.pads = pads
        nd = len(pads) // 2
        lead = x.ndim - nd
        out_shape = list(x.shape[:lead])
        src, dst = [slice(None)] * lead, [slice(None)] * lead
        for i in range(nd):
            lo, hi = pads[2 * (nd - 1 - i)], pads[2 * (nd - 1 - i) + 1]
            size = x.shape[lead + i]
            new = size + lo + hi
            out_shape.append(new)
            src.append(slice(max(-lo, 0), size - max(-hi, 0)))
            dst.append(slice(max(lo, 0), new - max(hi, 0)))
        if value == 0:
            out = np.zeros(out_shape, dtype=x.dtype)
        else:
            out = np.full(out_shape, value, dtype=x.dtype)
        out[tuple(dst)] = x[tuple(src)]
        return out

    def backward(ctx, grad):
        return ConstantPad.apply(grad, pads=tuple(-p for p in ctx.pads), value=0)


def _pad_index(mode, size, lo, hi):
    """Source positions along one axis for reflect/replicate/circular padding by (lo, hi)."""
    if mode == "circular":
        start = max(-lo, 0)
        length = size - start - max(-hi, 0)
        j = np.arange(max(lo, 0) + length + max(hi, 0))
        return start + (j - max(lo, 0)) % length
    o = np.arange(-lo, size + hi)
    if mode == "replicate":
        return np.clip(o, 0, size - 1)
    o = np.abs(o)
    return (size - 1) - np.abs((size - 1) - o)


_PAD_NAMES = {"reflect": "ReflectionPad", "replicate": "ReplicationPad", "circular": "CircularPad"}
_PAD_KERNELS = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def _pad_shape_error(input, npad):
    return NotImplementedError(
        f"Padding size {npad} is not supported for {input.dim()}D input tensor.\nSupported combinations for "
        "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
        "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_nonconstant(input, pads, mode):
    nd = len(pads) // 2
    if nd not in (1, 2, 3) or input.dim() not in (nd + 1, nd + 2):
        raise _pad_shape_error(input, len(pads))
    shape = tuple(input.shape)
    if mode != "circular":
        lead = shape[:input.dim() - nd]
        if any(s == 0 for s in shape[1:]) or (len(lead) == 1 and lead[0] == 0):
            raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: {list(shape)}")
    if mode == "replicate" and input.dtype is D.bool:
        raise NotImplementedError(f"\"replication_pad{nd}d\" not implemented for 'Bool'")
    for i in range(nd):
        dim = input.dim() - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        size = shape[dim]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input {list(shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + lo + hi <= 0 and mode != "circular":
            axis = "WHD"[i]
            raise RuntimeError(f"input ({axis}: {size}) is too small. Calculated output {axis}: {size + lo + hi}")


def pad(input, pad, mode="constant", value=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.pad.html"""
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if pad.__class__ is not tuple and not isinstance(pad, (tuple, list)):  # tuple() would take a dict or a Tensor
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    pads = tuple(pad)
    for i, p in enumerate(pads):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    pads = tuple(int(p) for p in pads)
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pads)} and input of dimension {input.dim()}")
    if mode == "constant":
        nd = len(pads) // 2
        for i in range(nd):
            size = input.shape[input.dim() - 1 - i]
            if size + min(pads[2 * i], 0) + min(pads[2 * i + 1], 0) < 0:  # the cropped length
                raise RuntimeError("narrow(): length must be non-negative.")
        return ConstantPad.apply(input, pads=pads, value=0 if value is None else value)
    if mode not in _PAD_NAMES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    _check_nonconstant(input, pads, mode)
    nd = len(pads) // 2
    maps = []
    for i in range(nd):
        axis = input.dim() - 1 - i
        idx = _pad_index(mode, input.shape[axis], pads[2 * i], pads[2 * i + 1])
        maps.append(K.AxisMap(axis, idx[None], None, input.shape[axis]))
    return apply_maps(input, maps, f"{_PAD_NAMES[mode]}{nd}DBackward0", keep_input=mode != "circular")


# ---- interpolate ------------------------------------------------------------------------------


def _opmath_dtype(dtype):
    """The float type torch computes source indices in: float32 for float32/half inputs, else float64."""
    return np.float64 if dtype is D.float64 else np.float32


def _scale_for(ft, in_size, out_size, scale):
    """torch's compute_scales_value: 1/scale_factor when one was given, else in/out."""
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(in_size) / ft(out_size)


def _nearest_index(in_size, out_size, scale, exact):
    if not exact and out_size == in_size:
        return np.arange(out_size)
    if not exact and out_size == 2 * in_size:
        return np.arange(out_size) >> 1
    s = _scale_for(np.float32, in_size, out_size, scale)
    if exact:
        src = ((np.arange(out_size, dtype=np.float64) + 0.5) * np.float64(s)).astype(np.float32)
    else:
        src = np.arange(out_size, dtype=np.float32) * s
    return np.minimum(np.floor(src).astype(np.int64), in_size - 1)


def _area_scale(ft, in_size, out_size, align_corners, scale):
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    return _scale_for(ft, in_size, out_size, scale)


def _source_index(ft, s, out_size, align_corners, cubic):
    dst = np.arange(out_size, dtype=ft)
    if align_corners:
        return s * dst
    src = s * (dst + ft(0.5)) - ft(0.5)
    return src if cubic else np.maximum(src, ft(0))


def _linear_weights(ft, in_size, out_size, align_corners, scale):
    if in_size == out_size:  # torch copies a dim whose size does not change, whatever the scale factor
        idx = np.arange(out_size)
        return np.stack([idx, idx]), np.stack([np.ones(out_size, ft), np.zeros(out_size, ft)])
    s = _area_scale(ft, in_size, out_size, align_corners, scale)
    src = _source_index(ft, s, out_size, align_corners, False)
    i0 = np.minimum(src.astype(np.int64), in_size - 1)
    lam1 = np.clip(src - i0.astype(ft), ft(0), ft(1))
    i1 = i0 + (i0 < in_size - 1)
    return np.stack([i0, i1]), np.stack([ft(1) - lam1, lam1])


_A = -0.75  # torch's bicubic coefficient


def _cubic_weights(ft, in_size, out_size, align_corners, scale):
    s = _area_scale(ft, in_size, out_size, align_corners, scale)
    src = _source_index(ft, s, out_size, align_corners, True)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    t = np.clip(src - i0.astype(ft), ft(0), ft(1))
    a = ft(_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])
    idx = np.stack([np.clip(i0 - 1 + j, 0, in_size - 1) for j in range(4)])
    return idx, w.astype(ft)


def _area_map(in_size, out_size):
    """adaptive average pooling along one axis: window [floor(o*in/out), ceil((o+1)*in/out))."""
    o = np.arange(out_size)
    start = (o * in_size) // out_size
    end = -((-(o + 1) * in_size) // out_size)
    length = end - start
    taps = int(length.max()) if out_size else 1  # an empty output still has one (empty) tap
    t = np.arange(taps)[:, None]
    idx = np.minimum(start[None] + t, end[None] - 1)
    w = np.where(t < length[None], 1.0 / length[None], 0.0)
    return idx, w


_MODE_NAMES = {"nearest": "UpsampleNearest", "nearest-exact": "UpsampleNearestExact", "linear": "UpsampleLinear",
               "bilinear": "UpsampleBilinear", "bicubic": "UpsampleBicubic", "trilinear": "UpsampleTrilinear"}


def _resample(input, sizes, scales, mode, align_corners):
    """The separable-map chain of one interpolate call."""
    ft = _opmath_dtype(input.dtype)
    nd = len(sizes)
    maps = []
    for i in range(nd):
        axis = input.dim() - nd + i
        in_size = input.shape[axis]
        scale = scales[i] if scales is not None else None
        if mode in ("nearest", "nearest-exact"):
            maps.append(K.AxisMap(axis, _nearest_index(in_size, sizes[i], scale, mode == "nearest-exact")[None], None,
                                in_size))
        elif mode == "bicubic":
            idx, w = _cubic_weights(ft, in_size, sizes[i], align_corners, scale)
            maps.append(K.AxisMap(axis, idx, w, in_size))
        else:
            idx, w = _linear_weights(ft, in_size, sizes[i], align_corners, scale)
            maps.append(K.AxisMap(axis, idx, w, in_size))
    x = input
    if input.dtype.itemsize == 2 and input.dtype.is_floating_point and mode not in ("nearest", "nearest-exact"):
        x = input.float()  # half inputs interpolate in float32 (torch's opmath)
    out = apply_maps(x, maps, f"{_MODE_NAMES[mode]}{nd}DBackward0")
    return out if out.dtype is input.dtype else out.to(input.dtype)


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode):
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
            if not all(isinstance(s, (int, np.integer)) or _is_int(s) for s in size):  # torch's _is_integer
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(s) for s in size]}")
            sizes = [int(s) for s in size]
        elif dim == 0:
            sizes = []  # as torch: nothing is read when there is no spatial dim
        elif not _is_int(size):  # torch hands [size] * dim to its C-level kernel, whose parser takes no float
            raise TypeError(f"interpolate(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(size).__name__} at pos 0")
        else:
            sizes = [int(size)] * dim
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            try:
                scales = [float(scale_factor)] * dim
            except (TypeError, ValueError):
                if dim > 0:
                    raise
                scales = []
        sizes = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and sizes is None:
        recompute_scale_factor = True
    if recompute_scale_factor and scales is not None:
        sizes = [math.floor(float(input.shape[i + 2]) * scales[i]) for i in range(dim)]
        scales = None
    if sizes is None:
        sizes = [int(math.floor(input.shape[i + 2] * scales[i])) for i in range(dim)]
    return sizes, scales


_NEED_DIM = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html"""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    sizes, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode)  # torch's order
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.dim() == 4):
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                             "4-D tensor as input")
        raise NotImplementedError("ember: interpolate(antialias=True) is not implemented")
    if input.dim() not in (3, 4, 5) or (mode not in _NEED_DIM and mode not in ("nearest", "nearest-exact", "area")):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  "nearest-exact "
                                  f"(got {mode})")
    if mode in _NEED_DIM and input.dim() != _NEED_DIM[mode]:
        want = _NEED_DIM[mode]
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want}D input")
    if any(s <= 0 for s in sizes):
        names = "DHW"[3 - len(sizes):]
        ins = ", ".join(f"{a}: {v}" for a, v in zip(names, input.shape[2:]))
        outs = ", ".join(f"{a}: {v}" for a, v in zip(names, sizes))
        sep = " and" if len(sizes) == 1 else ""
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}){sep} output "
                           f"({outs})")
    if mode == "area":
        from .pool import _adaptive_avg_pool
        return _adaptive_avg_pool(input, tuple(sizes), f"adaptive_avg_pool{input.dim() - 2}d")
    if input.dtype.category < D.FLOAT and not (input.dtype is D.uint8 and mode in ("nearest", "nearest-exact")):
        if input.dtype is D.uint8 and mode == "bilinear":
            # torch rounds through its own fixed-point uint8 kernel; ember does not reproduce it
            raise NotImplementedError("ember: interpolate(mode='bilinear') of uint8 input is not implemented")
        nd = input.dim() - 2
        kernel = {"nearest": f"upsample_nearest{nd}d", "nearest-exact": f"_upsample_nearest_exact{nd}d",
                  "linear": "upsample_linear1d", "bilinear": "upsample_bilinear2d", "bicubic": "upsample_bicubic2d",
                  "trilinear": "upsample_trilinear3d"}[mode]
        suffix = "_channels_last" if nd == 2 else "_out_frame"
        raise NotImplementedError(f"\"{kernel}{suffix}\" not implemented for '{_scalar(input.dtype)}'")
    return _resample(input, sizes, scales, mode, align_corners)


def _scalar(d):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}.get(d.name, d.name)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='nearest')."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pixel shuffle ----------------------------------------------------------------------------


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r). A composite of reshape and permute."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c, h, w = input.shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    refuse(input, "pixel_shuffle", empty_ok=True)
    lead = tuple(input.shape[:-3])
    n = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    c, h, w = input.shape[-3:]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w} "
                           f"is not divisible by {r}")
    refuse(input, "pixel_unshuffle", empty_ok=True)
    lead = tuple(input.shape[:-3])
    n = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(lead + (c * r * r, h // r, w // r))


install(pixel_shuffle, "pixel_shuffle", method=False)
install(pixel_unshuffle, "pixel_unshuffle", method=False)


# ---- unfold / fold (im2col / col2im) ----------------------------------------------------------


class Im2Col(Op):
    """(N, C, H, W) -> (N, C*kh*kw, L): every sliding block as a column (F.unfold)."""
    _name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, kernel, dilation, padding, stride, out):
        n, c, h, w = x.shape
        ctx.args = ((h, w), kernel, dilation, padding, stride)
        buf = K.padded(x.reshape(n * c, 1, h, w), padding, padding)
        view = K.windows(buf, kernel, stride, dilation, out)
        return np.ascontiguousarray(view).reshape(n, c * kernel[0] * kernel[1], out[0] * out[1])

    def backward(ctx, grad):
        size, kernel, dilation, padding, stride = ctx.args
        return Col2Im.apply(grad, size=size, kernel=kernel, dilation=dilation, padding=padding, stride=stride)


class Col2Im(Op):
    """(N, C*kh*kw, L) -> (N, C, H, W): columns summed back into their blocks (F.fold)."""
    _name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, size, kernel, dilation, padding, stride):
        n, ck, _ = cols.shape
        c = ck // (kernel[0] * kernel[1])
        out = tuple(K.conv_out_size(s, k, st, d, p, p) for s, k, st, d, p in zip(size, kernel, stride, dilation,
                                                                                 padding))
        ctx.args = (kernel, dilation, padding, stride, out)
        v = cols.reshape((n * c,) + tuple(kernel) + (1,) + out)
        crop = K.scatter_windows(v, kernel, stride, dilation, padding, padding, size)
        return np.ascontiguousarray(crop).reshape((n, c) + tuple(size))

    def backward(ctx, grad):
        kernel, dilation, padding, stride, out = ctx.args
        return Im2Col.apply(grad, kernel=kernel, dilation=dilation, padding=padding, stride=stride, out=out)


def _pair_arg(value, name):
    if isinstance(value, Iterable):  # torch's _pair: any iterable is a tuple of its items (a dict, a str ...)
        value = tuple(value)
        if len(value) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
        return tuple(operator.index(v) for v in value)
    return (operator.index(value),) * 2


def _check_block_args(kernel, dilation, padding, stride):
    checks = ((kernel, "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}", 1),
              (dilation, "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}", 1),
              (padding, "padding should be non-negative, but got pad_height: {} pad_width: {}", 0),
              (stride, "stride should be greater than zero, but got stride_height: {} stride_width: {}", 1))
    for values, message, low in checks:
        if any(v < low for v in values):
            raise RuntimeError(message.format(*values))


def _float_kernel(input, kernel):
    if input.dtype.category < D.FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar(input.dtype)}'")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.unfold.html"""
    kernel = _pair_arg(kernel_size, "kernel_size")
    dilation = _pair_arg(dilation, "dilation")
    padding = _pair_arg(padding, "padding")
    stride = _pair_arg(stride, "stride")
    _check_block_args(kernel, dilation, padding, stride)
    if input.dim() not in (3, 4) or any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    if input.dtype is not D.bool:  # torch's im2col kernel takes bool too (not integers)
        _float_kernel(input, "im2col_out_cpu")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    out = tuple(K.conv_out_size(s, k, st, d, p, p) for s, k, st, d, p in zip(size, kernel, stride, dilation, padding))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, calculated shape of the array of sliding blocks as {out}, but its "
                           "components must be at least one.")
    r = Im2Col.apply(x, kernel=kernel, dilation=dilation, padding=padding, stride=stride, out=out)
    return r if batched else r.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.fold.html"""
    size = _pair_arg(output_size, "output_size")
    kernel = _pair_arg(kernel_size, "kernel_size")
    dilation = _pair_arg(dilation, "dilation")
    padding = _pair_arg(padding, "padding")
    stride = _pair_arg(stride, "stride")
    _check_block_args(kernel, dilation, padding, stride)
    if input.dim() not in (2, 3) or any(s == 0 for s in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _float_kernel(input, "col2im_out_cpu")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    taps = kernel[0] * kernel[1]
    if x.shape[1] % taps:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={kernel}.")
    out = tuple(K.conv_out_size(s, k, st, d, p, p) for s, k, st, d, p in zip(size, kernel, stride, dilation, padding))
    if out[0] * out[1] != x.shape[2] or any(o < 1 for o in out):
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"stride={stride}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {out[0]} * {out[1]} = {out[0] * out[1]}, but got input.size(2)="
                           f"{x.shape[2]}.")
    r = Col2Im.apply(x, size=size, kernel=kernel, dilation=dilation, padding=padding, stride=stride)
    return r if batched else r.squeeze(0)


# ---- grid_sample / affine_grid ----------------------------------------------------------------


class GridSampler(Op):
    _name = "GridSampler2DBackward0"

    @staticmethod
    def forward(ctx, x, grid, mode, padding_mode, align_corners):
        ctx.save_for_backward(x, grid)
        ctx.args = (mode, padding_mode, align_corners)
        return K.grid_sample_forward(x, grid, mode, padding_mode, align_corners)

    def backward(ctx, grad):
        x, grid = ctx.saved_tensors
        need = ctx.needs_input_grad
        if grad_mode._state.enabled:  # create_graph: gradients that can be differentiated again
            gx, ggrid = _grid_backward_graph(grad, x, grid, *ctx.args)
        else:
            gx, ggrid = GridSamplerBackward.apply(grad, x, grid, args=ctx.args, need=(need[0], need[1]))
        return (gx if need[0] else None), (ggrid if need[1] else None)


class GridSamplerBackward(Op):
    """Both gradients of grid_sample in one NumPy pass (the first-order path)."""
    _name = "GridSampler2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, x, grid, args, need):
        return K.grid_sample_backward(g, x, grid, *args, need[0], need[1])


class _Through(Op):
    """value, recorded as also depending (with zero derivative) on a and b."""
    _name = "GridSampler2DBackwardBackward0"

    @staticmethod
    def forward(ctx, value, a, b):
        return value.copy()

    def backward(ctx, grad):
        return grad, None, None


def _grid_backward_graph(g, x, grid, mode, padding_mode, align_corners):
    """grid_sample's two gradients written with ember ops, the same quantities as
    K.grid_sample_backward. The source coordinate is piecewise linear in the grid (slope * grid +
    offset, slope 0 where border/reflection clamps), so the bilinear fractions stay differentiable."""
    n, c, h, w = x.shape
    raw_grid = grid._data
    points = raw_grid.shape[1] * raw_grid.shape[2]
    coords = []
    for k, size in ((0, w), (1, h)):
        raw = raw_grid[..., k].reshape(n, -1)
        pos, slope = K._grid_source(raw, size, padding_mode, align_corners)
        t = grid[..., k].reshape(n, -1) * Tensor._make(slope) + Tensor._make(pos - slope * raw)
        coords.append((t, pos, slope))
    (ix, ix_np, slope_x), (iy, iy_np, slope_y) = coords
    g3 = g.reshape(n, c, points)
    flat = x.reshape(n, c, h * w)
    gx = Tensor._make(np.zeros((n, c, h * w), dtype=x._data.dtype))
    gix = giy = None
    if mode == "nearest":
        corners = [(idx, None, ok, None, None) for idx, _, ok, _, _ in K._corners(ix_np, iy_np, h, w, mode)]
    else:
        fx = ix - Tensor._make(np.floor(ix_np))
        fy = iy - Tensor._make(np.floor(iy_np))
        terms = (((1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)), (fx * (1 - fy), 1 - fy, -fx),
                 ((1 - fx) * fy, -fy, 1 - fx), (fx * fy, fy, fx))
        corners = [(idx, wgt, ok, dwx, dwy) for (idx, _, ok, _, _), (wgt, dwx, dwy) in
                   zip(K._corners(ix_np, iy_np, h, w, mode), terms)]
    for idx, wgt, ok, dwx, dwy in corners:
        ok_t = Tensor._make(ok.astype(x._data.dtype))
        index = Tensor._make(np.ascontiguousarray(np.broadcast_to(idx[:, None, :], (n, c, points))))
        weight = ok_t if wgt is None else wgt * ok_t
        gx = gx.scatter_add(2, index, g3 * weight.unsqueeze(1))
        if dwx is not None:
            dot = (flat.gather(2, index) * g3).sum(1) * ok_t
            gix = dot * dwx if gix is None else gix + dot * dwx
            giy = dot * dwy if giy is None else giy + dot * dwy
    if gix is None:  # nearest: the grid gradient is zero; both results still hang off x and grid, as torch's
        ggrid = Tensor._make(np.zeros(raw_grid.shape, dtype=raw_grid.dtype))
        return _Through.apply(gx.reshape(x.shape), x, grid), _Through.apply(ggrid, x, grid)
    else:
        gx_grid = gix * Tensor._make(slope_x)
        gy_grid = giy * Tensor._make(slope_y)
        ggrid = stack([gx_grid, gy_grid], -1).reshape(raw_grid.shape)
    return gx.reshape(x.shape), ggrid


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                  "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                  "details.")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html
    (4-D input: bilinear, nearest and bicubic; 5-D input: bilinear (trilinear) and nearest)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        import warnings
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if input.shape[0] != grid.shape[0] or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != grid.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {grid.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(input.dtype)} but found {_scalar(grid.dtype)}")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dim() == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    _float_kernel(input, "grid_sampler_2d_cpu_kernel_impl" if input.dim() == 4 else "grid_sampler_3d_cpu")
    if input.dim() == 5:
        from .grid_volumetric import grid_sample_3d
        return grid_sample_3d(input, grid, mode, padding_mode, align_corners)
    if mode == "bicubic":
        from .grid_bicubic import grid_sample_bicubic
        return grid_sample_bicubic(input, grid, padding_mode, align_corners)
    return GridSampler.apply(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


def _linspace_from_neg_one(steps, align_corners, ft):
    if steps <= 1:
        return np.zeros(steps, dtype=ft)
    r = np.linspace(-1, 1, steps, dtype=np.float64)
    if not align_corners:
        r = r * (steps - 1) / steps
    return r.astype(ft)


def affine_grid(theta, size, align_corners=None):
    """See https://pytorch.org/docs/stable/generated/torch.nn.functional.affine_grid.html
    A composite: a constant base grid of [x, y, (z,) 1] rows times theta^T."""
    if align_corners is None:
        import warnings
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    if theta.shape[0] != n:
        k = theta.shape[-1]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {k}] but got: "
                           f"[{theta.shape[0]}, {k}].")
    ft = theta._data.dtype
    axes = [_linspace_from_neg_one(s, align_corners, ft) for s in reversed(spatial)]  # x, y, (z)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # each of the spatial shape, x first
    base = np.stack(list(mesh) + [np.ones(tuple(spatial), dtype=ft)], axis=-1).reshape(-1, len(spatial) + 1)
    grid = Tensor._make(base).matmul(theta.transpose(1, 2))
    return grid.reshape((n,) + tuple(spatial) + (len(spatial),))


FUNCTIONAL = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
              "pixel_unshuffle", "unfold", "fold", "grid_sample", "affine_grid"]
