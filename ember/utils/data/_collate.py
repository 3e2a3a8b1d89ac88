"""default_collate / default_convert: turn a list of samples into a batch (torch.utils.data._utils.collate).

`collate(batch, collate_fn_map=...)` dispatches on the type of the first sample: the map gives
a function for leaf types (tensor, NumPy array or scalar, float, int, str, bytes); containers
(Mappings, namedtuples, sequences) are collated field by field, recursively.
"""
import collections
import copy
import re

import numpy as np

from ... import _dtype as D
from ... import as_tensor, stack, tensor
from ..._shared_memory import stack_shared
from ..._tensor import Tensor
from ._worker import get_worker_info

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

# NumPy dtype codes of strings, bytes and objects: arrays of these are not turned into tensors
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                  "lists; found {}")


def default_convert(data):
    """Convert NumPy arrays and scalars (also inside containers) to tensors, without batching."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # tuples become lists, as in torch
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(like, values):
    """A mapping of like's type holding values (a plain dict if the type can't be built that way)."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)  # keeps the type and any extra attributes (e.g. defaultdict's factory)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuild_sequence(like, values):
    """A sequence of like's type holding values (a list if the type can't be built that way)."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map=None):
    """Collate a list of samples; leaf types are looked up in collate_fn_map (exact type, then isinstance)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for leaf_type, fn in collate_fn_map.items():
            if isinstance(elem, leaf_type):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # each column is a tuple (as zip gives it): string columns come back as tuples, as in torch
        columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # tuples become lists, as in torch
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    if get_worker_info() is not None:
        # in a DataLoader worker: stack straight into shared memory, so the batch reaches the main process uncopied
        out = stack_shared(batch)
        if out is not None:
            return out
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars keep their dtypes, promoted together by torch's rules (int32 + float32 -> float32)."""
    dtype = None
    for x in batch:
        d = D.from_numpy_dtype(np.asarray(x).dtype)
        dtype = d if dtype is None else D.promote_types(dtype, d)
    return tensor(np.array(batch, dtype=dtype.np), dtype=dtype)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    # bool is an int: a batch of bools is a bool tensor; a float later in the batch gives the default dtype
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """torch's default batching: stack tensors, arrays and numbers along a new dim 0; recurse into containers."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
