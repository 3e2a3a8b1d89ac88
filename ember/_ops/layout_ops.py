"""Ops about memory layout: empty_permuted, Tensor.new_empty_strided, as_strided_scatter,
torch.resize_as_, constant_pad_nd (the kernel behind F.pad's constant mode), channel_shuffle."""
import numpy as np

from .._backend import numpy_cpu as B
from .._tensor import Tensor
from ._argcheck import guard
from ._limited import refuse
from ._registry import install
from .creation import _is_dense, empty_strided, size_args
from . import sampling
from .strided import StridedScatter


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of logical shape `size` whose memory runs over the dims in physical_layout
    order (the last one contiguous). See https://pytorch.org/docs/stable/generated/torch.empty_permuted.html"""
    shape = size_args((size,), "empty_permuted")
    perm = tuple(int(p) for p in physical_layout)
    if len(perm) != len(shape):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(shape)} is not equal to len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(shape))):
        raise RuntimeError("Duplicate dim not allowed")
    stride = [0] * len(shape)
    step = 1
    for p in reversed(perm):
        stride[p] = step
        step *= max(shape[p], 1)
    return empty_strided(shape, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """empty_strided with self's dtype unless given."""
    return empty_strided(size, stride, dtype=dtype or self._dtype, device=device, requires_grad=requires_grad)


class AsStridedScatter(StridedScatter):
    """StridedScatter under the name torch gives as_strided_scatter's node."""
    _name = "AsStridedScatterBackward0"


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input (same layout when dense) with the as_strided(size, stride, storage_offset) window
    of its memory set to src. See https://pytorch.org/docs/stable/generated/torch.as_strided_scatter.html"""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(size)}")
    x = input._data
    base_shape, base_strides = B.layout_of(x) if _is_dense(x) else B.layout_of(np.empty(x.shape, x.dtype))
    offset = 0 if storage_offset is None else int(storage_offset)
    extent = 1 + sum((n - 1) * s for n, s in zip(base_shape, base_strides)) if all(base_shape) else 0
    need = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if need > extent:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {x.itemsize} requiring a storage size of {need * x.itemsize} are out of bounds "
                           f"for storage of size {extent * x.itemsize}")
    if src._dtype is not input._dtype:
        src = src.to(input._dtype)
    return AsStridedScatter.apply(input, src, base_shape=base_shape, base_strides=base_strides, size=size,
                                  stride=stride, offset=offset)


def resize_as_(input, the_template, *, memory_format=None):
    """torch.resize_as_: Tensor.resize_as_ as a function."""
    return input.resize_as_(the_template, memory_format=memory_format)


def constant_pad_nd(input, pad, value=0):
    """F.pad(input, pad, 'constant', value) under its ATen name (pads the last dims, last dim first)."""
    pads = tuple(int(p) for p in pad)
    if len(pads) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pads)}")
    return sampling.pad(input, pads, "constant", value)


def channel_shuffle(input, groups):
    """(N, g*k, *) -> (N, k*g, *): channel c*k+j moves to j*g+c (ShuffleNet). A reshape-transpose composite.
    See https://pytorch.org/docs/stable/generated/torch.nn.ChannelShuffle.html"""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    refuse(input, "channel_shuffle", empty_ok=True)
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


install(channel_shuffle, "channel_shuffle", method=False, aliases=("native_channel_shuffle",))
install(empty_permuted, "empty_permuted", method=False)
install(new_empty_strided, "new_empty_strided", function=False)
install(as_strided_scatter, "as_strided_scatter")
install(resize_as_, "resize_as_", method=False)
Tensor.resize_as_ = guard(Tensor.resize_as_, "resize_as_", method=True)  # Note [Checked at the boundary]
install(constant_pad_nd, "constant_pad_nd", method=False)
