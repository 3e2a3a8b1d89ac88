"""THE backend seam: the array module of a device, and NumPy's sharp edges.

Only this package imports numpy for computation. Kernels receive `xp` (the array
module of the tensor's device) and use names NumPy and CuPy share. Anything
NumPy-specific lives in numpy_cpu.py as a named helper.
"""
import numpy as np

xp = np  # the cpu array module; a CUDA device would map to cupy here

ndarray = np.ndarray


def array_module(device=None):
    """The array module that holds tensors of `device` (numpy for cpu)."""
    return np


def as_array(x):
    """NumPy ufuncs return scalars for 0-d results; tensors always hold ndarrays."""
    if type(x) is np.ndarray:
        return x
    return np.asarray(x)


def scalar_array(value, np_dtype):
    """A Python scalar as a 0-d array of `np_dtype`, wrapping out-of-range ints like torch
    (NumPy 2 raises OverflowError for `np.int8(1000)`)."""
    try:
        return np.array(value, dtype=np_dtype)
    except OverflowError:
        return np.array(value).astype(np_dtype)


def _dense(arr):
    """Non-overlapping and dense: some permutation of arr's dims is C-contiguous."""
    expected = arr.itemsize
    for st, n in sorted((st, n) for st, n in zip(arr.strides, arr.shape) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def check_internal_overlap(out):
    """torch refuses to write into an array whose elements share memory (an expanded tensor):
    NumPy would write each of them several times."""
    if out.flags.c_contiguous:
        return
    for n, st in zip(out.shape, out.strides):
        if st == 0 and n > 1:
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")


def check_partial_overlap(out, src):
    """torch refuses an input that overlaps the written-to array without being exactly it (when both are
    dense, so that it can tell); NumPy would compute the right answer through a hidden copy."""
    if out is src or not np.may_share_memory(out, src):
        return
    if out.size == 0 or src.size == 0 or not _dense(out) or not _dense(src):
        return
    a = out.__array_interface__["data"][0]
    b = src.__array_interface__["data"][0]
    if a == b and out.nbytes == src.nbytes and out.strides == src.strides:
        return
    if a < b + src.nbytes and b < a + out.nbytes:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


# NumPy warns on 0/0, overflow in exp, log(0) ...; torch silently returns nan/inf.
# Tensors follow torch, so the warnings are switched off once here.
np.seterr(all="ignore")
