"""The safetensors format with safetensors.torch's API: save_file, load_file, save, load.

Written here rather than on the `safetensors` package: the format is an 8-byte little-endian header length,
a JSON header (dtype, shape, byte offsets per tensor; "__metadata__" strings), padded with spaces to 8
bytes, then the raw bytes. The package's NumPy API has no bfloat16, and ember needs no extra dependency for
forty lines. Files are byte-identical to safetensors.torch's (same tensor order: dtype, then name).
"""
import json
import os
import struct

import numpy as np

from .. import _dtype as D
from .._layout import strided
from .._tensor import Tensor


class SafetensorError(Exception):
    """safetensors.SafetensorError: a malformed file or buffer."""


# format name of each ember dtype, in the order the format's writer sorts tensors by (largest first);
# complex128 and the float8 types have no ember dtype or no format name
_CODES = {D.float64: "F64", D.int64: "I64", D.complex64: "C64", D.float32: "F32", D.int32: "I32",
          D.bfloat16: "BF16", D.float16: "F16", D.int16: "I16", D.int8: "I8", D.uint8: "U8", D.bool: "BOOL",
          D.uint64: "U64", D.uint32: "U32", D.uint16: "U16"}
_RANK = {"U64": 0, "I64": 1, "F64": 2, "C64": 3, "F32": 4, "U32": 5, "I32": 6, "BF16": 7, "F16": 8, "U16": 9,
         "I16": 10, "I8": 15, "U8": 16, "BOOL": 20}  # Rust's Dtype enum order, reversed (gaps: float8/4/6)
_DTYPES = {code: d for d, code in _CODES.items()}
_MAX_HEADER = 100_000_000  # the reader's limit, as in the Rust crate


# ---- writing ------------------------------------------------------------------------

