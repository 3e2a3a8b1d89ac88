"""DLPack on NumPy: capsules out of and arrays in from other libraries, zero-copy.

NumPy implements the protocol itself, except for bfloat16 (ml_dtypes), which it refuses. Note [bfloat16
through DLPack]: a bfloat16 array is exported as NumPy's uint16 capsule with the DLTensor's type code
rewritten to kDLBfloat; an incoming kDLBfloat capsule has its code rewritten to kDLUInt before NumPy reads
it, and the array is viewed as bfloat16. Same bits, same memory, so no copy either way.
"""
import ctypes

import ml_dtypes
import numpy as np

KDL_CPU = 1
_KDL_UINT = 1
_KDL_BFLOAT = 4

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]

# byte offset of DLTensor.dtype.code: DLTensor starts the unversioned DLManagedTensor; the versioned one has
# version (8 bytes), manager_ctx, deleter and flags (8 each) before it; in DLTensor, data (8), device (8) and
# ndim (4) come before dtype
_DTYPE_CODE_AT = {b"dltensor": 20, b"dltensor_versioned": 52}


def _code_byte(capsule):
    """The capsule's DLTensor type code as a writable ctypes byte (None for a used or unknown capsule)."""
    name = _get_name(capsule)
    if name not in _DTYPE_CODE_AT:
        return None
    base = _get_pointer(capsule, name)
    return ctypes.c_uint8.from_address(base + _DTYPE_CODE_AT[name])


def export(arr, max_version, dl_device, copy):
    """A DLPack capsule of arr (ndarray), as NumPy's __dlpack__ makes it; bfloat16 included."""
    bf16 = arr.dtype == ml_dtypes.bfloat16
    src = arr.view(np.uint16) if bf16 else arr
    if max_version is None:
        capsule = src.__dlpack__(dl_device=dl_device, copy=copy)  # NumPy's unversioned capsule
    else:
        capsule = src.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)
    if bf16:
        _code_byte(capsule).value = _KDL_BFLOAT
    return capsule


class _Producer:
    """Hands one capsule to np.from_dlpack, which asks an object for it."""

    def __init__(self, capsule, device):
        self.capsule = capsule
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def _capsule_to_array(capsule, device):
    code = _code_byte(capsule)
    bf16 = code is not None and code.value == _KDL_BFLOAT
    if bf16:
        code.value = _KDL_UINT
    arr = np.from_dlpack(_Producer(capsule, device))
    return arr.view(ml_dtypes.bfloat16) if bf16 else arr


def from_capsule(capsule):
    """The ndarray viewing a (legacy, torch.utils.dlpack.to_dlpack) capsule's memory. NumPy marks arrays
    from unversioned capsules read-only (they carry no read-only flag); torch writes through them, so the
    same memory is viewed again writable, keeping NumPy's array (and with it the capsule) alive."""
    arr = _capsule_to_array(capsule, (KDL_CPU, 0))
    if arr.flags.writeable or arr.size == 0:
        return arr
    span = arr.itemsize + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides))
    buffer = (ctypes.c_char * span).from_address(arr.__array_interface__["data"][0])
    buffer.owner = arr
    return np.ndarray(arr.shape, arr.dtype, buffer=buffer, strides=arr.strides)


def from_producer(obj, copy):
    """The ndarray viewing the memory of an object with __dlpack__ (a copy when copy=True), asking for a
    versioned capsule first and falling back the way torch.from_dlpack does for older producers."""
    device = obj.__dlpack_device__()
    kwargs = {"max_version": (1, 0)}
    if copy is not None:
        kwargs["copy"] = copy
    try:
        capsule = obj.__dlpack__(**kwargs)
    except TypeError:
        kwargs.pop("max_version")
        try:
            capsule = obj.__dlpack__(**kwargs)
        except TypeError:
            capsule = obj.__dlpack__()
            arr = _capsule_to_array(capsule, device)
            return arr.copy() if copy else arr  # the producer could not copy: copy here
    return _capsule_to_array(capsule, device)
