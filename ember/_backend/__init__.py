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


# NumPy warns on 0/0, overflow in exp, log(0) ...; torch silently returns nan/inf.
# Tensors follow torch, so the warnings are switched off once here.
np.seterr(all="ignore")