def _check(tensors, metadata):
    """safetensors.torch's checks, in its order and with its errors."""
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
    sparse = [k for k, v in tensors.items() if v.layout is not strided]
    if sparse:
        raise ValueError(f"You are trying to save a sparse tensors: `{sparse}` which this library does not support."
                         " You can make it a dense tensor before saving with `.to_dense()` but be aware this might"
                         " make a much larger file than needed.")
    failing = [names for names in _shared_groups(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(  # safetensors.torch's text, its indentation included
            "\n            Some tensors share memory, this will lead to duplicate memory on disk and potential "
            f"differences when loading them again: {failing}.\n            A potential way to correctly save your "
            "model is to use `save_model`.\n            More information at "
            "https://huggingface.co/docs/safetensors/torch_shared_tensors\n            ")
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It either "
                             "means you are trying to save tensors which are reference of each other in which case "
                             "it's recommended to save only the full tensors, and reslice at load time, or simply "
                             "call `.contiguous()` on your tensor to pack it before saving.")
        if v.dtype not in _CODES:
            raise KeyError(v.dtype)  # safetensors.torch has no size for it either
    for k in tensors:
        if not isinstance(k, str):
            raise TypeError(f"argument 'tensor_dict': '{type(k).__name__}' object is not an instance of 'str'")
    for k, v in (metadata or {}).items():
        for item in (k, v):
            if not isinstance(item, str):
                raise TypeError(f"argument 'metadata': '{type(item).__name__}' object is not an instance of 'str'")


def _shared_groups(tensors):
    """Names whose byte ranges overlap (safetensors' rule: sharing one storage is fine when the ranges are
    disjoint, e.g. two halves of a buffer)."""
    areas = []
    for name, t in tensors.items():
        arr = t._data
        if arr.size == 0:
            continue
        start = t.data_ptr()
        areas.append((start, start + arr.nbytes, name))
    areas.sort()
    groups = []
    last_stop = None
    for start, stop, name in areas:
        if last_stop is not None and start < last_stop:
            groups[-1].add(name)
            last_stop = max(last_stop, stop)
        else:
            groups.append({name})
            last_stop = stop
    return groups


def _serialize(tensors, metadata):
    """The header (with its length prefix and padding) and the tensors' arrays in file order."""
    _check(tensors, metadata)
    order = sorted(tensors, key=lambda name: (_RANK[_CODES[tensors[name].dtype]], name))
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    arrays = []
    offset = 0
    for name in order:
        t = tensors[name]
        arr = t._data if t._data.flags.c_contiguous else t._data.copy(order="C")
        header[name] = {"dtype": _CODES[t.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        arrays.append(arr)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text, arrays


def save(tensors, metadata=None):
    """safetensors.torch.save: the file's bytes."""
    head, arrays = _serialize(tensors, metadata)
    return b"".join([head] + [a.tobytes() for a in arrays])


def save_file(tensors, filename, metadata=None):
    """safetensors.torch.save_file: write the tensors (contiguous, not sharing memory) to filename."""
    head, arrays = _serialize(tensors, metadata)
    with open(filename, "wb") as f:
        f.write(head)
        for a in arrays:
            f.write(a.reshape(-1).view(np.uint8).data)


# ---- reading ------------------------------------------------------------------------

def _parse_header(prefix, total):
    """(entries by name in file order, start of the data) from the first bytes; checks the layout."""
    if total < 8:
        raise SafetensorError("Error while deserializing header: header too small")
    n = struct.unpack("<Q", prefix[:8])[0]
    if n > _MAX_HEADER:
        raise SafetensorError("Error while deserializing header: header too large")
    if 8 + n > total:
        raise SafetensorError("Error while deserializing header: invalid header length")
    raw = prefix[8:8 + n]
    if not raw.startswith(b"{"):
        raise SafetensorError("Error while deserializing header: invalid header start")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorError(f"Error while deserializing header: invalid JSON in header: {e}") from None
    header.pop("__metadata__", None)
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    expected = 0
    for name, info in entries:
        begin, end = info["data_offsets"]
        if begin != expected or end < begin:
            raise SafetensorError(f"Error while deserializing header: invalid offset for tensor {name}")
        code = info["dtype"]
        if code not in _DTYPES:
            raise SafetensorError(f"ember has no dtype for the safetensors type {code} (tensor {name})")
        d = _DTYPES[code]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if count * d.itemsize != end - begin:
            raise SafetensorError(f"Error while deserializing header: tensor {name} has an invalid shape/dtype "
                                  f"for its {end - begin} bytes")
        expected = end
    if 8 + n + expected != total:
        raise SafetensorError("Error while deserializing header: metadata incomplete buffer")
    return [(name, _DTYPES[info["dtype"]], info["shape"], info["data_offsets"][0]) for name, info in entries], 8 + n


def _check_device(device):
    """Only the CPU: other devices raise as ember.device does (an int means a CUDA index, as in safetensors)."""
    from .._device import as_device
    as_device(f"cuda:{device}" if isinstance(device, int) else device)


def load(data):
    """safetensors.torch.load: the tensors in a bytes object (each a copy it owns)."""
    entries, start = _parse_header(data, len(data))
    out = {}
    for name, d, shape, begin in entries:
        count = int(np.prod(shape, dtype=np.int64))
        arr = np.frombuffer(data, dtype=d.np, count=count, offset=start + begin).reshape(shape).copy()
        out[name] = Tensor._make(arr, d)
    return out


def load_file(filename, device="cpu", *, backend="mmap"):
    """safetensors.torch.load_file: the tensors of a file, each read into its own array ("mmap" and
    "pread" read the same bytes)."""
    if backend not in ("mmap", "pread"):
        raise ValueError(f"backend must be 'mmap' or 'pread', got {backend!r}")
    _check_device(device)
    total = os.path.getsize(filename)
    out = {}
    with open(filename, "rb") as f:
        prefix = f.read(8)
        if len(prefix) == 8:
            prefix += f.read(min(struct.unpack("<Q", prefix)[0], _MAX_HEADER + 1))
        entries, start = _parse_header(prefix, total)
        for name, d, shape, begin in entries:
            count = int(np.prod(shape, dtype=np.int64))
            f.seek(start + begin)
            arr = np.fromfile(f, dtype=d.np, count=count).reshape(shape)
            out[name] = Tensor._make(arr, d)
    return out
