"""ember: the PyTorch programming model as a plain Python program on NumPy.

`import ember as torch` — names, semantics and errors follow torch 2.x.
"""
from . import _dtype
from ._dtype import (bfloat16, bool, complex64, complex128, cfloat, cdouble, double, dtype, finfo, float,
                     float16, float32, float64, get_default_dtype, half, iinfo, int, int8, int16, int32,
                     int64, long, promote_types, set_default_dtype, short, uint8, can_cast,
                     uint16, uint32, uint64)
from ._device import device
from ._tensor import Size, Tensor
from ._tensor_str import get_printoptions, set_printoptions
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled, is_grad_enabled,
                                 is_inference_mode_enabled, set_anomaly_enabled)
from ._ops import _registry
from . import _ops  # noqa: F401  (installs every op into _registry.namespace)

globals().update(_registry.namespace)

__version__ = "0.1.0"


def result_type(tensor, other):
    return _dtype.result_type_of((tensor, other))


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


from ._ops._argcheck import guard as _guard  # noqa: E402  (Note [Checked at the boundary])

for _n in ("is_floating_point", "is_complex", "numel", "promote_types", "can_cast"):
    globals()[_n] = _guard(globals()[_n], _n)
del _n


def is_storage(obj):
    return False

from . import cuda, accelerator, backends, version  # noqa: E402
from . import amp  # noqa: E402  (torch.amp; torch.autocast and the autocast state functions below)
from .amp.autocast_mode import (autocast, autocast_decrement_nesting, autocast_increment_nesting,  # noqa: E402
                                clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
                                is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled)
from . import cpu  # noqa: E402  (torch.cpu; controls of the caching allocator)

import builtins  # noqa: E402  (int, float ... are dtypes in this namespace)

def set_num_threads(num):
    """Size the BLAS thread pool (OpenBLAS, found at run time) that ember's big ops use."""
    n = num
    if isinstance(n, (builtins.bool, builtins.float, builtins.str)) or not hasattr(n, "__index__"):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    n = n.__index__()  # not int(n): `int` is ember.int (the dtype) in this namespace
    if n <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    from ._backend import blas
    blas.set_threads(n)
    _num_threads[0] = n


def get_num_threads():
    if _num_threads[0] is None:
        from ._backend import blas
        return blas.get_threads()
    return _num_threads[0]


_num_threads = [None]  # None: report the BLAS pool's own size


def set_num_interop_threads(num):
    """A no-op: ember runs no inter-op thread pool."""


def get_num_interop_threads():
    return 1


from . import serialization  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import random  # noqa: E402  (torch.random: generators, seeding, fork_rng)
from . import linalg  # noqa: E402  (torch.linalg namespace)
from . import return_types  # noqa: E402  (torch.return_types: max, sort, topk ... named tuples)
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import utils  # noqa: E402
from .utils.dlpack import from_dlpack  # noqa: E402  (torch.from_dlpack)
from ._compile import compile  # noqa: E402  (torch.compile: an eager pass-through)
from . import multiprocessing  # noqa: E402  (torch.multiprocessing: registers the shared-memory tensor reducers)
from ._ops.sparse import sparse_coo_tensor, spmm  # noqa: E402  (sparse COO tensors)
from ._ops.sparse_csr_build import sparse_csr_tensor  # noqa: E402  (sparse CSR tensors)
from . import sparse  # noqa: E402  (torch.sparse)
from ._layout import *  # noqa: E402,F401,F403  (torch.layout, torch.memory_format and their values)
from ._globals import *  # noqa: E402,F401,F403  (default device, determinism flags, matmul precision, typename)


from ._ops._registry import publish as _publish  # noqa: E402
_publish(globals())  # ember.add.__module__ == "ember": functions pickle by their public names, as torch's

# imported on first use: keeps `import ember` fast
_LAZY_SUBMODULES = ("distributions", "testing", "func", "fft", "signal", "special", "distributed", "jit", "compiler",
                    "fx", "_dynamo", "profiler", "masked", "ops", "futures", "hub", "mps", "xpu")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f".{name}", __name__)
    if name == "vmap":  # torch.vmap is torch.func.vmap
        from .func import vmap
        return vmap
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
