"""torch.utils.dlpack: exchange tensors with NumPy, torch, JAX ... without copying (the DLPack protocol).
The NumPy-specific part is in ember/_backend/dlpack.py."""
import enum

from .._backend import dlpack as _dl
from .._tensor import Tensor


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (torch.utils.dlpack.DLDeviceType)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A PyCapsule named "dltensor" viewing the tensor's memory (torch.utils.dlpack.to_dlpack)."""
    return tensor.__dlpack__()


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """torch.from_dlpack: a Tensor sharing memory with ext_tensor (an object with __dlpack__, e.g. a NumPy
    array or a torch tensor, or a legacy capsule); copy=True copies."""
    from .. import _device
    if device is not None and _device.as_device(device).type != "cpu":
        raise RuntimeError(f"ember runs on the CPU only; from_dlpack cannot place the tensor on {device}")
    if hasattr(ext_tensor, "__dlpack__"):
        arr = _dl.from_producer(ext_tensor, copy)
    else:
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack "
                                 "capsule.")
        arr = _dl.from_capsule(ext_tensor)
    from .._ops.creation import from_numpy
    return from_numpy(arr)
